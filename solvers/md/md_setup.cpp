// The MD solver, set-up: the domain and rank grid, the initial atoms (fcc lattice or LAMMPS data file),
// velocities, the first neighbour build and forces.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "integrate.hpp"
#include "md_impl.hpp"
#include "md_memory.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

namespace {

}  // namespace

FreshDomain fresh_domain(const MdConfig& cfg, const io::LammpsData* data) {
  FreshDomain f;
  f.masses = {1.0};
  if (!cfg.types.empty()) {
    f.masses.clear();
    for (const auto& t : cfg.types) f.masses.push_back(t.mass);
  }
  if (data) {
    check_topology(*data, cfg);
    // The ghosts reach past the longest bonded interaction of the file (bonded_ghost_reach(); a partner still
    // missing later stops the run, naming it).
    const double span = bonded::bonded_span(*data);
    if (span > 0) f.bonded_reach = bonded_ghost_reach(cfg, *data, span);
    f.box.lo = data->lo;
    f.box.hi = data->hi;
    if (!cfg.types.empty() && cfg.types.size() == data->masses.size())
      for (std::size_t t = 0; t < cfg.types.size(); ++t)
        if (cfg.types[t].mass_given && cfg.types[t].mass != data->masses[t])
          throw InputError("md.types[" + std::to_string(t) + "].mass = " + significant(cfg.types[t].mass, 6) + " for type \"" +
                           cfg.types[t].name + "\", but the data file's Masses give type " + std::to_string(t + 1) +
                           " mass " + significant(data->masses[t], 6) + "; leave the mass out of md.types or make them agree");
    f.masses = data->masses;
    f.source = "the data file";
    f.natoms = static_cast<double>(data->natoms());
  } else {
    if (cfg.lattice_type != "fcc")
      throw InputError("md.lattice.type: '" + cfg.lattice_type + "' is not supported; allowed: \"fcc\"");
    const double a = std::cbrt(4.0 / cfg.density);
    for (int d = 0; d < 3; ++d) {
      f.box.lo[d] = 0;
      f.box.hi[d] = cfg.cells[d] * a;
    }
    f.source = "the lattice";
    f.natoms = lattice_atoms(cfg);
  }
  return f;
}

DomainPlan plan_domain(const MdConfig& cfg, const comm::Box3& box, const std::vector<double>& masses,
                       const std::string& source, int nranks, double bonded_reach) {
  DomainPlan plan;
  plan.coeffs = resolve_pair_coeffs(cfg, type_names(cfg, static_cast<int>(masses.size()), source));
  check_pair_style(cfg, plan.coeffs);
  check_kspace(cfg, plan.coeffs.style);
  plan.cutneigh = plan.coeffs.max_cutoff() + cfg.skin;  // a charged style's Coulomb cutoffs included
  plan.cutghost = std::max(plan.cutneigh, bonded_reach);
  // The sub-boxes must be as thick as the ghosts reach (the halo's swaps go to the nearest ranks only).
  const double cutneigh = plan.cutghost;
  const std::array<double, 3> length{box.length(0), box.length(1), box.length(2)};
  plan.dims = comm::choose_grid(nranks, length, cutneigh);
  if (plan.dims[0] == 0) {
    std::ostringstream msg;
    std::vector<std::string> dims_thin;
    for (int d = 0; d < 3; ++d)
      if (length[d] < cutneigh) dims_thin.emplace_back(1, char('x' + d));
    std::string thin;  // "x", "x and z", "x, y and z"
    for (std::size_t k = 0; k < dims_thin.size(); ++k)
      thin += (k == 0 ? "" : (k + 1 == dims_thin.size() ? " and " : ", ")) + dims_thin[k];
    const char* larger = cfg.from_lattice ? "more md.lattice.cells" : "a larger system in the data file";
    if (!thin.empty()) {
      // Not even one rank fits: the box itself is too thin, whatever the rank count.
      msg << "the box " << significant(length[0], 6) << " x " << significant(length[1], 6) << " x " << significant(length[2], 6)
          << " sigma is thinner than cutoff + skin = " << significant(cutneigh, 6) << " sigma in " << thin
          << ", so an atom would interact with its own periodic image. Use " << larger
          << ", or a shorter md.cutoff / md.skin.";
    } else {
      auto any = comm::choose_grid(nranks, length);
      msg << "no grid of " << nranks << " ranks gives sub-boxes at least cutoff + skin = " << significant(cutneigh, 6)
          << " sigma thick: box " << significant(length[0], 6) << " x " << significant(length[1], 6) << " x " << significant(length[2], 6) << " sigma";
      msg << "; the best grid " << any[0] << "x" << any[1] << "x" << any[2] << " gives sub-boxes "
          << significant(length[0] / any[0], 6) << " x " << significant(length[1] / any[1], 6) << " x " << significant(length[2] / any[2], 6)
          << " sigma. Use fewer ranks, or " << larger << ".";
    }
    throw InputError(msg.str());
  }
  // Bin indices are ints: a sparse system on few ranks can need more bins than that (the grid's sub-boxes
  // are even parts of the box).
  comm::Box3 sub;
  for (int d = 0; d < 3; ++d) {
    sub.lo[d] = 0;
    sub.hi[d] = length[d] / plan.dims[d];
  }
  const double nbins = NeighborList::bin_count(sub, cutneigh);
  if (!(nbins < 0.5 * std::numeric_limits<int>::max()))
    throw InputError("a sub-box of the " + std::to_string(plan.dims[0]) + "x" + std::to_string(plan.dims[1]) + "x" +
                     std::to_string(plan.dims[2]) + " rank grid needs " + significant(nbins, 6) +
                     " neighbour bins, more than a rank can index; use more ranks");
  return plan;
}

namespace {
// The bonded styles of a fresh run: the deck's over the data file's Coeffs sections.
bonded::BondedSetup fresh_bonded(const MdConfig& cfg, const io::LammpsData* data) {
  if (!data) {  // a lattice of single atoms: no interactions (the deck's tables were checked as a deck's)
    bonded::BondedSetup none;
    none.special_lj = cfg.special_lj;
    none.special_coul = cfg.special_coul;
    none.charged = pair_style_info(cfg.pair_style).charged;
    none.long_range = pair_style_info(cfg.pair_style).long_range;
    return none;
  }
  const io::LammpsCoeffs* const rows[3] = {&data->bond_coeffs, &data->angle_coeffs, &data->dihedral_coeffs};
  return resolve_bonded(cfg, bonded_counts(*data), rows, "md.initial.lammps_data");
}
}  // namespace

void check_fresh_start(const MdConfig& cfg, const io::LammpsData* data, int nranks) {
  const FreshDomain f = fresh_domain(cfg, data);
  plan_domain(cfg, f.box, f.masses, f.source, nranks, f.bonded_reach);
  const bonded::BondedSetup b = fresh_bonded(cfg, data);
  bonded::BondedTerms().setup(b);  // the styles' own checks of their rows
  // The k-space solver's choice from the file's charges: InputError for what cannot reach the accuracy.
  if (data && cfg.kspace.style != KspaceStyle::None) {
    kspace::ChargeTotals totals;
    totals.count = static_cast<std::int64_t>(data->natoms());
    for (const double q : data->q) {
      totals.sum += q;
      totals.sum_sq += q * q;
    }
    if (cfg.kspace.style == KspaceStyle::Pppm)
      kspace::choose_pppm(kspace_options(cfg), f.box, totals, nranks);
    else
      kspace::choose_ewald(kspace_options(cfg), f.box, totals);
  }
}

MdSolver::MdSolver(const MdConfig& config, const comm::Communicator& comm, comm::Transport& transport,
                   const io::LammpsData* data, bool restoring)
    : SolverBase("md", "atom-steps"), m_cfg(config), m_comm(comm), m_transport(transport) {
  m_lists_from_checkpoint = restoring;
  if (restoring) return;  // restore() sets up the domain from the checkpoint
  const FreshDomain fresh = fresh_domain(m_cfg, data);
  m_bonded_setup = fresh_bonded(m_cfg, data);
  m_bonded.setup(m_bonded_setup);
  init_domain(fresh.box, fresh.masses, fresh.source, fresh.bonded_reach, fresh.natoms);
  if (data)
    load_data(*data);
  else
    create_lattice();
  m_natoms = m_comm.sum(static_cast<std::int64_t>(m_atoms.nlocal));
  setup_kspace();
  if (!data) create_velocities(m_cfg.lattice_temperature, m_cfg.lattice_seed);
}

void MdSolver::init_domain(const comm::Box3& box, const std::vector<double>& masses, const std::string& source,
                           double bonded_reach, double natoms) {
  m_box = box;
  DomainPlan plan = plan_domain(m_cfg, m_box, masses, source, m_comm.size(), bonded_reach);
  // A checkpoint resumed on as many ranks: the grid of the run that wrote it (an aniso box changes its shape
  // under constant pressure, and the grid chosen for it now may differ), where its sub-boxes are thick enough.
  const auto& p = m_prefer_dims;
  if (p[0] * p[1] * p[2] == m_comm.size()) {
    bool thick = true;
    for (int d = 0; d < 3; ++d) thick = thick && m_box.length(d) / p[d] >= plan.cutghost;
    if (thick) plan.dims = p;
  }
  m_coeffs = std::move(plan.coeffs);
  m_pair = make_pair(m_cfg, m_coeffs);
  const double cutneigh = plan.cutneigh;
  m_cutneigh = cutneigh;
  m_neighbor_box = m_box;
  m_build_box = m_box;
  m_ghost_cutoff = plan.cutghost;
  m_grid = std::make_unique<comm::ProcessGrid>(m_comm, m_box, plan.dims);
  m_halo = std::make_unique<Halo>(m_comm, *m_grid, m_transport, plan.cutghost);
  m_neighbor.setup(m_grid->sub_box(), cutneigh, full_neighbor_list(),
                   m_cfg.neighbor_list != NeighborListKind::HalfNoNewton, natoms / m_box.volume());
  m_masses = masses;
  const int ntypes = static_cast<int>(masses.size());
  m_atoms.mass_by_type = DoubleView("md::mass", ntypes + 1);
  auto hm = Kokkos::create_mirror_view(m_atoms.mass_by_type);
  for (int t = 1; t <= ntypes; ++t) hm(t) = masses[t - 1];
  Kokkos::deep_copy(m_atoms.mass_by_type, hm);
}

void MdSolver::create_lattice() {
  const double a = std::cbrt(4.0 / m_cfg.density);
  const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  const auto& sub = m_grid->sub_box();
  const auto& n = m_cfg.cells;
  int lo[3], hi[3];
  // Lattice planes (i + o/2) * a of each dimension in this sub-box: the atom count before allocating.
  std::int64_t planes[3][2] = {{0, 0}, {0, 0}, {0, 0}};
  for (int d = 0; d < 3; ++d) {
    lo[d] = std::max(0, static_cast<int>(std::floor(sub.lo[d] / a)) - 1);
    hi[d] = std::min(n[d] - 1, static_cast<int>(std::ceil(sub.hi[d] / a)) + 1);
    for (int i = lo[d]; i <= hi[d]; ++i)
      for (int o = 0; o < 2; ++o) {
        const double p = (i + 0.5 * o) * a;
        if (p >= sub.lo[d] && p < sub.hi[d]) ++planes[d][o];
      }
  }
  std::int64_t count = 0;
  for (const auto& b : basis)
    count += planes[0][b[0] != 0] * planes[1][b[1] != 0] * planes[2][b[2] != 0];
  m_comm.agree<InputError>(count <= k_max_atoms_per_rank,
                           "rank " + std::to_string(m_comm.rank()) + " would own " + std::to_string(count) +
                               " atoms of the lattice, more than the " + std::to_string(k_max_atoms_per_rank) +
                               " one rank can hold; use more ranks");
  std::vector<double> xs;
  std::vector<std::int64_t> ids;
  xs.reserve(static_cast<std::size_t>(3 * count));
  ids.reserve(static_cast<std::size_t>(count));
  for (int k = lo[2]; k <= hi[2]; ++k)
    for (int j = lo[1]; j <= hi[1]; ++j)
      for (int i = lo[0]; i <= hi[0]; ++i)
        for (int b = 0; b < 4; ++b) {
          double p[3] = {(i + basis[b][0]) * a, (j + basis[b][1]) * a, (k + basis[b][2]) * a};
          bool mine = true;
          for (int d = 0; d < 3; ++d) mine = mine && p[d] >= sub.lo[d] && p[d] < sub.hi[d];
          if (!mine) continue;
          xs.insert(xs.end(), p, p + 3);
          ids.push_back(1 + 4 * ((static_cast<std::int64_t>(k) * n[1] + j) * n[0] + i) + b);
        }
  if (static_cast<std::int64_t>(ids.size()) != count)
    throw std::logic_error("MdSolver::create_lattice: lattice atoms counted and made differ");
  const int nl = static_cast<int>(ids.size());
  m_atoms.reserve(nl);
  m_atoms.nlocal = nl;
  auto hx = Kokkos::create_mirror_view(m_atoms.x);
  auto hid = Kokkos::create_mirror_view(m_atoms.id);
  auto ht = Kokkos::create_mirror_view(m_atoms.type);
  // Several types: each site draws its type from the md.types fractions (LAMMPS set type/fraction), keyed
  // by the atom id, so the assignment does not depend on the rank count.
  std::vector<double> upper;  // cumulative fractions
  for (const auto& t : m_cfg.types) upper.push_back((upper.empty() ? 0.0 : upper.back()) + t.fraction);
  const std::uint64_t type_key = m_cfg.type_seed ^ (static_cast<std::uint64_t>(k_stream_type) << 40);
  for (int a2 = 0; a2 < nl; ++a2) {
    for (int d = 0; d < 3; ++d) hx(a2, d) = xs[3 * a2 + d];
    hid(a2) = ids[a2];
    int t = 1;
    if (upper.size() > 1) {
      const double u = keyed_uniform(type_key, static_cast<std::uint64_t>(ids[a2]), 0, 0) * upper.back();
      t = static_cast<int>(upper.size());
      for (std::size_t k = 0; k < upper.size(); ++k)
        if (u < upper[k]) {
          t = static_cast<int>(k) + 1;
          break;
        }
    }
    ht(a2) = t;
  }
  Kokkos::deep_copy(m_atoms.x, hx);
  Kokkos::deep_copy(m_atoms.id, hid);
  Kokkos::deep_copy(m_atoms.type, ht);
  Kokkos::deep_copy(m_atoms.image, 0);
  Kokkos::deep_copy(m_atoms.v, 0.0);
}

void MdSolver::load_data(const io::LammpsData& data) {
  std::vector<std::size_t> mine;
  for (std::size_t a = 0; a < data.natoms(); ++a)
    if (m_grid->owner_of(&data.x[3 * a]) == m_comm.rank()) mine.push_back(a);
  m_comm.agree<InputError>(static_cast<std::int64_t>(mine.size()) <= k_max_atoms_per_rank,
                           "rank " + std::to_string(m_comm.rank()) + " would own " + std::to_string(mine.size()) +
                               " atoms of the data file, more than the " + std::to_string(k_max_atoms_per_rank) +
                               " one rank can hold; use more ranks");
  const int nl = static_cast<int>(mine.size());
  m_atoms.reserve(nl);
  m_atoms.nlocal = nl;
  auto hx = Kokkos::create_mirror_view(m_atoms.x);
  auto hv = Kokkos::create_mirror_view(m_atoms.v);
  auto hid = Kokkos::create_mirror_view(m_atoms.id);
  auto ht = Kokkos::create_mirror_view(m_atoms.type);
  auto himg = Kokkos::create_mirror_view(m_atoms.image);
  for (int i = 0; i < nl; ++i) {
    std::size_t a = mine[i];
    for (int d = 0; d < 3; ++d) {
      hx(i, d) = data.x[3 * a + d];
      hv(i, d) = data.v[3 * a + d];
      himg(i, d) = data.image[3 * a + d];
    }
    hid(i) = data.id[a];
    ht(i) = data.type[a];
  }
  Kokkos::deep_copy(m_atoms.x, hx);
  Kokkos::deep_copy(m_atoms.v, hv);
  Kokkos::deep_copy(m_atoms.id, hid);
  Kokkos::deep_copy(m_atoms.type, ht);
  Kokkos::deep_copy(m_atoms.image, himg);
  if (!data.molecule.empty()) {
    auto hmol = Kokkos::create_mirror_view(m_atoms.molecule);
    for (int i = 0; i < nl; ++i) hmol(i) = data.molecule[mine[i]];
    Kokkos::deep_copy(m_atoms.molecule, hmol);
  }
  if (!data.q.empty()) {
    auto hq = Kokkos::create_mirror_view(m_atoms.q);
    for (int i = 0; i < nl; ++i) hq(i) = data.q[mine[i]];
    Kokkos::deep_copy(m_atoms.q, hq);
  }
  load_topology(data, mine);
}

void MdSolver::create_velocities(double temperature, std::uint64_t seed) {
  // LAMMPS `velocity create T seed dist uniform`: u - 1/2 per component divided by sqrt(m), then zero
  // total momentum and scale exactly to T (3N-3 degrees of freedom; T = mvv2e sum m v^2 / (dof boltz) in the
  // units of md.units). Keyed by atom id.
  auto v = m_atoms.v;
  auto id = m_atoms.id;
  auto type = m_atoms.type;
  auto mass = m_atoms.mass_by_type;
  const std::uint64_t key = seed ^ (static_cast<std::uint64_t>(k_stream_velocity) << 40);
  double sums[4] = {0, 0, 0, 0};  // momentum x y z, mass
  Kokkos::parallel_reduce(
      "md::velocity::create", Policy(0, m_atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& px, double& py, double& pz, double& mt) {
        const double m = mass(type(i));
        for (int c = 0; c < 3; ++c)
          v(i, c) = (keyed_uniform(key, static_cast<std::uint64_t>(id(i)), 0, c) - 0.5) / ::sqrt(m);
        px += m * v(i, 0);
        py += m * v(i, 1);
        pz += m * v(i, 2);
        mt += m;
      },
      sums[0], sums[1], sums[2], sums[3]);
  m_comm.sum_in_place(sums, 4);
  const double vcm[3] = {sums[0] / sums[3], sums[1] / sums[3], sums[2] / sums[3]};
  double ke2 = 0;
  Kokkos::parallel_reduce(
      "md::velocity::zero_momentum", Policy(0, m_atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& s) {
        const double m = mass(type(i));
        for (int c = 0; c < 3; ++c) {
          v(i, c) -= vcm[c];
          s += m * v(i, c) * v(i, c);
        }
      },
      ke2);
  ke2 = m_comm.sum(ke2);
  const double dof = 3.0 * m_natoms - 3.0;
  const double t_now = dof > 0 ? ke2 * m_cfg.unit().mvv2e / (dof * m_cfg.unit().boltz) : 0.0;
  const double factor = t_now > 0 ? std::sqrt(temperature / t_now) : 0.0;
  Kokkos::parallel_for(
      "md::velocity::scale", Policy(0, m_atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) v(i, c) *= factor;
      });
}

namespace {

// The pairs of the neighbour list closer than `limit`, found on the device: how many list entries, and
// the closest (the first in (atom, row slot) order among equally close ones), with both atoms' ids.
struct ClosePairs {
  long long count = 0;
  double closest = 0;
  std::int64_t id_i = 0, id_j = 0;
};

// The distance between atom i and each entry of its neighbour row: f(jj, r) for the owned neighbours
// 0 .. numneigh(i)-1, then the ghosts at the end of the row.
template <class X, class N, class C, class F>
KOKKOS_INLINE_FUNCTION void for_row(const X& x, const N& neigh, const C& numneigh, const C& numghost, int maxn, int i,
                                    F&& f) {
  const int n_owned = numneigh(i), ghost_start = maxn - numghost(i) > n_owned ? maxn - numghost(i) : n_owned;
  const int ranges[2][2] = {{0, n_owned}, {ghost_start, maxn}};
  for (int part = 0; part < 2; ++part)
    for (int jj = ranges[part][0]; jj < ranges[part][1]; ++jj) {
      const int j = neigh(i, jj);
      double r2 = 0;
      for (int d = 0; d < 3; ++d) r2 += (x(i, d) - x(j, d)) * (x(i, d) - x(j, d));
      f(jj, ::sqrt(r2));
    }
}

ClosePairs find_close_pairs(const AtomStore& atoms, const NeighborList& list, double limit) {
  const auto x = atoms.x;
  const auto id = atoms.id;
  const auto numneigh = list.numneigh;
  const auto numghost = list.numghost;
  const auto neigh = list.neighbors;
  const int maxn = list.max_neighbors();
  const int nlocal = atoms.nlocal;
  ClosePairs found;
  Kokkos::parallel_reduce(
      "md::setup::close_count", Policy(0, nlocal),
      KOKKOS_LAMBDA(int i, long long& n) {
        for_row(x, neigh, numneigh, numghost, maxn, i, [&](int, double r) { n += r < limit ? 1 : 0; });
      },
      found.count);
  if (found.count == 0) return found;
  double closest = limit;
  Kokkos::parallel_reduce(
      "md::setup::close_min", Policy(0, nlocal),
      KOKKOS_LAMBDA(int i, double& m) {
        for_row(x, neigh, numneigh, numghost, maxn, i, [&](int, double r) { m = r < m ? r : m; });
      },
      Kokkos::Min<double>(closest));
  // The first entry (atom, then row slot) at that distance: the smallest key i * maxn + jj.
  long long first = 0;
  Kokkos::parallel_reduce(
      "md::setup::close_first", Policy(0, nlocal),
      KOKKOS_LAMBDA(int i, long long& k) {
        for_row(x, neigh, numneigh, numghost, maxn, i, [&](int jj, double r) {
          const long long key = static_cast<long long>(i) * maxn + jj;
          if (r == closest && key < k) k = key;
        });
      },
      Kokkos::Min<long long>(first));
  // The two ids: 16 bytes to the host.
  Kokkos::View<std::int64_t[2], MemSpace> ids("md::setup::close_ids");
  const int bi = static_cast<int>(first / maxn), bjj = static_cast<int>(first % maxn);
  Kokkos::parallel_for(
      "md::setup::close_ids", Policy(0, 1), KOKKOS_LAMBDA(int) {
        ids(0) = id(bi);
        ids(1) = id(neigh(bi, bjj));
      });
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
  found.closest = closest;
  found.id_i = h(0);
  found.id_j = h(1);
  return found;
}

}  // namespace

void MdSolver::check_close_atoms() {
  // Atoms closer than half the style's contact distance (lj/cut: sigma; morse: r0): almost always a broken
  // input (overlapping atoms blow up at step 1). A reduction over the neighbour list where it lives:
  // nothing of the list is copied to the host.
  const double limit = 0.5 * m_coeffs.min_contact();
  if (limit <= 0) return;  // a style without a contact distance (coul/cut, coul/long)
  const ClosePairs p = find_close_pairs(m_atoms, m_neighbor, limit);
  std::ostringstream msg;
  msg << "atoms " << p.id_i << " and " << p.id_j << " are " << significant(p.closest, 6) << " sigma apart, closer than the allowed "
      << significant(limit, 6) << " sigma (half the smallest pair " << m_coeffs.style.contact << ")";
  if (p.count > 1) msg << " (" << p.count << " such pairs on rank " << m_comm.rank() << ")";
  msg << "; check the initial configuration";
  m_comm.agree<InputError>(p.count == 0, msg.str());
}

void MdSolver::setup() {
  if (m_restored) return;  // restore() left the state ready for the next step
  rebuild();
  if (!m_setup_done) check_close_atoms();
  compute_forces(true);
  if (m_cfg.ensemble == Ensemble::Langevin)  // as LAMMPS fix langevin in setup: the first half-kick feels it
    langevin_forces(m_atoms, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.seed, m_step, langevin_units(m_cfg.unit()));
  setup_thermostat();
  m_setup_done = true;
  start_minimizer();
}

}  // namespace spotrun::md
