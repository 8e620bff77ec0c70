#pragma once
// The time loop's step, composed of observers (HOOMD's Computes, Updaters and Analyzers; LAMMPS' fixes with
// their end_of_step): the loop (launcher/run/run.cpp, run_loop) steps the solver and agrees on a stop; every
// other thing that happens at a step is an observer of it, called in the order they were added, at four points:
//   step_begins     before the solver's step                       (the run report's sample starts)
//   step_done       the step computed, its output due              (thermo rows, trajectory and field frames)
//   step_timed      the step's time is known (output included)     (run report, progress, heartbeat, checkpoint tiers)
//   between_steps   the ranks agreed to go on                      (checkpoint triggers)
// Another observer is a class derived from StepObserver and one line adding it in make_step_observers
// (step_observers.cpp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/thermo_writer.hpp"
#include "solvers/solver.hpp"

namespace spotrun::comm {
class Transport;
}
namespace spotrun::report {
class RunRecorder;
}

namespace spotrun::launcher {

class CheckpointManager;
class Heartbeat;
class ProgressReporter;
class RunStatus;

struct StepEvent {
  Solver& solver;
  bool thermo_step = false;   // the step computed its thermo (run.thermo_every, the run's last step)
  double started = 0;         // MPI_Wtime at the step's start
  double now = 0;             // MPI_Wtime once its output is written (step_timed, between_steps)
  bool interval_due = false;  // between_steps: the ranks agreed that checkpoint.every_seconds is due
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void step_begins() {}
  virtual void step_done(const StepEvent&) {}
  virtual void step_timed(const StepEvent&) {}
  virtual void between_steps(const StepEvent&) {}
};

// What the observers of a run watch with (every reference outlives them).
struct StepServices {
  const comm::Communicator& comm;
  comm::Transport& transport;
  io::ThermoWriter& thermo;
  bool& thermo_warned;
  CheckpointManager& checkpoints;
  report::RunRecorder& run_report;
  Heartbeat& heartbeat;
  ProgressReporter& progress;
  RunStatus& status;
  std::string outdir;
};

// The observers of a run's step, in their order: thermo, frames, run report, progress, heartbeat, checkpoint
// tiers, checkpoint triggers.
std::vector<std::unique_ptr<StepObserver>> make_step_observers(const StepServices& s);

// Writes one thermo row, agreed on by every rank: a non-finite value ends the run (RunError, exit 1, nothing
// written from that state); a CSV write error warns or ends the run as checkpoint.on_error says.
void write_thermo(const comm::Communicator& comm, io::ThermoWriter& thermo, Solver& solver, bool abort_on_error,
                  bool& warned);

// Where each checkpoint of a run with levels is (local, partner, durable): the run report's and status.json's
// record of the tiers' events since the last call (every rank; the events are rank 0's).
void record_levels(CheckpointManager& checkpoints, report::RunRecorder& run_report, RunStatus& status);

}  // namespace spotrun::launcher
