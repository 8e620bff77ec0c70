#pragma once
// The figures `spotrun doctor` measures and the rules that judge them (docs/cloud.md, "spotrun doctor"):
// each figure against the same figure of its peers (other ranks, node pairs or nodes) and against the
// expected values of an --expect file. Pure functions on made-up inputs (tests/test_doctor.cpp); no MPI.
#include <map>
#include <string>
#include <vector>

namespace spotrun::doctor {

enum class Better { higher, lower };
// What a figure belongs to: one rank, a pair of nodes (MPI), a node (its disk), the whole job (NCCL).
enum class Scope { rank, pair, node, job };

struct FigureSpec {
  std::string name;  // "cpu.dgemm_gflops": the key in the JSON report and in an --expect file
  std::string unit;  // "GFLOP/s"
  Better better = Better::higher;
  Scope scope = Scope::rank;
  bool compare_peers = true;  // judged against its peers (free space is not)
  std::string what;           // one line for docs and messages
};

// Every figure, in report order.
const std::vector<FigureSpec>& figure_specs();
// The figure of that name, or nullptr.
const FigureSpec* find_figure(const std::string& name);

// One measured value of one figure.
struct Measurement {
  std::string figure;
  double value = 0;
  std::string subject;             // "rank 1 (host n1)", "nodes n1 and n2", "node n1", "the job"
  std::vector<std::string> hosts;  // the hosts it belongs to: one, or the two of an MPI pair; none for the job
  int rank = -1;                   // the rank of a rank figure, else -1
};

// A problem the doctor found.
struct Verdict {
  std::string kind;  // "slow" (against its peers), "expected" (against --expect), "broken"
  std::string figure;  // empty for a broken part that gave no figure
  std::string subject;
  std::vector<std::string> hosts;
  int rank = -1;
  double value = 0;
  double reference = 0;  // the peers' median scaled by the factor, or the expected limit
  std::string message;
};

// The median (the mean of the two middle values for an even count); 0 for none.
double median(std::vector<double> values);

// Each measurement against the median of the other measurements of its figure (not itself): a rate
// below slow_factor times that median, or a latency above it divided by slow_factor, is "slow". A
// figure measured once (one rank, one pair, one node) has no peers and is not judged.
std::vector<Verdict> compare_with_peers(const std::vector<Measurement>& measurements, double slow_factor);

// Expected values (--expect): figure name -> the minimum of a rate, the maximum of a latency.
using Expectations = std::map<std::string, double>;
// Parses an --expect file: a JSON object of figure names and numbers, e.g.
// {"cpu.dgemm_gflops": 20, "mpi.latency_us": 10}. Throws InputError naming `where` for text that is not
// such an object, an unknown figure or a value that is not a finite number.
Expectations parse_expectations(const std::string& json_text, const std::string& where);
// Each measurement against its expected value: a rate below its minimum or a latency above its maximum.
std::vector<Verdict> compare_with_expected(const std::vector<Measurement>& measurements, const Expectations& expected);

// The hosts the verdicts name: every host of a rank, node or broken verdict; of an MPI pair judged slow
// or below expectation, the host found in more such pairs than the other, or both when they tie (with
// two nodes, both). Sorted, each once. A job-wide figure names no host.
std::vector<std::string> failing_hosts(const std::vector<Verdict>& verdicts);

// nccl-tests' bus bandwidth of an all-reduce: algbw * 2 (n - 1) / n.
double allreduce_bus_bandwidth(double algbw, int nranks);

// A number as the report prints it (4 significant digits).
std::string format_value(double v);

}  // namespace spotrun::doctor
