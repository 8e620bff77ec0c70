#pragma once
// Progress of `spotrun run` (run.progress_seconds): every so often the root rank prints the step, the share
// of the run done, the throughput and the expected end (wall clock and time left) to stderr, so that the
// thermo output on stdout stays clean, and replaces OUTDIR/progress.json (written to a temporary file and
// renamed: readers never see a partial file) for scripts. Only the root rank's clock decides: no
// collective.
#include <cstdint>
#include <functional>
#include <string>

namespace spotrun::launcher {

struct ProgressFigures {
  std::int64_t step = 0, steps = 0;  // now, and the run's last step
  double percent = 0;                // of the steps from 0 to `steps`, or of the solver's own measure
  std::string measure;               // the solver's own measure ("time 2.5 of 10"); "": the steps measure
  double steps_per_second = 0;       // over the steps of this process
  double work_per_second = 0;        // the solver's work units (atom-steps, point-steps) per second
  double elapsed = 0;                // s, of this process's time loop
  double remaining = -1;             // s; -1: not known yet (no step done)
  std::string eta_utc;               // expected end, ISO 8601 UTC ("" when not known)
};

// The figures at wall-clock time `now_epoch` (seconds since 1970) of a loop that started at step
// `first_step`, `elapsed` seconds ago. A run that ends on the solver's own measure of completion
// (Solver::progress_fraction(), e.g. simulated time against fluid.time_end) passes it: `fraction` now and
// `first_fraction` at the loop's start; then the percent and the time left follow it wherever it is ahead
// of the steps (step / steps), and `measure` says what it counts.
ProgressFigures progress_figures(std::int64_t first_step, std::int64_t step, std::int64_t steps, double elapsed,
                                 double work_per_step, double now_epoch, double first_fraction = 0,
                                 double fraction = 0, const std::string& measure = "");
// "Progress: step 1200 of 5000 (24.0%), 310 steps/s (2.7e+05 atom-steps/s), 12.3 s left, ends at
// 2026-11-30 17:40:12 UTC"
std::string progress_line(const ProgressFigures& f, const std::string& work_unit);
std::string progress_json(const ProgressFigures& f, const std::string& work_unit, bool finished);

class ProgressReporter {
 public:
  // root: whether this rank reports; interval: run.progress_seconds (0: never); first_fraction: the
  // solver's Solver::progress_fraction() at the loop's start.
  ProgressReporter(bool root, std::string outdir, double interval, std::int64_t first_step, std::int64_t steps,
                   double loop_start, std::string work_unit, double first_fraction = 0);
  // After a step at loop time `now` (MPI_Wtime): reports when `interval` passed since the last report.
  // fraction, measure: the solver's Solver::progress_fraction() and progress_measure() now.
  void after_step(std::int64_t step, double now, double work_per_step, double fraction = 0,
                  const std::string& measure = "");
  // At the end of the loop: progress.json says where the run stopped (and whether it finished: then
  // percent 100 and no time left).
  void at_end(std::int64_t step, double now, double work_per_step, bool finished, double fraction = 0,
              const std::string& measure = "");
  // Where progress lines go (default: stderr).
  void set_printer(std::function<void(const std::string&)> print) { m_print = std::move(print); }

 private:
  void report(std::int64_t step, double now, double work_per_step, bool finished, bool print, double fraction,
              const std::string& measure);
  bool m_root;
  std::string m_outdir;
  double m_interval;
  std::int64_t m_first_step, m_steps;
  double m_loop_start, m_last;
  std::string m_work_unit;
  double m_first_fraction;
  std::function<void(const std::string&)> m_print;
};

}  // namespace spotrun::launcher
