#pragma once
// The report of `spotrun doctor`: what every rank, node pair and node measured, the verdicts on it, the
// table rank 0 prints and the JSON of --json (docs/cloud.md, "spotrun doctor", has the schema). Also
// what `spotrun launch --doctor` reads back from a JSON report: read_doctor_summary(). No MPI here.
#include <map>
#include <string>
#include <vector>

#include "verdicts.hpp"

namespace spotrun::doctor {

// Version of the JSON report's layout ("spotrun_doctor" key); raised when a key changes meaning.
inline constexpr int k_report_schema = 1;

// One rank: its CPU figures, and its GPU's where there is one.
struct RankResult {
  int rank = 0;
  std::string host;
  int node = 0;  // the lowest world rank of its node
  int local_rank = 0;
  std::map<std::string, double> figures;
  std::string blas;                 // the OpenBLAS of the DGEMM, or "not measured: OpenBLAS not found (...)"
  std::string gpu;                  // "no GPU (CPU build)", or "GPU 0 NVIDIA H200 (GPU-...)"
  std::vector<std::string> errors;  // parts that failed on this rank ("GPU: cublasDgemm failed: ...")
};

// One pair of ranks measured with MPI: one rank per node, or ranks 0 and 1 of a single node.
struct PairResult {
  int rank_a = 0, rank_b = 0;
  std::string host_a, host_b;
  bool intra_node = false;
  std::map<std::string, double> figures;
};

// The NCCL all-reduce over every rank's GPU.
struct NcclResult {
  std::string status = "not run";  // "measured", or why not ("no GPU (CPU build)", "one rank", "failed: ...")
  bool broken = false;              // it was run and failed
  double bytes = 0;                 // message size of the measurement
  std::map<std::string, double> figures;  // nccl.allreduce_busbw_gbs, and algbw as "algbw_gbs" (not judged)
};

// The checkpoint directory as seen from one node (its first rank).
struct DiskResult {
  int rank = 0;
  std::string host;
  std::map<std::string, double> figures;
  double written_bytes = 0;  // size of the file written for the bandwidth
  std::string error;         // why the directory could not be measured or written
};

struct Report {
  std::string version, git_hash;
  int ranks = 1, nodes = 1;
  bool quick = false;
  std::map<std::string, double> sizes;  // the sizes used ("cpu_dgemm_n", ...), for the record
  std::vector<RankResult> per_rank;
  std::vector<PairResult> pairs;
  std::string mpi_note;  // why there is no pair ("one rank"), or ""
  NcclResult nccl;
  std::string directory;        // the checkpoint directory
  double checkpoint_bytes = -1;  // one checkpoint of the deck; < 0 without --deck
  std::string checkpoint_what;   // "the MD system of 4000 atoms, 136 bytes per atom"
  int checkpoint_keep = 0;       // checkpoint.keep of the deck
  double needed_bytes = -1;      // what the run will hold in the directory at its peak
  std::vector<DiskResult> disks;
  double slow_factor = 0.5;
  std::map<std::string, double> expected;  // --expect
  // Filled by judge():
  std::vector<Verdict> verdicts;
  std::vector<std::string> failing;  // failing_hosts(verdicts)
  bool healthy = true;
  int exit_code = 0;
};

// Every figure of the report as measurements, with their subjects and hosts.
std::vector<Measurement> measurements(const Report& report);
// The broken parts: a rank's errors, a failed NCCL all-reduce, a directory that cannot be written, less
// free space than the run needs.
std::vector<Verdict> broken_verdicts(const Report& report);
// A figure --expect gives a limit that was not measured (a GPU figure without a GPU, the DGEMM without
// OpenBLAS, an MPI figure at one rank): an "expected" verdict for each subject that lacks it. Not for the
// disk of a node whose directory is broken (that is its own verdict).
std::vector<Verdict> missing_expected(const Report& report);
// Fills verdicts (broken, then against peers, then against report.expected, then the expected figures not
// measured), failing hosts, healthy and the exit code (0 healthy, 1 otherwise).
void judge(Report& report);

// The JSON report (--json), indented.
std::string to_json(const Report& report);
// The table printed on stdout.
std::string to_table(const Report& report);

// What `spotrun launch --doctor` needs from a report.
struct DoctorSummary {
  bool healthy = false;
  int exit_code = 1;
  std::vector<std::string> failing_hosts;  // hosts to leave out of the next attempt
  std::vector<std::string> problems;       // the verdicts' messages
};
// Reads the JSON text of a report. Throws std::runtime_error for text that is not a doctor report of
// this schema.
DoctorSummary read_doctor_summary(const std::string& json_text);
// The same from a file. Throws std::runtime_error when it cannot be read or is not a report.
DoctorSummary read_doctor_summary_file(const std::string& path);

}  // namespace spotrun::doctor
