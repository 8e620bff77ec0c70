// The MD solver, long-range electrostatics: the k-space solver of [md.kspace] (kspace/pppm.hpp, kspace/ewald.hpp)
// set up from the atoms' charges, and its part of each force call (docs/md.md#long-range-coulomb-pppm-and-ewald).
#include <cstdio>

#include "md_impl.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

kspace::KspaceOptions kspace_options(const MdConfig& cfg) {
  kspace::KspaceOptions o;
  o.accuracy = cfg.kspace.accuracy;
  o.cutoff = cfg.coulomb_cutoff_or_default();
  o.g_ewald = cfg.kspace.g_ewald;
  o.mesh = cfg.kspace.mesh;
  o.order = cfg.kspace.order;
  // The Coulomb constant of the units, and LAMMPS's two_charge_force qqr2e qelectron^2 / angstrom^2 (the
  // electron charge and the Angstrom are the units of charge and length in real and metal).
  o.qqrd2e = cfg.unit().qqrd2e;
  o.two_charge_force = cfg.unit().qqr2e;
  // An atom moves at most half the skin between two neighbour builds: the mesh's ghost cells reach that far.
  o.margin = 0.5 * cfg.skin;
  return o;
}

void check_kspace(const MdConfig& cfg, const PairStyleInfo& style) {
  const bool solver = cfg.kspace.style != KspaceStyle::None;
  if (style.long_range && !solver)
    throw InputError("md.pair.style \"" + style.name + "\" computes the real-space part of the Coulomb sum only: give "
                     "[md.kspace] style = \"pppm\" or \"ewald\" (LAMMPS: Pair style requires a KSpace style)");
  if (solver && !style.long_range)
    throw InputError(std::string("md.kspace.style = \"") + (cfg.kspace.style == KspaceStyle::Pppm ? "pppm" : "ewald") + "\" needs a long-range pair style (\"lj/cut/coul/long\"); "
                     "md.pair.style is \"" + style.name + "\" (LAMMPS: KSpace style is incompatible with Pair style)");
}

void MdSolver::setup_kspace() {
  if (m_cfg.kspace.style == KspaceStyle::None) return;
  const kspace::ChargeTotals totals = kspace::charge_totals(m_atoms.q, m_atoms.nlocal, m_comm);
  kspace::KspaceOptions o = kspace_options(m_cfg);
  // A constant-pressure checkpoint: the mesh and g_ewald of the run that wrote it (chosen for its first box, which
  // a choice for the restored box may not repeat).
  if (m_kspace_restore[0] > 0) {
    for (int d = 0; d < 3; ++d) o.mesh[d] = static_cast<int>(m_kspace_restore[d]);
    o.g_ewald = m_kspace_restore[3];
  }
  double g = 0;
  if (m_cfg.kspace.style == KspaceStyle::Pppm) {
    m_pppm = std::make_unique<kspace::Pppm>(o, *m_grid, m_comm, m_transport, totals);
    g = m_pppm->choice().g_ewald;
    m_kspace_lines = {m_pppm->choice().describe()};
    for (const auto& w : m_pppm->warnings()) m_kspace_lines.push_back("warning: " + w);
  } else {
    m_ewald = std::make_unique<kspace::Ewald>(o, *m_grid, m_comm, totals);
    g = m_ewald->choice().g_ewald;
    m_kspace_lines = {m_ewald->choice().describe()};
    for (const auto& w : m_ewald->warnings()) m_kspace_lines.push_back("warning: " + w);
  }
  // The warnings on the first rank's stderr, as LAMMPS warns of a non-neutral system (the choice itself is in
  // describe(): spotrun.log and inspect).
  if (m_comm.is_root())
    for (const auto& l : m_kspace_lines)
      if (l.rfind("warning: ", 0) == 0) std::fprintf(stderr, "WARNING: long-range Coulomb: %s\n", l.c_str() + 9);
  // The real-space part of the pair style with the same splitting.
  m_cfg.kspace.g_ewald_resolved = g;
  m_pair = make_pair(m_cfg, m_coeffs);
}

void MdSolver::compute_kspace(bool ev) {
  if (!m_pppm && !m_ewald) return;
  impl::PhaseTimer timer(m_phase_time[k_kspace]);
  m_kspace = m_pppm ? m_pppm->compute(m_atoms.x, m_atoms.q, m_atoms.nlocal, m_atoms.f, ev)
                    : m_ewald->compute(m_atoms.x, m_atoms.q, m_atoms.nlocal, m_atoms.f);
}

}  // namespace spotrun::md
