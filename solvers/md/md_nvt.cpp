// The MD solver, Nose-Hoover NVT (md.ensemble = "nvt", LAMMPS fix nvt): the chain's set-up and its two
// half-step updates per step, with the temperature and the velocity scaling they need.
#include "md_impl.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

double MdSolver::current_temperature() { return temperature_of(m_comm.sum(local_mv2())); }

double MdSolver::temperature_of(double mv2) const {
  // LAMMPS compute temp: sum m v^2 times tfactor = mvv2e / (dof boltz), dof = 3N - 3.
  const double dof = 3.0 * static_cast<double>(m_natoms) - 3.0;
  const double tfactor = dof > 0 ? m_cfg.unit().mvv2e / (dof * m_cfg.unit().boltz) : 0.0;
  return mv2 * tfactor;
}

void MdSolver::scale_velocities(double factor) {
  auto v = m_atoms.v;
  Kokkos::parallel_for(
      "md::nvt::scale", Policy(0, m_atoms.nlocal), KOKKOS_LAMBDA(int i) {
        v(i, 0) *= factor;
        v(i, 1) *= factor;
        v(i, 2) *= factor;
      });
}

void MdSolver::setup_thermostat() {
  setup_barostat();
  if (!thermostatted(m_cfg.ensemble)) return;
  m_nhc = NoseHooverChain(m_cfg.tchain, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.unit().boltz);
  m_nhc.setup(current_temperature(), 3.0 * static_cast<double>(m_natoms) - 3.0);
}

void MdSolver::thermostat_half_step(bool after_kick) {
  if (m_cfg.ensemble != Ensemble::Nvt) return;  // npt: md_npt.cpp
  impl::PhaseTimer timer(m_phase_time[k_integrate]);
  if (after_kick) m_nhc.set_temperature(current_temperature());  // FixNH::final_integrate
  m_nhc.half_step([this](double f) { scale_velocities(f); });
}

}  // namespace spotrun::md
