#include "launcher/run/heartbeat.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "comm/device.hpp"
#include "comm/errors.hpp"
#include "io/run_directory.hpp"
#include "launcher/run/fence.hpp"
#include "launcher/run/node_groups.hpp"
#include "launcher/run/run_status.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {
namespace {

double steady_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
void atomic_add(std::atomic<double>& a, double v) {
  double old = a.load();
  while (!a.compare_exchange_weak(old, old + v)) {
  }
}

}  // namespace

double rank_stall_timeout(double fixed, double max_gap, bool untimed_write) {
  if (fixed >= 0) return fixed;
  double t = std::max(120.0, 20.0 * max_gap);
  if (untimed_write) t = std::max(t, 1200.0);
  return t;
}

Heartbeat::Heartbeat(const comm::Communicator& comm, const std::string& outdir, const std::string& launch_attempt,
                     const std::optional<std::string>& stall_timeout) {
  m_rank = comm.rank();
  m_host = comm::host_name();  // MPI_Get_processor_name: here, on the thread that may call MPI
  // One writer per host name (the lowest rank of each), not per shared-memory node: simulated nodes on
  // one machine, each with its own host name, each write their own file (launcher/run/node_groups.hpp).
  m_writer = group_nodes(comm)->is_leader();
  m_attempt = launch_attempt;
  if (stall_timeout) {
    const char* t = stall_timeout->c_str();
    char* end = nullptr;
    const double v = std::strtod(t, &end);
    if (end != t && *end == '\0' && v >= 0) m_fixed = v;
    else if (comm.is_root())
      std::fprintf(stderr, "WARNING: SPOTRUN_STALL_TIMEOUT='%s' is not a number of seconds >= 0: ignored\n", t);
  }
  if (m_writer) {
    m_path = io::heartbeat_path(outdir, m_host);
    std::error_code ec;
    fs::create_directories(fs::path(m_path).parent_path(), ec);
  }
  m_thread = std::thread([this] { loop(); });
}

Heartbeat::~Heartbeat() {
  m_stop = true;
  if (m_thread.joinable()) m_thread.join();
}

void Heartbeat::loop_started(std::int64_t step) {
  m_start_step = step;
  m_step = step;
  m_advanced = steady_now();
  m_step_unix = unix_now();
  m_armed = true;
}

void Heartbeat::step_done(std::int64_t step, double seconds) {
  const double now = steady_now();
  m_max_gap = std::max(m_max_gap.load(), now - m_advanced.load());
  m_advanced = now;
  m_step_unix = unix_now();
  atomic_add(m_step_seconds_sum, seconds);
  m_step = step;
}

void Heartbeat::write_begins() { m_writing = true; }

void Heartbeat::write_ends() {
  m_writing = false;
  ++m_writes_timed;
}

void Heartbeat::write_file(double now) {
  const std::int64_t step = m_step, start = m_start_step;
  const std::int64_t done = step - start;
  io::HeartbeatRecord b;
  b.attempt = m_attempt;
  b.host = m_host;
  b.rank = m_rank;
  b.pid = static_cast<long long>(::getpid());
  if (m_armed) {
    b.step = step;
    b.start_step = start;
    b.step_unix = m_step_unix.load();
  }
  if (done > 0) b.mean_step_seconds = m_step_seconds_sum / static_cast<double>(done);
  b.max_gap_seconds = m_max_gap.load();
  b.writing_state = m_writing.load();
  b.writes_timed = m_writes_timed.load();
  b.unix = now;
  char utc[32];
  format_utc(now, utc);
  b.utc = utc;
  // A failure costs the heartbeat (a supervisor then sees it stop), never the run.
  const std::string tmp = m_path + ".tmp";
  bool ok;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << io::heartbeat_text(b);
    out.flush();
    ok = static_cast<bool>(out);
  }
  std::error_code ec;
  if (ok) fs::rename(tmp, m_path, ec);
  if (!ok || ec) fs::remove(tmp, ec);
}

void Heartbeat::loop() {
  double last_write = -1e300;
  while (!m_stop) {
    const double now = steady_now();
    if (m_writer && now - last_write >= k_heartbeat_seconds) {
      // Fencing (launcher/run/fence.hpp): a rank of an attempt that is no longer current ends here, within
      // a heartbeat of coming back, even while its main thread is blocked.
      check_attempt_fence("a heartbeat");
      write_file(unix_now());
      last_write = now;
    }
    if (m_armed) {
      const double timeout = rank_stall_timeout(m_fixed, m_max_gap, m_writing && m_writes_timed == 0);
      const double idle = now - m_advanced;
      if (timeout > 0 && idle > timeout) {
        // The main thread is blocked (in MPI, most likely: a rank or node it waits for is gone). Nothing
        // of this process can be cleaned up safely from here: its message, then its end.
        std::fprintf(stderr,
                     "ERROR: spotrun watchdog: rank %d on host %s: no step progress for %.0f s (stall timeout %.0f s, "
                     "at step %lld): exiting with code %d (stalled)\n",
                     m_rank, m_host.c_str(), idle, timeout, static_cast<long long>(m_step.load()),
                     static_cast<int>(k_exit_stalled));
        std::fflush(stderr);
        std::fflush(stdout);
        ::_exit(k_exit_stalled);
      }
    }
    ::usleep(100000);
  }
}

}  // namespace spotrun::launcher
