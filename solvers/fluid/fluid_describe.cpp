// The fluid solver as `spotrun inspect` describes a checkpoint: the grid and box, the viscosity, the
// forcing, the time step and the end time (from the checkpoint's deck).
#include "comm/number_text.hpp"
#include "fluid_solver.hpp"

namespace spotrun::fluid {

std::vector<std::string> FluidSolver::describe() const {
  std::vector<std::string> lines;
  const auto& n = m_cfg.n;
  lines.push_back("grid: " + std::to_string(n[0]) + " x " + std::to_string(n[1]) + " x " + std::to_string(n[2]) +
                  " points (" + std::to_string(static_cast<long long>(n[0]) * n[1] * n[2]) +
                  ") of the periodic box [0, 2pi)^3; dealiasing " + to_string(m_cfg.dealias));
  lines.push_back("viscosity: " + significant(m_cfg.viscosity, 10) + "; initial field " + to_string(m_cfg.init));
  lines.push_back(m_cfg.forcing == Forcing::None
                      ? std::string("forcing: none (decaying)")
                      : "forcing: " + to_string(m_cfg.forcing) + ", rate " + significant(m_cfg.forcing_rate, 10) +
                            " on |k| <= " + significant(m_cfg.forcing_kmax, 10));
  lines.push_back((m_cfg.cfl > 0 ? "time step: adaptive, CFL " + significant(m_cfg.cfl, 10) + ", at most " +
                                       significant(m_cfg.dt, 10)
                                 : "time step: " + significant(m_cfg.dt, 10)) +
                  (m_cfg.time_end > 0 ? "; ends at time " + significant(m_cfg.time_end, 10) : std::string()));
  return lines;
}

}  // namespace spotrun::fluid
