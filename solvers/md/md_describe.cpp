// The MD solver as `spotrun inspect` describes a checkpoint: the atoms and their types, the box, the
// ensemble and its targets (from the restored state and the checkpoint's deck).
#include "comm/number_text.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

std::vector<std::string> MdSolver::describe() const {
  std::vector<std::string> lines;
  std::string types;
  for (std::size_t t = 0; t < m_masses.size(); ++t) {
    types += (t > 0 ? ", " : "") + std::to_string(t + 1);
    if (t < m_cfg.types.size()) types += " \"" + m_cfg.types[t].name + "\"";
    types += " mass " + significant(m_masses[t], 10);
  }
  lines.push_back("atoms: " + std::to_string(m_natoms) + " of " + std::to_string(m_masses.size()) + " type(s) (" +
                  types + ")");
  const UnitConstants& u = m_cfg.unit();
  const std::string length = u.length, time = u.time;
  lines.push_back("box: " + significant(m_box.length(0), 10) + " x " + significant(m_box.length(1), 10) + " x " +
                  significant(m_box.length(2), 10) + " " + length + " from (" + significant(m_box.lo[0], 10) + ", " +
                  significant(m_box.lo[1], 10) + ", " + significant(m_box.lo[2], 10) + "), periodic; " +
                  significant(static_cast<double>(m_natoms) / m_box.volume(), 6) + " atoms/" + length + "^3");
  const std::string targets = "temperature " + significant(m_cfg.temperature, 10) + " " + u.temperature +
                              ", damp " + significant(m_cfg.damp, 10) + " " + time;
  switch (m_cfg.ensemble) {
    case Ensemble::Nve:
      lines.push_back("ensemble: nve (velocity Verlet), no thermostat");
      break;
    case Ensemble::Langevin:
      lines.push_back("ensemble: langevin (Langevin thermostat), " + targets + ", seed " + std::to_string(m_cfg.seed));
      break;
    case Ensemble::Nvt:
      lines.push_back("ensemble: nvt (Nose-Hoover chain of " + std::to_string(m_cfg.tchain) + "), " + targets);
      break;
    case Ensemble::Npt:
    case Ensemble::Nph: {
      const std::string baro = std::string(m_cfg.barostat == Barostat::Iso ? "iso" : "aniso") + " barostat, pressure " +
                               significant(m_cfg.pressure, 10) + " " + u.pressure + ", pressure_damp " +
                               significant(m_cfg.pressure_damp, 10) + " " + time + ", pchain " + std::to_string(m_cfg.pchain);
      if (m_cfg.ensemble == Ensemble::Npt)
        lines.push_back("ensemble: npt (Nose-Hoover chain of " + std::to_string(m_cfg.tchain) + ", " + baro + "), " + targets);
      else
        lines.push_back("ensemble: nph (" + baro + ")");
      break;
    }
  }
  for (const auto& l : describe_stages()) lines.push_back(l);  // [[run.stage]]
  lines.push_back("time step: " + significant(m_cfg.dt, 10) + " " + time + "; pair style " + m_cfg.pair_style +
                  (m_cfg.units == UnitStyle::Lj ? std::string() : std::string("; units ") + u.name));
  // Molecules: the bonded styles with their type counts, and special_bonds.
  const bonded::BondedSetup& b = m_bonded_setup;
  std::string styles;
  const std::pair<const std::string*, std::size_t> kinds[3] = {
      {&b.bond_style, b.bond_coeffs.size()}, {&b.angle_style, b.angle_coeffs.size()}, {&b.dihedral_style, b.dihedral_coeffs.size()}};
  const char* names[3] = {"bond", "angle", "dihedral"};
  for (int k = 0; k < 3; ++k)
    if (!kinds[k].first->empty())
      styles += std::string(styles.empty() ? "" : ", ") + names[k] + " " + *kinds[k].first + " (" +
                std::to_string(kinds[k].second) + " type(s))";
  if (!styles.empty())
    lines.push_back("molecules: " + styles + "; special_bonds lj " + significant(b.special_lj[0], 6) + " " +
                    significant(b.special_lj[1], 6) + " " + significant(b.special_lj[2], 6));
  for (const auto& l : m_kspace_lines) lines.push_back("long-range Coulomb: " + l);
  if (m_min) {  // [md.minimize]: the style and where it stands
    const MinStats& st = m_min->stats();
    const MinimizeConfig& mc = m_cfg.minimize;
    std::string where = m_min->done() ? std::string("ended at step ") + std::to_string(m_min->start_step() + st.iterations) + " (" +
                                            min_stop_words(st.stop) + ")"
                                      : "at iteration " + std::to_string(st.iterations) + " (step " +
                                            std::to_string(m_step) + ")";
    lines.push_back(std::string("minimisation: ") + (mc.style == MinStyle::Cg ? "cg" : "fire") + ", etol " +
                    significant(mc.etol, 6) + ", ftol " + significant(mc.ftol, 6) + "; " + where + ", " +
                    std::to_string(st.evaluations) + " force evaluations");
  }
  return lines;
}

}  // namespace spotrun::md
