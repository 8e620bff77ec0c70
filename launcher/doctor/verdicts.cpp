#include "verdicts.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"

namespace spotrun::doctor {

const std::vector<FigureSpec>& figure_specs() {
  static const std::vector<FigureSpec> specs = {
      {"cpu.dgemm_gflops", "GFLOP/s", Better::higher, Scope::rank, true,
       "DGEMM rate of one rank, OpenBLAS on one thread"},
      {"cpu.triad_gbs", "GB/s", Better::higher, Scope::rank, true,
       "memory bandwidth of one rank, STREAM triad a = b + s c on host arrays well beyond the caches"},
      {"gpu.dgemm_gflops", "GFLOP/s", Better::higher, Scope::rank, true, "cuBLAS DGEMM rate of the rank's GPU"},
      {"gpu.sgemm_gflops", "GFLOP/s", Better::higher, Scope::rank, true, "cuBLAS SGEMM rate of the rank's GPU"},
      {"gpu.triad_gbs", "GB/s", Better::higher, Scope::rank, true,
       "device memory bandwidth of the rank's GPU, triad kernel on device arrays"},
      {"nccl.allreduce_busbw_gbs", "GB/s", Better::higher, Scope::job, false,
       "NCCL all-reduce bus bandwidth over every rank's GPU (nccl-tests: algbw * 2 (n - 1) / n)"},
      {"mpi.latency_us", "us", Better::lower, Scope::pair, true, "MPI ping-pong latency of 8-byte messages, one way"},
      {"mpi.bandwidth_gbs", "GB/s", Better::higher, Scope::pair, true,
       "MPI bandwidth of large messages, one direction"},
      {"disk.write_mbs", "MB/s", Better::higher, Scope::node, true,
       "write bandwidth into the checkpoint directory, fsync included"},
      {"disk.fsync_ms", "ms", Better::lower, Scope::node, true, "time of a 4 KiB write and its fsync"},
      {"disk.free_gib", "GiB", Better::higher, Scope::node, false,
       "free space in the checkpoint directory's file system"},
  };
  return specs;
}

const FigureSpec* find_figure(const std::string& name) {
  for (const auto& s : figure_specs())
    if (s.name == name) return &s;
  return nullptr;
}

std::string format_value(double v) {
  return significant(v, 4);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<Verdict> compare_with_peers(const std::vector<Measurement>& measurements, double slow_factor) {
  std::vector<Verdict> out;
  for (std::size_t i = 0; i < measurements.size(); ++i) {
    const Measurement& m = measurements[i];
    const FigureSpec* spec = find_figure(m.figure);
    if (!spec || !spec->compare_peers) continue;
    std::vector<double> peers;
    for (std::size_t j = 0; j < measurements.size(); ++j)
      if (j != i && measurements[j].figure == m.figure) peers.push_back(measurements[j].value);
    if (peers.empty()) continue;
    const double mid = median(peers);
    const bool higher = spec->better == Better::higher;
    const double limit = higher ? slow_factor * mid : mid / slow_factor;
    if (higher ? !(m.value < limit) : !(m.value > limit)) continue;
    Verdict v;
    v.kind = "slow";
    v.figure = m.figure;
    v.subject = m.subject;
    v.hosts = m.hosts;
    v.rank = m.rank;
    v.value = m.value;
    v.reference = limit;
    v.message = m.subject + ": " + m.figure + " = " + format_value(m.value) + " " + spec->unit + (higher ? ", below " : ", above ") +
                format_value(limit) + " " + spec->unit + " (" + (higher ? format_value(slow_factor) : "1/" + format_value(slow_factor)) +
                " x the median of its " + std::to_string(peers.size()) + (peers.size() == 1 ? " peer, " : " peers, ") +
                format_value(mid) + " " + spec->unit + ")";
    out.push_back(std::move(v));
  }
  return out;
}

Expectations parse_expectations(const std::string& json_text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(where + ": not JSON: " + e.what());
  }
  if (!j.is_object())
    throw InputError(where + ": expected a JSON object of figure names and numbers, e.g. {\"cpu.dgemm_gflops\": 20}");
  Expectations out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!find_figure(it.key())) {
      std::string known;
      for (const auto& s : figure_specs()) known += (known.empty() ? "" : ", ") + s.name;
      throw InputError(where + ": '" + it.key() + "' is not a figure of spotrun doctor; figures: " + known);
    }
    if (!it.value().is_number() || !std::isfinite(it.value().get<double>()))
      throw InputError(where + ": '" + it.key() + "' must be a number");
    out[it.key()] = it.value().get<double>();
  }
  return out;
}

std::vector<Verdict> compare_with_expected(const std::vector<Measurement>& measurements, const Expectations& expected) {
  std::vector<Verdict> out;
  for (const auto& m : measurements) {
    const auto e = expected.find(m.figure);
    const FigureSpec* spec = find_figure(m.figure);
    if (e == expected.end() || !spec) continue;
    const bool higher = spec->better == Better::higher;
    if (higher ? !(m.value < e->second) : !(m.value > e->second)) continue;
    Verdict v;
    v.kind = "expected";
    v.figure = m.figure;
    v.subject = m.subject;
    v.hosts = m.hosts;
    v.rank = m.rank;
    v.value = m.value;
    v.reference = e->second;
    v.message = m.subject + ": " + m.figure + " = " + format_value(m.value) + " " + spec->unit +
                (higher ? ", below the expected minimum " : ", above the expected maximum ") + format_value(e->second) +
                " " + spec->unit;
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::string> failing_hosts(const std::vector<Verdict>& verdicts) {
  std::set<std::string> named;
  std::map<std::string, int> in_pairs;
  std::vector<const Verdict*> pairs;
  for (const auto& v : verdicts) {
    const FigureSpec* spec = find_figure(v.figure);
    if (v.kind != "broken" && spec && spec->scope == Scope::pair && v.hosts.size() == 2) {
      pairs.push_back(&v);
      for (const auto& h : v.hosts) ++in_pairs[h];
    } else {
      named.insert(v.hosts.begin(), v.hosts.end());
    }
  }
  for (const Verdict* v : pairs) {
    const int a = in_pairs[v->hosts[0]], b = in_pairs[v->hosts[1]];
    if (a >= b) named.insert(v->hosts[0]);
    if (b >= a) named.insert(v->hosts[1]);
  }
  return {named.begin(), named.end()};
}

double allreduce_bus_bandwidth(double algbw, int nranks) {
  return nranks > 0 ? algbw * 2.0 * (nranks - 1) / nranks : 0.0;
}

}  // namespace spotrun::doctor
