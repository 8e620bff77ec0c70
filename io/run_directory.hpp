#pragma once
// The run directory (OUTDIR): the one owner of its files' names and formats. Every reader and writer of a
// file of OUTDIR that spotrun itself interprets goes through here -- the run (launcher/run), the supervisor
// (launcher/launch), the run report (io/report, launcher/report), export and inspect -- so that no second
// parser of the same file exists (docs/layout.md, "The run directory"). It lives in io/, below the solvers
// and the launcher, so every one of them may use it. It does no MPI: a caller decides which rank reads or
// writes.
//
//   status.json           StatusRecord (read), status_*_text (written by launcher::RunStatus), the
//                         supervisor's "stalled" rewrite (mark_status_stalled)
//   heartbeats/<host>.json HeartbeatRecord: heartbeat_text / read_heartbeats
//   progress.json         ProgressRecord: progress_text / read_progress (launcher::ProgressReporter writes it)
//   attempt               k_attempt_file: the attempt that may write (launcher/run/fence.hpp)
//   attempts.jsonl        k_ledger_file: the run report's ledger (io/report/)
//   .spotrun.lock         k_lock_file: the run's lock (launcher/run/output_lock.hpp)
//   checkpoints/          CheckpointName: ckpt-<step>.h5 (one shared file) or ckpt-<step>.levels (the index
//                         of a level set, io/checkpoint_levels.hpp); final.h5 / final.levels in OUTDIR
// Formats on disk: docs/checkpoints.md (status.json), docs/cloud.md (heartbeats), docs/checkpoint-format.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spotrun::io {

// ---- names ----------------------------------------------------------------------------------------------
constexpr const char* k_status_file = "status.json";
constexpr const char* k_progress_file = "progress.json";
constexpr const char* k_attempt_file = "attempt";
constexpr const char* k_ledger_file = "attempts.jsonl";
constexpr const char* k_lock_file = ".spotrun.lock";
constexpr const char* k_heartbeat_dir = "heartbeats";
constexpr const char* k_checkpoint_dir = "checkpoints";

// OUTDIR/<name>.
std::string run_path(const std::string& outdir, const std::string& name);

// ---- checkpoint names -----------------------------------------------------------------------------------
// The two kinds of checkpoint: one shared HDF5 file, or a level set (node files committed by an index).
enum class CheckpointKind { shared_file, level_set };

// The name of a checkpoint of OUTDIR: "ckpt-<step>.h5" / "ckpt-<step>.levels" in OUTDIR/checkpoints, or
// "final.h5" / "final.levels" in OUTDIR (final: step -1 in the name; its step is inside the file).
struct CheckpointName {
  std::int64_t step = -1;
  CheckpointKind kind = CheckpointKind::shared_file;
  bool final = false;

  // A file name (no directory); nullopt for any other name (temporaries, node files, digits over 18).
  static std::optional<CheckpointName> parse(const std::string& file_name);
  // A set's name, "ckpt-<step>" or "final" (a level set, the durable tier's folders and indexes).
  static std::optional<CheckpointName> parse_set(const std::string& set);
  // "ckpt-<step>" or "final": the name of a level set (io/checkpoint_levels.hpp), without the extension.
  std::string set() const;
  // "ckpt-<step>.h5", "final.levels", ...
  std::string file_name() const;
  // The path in OUTDIR: OUTDIR/checkpoints/<file_name> or OUTDIR/<file_name> (final).
  std::string path(const std::string& outdir) const;
};
CheckpointName checkpoint_name(std::int64_t step, CheckpointKind kind);
CheckpointName final_name(CheckpointKind kind);
// ".h5" or ".levels".
const char* checkpoint_extension(CheckpointKind kind);

// The node file of a level set on host `host`: "<set>.<host>.h5" (io/checkpoint_levels.hpp); and the set
// a node file belongs to (nullopt for any other name).
std::string node_file_name(const std::string& set, const std::string& host);
std::optional<std::string> node_file_set(const std::string& file_name);

// The checkpoints of OUTDIR/checkpoints by name (both kinds), by step ascending (for one step, the shared
// file first). Reads the directory only: no file is opened.
std::vector<CheckpointName> list_checkpoints(const std::string& outdir);
// The step of the newest of them, or -1.
std::int64_t newest_checkpoint_step(const std::string& outdir);
// The final states present in OUTDIR (final.h5, then final.levels).
std::vector<CheckpointName> list_finals(const std::string& outdir);

// ---- status.json ----------------------------------------------------------------------------------------
// What a reader takes from a record (docs/checkpoints.md#outdirstatusjson). Absent or null fields: -1 / "".
struct StatusRecord {
  std::string state;  // "running", "finished", "stopped", "failed" (or "stalled", written by launch)
  int exit_code = -1;
  std::string reason;
  std::int64_t step = -1, start_step = -1;
  std::string loop_started;  // UTC, "" when null
  std::int64_t checkpoint_step = -1;
  std::string checkpoint_path;
  std::vector<std::string> hosts;  // a stop's hosts going away
  long long pid = -1;
  std::string host;
  std::string attempt;  // "" when null
};
// OUTDIR/status.json, or nullopt when it is missing or not a JSON object.
std::optional<StatusRecord> read_status(const std::string& outdir);

// The fields every record of one run shares (RunStatus renders them once per change; its signal handler
// writes them from that text).
struct StatusShared {
  std::string version;
  std::optional<std::string> attempt;  // nullopt = null
  long long pid = 0;
  std::string host;
  int ranks = 1, nodes = 1;
  std::string deck, output_dir, started;
  std::int64_t start_step = -1;       // -1 = null
  std::string resumed_from;           // "" = null
  std::string loop_started;           // "" = null
  std::string levels_json;            // a JSON object as text; "" = no "levels"
};
// The shared fields as JSON text without the braces.
std::string status_shared_text(const StatusShared& shared);
// A "running" record at `step` (-1: null), updated at `updated` (UTC), ending in a newline.
std::string status_running_text(std::int64_t step, const std::string& updated, const std::string& shared_text);
// An end record ending in a newline.
struct StatusEnd {
  enum class State { finished, stopped, failed } state = State::failed;
  int exit_code = 1;
  std::int64_t step = -1;         // finished, stopped; failed: null
  std::string final_path;         // finished
  std::string reason;             // stopped, failed
  std::string checkpoint;         // stopped: "" = null
  std::int64_t checkpoint_step = -1;
  std::vector<std::string> hosts; // stopped: none = no "hosts"
  std::string ended;              // UTC
};
std::string status_end_text(const StatusEnd& end, const std::string& shared_text);

// Writes text to path + suffix, then renames it over path: a reader sees the old file or the new one. ""
// when written, else why not (the temporary file removed). Writers that may meet keep apart by their
// suffix (the run's ".tmp", the supervisor's ".launch.tmp").
std::string replace_file(const std::string& path, const std::string& text, const std::string& suffix = ".tmp");

// The supervisor's verdict on an attempt that stalled: the record of `attempt` in OUTDIR/status.json (its
// fields in their order) with state "stalled", exit_code null, the reason, the hosts whose heartbeat
// stopped, the step a heartbeat reported (>= 0) and the last heartbeat (UTC, "" = null). Returns "" when
// written or when the record is not that attempt's, else the error.
struct StatusStalled {
  std::string attempt, reason;
  std::vector<std::string> hosts;
  std::int64_t step = -1;
  std::string last_heartbeat;
};
std::string mark_status_stalled(const std::string& outdir, const StatusStalled& stalled);

// ---- progress.json ---------------------------------------------------------------------------------------
// Where the run is (docs/cli.md, run.progress_seconds). Null fields: -1 / "".
struct ProgressRecord {
  std::int64_t step = 0, steps = 0;
  double percent = 0;
  std::string measure;  // the solver's own measure; "" = "steps"
  double steps_per_second = 0, work_per_second = 0;
  std::string work_unit;  // "atom-steps": the file says "atom-steps/s"
  double elapsed = 0;     // s
  double remaining = -1;  // s; -1: not known yet
  std::string expected_end_utc, updated_utc;
  bool finished = false;
};
std::string progress_text(const ProgressRecord& progress);  // indented JSON, ending in a newline
std::optional<ProgressRecord> read_progress(const std::string& outdir);

// ---- attempt, attempts.jsonl ---------------------------------------------------------------------------
// OUTDIR/attempt := "<id>\n" (a temporary file, fsync, rename, fsync of OUTDIR). Returns "" when written,
// else the error (strerror), and then no OUTDIR/attempt is left (none fences nothing). Its reader is the
// fence's own, async-signal-safe (launcher/run/fence.cpp).
std::string write_attempt_file(const std::string& outdir, const std::string& id);
// The supervisor's verdict on attempt `launch_attempt` in the run report's ledger: its line (the one whose
// "launch_attempt" is that id) gets "ended_by". No ledger or no such line: nothing changes. The ledger's
// other reader and writer is the run report (io/report/model.hpp: parse_ledger, ledger_text).
void annotate_ledger(const std::string& outdir, const std::string& launch_attempt, const std::string& ended_by);

// ---- .spotrun.lock -----------------------------------------------------------------------------------------
// Who holds the run's lock (launcher/run/output_lock.hpp): "key value" lines host, pid, started and, under
// spotrun launch, attempt. Absent fields: "".
struct LockRecord {
  std::string host, pid, started, attempt;
  bool empty() const { return host.empty() && pid.empty(); }
  long pid_number() const;  // -1 when absent or not a number
};
LockRecord parse_lock(const std::string& content);
std::string lock_text(const LockRecord& lock);

// ---- heartbeats/<host>.json ------------------------------------------------------------------------------
// One heartbeat file (docs/cloud.md, "Stalls"). Null fields: -1 / "".
struct HeartbeatRecord {
  std::string attempt;  // "" = null
  std::string host;
  int rank = 0;
  long long pid = 0;
  std::int64_t step = -1, start_step = -1;  // -1: before the time loop (null)
  double mean_step_seconds = -1;            // -1: null
  double max_gap_seconds = 0;
  bool writing_state = false;
  int writes_timed = 0;
  double step_unix = -1;  // -1: null
  double unix = -1;       // -1: missing (a reader skips such a record)
  std::string utc;
};
std::string heartbeat_path(const std::string& outdir, const std::string& host);  // the host made file-safe
std::string heartbeat_text(const HeartbeatRecord& beat);                          // ends in a newline
// Every OUTDIR/heartbeats/*.json that parses as an object (fields of the wrong type read as absent).
std::vector<HeartbeatRecord> read_heartbeats(const std::string& outdir);

}  // namespace spotrun::io
