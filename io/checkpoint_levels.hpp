#pragma once
// Multilevel checkpoints, for runs whose nodes share no file system (docs/checkpoints.md, "Levels"):
//
//   local   -- every node writes the rows of its ranks into one file in a node-local directory, with
//              parallel HDF5 over a communicator of the node's ranks. The file is a spotrun checkpoint like
//              any other (manifest, checksums; `spotrun inspect` reads it) whose /meta/level says which rows
//              of the run it holds.
//   partner -- then the leader of node k sends its file over MPI to the leader of node k+1 (mod the node
//              count), which keeps it as a partner copy: losing one node, or any nodes no two of which are
//              neighbours, keeps a copy of every node file.
//
// A set of node files is committed by its index, OUTDIR/checkpoints/<set>.levels, which rank 0 writes last:
// every node file with its host, size and the hash of its manifest (so a copy is accepted only if it holds
// exactly the bytes that were written: a stale file of another run or a damaged copy is refused). A reader
// looks for each node file in the local directory of every node of the run it reads on (own copies and
// partner copies), verifies each copy against its manifest and the index, and assembles the rows, on any
// number of ranks. The durable tier (a shared directory or an object store, checkpoint_durable.hpp) is one
// more place a copy lives: a resume downloads a durable set into each node's local directory and reads it here.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "comm/communicator.hpp"
#include "solver_state.hpp"

namespace spotrun::io {

// The ranks of a run grouped into nodes by host name (each rank passes its own; spotrun passes
// comm::host_name(), MPI_Get_processor_name). Nodes are numbered in the order of their host names.
class NodeGroups {
 public:
  NodeGroups(const comm::Communicator& world, const std::string& host);  // collective
  ~NodeGroups();
  NodeGroups(const NodeGroups&) = delete;
  NodeGroups& operator=(const NodeGroups&) = delete;

  const comm::Communicator& world() const { return m_world; }
  const comm::Communicator& node() const { return *m_node; }  // the ranks of this node
  int index() const { return m_index; }
  int count() const { return static_cast<int>(m_hosts.size()); }
  const std::string& host() const { return m_hosts[m_index]; }
  const std::vector<std::string>& hosts() const { return m_hosts; }
  int leader(int node) const { return m_leaders[node]; }  // the lowest world rank of a node
  bool is_leader() const { return m_node->is_root(); }

 private:
  const comm::Communicator& m_world;
  MPI_Comm m_mpi = MPI_COMM_NULL;
  std::unique_ptr<comm::Communicator> m_node;
  int m_index = 0;
  std::vector<std::string> m_hosts;
  std::vector<int> m_leaders;
};

// The directory of a run's node files in a node's checkpoint.local_dir: LOCAL_DIR/spotrun-<output directory
// name>-<hash of its absolute path>, so that runs into other output directories never share one.
std::string level_directory(const std::string& local_dir, const std::string& outdir);

// A host name as it appears in a file name: [A-Za-z0-9._-], anything else '_'.
std::string host_file_part(const std::string& host);

// One node file of a set, as the index records it.
struct LevelFile {
  std::string host;          // the node that wrote it
  std::string file;          // its name, in DIRECTORY (own copy) and DIRECTORY/partner (partner copy)
  std::uint64_t size = 0;    // bytes
  std::string manifest_id;   // XXH3-64 of its manifest text, 16 hex digits
  std::string partner_host;  // the node that holds its partner copy; "" without one
};

// The commit record of a set: OUTDIR/checkpoints/<set>.levels (text, docs/checkpoint-format.md).
struct LevelIndex {
  std::string set;           // "ckpt-<step>" or "final"
  std::int64_t step = 0;
  std::string solver;
  std::string directory;     // the run's directory in each node's checkpoint.local_dir
  bool partner = false;
  std::vector<LevelFile> nodes;  // in node order

  std::string encode() const;
  static LevelIndex decode(const std::string& text);  // throws std::runtime_error saying what is wrong
};

struct LevelWriteTimes {
  double local = 0;    // seconds, slowest rank
  double partner = 0;
};

// Writes the node files of `set` into DIRECTORY on every node (collective on nodes.world()), then, with
// `partner`, their partner copies; every failure is agreed by all ranks (std::runtime_error on every rank,
// the files of the failed set removed where they were being written). Returns the set's index (not yet
// committed: commit_level_index). partner needs at least two nodes. `state` is this rank's block; its rows are
// renumbered to the node file's (first_row, global_rows), its values left as they are (the caller may reuse its
// memory: Solver::state_reusing).
LevelIndex write_level_set(const NodeGroups& nodes, const std::string& directory, const std::string& set, bool partner,
                           const CheckpointMeta& meta, SolverState& state, LevelWriteTimes* times = nullptr);

// Rank 0 writes the index atomically (NAME.tmp, fsync, rename, fsync of the directory); agreed.
void commit_level_index(const comm::Communicator& world, const std::string& path, const LevelIndex& index);

// Raises the calling thread's nice value to `nice` (0-19; never lowers it): Linux keeps a nice value per
// thread, and the processes a thread starts inherit it. A level set's writer thread runs at
// checkpoint.background_nice (10 by default), the durable flush's uploads at checkpoint.durable_nice (19): where a
// rank's cores are shared the time loop goes first (Linux CFS weights 110 against 1024 at 10, 15 at 19).
void lower_thread_priority(int nice);

// A level set written in the background (checkpoint.async; docs/checkpoints.md, "Writing in the background"):
// one thread per rank runs write_level_set and commit_level_index with communicators of its own (duplicates of
// the caller's, the node communicator grouped from them), while the caller's thread goes on with its own MPI
// calls (so MPI must provide MPI_THREAD_MULTIPLE) and makes no HDF5 call (HDF5 is not thread-safe). The
// thread blocks every signal and runs at nice value `nice` (lower_thread_priority): at 10, where it shares a
// core with the time loop it takes about 10 % of that core while the loop is runnable, and the whole core
// while the loop waits. Not lower: its MPI calls share Open MPI's progress engine and locks with the loop's,
// and at 19 the loop's halo exchange waited on a writer waiting for a CPU (the steps were 27 % slower).
class LevelSetWriter {
 public:
  // Collective on world; host: this rank's node, as NodeGroups takes it.
  LevelSetWriter(const comm::Communicator& world, const std::string& host, int nice = 10);
  ~LevelSetWriter();  // waits for this rank's thread
  LevelSetWriter(const LevelSetWriter&) = delete;
  LevelSetWriter& operator=(const LevelSetWriter&) = delete;

  // The outcome of a set: the same on every rank (the threads agree on every failure).
  struct Outcome {
    std::string set, index_path;
    std::int64_t step = -1;
    std::string error;  // "" = committed
    LevelWriteTimes times;
    double seconds = 0;  // from the start of the write to the commit of its index, slowest rank
    // `seconds` less the time the thread was ready to run but waited for a CPU (the loop went first: Linux
    // /proc/thread-self/schedstat), slowest rank: what the write takes with a CPU of its own, as it does at a
    // stop (the loop waits for it). `seconds` where the kernel does not say.
    double cost = 0;
  };
  // Every rank: starts writing `set` of `state` into `directory` (with partner copies), its index committed at
  // index_path last, and returns. Nothing may be in flight.
  void start(const std::string& directory, bool partner, const std::string& set, const std::string& index_path,
             const CheckpointMeta& meta, SolverState state);
  bool in_flight() const;  // the same on every rank
  // The state of the set written last, once it is no longer in flight (its memory for the next snapshot).
  SolverState take_spent();
  // Every rank, once between two steps, in the same order: the outcome once every rank's thread has ended,
  // learnt without a blocking call (an agreement posted at one call, completed at the next).
  std::optional<Outcome> poll();
  // Collective: waits for the set in flight; its outcome, none when nothing is in flight.
  std::optional<Outcome> wait();
  // The index of the set committed last.
  const LevelIndex& index() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Reads an index (rank 0 reads, every rank parses); InputError naming the file on every rank.
LevelIndex read_level_index(const comm::Communicator& world, const std::string& path);

// A committed set opened for reading (collective on nodes.world(), any number of ranks and nodes). The
// constructor finds every copy of every node file on the nodes of this run, verifies each against its
// manifest and the index, and opens one verified copy of each node file on the node that holds it. A set
// of which some node file has no sound copy throws InputError naming the node files and why each copy is
// missing or refused.
class LevelSetReader : public CheckpointSource {
 public:
  // durable_dir: where fetch_durable_set (checkpoint_durable.hpp) put the node files of a durable set on each
  // node, looked at after the own and partner copies; "" = none.
  LevelSetReader(const NodeGroups& nodes, const std::string& index_path, const std::string& durable_dir = "");
  ~LevelSetReader() override;
  LevelSetReader(const LevelSetReader&) = delete;
  LevelSetReader& operator=(const LevelSetReader&) = delete;

  const CheckpointMeta& meta() const override;  // of the set (level "": the whole state)
  const std::string& path() const override;     // the index
  std::uint64_t bytes() const override;         // of all node files
  // One line per node file: which copy is read, on which node.
  const std::vector<std::string>& sources() const override;
  // One line per copy refused (damaged, truncated, stale) where another copy of its node file is read.
  const std::vector<std::string>& skipped() const override;
  // As CheckpointReader::read: every rank its block_of() rows of every expected array (collective).
  SolverState read(const std::vector<StateArray>& expected) override;
  // Every dataset and checksum of every node file read (as CheckpointReader::verify), lines prefixed by
  // the node file's name.
  VerifyReport verify() override;

  struct Impl;  // its parts' functions share it (checkpoint_levels_read.cpp)

 private:
  std::unique_ptr<Impl> m_impl;
};

}  // namespace spotrun::io
