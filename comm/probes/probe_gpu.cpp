// GPU figures of one rank (cuBLAS DGEMM and SGEMM, device memory bandwidth) and the NCCL all-reduce
// over every rank's GPU. Compiled everywhere: the GPU code only on a CUDA build of Kokkos
// (KOKKOS_ENABLE_CUDA), cuBLAS with SPOTRUN_HAVE_CUBLAS, NCCL with SPOTRUN_HAVE_NCCL (both set by
// comm/probes/CMakeLists.txt on CUDA builds only); elsewhere it says why there is no figure. Every CUDA,
// cuBLAS and NCCL call is checked and a failure names the call.
#include <Kokkos_Core.hpp>
#include <functional>
#include <stdexcept>
#include <string>

#include "comm/probes/probes.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>

#include "comm/cuda_check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#if defined(SPOTRUN_HAVE_CUBLAS)
#include <cublas_v2.h>
#endif
#if defined(SPOTRUN_HAVE_NCCL)
#include "comm/agreed_step.hpp"
#include "comm/nccl_api.hpp"
#endif
#endif

#include "comm/number_text.hpp"

namespace spotrun::probes {

#if defined(KOKKOS_ENABLE_CUDA)

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

using comm::check_cuda;

#if defined(SPOTRUN_HAVE_CUBLAS)
void check_cublas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

// A cuBLAS handle on Kokkos' stream, destroyed with the scope; not copied.
class ScopedCublas {
 public:
  ScopedCublas() {
    check_cublas(cublasCreate(&m_handle), "cublasCreate");
    const cublasStatus_t s = cublasSetStream(m_handle, Kokkos::DefaultExecutionSpace().cuda_stream());
    if (s != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(m_handle);
      check_cublas(s, "cublasSetStream");
    }
  }
  ~ScopedCublas() { cublasDestroy(m_handle); }
  ScopedCublas(const ScopedCublas&) = delete;
  ScopedCublas& operator=(const ScopedCublas&) = delete;
  cublasHandle_t get() const { return m_handle; }

 private:
  cublasHandle_t m_handle = nullptr;
};
#endif

}  // namespace

// Outside the anonymous namespace: nvcc's extended lambdas need an enclosing function with external linkage.
void doctor_device_fill(Kokkos::View<double*> v, double value) {
  Kokkos::parallel_for("doctor::gpu_fill", Kokkos::RangePolicy<>(0, v.extent(0)), KOKKOS_LAMBDA(std::size_t i) { v(i) = value; });
}

void doctor_device_triad(Kokkos::View<double*> a, Kokkos::View<const double*> b, Kokkos::View<const double*> c, double s) {
  Kokkos::parallel_for("doctor::gpu_triad", Kokkos::RangePolicy<>(0, a.extent(0)),
                       KOKKOS_LAMBDA(std::size_t i) { a(i) = b(i) + s * c(i); });
}

namespace {

#if defined(SPOTRUN_HAVE_CUBLAS)
// GFLOP/s of C = A B on n x n matrices of T, on Kokkos' stream: calls timed in groups until
// min_seconds; checks C(0, 0) = n a b.
template <class T>
double gemm_gflops(const ScopedCublas& handle, int n, double min_seconds) {
  const std::size_t nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  Kokkos::View<T*> a("doctor::gemm_a", nn), b("doctor::gemm_b", nn), c("doctor::gemm_c", nn);
  Kokkos::deep_copy(a, T(1));
  Kokkos::deep_copy(b, T(0.5));
  const T one = 1, zero = 0;
  auto call = [&] {
    if constexpr (std::is_same_v<T, double>)
      check_cublas(cublasDgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data(), n, b.data(), n, &zero,
                               c.data(), n),
                   "cublasDgemm");
    else
      check_cublas(cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data(), n, b.data(), n, &zero,
                               c.data(), n),
                   "cublasSgemm");
  };
  call();  // warm-up
  Kokkos::fence();
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int group = 0; group < 3 || (total < min_seconds && group < 50); ++group) {
    const int calls = 4;
    const auto t0 = Clock::now();
    for (int k = 0; k < calls; ++k) call();
    Kokkos::fence();
    const double t = seconds_since(t0);
    best = std::min(best, t / calls);
    total += t;
  }
  check_cuda(cudaGetLastError(), "cuBLAS GEMM (cudaGetLastError)");
  T c00 = 0;
  Kokkos::deep_copy(c00, Kokkos::subview(c, 0));
  const double want = 0.5 * n;
  if (!(std::abs(static_cast<double>(c00) - want) <= 1e-3 * want))
    throw std::runtime_error("C(0, 0) = " + significant(static_cast<double>(c00), 4) + ", not " + significant(want, 4));
  return 2.0 * static_cast<double>(n) * n * n / best / 1e9;
}
#endif

// GB/s of the triad kernel over three device arrays (24 bytes per element); checks a.
double device_triad_gbs(std::size_t bytes_per_array, int passes) {
  const std::size_t n = std::max<std::size_t>(bytes_per_array / sizeof(double), 1);
  Kokkos::View<double*> a("doctor::gpu_triad_a", n), b("doctor::gpu_triad_b", n), c("doctor::gpu_triad_c", n);
  doctor_device_fill(b, 1.0);
  doctor_device_fill(c, 2.0);
  Kokkos::fence();
  double best = std::numeric_limits<double>::infinity();
  for (int pass = -1; pass < passes; ++pass) {
    const auto t0 = Clock::now();
    doctor_device_triad(a, b, c, 3.0);
    Kokkos::fence();
    if (pass >= 0) best = std::min(best, seconds_since(t0));
  }
  check_cuda(cudaGetLastError(), "the triad kernel (cudaGetLastError)");
  double last = 0;
  Kokkos::deep_copy(last, Kokkos::subview(a, n - 1));
  if (last != 7.0) throw std::runtime_error("the device triad gave " + significant(last, 4) + ", not 7");
  return 3.0 * sizeof(double) * static_cast<double>(n) / best / 1e9;
}

}  // namespace

GpuProbe probe_gpu(int gemm_n, std::size_t triad_bytes, double min_seconds) {
  GpuProbe out;
  // Each part on its own: one that fails does not hide the others' figures.
  auto part = [&out](const char* what, auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      out.errors.push_back(std::string("GPU ") + what + ": " + e.what());
    }
  };
#if defined(SPOTRUN_HAVE_CUBLAS)
  part("cuBLAS", [&] {
    const ScopedCublas handle;
    part("DGEMM", [&] { out.figures["gpu.dgemm_gflops"] = gemm_gflops<double>(handle, gemm_n, min_seconds); });
    part("SGEMM", [&] { out.figures["gpu.sgemm_gflops"] = gemm_gflops<float>(handle, gemm_n, min_seconds); });
  });
#else
  (void)gemm_n;
  (void)min_seconds;
#endif
  part("triad", [&] { out.figures["gpu.triad_gbs"] = device_triad_gbs(triad_bytes, 10); });
  return out;
}

#else  // no CUDA build of Kokkos

GpuProbe probe_gpu(int, std::size_t, double) {
  GpuProbe out;
  out.status = "no GPU (CPU build)";
  return out;
}

#endif

#if defined(KOKKOS_ENABLE_CUDA) && defined(SPOTRUN_HAVE_NCCL)

namespace {

using comm::nccl_reason;

// An NCCL communicator over every rank, non-blocking (every call is polled with a timeout, so that a
// peer that is gone ends the wait); aborted on failure, finalized otherwise.
class NcclAllReduce {
 public:
  NcclAllReduce(double timeout_s) : m_timeout_s(timeout_s) {}
  ~NcclAllReduce() { abort(); }
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  void init(int nranks, const ncclUniqueId& id, int rank) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    settle(comm::nccl_api().CommInitRankConfig(&m_comm, nranks, id, rank, &config), "ncclCommInitRankConfig");
  }
  void all_reduce(const float* send, float* recv, std::size_t count, cudaStream_t stream) {
    settle(comm::nccl_api().AllReduce(send, recv, count, ncclFloat, ncclSum, m_comm, stream), "ncclAllReduce");
  }
  // Waits for the stream, polling it and NCCL's asynchronous errors, until the timeout.
  void wait(cudaStream_t stream) {
    const auto start = Clock::now();
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) check_cuda(e, "cudaStreamQuery");
      const std::string failure = comm::nccl_async_failure(m_comm);
      if (!failure.empty()) throw std::runtime_error(failure);
      if (seconds_since(start) > m_timeout_s)
        throw std::runtime_error("the all-reduce did not complete within " + significant(m_timeout_s, 4) +
                                 " s (SPOTRUN_NCCL_TIMEOUT): a peer rank is stuck or gone");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  void finalize() {
    if (!m_comm) return;
    settle(comm::nccl_api().CommFinalize(m_comm), "ncclCommFinalize");
    comm::nccl_api().CommDestroy(m_comm);
    m_comm = nullptr;
  }
  void abort() {
    if (m_comm) comm::nccl_api().CommAbort(m_comm);
    m_comm = nullptr;
  }

 private:
  void settle(ncclResult_t r, const char* call) {
    const std::string failure = comm::nccl_settle(r, m_comm, call, m_timeout_s);
    if (!failure.empty()) throw std::runtime_error(failure);
  }

  double m_timeout_s;
  ncclComm_t m_comm = nullptr;
};

}  // namespace

double nccl_allreduce_algbw(const comm::Communicator& comm, int device, std::size_t bytes, int iterations,
                            double timeout_s, std::string& error, std::string& own_error) {
  // The views before the communicator: destroyed after it, so that on a failure the communicator is
  // aborted (~NcclAllReduce) before the memory its kernels may still use is freed.
  Kokkos::View<float*> send, recv;
  NcclAllReduce nccl(timeout_s);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  const std::size_t count = std::max<std::size_t>(bytes / sizeof(float), 1);
  const cudaStream_t stream = Kokkos::DefaultExecutionSpace().cuda_stream();
  double seconds = 0;
  // Each step agreed by every rank: a failure on one ends the measurement on all, none waits alone.
  auto step = [&](const std::function<void()>& f) {
    error = comm::agreed_failure(comm, [&] {
      try {
        f();
      } catch (const std::exception& e) {
        own_error = std::string("NCCL all-reduce: ") + e.what();
        nccl.abort();  // before anything frees the views
        throw;
      }
    });
    return error.empty();
  };
  const bool ok =
      step([&] {
        check_cuda(cudaSetDevice(device), "cudaSetDevice");
        if (comm.is_root()) {
          const ncclResult_t r = comm::nccl_api().GetUniqueId(&id);
          if (r != ncclSuccess) throw std::runtime_error("ncclGetUniqueId failed: " + nccl_reason(r, nullptr));
        }
      }) &&
      [&] {
        const std::string text = comm.broadcast(std::string(reinterpret_cast<const char*>(&id), sizeof id));
        std::memcpy(&id, text.data(), sizeof id);
        return true;
      }() &&
      step([&] {
        nccl.init(comm.size(), id, comm.rank());
        send = Kokkos::View<float*>("doctor::nccl_send", count);
        recv = Kokkos::View<float*>("doctor::nccl_recv", count);
        Kokkos::deep_copy(send, 1.0f);
        Kokkos::fence();
        for (int k = 0; k < 2; ++k) nccl.all_reduce(send.data(), recv.data(), count, stream);  // warm-up
        nccl.wait(stream);
        float sum = 0;
        Kokkos::deep_copy(sum, Kokkos::subview(recv, count - 1));
        if (sum != static_cast<float>(comm.size()))
          throw std::runtime_error("the all-reduce gave " + significant(sum, 4) + ", not " + std::to_string(comm.size()));
      }) &&
      [&] {
        comm.barrier();
        return true;
      }() &&
      step([&] {
        const auto t0 = Clock::now();
        for (int k = 0; k < iterations; ++k) nccl.all_reduce(send.data(), recv.data(), count, stream);
        nccl.wait(stream);
        seconds = seconds_since(t0);
        nccl.finalize();
      });
  if (!ok) return -1;
  seconds = comm.max(seconds);
  return static_cast<double>(count * sizeof(float)) * iterations / seconds / 1e9;
}

#else

double nccl_allreduce_algbw(const comm::Communicator&, int, std::size_t, int, double, std::string& error, std::string&) {
  error = "NCCL is not compiled in";
  return -1;
}

#endif

}  // namespace spotrun::probes
