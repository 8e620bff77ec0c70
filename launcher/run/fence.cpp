#include "launcher/run/fence.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "launcher/run/run_status.hpp"

namespace spotrun::launcher {
namespace {

// Set once by arm_attempt_fence(), read by every later check (main thread, heartbeat thread, handler).
constexpr std::size_t k_max = 4608;
char g_path[k_max];     // OUTDIR/attempt, NUL-terminated; empty: not armed
char g_attempt[512];    // SPOTRUN_LAUNCH_ATTEMPT
std::string g_attempt_string;

// Reads at most `cap - 1` bytes of the file at g_path into buf (async-signal-safe); the length, or -1 when
// it cannot be read.
long read_attempt_file(char* buf, std::size_t cap) {
  const int fd = ::open(g_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  std::size_t n = 0;
  while (n + 1 < cap) {
    const ssize_t r = ::read(fd, buf + n, cap - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      ::close(fd);
      return -1;
    }
    if (r == 0) break;
    n += static_cast<std::size_t>(r);
  }
  ::close(fd);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) --n;
  buf[n] = '\0';
  return static_cast<long>(n);
}

// Whether the file names another attempt than ours; *named: what it names.
bool other_attempt(char* named, std::size_t cap) {
  if (g_path[0] == '\0' || g_attempt[0] == '\0') return false;
  const long n = read_attempt_file(named, cap);
  if (n <= 0) return false;  // missing, empty (being replaced) or unreadable: not a verdict
  return std::strcmp(named, g_attempt) != 0;
}

}  // namespace

void arm_attempt_fence(const std::string& outdir, const std::string& launch_attempt) {
  const char* a = launch_attempt.c_str();
  if (!*a || std::strlen(a) >= sizeof g_attempt) return;
  const std::string path = (std::filesystem::path(outdir) / k_attempt_file).string();
  if (path.size() >= k_max) return;
  std::memcpy(g_attempt, a, std::strlen(a) + 1);
  g_attempt_string = a;
  std::memcpy(g_path, path.c_str(), path.size() + 1);
}

const std::string& own_attempt() { return g_attempt_string; }

std::string fenced_by() {
  char named[512];
  return other_attempt(named, sizeof named) ? std::string(named) : std::string();
}

void check_attempt_fence(const char* what) {
  const std::string now = fenced_by();
  if (now.empty()) return;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown-host");
  std::fprintf(stderr,
               "ERROR: spotrun fence: attempt %s is no longer the current attempt of this output directory (%s names "
               "%s): process %ld on host %s stops without writing %s (exit code %d, fenced)\n",
               g_attempt, g_path, now.c_str(), static_cast<long>(::getpid()), host, what, k_exit_fenced);
  std::fflush(stderr);
  std::fflush(stdout);
  ::_exit(k_exit_fenced);
}

bool fenced_signal_safe() {
  char named[512];
  return other_attempt(named, sizeof named);
}

}  // namespace spotrun::launcher
