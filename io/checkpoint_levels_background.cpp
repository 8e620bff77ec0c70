// A level set written in the background (io/checkpoint_levels.hpp, LevelSetWriter; docs/checkpoints.md,
// "Writing in the background").
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>
#include <utility>

#include "checkpoint_levels.hpp"
#include "comm/errors.hpp"
#include "impl/checkpoint_levels_impl.hpp"

namespace spotrun::io {

using namespace impl;

struct LevelSetWriter::Impl {
  MPI_Comm world_mpi = MPI_COMM_NULL;  // the thread's
  MPI_Comm agree_mpi = MPI_COMM_NULL;  // the caller's agreement that every thread has ended
  std::unique_ptr<comm::Communicator> world;
  std::unique_ptr<NodeGroups> nodes;
  std::thread thread;
  std::atomic<bool> done{false};  // this rank's thread has ended: `outcome` and `written` are its results
  bool busy = false;              // a set in flight (the same on every rank)
  Outcome outcome;
  LevelIndex written, committed;
  SolverState state;  // the set's, the thread's while it runs; then the caller's again (take_spent)
  int nice = 10;  // the thread's (lower_thread_priority)
  MPI_Request request = MPI_REQUEST_NULL;
  double send[3] = {0, 0, 0}, recv[3] = {0, 0, 0};  // {not ended, seconds, cost}, the max over the ranks

  Outcome finish(double seconds, double cost) {
    if (thread.joinable()) thread.join();
    busy = false;
    outcome.seconds = seconds;
    outcome.cost = cost;
    if (outcome.error.empty()) committed = written;
    return outcome;
  }
};

LevelSetWriter::LevelSetWriter(const comm::Communicator& world, const std::string& host, int nice)
    : m_impl(std::make_unique<Impl>()) {
  m_impl->nice = nice;
  SPOTRUN_MPI_CHECK(MPI_Comm_dup(world.mpi(), &m_impl->world_mpi));
  SPOTRUN_MPI_CHECK(MPI_Comm_dup(world.mpi(), &m_impl->agree_mpi));
  m_impl->world = std::make_unique<comm::Communicator>(m_impl->world_mpi);
  m_impl->nodes = std::make_unique<NodeGroups>(*m_impl->world, host);
}

LevelSetWriter::~LevelSetWriter() {
  Impl& w = *m_impl;
  if (w.thread.joinable()) w.thread.join();
  w.nodes.reset();
  w.world.reset();
  if (w.world_mpi != MPI_COMM_NULL) MPI_Comm_free(&w.world_mpi);
  // A pending agreement (an error path: the other ranks may never post theirs) is left to MPI_Finalize.
  if (w.request == MPI_REQUEST_NULL && w.agree_mpi != MPI_COMM_NULL) MPI_Comm_free(&w.agree_mpi);
}

void LevelSetWriter::start(const std::string& directory, bool partner, const std::string& set,
                           const std::string& index_path, const CheckpointMeta& meta, SolverState state) {
  Impl& w = *m_impl;
  if (w.busy) throw std::logic_error("internal: checkpoint set " + set + " started while " + w.outcome.set + " is in flight");
  w.done.store(false);
  w.outcome = Outcome{set, index_path, meta.step, "", {}, 0};
  // The thread takes no signal (a stop signal is the caller's; the thread's writes see no EINTR).
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  struct Restore {
    sigset_t* mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, mask, nullptr); }
  } restore{&before};
  w.state = std::move(state);
  w.thread = std::thread([&w, directory, partner, meta]() {
    // Below the loop (nice 10 by default), so that where the rank's cores are shared (mpirun and srun bind a
    // rank to its cores) the loop goes first and the background write takes the idle time. Not at 19: the
    // loop's halo exchange then waited on the writer's MPI calls (the same progress engine and locks), which
    // got a CPU 1.5 % of the time (MD at 2M atoms on 2 ranks: Comm 12-14 s against 2-3 s at 10).
    lower_thread_priority(w.nice);
    const double delay0 = run_delay_seconds();
    const double t0 = MPI_Wtime();
    try {
      // Both agree on every failure among the threads of every rank: the outcome is the same everywhere.
      w.written = write_level_set(*w.nodes, directory, w.outcome.set, partner, meta, w.state, &w.outcome.times);
      commit_level_index(*w.world, w.outcome.index_path, w.written);
    } catch (const std::exception& e) {
      w.outcome.error = e.what();
    }
    w.outcome.seconds = MPI_Wtime() - t0;
    const double delay1 = run_delay_seconds();
    w.outcome.cost = delay0 >= 0 && delay1 >= delay0 ? std::max(0.0, w.outcome.seconds - (delay1 - delay0)) : w.outcome.seconds;
    w.done.store(true, std::memory_order_release);
  });
  w.busy = true;
}

bool LevelSetWriter::in_flight() const { return m_impl->busy; }

SolverState LevelSetWriter::take_spent() {
  Impl& w = *m_impl;
  if (w.busy) throw std::logic_error("internal: the state of checkpoint set " + w.outcome.set + " taken while it is written");
  return std::exchange(w.state, SolverState{});
}

const LevelIndex& LevelSetWriter::index() const { return m_impl->committed; }

std::optional<LevelSetWriter::Outcome> LevelSetWriter::poll() {
  Impl& w = *m_impl;
  if (!w.busy) return std::nullopt;
  if (w.request != MPI_REQUEST_NULL) {
    // Posted by every rank at the previous call: complete, or nearly, by now; every rank sees the same result.
    SPOTRUN_MPI_CHECK(MPI_Wait(&w.request, MPI_STATUS_IGNORE));
    if (w.recv[0] == 0) return w.finish(w.recv[1], w.recv[2]);
  }
  const bool ended = w.done.load(std::memory_order_acquire);
  w.send[0] = ended ? 0 : 1;
  w.send[1] = ended ? w.outcome.seconds : 0;
  w.send[2] = ended ? w.outcome.cost : 0;
  SPOTRUN_MPI_CHECK(MPI_Iallreduce(w.send, w.recv, 3, MPI_DOUBLE, MPI_MAX, w.agree_mpi, &w.request));
  return std::nullopt;
}

std::optional<LevelSetWriter::Outcome> LevelSetWriter::wait() {
  Impl& w = *m_impl;
  if (!w.busy) return std::nullopt;
  if (w.request != MPI_REQUEST_NULL) SPOTRUN_MPI_CHECK(MPI_Wait(&w.request, MPI_STATUS_IGNORE));
  w.thread.join();  // every rank's thread ends: their collectives are among themselves
  double times[2] = {w.outcome.seconds, w.outcome.cost};
  SPOTRUN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, times, 2, MPI_DOUBLE, MPI_MAX, w.agree_mpi));
  return w.finish(times[0], times[1]);
}

}  // namespace spotrun::io
