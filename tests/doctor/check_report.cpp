// Checks a JSON report of `spotrun doctor` for the command-line tests (tests/doctor/doctor_test.sh).
// Usage: doctor_check_report REPORT RANKS [CHECK]...
//   always: the report parses, has the schema's keys, RANKS ranks each with a host and every CPU figure
//           > 0, an MPI pair with latency and bandwidth > 0 when RANKS >= 2, every node's disk figures > 0
//           or its error, the summary that `spotrun launch` reads agrees with it
//   healthy          no verdict, exit_code 0, no failing host
//   slow-rank=N      rank N is named slow for both CPU figures, no other rank is named; exit_code 1
//   expected=FIGURE  every rank is named below the expected FIGURE; exit_code 1
//   broken-disk      every node's disk has an error and a broken verdict; exit_code 1
//   no-space         a broken verdict on disk.free_gib; exit_code 1
//   checkpoint=BYTES the deck's checkpoint is BYTES
// Prints every failed check and exits 1 if any, else 0.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "launcher/doctor/report.hpp"

using nlohmann::json;

namespace {

int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  ++g_failures;
}

bool positive(const json& figures, const char* name) {
  return figures.contains(name) && figures[name].is_number() && figures[name].get<double>() > 0;
}

int count_verdicts(const json& report, const std::string& kind, const std::string& figure, int rank) {
  int n = 0;
  for (const auto& v : report["verdicts"])
    if (v["kind"] == kind && (figure.empty() || v["figure"] == figure) && (rank < -1 || v["rank"] == rank)) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s REPORT RANKS [CHECK]...\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  json r;
  try {
    r = json::parse(text.str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: %s is not JSON: %s\n", argv[1], e.what());
    return 1;
  }
  const int ranks = std::stoi(argv[2]);
  try {
    check(r["spotrun_doctor"] == spotrun::doctor::k_report_schema, "schema");
    check(r["ranks"] == ranks, "ranks = " + std::to_string(ranks));
    check(r["per_rank"].size() == static_cast<std::size_t>(ranks), "one per_rank entry per rank");
    for (int k = 0; k < ranks && k < static_cast<int>(r["per_rank"].size()); ++k) {
      const json& p = r["per_rank"][k];
      const std::string who = "rank " + std::to_string(k);
      check(p["rank"] == k, who + ": rank");
      check(p["host"].is_string() && !p["host"].get<std::string>().empty(), who + ": host");
      check(p["local_rank"].is_number_integer(), who + ": local_rank");
      check(positive(p["figures"], "cpu.dgemm_gflops"), who + ": cpu.dgemm_gflops > 0");
      check(positive(p["figures"], "cpu.triad_gbs"), who + ": cpu.triad_gbs > 0");
      check(p["gpu"].is_string() && !p["gpu"].get<std::string>().empty(), who + ": gpu");
      check(p["blas"].is_string() && p["blas"].get<std::string>().find("OpenBLAS") != std::string::npos,
            who + ": blas names OpenBLAS: " + p["blas"].dump());
      check(p["errors"].is_array() && p["errors"].empty(), who + ": no error: " + p["errors"].dump());
    }
    const json& pairs = r["mpi"]["pairs"];
    if (ranks >= 2) {
      check(pairs.size() >= 1, "an MPI pair");
      for (const auto& p : pairs) {
        check(positive(p["figures"], "mpi.latency_us"), "mpi.latency_us > 0: " + p.dump());
        check(positive(p["figures"], "mpi.bandwidth_gbs"), "mpi.bandwidth_gbs > 0: " + p.dump());
      }
    } else {
      check(pairs.empty() && !r["mpi"]["note"].get<std::string>().empty(), "one rank: no pair, a note");
    }
    check(r["nccl"]["status"].is_string(), "nccl status");
    const json& disks = r["disk"]["nodes"];
    check(disks.size() == r["nodes"].get<std::size_t>(), "one disk entry per node");
    check(r["disk"]["directory"].is_string(), "disk directory");
    bool all_broken = !disks.empty();
    for (const auto& d : disks) {
      const bool broken = !d["error"].get<std::string>().empty();
      all_broken = all_broken && broken;
      if (!broken) {
        check(positive(d["figures"], "disk.write_mbs"), "disk.write_mbs > 0: " + d.dump());
        check(positive(d["figures"], "disk.fsync_ms"), "disk.fsync_ms > 0: " + d.dump());
        check(positive(d["figures"], "disk.free_gib"), "disk.free_gib > 0: " + d.dump());
        check(d["written_bytes"].get<double>() > 0, "written_bytes > 0");
      }
    }
    // What spotrun launch reads agrees with the report.
    const auto summary = spotrun::doctor::read_doctor_summary(text.str());
    check(summary.healthy == r["healthy"].get<bool>(), "summary: healthy");
    check(summary.exit_code == r["exit_code"].get<int>(), "summary: exit_code");
    check(summary.failing_hosts == r["failing_hosts"].get<std::vector<std::string>>(), "summary: failing hosts");
    check(summary.problems.size() == r["verdicts"].size(), "summary: one problem per verdict");
    check(r["healthy"].get<bool>() == r["verdicts"].empty(), "healthy exactly without verdicts");

    for (int a = 3; a < argc; ++a) {
      const std::string c = argv[a];
      if (c == "healthy") {
        check(r["verdicts"].empty(), "no verdict: " + r["verdicts"].dump());
        check(r["exit_code"] == 0, "exit_code 0");
        check(r["failing_hosts"].empty(), "no failing host");
      } else if (c.rfind("slow-rank=", 0) == 0) {
        const int slow = std::stoi(c.substr(10));
        check(count_verdicts(r, "slow", "cpu.dgemm_gflops", slow) == 1, "rank " + std::to_string(slow) + " slow in DGEMM");
        check(count_verdicts(r, "slow", "cpu.triad_gbs", slow) == 1, "rank " + std::to_string(slow) + " slow in the triad");
        for (const auto& v : r["verdicts"])
          check(v["rank"] == slow, "only rank " + std::to_string(slow) + " is named: " + v.dump());
        const std::string host = r["per_rank"][slow]["host"];
        check(r["failing_hosts"] == json::array({host}), "failing hosts: [" + host + "]");
        check(r["exit_code"] == 1, "exit_code 1");
      } else if (c.rfind("expected=", 0) == 0) {
        const std::string figure = c.substr(9);
        for (int k = 0; k < ranks; ++k)
          check(count_verdicts(r, "expected", figure, k) == 1, "rank " + std::to_string(k) + " below the expected " + figure);
        check(r["exit_code"] == 1, "exit_code 1");
      } else if (c == "broken-disk") {
        check(all_broken, "every node's disk has an error");
        check(count_verdicts(r, "broken", "", -2) == static_cast<int>(disks.size()), "one broken verdict per node");
        check(r["exit_code"] == 1, "exit_code 1");
        check(!r["failing_hosts"].empty(), "failing hosts named");
      } else if (c == "no-space") {
        check(count_verdicts(r, "broken", "disk.free_gib", -2) >= 1, "a broken verdict on disk.free_gib");
        check(r["exit_code"] == 1, "exit_code 1");
      } else if (c.rfind("checkpoint=", 0) == 0) {
        const double bytes = std::stod(c.substr(11));
        check(r["disk"]["checkpoint_bytes"].get<double>() == bytes,
              "checkpoint_bytes " + r["disk"]["checkpoint_bytes"].dump() + ", expected " + c.substr(11));
        check(r["disk"]["needed_bytes"].get<double>() == bytes * (r["disk"]["checkpoint_keep"].get<int>() + 1),
              "needed_bytes = (keep + 1) checkpoints");
      } else {
        std::fprintf(stderr, "unknown check '%s'\n", c.c_str());
        return 2;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: the report lacks a key or has a wrong type: %s\n", e.what());
    return 1;
  }
  if (g_failures == 0) std::printf("report OK: %s\n", argv[1]);
  return g_failures == 0 ? 0 : 1;
}
