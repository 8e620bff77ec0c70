// The MD solver, stepping: velocity Verlet with the halo exchange, neighbour rebuilds (migration and the
// spatial sort of atoms on the device, ghosts, lists) and forces.
#include <algorithm>
#include <limits>
#include <sstream>

#include "integrate.hpp"
#include "md_impl.hpp"
#include "md_solver.hpp"
#include "comm/test_hooks.hpp"

namespace spotrun::md {

using impl::PhaseTimer;

namespace {

// Rows of interior pair forces between two looks at the halo in flight: on the host about 50 us of work
// (MPI moves a message larger than its eager limit only while both ranks call it: the looks are what moves
// it); on a device one kernel for all of them. The same with overlap or without: the energy is summed
// chunk by chunk, so the chunks must not depend on it.
constexpr bool k_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
constexpr int k_overlap_chunk = k_host ? 256 : std::numeric_limits<int>::max();

// The rows whose interior rows go first and last (NeighborList::build's windows): none when no ghost comes
// from another rank (nothing to wait for; the order stays that of the atom sort). On the host two windows
// of an eighth of the atoms each (at least 2048) at the middle of the sort order, where atoms lie
// furthest from the faces normal to its slowest axis: their interior rows take far longer than a halo
// message, and the few rows left for later keep the locality of the sort (windows of every row would
// visit the boundary rows apart from their neighbours: 8-10 % slower pair forces). On a device every
// interior row first; nothing goes back (no Newton across ghosts there).
RowWindows overlap_windows(int nlocal, bool remote) {
  RowWindows w;
  if (!remote) return w;
  if (!k_host) {
    w.first[1] = nlocal;
    return w;
  }
  const int half = nlocal / 2, width = std::min(half, std::max(2048, nlocal / 8));
  w.first[0] = half - width;
  w.first[1] = half;
  w.last[0] = half;
  w.last[1] = half + width;
  return w;
}

}  // namespace

void MdSolver::sort_owned_atoms() { m_sorter.sort(m_atoms, m_neighbor); }

void MdSolver::rebuild() {
  PhaseTimer timer(m_phase_time[k_neigh]);
  box_for_rebuild();
  const int nonfinite = m_halo->migrate(m_atoms);
  // One reduction serves the lost-atom check, the dangerous-build count, the cause of a loss and a FENE bond
  // found broken since the last build.
  double counts[4] = {static_cast<double>(m_atoms.nlocal), collect_moved_too_far() ? 1.0 : 0.0,
                      static_cast<double>(nonfinite), m_broken_at >= 0 ? 1.0 : 0.0};
  m_comm.sum_in_place(counts, 4);
  check_broken_bonds(counts[3] > 0);
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
  // The special pairs whose factor is not 1 (md.special_bonds) stay out of the lists. Sparse rows (a WCA melt)
  // laid end to end for the host's pair loop (force.hpp, pair_rows_streamed).
  m_neighbor.stream_rows(std::visit([&](const auto& pair) { return pair_rows_streamed(m_neighbor, pair); }, m_pair));
  m_neighbor.build(m_atoms, overlap_windows(m_atoms.nlocal, m_halo->plan().remote()), m_bonded.exclusions(m_atoms));
  build_bonded();
  if (m_atoms.f.extent(0) != m_scatter_of.extent(0) || m_atoms.f.data() != m_scatter_of.data()) {
    m_scatter = ForceScatter(m_atoms.f);
    m_scatter_of = m_atoms.f;
  }
  Kokkos::deep_copy(Kokkos::subview(m_atoms.x_build, std::make_pair(0, m_atoms.nlocal), Kokkos::ALL),
                    Kokkos::subview(m_atoms.x, std::make_pair(0, m_atoms.nlocal), Kokkos::ALL));
  m_since_build = 0;
  m_build_box = m_box;
}

void MdSolver::compute_forces(bool ev, bool virial) {
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
  }
  m_tally = PairTally{};
  // Under Newton the pair virial is the sum of x . f over the owned atoms and the ghosts before the ghosts'
  // forces go back (fdotr_virial): no per-pair tally, and its diagonal for an anisotropic barostat as well.
  // Otherwise the loop tallies it pair by pair.
  const bool fdotr = newton && (ev || virial);
  m_fdotr_valid = fdotr;
  m_fdotr_diagonal = {0, 0, 0};
  const std::array<double, 3> origin{m_box.lo[0], m_box.lo[1], m_box.lo[2]};
  auto add_fdotr = [&](int begin, int end) {
    PhaseTimer timer(m_phase_time[k_pair]);
    const std::array<double, 3> w = fdotr_virial(m_atoms, begin, end, origin);
    for (int c = 0; c < 3; ++c) m_fdotr_diagonal[c] += w[c];
  };
  auto rows = [&](int begin, int end) {
    PhaseTimer timer(m_phase_time[k_pair]);
    const PairTally t = std::visit(
        [&](const auto& pair) {
          return ev                  ? compute_pair_forces<true>(m_atoms, m_neighbor, pair, m_scatter, begin, end)
                 : virial && !fdotr ? compute_pair_forces<true, false>(m_atoms, m_neighbor, pair, m_scatter, begin, end)
                                     : compute_pair_forces<false>(m_atoms, m_neighbor, pair, m_scatter, begin, end);
        },
        m_pair);
    m_tally.energy += t.energy;
    m_tally.ecoul += t.ecoul;
    m_tally.virial += t.virial;
  };
  // The rows in the list's order (NeighborList::order): the first interior rows in chunks, looking at the
  // ghost positions in flight in between; once every one is in place the rows that need them; then, with
  // the forces on the ghosts complete and on their way back, the last interior rows in chunks.
  auto chunks = [&](int begin, int end) {
    for (int at = begin, n = 0; at < end; at += n) {
      n = std::min(k_overlap_chunk, end - at);
      rows(at, at + n);
      if (m_halo->plan().gathering() || m_halo->plan().scattering()) {
        PhaseTimer timer(m_phase_time[k_comm]);
        m_halo->progress();
      }
    }
  };
  const int nlocal = m_atoms.nlocal, first = m_neighbor.interior_rows(), last = nlocal - m_neighbor.deferred_rows();
  chunks(0, first);
  // Ghost positions still in flight (md.halo_overlap): the rows from here on need them.
  if (m_halo->plan().gathering()) {
    PhaseTimer timer(m_phase_time[k_comm]);
    m_halo->finish_update_positions();
  }
  rows(first, last);
  // Under Newton the bonded terms add their forces to the ghosts too, each interaction once: before x . f is
  // summed (it then holds their virial) and before the ghosts' forces go back.
  if (newton) compute_bonded_terms(ev || virial);
  const bool overlap_reverse = newton && m_cfg.halo_overlap && m_halo->plan().remote();
  // The ghosts' forces are complete here; sending them back adds to the ghosts of earlier dimensions.
  if (fdotr) add_fdotr(nlocal, m_atoms.nall());
  if (overlap_reverse) {
    PhaseTimer timer(m_phase_time[k_comm]);
    m_halo->start_reverse_forces(m_atoms);
  }
  chunks(last, nlocal);
  // The owned atoms' pair forces are complete here, before what the ghosts collected comes back to them.
  if (fdotr) {
    add_fdotr(0, nlocal);
    m_tally.virial = m_fdotr_diagonal[0] + m_fdotr_diagonal[1] + m_fdotr_diagonal[2];
  }
  m_tally_valid = ev;
  if (newton) {
    PhaseTimer timer(m_phase_time[k_comm]);
    if (overlap_reverse)
      m_halo->finish_reverse_forces();
    else
      m_halo->reverse_forces(m_atoms);
  }
  // Without Newton the bonds, angles and dihedrals; the scaled special pairs, then the k-space part of the
  // Coulomb sum: on the owned atoms only, nothing goes back.
  if (!newton) compute_bonded_terms(ev || virial);
  compute_special_pairs(ev || virial);
  compute_kspace(ev || virial);
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
  begin_stage_if_due();  // [[run.stage]]: the next stage's set-up at its first step
  if (m_min && !m_min->done()) {
    minimize_step();
    return;
  }
  // Constant pressure (md_npt.cpp): the barostat's half-step moves the atoms and the box.
  const bool npt = barostatted(m_cfg.ensemble);
  if (npt) {
    npt_initial_integrate();
  } else {
    thermostat_half_step(false);
    PhaseTimer timer(m_phase_time[k_integrate]);
    initial_integrate(m_atoms, m_cfg.dt, m_cfg.unit().ftm2v, m_maxsq);
  }
  ++m_step;
  m_time = clock_time();  // step x md.dt (with stages that change it, from the last change): the same resumed
  ++m_since_build;
  const double half_skin_sq = rebuild_trigger_sq();
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
    // With md.halo_overlap the positions move while compute_forces() does the interior rows.
    if (m_cfg.halo_overlap)
      m_halo->start_update_positions(m_atoms);
    else
      m_halo->update_positions(m_atoms);
  }
  // The barostat needs the virial of every step (the energies only for thermo).
  compute_forces(want_thermo, npt);
  if (npt) {
    npt_final_integrate();
    return;
  }
  PhaseTimer timer(m_phase_time[k_integrate]);
  if (m_cfg.ensemble == Ensemble::Langevin)
    langevin_forces(m_atoms, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.seed, m_step, langevin_units(m_cfg.unit()));
  final_integrate(m_atoms, m_cfg.dt, m_cfg.unit().ftm2v);
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
