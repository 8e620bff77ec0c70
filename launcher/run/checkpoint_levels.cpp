#include "launcher/run/checkpoint_levels.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "comm/device.hpp"
#include "comm/errors.hpp"
#include "io/run_directory.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {

CheckpointLevels::CheckpointLevels(const comm::Communicator& comm, const std::string& outdir, const std::string& local_dir,
                                   bool partner, const std::string& durable, io::DurableSettings tier, bool async,
                                   int nice)
    : m_comm(comm), m_nodes(group_nodes(comm)), m_directory(io::level_directory(local_dir, outdir)), m_partner(partner) {
  if (!durable.empty()) {
    m_durable_prefix = io::durable_join(durable, fs::path(m_directory).filename().string());
    m_durable = std::make_unique<io::DurableFlush>(*m_nodes, m_durable_prefix, m_directory, std::move(tier));
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
      m_writer = std::make_unique<io::LevelSetWriter>(comm, comm::host_name(), nice);
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

io::LevelWriteTimes CheckpointLevels::write(const io::CheckpointMeta& meta, io::SolverState& state, const std::string& set,
                                            const std::string& index_path) {
  io::LevelWriteTimes times;
  const io::LevelIndex index = io::write_level_set(*m_nodes, m_directory, set, m_partner, meta, state, &times);
  io::commit_level_index(m_comm, index_path, index);
  m_last_index = index;
  return times;
}

void CheckpointLevels::start(const io::CheckpointMeta& meta, io::SolverState state, const std::string& set,
                             const std::string& index_path) {
  m_writer->start(m_directory, m_partner, set, index_path, meta, std::move(state));
}

io::SolverState CheckpointLevels::take_spent() { return m_writer ? m_writer->take_spent() : io::SolverState{}; }

bool CheckpointLevels::in_flight() const { return m_writer && m_writer->in_flight(); }

std::optional<CheckpointLevels::Outcome> CheckpointLevels::poll() {
  if (!in_flight()) return std::nullopt;
  auto outcome = m_writer->poll();
  if (outcome && outcome->error.empty()) m_last_index = m_writer->index();
  return outcome;
}

std::optional<CheckpointLevels::Outcome> CheckpointLevels::wait() {
  if (!in_flight()) return std::nullopt;
  auto outcome = m_writer->wait();
  if (outcome && outcome->error.empty()) m_last_index = m_writer->index();
  return outcome;
}

void CheckpointLevels::prune(const std::vector<std::string>& kept) const {
  if (m_nodes->is_leader()) {
    const std::set<std::string> keep(kept.begin(), kept.end());
    std::error_code ec;
    for (const fs::path& dir : {fs::path(m_directory), fs::path(m_directory) / "partner"}) {
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        const bool tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
        // Node files are <set>.<host>.h5, sets "ckpt-<step>" or "final" (io/run_directory.hpp).
        const auto set = io::node_file_set(name);
        const bool node_file = set.has_value();
        const bool upload = name.size() > 14 && name.compare(name.size() - 14, 14, ".levels.upload") == 0;
        if (tmp || (node_file && !kept.empty() && !keep.count(*set)) || (upload && kept.empty())) {
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
