#pragma once
// The launcher's side of multilevel checkpoints (checkpoint.local_dir, checkpoint.partner; docs/checkpoints.md,
// "Checkpoints without a shared file system"): the run's nodes, the checks of the settings against them, the
// node-local directory of the run on each node, writing a set and committing its index in OUTDIR, pruning the
// node files of sets no longer kept.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/checkpoint_durable.hpp"
#include "io/checkpoint_levels.hpp"
#include "launcher/run/node_groups.hpp"

namespace spotrun::launcher {

class CheckpointLevels {
 public:
  // Collective. Groups the ranks into nodes by host name, checks that checkpoint.partner has a partner
  // node, creates the run's directory in local_dir on every node and checks that it can be written; an
  // InputError (exit 2 on every rank) names the key, its value, the host and what is allowed.
  // `durable`: checkpoint.durable as rclone names it (io::durable_location), "" = no durable tier; `tier`: how
  // it is flushed (the sets kept there, the uploads' nice value, the rclone program); `nice`: the nice value of
  // the background writer (checkpoint.background_nice).
  CheckpointLevels(const comm::Communicator& comm, const std::string& outdir, const std::string& local_dir, bool partner,
                   const std::string& durable = "", io::DurableSettings tier = {}, bool async = false, int nice = 10);
  ~CheckpointLevels();

  const io::NodeGroups& nodes() const { return *m_nodes; }
  const std::string& directory() const { return m_directory; }
  bool partner() const { return m_partner; }
  // Writes the node files of `set` (and their partner copies), then commits the index at index_path
  // (collective; std::runtime_error on every rank when it fails). Returns the seconds of both levels. `state`
  // stays the caller's (its rows renumbered, io::write_level_set).
  io::LevelWriteTimes write(const io::CheckpointMeta& meta, io::SolverState& state, const std::string& set,
                            const std::string& index_path);
  // Removes the node files (own and partner copies) of sets other than `kept`, and files left by an
  // interrupted write (*.tmp), on every node (collective).
  void prune(const std::vector<std::string>& kept) const;
  // The index of the set written last (write(), or committed in the background), for a durable flush.
  const io::LevelIndex& last_index() const { return m_last_index; }

  // --- checkpoint.async: a set written in the background (docs/checkpoints.md, "Writing in the background") ---
  // Whether sets are written by a background thread: checkpoint.async and an MPI of MPI_THREAD_MULTIPLE (the
  // same answer on every rank): io::LevelSetWriter.
  bool background() const { return m_writer != nullptr; }
  using Outcome = io::LevelSetWriter::Outcome;
  // Every rank: starts writing `set` from a snapshot of the state and returns. Nothing may be in flight.
  void start(const io::CheckpointMeta& meta, io::SolverState state, const std::string& set, const std::string& index_path);
  bool in_flight() const;  // the same on every rank
  // Every rank, once between two steps, with no blocking call: the outcome of the set in flight once every rank
  // saw its write end (a non-blocking agreement started at one call and completed at the next).
  std::optional<Outcome> poll();
  // Collective: waits for the set in flight and returns its outcome; none when nothing is in flight.
  std::optional<Outcome> wait();
  // The state of the set written last in the background, once it is no longer in flight (for the next snapshot).
  io::SolverState take_spent();

  // --- the durable tier (checkpoint.durable) ---
  // The run's prefix there (DURABLE/<the name of directory()>), or "" without one.
  const std::string& durable_prefix() const { return m_durable_prefix; }
  io::DurableFlush* durable() { return m_durable.get(); }
  // Where a resume downloads a durable set on each node: directory()/durable.
  std::string download_directory() const { return m_directory + "/durable"; }

 private:
  const comm::Communicator& m_comm;
  std::unique_ptr<io::NodeGroups> m_nodes;
  std::string m_directory;
  bool m_partner = false;
  io::LevelIndex m_last_index;
  std::string m_durable_prefix;
  std::unique_ptr<io::DurableFlush> m_durable;
  std::unique_ptr<io::LevelSetWriter> m_writer;  // checkpoint.async
};

// group_nodes(comm) (launcher/run/node_groups.hpp): the run's nodes grouped by host name, for reading level
// sets where no CheckpointLevels exists (a resume, inspect, export).

// Which kind a checkpoint's path names, and opening it for reading: io/checkpoint_store.hpp.

}  // namespace spotrun::launcher
