#pragma once
// Heartbeats and the in-rank watchdog of `spotrun run` (docs/cloud.md, "Stalls"). From the start of the
// time loop (after the run report read the heartbeats a lost attempt left) to the end of the run, every
// rank runs a helper thread (no MPI call: MPI runs FUNNELED) that wakes every 0.1 s:
//  - on the lowest rank of each host name (ranks grouped by MPI_Get_processor_name, as the checkpoint
//    levels group them: launcher/run/node_groups.hpp) it replaces OUTDIR/heartbeats/<host>.json (a temporary
//    file renamed over it) every k_heartbeat_seconds with the step, the mean step time and the longest gap between
//    two step advances (checkpoint writes included), so that a supervisor reading the shared output
//    directory (spotrun launch) sees which host stopped: one file per node, not per rank, to keep the
//    writes to a shared file system few; a node's ranks stall together when one of them does.
//  - on every rank it is the watchdog: once the time loop has started, a rank whose step has not advanced
//    for its stall timeout (below) prints a message naming its rank and host and ends its process at once
//    with exit code 76 (k_exit_stalled), so that the ranks left on the surviving nodes free them even
//    without a supervisor (they are blocked in MPI, waiting for a rank that is gone).
// The watchdog's timeout: SPOTRUN_STALL_TIMEOUT (seconds; 0 turns it off) when set, else
// max(120 s, 20 x the longest gap between step advances seen so far), and at least 1200 s while a state
// write is in progress before one has been timed. spotrun launch sets SPOTRUN_STALL_TIMEOUT to twice its
// own --stall-timeout, and its default is half the ranks' default, so the supervisor, which sees every
// host, acts first.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "comm/communicator.hpp"

namespace spotrun::launcher {

constexpr double k_heartbeat_seconds = 2;

// The watchdog's timeout for a longest gap `max_gap` (s) and whether a state write is in progress with
// none timed yet; `fixed` >= 0: SPOTRUN_STALL_TIMEOUT's value (0: off, returns 0).
double rank_stall_timeout(double fixed, double max_gap, bool untimed_write);

class Heartbeat {
 public:
  // Groups the ranks by host name (collective: every rank of `comm`), then starts the thread. outdir: the
  // locked output directory; launch_attempt and stall_timeout: SPOTRUN_LAUNCH_ATTEMPT (the heartbeat's
  // "attempt") and SPOTRUN_STALL_TIMEOUT (nullopt: unset) as the command read them
  // (launcher/environment.hpp).
  Heartbeat(const comm::Communicator& comm, const std::string& outdir, const std::string& launch_attempt,
            const std::optional<std::string>& stall_timeout);
  ~Heartbeat();  // stops the thread (the heartbeat file stays: its last word)
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;
  // The time loop starts at `step` (the watchdog arms).
  void loop_started(std::int64_t step);
  // A step ended: `step` reached, the step took `seconds`.
  void step_done(std::int64_t step, double seconds);
  // A write of the state (checkpoint, stop checkpoint, final.h5) begins / ends.
  void write_begins();
  void write_ends();

 private:
  void loop();
  void write_file(double now);
  std::string m_path, m_host, m_attempt;
  int m_rank = 0;
  bool m_writer = false;
  double m_fixed = -1;  // SPOTRUN_STALL_TIMEOUT, or -1
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_armed{false};
  std::atomic<bool> m_writing{false};
  std::atomic<int> m_writes_timed{0};
  std::atomic<std::int64_t> m_step{-1};
  std::atomic<std::int64_t> m_start_step{-1};
  std::atomic<double> m_advanced{0};  // steady clock (s) of the last step advance (or of the loop's start)
  std::atomic<double> m_max_gap{0};
  std::atomic<double> m_step_seconds_sum{0};
  std::atomic<double> m_step_unix{0};  // wall clock of the last advance
  std::thread m_thread;
};

}  // namespace spotrun::launcher
