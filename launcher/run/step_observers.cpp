#include "launcher/run/step_observers.hpp"

#include <cmath>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/transport.hpp"
#include "io/report/recorder.hpp"
#include "launcher/run/checkpointing.hpp"
#include "launcher/run/console.hpp"
#include "launcher/run/fence.hpp"
#include "launcher/run/heartbeat.hpp"
#include "launcher/run/progress.hpp"
#include "launcher/run/run_status.hpp"

namespace spotrun::launcher {
namespace {

// A thermo row at the steps that computed one, and at the solver's own end (fluid.time_end). A stream-ordered
// transport (NCCL) may still be moving this step's data: its failures surface here, before output.
class ThermoRows final : public StepObserver {
 public:
  explicit ThermoRows(const StepServices& s) : m_s(s) {}
  void step_done(const StepEvent& e) override {
    if (!e.thermo_step && !e.solver.finished()) return;
    m_s.transport.fence();
    write_thermo(m_s.comm, m_s.thermo, e.solver, m_s.checkpoints.settings().abort_on_error, m_s.thermo_warned);
  }

 private:
  StepServices m_s;
};

// The solver's trajectory and field frames (Solver::write_outputs).
class Frames final : public StepObserver {
 public:
  explicit Frames(const StepServices& s) : m_s(s) {}
  void step_done(const StepEvent& e) override {
    const std::int64_t step = e.solver.step_index();
    // --- checkpoint.async: HDF5 from one thread at a time ---
    if (e.solver.writes_outputs_at(step) && m_s.checkpoints.in_flight()) {
      m_s.heartbeat.write_begins();
      m_s.checkpoints.wait_background("trajectory or field frames are written (HDF5, one writer at a time)");
      m_s.heartbeat.write_ends();
    }
    if (m_s.comm.is_root() && e.solver.writes_outputs_at(step))
      check_attempt_fence("trajectory or field frames");  // --- fencing ---
    e.solver.write_outputs(m_s.outdir, step);
  }

 private:
  StepServices m_s;
};

// The run report's sample of the step: compute, less the transport's time (io/report/recorder.hpp).
class ReportSample final : public StepObserver {
 public:
  explicit ReportSample(const StepServices& s) : m_s(s) {}
  void step_begins() override { m_s.run_report.step_begin(); }
  void step_timed(const StepEvent& e) override { m_s.run_report.step_end(e.now - e.started); }

 private:
  StepServices m_s;
};

// progress.json and the progress lines (launcher/run/progress.hpp).
class Progress final : public StepObserver {
 public:
  explicit Progress(const StepServices& s) : m_s(s) {}
  void step_timed(const StepEvent& e) override {
    m_s.progress.after_step(e.solver.step_index(), e.now, e.solver.work_per_step(), e.solver.progress_fraction(),
                            e.solver.progress_measure());
  }

 private:
  StepServices m_s;
};

// --- stalls: the heartbeat's step and the watchdog's clock (launcher/run/heartbeat.hpp) ---
class HeartbeatBeat final : public StepObserver {
 public:
  explicit HeartbeatBeat(const StepServices& s) : m_s(s) {}
  void step_timed(const StepEvent& e) override { m_s.heartbeat.step_done(e.solver.step_index(), e.now - e.started); }

 private:
  StepServices m_s;
};

// --- checkpoint levels: a set written or flushed in the background, polled between steps ---
class TierPoll final : public StepObserver {
 public:
  explicit TierPoll(const StepServices& s) : m_s(s) {}
  void step_timed(const StepEvent&) override { record_levels(m_s.checkpoints, m_s.run_report, m_s.status); }

 private:
  StepServices m_s;
};

// A checkpoint every checkpoint.every_steps, or when the agreed interval (every_seconds, auto) is due.
class CheckpointTrigger final : public StepObserver {
 public:
  explicit CheckpointTrigger(const StepServices& s) : m_s(s) {}
  void between_steps(const StepEvent& e) override {
    if (!m_s.checkpoints.due_by_steps(e.solver.step_index()) && !e.interval_due) return;
    m_s.transport.fence();
    const char* why = e.interval_due ? "interval" : "every_steps";
    m_s.heartbeat.write_begins();  // --- stalls: a write's time counts in the gap between steps ---
    m_s.run_report.checkpoint(e.solver.step_index(), why, [&] { return m_s.checkpoints.write(e.solver, e.now, why); });
    m_s.heartbeat.write_ends();
  }

 private:
  StepServices m_s;
};

}  // namespace

std::vector<std::unique_ptr<StepObserver>> make_step_observers(const StepServices& s) {
  std::vector<std::unique_ptr<StepObserver>> o;
  o.push_back(std::make_unique<ThermoRows>(s));
  o.push_back(std::make_unique<Frames>(s));
  o.push_back(std::make_unique<ReportSample>(s));
  o.push_back(std::make_unique<Progress>(s));
  o.push_back(std::make_unique<HeartbeatBeat>(s));
  o.push_back(std::make_unique<TierPoll>(s));
  o.push_back(std::make_unique<CheckpointTrigger>(s));
  return o;
}

void write_thermo(const comm::Communicator& comm, io::ThermoWriter& thermo, Solver& solver, bool abort_on_error,
                  bool& warned) {
  const std::vector<double> values = solver.thermo();
  bool finite = true;
  for (double v : values) finite = finite && std::isfinite(v);
  if (comm.any(!finite)) {
    const auto columns = solver.thermo_columns();
    std::ostringstream which;
    for (std::size_t k = 0; k < values.size() && k < columns.size(); ++k)
      if (!std::isfinite(values[k])) which << (which.tellp() > 0 ? ", " : "") << columns[k] << " = " << values[k];
    throw RunError("non-finite thermo at step " + std::to_string(solver.step_index()) + " (" + which.str() +
                   "): " + solver.instability_hint() +
                   ". The run stops here; no checkpoint or final state is written from this state.");
  }
  if (comm.is_root()) check_attempt_fence("a thermo row");  // --- fencing (launcher/run/fence.hpp) ---
  const std::string error = comm.broadcast(thermo.write(solver.step_index(), values));
  if (error.empty()) return;
  if (abort_on_error) throw RunError(error + " (checkpoint.on_error = \"abort\")");
  if (!warned && comm.is_root())
    say_error("WARNING: " + error + "; the run goes on (checkpoint.on_error = \"warn\"), thermo rows may be missing");
  warned = true;
}

void record_levels(CheckpointManager& checkpoints, report::RunRecorder& run_report, RunStatus& status) {
  const std::vector<TierEvent> events = checkpoints.poll_tiers();
  for (const auto& e : events) run_report.checkpoint_levels(e.step, e.levels, e.durable.text());
  if (!events.empty()) status.levels(checkpoints.levels_json());
}

}  // namespace spotrun::launcher
