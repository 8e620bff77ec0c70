#include "recorder.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "io/run_directory.hpp"

namespace fs = std::filesystem;

namespace spotrun::report {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// When this program was loaded (seconds since 1970): set while the shared libraries are initialised,
// after exec and before main(). Not the process's start in /proc/self/stat, which is its fork: a script
// that execs spotrun (quickstart.sh, batch scripts) would count its own time before the exec as set-up.
const double g_loaded_unix = unix_now();

bool read_text(const fs::path& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

std::vector<CheckpointFileInfo> checkpoint_files(const std::string& outdir) {
  std::vector<CheckpointFileInfo> files;
  for (const io::CheckpointName& c : io::list_checkpoints(outdir))
    files.push_back({std::string(io::k_checkpoint_dir) + "/" + c.file_name(), c.step});
  for (const io::CheckpointName& c : io::list_finals(outdir)) files.push_back({c.file_name(), -1});
  return files;
}

std::vector<Attempt> read_ledger(const std::string& outdir, std::vector<std::string>& warnings, bool& found) {
  std::string text;
  const fs::path path = fs::path(outdir) / k_ledger_name;
  found = read_text(path, text);
  return found ? parse_ledger(text, path.string(), warnings) : std::vector<Attempt>{};
}

}  // namespace

nlohmann::json load_report(const std::string& outdir, std::vector<std::string>& warnings, bool& found) {
  const auto attempts = read_ledger(outdir, warnings, found);
  return derive(attempts, checkpoint_files(outdir), outdir);
}

// A lost attempt (the latest of the ledger) up to its last heartbeat (OUTDIR/heartbeats/<host>.json,
// launcher/run/heartbeat.hpp; written in the time loop, and this attempt writes its own only after this): its
// end the newest heartbeat written since it started, its end step the highest step one reported. The time
// added counts as idle time.
static void extend_by_heartbeats(Attempt& a, const std::string& outdir) {
  double last = -1;
  std::int64_t step = -1;
  for (const io::HeartbeatRecord& b : io::read_heartbeats(outdir)) {
    if (b.unix < 0 || b.step < 0) continue;  // no time, or before the time loop
    if (b.unix < a.start_unix) continue;      // an earlier attempt's
    last = std::max(last, b.unix);
    step = std::max(step, b.step);
  }
  if (last > a.end_unix) {
    const double added = last - a.end_unix;
    a.end_unix = last;
    a.parts.wall += added;
    a.parts.idle += added;
    for (auto& w : a.wall_per_rank) w += added;
  }
  if (step > a.end_step) a.end_step = step;
}

RunRecorder::RunRecorder(const comm::Communicator& comm, const RecorderSettings& settings, const std::string& outdir,
                         double start_wtime, const TimedTransport& transport)
    : m_comm(comm), m_outdir(outdir), m_start_wtime(start_wtime), m_transport(transport) {
  // The process started before MPI_Init (start_wtime): that time counts as set-up (tick resolution).
  const double started = g_loaded_unix;
  const double at_start_wtime = unix_now() - (MPI_Wtime() - start_wtime);
  if (started > 0 && at_start_wtime > started && at_start_wtime - started < 3600) m_before_start = at_start_wtime - started;
  m_devices = comm::gather_devices(comm);  // collective; every rank gets every rank's
  // The node-local rank 0 of a node whose ranks have GPUs samples them.
  bool node_has_gpu = false;
  int my_node = 0;
  for (const auto& d : m_devices)
    if (d.rank == comm.rank()) my_node = d.node;
  for (const auto& d : m_devices) node_has_gpu = node_has_gpu || (d.node == my_node && d.gpu >= 0);
  m_sampler = std::make_unique<GpuSampler>(comm.local_rank() == 0 && node_has_gpu, settings.sample_seconds);
  const auto statuses = comm.all_gather(comm.local_rank() == 0 ? m_sampler->status() : std::string());
  if (!comm.is_root()) return;

  std::set<std::string> sampler_lines;
  for (const auto& s : statuses)
    if (!s.empty()) sampler_lines.insert(s);
  std::string gpu_line;
  for (const auto& s : sampler_lines) gpu_line += (gpu_line.empty() ? "" : "; ") + s;
  m_header = "Run report: " + (fs::path(outdir) / k_report_name).string() + " (every attempt in " + k_ledger_name +
             "); GPU sampling: " + (node_has_gpu || sampler_lines.size() > 1 ? gpu_line : std::string("no GPU"));

  std::vector<std::string> warnings;
  bool found = false;
  m_attempts = read_ledger(outdir, warnings, found);
  for (auto& a : m_attempts)
    if (a.state == "running") {
      a.state = "lost";
      a.exit_cause = "lost: no end record";
      if (&a == &m_attempts.back()) extend_by_heartbeats(a, outdir);
    }
  std::string text;
  const fs::path report_path = fs::path(outdir) / k_report_name;
  if (read_text(report_path, text)) {
    const std::string why = check_report_text(text, m_attempts.size());
    if (!why.empty())
      warnings.push_back(report_path.string() + " is damaged (" + why + "): rebuilt from " +
                         (fs::path(outdir) / k_ledger_name).string() + " and the checkpoint files");
  } else if (!m_attempts.empty() && m_attempts.back().state == "ended") {
    warnings.push_back(report_path.string() + " is missing: rebuilt from " + (fs::path(outdir) / k_ledger_name).string() +
                       " and the checkpoint files");
  }
  for (const auto& w : warnings) std::fprintf(stderr, "WARNING: run report: %s\n", w.c_str());

  Attempt a;
  a.number = static_cast<int>(m_attempts.size()) + 1;
  a.state = "running";
  // Until the time loop starts (loop_started) the attempt is where the previous one ended: an attempt lost
  // while it starts up (killed before it has read its checkpoint) then records no steps, not the whole run.
  if (!m_attempts.empty()) a.start_step = a.end_step = m_attempts.back().end_step;
  a.start_unix = at_start_wtime - m_before_start;
  a.end_unix = unix_now();
  std::set<std::string> hosts;
  std::set<std::pair<std::string, std::string>> gpus;
  for (const auto& d : m_devices) {
    if (hosts.insert(d.host).second) a.hosts.push_back(d.host);
    if (d.gpu >= 0) gpus.insert({d.host, d.uuid.empty() ? std::to_string(d.gpu) : d.uuid});
  }
  a.ranks = comm.size();
  a.launch_attempt = settings.launch_attempt;
  a.gpus = static_cast<int>(gpus.size());
  a.exit_cause = "running";
  a.price_per_gpu_hour = settings.price_per_gpu_hour;
  a.on_demand_price_per_gpu_hour = settings.on_demand_price_per_gpu_hour;
  a.min_gpu_utilisation = settings.min_gpu_utilisation;
  a.every_steps = settings.every_steps;
  a.every_seconds = settings.every_seconds;
  a.auto_interval = settings.auto_interval;
  a.mtbf = settings.mtbf;
  m_attempts.push_back(a);
  // The ledger only: report.json follows at the first checkpoint (it takes room the run's outputs may need).
  write_files(false);
}

RunRecorder::~RunRecorder() {
  // An error ended the run (no finish()): the root records it without any collective.
  if (m_finished || !m_comm.is_root() || m_attempts.empty()) return;
  Attempt& a = m_attempts.back();
  a.state = "ended";
  a.exit_code = 1;
  a.exit_cause = "failed: an error ended the run (see its log)";
  a.end_unix = unix_now();
  a.parts.wall = MPI_Wtime() - m_start_wtime + m_before_start;
  a.parts.idle = std::max(0.0, a.parts.wall - a.parts.setup - a.parts.compute - a.parts.communication - a.parts.checkpoint);
  try {
    write_files();
  } catch (...) {
  }
}

void RunRecorder::loop_started(double now, std::int64_t step, const std::string& resumed_from) {
  m_loop_start = now;
  m_transport_at_loop = m_transport.seconds();
  if (m_comm.is_root()) {
    m_attempts.back().start_step = m_attempts.back().end_step = step;
    m_attempts.back().resumed_from = resumed_from;
  }
}

bool RunRecorder::checkpoint(std::int64_t step, const char* reason, const std::function<bool()>& write) {
  const double t = MPI_Wtime(), moved = m_transport.seconds();
  const bool ok = write();
  const double local = MPI_Wtime() - t;
  m_checkpoint_seconds += local;
  m_transport_in_checkpoints += m_transport.seconds() - moved;  // a solver's state() may exchange data
  const double seconds = m_comm.max(local);
  if (m_comm.is_root())
    m_attempts.back().checkpoints.push_back({step, MPI_Wtime() - m_start_wtime, seconds, reason, ok});
  update(step);
  return ok;
}

void RunRecorder::checkpoint_levels(std::int64_t step, const std::string& levels, const std::string& durable) {
  if (!m_comm.is_root() || m_attempts.empty()) return;
  auto& cps = m_attempts.back().checkpoints;
  for (auto it = cps.rbegin(); it != cps.rend(); ++it) {
    if (it->step != step) continue;
    if (!levels.empty()) it->levels = levels;
    if (!durable.empty()) it->durable = durable;
    write_files();
    return;
  }
}

void RunRecorder::update(std::int64_t step) {
  // Every rank's parts (means over the ranks), CPU times and each node's GPU figures, to the root.
  const double wall = MPI_Wtime() - m_start_wtime + m_before_start;
  const double now_unix = unix_now();  // the root's end: the same instant as its own wall time
  const bool looped = m_loop_start >= 0;
  const double setup = looped ? m_loop_start - m_start_wtime + m_before_start : wall;
  const double communication =
      looped ? m_transport.seconds() - m_transport_at_loop - m_transport_in_checkpoints + m_agreement_seconds : 0;
  double v[6] = {wall, setup, m_steps_seconds - m_transport_in_steps, communication, m_checkpoint_seconds,
                 m_steps_seconds};
  m_comm.sum_in_place(v, 6);
  const std::vector<std::int64_t> cpu_and_wall_us = m_comm.all_gather(std::vector<std::int64_t>{
      static_cast<std::int64_t>(cpu_seconds() * 1e6), static_cast<std::int64_t>(wall * 1e6)});
  const auto gpu_texts = m_comm.all_gather(m_comm.local_rank() == 0 ? encode_gpu_stats(m_sampler->snapshot()) : "");
  if (!m_comm.is_root()) return;
  const double n = m_comm.size();
  Attempt& a = m_attempts.back();
  a.end_unix = now_unix;
  a.end_step = step;
  a.parts.wall = v[0] / n;
  a.parts.setup = v[1] / n;
  a.parts.compute = v[2] / n;
  a.parts.communication = v[3] / n;
  a.parts.checkpoint = v[4] / n;
  a.parts.idle = a.parts.wall - a.parts.setup - a.parts.compute - a.parts.communication - a.parts.checkpoint;
  a.loop_steps_seconds = v[5] / n;
  a.cpu_seconds.clear();
  a.wall_per_rank.clear();
  for (std::size_t k = 0; k + 1 < cpu_and_wall_us.size(); k += 2) {
    a.cpu_seconds.push_back(static_cast<double>(cpu_and_wall_us[k]) * 1e-6);
    a.wall_per_rank.push_back(static_cast<double>(cpu_and_wall_us[k + 1]) * 1e-6);
  }
  // Each rank's GPU: its node's samples of the device with its UUID (a MIG instance: its GPU's bus).
  a.gpu.clear();
  for (const auto& d : m_devices) {
    if (d.gpu < 0) continue;
    for (int r = 0; r < static_cast<int>(gpu_texts.size()); ++r) {
      if (m_devices[static_cast<std::size_t>(r)].node != d.node || gpu_texts[static_cast<std::size_t>(r)].empty()) continue;
      for (const auto& s : decode_gpu_stats(gpu_texts[static_cast<std::size_t>(r)])) {
        if (s.uuid != d.uuid && !same_pci_bus(s.pci_bus_id, d.pci_bus_id)) continue;
        GpuRecord g;
        g.rank = d.rank;
        g.host = d.host;
        g.uuid = d.uuid;
        g.samples = s.samples;
        if (s.samples > 0) {
          g.util_mean = s.util_sum / s.samples;
          g.util_min = s.util_min;
          g.memory_max_bytes = s.memory_max_bytes;
          g.power_mean_watts = s.power_sum_watts / s.samples;
          g.sm_clock_mean_mhz = s.sm_clock_sum_mhz / s.samples;
        }
        a.gpu.push_back(g);
        break;
      }
    }
  }
  write_files();
}

void RunRecorder::write_files(bool with_report) {
  std::string error = io::replace_file((fs::path(m_outdir) / k_ledger_name).string(), ledger_text(m_attempts));
  if (error.empty() && with_report) {
    const auto report = derive(m_attempts, checkpoint_files(m_outdir), m_outdir);
    error = io::replace_file((fs::path(m_outdir) / k_report_name).string(), report.dump(2) + "\n");
  }
  if (!error.empty() && !m_write_warned)
    std::fprintf(stderr, "WARNING: run report: %s; the run goes on without it\n", error.c_str());
  m_write_warned = m_write_warned || !error.empty();
}

void RunRecorder::finish(int exit_code, const std::string& cause, std::int64_t step) {
  if (m_comm.is_root()) {
    m_attempts.back().state = "ended";
    m_attempts.back().exit_code = exit_code;
    m_attempts.back().exit_cause = cause;
  }
  update(step);
  m_finished = true;
  if (!m_comm.is_root()) return;
  const auto report = derive(m_attempts, checkpoint_files(m_outdir), m_outdir);
  std::printf("%s", summary_text(report).c_str());
  std::fflush(stdout);
}

}  // namespace spotrun::report
