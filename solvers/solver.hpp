#pragma once
// The interface every solver implements. Solvers own their Kokkos views; they never open files or read
// the environment: the launcher hands them a typed configuration and any input data, and asks for
// thermo rows between steps.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/solver_state.hpp"

namespace spotrun {

class Solver {
 public:
  virtual ~Solver() = default;
  virtual std::string name() const = 0;
  // Prepares the first step (neighbour lists, halos, initial forces). Collective.
  virtual void setup() = 0;
  // Advances one time step. want_thermo: the launcher will ask for thermo() after this step, so the
  // solver computes the energy terms it otherwise skips. Collective.
  virtual void step(bool want_thermo) = 0;
  // Makes thermo() valid for the state as it is after a step computed without energies: the launcher's
  // row of a stop step, asked for only once the stop checkpoint is written (the solver may redo work and
  // change what it keeps between steps). Collective. Default: thermo() needs nothing more.
  virtual void prepare_thermo() {}
  virtual std::int64_t step_index() const = 0;
  virtual double time() const = 0;
  // Thermo column names (without "step") and the values of the current step. thermo() is collective.
  virtual std::vector<std::string> thermo_columns() const = 0;
  virtual std::vector<double> thermo() = 0;
  // Units of work per step for throughput (atoms for MD, grid points for fluid) and its name.
  virtual double work_per_step() const = 0;
  virtual std::string work_unit() const = 0;
  // End-of-run statistics lines (collective; printed by the launcher on the root rank).
  virtual std::vector<std::string> summary() = 0;
  // True when the solver's own end condition is reached (e.g. fluid.time_end) before run.steps.
  virtual bool finished() const { return false; }
  // Steps the solver takes besides the run.steps of the run (energy minimisations, one iteration a step: before
  // the dynamics, or as stages between them): -1 while one goes on (or is due next), else how many it took so
  // far (0: none). The run ends at this many steps plus run.steps.
  virtual std::int64_t preamble_end() const { return 0; }
  // A stop the solver asks for after a step, with a stop checkpoint and the exit of a run to resume (75): the
  // reason in words, the same on every rank ("" to go on). E.g. a box that shrinks below what the rank grid
  // allows (a resume on fewer ranks goes on).
  virtual std::string stop_request() const { return {}; }
  // What the run simulates, as "name: value" lines for `spotrun inspect` (atoms or grid, box, ensemble and
  // its targets); the solver as restored or set up. Not collective.
  virtual std::vector<std::string> describe() const { return {}; }
  // How far the solver is towards its own end (the one finished() reports), from 0 to 1: e.g. the simulated
  // time over fluid.time_end. 0 when it has none; the launcher then measures progress by run.steps (and
  // uses whichever of the two is further along). progress_measure(): the same in words for progress
  // lines ("time 2.5 of 10"), "" when there is none.
  virtual double progress_fraction() const { return 0; }
  virtual std::string progress_measure() const { return ""; }
  // Periodic outputs besides thermo (fields, spectra), written through io/; called after setup() and
  // after every step with the step index. Collective.
  virtual void write_outputs(const std::string& outdir, std::int64_t step) {}
  // Whether write_outputs(outdir, step) would write anything (the launcher checks its write fence only
  // then; see launcher/run/fence.hpp). Same answer on every rank.
  virtual bool writes_outputs_at(std::int64_t step) const { return false; }
  // The likely causes of a non-finite thermo value or state, for the message that stops the run
  // ("the time step md.dt is too large, or atoms overlap").
  virtual std::string instability_hint() const = 0;

  // Checkpoint support. state(): the full state as decomposition-independent arrays and scalars, each
  // rank one even block of rows (io::block_of) of every array (collective). state_layout(): the arrays
  // restore() needs, with inner shapes and global_rows (0: any). restore(): replaces the state with one
  // read from a checkpoint, on any rank count, each rank holding its even block (collective); called
  // instead of the fresh initial state, before setup(). A restored run continues bit-identically when
  // the rank count is the same.
  virtual io::SolverState state() = 0;
  // state() into the memory of `spare`, a state this solver returned before and the caller has done with
  // (its arrays written): the same result, without allocating and zero-filling the arrays again. The
  // checkpoint writer keeps its last state for this. A solver without it allocates (state()).
  virtual io::SolverState state_reusing(io::SolverState&& spare) {
    spare = io::SolverState{};
    return state();
  }
  virtual std::vector<io::StateArray> state_layout() const = 0;
  virtual void restore(const io::SolverState& state) = 0;
};

// What every solver keeps alike: its name and unit of work, fixed when it is made, and its clock (the step
// index and the time, which its own step() and restore() advance). A solver derives from it and declares
// the members it defines with SPOTRUN_SOLVER_OVERRIDES (below), then work_per_step() and the optional
// hooks it overrides.
class SolverBase : public Solver {
 public:
  std::string name() const final { return m_name; }
  std::string work_unit() const final { return m_work_unit; }
  std::int64_t step_index() const final { return m_step; }
  double time() const final { return m_time; }

 protected:
  SolverBase(std::string name, std::string work_unit)
      : m_name(std::move(name)), m_work_unit(std::move(work_unit)) {}

  std::int64_t m_step = 0;
  double m_time = 0;

 private:
  std::string m_name, m_work_unit;
};

}  // namespace spotrun

// The members of the Solver interface that every solver defines in its own source files, declared once
// (what each does: Solver above). A class derived from spotrun::SolverBase writes
// `SPOTRUN_SOLVER_OVERRIDES;` in its public part.
#define SPOTRUN_SOLVER_OVERRIDES                                                 \
  void setup() override;                                                         \
  void step(bool want_thermo) override;                                          \
  std::vector<std::string> thermo_columns() const override;                      \
  std::vector<double> thermo() override;                                         \
  std::vector<std::string> summary() override;                                   \
  std::string instability_hint() const override;                                 \
  ::spotrun::io::SolverState state() override;                                   \
  std::vector<::spotrun::io::StateArray> state_layout() const override;          \
  void restore(const ::spotrun::io::SolverState& state) override
