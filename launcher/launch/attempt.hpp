#pragma once
// One attempt of `spotrun launch`: what it was and how it ended (AttemptResult), and how a stop request
// during it escalates (StopEscalation, a state machine tested in tests/test_launch.cpp). Starting,
// watching and ending an attempt are Launcher's (attempt.cpp).
#include <string>
#include <vector>

#include "launcher/launch/hosts.hpp"
#include "launcher/launch/mpirun_output.hpp"
#include "launcher/launch/run_files.hpp"

namespace spotrun::launcher::impl {

// An attempt: from OUTDIR/status.json when its record is this attempt's (RunOutcome), from its
// heartbeats (AttemptHeartbeats), and what launch saw and did.
struct AttemptResult : RunOutcome, AttemptHeartbeats {
  int number = 0;
  std::string id;
  int ranks = 0;
  std::vector<Placement> placement;
  double started = 0, ended = 0;
  int wait_status = 0;
  MpirunNotes notes;
  bool stop_forwarded = false;
  // A stall (no step progress, or a host's heartbeat stopped, for the stall timeout).
  bool stalled = false;
  std::string stall_reason;
  std::vector<std::string> stalled_hosts;  // whose heartbeat stopped
  bool fence_unanswered = false;           // a host of the attempt did not answer the fence
  std::vector<std::string> fence_answered; // hosts whose fence killed the attempt's processes there
  // Growing back: launch stopped the attempt (SIGUSR1) to relaunch it on `grow_to` ranks.
  bool grow = false;
  int grow_to = 0;
};

// Stop requests to launch (SIGINT, SIGTERM, SIGHUP) during an attempt, each one more severe than the last:
// the first stops the run with a checkpoint (SIGUSR1 to mpirun, which forwards it to every rank, once the
// run has taken its output directory: a signal before its ranks exist would be lost; SIGTERM when the run
// has not started k_start_wait_seconds after the request), the second sends SIGTERM to mpirun, the third
// SIGKILL to mpirun and its process group.
class StopEscalation {
 public:
  enum class Stage {
    running,               // no stop request
    waiting_for_run,       // stop requested; SIGUSR1 waits for the run to take its output directory
    checkpoint_requested,  // SIGUSR1 sent to mpirun
    terminated,            // SIGTERM sent to mpirun
    killed,                // SIGKILL sent to mpirun and its process group
  };
  enum class Action {
    none,
    announce,           // the first request: log it; SIGUSR1 follows (tick)
    forward_usr1,       // SIGUSR1 to mpirun
    terminate,          // SIGTERM to mpirun (a second request)
    terminate_unstarted,  // SIGTERM to mpirun: the run did not start within k_start_wait_seconds
    kill,               // SIGKILL to mpirun's process group and mpirun (a third request)
  };
  static constexpr double k_start_wait_seconds = 30;

  // A stop request at `now`.
  Action request(double now);
  // While waiting for the run: `run_started` (its record is in status.json) at `now`.
  Action tick(bool run_started, double now);
  Stage stage() const { return m_stage; }
  bool stopping() const { return m_stage != Stage::running; }

 private:
  Stage m_stage = Stage::running;
  double m_request_at = 0;
};

}  // namespace spotrun::launcher::impl
