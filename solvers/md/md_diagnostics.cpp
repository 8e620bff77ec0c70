// The MD solver, diagnostics: thermo (LAMMPS thermo_style custom step time temp pe ke etotal press), the
// instability hint and the end-of-run summary.
#include <string>
#include <vector>

#include "md_impl.hpp"
#include "md_solver.hpp"

namespace spotrun::md {


double MdSolver::local_mv2() const {
  auto v = m_atoms.v;
  auto type = m_atoms.type;
  auto mass = m_atoms.mass_by_type;
  double mv2 = 0;
  Kokkos::parallel_reduce(
      "md::mv2", Policy(0, m_atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& s) {
        s += mass(type(i)) * (v(i, 0) * v(i, 0) + v(i, 1) * v(i, 1) + v(i, 2) * v(i, 2));
      },
      mv2);
  return mv2;
}

Thermo MdSolver::compute_thermo() {
  if (!m_tally_valid) throw std::logic_error("MdSolver::thermo() called for a step computed without energies");
  double sums[3] = {local_mv2(), m_tally.energy, m_tally.virial};
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
  return "the time step md.dt = " + significant(m_cfg.dt, 6) +
         " is too large for this system, or atoms overlap (check the initial configuration, md.pair.epsilon/sigma)";
}

std::vector<std::string> MdSolver::summary() {
  double s[2] = {static_cast<double>(m_neighbor.total_pairs()), static_cast<double>(m_atoms.nghost)};
  m_comm.sum_in_place(s, 2);
  std::vector<std::string> out;
  const auto& g = m_grid->dims();
  out.push_back("Rank grid: " + std::to_string(g[0]) + " x " + std::to_string(g[1]) + " x " + std::to_string(g[2]));
  out.push_back("Atoms: " + std::to_string(m_natoms) + ", ghosts: " + std::to_string(static_cast<long long>(s[1])));
  out.push_back(std::string("Neighbors per atom (") + (m_neighbor.full() ? "full" : "half") +
                (m_neighbor.newton() ? " list, newton on" : " list") + ", with skin): " + significant(s[0] / static_cast<double>(m_natoms), 6));
  out.push_back(std::string("Pair force precision: ") + precision_name(m_cfg.precision));
  out.push_back("Neighbor list builds = " + std::to_string(m_neighbor.builds()));
  out.push_back("Dangerous builds = " + std::to_string(m_dangerous_builds));
  // Timing breakdown: slowest rank per phase (load imbalance shows as max > total/ranks).
  const char* names[k_nphase] = {"Pair", "Neigh", "Comm", "Integrate"};
  for (int p = 0; p < k_nphase; ++p) {
    double tmax = m_comm.max(m_phase_time[p]);
    out.push_back(std::string("Time ") + names[p] + ": " + significant(tmax, 6) + " s (slowest rank)");
  }
  return out;
}

}  // namespace spotrun::md
