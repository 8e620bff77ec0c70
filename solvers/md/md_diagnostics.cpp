// The MD solver, diagnostics: thermo (LAMMPS thermo_style custom, the columns of md.thermo_style; by default
// step time temp pe ke etotal press), the instability hint and the end-of-run summary.
#include <string>
#include <vector>

#include "md_impl.hpp"
#include "md_solver.hpp"
#include "pair.hpp"

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
  const bool bonded = m_bonded.active(m_atoms);
  const bonded::BondedEnergies b = bonded ? m_bonded_energy : bonded::BondedEnergies{};
  const PairTally sp = bonded ? m_special_tally : PairTally{};
  const bool long_range = m_pppm || m_ewald;
  const kspace::KspaceResult k = long_range ? m_kspace : kspace::KspaceResult{};
  double sums[8] = {local_mv2(),
                    m_tally.energy + sp.energy,
                    m_tally.virial + sp.virial + b.virial + (k.virial[0] + k.virial[1] + k.virial[2]),
                    b.ebond,
                    b.eangle,
                    b.edihed,
                    m_tally.ecoul + sp.ecoul,
                    k.energy};
  m_comm.sum_in_place(sums, 8);
  // Units (units.hpp): KE = mvv2e sum m v^2 / 2, T = 2 KE / (dof boltz), P = nktv2p (2 KE + W) / (3 V); the
  // energies per atom in lj units, totals in real and metal (LAMMPS's thermo_modify norm default).
  const UnitConstants& u = m_cfg.unit();
  const double n = u.normalise_thermo ? static_cast<double>(m_natoms) : 1.0;
  const double ke = 0.5 * u.mvv2e * sums[0];
  const double dof = 3.0 * static_cast<double>(m_natoms) - 3.0;
  Thermo t;
  t.temp = dof > 0 ? 2.0 * ke / (dof * u.boltz) : 0.0;
  t.evdwl = sums[1] / n;
  t.ebond = sums[3] / n;
  t.eangle = sums[4] / n;
  t.edihed = sums[5] / n;
  t.ecoul = sums[6] / n;
  t.elong = sums[7] / n;
  const bool charged = m_coeffs.style.charged;
  t.pe = bonded || charged ? (sums[1] + sums[6] + sums[7] + sums[3] + sums[4] + sums[5]) / n : t.evdwl;
  t.ke = ke / n;
  t.etotal = t.pe + t.ke;
  t.press = (2.0 * ke + sums[2]) / (3.0 * m_box.volume()) * u.nktv2p;
  return t;
}

std::vector<std::string> thermo_keywords() {
  return {"step", "time", "temp", "pe", "ke", "etotal", "press", "vol", "density", "ecouple", "econserve",
          "evdwl", "ebond", "eangle", "edihed", "ecoul", "elong"};
}

// The columns after "step" (the launcher writes the step itself).
std::vector<std::string> MdSolver::thermo_columns() const {
  return std::vector<std::string>(m_cfg.thermo_style.begin() + 1, m_cfg.thermo_style.end());
}

void MdSolver::prepare_thermo() {
  if (m_tally_valid) return;
  rebuild();
  compute_forces(true);
}

std::vector<double> MdSolver::thermo() {
  Thermo t = compute_thermo();
  const double n = m_cfg.unit().normalise_thermo ? static_cast<double>(m_natoms) : 1.0;
  // ecouple: the energy the thermostat took up (LAMMPS: the Nose-Hoover chain's energy), per atom (lj) or
  // total as the other energies; 0 under nve. econserve = etotal + ecouple.
  // npt, nph: with the barostat's energy (LAMMPS fix npt's compute_scalar).
  double ecouple = thermostatted(m_cfg.ensemble) ? m_nhc.energy() : 0.0;
  if (barostatted(m_cfg.ensemble)) ecouple += m_baro.energy(m_box.volume());
  ecouple /= n;
  std::vector<double> values;
  for (auto c = m_cfg.thermo_style.begin() + 1; c != m_cfg.thermo_style.end(); ++c) {
    const std::string& k = *c;
    if (k == "time") values.push_back(m_time);
    else if (k == "temp") values.push_back(t.temp);
    else if (k == "pe") values.push_back(t.pe);
    else if (k == "ke") values.push_back(t.ke);
    else if (k == "etotal") values.push_back(t.etotal);
    else if (k == "press") values.push_back(t.press);
    else if (k == "vol") values.push_back(m_box.volume());
    else if (k == "density") values.push_back(total_mass() * m_cfg.unit().mv2d / m_box.volume());  // as LAMMPS
    else if (k == "ecouple") values.push_back(ecouple);
    else if (k == "econserve") values.push_back(t.etotal + ecouple);
    else if (k == "evdwl") values.push_back(t.evdwl);
    else if (k == "ebond") values.push_back(t.ebond);
    else if (k == "eangle") values.push_back(t.eangle);
    else if (k == "edihed") values.push_back(t.edihed);
    else if (k == "ecoul") values.push_back(t.ecoul);
    else if (k == "elong") values.push_back(t.elong);
    else throw std::logic_error("md.thermo_style: unknown column " + k);
  }
  return values;
}

double MdSolver::total_mass() {
  if (m_total_mass >= 0) return m_total_mass;
  auto type = m_atoms.type;
  auto mass = m_atoms.mass_by_type;
  double local = 0;
  Kokkos::parallel_reduce(
      "md::total_mass", Policy(0, m_atoms.nlocal), KOKKOS_LAMBDA(int i, double& s) { s += mass(type(i)); }, local);
  m_total_mass = m_comm.sum(local);
  return m_total_mass;
}

std::string MdSolver::instability_hint() const {
  // The style's coefficients as the deck gives them: "md.pair.epsilon/sigma", "[[md.pair.coeff]] d0/alpha/r0".
  // The configuration's style: a solver made for a restore has no coefficients before restore().
  std::string coeffs = "the pair coefficients";
  for (const auto& style : pair_style_infos()) {
    if (style.name != m_cfg.pair_style) continue;
    std::string names;
    for (const auto& p : style.params) names += (names.empty() ? "" : "/") + std::string(p.name);
    coeffs = (style.has_type_defaults() ? "md.pair." : "[[md.pair.coeff]] ") + names;
  }
  return "the time step md.dt = " + significant(m_cfg.dt, 6) +
         " is too large for this system, or atoms overlap (check the initial configuration, " + coeffs + ")";
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
  const char* names[k_nphase] = {"Pair", "Bond", "Kspace", "Neigh", "Comm", "Integrate"};
  for (int p = 0; p < k_nphase; ++p) {
    if (p == k_bond && !m_bonded.active(m_atoms)) continue;  // LAMMPS too prints Bond for molecular systems
    if (p == k_kspace && !m_pppm && !m_ewald) continue;
    double tmax = m_comm.max(m_phase_time[p]);
    out.push_back(std::string("Time ") + names[p] + ": " + significant(tmax, 6) + " s (slowest rank)");
  }
  if (m_min)
    for (auto& line : m_min->summary_lines()) out.push_back(std::move(line));
  return out;
}

}  // namespace spotrun::md
