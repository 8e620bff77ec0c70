#include "checkpoint_levels.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>

#include "comm/device.hpp"
#include "comm/errors.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {

bool is_level_index(const std::string& path) {
  return path.size() > 7 && path.compare(path.size() - 7, 7, ".levels") == 0;
}

// The background writer of checkpoint.async: one thread per rank writes a set with communicators of its own
// (world_mpi, and the node communicator grouped from it), while the time loop agrees on its end with
// agree_mpi, which only the loop's thread uses.
struct CheckpointLevels::Writer {
  MPI_Comm world_mpi = MPI_COMM_NULL;
  MPI_Comm agree_mpi = MPI_COMM_NULL;
  std::unique_ptr<comm::Communicator> world;
  std::unique_ptr<io::NodeGroups> nodes;
  std::thread thread;
  std::atomic<bool> done{false};  // this rank's thread has ended; `outcome` and `index` are its results
  bool busy = false;              // a set in flight (the same on every rank)
  Outcome outcome;
  io::LevelIndex index;
  MPI_Request request = MPI_REQUEST_NULL;
  double send[2] = {0, 0}, recv[2] = {0, 0};  // {not done, seconds}, max over the ranks

  ~Writer() {
    if (thread.joinable()) thread.join();
    nodes.reset();
    world.reset();
    if (world_mpi != MPI_COMM_NULL) MPI_Comm_free(&world_mpi);
    // A pending agreement (an error path: the other ranks may never post theirs) is left to MPI_Finalize.
    if (request == MPI_REQUEST_NULL && agree_mpi != MPI_COMM_NULL) MPI_Comm_free(&agree_mpi);
  }
};

CheckpointLevels::CheckpointLevels(const comm::Communicator& comm, const std::string& outdir, const std::string& local_dir,
                                   bool partner, const std::string& durable, int keep, bool async)
    : m_comm(comm), m_nodes(group_nodes(comm)), m_directory(io::level_directory(local_dir, outdir)), m_partner(partner) {
  if (!durable.empty()) {
    m_durable_prefix = io::durable_join(durable, fs::path(m_directory).filename().string());
    m_durable = std::make_unique<io::DurableFlush>(*m_nodes, m_durable_prefix, m_directory, keep);
  }
  if (partner && m_nodes->count() < 2)
    throw InputError("checkpoint.partner = true needs at least 2 nodes (a node's partner copy goes to another node); "
                     "this run has 1 node (host " + m_nodes->host() + "). Allowed: checkpoint.partner = false on one "
                     "node, or ranks on 2 or more hosts");
  // Every node's leader makes the run's directory and its partner/ folder and writes a file there.
  std::string error;
  if (m_nodes->is_leader()) {
    std::error_code ec;
    fs::create_directories(fs::path(m_directory) / "partner", ec);
    if (ec) {
      error = "cannot create '" + (fs::path(m_directory) / "partner").string() + "': " + ec.message();
    } else {
      const std::string probe = m_directory + "/.spotrun-write-test";
      const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0 || ::write(fd, "x", 1) != 1 || ::fsync(fd) != 0)
        error = "cannot write in '" + m_directory + "': " + std::strerror(errno);
      if (fd >= 0) ::close(fd);
      ::unlink(probe.c_str());
    }
    if (!error.empty())
      error = "checkpoint.local_dir = \"" + local_dir + "\" on host " + m_nodes->host() + ": " + error +
              ". Allowed: a directory every node can create and write (node-local NVMe, /dev/shm, /tmp), the same "
              "path on every node";
  }
  comm.agree<InputError>(error.empty(), error);
  prune({});  // nothing is pruned but files left by interrupted writes
  if (async) {
    // The writer thread makes MPI calls while the loop makes its own: MPI_THREAD_MULTIPLE on every rank
    // (launcher/main.cpp asks for it when the deck has checkpoint.local_dir and checkpoint.async).
    int provided = MPI_THREAD_SINGLE, lowest = MPI_THREAD_SINGLE;
    SPOTRUN_MPI_CHECK(MPI_Query_thread(&provided));
    SPOTRUN_MPI_CHECK(MPI_Allreduce(&provided, &lowest, 1, MPI_INT, MPI_MIN, comm.mpi()));
    if (lowest >= MPI_THREAD_MULTIPLE) {
      m_writer = std::make_unique<Writer>();
      SPOTRUN_MPI_CHECK(MPI_Comm_dup(comm.mpi(), &m_writer->world_mpi));
      SPOTRUN_MPI_CHECK(MPI_Comm_dup(comm.mpi(), &m_writer->agree_mpi));
      m_writer->world = std::make_unique<comm::Communicator>(m_writer->world_mpi);
      m_writer->nodes = group_nodes(*m_writer->world);
    } else if (comm.is_root()) {
      const char* level = lowest == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                          : lowest == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED" : "MPI_THREAD_SINGLE";
      std::printf("checkpoint.async = true: MPI provides %s, not the MPI_THREAD_MULTIPLE a background write needs; "
                  "checkpoints are written synchronously (the time loop waits for each)\n", level);
      std::fflush(stdout);
    }
  }
}

CheckpointLevels::~CheckpointLevels() = default;

io::LevelWriteTimes CheckpointLevels::write(const io::CheckpointMeta& meta, io::SolverState state, const std::string& set,
                                            const std::string& index_path) {
  io::LevelWriteTimes times;
  const io::LevelIndex index = io::write_level_set(*m_nodes, m_directory, set, m_partner, meta, std::move(state), &times);
  io::commit_level_index(m_comm, index_path, index);
  m_last_index = index;
  return times;
}

void CheckpointLevels::start(const io::CheckpointMeta& meta, io::SolverState state, const std::string& set,
                             const std::string& index_path) {
  Writer& w = *m_writer;
  if (w.busy) throw std::logic_error("internal: a checkpoint set is started while " + w.outcome.set + " is in flight");
  w.done.store(false);
  w.outcome = Outcome{set, index_path, meta.step, "", {}, 0};
  // The thread takes no signal (a stop signal is the loop's, launcher/stop.hpp; its writes see no EINTR).
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  struct Restore {
    sigset_t* mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, mask, nullptr); }
  } restore{&before};
  w.thread = std::thread([&w, directory = m_directory, partner = m_partner, meta, state = std::move(state)]() mutable {
    const double t0 = MPI_Wtime();
    try {
      // Both agree on every failure among the threads of every rank: the outcome is the same everywhere.
      w.index = io::write_level_set(*w.nodes, directory, w.outcome.set, partner, meta, std::move(state), &w.outcome.times);
      io::commit_level_index(*w.world, w.outcome.index_path, w.index);
    } catch (const std::exception& e) {
      w.outcome.error = e.what();
    }
    w.outcome.seconds = MPI_Wtime() - t0;
    w.done.store(true, std::memory_order_release);
  });
  w.busy = true;
}

bool CheckpointLevels::in_flight() const { return m_writer && m_writer->busy; }

std::optional<CheckpointLevels::Outcome> CheckpointLevels::poll() {
  if (!in_flight()) return std::nullopt;
  Writer& w = *m_writer;
  if (w.request != MPI_REQUEST_NULL) {
    // Posted by every rank at the previous call: complete (or nearly) by now; every rank sees the same result.
    SPOTRUN_MPI_CHECK(MPI_Wait(&w.request, MPI_STATUS_IGNORE));
    if (w.recv[0] == 0) {
      w.thread.join();
      w.busy = false;
      w.outcome.seconds = w.recv[1];
      if (w.outcome.error.empty()) m_last_index = w.index;
      return w.outcome;
    }
  }
  const bool done = w.done.load(std::memory_order_acquire);
  w.send[0] = done ? 0 : 1;
  w.send[1] = done ? w.outcome.seconds : 0;
  SPOTRUN_MPI_CHECK(MPI_Iallreduce(w.send, w.recv, 2, MPI_DOUBLE, MPI_MAX, w.agree_mpi, &w.request));
  return std::nullopt;
}

std::optional<CheckpointLevels::Outcome> CheckpointLevels::wait() {
  if (!in_flight()) return std::nullopt;
  Writer& w = *m_writer;
  if (w.request != MPI_REQUEST_NULL) SPOTRUN_MPI_CHECK(MPI_Wait(&w.request, MPI_STATUS_IGNORE));
  w.thread.join();  // every rank's thread ends: their collectives are among themselves
  double seconds = w.outcome.seconds;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, w.agree_mpi));
  w.busy = false;
  w.outcome.seconds = seconds;
  if (w.outcome.error.empty()) m_last_index = w.index;
  return w.outcome;
}

void CheckpointLevels::prune(const std::vector<std::string>& kept) const {
  if (m_nodes->is_leader()) {
    const std::set<std::string> keep(kept.begin(), kept.end());
    std::error_code ec;
    for (const fs::path& dir : {fs::path(m_directory), fs::path(m_directory) / "partner"}) {
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        const bool tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
        // Node files are <set>.<host>.h5, sets "ckpt-<step>" or "final".
        const auto dot = name.find('.');
        const bool node_file = name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0 && dot != std::string::npos &&
                               (name.rfind("ckpt-", 0) == 0 || name.rfind("final.", 0) == 0);
        const bool upload = name.size() > 14 && name.compare(name.size() - 14, 14, ".levels.upload") == 0;
        if (tmp || (node_file && !kept.empty() && !keep.count(name.substr(0, dot))) || (upload && kept.empty())) {
          if (tmp) std::printf("Removing incomplete node file %s (left by an interrupted write)\n", e.path().c_str());
          fs::remove(e.path(), ec);
        }
      }
    }
    // A durable set downloaded for a resume is not needed once the run wrote a set of its own.
    if (!kept.empty()) fs::remove_all(fs::path(m_directory) / "durable", ec);
  }
  m_comm.barrier();
}

}  // namespace spotrun::launcher
