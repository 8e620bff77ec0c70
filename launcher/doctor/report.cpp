#include "report.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace spotrun::doctor {

namespace {

using nlohmann::json;

constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;
constexpr double k_mib = 1024.0 * 1024.0;

std::string rank_subject(const RankResult& r) { return "rank " + std::to_string(r.rank) + " (host " + r.host + ")"; }

std::string pair_subject(const PairResult& p) {
  if (p.intra_node)
    return "ranks " + std::to_string(p.rank_a) + " and " + std::to_string(p.rank_b) + " (host " + p.host_a + ", intra-node)";
  return "nodes " + p.host_a + " and " + p.host_b + " (ranks " + std::to_string(p.rank_a) + " and " +
         std::to_string(p.rank_b) + ")";
}

std::string disk_subject(const DiskResult& d) { return "node " + d.host + " (rank " + std::to_string(d.rank) + ")"; }

// Bytes in the largest binary unit that leaves at least 1 ("520 KiB", "1.5 GiB").
std::string gib(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return format_value(bytes) + " " + units[u];
}

// A figure's value for the table, or "-".
std::string cell(const std::map<std::string, double>& figures, const std::string& name) {
  const auto it = figures.find(name);
  return it == figures.end() ? "-" : format_value(it->second);
}

json figures_json(const std::map<std::string, double>& figures) {
  json j = json::object();
  for (const auto& [k, v] : figures) j[k] = v;
  return j;
}

std::string pad(const std::string& s, std::size_t width) { return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' '); }

}  // namespace

std::vector<Measurement> measurements(const Report& report) {
  std::vector<Measurement> out;
  auto add = [&out](const std::map<std::string, double>& figures, const std::string& subject,
                    const std::vector<std::string>& hosts, int rank) {
    for (const auto& spec : figure_specs()) {
      const auto it = figures.find(spec.name);
      if (it != figures.end()) out.push_back({spec.name, it->second, subject, hosts, rank});
    }
  };
  for (const auto& r : report.per_rank) add(r.figures, rank_subject(r), {r.host}, r.rank);
  for (const auto& p : report.pairs) add(p.figures, pair_subject(p), {p.host_a, p.host_b}, -1);
  add(report.nccl.figures, "the job (every rank's GPU)", {}, -1);
  for (const auto& d : report.disks) add(d.figures, disk_subject(d), {d.host}, -1);
  return out;
}

std::vector<Verdict> broken_verdicts(const Report& report) {
  std::vector<Verdict> out;
  auto add = [&out](const std::string& subject, const std::vector<std::string>& hosts, int rank, const std::string& what) {
    Verdict v;
    v.kind = "broken";
    v.subject = subject;
    v.hosts = hosts;
    v.rank = rank;
    v.message = subject + ": " + what;
    out.push_back(std::move(v));
  };
  for (const auto& r : report.per_rank)
    for (const auto& e : r.errors) add(rank_subject(r), {r.host}, r.rank, e);
  for (const auto& d : report.disks) {
    if (!d.error.empty()) {
      add(disk_subject(d), {d.host}, -1, d.error);
      continue;
    }
    const auto free = d.figures.find("disk.free_gib");
    if (report.needed_bytes > 0 && free != d.figures.end() && free->second * k_gib < report.needed_bytes) {
      add(disk_subject(d), {d.host}, -1,
          "too little free space in " + report.directory + ": " + gib(free->second * k_gib) + " free, the run needs " +
              gib(report.needed_bytes) + " (checkpoint.keep + 1 = " + std::to_string(report.checkpoint_keep + 1) +
              " checkpoints of " + gib(report.checkpoint_bytes) + ")");
      out.back().figure = "disk.free_gib";
      out.back().value = free->second;
      out.back().reference = report.needed_bytes / k_gib;
    }
  }
  return out;
}

std::vector<Verdict> missing_expected(const Report& report) {
  std::vector<Verdict> out;
  auto add = [&out](const std::string& figure, const std::string& subject, const std::vector<std::string>& hosts, int rank,
                    const std::string& why) {
    Verdict v;
    v.kind = "expected";
    v.figure = figure;
    v.subject = subject;
    v.hosts = hosts;
    v.rank = rank;
    v.message = subject + ": " + figure + " was not measured" + (why.empty() ? "" : " (" + why + ")") +
                ", but --expect gives it a limit";
    out.push_back(std::move(v));
  };
  for (const auto& [figure, limit] : report.expected) {
    const FigureSpec* spec = find_figure(figure);
    if (!spec) continue;
    switch (spec->scope) {
      case Scope::rank:
        for (const auto& r : report.per_rank)
          if (!r.figures.count(figure))
            add(figure, rank_subject(r), {r.host}, r.rank, figure.rfind("gpu.", 0) == 0 ? r.gpu : figure == "cpu.dgemm_gflops" ? r.blas : "");
        break;
      case Scope::pair:
        if (report.pairs.empty()) add(figure, "the job", {}, -1, report.mpi_note);
        for (const auto& p : report.pairs)
          if (!p.figures.count(figure)) add(figure, pair_subject(p), {p.host_a, p.host_b}, -1, "");
        break;
      case Scope::node:
        for (const auto& d : report.disks)
          if (!d.figures.count(figure) && d.error.empty()) add(figure, disk_subject(d), {d.host}, -1, "");
        break;
      case Scope::job:
        if (!report.nccl.figures.count(figure)) add(figure, "the job (every rank's GPU)", {}, -1, report.nccl.status);
        break;
    }
  }
  return out;
}

void judge(Report& report) {
  report.verdicts = broken_verdicts(report);
  const auto m = measurements(report);
  for (auto& v : compare_with_peers(m, report.slow_factor)) report.verdicts.push_back(std::move(v));
  for (auto& v : compare_with_expected(m, report.expected)) report.verdicts.push_back(std::move(v));
  for (auto& v : missing_expected(report)) report.verdicts.push_back(std::move(v));
  report.failing = failing_hosts(report.verdicts);
  report.healthy = report.verdicts.empty();
  report.exit_code = report.healthy ? 0 : 1;
}

std::string to_json(const Report& report) {
  json j;
  j["spotrun_doctor"] = k_report_schema;
  j["version"] = report.version;
  j["git"] = report.git_hash;
  j["healthy"] = report.healthy;
  j["exit_code"] = report.exit_code;
  j["failing_hosts"] = report.failing;
  j["ranks"] = report.ranks;
  j["nodes"] = report.nodes;
  j["quick"] = report.quick;
  j["sizes"] = figures_json(report.sizes);
  j["slow_factor"] = report.slow_factor;
  j["expected"] = figures_json(report.expected);
  json ranks = json::array();
  for (const auto& r : report.per_rank)
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"node", r.node},
                     {"local_rank", r.local_rank},
                     {"figures", figures_json(r.figures)},
                     {"blas", r.blas},
                     {"gpu", r.gpu},
                     {"errors", r.errors}});
  j["per_rank"] = ranks;
  json pairs = json::array();
  for (const auto& p : report.pairs)
    pairs.push_back({{"ranks", {p.rank_a, p.rank_b}},
                     {"hosts", {p.host_a, p.host_b}},
                     {"kind", p.intra_node ? "intra-node" : "inter-node"},
                     {"figures", figures_json(p.figures)}});
  j["mpi"] = {{"pairs", pairs}, {"note", report.mpi_note}};
  j["nccl"] = {{"status", report.nccl.status},
               {"broken", report.nccl.broken},
               {"bytes", report.nccl.bytes},
               {"figures", figures_json(report.nccl.figures)}};
  json disks = json::array();
  for (const auto& d : report.disks)
    disks.push_back({{"rank", d.rank},
                     {"host", d.host},
                     {"figures", figures_json(d.figures)},
                     {"written_bytes", d.written_bytes},
                     {"error", d.error}});
  j["disk"] = {{"directory", report.directory},
               {"checkpoint_bytes", report.checkpoint_bytes},
               {"checkpoint", report.checkpoint_what},
               {"checkpoint_keep", report.checkpoint_keep},
               {"needed_bytes", report.needed_bytes},
               {"nodes", disks}};
  json verdicts = json::array();
  for (const auto& v : report.verdicts) {
    json jv = {{"kind", v.kind}, {"figure", v.figure}, {"subject", v.subject}, {"hosts", v.hosts},
               {"rank", v.rank}, {"message", v.message}};
    if (!v.figure.empty()) {
      jv["value"] = v.value;
      jv["reference"] = v.reference;
    }
    verdicts.push_back(jv);
  }
  j["verdicts"] = verdicts;
  return j.dump(2) + "\n";
}

std::string to_table(const Report& report) {
  std::ostringstream o;
  auto size = [&report](const char* key) {
    const auto it = report.sizes.find(key);
    return it == report.sizes.end() ? 0.0 : it->second;
  };
  o << "spotrun doctor: " << report.ranks << (report.ranks == 1 ? " rank" : " ranks") << " on " << report.nodes
    << (report.nodes == 1 ? " node" : " nodes") << ", spotrun " << report.version << " (git " << report.git_hash << ")"
    << (report.quick ? ", quick sizes" : "") << "\n";

  o << "\nCPU, per rank (DGEMM n = " << format_value(size("cpu_dgemm_n")) << " on one thread; triad over 3 arrays of "
    << format_value(size("cpu_triad_bytes_per_array") / k_mib) << " MiB):\n";
  o << "  " << pad("rank", 6) << pad("host", 20) << pad("local", 7) << pad("DGEMM GFLOP/s", 15) << pad("triad GB/s", 12)
    << "GPU\n";
  for (const auto& r : report.per_rank)
    o << "  " << pad(std::to_string(r.rank), 6) << pad(r.host, 20) << pad(std::to_string(r.local_rank), 7)
      << pad(cell(r.figures, "cpu.dgemm_gflops"), 15) << pad(cell(r.figures, "cpu.triad_gbs"), 12) << r.gpu << "\n";
  // The BLAS of rank 0, and of every rank whose differs.
  for (const auto& r : report.per_rank)
    if (r.rank == 0 || r.blas != report.per_rank.front().blas)
      o << "  DGEMM" << (r.rank == 0 ? "" : " of rank " + std::to_string(r.rank)) << ": " << r.blas << "\n";

  bool any_gpu = false;
  for (const auto& r : report.per_rank)
    for (const char* f : {"gpu.dgemm_gflops", "gpu.sgemm_gflops", "gpu.triad_gbs"}) any_gpu = any_gpu || r.figures.count(f);
  if (any_gpu) {
    o << "\nGPU, per rank (cuBLAS n = " << format_value(size("gpu_gemm_n")) << "; triad over 3 arrays of "
      << format_value(size("gpu_triad_bytes_per_array") / k_mib) << " MiB):\n";
    o << "  " << pad("rank", 6) << pad("host", 20) << pad("DGEMM GFLOP/s", 15) << pad("SGEMM GFLOP/s", 15) << "triad GB/s\n";
    for (const auto& r : report.per_rank)
      o << "  " << pad(std::to_string(r.rank), 6) << pad(r.host, 20) << pad(cell(r.figures, "gpu.dgemm_gflops"), 15)
        << pad(cell(r.figures, "gpu.sgemm_gflops"), 15) << cell(r.figures, "gpu.triad_gbs") << "\n";
  }
  o << "\nNCCL all-reduce: ";
  if (report.nccl.status == "measured")
    o << "bus bandwidth " << cell(report.nccl.figures, "nccl.allreduce_busbw_gbs") << " GB/s (algbw "
      << cell(report.nccl.figures, "algbw_gbs") << " GB/s, " << format_value(report.nccl.bytes / k_mib) << " MiB of float, "
      << report.ranks << " ranks)\n";
  else
    o << report.nccl.status << "\n";

  o << "\nMPI (" << format_value(size("mpi_latency_bytes")) << "-byte ping-pong; "
    << format_value(size("mpi_message_bytes") / k_mib) << " MiB messages; one rank per node):\n";
  if (report.pairs.empty()) o << "  " << report.mpi_note << "\n";
  else {
    o << "  " << pad("ranks", 8) << pad("hosts", 32) << pad("kind", 12) << pad("latency us", 12) << "bandwidth GB/s\n";
    for (const auto& p : report.pairs)
      o << "  " << pad(std::to_string(p.rank_a) + "-" + std::to_string(p.rank_b), 8) << pad(p.host_a + " - " + p.host_b, 32)
        << pad(p.intra_node ? "intra-node" : "inter-node", 12) << pad(cell(p.figures, "mpi.latency_us"), 12)
        << cell(p.figures, "mpi.bandwidth_gbs") << "\n";
  }

  o << "\nCheckpoint directory " << report.directory;
  if (report.checkpoint_bytes >= 0)
    o << " (a checkpoint of the deck: " << gib(report.checkpoint_bytes) << ", " << report.checkpoint_what
      << "; the run needs " << gib(report.needed_bytes) << " with checkpoint.keep = " << report.checkpoint_keep << ")";
  o << ":\n";
  o << "  " << pad("host", 20) << pad("rank", 6) << pad("write MB/s", 12) << pad("fsync ms", 10) << pad("free GiB", 10)
    << "written MiB\n";
  for (const auto& d : report.disks) {
    o << "  " << pad(d.host, 20) << pad(std::to_string(d.rank), 6) << pad(cell(d.figures, "disk.write_mbs"), 12)
      << pad(cell(d.figures, "disk.fsync_ms"), 10) << pad(cell(d.figures, "disk.free_gib"), 10)
      << format_value(d.written_bytes / k_mib) << "\n";
    if (!d.error.empty()) o << "    " << d.error << "\n";
  }

  o << "\n";
  if (report.verdicts.empty()) {
    o << "HEALTHY: every figure within limits (slow: below " << format_value(report.slow_factor)
      << " x the median of its peers" << (report.expected.empty() ? "" : "; and the expected values") << ")\n";
  } else {
    o << "Verdicts:\n";
    for (const auto& v : report.verdicts) {
      const std::string label = v.kind == "broken" ? "BROKEN" : v.kind == "slow" ? "SLOW" : "EXPECTED";
      o << "  " << pad(label, 10) << v.message << "\n";
    }
    o << "NOT HEALTHY (exit " << report.exit_code << ")";
    if (!report.failing.empty()) {
      o << ": failing hosts:";
      for (const auto& h : report.failing) o << " " << h;
    }
    o << "\n";
  }
  return o.str();
}

DoctorSummary read_doctor_summary(const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(std::string("not a spotrun doctor report (not JSON): ") + e.what());
  }
  if (!j.is_object() || !j.contains("spotrun_doctor") || !j["spotrun_doctor"].is_number_integer())
    throw std::runtime_error("not a spotrun doctor report (no \"spotrun_doctor\" key)");
  if (j["spotrun_doctor"].get<int>() != k_report_schema)
    throw std::runtime_error("a spotrun doctor report of schema " + std::to_string(j["spotrun_doctor"].get<int>()) +
                             ", this spotrun reads schema " + std::to_string(k_report_schema));
  DoctorSummary s;
  try {
    s.healthy = j.at("healthy").get<bool>();
    s.exit_code = j.at("exit_code").get<int>();
    s.failing_hosts = j.at("failing_hosts").get<std::vector<std::string>>();
    for (const auto& v : j.at("verdicts")) s.problems.push_back(v.at("message").get<std::string>());
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("a damaged spotrun doctor report: ") + e.what());
  }
  return s;
}

DoctorSummary read_doctor_summary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the spotrun doctor report '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return read_doctor_summary(text.str());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace spotrun::doctor
