// The MD solver, [md.minimize]: the minimiser (minimize/minimizer.hpp) made for a fresh run once the set-up
// has computed the forces, or restored with a checkpoint; each of its iterations is a step (the step counter
// continues, as LAMMPS's minimize advances the timestep), and its energy evaluations rebuild the neighbour
// lists (and migrate atoms) when an atom moved more than half the skin since the last build.
#include "md_solver.hpp"

#include "comm/errors.hpp"
#include "integrate.hpp"
#include "minimize/min_vectors.hpp"

namespace spotrun::md {

namespace {
MinContext context_of(AtomStore& atoms, const comm::Communicator& comm, const comm::Box3& box,
                      const MdConfig& cfg, std::int64_t natoms) {
  MinContext c;
  c.atoms = &atoms;
  c.comm = &comm;
  c.natoms = natoms;
  for (int d = 0; d < 3; ++d) c.box[d] = box.hi[d] - box.lo[d];
  c.dt = cfg.dt;
  c.ftm2v = cfg.unit().ftm2v;
  c.per_atom = cfg.units == UnitStyle::Lj;
  return c;
}
}  // namespace

void MdSolver::start_minimizer() {
  if (!m_cfg.minimize.enabled || m_min) return;
  MinContext c = context_of(m_atoms, m_comm, m_box, m_cfg, m_natoms);
  c.energy_force = [this](double local_maxsq) { return minimize_energy_force(local_maxsq); };
  m_min = std::make_unique<Minimizer>(m_cfg.minimize, std::move(c));
  const int width = m_cfg.minimize.style == MinStyle::Cg ? minimize::k_cg_width : minimize::k_fire_width;
  m_atoms.min_state = IdRowsView("md::min_state", static_cast<std::size_t>(m_atoms.capacity()), width);
  // The forces of the positions alone (the set-up may have added Langevin's random forces).
  m_min->start(minimize_energy_force(0.0), m_step);
  if (m_min->done()) m_atoms.set_width(AtomFieldId::min_state, 0);
}

void MdSolver::restore_minimizer(const io::SolverState& st) {
  if (!m_cfg.minimize.enabled) return;
  MinContext c = context_of(m_atoms, m_comm, m_box, m_cfg, m_natoms);
  c.energy_force = [this](double local_maxsq) { return minimize_energy_force(local_maxsq); };
  m_min = std::make_unique<Minimizer>(m_cfg.minimize, std::move(c));
  std::string bad;
  try {
    m_min->restore_state(st);
    if (m_atoms.width(AtomFieldId::min_state) != m_min->state_width())
      bad = "checkpoint dataset /md/min_state has rows of " + std::to_string(m_atoms.width(AtomFieldId::min_state)) +
            " values; the minimisation of md.minimize.style needs " + std::to_string(m_min->state_width());
  } catch (const InputError& e) {
    bad = e.what();
  }
  m_comm.agree<InputError>(bad.empty(), bad);
  // The energies of the restored positions, for thermo rows (a minimisation's steps always have them).
  if (!m_min->done()) {
    compute_forces(true);
  }
}

std::int64_t MdSolver::preamble_end() const {
  if (!m_cfg.stages.empty()) return stages_preamble_end();  // [[run.stage]] (md_stage.cpp)
  if (!m_min) return 0;
  return m_min->done() ? m_min->start_step() + m_min->stats().iterations : -1;
}

double MdSolver::minimize_energy_force(double local_maxsq) {
  const double half_skin_sq = 0.25 * m_cfg.skin * m_cfg.skin;
  if (m_comm.any(local_maxsq > half_skin_sq)) {
    rebuild();
  } else {
    m_halo->update_positions(m_atoms);
  }
  compute_forces(true);
  return compute_thermo().pe;
}

void MdSolver::minimize_step() {
  const bool ended = m_min->iterate(m_step + 1);
  ++m_step;
  m_time = clock_time();
  if (!ended) return;
  // The minimiser's vectors are of no more use (nor part of later checkpoints); the dynamics' first half-kick
  // feels Langevin's forces, as after the set-up.
  m_atoms.set_width(AtomFieldId::min_state, 0);
  // Constant pressure: the barostat starts from the minimised state (its virial, volume and temperature), as
  // LAMMPS's fix npt sets up at the run after a minimize.
  setup_barostat();
  if (m_cfg.ensemble == Ensemble::Langevin)
    langevin_forces(m_atoms, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.seed, m_step);
}

}  // namespace spotrun::md
