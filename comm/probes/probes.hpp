#pragma once
// Measurements of the machine a job runs on, one file each: CPU (probe_cpu.cpp), GPU and NCCL
// (probe_gpu.cpp), MPI between nodes (probe_mpi.cpp). `spotrun doctor` (launcher/doctor/doctor.cpp) calls
// them and judges what they give; the checkpoint directory's disk is io/disk_probe.hpp. Each throws
// std::runtime_error naming what failed; the caller turns a failure on one rank into a "broken" verdict
// without leaving the other ranks waiting. The figures' names ("cpu.dgemm_gflops", ...) are those of the
// doctor's report (launcher/doctor/verdicts.hpp).
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"

namespace spotrun::probes {

// --- CPU (one rank) ---------------------------------------------------------------------------------------
// OpenBLAS cblas_dgemm of n x n matrices on one thread (openblas_set_num_threads(1)), OpenBLAS loaded at
// run time: `library` when given (the doctor's SPOTRUN_OPENBLAS_LIBRARY), else the one of the build, else
// libopenblas.so.0; loaded once, by the first of these calls. The best of at least three calls and of
// min_seconds. slow_down > 1 (the SPOTRUN_DOCTOR_SLOW_RANK hook) sleeps inside each timed call so that it
// takes that many times as long. Checks its result against a direct sum.
double cpu_dgemm_gflops(int n, double min_seconds, double slow_down, const std::string& library);
// STREAM triad a = b + 3 c over three host arrays of bytes_per_array, a Kokkos kernel on the default
// host execution space; counts 24 bytes per element; the best of `passes` timed passes. Checks a.
double cpu_triad_gbs(std::size_t bytes_per_array, int passes, double slow_down);
// OpenBLAS' build and file ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64 (libopenblas.so.0)"),
// or "" when it cannot be loaded; then blas_missing() says why (cpu_dgemm_gflops throws that).
std::string blas_config(const std::string& library);
std::string blas_missing(const std::string& library);

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
// One pair of ranks measured: (lower rank, higher rank) and its figures (mpi.latency_us, mpi.bandwidth_gbs).
struct PairFigures {
  int rank_a = 0, rank_b = 0;
  std::map<std::string, double> figures;
};
// Runs the rounds (collective): the pairs this rank measured as their lower rank, with their figures.
std::vector<PairFigures> probe_mpi(const comm::Communicator& comm,
                                   const std::vector<std::vector<std::pair<int, int>>>& rounds, const MpiSizes& sizes);

}  // namespace spotrun::probes
