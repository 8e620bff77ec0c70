#pragma once
// When and where checkpoints are written, which one a run resumes from, and what they cost.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "launcher/run/checkpoint_levels.hpp"
#include "launcher/run/checkpoint_store.hpp"
#include "launcher/deck/deck.hpp"
#include "io/checkpoint.hpp"
#include "io/run_directory.hpp"
#include "solvers/solver.hpp"

namespace spotrun::launcher {

struct CheckpointSettings {
  std::int64_t every_steps = 0;
  double every_seconds = 900;
  bool auto_interval = false;
  double mtbf = 7200;
  int keep = 2;
  bool abort_on_error = false;
  double safety_factor = 2.0;
  std::string local_dir;  // multilevel checkpoints (checkpoint_levels.hpp): node-local directory, "" = off
  bool partner = false;
  std::string durable;           // the durable tier (io::durable_location), "" = off
  double durable_interval = 3600;  // s between durable flushes; 0 = every checkpoint
  double durable_wait = 120;       // s the run waits at its end for the last flush
  bool async = true;  // checkpoint.async: level sets written in the background (checkpoint_levels.hpp)
  int background_nice = 10;  // checkpoint.background_nice: of the background writer threads
  int durable_nice = 19;     // checkpoint.durable_nice: of the durable tier's uploads
  // The rclone program of the durable tier ("": "rclone"): not of the deck, SPOTRUN_RCLONE of the environment
  // (launcher/environment.hpp), set by the run.
  std::string rclone;
  static CheckpointSettings from_deck(const Deck& deck);
};


// Where a checkpoint of a run with levels is (status.json "levels", the run report): one line per event.
struct TierEvent {
  std::int64_t step = -1;
  std::string levels;   // "local", "local+partner" (written), or "" (a durable event only)
  io::DurableOutcome durable;  // none, or where the set stands with the durable tier
};

using CheckpointLevelsOutcome = CheckpointLevels::Outcome;

class CheckpointManager {
 public:
  CheckpointManager(const comm::Communicator& comm, const std::string& outdir, CheckpointSettings settings,
                    io::CheckpointMeta base);
  ~CheckpointManager();

  const std::string& directory() const { return m_dir; }
  // The checkpoint of a step, and the final state, as this run writes them: OUTDIR/checkpoints/ckpt-<step>.h5
  // and OUTDIR/final.h5, or with checkpoint.local_dir the index of the set, ckpt-<step>.levels and final.levels.
  std::string checkpoint_path(std::int64_t step) const;
  std::string final_path() const;
  // Checkpoints in OUTDIR/checkpoints and OUTDIR/final.h5 (and the index of each level set), newest step first (same list on every rank).
  std::vector<CheckpointFile> candidates() const;
  // A fresh start (--resume=never) in a directory holding an earlier run: moves its checkpoints,
  // final.h5 and thermo.csv into OUTDIR/previous-<UTC time>/ so that nothing is lost and a later resume
  // cannot pick a checkpoint of the earlier run. Returns that directory, or "" (collective).
  std::string archive_previous_run() const;
  // Removes *.tmp files left by a process killed while writing (root rank).
  void remove_stale_temporaries() const;

  bool due_by_steps(std::int64_t step) const {
    return m_settings.every_steps > 0 && step % m_settings.every_steps == 0;
  }
  // Wall-clock interval now in force (every_seconds, or Young/Daly once a cost is measured); 0 = none.
  double interval_seconds() const;
  bool due_by_time(double now) const {
    const double t = interval_seconds();
    return t > 0 && now - m_last_wall >= t;
  }
  // Seconds to keep in reserve before a time limit: safety factor times the (estimated) checkpoint cost.
  double reserve_seconds(double state_bytes) const;

  // Writes OUTDIR/checkpoints/ckpt-<step>.h5 (collective). Returns false if it failed and on_error is
  // "warn" (after warning; `last`: the run stops, no later attempt follows); throws RunError if it
  // failed and on_error is "abort". A state with a non-finite value is never written: RunError.
  // With checkpoint.async (level sets written in the background) and not `last`: takes a snapshot of the
  // state and returns true; the set is committed later (poll_tiers, wait_background), where a failure is
  // reported as above. A set still in flight is waited for first (one set in flight at a time).
  bool write(Solver& solver, double now, const char* reason, bool last = false);
  // Writes OUTDIR/final.h5 (collective); throws on failure (RunError for a non-finite state).
  void write_final(Solver& solver);
  // Collective: waits for the level set being written in the background, if any, and commits it (its
  // failure as write() reports it). Before any other HDF5 write (trajectory, fields), and before the stop
  // or final checkpoint: HDF5 is not thread-safe, and a stop keeps the set in flight.
  void wait_background(const char* why);
  bool in_flight() const { return m_levels && m_levels->in_flight(); }  // a set written in the background
  // The step of the newest checkpoint written by this run, or -1.
  std::int64_t last_step() const { return m_last_step; }
  const CheckpointSettings& settings() const { return m_settings; }

  // --- the durable tier (checkpoint.durable; docs/checkpoints.md) ---
  bool durable() const { return m_levels && !m_settings.durable.empty(); }
  // The kind of this run's checkpoints: a level set with checkpoint.local_dir, else one shared file.
  io::CheckpointKind kind() const { return m_store->kind(); }
  // Every rank, between steps (no blocking call): a background flush's progress. Returns (on rank 0) the
  // events since the last call: sets written, flushes started, skipped, confirmed or failed.
  std::vector<TierEvent> poll_tiers();
  // Collective: flushes the set written last to the durable tier now (a flush in progress of an older set is
  // cancelled) and waits at most `seconds` (rank 0's). Its outcome is among the next poll_tiers() events;
  // returns it (rank 0): durable, failed (why), or none when there is nothing to flush.
  io::DurableOutcome flush_durable_now(double seconds);
  // Collective: opens a candidate for reading, from its best surviving copy (CheckpointStore::open: a set of the
  // durable tier is downloaded into the nodes' local directories first). InputError when it is refused.
  std::unique_ptr<io::CheckpointSource> open(const CheckpointFile& candidate) { return m_store->open(candidate); }
  // status.json's "levels" object: the newest step at each level, as JSON text (rank 0), "" without levels.
  std::string levels_json() const;

  int written() const { return m_written; }
  int failed() const { return m_failed; }
  double total_seconds() const { return m_total_seconds; }
  double last_cost() const { return m_last_cost; }
  void mark_started(double now) {
    m_last_wall = now;
    m_last_durable_wall = now;
  }

 private:
  double write_file(Solver& solver, const std::string& path);
  std::int64_t m_last_step = -1;
  void apply_keep_policy() const;
  void apply_keep_policy_here(std::string& kept) const;  // root: the files; the names of the sets kept
  // The checkpoint in the background (checkpoint.async): started at step, for reason, when (the loop's clock).
  struct InFlight {
    std::string reason;
    double now = 0;
    double blocked = 0;  // s the loop was blocked for it (snapshot, and waiting for the set before)
  };
  InFlight m_in_flight;
  double start_background(Solver& solver, double now, const char* reason, const std::string& path);
  void finish_background(const CheckpointLevelsOutcome& outcome);
  void committed(std::int64_t step, const std::string& path, const char* reason, double now, double cost, bool last);
  // The solver's state in the memory of the last one written (Solver::state_reusing), checked finite.
  io::SolverState checked_state(Solver& solver, const std::string& path);
  io::SolverState m_spare;  // the state of the last checkpoint, once written: the next snapshot's memory
  std::string m_last_levels;  // the seconds of each level of the last checkpoint, for its line
  void start_durable_flush(double now);
  std::vector<TierEvent> m_events;
  double m_last_durable_wall = -1;
  std::int64_t m_local_step = -1, m_partner_step = -1, m_durable_step = -1, m_flushing_step = -1;
  std::int64_t m_durable_last_tried = -1;
  const comm::Communicator& m_comm;
  std::string m_outdir;
  std::string m_dir;
  CheckpointSettings m_settings;
  io::CheckpointMeta m_base;
  std::unique_ptr<CheckpointStore> m_store;  // the kind of this run's checkpoints, chosen once
  CheckpointLevels* m_levels = nullptr;       // the store's levels (checkpoint.local_dir): async writes, durable tier
  double m_last_wall = 0;
  double m_last_cost = -1;
  double m_total_seconds = 0;
  int m_written = 0;
  int m_failed = 0;
};

// Compares the physics lines of a checkpoint with the deck's; returns "" or a list of the changes.
std::string physics_changes(const std::string& checkpoint_physics, const std::string& deck_physics);

}  // namespace spotrun::launcher
