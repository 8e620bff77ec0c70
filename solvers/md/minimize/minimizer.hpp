#pragma once
// The energy minimiser of the MD solver ([md.minimize], docs/md.md#minimisation): LAMMPS's `minimize` with
// min_style cg (Polak-Ribiere conjugate gradient with the quadratic line search, linestyle quadratic) or
// fire (FIRE 2.0, LAMMPS's defaults), one iteration per call of iterate() (the solver's step), its stopping
// criteria and its "Minimization stats". The plan apart from the force evaluation: the solver hands it the
// atoms and a function that evaluates the energy and forces of the current positions (rebuilding the lists
// and migrating atoms when one moved more than half the skin). Its per-atom vectors (CG's search direction,
// previous gradient and line-search start; FIRE's velocities) live in the atom field min_state, so that they
// migrate, sort and checkpoint with their atoms; its scalars go into the checkpoint (put_state/restore_state).
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/solver_state.hpp"
#include "min_config.hpp"
#include "solvers/md/atoms.hpp"

namespace spotrun::md {

// Why a minimisation stopped (LAMMPS's stop conditions and their words).
enum class MinStop { None, MaxIterations, MaxEvaluations, Etol, Ftol, Downhill, ZeroAlpha, ZeroForce, ZeroQuad, MaxVdotf };
const char* min_stop_words(MinStop s);

// What the minimiser needs of the solver.
struct MinContext {
  AtomStore* atoms = nullptr;
  const comm::Communicator* comm = nullptr;
  std::int64_t natoms = 0;
  std::array<double, 3> box{};  // periodic lengths (sigma)
  double dt = 0.005;            // md.dt: FIRE's initial time step (in the units' time)
  double ftm2v = 1.0;           // the units' force-to-mass-velocity factor (FIRE's kicks: v += dt ftm2v f / m)
  bool per_atom = true;         // energies per atom (lj: LAMMPS thermo_modify norm yes), else totals
  // The potential energy (per atom with per_atom, else the total: LAMMPS's thermo_modify norm default of the
  // units) of the current positions, with their forces in atoms->f (collective). local_maxsq: this rank's largest squared move since the last neighbour
  // build (a rebuild follows when any exceeds (skin/2)^2, as LAMMPS's minimiser: neigh_modify every 1 delay
  // 0 check yes).
  std::function<double(double local_maxsq)> energy_force;
};

// The figures LAMMPS prints after a minimisation.
struct MinStats {
  double einitial = 0, enext_to_last = 0, efinal = 0;
  double fnorm2_initial = 0, fnorminf_initial = 0, fnorm2_final = 0, fnorminf_final = 0;
  double alpha_final = 0;
  std::int64_t iterations = 0, evaluations = 0;
  MinStop stop = MinStop::None;
};

class Minimizer {
 public:
  Minimizer(const MinimizeConfig& cfg, MinContext ctx);
  // A fresh minimisation from the current positions and forces (energy e0 per atom), at step `step`.
  void start(double e0, std::int64_t step);
  // One iteration (step: the step it becomes); collective. Returns whether the minimisation has ended.
  bool iterate(std::int64_t step);
  bool done() const { return m_stats.stop != MinStop::None; }
  const MinStats& stats() const { return m_stats; }
  std::int64_t start_step() const { return m_start_step; }
  // "Minimization stats" lines, LAMMPS's words and figures.
  std::vector<std::string> summary_lines() const;
  // The per-atom columns of min_state a minimisation in progress needs (0 once it has ended).
  int state_width() const;
  // The checkpoint's scalars md.minimize.*, and their reading back (InputError naming a missing one).
  void put_state(io::SolverState& st) const;
  void restore_state(const io::SolverState& st);
  // The global force vector's 2-norm and largest component (collective).
  double fnorm2() const;
  double fnorm_inf() const;

 private:
  MinStop iterate_cg(std::int64_t step);
  MinStop iterate_fire(std::int64_t step);
  MinStop linemin_quadratic(double eoriginal, double& alpha);
  double alpha_step(double alpha);
  void finish(MinStop why);

  MinimizeConfig m_cfg;
  MinContext m_ctx;
  MinStats m_stats;
  std::int64_t m_start_step = 0;
  double m_ecurrent = 0, m_eprevious = 0;
  // CG: f.f of the previous gradient.
  double m_gg = 0;
  // FIRE: its time step and mixing, the step of the last v.f <= 0, how many in a row, and whether the
  // velocities were just reset.
  double m_fire_dt = 0, m_fire_alpha = 0;
  std::int64_t m_last_negative = 0, m_vdotf_negative = 0;
  bool m_flagv0 = true;
};

}  // namespace spotrun::md
