#pragma once
// OUTDIR/status.json: what the run of an output directory is doing, or how it ended, for whatever
// supervises it (spotrun launch, a script, a person). Rank 0 writes it while it holds the directory's
// lock (launcher/run/output_lock.hpp), atomically: a temporary file, fsync, rename. Records, in order:
//   "running"   when the lock is taken (start_step null), and again when the time loop starts;
//   "finished", "stopped" or "failed" when the run ends.
// A stop signal that ends the process at once outside the time loop (launcher/run/stop.hpp) writes the end
// record from the signal handler, with async-signal-safe calls only, from text rendered in advance. The
// records' fields and their JSON are io/run_directory.hpp's (the owner of OUTDIR's files); this class
// decides when each is written. A
// run killed outright (SIGKILL, its node lost) leaves "running": a reader that finds the process gone
// treats it as failed. Schema: docs/checkpoints.md#outdirstatusjson.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/run_directory.hpp"
#include "launcher/environment.hpp"

namespace spotrun::launcher {

class RunStatus {
 public:
  // Writes nothing yet. Every method is a no-op on ranks other than 0, and none is collective.
  // launch_attempt: "attempt" of every record (nullopt: null), the attempt_variable() of the environment as
  // the command read it (launcher/environment.hpp); by default, this process's environment now.
  explicit RunStatus(const comm::Communicator& comm,
                     std::optional<std::string> launch_attempt = Environment::read().launch_attempt);
  ~RunStatus();  // disarms the record of the signal handler
  RunStatus(const RunStatus&) = delete;
  RunStatus& operator=(const RunStatus&) = delete;

  static const char* file_name() { return io::k_status_file; }
  // The environment variable through which `spotrun launch` names its attempt ("attempt" in the record).
  static const char* attempt_variable() { return "SPOTRUN_LAUNCH_ATTEMPT"; }

  // The run holds OUTDIR's lock: writes "running" (start step not known yet) and arms the signal record.
  void begin(const std::string& outdir, const std::string& deck_path);
  // The time loop starts at `step`, from checkpoint `resumed_from` ("" when the run starts fresh).
  void running(std::int64_t step, const std::string& resumed_from);
  void finished(std::int64_t step, const std::string& final_path);
  // Stopped early (exit 75) at `step`; the run resumes from `checkpoint` at `checkpoint_step`. `hosts`:
  // hosts the stop names as going away (a spot notice), which a supervisor should not use again.
  void stopped(std::int64_t step, const std::string& checkpoint, std::int64_t checkpoint_step,
               const std::string& reason, const std::vector<std::string>& hosts = {});
  // Failed with `exit_code` (1, 2); `reason`: the error message. After the first end record, later
  // calls change nothing (the first verdict stands).
  void failed(int exit_code, const std::string& reason);
  // Multilevel checkpoints: where the newest checkpoint of each level is ("levels", a JSON object as text,
  // CheckpointManager::levels_json); kept in every later record, the current one rewritten.
  void levels(const std::string& json_object);

 private:
  void write_end(io::StatusEnd end);
  void write(const std::string& text);
  void render_signal_record();
  bool m_root;
  bool m_active = false;
  bool m_ended = false;
  bool m_warned = false;
  int m_ranks = 1;
  int m_nodes = 1;
  std::optional<std::string> m_attempt;
  std::string m_path;
  std::string m_common;  // the fields every record shares, as JSON text without the braces
  std::string m_started;
  std::string m_deck;
  std::string m_outdir;
  std::int64_t m_start_step = -1;
  std::string m_resumed_from;
  std::string m_loop_started;
  std::string m_levels;  // JSON text, "" = none
  std::int64_t m_running_step = -1;
};

// UTC time `unix_seconds` as "YYYY-MM-DDTHH:MM:SS.mmmZ" into buf (at least 25 bytes); async-signal-safe.
void format_utc(double unix_seconds, char* buf);
// Seconds since the epoch of a time format_utc wrote (or without milliseconds); < 0 when it is not one.
double parse_utc(const std::string& text);

}  // namespace spotrun::launcher
