#pragma once
// Growing back (spotrun launch --grow, docs/cloud.md): whether to stop an attempt at a checkpoint and
// relaunch it on more ranks, decided from what was measured (pure functions, tested in
// tests/test_launch.cpp). The measuring is Launcher::consider_grow's (grow.cpp).
#include <string>
#include <vector>

namespace spotrun::launcher {

// Whether to stop an attempt of `old_ranks` ranks at a checkpoint and relaunch it on `new_ranks`. The cost
// of the relaunch is what the attempts so far took from the end of the previous attempt to their first
// step (`relaunch_seconds`: probes, mpirun, start-up, the checkpoint read) plus the stop checkpoint
// (`stop_checkpoint_seconds`) plus the steps redone (`redone_steps` x `step_seconds`; 0 after a stop with a
// checkpoint); the saving is the time the steps left take now less what they would take on more ranks,
// assuming the step time scales as 1 / ranks: `remaining_steps` x `step_seconds` x (1 - old_ranks /
// new_ranks). It grows when the saving is larger.
struct GrowEstimate {
  double cost = 0, saving = 0;
  bool worth = false;
  std::string text;  // "relaunch 4.1 s (...) < saving 12.3 s (...)"
};
GrowEstimate grow_estimate(long long remaining_steps, double step_seconds, int old_ranks, int new_ranks,
                           double relaunch_seconds, double stop_checkpoint_seconds, long long redone_steps = 0);

// What was measured of the running attempt when a new checkpoint appeared.
struct GrowFigures {
  long long total_steps = 0;       // run.steps of the deck
  int ranks = 0, new_ranks = 0;    // the attempt's, and how many fit with the hosts that answer now
  long long heartbeat_step = -1;   // the newest step a heartbeat of the attempt reported
  double mean_step_seconds = 0;    // the largest mean step time its heartbeats report
  double max_gap_seconds = 0;      // the longest gap between two steps (a checkpoint write)
  double loop_started = -1;        // the start of its time loop (status.json), unix seconds; <= 0: not yet
  long long start_step = -1;       // its first step (status.json)
  long long checkpoint_step = -1;  // the newest checkpoint
  double checkpoint_written = -1;  // when that checkpoint's file was written (unix seconds), or -1
  double prep_started = 0;         // when the attempt's preparation (probes) began
  std::vector<double> relaunch_seconds;  // earlier attempts: preparation to first step
};

struct GrowDecision {
  bool known = false;    // false: the run's step time is not known yet (decide at the next checkpoint)
  long long step = -1;   // the step the run has reached
  std::size_t attempts_measured = 0;  // the attempts whose start-up the relaunch cost is the mean of
  GrowEstimate estimate;
};

// The step reached and the step time: the heartbeats', or, when the newest checkpoint is newer than the
// last heartbeat (one every 2 s), the time from the start of the time loop to that checkpoint's file,
// checkpoint writes included; the relaunch cost: the mean start-up of the attempts so far, this one's
// included; then grow_estimate.
GrowDecision decide_grow(const GrowFigures& f);

}  // namespace spotrun::launcher
