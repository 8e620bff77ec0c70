// What `spotrun launch` makes of a run's files (run_files.hpp); the files are io/run_directory.hpp's.
#include "launcher/launch/run_files.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "comm/errors.hpp"
#include "launcher/launch/hosts.hpp"
#include "launcher/launch/this_machine.hpp"
#include "launcher/run/fence.hpp"
#include "launcher/run/run_status.hpp"  // parse_utc

namespace fs = std::filesystem;

namespace spotrun::launcher::impl {

// The step of the last row of OUTDIR/thermo.csv, or -1; *written: when that row was written (the file's
// modification time).
long long last_thermo_step(const std::string& outdir, double* written) {
  const fs::path path = fs::path(outdir) / "thermo.csv";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    *written = static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
  std::ifstream in(path);
  std::string line;
  long long last = -1;
  while (std::getline(in, line)) {
    const std::string first = line.substr(0, line.find(','));
    if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos || first.size() > 18) continue;
    last = std::stoll(first);
  }
  return last;
}

bool record_of(const std::string& outdir, const std::string& id, io::StatusRecord& record) {
  auto r = io::read_status(outdir);  // io/run_directory.hpp
  if (!r || r->attempt.empty() || r->attempt != id) return false;
  record = std::move(*r);
  return true;
}

void read_outcome(const std::string& outdir, const std::string& id, int wait_status, const std::string& self,
                  RunOutcome& a) {
  io::StatusRecord r;
  if (!record_of(outdir, id, r)) {
    a.state = "none";
    a.reason = "no status record from this attempt: the run did not get as far as its output directory";
    return;
  }
  a.have_record = true;
  a.state = r.state;
  a.exit_code = r.exit_code;
  a.reason = r.reason;
  while (!a.reason.empty() && (a.reason.back() == '.' || a.reason.back() == '\n')) a.reason.pop_back();
  a.start_step = r.start_step;
  a.step = r.step;
  a.loop_started = r.loop_started.empty() ? -1 : parse_utc(r.loop_started);
  if (r.checkpoint_step >= 0) a.checkpoint_step = r.checkpoint_step;
  a.stop_hosts.insert(a.stop_hosts.end(), r.hosts.begin(), r.hosts.end());
  if (a.state == "running") {
    // The run ended without writing how: killed (SIGKILL, out of memory, its node lost). Rank 0 may
    // still be on its way out when mpirun returns: it is given a few seconds.
    const long long pid = r.pid;
    const std::string host = r.host;
    const bool here = same_host(host, self, self);
    for (double until = now_unix() + 5; here && !process_gone(pid) && now_unix() < until;) ::usleep(50000);
    const bool alive = here && !process_gone(pid);
    a.state = "killed";
    a.exit_code = -1;
    a.reason = alive ? "mpirun ended while rank 0 (PID " + std::to_string(pid) + ") still runs, without a record"
                     : "ended without a record (killed)";
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == k_exit_fenced)
      a.reason += "; a rank stopped fenced (exit 77): OUTDIR/" + std::string(io::k_attempt_file) + " names another attempt";
  } else if (a.state != "finished" && a.state != "stopped" && a.state != "failed") {
    a.state = "none";
    a.reason = "status record in an unknown state";
  }
}

HeartbeatScan scan_heartbeats(const std::string& outdir, const std::string& id, double now,
                              std::map<std::string, HostBeat>& beats, long long& step, double& step_seen_at,
                              AttemptHeartbeats& seen) {
  HeartbeatScan scan;
  double& max_gap = scan.max_gap;
  bool& untimed_write = scan.untimed_write;
  bool& loop = scan.loop;
  for (const io::HeartbeatRecord& r : io::read_heartbeats(outdir)) {
    if (r.attempt != id || r.host.empty() || r.unix < 0) continue;
    HostBeat& b = beats[r.host];
    if (r.unix != b.value) {
      b.value = r.unix;
      b.changed_at = now;
      seen.last_heartbeat = std::max(seen.last_heartbeat, r.unix);
    }
    if (r.step >= 0) {
      loop = true;
      b.step = r.step;
      if (b.step > step) {
        step = b.step;
        step_seen_at = now;
        seen.heartbeat_step = step;
        if (r.step_unix >= 0) seen.heartbeat_step_at = r.step_unix;
      }
    }
    max_gap = std::max(max_gap, r.max_gap_seconds);
    if (r.writing_state && r.writes_timed == 0) untimed_write = true;
  }
  return scan;
}

}  // namespace spotrun::launcher::impl
