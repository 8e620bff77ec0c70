#pragma once
// What `spotrun launch` makes of a run's files: how an attempt ended (its OUTDIR/status.json record), what
// its heartbeats say, and the last row of thermo.csv. The files themselves (names, formats, readers and
// writers) are io/run_directory.hpp's: nothing here parses status.json or a heartbeat, lists checkpoints/
// or builds a path of OUTDIR but thermo.csv's.
#include <map>
#include <string>
#include <vector>

#include "io/run_directory.hpp"

namespace spotrun::launcher::impl {

// The step of the last row of OUTDIR/thermo.csv, or -1; *written: when that row was written (the file's
// modification time).
long long last_thermo_step(const std::string& outdir, double* written);

// OUTDIR/status.json (io::read_status) into `record`; true when it is the record of attempt `id`.
bool record_of(const std::string& outdir, const std::string& id, io::StatusRecord& record);

// How an attempt ended, from OUTDIR/status.json when its record is the attempt's.
struct RunOutcome {
  bool have_record = false;
  std::string state;  // finished, stopped, failed, killed (a "running" record whose process is gone), none
  int exit_code = -1;
  std::string reason;
  long long start_step = -1, step = -1, checkpoint_step = -1;
  double loop_started = -1;
  std::vector<std::string> stop_hosts;
};
// `wait_status`: mpirun's; `self`: this machine's host name (rank 0 may still be on its way out here).
void read_outcome(const std::string& outdir, const std::string& id, int wait_status, const std::string& self,
                  RunOutcome& a);

// What an attempt's heartbeats said (the nodes' clocks).
struct AttemptHeartbeats {
  long long heartbeat_step = -1;  // the last step a heartbeat reported
  double heartbeat_step_at = -1;  // when that step was reached
  double last_heartbeat = -1;     // the newest heartbeat
};

// A host's heartbeat file (OUTDIR/heartbeats/<host>.json) as seen on this machine's clock.
struct HostBeat {
  double value = -1;       // the file's "unix" (the node's clock): a new value is a new heartbeat
  double changed_at = 0;   // when this process saw it change
  long long step = -1;
};
struct HeartbeatScan {
  double max_gap = 0;          // the longest gap between two steps any heartbeat reports
  bool untimed_write = false;  // a host writes a checkpoint whose write time is not known yet
  bool loop = false;           // the time loop has begun
};
// Reads the heartbeat files of attempt `id` (io::read_heartbeats) at `now`: `beats` per host, `step` (and
// `step_seen_at`, when it advanced) and `seen` updated.
HeartbeatScan scan_heartbeats(const std::string& outdir, const std::string& id, double now,
                              std::map<std::string, HostBeat>& beats, long long& step, double& step_seen_at,
                              AttemptHeartbeats& seen);

}  // namespace spotrun::launcher::impl
