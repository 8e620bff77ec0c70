#pragma once
// The measurements of `spotrun doctor`, one file each: CPU (probe_cpu.cpp), GPU and NCCL
// (probe_gpu.cpp), MPI (probe_mpi.cpp), the checkpoint directory (probe_disk.cpp). Each throws
// std::runtime_error naming what failed; doctor.cpp turns a failure on one rank into a "broken" verdict
// without leaving the other ranks waiting.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/device.hpp"
#include "launcher/doctor/report.hpp"

namespace spotrun::doctor::impl {

// --- CPU (one rank) ---------------------------------------------------------------------------------------
// OpenBLAS cblas_dgemm of n x n matrices on one thread (openblas_set_num_threads(1)), OpenBLAS loaded at
// run time (SPOTRUN_OPENBLAS_LIBRARY, the one of the build, or libopenblas.so.0); the best of at least
// three calls and of min_seconds. slow_down > 1 (the SPOTRUN_DOCTOR_SLOW_RANK hook) sleeps inside each
// timed call so that it takes that many times as long. Checks its result against a direct sum.
double cpu_dgemm_gflops(int n, double min_seconds, double slow_down);
// STREAM triad a = b + 3 c over three host arrays of bytes_per_array, a Kokkos kernel on the default
// host execution space; counts 24 bytes per element; the best of `passes` timed passes. Checks a.
double cpu_triad_gbs(std::size_t bytes_per_array, int passes, double slow_down);
// OpenBLAS' build and file ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64 (libopenblas.so.0)"),
// or "" when it cannot be loaded; then blas_missing() says why (cpu_dgemm_gflops throws that).
std::string blas_config();
std::string blas_missing();

// --- GPU (one rank, its GPU; CUDA builds) ------------------------------------------------------------------
struct GpuProbe {
  std::map<std::string, double> figures;  // gpu.dgemm_gflops, gpu.sgemm_gflops, gpu.triad_gbs
  std::vector<std::string> errors;        // "cuBLAS DGEMM: cublasDgemm failed: ..."
  std::string status;                     // "" when measured, else why not ("no GPU (CPU build)")
};
// cuBLAS DGEMM and SGEMM of gemm_n x gemm_n matrices on the stream of Kokkos' execution space (when cuBLAS
// is compiled in), and a triad kernel over three device arrays of triad_bytes.
GpuProbe probe_gpu(int gemm_n, std::size_t triad_bytes, double min_seconds);

// NCCL all-reduce (sum of floats, `bytes` per rank) over every rank's GPU, collective. Returns the
// algorithm bandwidth in GB/s (bytes / time of one all-reduce, the slowest rank's time), or < 0 with
// `error` set (the same on every rank: the lowest failing rank's message) and `own_error` this rank's
// own failure, if any. Needs a CUDA build with NCCL and every rank on a physical GPU of its own.
double nccl_allreduce_algbw(const comm::Communicator& comm, int device, std::size_t bytes, int iterations,
                            double timeout_s, std::string& error, std::string& own_error);

// --- MPI --------------------------------------------------------------------------------------------------
struct MpiSizes {
  int latency_iterations = 1000;        // round trips of one timed batch
  std::size_t message_bytes = 4u << 20;  // bandwidth message size
  int window = 8;                        // messages in flight per repetition
  int repetitions = 4;                   // repetitions of one timed batch
  int batches = 3;                       // timed batches; the best counts
};
// The pairs to measure: one rank per node (its lowest rank), every pair of nodes; on a single node ranks
// 0 and 1 when there are two. In rounds of disjoint pairs (the circle method): rounds[k] lists the pairs
// measured together, (lower rank, higher rank).
std::vector<std::vector<std::pair<int, int>>> mpi_rounds(const std::vector<int>& node_of_rank);
// Runs the rounds (collective): the pairs this rank measured as their lower rank, with their figures
// (mpi.latency_us, mpi.bandwidth_gbs); hosts and kinds are filled by the caller.
std::vector<PairResult> probe_mpi(const comm::Communicator& comm, const std::vector<std::vector<std::pair<int, int>>>& rounds,
                                  const MpiSizes& sizes);

// --- the checkpoint directory (one rank per node) ---------------------------------------------------------
struct DiskSizes {
  std::size_t bytes = 256u << 20;  // the file written for the bandwidth (at most a quarter of the free space)
  double max_seconds = 10;         // writing stops after this long; the rate is of what was written
  int fsyncs = 10;                 // 4 KiB writes each followed by fsync; the median counts
};
// Writes, fsyncs and removes a file `.spotrun-doctor-<tag>.tmp` in `dir` (which must exist): fills
// disk.write_mbs, disk.fsync_ms, disk.free_gib and written_bytes, or error (the directory cannot be
// written, no space, ...). Never throws.
DiskResult probe_disk(const std::string& dir, const std::string& tag, const DiskSizes& sizes);

}  // namespace spotrun::doctor::impl
