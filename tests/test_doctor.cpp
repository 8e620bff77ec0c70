// spotrun doctor's rules on made-up figures: peers, expected values, failing hosts, the pairs of nodes
// MPI measures, the report and what `spotrun launch` reads back from it. One rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "comm/errors.hpp"
#include "comm/probes/probes.hpp"
#include "launcher/doctor/report.hpp"
#include "launcher/doctor/verdicts.hpp"
#include "support/mpi_test.hpp"

using namespace spotrun;
using namespace spotrun::doctor;

SPOTRUN_TEST_RANKS(1);

namespace {

Measurement rank_figure(const std::string& figure, int rank, double value) {
  return {figure, value, "rank " + std::to_string(rank), {"n" + std::to_string(rank)}, rank};
}

}  // namespace

TEST(DoctorVerdicts, Median) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({3}), 3);
  EXPECT_EQ(median({5, 1, 3}), 3);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
}

TEST(DoctorVerdicts, SlowAgainstPeers) {
  // One rank has no peers: never slow, however low.
  EXPECT_TRUE(compare_with_peers({rank_figure("cpu.dgemm_gflops", 0, 0.001)}, 0.5).empty());
  // Two ranks: the slower one below half the other is slow; the faster one never.
  auto v = compare_with_peers({rank_figure("cpu.dgemm_gflops", 0, 40), rank_figure("cpu.dgemm_gflops", 1, 19)}, 0.5);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, "slow");
  EXPECT_EQ(v[0].rank, 1);
  EXPECT_EQ(v[0].reference, 20);
  EXPECT_NE(v[0].message.find("rank 1: cpu.dgemm_gflops = 19 GFLOP/s, below 20 GFLOP/s (0.5 x the median of its 1 peer, 40"),
            std::string::npos)
      << v[0].message;
  // At exactly the limit: not slow.
  EXPECT_TRUE(compare_with_peers({rank_figure("cpu.triad_gbs", 0, 40), rank_figure("cpu.triad_gbs", 1, 20)}, 0.5).empty());
  // The median of the others, not of all: three fast ranks and one at a third.
  std::vector<Measurement> four;
  for (int r = 0; r < 4; ++r) four.push_back(rank_figure("cpu.triad_gbs", r, r == 2 ? 10 : 30));
  v = compare_with_peers(four, 0.5);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rank, 2);
  // Figures are compared only with the same figure.
  EXPECT_TRUE(compare_with_peers({rank_figure("cpu.triad_gbs", 0, 100), rank_figure("cpu.dgemm_gflops", 1, 1)}, 0.5).empty());
}

TEST(DoctorVerdicts, LatencyIsSlowWhenHigh) {
  std::vector<Measurement> m = {{"mpi.latency_us", 2, "a", {"n0", "n1"}, -1},
                                {"mpi.latency_us", 2.2, "b", {"n0", "n2"}, -1},
                                {"mpi.latency_us", 9, "c", {"n1", "n2"}, -1}};
  auto v = compare_with_peers(m, 0.5);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subject, "c");
  EXPECT_DOUBLE_EQ(v[0].reference, 2.1 / 0.5);
  // Free space is not compared with the peers.
  EXPECT_TRUE(compare_with_peers({{"disk.free_gib", 1, "x", {"n0"}, -1}, {"disk.free_gib", 100, "y", {"n1"}, -1}}, 0.5).empty());
}

TEST(DoctorVerdicts, Expectations) {
  const Expectations e = parse_expectations(R"({"cpu.dgemm_gflops": 20, "mpi.latency_us": 5})", "x.json");
  ASSERT_EQ(e.size(), 2u);
  auto v = compare_with_expected({rank_figure("cpu.dgemm_gflops", 0, 25), rank_figure("cpu.dgemm_gflops", 1, 15),
                                  {"mpi.latency_us", 6, "pair", {"n0", "n1"}, -1},
                                  {"mpi.bandwidth_gbs", 0.001, "pair", {"n0", "n1"}, -1}},
                                 e);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].kind, "expected");
  EXPECT_EQ(v[0].rank, 1);
  EXPECT_NE(v[0].message.find("below the expected minimum 20 GFLOP/s"), std::string::npos) << v[0].message;
  EXPECT_NE(v[1].message.find("above the expected maximum 5 us"), std::string::npos) << v[1].message;

  EXPECT_THROW(parse_expectations("{", "x.json"), InputError);
  EXPECT_THROW(parse_expectations("[1]", "x.json"), InputError);
  EXPECT_THROW(parse_expectations(R"({"cpu.gemm": 1})", "x.json"), InputError);
  EXPECT_THROW(parse_expectations(R"({"cpu.triad_gbs": "1"})", "x.json"), InputError);
  EXPECT_TRUE(parse_expectations("{}", "x.json").empty());
  // Every figure can be expected.
  for (const auto& spec : figure_specs())
    EXPECT_EQ(parse_expectations("{\"" + spec.name + "\": 1}", "x.json").count(spec.name), 1u);
}

TEST(DoctorVerdicts, FailingHosts) {
  auto slow_pair = [](const std::string& a, const std::string& b) {
    Verdict v;
    v.kind = "slow";
    v.figure = "mpi.bandwidth_gbs";
    v.hosts = {a, b};
    return v;
  };
  // Two nodes: both hosts of the pair.
  EXPECT_EQ(failing_hosts({slow_pair("n1", "n0")}), (std::vector<std::string>{"n0", "n1"}));
  // n2 in every slow pair: n2 alone.
  EXPECT_EQ(failing_hosts({slow_pair("n0", "n2"), slow_pair("n1", "n2"), slow_pair("n2", "n3")}),
            (std::vector<std::string>{"n2"}));
  // Rank and broken verdicts name their hosts; a job-wide one none.
  Verdict rank;
  rank.kind = "slow";
  rank.figure = "cpu.dgemm_gflops";
  rank.hosts = {"n5"};
  Verdict broken;
  broken.kind = "broken";
  broken.hosts = {"n4"};
  Verdict job;
  job.kind = "expected";
  job.figure = "nccl.allreduce_busbw_gbs";
  EXPECT_EQ(failing_hosts({rank, broken, job}), (std::vector<std::string>{"n4", "n5"}));
  EXPECT_TRUE(failing_hosts({}).empty());
}

TEST(DoctorVerdicts, BusBandwidth) {
  EXPECT_EQ(allreduce_bus_bandwidth(10, 1), 0);
  EXPECT_EQ(allreduce_bus_bandwidth(10, 2), 10);
  EXPECT_EQ(allreduce_bus_bandwidth(10, 4), 15);
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(10, 8), 17.5);
}

// Every pair of nodes once, through their lowest ranks, each round of disjoint pairs.
TEST(DoctorMpi, RoundsCoverEveryPairOfNodes) {
  EXPECT_TRUE(probes::mpi_rounds({0}).empty());
  EXPECT_EQ(probes::mpi_rounds({0, 0, 0}), (std::vector<std::vector<std::pair<int, int>>>{{{0, 1}}}));
  for (int nodes = 2; nodes <= 9; ++nodes) {
    SCOPED_TRACE(nodes);
    // Three ranks per node, nodes numbered by their lowest rank, interleaved ranks on the last node.
    std::vector<int> node_of_rank;
    for (int n = 0; n < nodes; ++n)
      for (int k = 0; k < 3; ++k) node_of_rank.push_back(3 * n);
    const auto rounds = probes::mpi_rounds(node_of_rank);
    EXPECT_EQ(rounds.size(), static_cast<std::size_t>(nodes % 2 == 0 ? nodes - 1 : nodes));
    std::set<std::pair<int, int>> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_EQ(a % 3, 0);
        EXPECT_EQ(b % 3, 0);
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second) << "a rank twice in one round";
        EXPECT_TRUE(seen.insert({a, b}).second) << "a pair twice";
      }
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(nodes * (nodes - 1) / 2));
  }
}

// A report with a slow rank, a pair, a broken disk and too little free space: judged, written as JSON,
// read back as `spotrun launch` reads it.
TEST(DoctorReport, JudgeWriteAndReadBack) {
  Report r;
  r.version = "0";
  r.git_hash = "x";
  r.ranks = 3;
  r.nodes = 2;
  for (int k = 0; k < 3; ++k) {
    RankResult rr;
    rr.rank = k;
    rr.host = k < 2 ? "a" : "b";
    rr.node = k < 2 ? 0 : 2;
    rr.local_rank = k < 2 ? k : 0;
    rr.figures = {{"cpu.dgemm_gflops", k == 2 ? 5.0 : 50.0}, {"cpu.triad_gbs", 10.0}};
    rr.gpu = "no GPU (CPU build)";
    r.per_rank.push_back(rr);
  }
  r.pairs.push_back({0, 2, "a", "b", false, {{"mpi.latency_us", 2.0}, {"mpi.bandwidth_gbs", 5.0}}});
  r.directory = "runs/x";
  r.checkpoint_bytes = 2.0 * (1 << 30);
  r.checkpoint_keep = 2;
  r.needed_bytes = 3 * r.checkpoint_bytes;
  r.disks.push_back({0, "a", {{"disk.write_mbs", 500.0}, {"disk.fsync_ms", 1.0}, {"disk.free_gib", 5.0}}, 1e6, ""});
  r.disks.push_back({2, "b", {{"disk.free_gib", 100.0}}, 0, "cannot write in runs/x: Read-only file system"});
  r.expected = {{"mpi.latency_us", 1.0}};
  judge(r);
  EXPECT_FALSE(r.healthy);
  EXPECT_EQ(r.exit_code, 1);
  std::vector<std::string> kinds;
  for (const auto& v : r.verdicts) kinds.push_back(v.kind + ":" + v.subject);
  EXPECT_EQ(kinds, (std::vector<std::string>{"broken:node a (rank 0)", "broken:node b (rank 2)", "slow:rank 2 (host b)",
                                             "expected:nodes a and b (ranks 0 and 2)"}));
  EXPECT_NE(r.verdicts[0].message.find("too little free space in runs/x: 5 GiB free, the run needs 6 GiB"), std::string::npos)
      << r.verdicts[0].message;
  EXPECT_EQ(r.failing, (std::vector<std::string>{"a", "b"}));

  const DoctorSummary s = read_doctor_summary(to_json(r));
  EXPECT_FALSE(s.healthy);
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_EQ(s.failing_hosts, r.failing);
  ASSERT_EQ(s.problems.size(), 4u);
  EXPECT_EQ(s.problems[2], r.verdicts[2].message);

  const std::string table = to_table(r);
  EXPECT_NE(table.find("NOT HEALTHY (exit 1): failing hosts: a b"), std::string::npos) << table;
  EXPECT_NE(table.find("Read-only file system"), std::string::npos) << table;

  // A healthy report.
  Report h;
  h.per_rank.push_back(r.per_rank[0]);
  judge(h);
  EXPECT_TRUE(h.healthy);
  EXPECT_EQ(read_doctor_summary(to_json(h)).exit_code, 0);
  EXPECT_NE(to_table(h).find("HEALTHY"), std::string::npos);

  // An expected figure that was not measured: named for every subject that lacks it.
  Report g = h;
  g.per_rank[0].gpu = "no GPU (CPU build)";
  g.expected = {{"gpu.dgemm_gflops", 1000.0}, {"cpu.triad_gbs", 1.0}, {"mpi.latency_us", 10.0}};
  g.mpi_note = "one rank: no pair of ranks to measure";
  judge(g);
  ASSERT_EQ(g.verdicts.size(), 2u);
  EXPECT_EQ(g.verdicts[0].message,
            "rank 0 (host a): gpu.dgemm_gflops was not measured (no GPU (CPU build)), but --expect gives it a limit");
  EXPECT_EQ(g.verdicts[1].message,
            "the job: mpi.latency_us was not measured (one rank: no pair of ranks to measure), but --expect gives it a limit");
  EXPECT_EQ(g.failing, std::vector<std::string>{"a"});

  EXPECT_THROW(read_doctor_summary("{}"), std::runtime_error);
  EXPECT_THROW(read_doctor_summary("not json"), std::runtime_error);
  EXPECT_THROW(read_doctor_summary(R"({"spotrun_doctor": 99})"), std::runtime_error);
  EXPECT_THROW(read_doctor_summary(R"({"spotrun_doctor": 1, "healthy": true})"), std::runtime_error);
  EXPECT_THROW(read_doctor_summary_file("/no/such/report.json"), std::runtime_error);
}
