// `spotrun doctor`: the measurements in order, each collective-safe (a failure on one rank is recorded
// as broken, never left to one rank while the others wait), gathered on rank 0 and judged there.
#include "doctor.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "comm/device.hpp"
#include "comm/errors.hpp"
#include "comm/nccl_library.hpp"
#include "comm/probes/probes.hpp"
#include "comm/test_hooks.hpp"
#include "comm/transport.hpp"
#include "io/disk_probe.hpp"
#include "io/input_file.hpp"
#include "launcher/run/memory_check.hpp"
#include "launcher/run/run.hpp"
#include "launcher/run/stop.hpp"
#include "report.hpp"
#include "solvers/registry.hpp"
#include "spotrun/version.hpp"

namespace fs = std::filesystem;

namespace spotrun::doctor {

namespace {

// Why the NCCL all-reduce cannot be measured for want of NCCL (not compiled in, or libnccl.so.2 not
// loadable on some rank, named), or "". Collective.
std::string nccl_unusable(const comm::Communicator& comm) {
  if (!k_have_nccl) return comm::nccl_library().error;
  return comm::nccl_missing_on_any_rank(comm);
}

using nlohmann::json;

constexpr double k_mib = 1024.0 * 1024.0;
constexpr std::size_t k_expect_max_bytes = 1 << 20;

struct Sizes {
  int cpu_gemm_n = 1024;
  double cpu_min_seconds = 0.3;
  std::size_t cpu_triad_bytes = 64u << 20;  // per array
  int triad_passes = 10;
  int gpu_gemm_n = 4096;
  std::size_t gpu_triad_bytes = 256u << 20;
  std::size_t nccl_bytes = 64u << 20;
  int nccl_iterations = 20;
  probes::MpiSizes mpi;
  io::DiskSizes disk;
};

// A flag of the environment: set, not empty and not "0".
bool env_flag(const std::string& value) { return !value.empty() && value != "0"; }

// The last level cache one core sees, in bytes: sysfs (one instance, e.g. one CCD's L3), else sysconf
// (which may report a whole socket, or the host's under a hypervisor), else 32 MiB.
double last_level_cache_bytes() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string text;
  if (in >> text && !text.empty()) {
    try {
      const long n = std::stol(text);
      const long unit = text.back() == 'K' ? 1024L : text.back() == 'M' ? 1024L * 1024L : 1L;
      if (n > 0) return static_cast<double>(n) * unit;
    } catch (...) {
    }
  }
  const long bytes = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  return bytes > 0 ? static_cast<double>(bytes) : 32.0 * k_mib;
}

// Each triad array 4 x the last level cache, between 32 and 512 MiB; the node's ranks together use at
// most a quarter of its available memory.
std::size_t triad_bytes(const comm::Communicator& comm) {
  double bytes = std::clamp(4.0 * last_level_cache_bytes(), 32.0 * k_mib, 512.0 * k_mib);
  const double available = launcher::available_memory_bytes();
  if (available > 0) bytes = std::min(bytes, available / 4 / (3.0 * comm.local_size()));
  return static_cast<std::size_t>(std::max(bytes, 1.0 * k_mib));
}

Sizes choose_sizes(const comm::Communicator& comm, bool quick) {
  Sizes s;
  s.cpu_triad_bytes = triad_bytes(comm);
  if (!quick) return s;
  s.cpu_gemm_n = 256;
  s.cpu_min_seconds = 0.05;
  s.cpu_triad_bytes = std::min<std::size_t>(s.cpu_triad_bytes, 16u << 20);
  s.triad_passes = 5;
  s.gpu_gemm_n = 1024;
  s.gpu_triad_bytes = 16u << 20;
  s.nccl_bytes = 4u << 20;
  s.nccl_iterations = 5;
  s.mpi = {100, 1u << 20, 4, 2, 2};
  s.disk = {16u << 20, 3, 5};
  return s;
}

// The rank the test hook TestHooks::doctor_slow_rank names (spotrun-test: SPOTRUN_DOCTOR_SLOW_RANK), or -1
// when none is installed; InputError on every rank when it is not a rank of this run.
int slow_rank_of_hook(const comm::Communicator& comm) {
  const auto& hook = comm::test_hooks().doctor_slow_rank;
  const std::string value = hook ? hook() : std::string();
  const char* v = value.c_str();
  if (!*v) return -1;
  int rank = -1;
  try {
    std::size_t used = 0;
    rank = std::stoi(v, &used);
    if (used != std::string(v).size()) rank = -1;
  } catch (...) {
    rank = -1;
  }
  comm.agree<InputError>(rank >= 0 && rank < comm.size(), "SPOTRUN_DOCTOR_SLOW_RANK='" + std::string(v) +
                                                              "' is not a rank of this run (0 to " +
                                                              std::to_string(comm.size() - 1) + ")");
  return rank;
}

// Creates `dir` with its missing parents; returns the ones it created, deepest first, or sets `error`.
std::vector<fs::path> make_directory(const std::string& dir, std::string& error) {
  std::vector<fs::path> created;
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) {
    error = "cannot resolve " + dir + ": " + ec.message();
    return created;
  }
  for (fs::path q = p; !q.empty() && !fs::exists(q, ec); q = q.parent_path()) {
    created.push_back(q);
    if (q == q.parent_path()) break;
  }
  fs::create_directories(p, ec);
  if (ec) {
    error = "cannot create " + dir + ": " + ec.message();
    created.clear();
  } else if (!fs::is_directory(p, ec)) {
    error = dir + " is not a directory";
    created.clear();
  }
  return created;
}

// What one rank measured, as JSON for the gather.
json rank_json(const RankResult& r, const std::vector<probes::PairFigures>& pairs, const DiskResult* disk) {
  json j = {{"figures", r.figures}, {"blas", r.blas}, {"gpu", r.gpu}, {"errors", r.errors}};
  json jp = json::array();
  for (const auto& p : pairs) jp.push_back({{"a", p.rank_a}, {"b", p.rank_b}, {"figures", p.figures}});
  j["pairs"] = jp;
  if (disk)
    j["disk"] = {{"figures", disk->figures}, {"written", disk->written_bytes}, {"error", disk->error}};
  return j;
}

// The deck's checkpoint: its size, what it holds, and checkpoint.keep.
struct CheckpointNeed {
  double bytes = -1;
  std::string what;
  int keep = 0;
};

CheckpointNeed checkpoint_need(const comm::Communicator& comm, const launcher::Deck& deck, const std::string& deck_path) {
  CheckpointNeed need;
  const solvers::SolverRegistration& solver = solvers::solver_named(deck.get_string("run.solver"), deck.name());
  double units = solver.deck_work_units ? solver.deck_work_units(deck) : -1;
  if (units < 0) {
    // The size is in the solver's inputs (a LAMMPS data file): read them as a fresh run does.
    auto transport = comm::make_transport("mpi-host", comm);
    const solvers::SolverContext ctx{comm, *transport, deck, deck_path, [&comm](double bytes, const std::string& what) {
                                       launcher::check_memory_fits(comm, bytes, what);
                                     }};
    units = solver.read_inputs(ctx).work_units;
  }
  need.keep = static_cast<int>(deck.get_int("checkpoint.keep"));
  if (units < 0) return need;
  const double per_unit = solver.checkpoint_bytes_per_work_unit(deck);
  need.bytes = units * per_unit;
  need.what = "solver " + solver.name + ": " + format_value(units) + " work units x " + format_value(per_unit) + " bytes";
  return need;
}

// Everything the command line names, read before any measurement: bad usage ends here, exit 2.
void read_inputs(const comm::Communicator& comm, const DoctorOptions& o, Report& report) {
  if (!o.expect_path.empty())
    report.expected = parse_expectations(io::read_input_file(comm, o.expect_path, "expect file", k_expect_max_bytes),
                                         o.expect_path);
  report.directory = o.output_dir;
  if (!o.deck_path.empty()) {
    const launcher::Deck deck = launcher::load_deck(comm, o.deck_path, o.sets);
    if (report.directory.empty()) report.directory = deck.get_string("run.output_dir");
    if (report.directory.empty()) report.directory = (fs::path("runs") / fs::path(o.deck_path).stem()).string();
    const CheckpointNeed need = checkpoint_need(comm, deck, o.deck_path);
    report.checkpoint_bytes = need.bytes;
    report.checkpoint_what = need.what;
    report.checkpoint_keep = need.keep;
    // The newest `keep` checkpoints stay while the next one is written (or final.h5 at the end).
    if (need.bytes >= 0) report.needed_bytes = need.bytes * (need.keep + 1);
  }
  if (report.directory.empty()) report.directory = "runs/doctor";
  if (!o.json_path.empty()) {
    // The report file must be writable before minutes are spent measuring; emptied, so that a job that
    // dies on the way never leaves the report of an earlier run behind.
    std::string error;
    if (comm.is_root()) {
      std::ofstream probe(o.json_path, std::ios::trunc);
      if (!probe) error = "--json: cannot write '" + o.json_path + "'";
    }
    comm.agree<InputError>(error.empty(), error);
  }

}

// NCCL over every rank's GPU, where the build, the ranks and the GPUs allow it.
// timeout_text: SPOTRUN_NCCL_TIMEOUT of the environment ("": 60 s).
void measure_nccl(const comm::Communicator& comm, const comm::DeviceInfo& me, const Sizes& sizes,
                  const comm::DeviceReport& device_report, bool gpu_failed_somewhere, const std::string& timeout_text,
                  Report& report, RankResult& mine) {
  if (!k_kokkos_cuda) {
    report.nccl.status = "no GPU (CPU build)";
  } else if (const std::string missing = nccl_unusable(comm); !missing.empty()) {
    report.nccl.status = "not measured: " + missing;
  } else if (comm.size() == 1) {
    report.nccl.status = "not measured: one rank";
  } else if (!device_report.nccl_refusal.empty()) {
    report.nccl.status = "not measured: " + device_report.nccl_refusal + " (NCCL needs a GPU of its own per rank)";
  } else if (gpu_failed_somewhere) {
    report.nccl.status = "not measured: a GPU failed (see the verdicts)";
  } else {
    double timeout = 60;
    if (!timeout_text.empty()) timeout = std::max(1.0, std::atof(timeout_text.c_str()));
    std::string error, own_error;
    const double algbw =
        probes::nccl_allreduce_algbw(comm, me.gpu, sizes.nccl_bytes, sizes.nccl_iterations, timeout, error, own_error);
    if (!own_error.empty()) mine.errors.push_back(own_error);
    report.nccl.bytes = static_cast<double>(sizes.nccl_bytes);
    if (algbw > 0) {
      report.nccl.status = "measured";
      report.nccl.figures["nccl.allreduce_busbw_gbs"] = allreduce_bus_bandwidth(algbw, comm.size());
      report.nccl.figures["algbw_gbs"] = algbw;
    } else {
      report.nccl.status = "failed: " + error;
      report.nccl.broken = true;
    }
  }
}

// The ranks' results (JSON, gathered to rank 0) into the report.
void add_rank_results(const std::vector<std::string>& all, const std::vector<comm::DeviceInfo>& devices, Report& report) {
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    const json j = json::parse(all[static_cast<std::size_t>(r)]);
    const auto& d = devices[static_cast<std::size_t>(r)];
    RankResult rr;
    rr.rank = r;
    rr.host = d.host;
    rr.node = d.node;
    rr.local_rank = d.local_rank;
    rr.figures = j.at("figures").get<std::map<std::string, double>>();
    rr.blas = j.at("blas").get<std::string>();
    rr.gpu = j.at("gpu").get<std::string>();
    rr.errors = j.at("errors").get<std::vector<std::string>>();
    report.per_rank.push_back(rr);
    for (const auto& p : j.at("pairs")) {
      PairResult pr;
      pr.rank_a = p.at("a").get<int>();
      pr.rank_b = p.at("b").get<int>();
      pr.host_a = devices[static_cast<std::size_t>(pr.rank_a)].host;
      pr.host_b = devices[static_cast<std::size_t>(pr.rank_b)].host;
      pr.intra_node = devices[static_cast<std::size_t>(pr.rank_a)].node == devices[static_cast<std::size_t>(pr.rank_b)].node;
      pr.figures = p.at("figures").get<std::map<std::string, double>>();
      report.pairs.push_back(pr);
    }
    if (j.contains("disk")) {
      DiskResult dr;
      dr.rank = r;
      dr.host = d.host;
      dr.figures = j["disk"].at("figures").get<std::map<std::string, double>>();
      dr.written_bytes = j["disk"].at("written").get<double>();
      dr.error = j["disk"].at("error").get<std::string>();
      report.disks.push_back(dr);
    }
  }
}

// The checkpoint directory, from the first rank of every node (leader): rank 0 first makes it (a shared
// directory then exists for the others), then the other nodes, then all write at once.
DiskResult measure_disk(const comm::Communicator& comm, const std::string& directory, const comm::DeviceInfo& me,
                        const Sizes& sizes, bool leader) {
  DiskResult disk;
  disk.rank = comm.rank();
  disk.host = me.host;
  std::vector<fs::path> created;
  std::string dir_error;
  if (comm.is_root()) created = make_directory(directory, dir_error);
  comm.barrier();
  if (leader && !comm.is_root()) created = make_directory(directory, dir_error);
  comm.barrier();
  if (leader) {
    if (dir_error.empty()) {
      const io::DiskProbe probe = io::probe_disk(
          directory, me.host + "-" + std::to_string(comm.rank()) + "-" + std::to_string(::getpid()), sizes.disk);
      disk.figures = probe.figures;
      disk.written_bytes = probe.written_bytes;
      disk.error = probe.error;
    } else {
      disk.error = dir_error;
    }
  }
  comm.barrier();
  std::error_code ec;
  for (const auto& p : created) fs::remove(p, ec);  // only what this rank made, and only if empty

  return disk;
}

}  // namespace

void add_doctor_options(CLI::App& command, DoctorOptions& o) {
  command.add_option("--json", o.json_path, "Write the report as JSON to this file (rank 0)");
  command.add_option("--expect", o.expect_path,
                     "Expected values, a JSON object {\"figure\": limit}: minimum rates, maximum latencies");
  command.add_option("--deck", o.deck_path, "Deck whose checkpoint directory and checkpoint size are checked");
  command.add_option("--set", o.sets, "Override a key of --deck: section.key=value (repeatable)");
  command.add_option("--output-dir", o.output_dir,
                     "Checkpoint directory to check (default: the deck's output directory, else runs/doctor)");
  command.add_flag("--quick", o.quick, "Small sizes (seconds; figures less representative), also SPOTRUN_DOCTOR_QUICK=1");
  command.add_option("--slow-factor", o.slow_factor,
                     "A figure below this times the median of its peers (a latency above the median / this) is slow")
      ->default_val(0.5)
      ->check(CLI::Range(0.01, 0.99));
  command.add_option("--disk-mib", o.disk_mib,
                     "MiB each node writes into the checkpoint directory (default: the deck's checkpoint, else 256)")
      ->check(CLI::Range(0.0625, 65536.0));
}

int run_doctor(const comm::Communicator& comm, const DoctorOptions& o) {
  launcher::set_signal_mode(launcher::SignalMode::exit_now, "spotrun doctor");
  Report report;
  report.version = k_version;
  report.git_hash = k_git_hash;
  report.ranks = comm.size();
  report.nodes = comm.node_count();
  const launcher::Environment& env = o.environment;
  report.quick = o.quick || env_flag(env.doctor_quick);
  report.slow_factor = o.slow_factor;
  const int slow_rank = slow_rank_of_hook(comm);

  read_inputs(comm, o, report);

  const auto devices = comm::gather_devices(comm);
  const comm::DeviceReport device_report = comm::analyse_devices(devices);
  const comm::DeviceInfo& me = devices[static_cast<std::size_t>(comm.rank())];
  Sizes sizes = choose_sizes(comm, report.quick);
  std::set<int> node_ids;
  for (const auto& d : devices) node_ids.insert(d.node);
  const int nodes = static_cast<int>(node_ids.size());
  if (o.disk_mib > 0)
    sizes.disk.bytes = static_cast<std::size_t>(o.disk_mib * k_mib);
  else if (!report.quick && report.checkpoint_bytes >= 0)
    // Each node writes its share of one checkpoint, between 16 MiB and 1 GiB.
    sizes.disk.bytes = static_cast<std::size_t>(std::clamp(report.checkpoint_bytes / nodes, 16 * k_mib, 1024 * k_mib));
  report.sizes = {{"cpu_dgemm_n", sizes.cpu_gemm_n},
                  {"cpu_triad_bytes_per_array", static_cast<double>(sizes.cpu_triad_bytes)},
                  {"gpu_gemm_n", sizes.gpu_gemm_n},
                  {"gpu_triad_bytes_per_array", static_cast<double>(sizes.gpu_triad_bytes)},
                  {"nccl_bytes", static_cast<double>(sizes.nccl_bytes)},
                  {"mpi_latency_bytes", 8},
                  {"mpi_message_bytes", static_cast<double>(sizes.mpi.message_bytes)},
                  {"disk_bytes", static_cast<double>(sizes.disk.bytes)}};

  RankResult mine;
  // A figure is a finite positive number, or the part that measured it failed.
  auto figure = [&mine](const char* name, double value) {
    if (!(value > 0 && std::isfinite(value))) throw std::runtime_error("measured " + format_value(value));
    mine.figures[name] = value;
  };
  const double slow_down = comm.rank() == slow_rank ? k_slow_rank_factor : 1.0;
  auto attempt = [&mine](const std::string& what, const std::function<void()>& f) {
    try {
      f();
    } catch (const std::bad_alloc&) {
      mine.errors.push_back(what + ": out of memory");
    } catch (const std::exception& e) {
      mine.errors.push_back(what + ": " + e.what());
    }
  };

  // CPU: every rank at once, as a run loads them.
  comm.barrier();
  // Without OpenBLAS (a bundle on a node that lacks it) the DGEMM is not measured: said, not broken.
  mine.blas = probes::blas_config(env.openblas_library);
  if (mine.blas.empty())
    mine.blas = "not measured: " + probes::blas_missing(env.openblas_library);
  else
    attempt("CPU DGEMM", [&] {
      figure("cpu.dgemm_gflops", probes::cpu_dgemm_gflops(sizes.cpu_gemm_n, sizes.cpu_min_seconds, slow_down, env.openblas_library));
    });
  comm.barrier();
  attempt("CPU triad", [&] {
    figure("cpu.triad_gbs", probes::cpu_triad_gbs(sizes.cpu_triad_bytes, sizes.triad_passes, slow_down));
  });

  // GPU: every rank on its own GPU, then NCCL over all of them.
  comm.barrier();
  probes::GpuProbe gpu;
  attempt("GPU", [&] { gpu = probes::probe_gpu(sizes.gpu_gemm_n, sizes.gpu_triad_bytes, sizes.cpu_min_seconds); });
  for (const auto& [k, v] : gpu.figures) mine.figures[k] = v;
  for (const auto& e : gpu.errors) mine.errors.push_back(e);
  if (!gpu.status.empty())
    mine.gpu = gpu.status;
  else if (me.gpu >= 0)
    mine.gpu = "GPU " + std::to_string(me.gpu) + " " + me.name + " (" + me.uuid + ")";
  else
    mine.gpu = "no GPU: " + me.none_reason;
  const bool gpu_failed_somewhere = comm.any(!gpu.errors.empty());
  measure_nccl(comm, me, sizes, device_report, gpu_failed_somewhere, env.nccl_timeout, report, mine);

  // MPI between nodes.
  std::vector<int> node_of_rank;
  for (const auto& d : devices) node_of_rank.push_back(d.node);
  const auto rounds = probes::mpi_rounds(node_of_rank);
  const std::vector<probes::PairFigures> pairs = probes::probe_mpi(comm, rounds, sizes.mpi);
  if (rounds.empty()) report.mpi_note = "one rank: no pair of ranks to measure";

  const bool leader = me.node == comm.rank();
  const DiskResult disk = measure_disk(comm, report.directory, me, sizes, leader);

  // Everything to rank 0, which judges and reports; the exit code goes back to every rank.
  const auto all = comm.all_gather(rank_json(mine, pairs, leader ? &disk : nullptr).dump());
  int exit_code = 0;
  std::string write_error;
  if (comm.is_root()) {
    add_rank_results(all, devices, report);
    std::sort(report.pairs.begin(), report.pairs.end(),
              [](const PairResult& a, const PairResult& b) { return std::make_pair(a.rank_a, a.rank_b) < std::make_pair(b.rank_a, b.rank_b); });
    report.nodes = nodes;
    judge(report);
    exit_code = report.exit_code;
    std::fputs(to_table(report).c_str(), stdout);
    std::fflush(stdout);
    if (!o.json_path.empty()) {
      std::ofstream out(o.json_path, std::ios::trunc);
      out << to_json(report);
      out.flush();
      if (!out) write_error = "--json: writing '" + o.json_path + "' failed";
    }
  }
  comm.agree<InputError>(write_error.empty(), write_error);
  int code = exit_code;
  SPOTRUN_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, comm.mpi()));
  return code;
}

}  // namespace spotrun::doctor
