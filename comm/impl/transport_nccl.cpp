// The NCCL transport (transport_nccl.hpp, docs/comm.md "The NCCL transport"). Host-API code only: it
// compiles with the host compiler, also on a CPU build, where the factory refuses it ("needs a CUDA
// build"). Every CUDA and NCCL call is checked.
//
// Failures, and how one rank's failure reaches the others:
//  - The communicator is non-blocking (ncclConfig_t::blocking = 0): no NCCL call waits for a peer inside
//    NCCL. A call that returns ncclInProgress is polled with ncclCommGetAsyncError until it completes,
//    fails or times out (settle()); on failure or timeout the communicator is aborted (ncclCommAbort) and
//    std::runtime_error is thrown, naming the call and NCCL's reason. main() answers that error, which
//    one rank alone may have hit, with MPI_Abort: the job ends on every rank, none waits for it.
//  - Set-up is collective-safe: every rank reports its outcome of cudaSetDevice, ncclGetUniqueId and
//    ncclCommInitRankConfig over MPI (agreed_failure), and every rank throws the same RunError when any
//    failed (a rank whose own set-up succeeded aborts its communicator first).
//  - exchange() returns once NCCL has queued the group on the stream; the kernels may still wait for a
//    peer. fence() (and the next exchange()) polls what is outstanding: completed (a CUDA event recorded
//    after each group), an asynchronous NCCL error, or no progress within the timeout -> abort, throw.
//  - A rank can also be stuck outside this transport, in a Kokkos fence behind an NCCL kernel whose peer
//    is gone. A watchdog thread checks every 100 ms, while the main thread is not inside a call of this
//    transport, for an asynchronous NCCL error or an exchange outstanding longer than the timeout; it
//    then prints the cause, aborts the communicator and ends the process with _exit(1) (the last resort:
//    the main thread cannot be reached, and under MPI_THREAD_FUNNELED this thread may not call MPI; the
//    launcher ends the other ranks of a job whose rank exited without MPI_Finalize).
//  - Destruction completes what is outstanding and finalizes the communicator (ncclCommFinalize, polled,
//    then ncclCommDestroy); while an exception unwinds, or after a failure, it aborts it instead.
#if !defined(SPOTRUN_HAVE_NCCL)
#error "transport_nccl.cpp needs NCCL: comm/CMakeLists.txt compiles it only when SPOTRUN_HAVE_NCCL is on"
#endif

#include "transport_nccl.hpp"

#include <cuda_runtime_api.h>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../agreed_step.hpp"
#include "../cuda_check.hpp"
#include "../errors.hpp"
#include "../nccl_api.hpp"
#include "transport_mpi.hpp"

namespace spotrun::comm::impl {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class TransportNccl final : public Transport {
 public:
  TransportNccl(const Communicator& comm, int device, bool route_self, double timeout_s);
  ~TransportNccl() override;
  TransportNccl(const TransportNccl&) = delete;
  TransportNccl& operator=(const TransportNccl&) = delete;

  std::string name() const override { return "nccl"; }
  std::string description() const override {
    return with_choice("NCCL " + m_version + ", one GPU per rank, on the solver's CUDA stream (host batches over MPI)");
  }
  // Device batches through NCCL; host batches (checkpoint records) through MPI on host buffers.
  Accepts accepts() const override { return Accepts::either; }
  bool stream_ordered() const override { return true; }
  bool route_self() const override { return m_route_self; }
  void exchange(const Batch& batch, void* stream) override;
  void fence() override;
  void abort() noexcept override {
    std::lock_guard<std::mutex> lock(m_mutex);
    abort_communicator();
  }

 private:
  struct Pending {
    cudaEvent_t event;
    Clock::time_point posted;
  };

  // Waits, polling, until the NCCL call that returned r has completed; fail() on an error or a timeout.
  void settle(ncclResult_t r, const char* call);
  // Aborts the communicator and throws std::runtime_error naming this rank and the cause.
  [[noreturn]] void fail(const std::string& cause);
  void abort_communicator();
  // Recycles the events of the exchanges that have completed, oldest first; returns a failure of a
  // CUDA event query or an asynchronous NCCL error, else "" (no throw: the watchdog uses it too).
  std::string retire_completed();
  // The oldest exchange outstanding longer than the timeout, described, or "".
  std::string overdue() const;
  // Waits for every outstanding exchange (main thread, holding m_mutex).
  void wait_outstanding();
  void watch();

  const Communicator& m_comm;
  const int m_device;
  const bool m_route_self;
  const double m_timeout_s;
  const int m_uncaught = std::uncaught_exceptions();
  const std::string m_version = nccl_library().version;
  TransportMpi m_host;
  ncclComm_t m_nccl = nullptr;
  std::string m_failure;  // set once the communicator has been aborted
  std::vector<Pending> m_pending;
  std::vector<cudaEvent_t> m_spare_events;
  // Held by the main thread during each call into NCCL here, and by the watchdog during its checks: the
  // two never call NCCL on the communicator at the same time.
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  std::thread m_watchdog;
};

TransportNccl::TransportNccl(const Communicator& comm, int device, bool route_self, double timeout_s)
    : m_comm(comm), m_device(device), m_route_self(route_self), m_timeout_s(timeout_s), m_host(comm, Accepts::host, route_self) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  std::string failure = agreed_failure(comm, [&] {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    if (comm.is_root()) {
      const ncclResult_t r = nccl_api().GetUniqueId(&id);
      if (r != ncclSuccess) throw std::runtime_error("ncclGetUniqueId failed: " + nccl_reason(r, nullptr));
    }
  });
  if (!failure.empty()) throw RunError("NCCL set-up: " + failure);
  const std::string bytes = comm.broadcast(std::string(reinterpret_cast<const char*>(&id), sizeof id));
  std::memcpy(&id, bytes.data(), sizeof id);
  failure = agreed_failure(comm, [&] {
    std::lock_guard<std::mutex> lock(m_mutex);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every call returns; settle() polls it with a timeout
    settle(nccl_api().CommInitRankConfig(&m_nccl, comm.size(), id, comm.rank(), &config), "ncclCommInitRankConfig");
  });
  if (!failure.empty()) {
    abort_communicator();  // ranks whose own set-up succeeded
    throw RunError("NCCL set-up: " + failure);
  }
  m_watchdog = std::thread([this] { watch(); });
}

TransportNccl::~TransportNccl() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  if (m_watchdog.joinable()) m_watchdog.join();
  if (m_nccl) {
    if (std::uncaught_exceptions() > m_uncaught) {
      // Leaving on an error: the peers may never reach a clean finalize.
      abort_communicator();
    } else {
      try {
        wait_outstanding();
        settle(nccl_api().CommFinalize(m_nccl), "ncclCommFinalize");
        const ncclResult_t r = nccl_api().CommDestroy(m_nccl);
        m_nccl = nullptr;
        if (r != ncclSuccess) std::fprintf(stderr, "WARNING on rank %d: ncclCommDestroy failed: %s\n", m_comm.rank(), nccl_api().GetErrorString(r));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "WARNING on rank %d: closing the NCCL transport: %s\n", m_comm.rank(), e.what());
        abort_communicator();
      }
    }
  }
  for (const auto& p : m_pending) cudaEventDestroy(p.event);
  for (auto e : m_spare_events) cudaEventDestroy(e);
}

void TransportNccl::abort_communicator() {
  if (!m_nccl) return;
  nccl_api().CommAbort(m_nccl);  // frees the communicator; nothing useful to do with its result
  m_nccl = nullptr;
  if (m_failure.empty()) m_failure = "aborted";
}

void TransportNccl::fail(const std::string& cause) {
  abort_communicator();
  m_failure = cause;
  throw std::runtime_error("NCCL transport (rank " + std::to_string(m_comm.rank()) + ", GPU " + std::to_string(m_device) +
                           "): " + cause + "; the NCCL communicator was aborted");
}

void TransportNccl::settle(ncclResult_t r, const char* call) {
  const std::string failure = nccl_settle(r, m_nccl, call, m_timeout_s);
  if (!failure.empty()) fail(failure);
}

std::string TransportNccl::retire_completed() {
  std::size_t done = 0;
  for (; done < m_pending.size(); ++done) {
    const cudaError_t e = cudaEventQuery(m_pending[done].event);
    if (e == cudaErrorNotReady) break;
    if (e != cudaSuccess) return std::string("cudaEventQuery after an exchange failed: ") + cudaGetErrorString(e);
    m_spare_events.push_back(m_pending[done].event);
  }
  m_pending.erase(m_pending.begin(), m_pending.begin() + static_cast<std::ptrdiff_t>(done));
  return m_nccl ? nccl_async_failure(m_nccl) : std::string();
}

std::string TransportNccl::overdue() const {
  if (m_pending.empty()) return {};
  const double waited = seconds_since(m_pending.front().posted);
  if (waited <= m_timeout_s) return {};
  return "an exchange posted " + std::to_string(static_cast<long>(waited)) + " s ago has not completed (timeout " +
         std::to_string(static_cast<long>(m_timeout_s)) + " s, SPOTRUN_NCCL_TIMEOUT): a peer rank is stuck or gone";
}

void TransportNccl::wait_outstanding() {
  if (!m_failure.empty()) throw std::runtime_error("NCCL transport: the communicator was aborted earlier: " + m_failure);
  for (long polls = 0;; ++polls) {
    const std::string problem = retire_completed();
    if (!problem.empty()) fail(problem);
    if (m_pending.empty()) return;
    const std::string late = overdue();
    if (!late.empty()) fail(late);
    if (polls < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void TransportNccl::exchange(const Batch& batch, void* stream) {
  if (batch.memory == Memory::host) {
    m_host.exchange(batch, stream);
    return;
  }
  bool any = false;
  for (const auto& m : batch.sends) any = any || m.bytes > 0;
  for (const auto& m : batch.recvs) any = any || m.bytes > 0;
  if (!any) return;  // both sides know every size: both skip an empty exchange
  std::lock_guard<std::mutex> lock(m_mutex);
  if (!m_failure.empty()) throw std::runtime_error("NCCL transport: the communicator was aborted earlier: " + m_failure);
  const std::string problem = retire_completed();
  if (!problem.empty()) fail(problem);
  const auto s = static_cast<cudaStream_t>(stream);
  settle(nccl_api().GroupStart(), "ncclGroupStart");
  // Inside the group the calls only record the messages; the first error still closes the group.
  ncclResult_t r = ncclSuccess;
  const char* failed = nullptr;
  for (const auto& m : batch.recvs)
    if (m.bytes > 0 && r == ncclSuccess && (r = nccl_api().Recv(m.data, m.bytes, ncclUint8, m.peer, m_nccl, s)) != ncclSuccess)
      failed = "ncclRecv";
  for (const auto& m : batch.sends)
    if (m.bytes > 0 && r == ncclSuccess && (r = nccl_api().Send(m.data, m.bytes, ncclUint8, m.peer, m_nccl, s)) != ncclSuccess)
      failed = "ncclSend";
  const ncclResult_t end = nccl_api().GroupEnd();
  if (failed) fail(std::string(failed) + " failed: " + nccl_reason(r, m_nccl));
  // Returns once the group is queued on the stream (non-blocking: possibly after connecting to peers).
  settle(end, "ncclGroupEnd");
  cudaEvent_t event = nullptr;
  if (m_spare_events.empty()) {
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  } else {
    event = m_spare_events.back();
    m_spare_events.pop_back();
  }
  m_pending.push_back({event, Clock::now()});  // owned by m_pending from here, also if the record fails
  check_cuda(cudaEventRecord(event, s), "cudaEventRecord");
}

void TransportNccl::fence() {
  std::lock_guard<std::mutex> lock(m_mutex);
  wait_outstanding();
}

void TransportNccl::watch() {
  (void)cudaSetDevice(m_device);  // the events belong to this device; a failure shows in the queries
  std::unique_lock<std::mutex> lock(m_mutex);
  while (!m_stop) {
    m_wake.wait_for(lock, std::chrono::milliseconds(100));
    if (m_stop || !m_failure.empty() || !m_nccl) continue;
    std::string problem = retire_completed();
    if (problem.empty()) problem = overdue();
    if (problem.empty()) continue;
    std::fprintf(stderr,
                 "ERROR on rank %d: NCCL transport (GPU %d): %s; the rank cannot continue, exiting (status 1; "
                 "the MPI launcher then ends the other ranks)\n",
                 m_comm.rank(), m_device, problem.c_str());
    std::fflush(stderr);
    // Not MPI_Abort: MPI runs with MPI_THREAD_FUNNELED, so this thread may make no MPI call. The process
    // ends without MPI_Finalize, which mpirun (and srun) answer by ending the job.
    abort_communicator();
    std::fflush(stdout);
    _exit(k_exit_failure);
  }
}

}  // namespace

bool nccl_compiled() { return true; }

std::string nccl_version() { return nccl_library().loaded ? nccl_library().version : std::string(); }

std::unique_ptr<Transport> make_transport_nccl(const Communicator& comm, int device, bool route_self, double timeout_s) {
  return std::make_unique<TransportNccl>(comm, device, route_self, timeout_s);
}

}  // namespace spotrun::comm::impl
