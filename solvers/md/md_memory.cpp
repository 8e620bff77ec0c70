// Memory estimate of the MD solver: the sizes of the arrays md_solver.cpp, halo.cpp, neighbor.cpp and
// md_state.cpp allocate, counted from the geometry the solver will choose. Each term names the arrays
// it stands for; keep them in step with the code.
#include "md_memory.hpp"
#include "pair_coeffs.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
#include <vector>

#include "comm/process_grid.hpp"
#include "force.hpp"
#include "neighbor.hpp"

namespace spotrun::md {
namespace {

// Whether the force ScatterView keeps one copy of the forces per thread (OpenMP builds).
template <class T>
struct IsDuplicated : std::false_type {};
template <class D, class L, class Dev, class Op, class C>
struct IsDuplicated<Kokkos::Experimental::ScatterView<D, L, Dev, Op, Kokkos::Experimental::ScatterDuplicated, C>>
    : std::true_type {};

// Host mirrors (create_mirror_view) are separate allocations only when the views live on a device.
constexpr bool k_device_mirrors = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

constexpr double k_pi = 3.14159265358979323846;
// From the per-atom field table (atom_fields.hpp):
constexpr double k_record = record_slots() * 8;     // md_state.cpp: one atom record (the checkpointed fields)
constexpr double k_state_row = record_slots() * 8;  // one row of the SolverState: the same, integers as int64
constexpr double k_slot = atom_store_bytes();       // AtomStore per atom: x v f x_build, id, type, image[3]
constexpr double k_migrating = migrating_bytes();  // one atom's migrating fields (id, x, v, image, type)
constexpr double k_mirror_slot = 72; // host copies of x, v, id, type, image (lattice, data file)

// A count of atoms in a region that holds n on average, with the margin of density fluctuations and of
// atoms drifting during the run.
double with_margin(double n) { return n > 0 ? 1.05 * n + 4.0 * std::sqrt(n) + 16.0 : 16.0; }
// Capacity after growing to hold n (AtomStore::reserve, neighbour rows): n + n/4 + 16.
double grown(double n) { return n + n / 4 + 16; }

// Per dimension and grid coordinate q: the fcc lattice planes (i + off) * a, off in {0, 1/2}, that fall
// in sub-box q, with the same boundary expressions as comm::ProcessGrid.
std::vector<std::array<double, 2>> planes_per_part(int cells, double a, double lo, double hi, int parts) {
  std::vector<std::array<double, 2>> count(parts, {0.0, 0.0});
  const double L = hi - lo;
  auto part_lo = [&](int q) { return lo + L * q / parts; };
  for (int i = 0; i < cells; ++i)
    for (int o = 0; o < 2; ++o) {
      const double p = (i + 0.5 * o) * a;
      int q = static_cast<int>((p - lo) / L * parts);
      q = std::min(std::max(q, 0), parts - 1);
      while (q > 0 && p < part_lo(q)) --q;
      while (q < parts - 1 && p >= part_lo(q + 1)) ++q;
      count[q][o] += 1;
    }
  return count;
}

// Most atoms a rank owns when the lattice is made (exact: the product of the plane counts of each basis
// atom, maximised over the rank grid).
double lattice_owned_max(const MdConfig& cfg, const std::array<double, 3>& L, const std::array<int, 3>& dims) {
  const double a = std::cbrt(4.0 / cfg.density);
  const int basis[4][3] = {{0, 0, 0}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1}};  // offsets in half cells
  std::array<std::vector<std::array<double, 2>>, 3> c;
  for (int d = 0; d < 3; ++d) c[d] = planes_per_part(cfg.cells[d], a, 0.0, L[d], dims[d]);
  double best = 0;
  for (int qx = 0; qx < dims[0]; ++qx)
    for (int qy = 0; qy < dims[1]; ++qy)
      for (int qz = 0; qz < dims[2]; ++qz) {
        double n = 0;
        for (const auto& b : basis) n += c[0][qx][b[0]] * c[1][qy][b[1]] * c[2][qz][b[2]];
        best = std::max(best, n);
      }
  return best;
}

// A sub-box of edges l, for the bin counts of NeighborList::bin_count().
comm::Box3 sub_box_of(const std::array<double, 3>& l) {
  comm::Box3 b;
  for (int d = 0; d < 3; ++d) {
    b.lo[d] = 0;
    b.hi[d] = l[d];
  }
  return b;
}

// The neighbour bins of a sub-box l at density rho (estimated_memory()), nall atom slots and rows owned rows.
double bin_bytes(const std::array<double, 3>& l, double c, double rho, double nall, double rows) {
  // Bins over the sub-box extended by cutoff + skin, half that wide (or as wide across the rows of a sparse
  // system: NeighborList::bin_edge), padded by the stencil's reach. Each holds the starts of its owned atoms
  // and ghosts (on the host a cursor too), and the atoms are packed by bin (index and position: 28 bytes per
  // atom; on a device each atom's slot in its bin too; and each owned atom's place).
  const double nbins = NeighborList::bin_count(sub_box_of(l), c, rho);
  if (k_device_mirrors) return 4.0 * nbins * 2 + 32.0 * (nall + nall / 4) + 4.0 * rows;
  return 4.0 * nbins * 3 + 28.0 * (nall + nall / 4) + 4.0 * rows;
}

}  // namespace

double lattice_atoms(const MdConfig& cfg) {
  return 4.0 * static_cast<double>(cfg.cells[0]) * static_cast<double>(cfg.cells[1]) *
         static_cast<double>(cfg.cells[2]);
}

solvers::MemoryNeed estimated_memory(const MdConfig& cfg, double natoms, int nranks) {
  nranks = std::max(nranks, 1);
  natoms = std::max(natoms, 1.0);
  const double rho = cfg.density > 0 ? cfg.density : 0.8442;
  const double a = std::cbrt(4.0 / rho);
  const double c = max_configured_cutoff(cfg) + cfg.skin;

  // The box and the rank grid init_domain() chooses (a data file's box: a cube at the lattice density).
  std::array<double, 3> L;
  for (int d = 0; d < 3; ++d) L[d] = cfg.from_lattice ? cfg.cells[d] * a : std::cbrt(natoms / rho);
  std::array<int, 3> dims = comm::choose_grid(nranks, L, c);
  if (dims[0] == 0) dims = comm::choose_grid(nranks, L);  // refused by the solver; estimate anyway
  std::array<double, 3> l;
  for (int d = 0; d < 3; ++d) l[d] = L[d] / dims[d];
  const double vol = l[0] * l[1] * l[2];

  // Owned atoms: the most any rank gets, plus what the run may bring in; ghosts: the shell of thickness
  // cutoff + skin around the sub-box (halo.cpp).
  const double owned0 = cfg.from_lattice ? lattice_owned_max(cfg, L, dims)
                                        : std::min(natoms, rho * (l[0] + a) * (l[1] + a) * (l[2] + a));
  const double owned = std::min(natoms, with_margin(owned0));
  const double ghosts = with_margin(rho * ((l[0] + 2 * c) * (l[1] + 2 * c) * (l[2] + 2 * c) - vol));
  const double nall = owned + ghosts;
  const double cap = grown(nall);  // AtomStore capacity after the halo's reserve() calls

  // Each figure below is split by where it lives: `space`, the solver's Kokkos memory space (the GPU's
  // memory on a device build, host memory otherwise), and `host`, host memory on any build (mirrors,
  // staging, checkpoint records).
  // --- arrays held for the whole run (all in the memory space, but the host staging) ---
  double held = k_slot * cap;
  // [md.minimize]: the minimiser's per-atom vectors (min_state: 9 values for cg, 3 for fire) while it runs.
  if (cfg.minimize.enabled) held += 8.0 * (cfg.minimize.style == MinStyle::Cg ? 9 : 3) * cap;
  // Neighbour lists (neighbor.cpp): rows for the owned atoms, as many on a device (LayoutLeft) as on the
  // host; the row length starts at the first guess (that of a full list on a device, of a half list on
  // the host) and grows to the longest row + 1/8 (old and new rows live together while it grows). The
  // longest row holds about the atoms of a cutoff + skin sphere (ghost neighbours are stored in full, and
  // a full list stores every neighbour).
  const double rows = grown(owned);
  const bool full = cfg.neighbor_list == NeighborListKind::Full ||
                    (cfg.neighbor_list == NeighborListKind::ByBackend && k_device_mirrors);
  const double first_guess = std::floor((full ? 1.0 : 0.5) * 4.18879 * c * c * c * 1.2) + 32;
  const double sphere = rho * 4.0 / 3.0 * k_pi * c * c * c;
  const double longest = sphere + 2.0 * std::sqrt(sphere);
  const double width = longest > first_guess ? first_guess + (longest + longest / 8 + 4) : first_guess;
  held += 4.0 * rows * width + 2 * 4.0 * rows;  // neighbors, numneigh + numghost
  // Sparse rows on the host (md::pair_rows_streamed: the largest cutoff encloses less than half of the
  // cutoff + skin sphere, a WCA melt) are also laid end to end: each listed pair's neighbour and row (a half
  // list: about half of a sphere's atoms a row), with the 1/4 margin, and a start per row.
  const double cut = max_configured_cutoff(cfg);
  if (!full && !k_device_mirrors && sparse_reach(cut * cut, c * c)) held += 8.0 * 1.25 * rows * (sphere / 2) + 4.0 * rows;
  held += 4.0 * (nall + nall / 4);              // atom_bin
  held += bin_bytes(l, c, rho, nall, rows);
  // The sort after each rebuild (atom_sort.cpp) keeps its buffers: the bin starts, per owned atom its bin and
  // its place, and a scratch array of each type of the permuted fields (x or v, image, type, id, charge) as
  // large as the fields (it takes a field's place, the field's array becomes the scratch). It makes no other
  // copy.
  held += 4.0 * NeighborList::bin_count(sub_box_of(l), c, rho) + 8.0 * rows + 56.0 * cap;
  // Halo (solvers/particles/halo.cpp): six send lists (about one entry per ghost), and send/receive buffers
  // of 5 doubles per atom of the largest swap (the last dimension's, which forwards the earlier ghosts): a
  // rebuild moves 36 bytes an atom (position, type, id).
  const double largest_swap =
      with_margin(rho * c * std::max({l[1] * l[2], (l[0] + 2 * c) * l[2], (l[0] + 2 * c) * (l[1] + 2 * c)}));
  const double halo_buffer = 8.0 * (5 * grown(largest_swap) + 64);
  held += 4.0 * (grown(ghosts) + 6 * 64) + 2 * halo_buffer;
  const double held_host = k_device_mirrors ? 2 * halo_buffer : 0.0;  // staging when MPI is not GPU-aware
  if (IsDuplicated<ForceScatter>::value) {
    const int threads = Kokkos::is_initialized() ? ExecSpace().concurrency() : 1;
    held += 24.0 * cap * threads;
  }

  // --- transients (the largest one counts, on each side) ---
  // Re-neighbouring: the migration (particles::Distributor, kept buffers: a mark, a list entry and a hole
  // entry per owned atom, and, counted as a bound though MD's migration fills the holes in place and needs
  // none, the migrating fields of the table per owned atom, the staging of a migration that keeps the
  // staying atoms' order on a device; the fields, a place and a mark per atom crossing a face, sent and
  // received) and one atom array being grown, all in the memory space. The sort and the migration copy
  // nothing to the host.
  // On a host build, an allowance of 72 bytes per atom slot for what is not counted here (allocator
  // slack, MPI's buffers that grow with the halo), the size of the copies the sort once made.
  const double crossing = rho * ((l[0] + 2 * cfg.skin) * (l[1] + 2 * cfg.skin) * (l[2] + 2 * cfg.skin) - vol);
  const double rebuild = (12.0 + k_migrating) * owned + 3 * (k_migrating + 8.0) * with_margin(crossing) +
                         24.0 * cap +
                         (k_device_mirrors ? 0.0 : k_mirror_slot * cap);
  // The close-atom check of setup() is a reduction over the list where it lives: nothing to count.
  // Checkpoint (state_reusing(), md_state.cpp; host memory): kept from one checkpoint to the next, the
  // records sent and received (one buffer on one rank, counted twice here), the record of each row, the
  // destinations and the SolverState block the checkpoint writer hands back; while a snapshot is taken, a
  // second SolverState block besides (a trajectory frame's state() while the writer keeps its own). All ids
  // on every rank when they are not 1..N (data files); on a device the host copies of the atom arrays too.
  const double block = std::ceil(natoms / nranks);
  const double kept = k_record * (owned + block) + 8.0 * block + 4.0 * owned + k_state_row * block;
  double checkpoint = kept + k_state_row * block;
  if (!cfg.from_lattice) checkpoint += 8.0 * natoms;
  if (k_device_mirrors) checkpoint += k_slot * cap;
  // Restore: the SolverState block read by the launcher and the atoms received by id (host), kept while
  // the first re-neighbouring runs; before it, records and their packed copy too.
  const double restore_held = k_state_row * block + k_record * owned + 48.0 * owned;
  const double restore_exchange = k_state_row * block + 2 * k_record * block + k_record * owned;

  // Construction: the lattice's positions and ids before they are copied in (host), or a data file's
  // text and atoms, which every rank holds while the solver is made (host); the atom arrays they fill
  // (the memory space), with host copies of them on a device.
  const double construction_space = k_slot * grown(owned0);
  double construction_host = 32.0 * owned0;
  if (!cfg.from_lattice) construction_host += (72.0 + 128.0) * natoms + 8.0 * owned0;
  if (k_device_mirrors) construction_host += k_mirror_slot * grown(owned0);

  // The peaks: on the host side a re-neighbouring of a restored run holds the restore's records.
  const double space_peak = std::max(held + rebuild, construction_space);
  const double host_peak =
      std::max(held_host + std::max({restore_held, checkpoint, restore_exchange}), construction_host);
  solvers::MemoryNeed need;
  if (k_device_mirrors) {
    need.host = host_peak;
    need.device = space_peak;
  } else {
    // One memory: the peaks of the run and of the construction, as both sides hold them at once.
    // A restore's held buffers are gone before the first checkpoint keeps its own.
    need.host = std::max(held + std::max({rebuild + std::max(restore_held, kept), checkpoint, restore_exchange}),
                         construction_space + construction_host);
  }
  return need;
}

double estimated_bytes_per_rank(const MdConfig& cfg, double natoms, int nranks) {
  return estimated_memory(cfg, natoms, nranks).host;
}

}  // namespace spotrun::md
