#include "launcher/run/run_status.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "io/run_directory.hpp"
#include "launcher/run/fence.hpp"
#include "spotrun/version.hpp"
#include "launcher/run/stop.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {
namespace {

// What the signal handler needs to write the end record of a process it ends at once: the paths and the
// shared fields, rendered in advance. Two buffers for the shared fields: the one g_which names is
// complete; the other is rewritten, then g_which switches to it.
constexpr std::size_t k_path_max = 4608;
constexpr std::size_t k_common_max = 24576;
char g_dir[k_path_max];
char g_tmp[k_path_max];
char g_final[k_path_max];
char g_common[2][k_common_max];
char g_record[k_common_max + 1024];
volatile std::sig_atomic_t g_which = -1;  // -1: no record to write

// Appends a NUL-terminated string to buf[n..cap); async-signal-safe.
void append(char* buf, std::size_t& n, std::size_t cap, const char* text) {
  while (*text && n + 1 < cap) buf[n++] = *text++;
  buf[n] = '\0';
}

void append_int(char* buf, std::size_t& n, std::size_t cap, long long v) {
  char digits[24];
  int k = 0;
  const bool negative = v < 0;
  unsigned long long u = negative ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  do {
    digits[k++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u > 0);
  if (negative) digits[k++] = '-';
  char out[24];
  for (int i = 0; i < k; ++i) out[i] = digits[k - 1 - i];
  out[k] = '\0';
  append(buf, n, cap, out);
}

// Writes `len` bytes to `tmp`, syncs it, renames it over `final`, syncs `dir`; async-signal-safe.
// Returns 0 or the errno of the call that failed.
int write_atomically(const char* dir, const char* tmp, const char* final, const char* text, std::size_t len) {
  const int fd = ::open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return errno;
  while (len > 0) {
    const ssize_t w = ::write(fd, text, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp);
      return err;
    }
    text += w;
    len -= static_cast<std::size_t>(w);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp);
    return err;
  }
  ::close(fd);
  if (::rename(tmp, final) != 0) {
    const int err = errno;
    ::unlink(tmp);
    return err;
  }
  const int dfd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return 0;
}

double now_unix() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string utc_now() {
  char buf[32];
  format_utc(now_unix(), buf);
  return buf;
}

// The end record of a process that a stop signal ends at once (launcher/run/stop.cpp calls it just before
// _exit): "stopped" with exit 75 (the output directory holds a checkpoint, nothing was computed), else
// "failed" with 128 + the signal number. Async-signal-safe.
void on_end_now(int sig, int code, const char* why, const char* phase) {
  const int which = g_which;
  if (which < 0 || fenced_signal_safe()) return;  // fencing: a fenced attempt's record is not written
  char ended[32];
  format_utc(now_unix(), ended);
  std::size_t n = 0;
  const std::size_t cap = sizeof g_record;
  append(g_record, n, cap, "{\"state\":\"");
  append(g_record, n, cap, code == 75 ? "stopped" : "failed");
  append(g_record, n, cap, "\",\"exit_code\":");
  append_int(g_record, n, cap, code);
  append(g_record, n, cap, ",\"step\":null,\"reason\":\"signal ");
  append(g_record, n, cap, signal_name(sig));
  append(g_record, n, cap, why);  // string literals of stop.cpp: no quotes or backslashes
  append(g_record, n, cap, phase);
  append(g_record, n, cap, code == 75 ? "\",\"checkpoint\":null,\"ended\":\"" : "\",\"ended\":\"");
  append(g_record, n, cap, ended);
  append(g_record, n, cap, "\",");
  append(g_record, n, cap, g_common[which]);
  append(g_record, n, cap, "}\n");
  (void)write_atomically(g_dir, g_tmp, g_final, g_record, n);
}

bool copy_path(char* dst, const std::string& src) {
  if (src.size() + 1 > k_path_max) return false;
  std::memcpy(dst, src.c_str(), src.size() + 1);
  return true;
}

}  // namespace

void format_utc(double unix_seconds, char* buf) {
  long long ms = static_cast<long long>(unix_seconds * 1000.0 + 0.5);
  if (ms < 0) ms = 0;
  const long long secs = ms / 1000;
  const long long days = secs / 86400;
  const long long rem = secs % 86400;
  // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
  const long long z = days + 719468;
  const long long era = z / 146097;
  const long long doe = z - era * 146097;
  const long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long long mp = (5 * doy + 2) / 153;
  const long long d = doy - (153 * mp + 2) / 5 + 1;
  const long long m = mp < 10 ? mp + 3 : mp - 9;
  const long long y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  const long long fields[] = {y, m, d, rem / 3600, (rem / 60) % 60, rem % 60, ms % 1000};
  const int widths[] = {4, 2, 2, 2, 2, 2, 3};
  const char after[] = {'-', '-', 'T', ':', ':', '.', 'Z'};
  int at = 0;
  for (int f = 0; f < 7; ++f) {
    long long v = fields[f];
    for (int k = widths[f] - 1; k >= 0; --k) {
      buf[at + k] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
    at += widths[f];
    buf[at++] = after[f];
  }
  buf[at] = '\0';
}

double parse_utc(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6) return -1;
  double frac = 0;
  std::size_t at = static_cast<std::size_t>(used);
  if (at < text.size() && text[at] == '.') {
    double scale = 0.1;
    for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, scale /= 10) frac += scale * (text[at] - '0');
  }
  if (at >= text.size() || text[at] != 'Z' || mo < 1 || mo > 12 || d < 1 || d > 31) return -1;
  // Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
  const long long yy = y - (mo <= 2 ? 1 : 0);
  const long long era = yy / 400;
  const long long yoe = yy - era * 400;
  const long long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const long long days = era * 146097 + doe - 719468;
  return static_cast<double>(days * 86400 + h * 3600 + mi * 60 + s) + frac;
}

RunStatus::RunStatus(const comm::Communicator& comm, std::optional<std::string> launch_attempt)
    : m_root(comm.is_root()), m_ranks(comm.size()), m_nodes(comm.node_count()), m_attempt(std::move(launch_attempt)) {}

RunStatus::~RunStatus() {
  if (!m_active) return;
  g_which = -1;
  set_end_now_hook(nullptr);
}

void RunStatus::begin(const std::string& outdir, const std::string& deck_path) {
  if (!m_root) return;
  m_outdir = outdir;
  m_deck = deck_path;
  m_path = (fs::path(outdir) / file_name()).string();
  m_started = utc_now();
  m_active = copy_path(g_dir, outdir) && copy_path(g_tmp, m_path + ".signal.tmp") && copy_path(g_final, m_path);
  if (!m_active) return;  // a path too long for the handler's buffers: no status file at all
  set_end_now_hook(on_end_now);
  running(-1, "");
}

void RunStatus::render_signal_record() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown-host");
  io::StatusShared shared;
  shared.version = k_version;
  shared.attempt = m_attempt;
  shared.pid = static_cast<long long>(::getpid());
  shared.host = host;
  shared.ranks = m_ranks;
  shared.nodes = m_nodes;
  shared.deck = m_deck;
  shared.output_dir = m_outdir;
  shared.started = m_started;
  shared.start_step = m_start_step;
  shared.resumed_from = m_resumed_from;
  shared.loop_started = m_loop_started;
  shared.levels_json = m_levels;
  m_common = io::status_shared_text(shared);
  // The handler's copy: into the buffer it does not read, then switch to it.
  if (m_common.size() + 1 > k_common_max) {
    g_which = -1;
    return;
  }
  const int next = g_which == 0 ? 1 : 0;
  std::memcpy(g_common[next], m_common.c_str(), m_common.size() + 1);
  g_which = m_ended ? -1 : next;
}

void RunStatus::running(std::int64_t step, const std::string& resumed_from) {
  if (!m_root || !m_active || m_ended) return;
  m_start_step = step;
  m_running_step = step;
  m_resumed_from = resumed_from;
  if (step >= 0) m_loop_started = utc_now();
  render_signal_record();
  write(io::status_running_text(step, utc_now(), m_common));
}

void RunStatus::levels(const std::string& json_object) {
  if (!m_root || !m_active || m_ended || json_object == m_levels) return;
  m_levels = json_object;
  render_signal_record();
  write(io::status_running_text(m_running_step, utc_now(), m_common));
}

void RunStatus::finished(std::int64_t step, const std::string& final_path) {
  io::StatusEnd end;
  end.state = io::StatusEnd::State::finished;
  end.exit_code = 0;
  end.step = step;
  end.final_path = final_path;
  write_end(end);
}

void RunStatus::stopped(std::int64_t step, const std::string& checkpoint, std::int64_t checkpoint_step,
                        const std::string& reason, const std::vector<std::string>& hosts) {
  io::StatusEnd end;
  end.state = io::StatusEnd::State::stopped;
  end.exit_code = 75;
  end.step = step;
  end.reason = reason;
  end.checkpoint = checkpoint;
  end.checkpoint_step = checkpoint_step;
  end.hosts = hosts;
  write_end(end);
}

void RunStatus::failed(int exit_code, const std::string& reason) {
  io::StatusEnd end;
  end.state = io::StatusEnd::State::failed;
  end.exit_code = exit_code;
  end.reason = reason;
  write_end(end);
}

void RunStatus::write_end(io::StatusEnd end) {
  if (!m_root || !m_active || m_ended) return;
  m_ended = true;
  g_which = -1;  // the handler no longer writes: this record is the last
  end.ended = utc_now();
  write(io::status_end_text(end, m_common));
}

// One record (io/run_directory.hpp renders it), written atomically.
void RunStatus::write(const std::string& text) {
  check_attempt_fence("status.json");  // fencing (launcher/run/fence.hpp): exit 77 when fenced
  const std::string tmp = m_path + ".tmp";
  const std::string dir = m_outdir.empty() ? std::string(".") : m_outdir;
  const int err = write_atomically(dir.c_str(), tmp.c_str(), m_path.c_str(), text.data(), text.size());
  if (err != 0 && !m_warned) {
    std::fprintf(stderr, "WARNING: cannot write %s: %s; the run goes on without a status record\n", m_path.c_str(),
                 std::strerror(err));
    m_warned = true;
  }
}

}  // namespace spotrun::launcher
