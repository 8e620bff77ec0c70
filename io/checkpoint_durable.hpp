#pragma once
// The durable tier of multilevel checkpoints (docs/checkpoints.md, "The durable tier"): a shared directory or
// an object store, reached through the rclone program (Debian's `rclone`; a remote `name:path` of the user's
// rclone configuration or of RCLONE_CONFIG_<NAME>_* variables). spotrun never speaks a storage protocol
// itself: every transfer is an rclone child process.
//
// Layout under the run's prefix DURABLE/spotrun-<output directory name>-<hash> (the name of the run's
// node-local directory, io::level_directory):
//   <set>/<node file>   every node's own node file, uploaded by that node's leader
//   <set>.levels        the set's index, uploaded by rank 0 once every node file is confirmed
// An upload is confirmed when rclone exits 0 and the object's size and hashes (those both sides have: MD5 on
// S3, every hash on a directory) equal the local file's, as `rclone lsjson --stat --hash` lists them. A set
// without its index does not exist for a resume.
//
// A flush runs in the background: each node's leader starts rclone from a helper thread (no MPI call there);
// the time loop calls poll() between steps, which agrees over a communicator of its own (a non-blocking
// allreduce) when every node's upload is confirmed. A flush that fails (an unreachable bucket, rclone killed)
// is a warning: the run goes on, its local and partner copies intact.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_levels.hpp"

namespace spotrun::io {

// The rclone program to run, as the caller names it (a path or a name on PATH); "" is "rclone". spotrun's
// launcher passes SPOTRUN_RCLONE (launcher::Environment::rclone, launcher/environment.hpp) down to every
// function here that runs it; nothing here reads the environment for it.
std::string rclone_program(const std::string& rclone);

struct RcloneResult {
  int exit_code = -1;   // rclone's exit status; -1 when it could not start or was killed
  bool cancelled = false;
  std::string output;   // stdout
  std::string errors;   // stderr (the last 64 KiB)
  std::string brief() const;  // the last line of the output, or what happened
};

// Runs the program `rclone` names (rclone_program()) with ARGS as a child process in a process group of its
// own (a Ctrl-C at the terminal does not reach it), its output captured. *cancel becoming true (checked every
// 50 ms) or timeout_seconds > 0 passing kills it (SIGTERM, then SIGKILL after 2 s). Thread-safe; makes no MPI
// call. Unless already set in the environment, the child gets RCLONE_RETRIES=2, RCLONE_LOW_LEVEL_RETRIES=3,
// RCLONE_CONTIMEOUT=15s, RCLONE_TIMEOUT=60s (a store that is gone fails within a minute instead of rclone's
// default of many).
RcloneResult run_rclone(const std::string& rclone, const std::vector<std::string>& args,
                        const std::atomic<bool>* cancel = nullptr, double timeout_seconds = 0);

// checkpoint.durable as rclone names it: an absolute directory path as it is, `remote:path` as it is,
// `s3://bucket/path` as `s3:bucket/path` (the remote named "s3" of the rclone configuration). Throws
// std::invalid_argument saying what is allowed.
std::string durable_location(const std::string& value);
// LOCATION/NAME (no doubled '/', "remote:" + name without a '/').
std::string durable_join(const std::string& location, const std::string& name);

// Size and hashes of a file or object (rclone lsjson --stat --hash); "" on success, else the error. `rclone`:
// the program, as run_rclone's (so below).
struct ObjectInfo {
  std::int64_t size = -1;
  std::vector<std::pair<std::string, std::string>> hashes;  // (type, hex) as rclone lists them
};
std::string stat_object(const std::string& rclone, const std::string& path, ObjectInfo& info,
                        const std::atomic<bool>* cancel = nullptr);
// Copies `from` to `to` (rclone copyto --checksum) and confirms it: sizes equal and every hash both list
// equal. "" on success, else what failed.
std::string copy_confirmed(const std::string& rclone, const std::string& from, const std::string& to,
                           const std::atomic<bool>* cancel = nullptr);

// A set in the durable tier, as a resume lists it.
struct DurableSet {
  std::string set;        // "ckpt-<step>" or "final"
  std::int64_t step = -1;
  std::string index;      // PREFIX/<set>.levels
};
// The sets whose index is in `prefix` (rank 0 lists, every rank gets the list), newest step first; the step
// of "final" is read from its index. A prefix that does not exist yet: none. An unreachable store: none, with
// a warning on rank 0.
std::vector<DurableSet> list_durable_sets(const comm::Communicator& world, const std::string& rclone,
                                          const std::string& prefix);

// Downloads a durable set for reading (collective on nodes.world()): rank 0 fetches the index into
// `into`/<set>.levels and compares every node file's object size with the index (a half-uploaded object is
// refused); the node files are spread over the nodes of this run (node file k to node k mod nodes), each
// node's leader downloads its share into `into`. Returns the local path of the index, to be read with
// LevelSetReader(nodes, path, into). InputError on every rank naming the object and what is wrong.
std::string fetch_durable_set(const NodeGroups& nodes, const std::string& rclone, const std::string& prefix,
                              const DurableSet& set, const std::string& into);

// Where a set stands with the durable tier.
enum class DurableState {
  none,      // nothing to say (no flush ended; nothing to flush)
  flushing,  // a flush started
  durable,   // every node file and the index confirmed there
  skipped,   // not flushed: another flush was still running
  failed,    // a flush failed or did not end in time
};
struct DurableOutcome {
  DurableState state = DurableState::none;
  std::string why;  // skipped, failed
  bool ended() const { return state != DurableState::none; }
  // As the run report writes it (docs/report.md): "", "flushing", "durable", "skipped: <why>", "failed: <why>".
  std::string text() const;
};

// How a run flushes to the durable tier: from its deck (checkpoint.keep, checkpoint.durable_nice) and the
// rclone program of its environment.
struct DurableSettings {
  int keep = 2;        // sets kept there (older ones are deleted after a flush)
  int nice = 19;       // the uploads' nice value (lower_thread_priority)
  std::string rclone;  // the rclone program (run_rclone; "" is "rclone"): SPOTRUN_RCLONE, read by the launcher
};

// One background flush at a time, for one run (collective methods are called on every rank of nodes.world()).
class DurableFlush {
 public:
  // `prefix`: the run's location in the durable tier; `directory`: its node-local directory. The uploads make
  // no MPI call (poll() makes them, on the caller's thread), so no nice value stalls the loop's.
  DurableFlush(const NodeGroups& nodes, std::string prefix, std::string directory, DurableSettings settings);
  ~DurableFlush();  // cancels a flush in progress (its children killed) and joins the helper threads
  DurableFlush(const DurableFlush&) = delete;
  DurableFlush& operator=(const DurableFlush&) = delete;

  const std::string& prefix() const { return m_prefix; }
  const std::string& rclone() const { return m_rclone; }  // the program it runs (DurableSettings::rclone)
  // Collective: whether a flush is in progress on any rank.
  bool busy() const;
  // The set whose node files a flush in progress reads (keep them), or "".
  const std::string& flushing() const { return m_set; }
  // Collective; only when !busy(): starts flushing the committed set `index`.
  void start(const LevelIndex& index);
  // Every rank, between steps (no blocking call). Returns an event when a flush ended on rank 0:
  // {step, durable} or {step, failed: why}; {-1, none} otherwise.
  struct Event {
    std::int64_t step = -1;
    DurableOutcome outcome;
  };
  Event poll();
  // Collective: waits until the flush in progress ends or `seconds` (rank 0's value) pass; at the deadline
  // its uploads are killed (the flush fails). Returns the last event of rank 0 (step -1 when none ended).
  Event wait(double seconds);
  // Collective: kills a flush in progress and waits for it to end (a newer set is more important).
  void cancel();

 private:
  struct Job;
  void start_job(std::unique_ptr<Job> job);
  const NodeGroups& m_nodes;
  std::string m_prefix, m_directory;
  int m_keep = 2;
  int m_nice = 19;
  std::string m_rclone;
  MPI_Comm m_comm = MPI_COMM_NULL;  // a duplicate of the world: its allreduce never meets the run's collectives
  int m_phase = 0;                  // 0 idle, 1 node files uploading, 2 the index uploading (rank 0)
  std::string m_set;
  std::int64_t m_step = -1;
  std::string m_index_text;
  std::unique_ptr<Job> m_job;  // this rank's helper thread, if any
  bool m_posted = false;
  int m_send[1] = {1}, m_recv[1] = {1};
  MPI_Request m_request = MPI_REQUEST_NULL;
};

}  // namespace spotrun::io
