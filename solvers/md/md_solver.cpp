#include "md_solver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "integrate.hpp"
#include "md_memory.hpp"

namespace spotrun::md {
namespace {

// Adds the wall time of a scope to a phase counter (fenced, so device work is counted).
class PhaseTimer {
 public:
  explicit PhaseTimer(double& acc) : m_acc(acc), m_t0(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() {
    Kokkos::fence();
    m_acc += std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
  }

 private:
  double& m_acc;
  std::chrono::steady_clock::time_point m_t0;
};

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

}  // namespace

MdSolver::MdSolver(const MdConfig& config, const comm::Communicator& comm, comm::Transport& transport,
                   const io::LammpsData* data, bool restoring)
    : m_cfg(config), m_comm(comm), m_transport(transport), m_pair([&] {
        try {
          return make_pair(config);
        } catch (const std::invalid_argument& e) {
          throw InputError(std::string("md.pair.style: ") + e.what());
        }
      }()) {
  if (restoring) return;  // restore() sets up the domain from the checkpoint
  comm::Box3 box;
  std::vector<double> masses{1.0};
  if (data) {
    box.lo = data->lo;
    box.hi = data->hi;
    masses = data->masses;
  } else {
    if (m_cfg.lattice_type != "fcc")
      throw InputError("md.lattice.type: '" + m_cfg.lattice_type + "' is not supported; allowed: \"fcc\"");
    const double a = std::cbrt(4.0 / m_cfg.density);
    for (int d = 0; d < 3; ++d) {
      box.lo[d] = 0;
      box.hi[d] = m_cfg.cells[d] * a;
    }
  }
  init_domain(box, masses);
  if (data)
    load_data(*data);
  else
    create_lattice();
  m_natoms = m_comm.sum(static_cast<std::int64_t>(m_atoms.nlocal));
  if (!data) create_velocities(m_cfg.lattice_temperature, m_cfg.lattice_seed);
}

void MdSolver::init_domain(const comm::Box3& box, const std::vector<double>& masses) {
  m_box = box;
  const double cutneigh = m_cfg.cutoff + m_cfg.skin;
  auto dims = comm::choose_grid(m_comm.size(), {m_box.length(0), m_box.length(1), m_box.length(2)}, cutneigh);
  if (dims[0] == 0) {
    std::ostringstream msg;
    std::vector<std::string> dims_thin;
    for (int d = 0; d < 3; ++d)
      if (m_box.length(d) < cutneigh) dims_thin.emplace_back(1, char('x' + d));
    std::string thin;  // "x", "x and z", "x, y and z"
    for (std::size_t k = 0; k < dims_thin.size(); ++k)
      thin += (k == 0 ? "" : (k + 1 == dims_thin.size() ? " and " : ", ")) + dims_thin[k];
    const char* larger = m_cfg.from_lattice ? "more md.lattice.cells" : "a larger system in the data file";
    if (!thin.empty()) {
      // Not even one rank fits: the box itself is too thin, whatever the rank count.
      msg << "the box " << fmt(m_box.length(0)) << " x " << fmt(m_box.length(1)) << " x " << fmt(m_box.length(2))
          << " sigma is thinner than cutoff + skin = " << fmt(cutneigh) << " sigma in " << thin
          << ", so an atom would interact with its own periodic image. Use " << larger
          << ", or a shorter md.cutoff / md.skin.";
    } else {
      auto any = comm::choose_grid(m_comm.size(), {m_box.length(0), m_box.length(1), m_box.length(2)});
      msg << "no grid of " << m_comm.size() << " ranks gives sub-boxes at least cutoff + skin = " << fmt(cutneigh)
          << " sigma thick: box " << fmt(m_box.length(0)) << " x " << fmt(m_box.length(1)) << " x "
          << fmt(m_box.length(2)) << " sigma";
      msg << "; the best grid " << any[0] << "x" << any[1] << "x" << any[2] << " gives sub-boxes "
          << fmt(m_box.length(0) / any[0]) << " x " << fmt(m_box.length(1) / any[1]) << " x "
          << fmt(m_box.length(2) / any[2]) << " sigma. Use fewer ranks, or " << larger << ".";
    }
    throw InputError(msg.str());
  }
  m_grid = std::make_unique<comm::ProcessGrid>(m_comm, m_box, dims);
  // Bin indices are ints: a sparse system on few ranks can need more bins than that.
  const double nbins = NeighborList::bin_count(m_grid->sub_box(), cutneigh);
  m_comm.agree<InputError>(nbins < 0.5 * std::numeric_limits<int>::max(),
                           "a sub-box of rank " + std::to_string(m_comm.rank()) + " needs " + fmt(nbins) +
                               " neighbour bins, more than a rank can index; use more ranks");
  m_halo = std::make_unique<Halo>(*m_grid, m_transport, cutneigh);
  m_neighbor.setup(m_grid->sub_box(), cutneigh);
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
  for (int a2 = 0; a2 < nl; ++a2) {
    for (int d = 0; d < 3; ++d) hx(a2, d) = xs[3 * a2 + d];
    hid(a2) = ids[a2];
    ht(a2) = 1;
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
}

void MdSolver::create_velocities(double temperature, std::uint64_t seed) {
  // LAMMPS `velocity create T seed dist uniform`: u - 1/2 per component divided by sqrt(m), then zero
  // total momentum and scale exactly to T (3N-3 degrees of freedom). Keyed by atom id.
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
  const double t_now = dof > 0 ? ke2 / dof : 0.0;
  const double factor = t_now > 0 ? std::sqrt(temperature / t_now) : 0.0;
  Kokkos::parallel_for(
      "md::velocity::scale", Policy(0, m_atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) v(i, c) *= factor;
      });
}

void MdSolver::sort_owned_atoms() {
  // Canonical order after every re-neighbouring: by spatial bin (cache locality), then by atom id. The
  // state after a rebuild then depends only on positions, never on the history of migrations.
  const int n = m_atoms.nlocal;
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.x);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.v);
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.id);
  auto ht = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.type);
  auto himg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.image);
  std::vector<std::pair<int, std::int64_t>> key(n);
  for (int i = 0; i < n; ++i) key[i] = {m_neighbor.bin_of(hx(i, 0), hx(i, 1), hx(i, 2)), hid(i)};
  std::vector<int> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int a, int b) { return key[a] < key[b]; });
  bool identity = true;
  for (int i = 0; i < n && identity; ++i) identity = perm[i] == i;
  if (identity) return;
  auto sx = Kokkos::create_mirror(hx), sv = Kokkos::create_mirror(hv);
  auto sid = Kokkos::create_mirror(hid);
  auto st = Kokkos::create_mirror(ht);
  auto simg = Kokkos::create_mirror(himg);
  for (int i = 0; i < n; ++i) {
    const int p = perm[i];
    for (int d = 0; d < 3; ++d) {
      sx(i, d) = hx(p, d);
      sv(i, d) = hv(p, d);
      simg(i, d) = himg(p, d);
    }
    sid(i) = hid(p);
    st(i) = ht(p);
  }
  Kokkos::deep_copy(m_atoms.x, sx);
  Kokkos::deep_copy(m_atoms.v, sv);
  Kokkos::deep_copy(m_atoms.id, sid);
  Kokkos::deep_copy(m_atoms.type, st);
  Kokkos::deep_copy(m_atoms.image, simg);
}

void MdSolver::rebuild() {
  PhaseTimer timer(m_phase_time[k_neigh]);
  const int nonfinite = m_halo->migrate(m_atoms);
  // One reduction serves the lost-atom check, the dangerous-build count and the cause of a loss.
  double counts[3] = {static_cast<double>(m_atoms.nlocal), m_moved_too_far ? 1.0 : 0.0, static_cast<double>(nonfinite)};
  m_comm.sum_in_place(counts, 3);
  if (counts[1] > 0) ++m_dangerous_builds;
  m_moved_too_far = false;
  const auto total = static_cast<std::int64_t>(counts[0]);
  if (total != m_natoms) {
    std::ostringstream msg;
    if (counts[2] > 0) {
      // The sums are the same on every rank: every rank throws this.
      msg << "non-finite positions at step " << m_step << ": " << instability_hint() << " ("
          << static_cast<long long>(counts[2]) << " atoms with a non-finite position or velocity, "
          << (m_natoms - total) << " lost)";
      throw RunError(msg.str());
    }
    msg << (m_natoms - total) << " atoms lost at step " << m_step << " (expected " << m_natoms << ", found " << total
        << "): atoms moved further than a sub-box between neighbour builds. The system is likely unstable: "
        << instability_hint() << "; or the lists are rebuilt too rarely (md.neighbor_every, md.neighbor_check = true).";
    throw RunError(msg.str());
  }
  sort_owned_atoms();
  m_halo->build(m_atoms);
  m_neighbor.build(m_atoms);
  if (m_atoms.f.extent(0) != m_scatter.subview().extent(0) || m_atoms.f.data() != m_scatter.subview().data())
    m_scatter = ForceScatter(m_atoms.f);
  Kokkos::deep_copy(Kokkos::subview(m_atoms.x_build, std::make_pair(0, m_atoms.nlocal), Kokkos::ALL),
                    Kokkos::subview(m_atoms.x, std::make_pair(0, m_atoms.nlocal), Kokkos::ALL));
  m_since_build = 0;
}

void MdSolver::check_close_atoms() {
  // Atoms closer than 0.5 sigma: almost always a broken input (overlapping atoms blow up at step 1).
  const double limit = 0.5 * m_cfg.sigma;
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.x);
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.id);
  auto hn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_neighbor.numneigh);
  auto hg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_neighbor.numghost);
  const int maxn = m_neighbor.max_neighbors();
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_neighbor.neighbors);
  long long count = 0;
  double best = limit;
  std::int64_t bi = 0, bj = 0;
  for (int i = 0; i < m_atoms.nlocal; ++i)
    for (int jj = 0; jj < maxn; ++jj) {
      if (jj >= hn(i) && jj < maxn - hg(i)) continue;
      const int j = hl(i, jj);
      double r2 = 0;
      for (int d = 0; d < 3; ++d) r2 += (hx(i, d) - hx(j, d)) * (hx(i, d) - hx(j, d));
      const double r = std::sqrt(r2);
      if (r < limit) {
        ++count;
        if (r < best || count == 1) {
          best = r;
          bi = hid(i);
          bj = hid(j);
        }
      }
    }
  std::ostringstream msg;
  msg << "atoms " << bi << " and " << bj << " are " << fmt(best) << " sigma apart, closer than the allowed 0.5 sigma";
  if (count > 1) msg << " (" << count << " such pairs on rank " << m_comm.rank() << ")";
  msg << "; check the initial configuration";
  m_comm.agree<InputError>(count == 0, msg.str());
}

void MdSolver::compute_forces(bool ev) {
  PhaseTimer timer(m_phase_time[k_pair]);
  Kokkos::deep_copy(Kokkos::subview(m_atoms.f, std::make_pair(0, m_atoms.nlocal), Kokkos::ALL), 0.0);
  m_tally = std::visit(
      [&](const auto& pair) {
        return ev ? compute_pair_forces<true>(m_atoms, m_neighbor, pair, m_scatter)
                  : compute_pair_forces<false>(m_atoms, m_neighbor, pair, m_scatter);
      },
      m_pair);
  m_tally_valid = ev;
}

void MdSolver::setup() {
  if (m_restored) return;  // restore() left the state ready for the next step
  rebuild();
  if (!m_setup_done) check_close_atoms();
  compute_forces(true);
  if (m_cfg.ensemble == Ensemble::Langevin)  // as LAMMPS fix langevin in setup: the first half-kick feels it
    langevin_forces(m_atoms, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.seed, m_step);
  m_setup_done = true;
}

void MdSolver::recompute_forces() {
  rebuild();
  compute_forces(true);
}

void MdSolver::step(bool want_thermo) {
  double maxsq;
  {
    PhaseTimer timer(m_phase_time[k_integrate]);
    maxsq = initial_integrate(m_atoms, m_cfg.dt);
  }
  ++m_step;
  m_time = static_cast<double>(m_step) * m_cfg.dt;  // the same on a resumed run: no accumulated rounding
  ++m_since_build;
  const double half_skin_sq = 0.25 * m_cfg.skin * m_cfg.skin;
  bool rebuild_now = false;
  if (m_since_build % m_cfg.neighbor_every == 0)
    rebuild_now = m_cfg.neighbor_check ? m_comm.any(maxsq > half_skin_sq) : true;
  if (rebuild_now) {
    rebuild();
  } else {
    if (maxsq > half_skin_sq) m_moved_too_far = true;
    PhaseTimer timer(m_phase_time[k_comm]);
    m_halo->update_positions(m_atoms);
  }
  compute_forces(want_thermo);
  PhaseTimer timer(m_phase_time[k_integrate]);
  if (m_cfg.ensemble == Ensemble::Langevin)
    langevin_forces(m_atoms, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.seed, m_step);
  final_integrate(m_atoms, m_cfg.dt);
}

void MdSolver::reverse_velocities() {
  auto v = m_atoms.v;
  Kokkos::parallel_for(
      "md::velocity::reverse", Policy(0, m_atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) v(i, c) = -v(i, c);
      });
}

Thermo MdSolver::compute_thermo() {
  if (!m_tally_valid) throw std::logic_error("MdSolver::thermo() called for a step computed without energies");
  auto v = m_atoms.v;
  auto type = m_atoms.type;
  auto mass = m_atoms.mass_by_type;
  double mv2 = 0;
  Kokkos::parallel_reduce(
      "md::thermo::ke", Policy(0, m_atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& s) {
        s += mass(type(i)) * (v(i, 0) * v(i, 0) + v(i, 1) * v(i, 1) + v(i, 2) * v(i, 2));
      },
      mv2);
  double sums[3] = {mv2, m_tally.energy, m_tally.virial};
  m_comm.sum_in_place(sums, 3);
  const double n = static_cast<double>(m_natoms);
  const double ke = 0.5 * sums[0];
  const double dof = 3.0 * n - 3.0;
  Thermo t;
  t.temp = dof > 0 ? 2.0 * ke / dof : 0.0;
  t.pe = sums[1] / n;
  t.ke = ke / n;
  t.etotal = t.pe + t.ke;
  t.press = (2.0 * ke + sums[2]) / (3.0 * m_box.volume());
  return t;
}

std::vector<std::string> MdSolver::thermo_columns() const { return {"time", "temp", "pe", "ke", "etotal", "press"}; }

std::vector<double> MdSolver::thermo() {
  Thermo t = compute_thermo();
  return {m_time, t.temp, t.pe, t.ke, t.etotal, t.press};
}

std::string MdSolver::instability_hint() const {
  return "the time step md.dt = " + fmt(m_cfg.dt) +
         " is too large for this system, or atoms overlap (check the initial configuration, md.pair.epsilon/sigma)";
}

std::vector<std::string> MdSolver::summary() {
  double s[2] = {static_cast<double>(m_neighbor.total_pairs()), static_cast<double>(m_atoms.nghost)};
  m_comm.sum_in_place(s, 2);
  std::vector<std::string> out;
  const auto& g = m_grid->dims();
  out.push_back("Rank grid: " + std::to_string(g[0]) + " x " + std::to_string(g[1]) + " x " + std::to_string(g[2]));
  out.push_back("Atoms: " + std::to_string(m_natoms) + ", ghosts: " + std::to_string(static_cast<long long>(s[1])));
  out.push_back("Neighbors per atom (half list, with skin): " + fmt(s[0] / static_cast<double>(m_natoms)));
  out.push_back("Neighbor list builds = " + std::to_string(m_neighbor.builds()));
  out.push_back("Dangerous builds = " + std::to_string(m_dangerous_builds));
  // Timing breakdown: slowest rank per phase (load imbalance shows as max > total/ranks).
  const char* names[k_nphase] = {"Pair", "Neigh", "Comm", "Integrate"};
  for (int p = 0; p < k_nphase; ++p) {
    double tmax = m_comm.max(m_phase_time[p]);
    out.push_back(std::string("Time ") + names[p] + ": " + fmt(tmax) + " s (slowest rank)");
  }
  return out;
}

}  // namespace spotrun::md
