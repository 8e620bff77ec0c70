// The MD solver, stepping: velocity Verlet with the halo exchange, neighbour rebuilds (migration and the
// spatial sort of atoms on the device, ghosts, lists) and forces.
#include <sstream>

#include "integrate.hpp"
#include "md_impl.hpp"
#include "md_solver.hpp"
#include "comm/test_hooks.hpp"

namespace spotrun::md {

using impl::PhaseTimer;

void MdSolver::sort_owned_atoms() { m_sorter.sort(m_atoms, m_neighbor); }

void MdSolver::rebuild() {
  PhaseTimer timer(m_phase_time[k_neigh]);
  const int nonfinite = m_halo->migrate(m_atoms);
  // One reduction serves the lost-atom check, the dangerous-build count and the cause of a loss.
  double counts[3] = {static_cast<double>(m_atoms.nlocal), collect_moved_too_far() ? 1.0 : 0.0,
                      static_cast<double>(nonfinite)};
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

void MdSolver::compute_forces(bool ev) {
  // Under Newton the ghosts collect reactions too, which reverse_forces() adds to their owners.
  const bool newton = m_neighbor.newton();
  {
    PhaseTimer timer(m_phase_time[k_pair]);
    // Test hook: extra force passes, discarded by the zeroing below (comm/test_hooks.hpp).
    if (const auto& hook = comm::test_hooks().force_passes)
      for (int pass = 1, passes = hook(); pass < passes; ++pass)
        std::visit([&](const auto& pair) { compute_pair_forces<false>(m_atoms, m_neighbor, pair, m_scatter); }, m_pair);
    const int zeroed = newton ? m_atoms.nall() : m_atoms.nlocal;
    Kokkos::deep_copy(Kokkos::subview(m_atoms.f, std::make_pair(0, zeroed), Kokkos::ALL), 0.0);
    m_tally = std::visit(
        [&](const auto& pair) {
          return ev ? compute_pair_forces<true>(m_atoms, m_neighbor, pair, m_scatter)
                    : compute_pair_forces<false>(m_atoms, m_neighbor, pair, m_scatter);
        },
        m_pair);
    m_tally_valid = ev;
  }
  if (newton) {
    PhaseTimer timer(m_phase_time[k_comm]);
    m_halo->reverse_forces(m_atoms);
  }
}

bool MdSolver::collect_moved_too_far() {
  int far = 0;
  Kokkos::deep_copy(far, m_far);
  if (far) {
    m_moved_too_far = true;
    Kokkos::deep_copy(m_far, 0);
  }
  return m_moved_too_far;
}

bool MdSolver::full_neighbor_list() const {
  switch (m_cfg.neighbor_list) {
    case NeighborListKind::Half:
    case NeighborListKind::HalfNoNewton: return false;
    case NeighborListKind::Full: return true;
    case NeighborListKind::ByBackend: break;
  }
  return !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
}

void MdSolver::recompute_forces() {
  rebuild();
  compute_forces(true);
}

void MdSolver::step(bool want_thermo) {
  thermostat_half_step(false);
  {
    PhaseTimer timer(m_phase_time[k_integrate]);
    initial_integrate(m_atoms, m_cfg.dt, m_maxsq);
  }
  ++m_step;
  m_time = static_cast<double>(m_step) * m_cfg.dt;  // the same on a resumed run: no accumulated rounding
  ++m_since_build;
  const double half_skin_sq = 0.25 * m_cfg.skin * m_cfg.skin;
  bool rebuild_now = false;
  if (m_since_build % m_cfg.neighbor_every == 0) {
    if (m_cfg.neighbor_check) {
      double maxsq = 0;
      Kokkos::deep_copy(maxsq, m_maxsq);  // the one host read of a checking step
      rebuild_now = m_comm.any(maxsq > half_skin_sq);
    } else {
      rebuild_now = true;
    }
  }
  if (rebuild_now) {
    rebuild();
  } else {
    note_far(m_maxsq, m_far, half_skin_sq);
    PhaseTimer timer(m_phase_time[k_comm]);
    m_halo->update_positions(m_atoms);
  }
  compute_forces(want_thermo);
  PhaseTimer timer(m_phase_time[k_integrate]);
  if (m_cfg.ensemble == Ensemble::Langevin)
    langevin_forces(m_atoms, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.seed, m_step);
  final_integrate(m_atoms, m_cfg.dt);
  thermostat_half_step(true);
}

void MdSolver::reverse_velocities() {
  auto v = m_atoms.v;
  Kokkos::parallel_for(
      "md::velocity::reverse", Policy(0, m_atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) v(i, c) = -v(i, c);
      });
}

}  // namespace spotrun::md
