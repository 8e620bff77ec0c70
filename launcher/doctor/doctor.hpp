#pragma once
// `spotrun doctor`: a check of the machines of a job before a long run (docs/cloud.md, "spotrun doctor").
// Run under mpirun or srun with the ranks of the job; every rank measures, rank 0 prints the report:
//   - per rank, on the CPU: OpenBLAS DGEMM on one thread, STREAM triad memory bandwidth;
//   - per rank, on its GPU (CUDA builds): cuBLAS DGEMM and SGEMM, device memory bandwidth; and the NCCL
//     all-reduce bus bandwidth over every rank's GPU;
//   - MPI latency and bandwidth between every pair of nodes (one rank per node; on one node ranks 0 and 1);
//   - the checkpoint directory from every node: write bandwidth with fsync, fsync latency, free space
//     against what the deck's checkpoints need.
// Every figure is judged against its peers and against --expect; broken parts are named. Exit code 0
// healthy, 1 a host below its threshold or broken, 2 bad usage. The JSON report (--json) names the
// failing hosts for `spotrun launch --doctor` (launcher/doctor/report.hpp: read_doctor_summary_file()).
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "launcher/environment.hpp"

namespace CLI {
class App;
}

namespace spotrun::doctor {

struct DoctorOptions {
  std::string json_path;          // --json FILE: the JSON report (rank 0 writes it)
  std::string expect_path;        // --expect FILE: expected values, JSON {"figure": limit, ...}
  std::string deck_path;          // --deck DECK: the checkpoint directory and size of this deck
  std::vector<std::string> sets;  // --set section.key=value for the deck
  std::string output_dir;         // --output-dir DIR: overrides the deck's; default runs/doctor
  bool quick = false;             // --quick (or SPOTRUN_DOCTOR_QUICK=1): small sizes, for tests
  double slow_factor = 0.5;       // --slow-factor: slow below this times the median of the peers
  double disk_mib = 0;            // --disk-mib: MiB each node writes; 0: from the deck, else 256
  // The process's environment, read where the command started: SPOTRUN_DOCTOR_QUICK, SPOTRUN_NCCL_TIMEOUT,
  // SPOTRUN_OPENBLAS_LIBRARY (launcher/environment.hpp).
  launcher::Environment environment;
};

// Adds the options of `spotrun doctor` to a CLI11 subcommand, writing into `options`.
void add_doctor_options(CLI::App& command, DoctorOptions& options);

// Runs every measurement (collective), prints the table on rank 0, writes the JSON report; returns the
// exit code, the same on every rank. Bad usage (a bad --expect file or deck, a bad slow-rank hook, a
// report file that cannot be written) throws InputError on every rank (exit 2).
int run_doctor(const comm::Communicator& comm, const DoctorOptions& options);

// The test hook comm::TestHooks::doctor_slow_rank (spotrun-test: SPOTRUN_DOCTOR_SLOW_RANK=N): rank N's CPU
// figures are measured with every timed call stretched k_slow_rank_factor times (a sleep inside the
// timing), so that the verdicts can be tested.
inline constexpr double k_slow_rank_factor = 10.0;

}  // namespace spotrun::doctor
