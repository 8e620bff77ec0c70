#include "launcher/launch/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Macros.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "launcher/deck/deck.hpp"
#include "launcher/run/fence.hpp"
#include "io/run_directory.hpp"
#include "launcher/run/heartbeat.hpp"
#include "launcher/doctor/report.hpp"
#include "launcher/run/run_status.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace spotrun::launcher {

// ------------------------------------------------------------------------------------------------
// Hostfiles, rank plans, mpirun's messages (pure functions, tested in tests/test_launch.cpp)

std::vector<HostEntry> parse_hostfile(const std::string& text, const std::string& name) {
  std::vector<HostEntry> hosts;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  auto bad = [&](const std::string& why) {
    return InputError("hostfile " + name + ":" + std::to_string(number) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string host;
    if (!(words >> host)) continue;
    if (host.size() > 255 || host.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_:[]") !=
                                 std::string::npos)
      throw bad("'" + quote_for_message(host, 0) + "' is not a host name or address");
    int slots = 0;
    std::string word;
    while (words >> word) {
      const auto eq = word.find('=');
      const std::string key = word.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (key != "slots" && key != "max_slots" && key != "max-slots")
        throw bad("unknown word '" + quote_for_message(word, 0) + "' (expected slots=N or max_slots=N)");
      if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(value) < 1)
        throw bad(key + " must be a whole number from 1 to 999999, not '" + quote_for_message(value, 0) + "'");
      if (key == "slots") slots = std::stoi(value);
    }
    auto same = std::find_if(hosts.begin(), hosts.end(), [&](const HostEntry& h) { return h.name == host; });
    if (same == hosts.end()) {
      hosts.push_back({host, slots});
    } else if (same->slots > 0 || slots > 0) {
      same->slots = std::max(same->slots, 1) + std::max(slots, 1);  // Open MPI adds the slots of repeats
    }
  }
  if (hosts.empty()) throw InputError("hostfile " + name + " names no host");
  return hosts;
}

std::vector<Placement> plan_ranks(const std::vector<Placement>& capacity, int wanted) {
  long long total = 0;
  for (const auto& c : capacity) total += std::max(c.ranks, 0);
  long long left = wanted > 0 ? std::min<long long>(wanted, total) : total;
  std::vector<Placement> plan;
  for (const auto& c : capacity) {
    if (left <= 0) break;
    const int n = static_cast<int>(std::min<long long>(left, std::max(c.ranks, 0)));
    if (n <= 0) continue;
    plan.push_back({c.host, n});
    left -= n;
  }
  return plan;
}

GrowEstimate grow_estimate(long long remaining_steps, double step_seconds, int old_ranks, int new_ranks,
                           double relaunch_seconds, double stop_checkpoint_seconds, long long redone_steps) {
  GrowEstimate e;
  const double steps = static_cast<double>(std::max(0LL, remaining_steps));
  const double step = std::max(0.0, step_seconds);
  const double redo = static_cast<double>(std::max(0LL, redone_steps)) * step;
  e.cost = std::max(0.0, relaunch_seconds) + std::max(0.0, stop_checkpoint_seconds) + redo;
  e.saving = new_ranks > old_ranks && old_ranks > 0
                 ? steps * step * (1.0 - static_cast<double>(old_ranks) / static_cast<double>(new_ranks))
                 : 0.0;
  e.worth = new_ranks > old_ranks && e.saving > e.cost;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "relaunch cost %.3g s (start-up %.3g s + stop checkpoint %.3g s + %lld steps redone) %s saving %.3g s "
                "(%lld steps left x %.3g s/step x (1 - %d/%d))",
                e.cost, relaunch_seconds, stop_checkpoint_seconds, std::max(0LL, redone_steps),
                e.worth ? "<" : ">=", e.saving, std::max(0LL, remaining_steps), step, old_ranks, new_ranks);
  e.text = buf;
  return e;
}

namespace {

#if defined(KOKKOS_ENABLE_CUDA)
constexpr bool k_gpu_build = true;
#else
constexpr bool k_gpu_build = false;
#endif

std::string short_name(const std::string& host) {
  // An address stays whole; a name loses its domain.
  if (!host.empty() && (std::isdigit(static_cast<unsigned char>(host[0])) || host.find(':') != std::string::npos))
    return host;
  return host.substr(0, host.find('.'));
}

bool loopback(const std::string& host) { return host == "localhost" || host == "127.0.0.1" || host == "::1"; }

}  // namespace

bool same_host(const std::string& entry, const std::string& reported, const std::string& self) {
  if (entry == reported || short_name(entry) == short_name(reported)) return true;
  const bool entry_self = loopback(entry) || short_name(entry) == short_name(self);
  const bool reported_self = loopback(reported) || short_name(reported) == short_name(self);
  return entry_self && reported_self;
}

void scan_mpirun_line(const std::string& line, MpirunNotes& notes) {
  static const std::regex killed(R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)( \(([^)]*)\))?)");
  static const std::regex lost(R"(Remote daemon: .* on node (\S+))");
  static const std::regex no_start(R"(error on node (\S+?)\. More information may be available above)");
  std::smatch m;
  if (std::regex_search(line, m, killed)) {
    notes.events.push_back("rank " + m[1].str() + " on node " + m[2].str() + " exited on signal " + m[3].str() +
                           (m[5].matched ? " (" + m[5].str() + ")" : std::string()));
  } else if (std::regex_search(line, m, lost)) {
    notes.lost_hosts.push_back(m[1].str());
    notes.events.push_back("mpirun lost the daemon on node " + m[1].str());
  } else if (std::regex_search(line, m, no_start)) {
    notes.lost_hosts.push_back(m[1].str());
    notes.events.push_back("mpirun could not start the program on node " + m[1].str());
  }
}

std::vector<std::string> hosts_lost_by_mpirun(const std::vector<std::string>& reported,
                                              const std::vector<std::string>& hosts,
                                              const std::vector<std::string>& fence_answered, const std::string& self) {
  std::vector<std::string> lost;
  for (const auto& h : hosts) {
    if (loopback(h) || std::find(fence_answered.begin(), fence_answered.end(), h) != fence_answered.end()) continue;
    if (std::any_of(reported.begin(), reported.end(), [&](const std::string& r) { return same_host(h, r, self); }))
      lost.push_back(h);
  }
  return lost;
}

namespace {

// ------------------------------------------------------------------------------------------------
// Small helpers

double now_unix() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string utc(double t) {
  char buf[32];
  format_utc(t, buf);
  return buf;
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::string plural(long long n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// A text file of at most max_bytes that must be a regular file; throws InputError naming `what`.
std::string read_regular_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    throw InputError(what + " '" + path + "' " + (err == ENOENT ? std::string("does not exist")
                                                                : std::string("cannot be opened: ") + std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(what + " '" + path + "' is not a regular file");
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw InputError(what + " '" + path + "' has " + std::to_string(st.st_size) + " bytes, more than the " +
                     std::to_string(max_bytes) + " allowed");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) break;
  }
  ::close(fd);
  return text;
}

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// mpirun: --mpirun, else the one next to spotrun (a bundle's), else the first on PATH.
std::string find_mpirun(const std::string& given) {
  if (!given.empty()) {
    if (given.find('/') != std::string::npos) return executable(given) ? fs::absolute(given).string() : std::string();
  }
  const std::string name = given.empty() ? "mpirun" : given;
  if (given.empty()) {
    const std::string self = self_executable();
    if (!self.empty()) {
      const std::string beside = (fs::path(self).parent_path() / "mpirun").string();
      if (executable(beside)) return beside;
    }
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (fs::path(dir.empty() ? "." : dir) / name).string();
    if (executable(candidate)) return fs::absolute(candidate).string();
  }
  return {};
}

int local_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// The step of the newest OUTDIR/checkpoints/ckpt-<step>.h5 or .levels (by name), or -1.
long long newest_checkpoint_step(const std::string& outdir) {
  return io::newest_checkpoint_step(outdir);  // io/run_directory.hpp
}

// The step of the last row of OUTDIR/thermo.csv, or -1; *written: when that row was written (the file's
// modification time).
long long last_thermo_step(const std::string& outdir, double* written) {
  const fs::path path = fs::path(outdir) / "thermo.csv";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    *written = static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
  std::ifstream in(path);
  std::string line;
  long long last = -1;
  while (std::getline(in, line)) {
    const std::string first = line.substr(0, line.find(','));
    if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos || first.size() > 18) continue;
    last = std::stoll(first);
  }
  return last;
}

// Whether process `pid` of this host has ended (gone, or a zombie: its files and locks are released).
bool process_gone(long long pid) {
  if (pid <= 0) return true;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

// Whether some process holds the run lock of OUTDIR (launcher/run/output_lock.hpp).
bool run_lock_held(const std::string& outdir) {
  const std::string path = (fs::path(outdir) / ".spotrun.lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

// Sends SIGKILL to every process of this machine whose environment holds `entry` (NAME=VALUE, exactly);
// returns how many. Processes that cannot be read (gone, another user's) are skipped.
int kill_local_processes_with(const std::string& entry) {
  int killed = 0;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator("/proc", ec)) {
    const std::string name = d.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::ifstream in(d.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(in, var, '\0'))
      if (var == entry) {
        if (::kill(pid, SIGKILL) == 0) ++killed;
        break;
      }
  }
  return killed;
}

// ------------------------------------------------------------------------------------------------
// Signals: the handler writes the signal number into a pipe that the supervising loops poll.

int g_signal_pipe[2] = {-1, -1};

extern "C" void on_launch_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  (void)!::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

void install_launch_signals() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2 failed");
  struct sigaction sa {};
  sa.sa_handler = on_launch_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// Signals received since the last call, in order.
std::vector<int> take_signals() {
  std::vector<int> sigs;
  unsigned char buf[64];
  for (;;) {
    const ssize_t n = ::read(g_signal_pipe[0], buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t k = 0; k < n; ++k) sigs.push_back(buf[k]);
  }
  return sigs;
}

const char* launch_signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

// ------------------------------------------------------------------------------------------------
// Child processes

// Starts argv[0] (an absolute path) in a process group of its own, stdin from /dev/null, stdout and
// stderr into pipes (*out_fd, *err_fd; the same pipe when err_fd is null), with `env` (NAME=VALUE) added.
// `parent_death_signal`: sent to the child if this process dies (so a job does not outlive its
// supervisor unwatched). Returns the PID, or -1 with errno.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int* out_fd, int* err_fd,
            int parent_death_signal) {
  int out[2], err[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0) return -1;
  if (err_fd && ::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return -1;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (parent_death_signal != 0) {
      ::prctl(PR_SET_PDEATHSIG, parent_death_signal);
      if (::getppid() != parent) ::raise(parent_death_signal);
    }
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err_fd ? err[1] : out[1], STDERR_FILENO);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    ::execv(args[0], args.data());
    const std::string msg = "spotrun launch: cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  const int saved = errno;
  ::close(out[1]);
  if (err_fd) ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    if (err_fd) ::close(err[0]);
    errno = saved;
    return -1;
  }
  *out_fd = out[0];
  if (err_fd) *err_fd = err[0];
  return pid;
}

std::string describe_wait(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status));
  return "ended";
}

// ------------------------------------------------------------------------------------------------
// The supervisor

struct LaunchOptions {
  std::string deck_path;
  std::vector<std::string> sets;
  std::string output_dir;
  int np = 0;
  std::string hostfile;
  int ranks_per_node = 0;
  int max_restarts = 10;
  int min_ranks = 1;
  std::string mpirun;
  double probe_timeout = 10;
  double stall_timeout = 0;    // --stall-timeout; 0: max(60 s, 10 x the longest gap between steps); heartbeats 60 s
  bool doctor = false;         // spotrun doctor before each attempt
  std::string doctor_expect;   // its --expect file
  double doctor_slow_factor = 0;  // its --slow-factor (0: its default)
  bool grow = false;              // --grow: relaunch on more ranks when hosts come back (and it pays)
  std::string hosts_command;      // --hosts-command: prints the hosts, as a hostfile
  std::vector<std::string> mpirun_args;
};

// The hosts `command` prints (/bin/sh -c, stdout as a hostfile; at most `timeout` seconds, 1 MiB); throws
// InputError naming the command and what it must print.
std::vector<HostEntry> hosts_from_command(const std::string& command, double timeout) {
  const std::string what = "--hosts-command '" + quote_for_message(command, 0) + "'";
  const std::string must = "; it must print the hosts, one per line as in a hostfile (HOST [slots=N]), and exit 0";
  int out_fd = -1, err_fd = -1;
  const pid_t pid = spawn({"/bin/sh", "-c", command}, {}, &out_fd, &err_fd, SIGKILL);
  if (pid < 0) throw InputError(what + ": cannot start /bin/sh: " + std::strerror(errno));
  std::string out, err;
  int fds[2] = {out_fd, err_fd};
  int status = 0;
  bool exited = false, too_long = false, timed_out = false;
  const double deadline = now_unix() + timeout;
  while (!exited || fds[0] >= 0 || fds[1] >= 0) {
    std::vector<pollfd> p;
    for (int s = 0; s < 2; ++s)
      if (fds[s] >= 0) p.push_back({fds[s], POLLIN, 0});
    if (!p.empty()) ::poll(p.data(), p.size(), 100);
    else ::usleep(20000);
    for (const auto& q : p) {
      if (!(q.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const int s = q.fd == fds[0] ? 0 : 1;
      char buf[65536];
      const ssize_t n = ::read(q.fd, buf, sizeof buf);
      if (n > 0) {
        std::string& into = s == 0 ? out : err;
        if (into.size() < (1u << 20)) into.append(buf, static_cast<std::size_t>(n));
        else if (s == 0) too_long = true;
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(q.fd);
        fds[s] = -1;
      }
    }
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
    if (now_unix() > deadline) {
      timed_out = !exited;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      if (!exited) ::waitpid(pid, &status, 0);
      exited = true;
      for (int& fd : fds)
        if (fd >= 0) {
          ::close(fd);
          fd = -1;
        }
    }
  }
  if (timed_out) throw InputError(what + " did not end within " + fixed(timeout, 0) + " s" + must);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first = err.substr(0, err.find('\n'));
    throw InputError(what + " failed (" + describe_wait(status) + ")" +
                     (first.empty() ? std::string() : ": " + quote_for_message(first, 0)) + must);
  }
  if (too_long) throw InputError(what + " printed more than 1 MiB" + must);
  return parse_hostfile(out, "from " + what);
}

// The default stall timeout's floor, and the default time a host's heartbeat may stay unchanged (s).
constexpr double k_default_stall_seconds = 60;

struct ProbeResult {
  bool ok = false;
  int cores = 0;
  std::string why;
  bool answered = false;  // the command ran and exited 0
  std::string output;
};

// What the heartbeat files of an attempt (OUTDIR/heartbeats/<host>.json, launcher/run/heartbeat.hpp) said,
// as seen on this machine's clock.
struct HostBeat {
  double value = -1;       // the file's "unix" (the node's clock): a new value is a new heartbeat
  double changed_at = 0;   // when this process saw it change
  long long step = -1;
};

struct AttemptResult {
  int number = 0;
  std::string id;
  int ranks = 0;
  std::vector<Placement> placement;
  double started = 0, ended = 0;
  int wait_status = 0;
  MpirunNotes notes;
  bool stop_forwarded = false;
  // From OUTDIR/status.json when its record is this attempt's.
  bool have_record = false;
  std::string state;  // finished, stopped, failed, killed (a "running" record whose process is gone), none
  int exit_code = -1;
  std::string reason;
  long long start_step = -1, step = -1, checkpoint_step = -1;
  double loop_started = -1;
  std::vector<std::string> stop_hosts;
  // A stall (no step progress, or a host's heartbeat stopped, for the stall timeout).
  bool stalled = false;
  std::string stall_reason;
  std::vector<std::string> stalled_hosts;  // whose heartbeat stopped
  long long heartbeat_step = -1;           // the last step a heartbeat reported
  double heartbeat_step_at = -1;           // when that step was reached (the node's clock)
  double last_heartbeat = -1;              // the newest heartbeat (the node's clock)
  bool fence_unanswered = false;           // a host of the attempt did not answer the fence
  std::vector<std::string> fence_answered; // hosts whose fence killed the attempt's processes there
  // Growing back: launch stopped the attempt (SIGUSR1) to relaunch it on `grow_to` ranks.
  bool grow = false;
  int grow_to = 0;
};

class Launcher {
 public:
  Launcher(LaunchOptions opt, std::string outdir, std::string deck, std::string mpirun, std::string spotrun,
           long long steps)
      : m_total_steps(steps),
        m_opt(std::move(opt)),
        m_outdir(std::move(outdir)),
        m_deck(std::move(deck)),
        m_mpirun(std::move(mpirun)),
        m_spotrun(std::move(spotrun)),
        m_self(this_host()) {}
  int run();

 private:
  void log(const std::string& text);
  bool hosts_for_attempt(int attempt, std::vector<Placement>& capacity, std::map<std::string, int>& cores);
  std::vector<ProbeResult> probe(const std::vector<std::string>& hosts,
                                 const std::vector<std::string>& command = {"nproc"});
  bool watch_heartbeats(AttemptResult& a, std::map<std::string, HostBeat>& beats, long long& step,
                        double& step_seen_at);
  void fence(AttemptResult& a);
  std::vector<ProbeResult> fence_hosts(const std::vector<std::string>& hosts, const std::string& id,
                                       std::vector<long long>& killed);
  std::vector<std::string> mpirun_command(const std::vector<Placement>& placement, const std::string& binding,
                                          bool oversubscribed, const std::string& hostfile, bool attempt) const;
  AttemptResult run_attempt(int number, const std::vector<Placement>& placement, const std::string& binding,
                            bool oversubscribed);
  std::vector<std::string> run_doctor(int number, const std::vector<Placement>& placement, const std::string& binding,
                                      bool oversubscribed);
  bool record_of(const std::string& id, io::StatusRecord& record) const;
  void read_outcome(AttemptResult& a) const;
  int finish(int code, const std::string& outcome);
  int stop_exit(int sig, const std::string& when);
  void note_signals(const std::vector<int>& sigs);
  std::vector<HostEntry> current_hosts() const;
  bool consider_grow(AttemptResult& a);
  void write_attempt_file(const AttemptResult& a);
  void annotate_ledger(const AttemptResult& a, const std::string& ended_by);

  long long m_total_steps = 0;            // run.steps of the deck
  double m_prep_started = 0;              // when the current attempt's preparation (probes) began
  std::vector<double> m_relaunch_seconds;  // per attempt that reached its time loop: preparation to first step
  LaunchOptions m_opt;
  std::string m_outdir, m_deck, m_mpirun, m_spotrun, m_self;
  std::string m_id;
  FILE* m_log = nullptr;
  std::set<std::string> m_dropped;  // hosts left out for good (a spot notice named them)
  // Hosts lost in an attempt (mpirun lost them, or they did not answer its fence), with the attempts whose
  // processes may still be there: left out of relaunches; with --grow, used again once they answer their
  // probe and the fence of those attempts (consider_grow).
  std::map<std::string, std::set<std::string>> m_lost;
  std::vector<HostEntry> m_hosts;   // the hostfile as last read
  int m_stop_signal = 0;            // the first stop request (SIGINT, SIGTERM, SIGHUP), or 0
  int m_attempts = 0, m_restarts = 0;
  long long m_redone = 0;
  double m_lost_rank_seconds = 0;
};

void Launcher::log(const std::string& text) {
  const std::string stamp = utc(now_unix());
  if (m_log) {
    std::fprintf(m_log, "%s %s\n", stamp.c_str(), text.c_str());
    std::fflush(m_log);
  }
  std::fprintf(stderr, "spotrun launch: %s\n", text.c_str());
  std::fflush(stderr);
}

void Launcher::note_signals(const std::vector<int>& sigs) {
  for (int sig : sigs)
    if (m_stop_signal == 0) m_stop_signal = sig;
}

int Launcher::finish(int code, const std::string& outcome) {
  log("summary: " + outcome + ". " + plural(m_attempts, "attempt") + " (" + plural(m_restarts, "restart") + "), " +
      plural(m_redone, "step") + " redone, " + fixed(m_lost_rank_seconds, 1) +
      " rank-seconds of compute lost; exit " + std::to_string(code));
  return code;
}

int Launcher::stop_exit(int sig, const std::string& when) {
  if (newest_checkpoint_step(m_outdir) >= 0 || !io::list_finals(m_outdir).empty())
    return finish(75, "stopped on request (" + std::string(launch_signal_name(sig)) + ") " + when +
                          "; the output directory holds a checkpoint: run the same command to resume");
  return finish(128 + sig, "stopped on request (" + std::string(launch_signal_name(sig)) + ") " + when +
                               "; there is no checkpoint yet");
}

std::vector<ProbeResult> Launcher::probe(const std::vector<std::string>& hosts, const std::vector<std::string>& command) {
  // mpirun options that say how to reach and start on the hosts go to the probe too.
  std::vector<std::string> reach;
  for (std::size_t k = 0; k < m_opt.mpirun_args.size(); ++k) {
    const std::string& a = m_opt.mpirun_args[k];
    if ((a == "--mca" || a == "-mca") && k + 2 < m_opt.mpirun_args.size()) {
      reach.insert(reach.end(), {a, m_opt.mpirun_args[k + 1], m_opt.mpirun_args[k + 2]});
      k += 2;
    } else if ((a == "--prefix" || a == "--launch-agent") && k + 1 < m_opt.mpirun_args.size()) {
      reach.insert(reach.end(), {a, m_opt.mpirun_args[k + 1]});
      k += 1;
    }
  }
  struct Running {
    pid_t pid = -1;
    int fd = -1;
    std::string output;
    bool done = false;
    int status = 0;
  };
  std::vector<Running> procs(hosts.size());
  std::vector<ProbeResult> results(hosts.size());
  for (std::size_t k = 0; k < hosts.size(); ++k) {
    std::vector<std::string> argv{m_mpirun};
    argv.insert(argv.end(), reach.begin(), reach.end());
    argv.insert(argv.end(), {"--bind-to", "none", "-H", hosts[k], "-np", "1"});
    argv.insert(argv.end(), command.begin(), command.end());
    procs[k].pid = spawn(argv, {}, &procs[k].fd, nullptr, SIGKILL);
    if (procs[k].pid < 0) {
      procs[k].done = true;
      results[k].why = std::string("cannot start mpirun: ") + std::strerror(errno);
    }
  }
  const double deadline = now_unix() + m_opt.probe_timeout;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t k = 0; k < procs.size(); ++k)
      if (procs[k].fd >= 0) {
        fds.push_back({procs[k].fd, POLLIN, 0});
        which.push_back(k);
      }
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    bool all_done = true;
    for (const auto& p : procs) all_done = all_done && p.done && p.fd < 0;
    if (all_done) break;
    const double left = deadline - now_unix();
    if (left <= 0 || m_stop_signal != 0) break;
    ::poll(fds.data(), fds.size(), static_cast<int>(std::min(left, 0.1) * 1000) + 1);
    for (std::size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Running& p = procs[which[i]];
      char buf[4096];
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n > 0 && p.output.size() < 65536) p.output.append(buf, static_cast<std::size_t>(n));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        ::close(p.fd);
        p.fd = -1;
      }
    }
    if (fds.back().revents & POLLIN) note_signals(take_signals());
    for (auto& p : procs)
      if (!p.done && p.pid > 0 && ::waitpid(p.pid, &p.status, WNOHANG) == p.pid) p.done = true;
  }
  for (std::size_t k = 0; k < procs.size(); ++k) {
    Running& p = procs[k];
    if (!p.done && p.pid > 0) {
      ::kill(-p.pid, SIGKILL);
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, &p.status, 0);
      results[k].why = m_stop_signal ? "stopped on request" : "no answer within " + fixed(m_opt.probe_timeout, 0) + " s";
      p.done = true;
      if (p.fd >= 0) ::close(p.fd);
      p.fd = -1;
      continue;
    }
    if (p.fd >= 0) ::close(p.fd);
    if (p.pid < 0) continue;
    // The answer: the last line that is a number (the host's cores); the reason otherwise: the first
    // line of mpirun's message.
    std::istringstream lines(p.output);
    std::string line, first;
    while (std::getline(lines, line)) {
      const auto b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos) continue;
      line = line.substr(b);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
      if (!line.empty() && line.size() < 7 && line.find_first_not_of("0123456789") == std::string::npos) {
        results[k].cores = std::stoi(line);
      } else if (first.empty() && line.find_first_not_of("-") != std::string::npos) {
        first = line;
      }
    }
    results[k].answered = WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0;
    results[k].output = p.output;
    results[k].ok = results[k].answered && results[k].cores > 0;
    if (!results[k].ok)
      results[k].why = describe_wait(p.status) + (first.empty() ? std::string() : ": " + quote_for_message(first, 0));
  }
  return results;
}

// The hosts and how many ranks each can take, for attempt `attempt`; false when there are none.
bool Launcher::hosts_for_attempt(int attempt, std::vector<Placement>& capacity, std::map<std::string, int>& cores) {
  capacity.clear();
  cores.clear();
  if (m_opt.hostfile.empty() && m_opt.hosts_command.empty()) {
    const int n = m_opt.np > 0 ? m_opt.np : local_cores();
    capacity.push_back({"localhost", m_opt.ranks_per_node > 0 ? std::min(n, m_opt.ranks_per_node) : n});
    cores["localhost"] = local_cores();
    return true;
  }
  try {
    m_hosts = current_hosts();
  } catch (const InputError& e) {
    log("attempt " + std::to_string(attempt) + ": WARNING: " + e.what() + "; using the hosts it named before");
  }
  std::vector<std::string> names;
  for (const auto& h : m_hosts) {
    if (m_dropped.count(h.name) || m_lost.count(h.name)) {
      log("attempt " + std::to_string(attempt) + ": host " + h.name + " left out: it failed in an earlier attempt");
      continue;
    }
    names.push_back(h.name);
  }
  const std::vector<ProbeResult> probes = probe(names);
  std::ostringstream seen;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const HostEntry& h = *std::find_if(m_hosts.begin(), m_hosts.end(), [&](const HostEntry& e) { return e.name == names[k]; });
    if (!probes[k].ok) {
      log("attempt " + std::to_string(attempt) + ": host " + h.name + " left out: its probe failed (" + probes[k].why + ")");
      continue;
    }
    const int cap = m_opt.ranks_per_node > 0 ? m_opt.ranks_per_node : h.slots > 0 ? h.slots : probes[k].cores;
    capacity.push_back({h.name, cap});
    cores[h.name] = probes[k].cores;
    seen << (seen.tellp() > 0 ? ", " : "") << h.name << " (" << cap << (cap == 1 ? " slot, " : " slots, ")
         << probes[k].cores << " cores)";
  }
  if (!capacity.empty()) log("attempt " + std::to_string(attempt) + ": hosts that answered: " + seen.str());
  return !capacity.empty();
}

// The hosts as the hostfile or --hosts-command says now; InputError naming the source.
std::vector<HostEntry> Launcher::current_hosts() const {
  if (!m_opt.hosts_command.empty()) return hosts_from_command(m_opt.hosts_command, std::max(30.0, m_opt.probe_timeout));
  return parse_hostfile(read_regular_file(m_opt.hostfile, "hostfile", 1 << 20), m_opt.hostfile);
}

// Fencing, 1 (launcher/run/fence.hpp): OUTDIR/attempt names the attempt about to start, before its mpirun
// does; a rank of an earlier attempt that reads it stops without writing (exit 77).
void Launcher::write_attempt_file(const AttemptResult& a) {
  const std::string why = io::write_attempt_file(m_outdir, a.id);  // io/run_directory.hpp
  if (why.empty()) return;
  // A file that still named the previous attempt would fence this one: none at all fences nothing.
  log("attempt " + std::to_string(a.number) + ": WARNING: cannot write " + io::run_path(m_outdir, io::k_attempt_file) +
      " (" + why + "): ranks of earlier attempts are not fenced during this one");
}

// The report (docs/report.md): the ledger line of attempt `a` (its "launch_attempt") gets launch's
// verdict, "ended_by"; the next attempt's report, or `spotrun report`, shows it.
void Launcher::annotate_ledger(const AttemptResult& a, const std::string& ended_by) {
  io::annotate_ledger(m_outdir, a.id, ended_by);  // io/run_directory.hpp
}

// Growing back (--grow): at a new checkpoint of attempt `a`, whether hosts that the hostfile (or
// --hosts-command) names and the attempt does not use answer their probe, and a relaunch on the larger
// set of ranks pays for itself (grow_estimate); true: stop the attempt (SIGUSR1) and relaunch.
bool Launcher::consider_grow(AttemptResult& a) {
  const std::string tag = "attempt " + std::to_string(a.number) + ": grow: ";
  std::vector<HostEntry> hosts;
  try {
    hosts = current_hosts();
  } catch (const InputError& e) {
    log(tag + "WARNING: " + e.what() + "; not growing now");
    return false;
  }
  std::vector<std::string> fresh;
  for (const auto& h : hosts) {
    if (m_dropped.count(h.name)) continue;
    const bool used = std::any_of(a.placement.begin(), a.placement.end(),
                                  [&](const Placement& p) { return same_host(p.host, h.name, m_self); });
    if (!used) fresh.push_back(h.name);
  }
  if (fresh.empty()) return false;
  std::vector<ProbeResult> probes = probe(fresh);
  // A host lost in an earlier attempt that answers again (a partition healed, a node rebooted) is fenced
  // first: whatever the attempts it missed left there ends before it is counted.
  for (std::size_t k = 0; k < fresh.size(); ++k) {
    const auto lost = m_lost.find(fresh[k]);
    if (!probes[k].ok || lost == m_lost.end()) continue;
    bool fenced = true;
    for (const std::string& id : lost->second) {
      std::vector<long long> killed;
      const std::vector<ProbeResult> r = fence_hosts({fresh[k]}, id, killed);
      if (killed[0] < 0) {
        log(tag + "host " + fresh[k] + " answers again but not its fence of attempt " + id + " (" +
            (r[0].why.empty() ? "no count" : r[0].why) + "): still left out");
        fenced = false;
        break;
      }
      log(tag + "host " + fresh[k] + " answers again: " + std::to_string(killed[0]) + " process(es) of attempt " + id +
          " killed there");
    }
    if (fenced) m_lost.erase(lost);
    else probes[k].ok = false;
  }
  std::vector<Placement> capacity = a.placement;
  std::string added;
  for (std::size_t k = 0; k < fresh.size(); ++k) {
    if (!probes[k].ok) continue;
    const HostEntry& h = *std::find_if(hosts.begin(), hosts.end(), [&](const HostEntry& e) { return e.name == fresh[k]; });
    const int cap = m_opt.ranks_per_node > 0 ? m_opt.ranks_per_node : h.slots > 0 ? h.slots : probes[k].cores;
    capacity.push_back({h.name, cap});
    added += (added.empty() ? "" : ", ") + h.name + " (" + plural(cap, "slot") + ")";
  }
  int ranks = 0;
  for (const auto& p : plan_ranks(capacity, m_opt.np)) ranks += p.ranks;
  if (ranks <= a.ranks) return false;
  // The run's figures: its step and mean step time (heartbeats), the longest gap between two steps (a
  // checkpoint write: the stop checkpoint costs about as much), its first step (status.json).
  long long step = -1;
  double step_seconds = 0, gap = 0;
  for (const io::HeartbeatRecord& b : io::read_heartbeats(m_outdir)) {
    if (b.attempt != a.id) continue;
    step = std::max(step, static_cast<long long>(b.step));
    step_seconds = std::max(step_seconds, b.mean_step_seconds);
    gap = std::max(gap, b.max_gap_seconds);
  }
  io::StatusRecord r;
  double loop_started = -1;
  long long start_step = -1;
  if (record_of(a.id, r) && !r.loop_started.empty()) loop_started = parse_utc(r.loop_started);
  if (r.start_step >= 0) start_step = r.start_step;
  // The newest checkpoint is newer than the last heartbeat (one every 2 s): the step time from the
  // start of the time loop to that checkpoint's file, checkpoint writes included.
  const long long ck = newest_checkpoint_step(m_outdir);
  struct stat st {};
  const auto names = io::list_checkpoints(m_outdir);  // the newest's file: ckpt-<step>.h5 or .levels
  const std::string ck_path = names.empty() ? std::string() : names.back().path(m_outdir);
  if (ck > start_step && start_step >= 0 && loop_started > 0 && ::stat(ck_path.c_str(), &st) == 0) {
    const double at = static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
    if (at > loop_started) {
      step = std::max(step, ck);
      step_seconds = (at - loop_started) / static_cast<double>(ck - start_step);
    }
  }
  if (step < 0 || step_seconds <= 0 || loop_started <= 0) {
    log(tag + "more slots answer (" + added + ") but the run's step time is not known yet; deciding at the next checkpoint");
    return false;
  }
  std::vector<double> starts = m_relaunch_seconds;
  starts.push_back(loop_started - m_prep_started);
  double relaunch = 0;
  for (double s : starts) relaunch += s;
  relaunch /= static_cast<double>(starts.size());
  const GrowEstimate e = grow_estimate(m_total_steps - step, step_seconds, a.ranks, ranks, relaunch, gap, 0);
  log(tag + "at step " + std::to_string(step) + ", " + plural(ranks, "rank") + " fit with " + added + " instead of " +
      std::to_string(a.ranks) + ": " + e.text + " (start-up measured over " + plural(static_cast<long long>(starts.size()), "attempt") +
      "): " + (e.worth ? "stopping with a checkpoint to relaunch on " + plural(ranks, "rank")
                       : std::string("not worth a relaunch")));
  if (e.worth) a.grow_to = ranks;
  return e.worth;
}

bool Launcher::record_of(const std::string& id, io::StatusRecord& record) const {
  auto r = io::read_status(m_outdir);  // io/run_directory.hpp
  if (!r || r->attempt.empty() || r->attempt != id) return false;
  record = std::move(*r);
  return true;
}

void Launcher::read_outcome(AttemptResult& a) const {
  io::StatusRecord r;
  if (!record_of(a.id, r)) {
    a.state = "none";
    a.reason = "no status record from this attempt: the run did not get as far as its output directory";
    return;
  }
  a.have_record = true;
  a.state = r.state;
  a.exit_code = r.exit_code;
  a.reason = r.reason;
  while (!a.reason.empty() && (a.reason.back() == '.' || a.reason.back() == '\n')) a.reason.pop_back();
  a.start_step = r.start_step;
  a.step = r.step;
  a.loop_started = r.loop_started.empty() ? -1 : parse_utc(r.loop_started);
  if (r.checkpoint_step >= 0) a.checkpoint_step = r.checkpoint_step;
  a.stop_hosts.insert(a.stop_hosts.end(), r.hosts.begin(), r.hosts.end());
  if (a.state == "running") {
    // The run ended without writing how: killed (SIGKILL, out of memory, its node lost). Rank 0 may
    // still be on its way out when mpirun returns: it is given a few seconds.
    const long long pid = r.pid;
    const std::string host = r.host;
    const bool here = same_host(host, m_self, m_self);
    for (double until = now_unix() + 5; here && !process_gone(pid) && now_unix() < until;) ::usleep(50000);
    const bool alive = here && !process_gone(pid);
    a.state = "killed";
    a.exit_code = -1;
    a.reason = alive ? "mpirun ended while rank 0 (PID " + std::to_string(pid) + ") still runs, without a record"
                     : "ended without a record (killed)";
    if (WIFEXITED(a.wait_status) && WEXITSTATUS(a.wait_status) == k_exit_fenced)
      a.reason += "; a rank stopped fenced (exit 77): OUTDIR/" + std::string(k_attempt_file) + " names another attempt";
  } else if (a.state != "finished" && a.state != "stopped" && a.state != "failed") {
    a.state = "none";
    a.reason = "status record in an unknown state";
  }
}

// mpirun on the hosts of `hostfile` (written from `placement`), up to and including the spotrun the ranks
// run: binding, the environment the ranks get, the user's mpirun options.
std::vector<std::string> Launcher::mpirun_command(const std::vector<Placement>& placement, const std::string& binding,
                                                  bool oversubscribed, const std::string& hostfile,
                                                  bool attempt) const {
  {
    std::ofstream out(hostfile, std::ios::trunc);
    out << "# written by spotrun launch\n";
    for (const auto& p : placement) out << p.host << " slots=" << p.ranks << "\n";
  }
  int ranks = 0;
  for (const auto& p : placement) ranks += p.ranks;
  // Ranks fill each host's slots in turn (--map-by slot), each bound to a core of its own where the
  // hosts have a core per rank (--bind-to core), else not bound.
  // The user's --map-by and --bind-to (after --) replace these.
  std::vector<std::string> argv{m_mpirun, "--hostfile", hostfile, "-np", std::to_string(ranks)};
  const auto given = [&](const char* option) {
    return std::any_of(m_opt.mpirun_args.begin(), m_opt.mpirun_args.end(), [&](const std::string& a) {
      return a == std::string("--") + option || a == std::string("-") + option;
    });
  };
  if (!given("map-by")) argv.insert(argv.end(), {"--map-by", "slot"});
  if (!given("bind-to")) argv.insert(argv.end(), {"--bind-to", binding});
  if (oversubscribed) argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  // The ranks' environment: spotrun's, Open MPI's, OpenMP's and Kokkos's variables of this process (one
  // thread per rank unless OMP_NUM_THREADS says otherwise), and the attempt's name (`attempt`).
  std::set<std::string> forwarded;
  if (attempt) forwarded.insert(RunStatus::attempt_variable());
  if (attempt && m_opt.stall_timeout > 0) forwarded.insert("SPOTRUN_STALL_TIMEOUT");
  for (char** e = environ; *e; ++e) {
    const std::string var(*e);
    const std::string name = var.substr(0, var.find('='));
    // A bundle's variables are set on each node by its own env.sh (docs/gpu.md).
    if (name.rfind("SPOTRUN_BUNDLE", 0) == 0) continue;
    for (const char* prefix : {"SPOTRUN_", "OMPI_", "OMP_", "KOKKOS_"})
      if (name.rfind(prefix, 0) == 0 && name.size() > std::strlen(prefix)) forwarded.insert(name);
  }
  if (!std::getenv("OMP_NUM_THREADS")) argv.insert(argv.end(), {"-x", "OMP_NUM_THREADS=1"});
  for (const auto& name : forwarded) argv.insert(argv.end(), {"-x", name});
  argv.insert(argv.end(), m_opt.mpirun_args.begin(), m_opt.mpirun_args.end());
  argv.push_back(m_spotrun);
  return argv;
}

// `spotrun doctor` on the hosts of `placement` before attempt `number`; returns the hosts it names as
// failing (none when it could not tell: the attempt then runs on every host, and launch.log says why).
std::vector<std::string> Launcher::run_doctor(int number, const std::vector<Placement>& placement,
                                              const std::string& binding, bool oversubscribed) {
  const std::string report = (fs::path(m_outdir) / "doctor.json").string();
  std::vector<std::string> argv =
      mpirun_command(placement, binding, oversubscribed, (fs::path(m_outdir) / "launch-hosts").string(), false);
  argv.insert(argv.end(), {"doctor", "--json", report, "--deck", m_deck, "--output-dir", m_outdir});
  for (const auto& s : m_opt.sets) argv.insert(argv.end(), {"--set", s});
  if (!m_opt.doctor_expect.empty()) argv.insert(argv.end(), {"--expect", m_opt.doctor_expect});
  if (m_opt.doctor_slow_factor > 0) argv.insert(argv.end(), {"--slow-factor", fixed(m_opt.doctor_slow_factor, 4)});
  const std::string tag = "attempt " + std::to_string(number) + ": doctor: ";
  log(tag + "spotrun doctor on " + plural(static_cast<long long>(placement.size()), "host") + " (report " + report + ")");
  const double started = now_unix();
  int out_fd = -1;
  const pid_t pid = spawn(argv, {}, &out_fd, nullptr, SIGKILL);
  if (pid < 0) {
    log(tag + "WARNING: cannot start mpirun: " + std::strerror(errno) + "; the attempt runs on every host");
    return {};
  }
  // Its table goes to this process's stdout; a stop request ends it at once (it writes nothing to keep).
  int status = 0;
  bool exited = false;
  while (!exited || out_fd >= 0) {
    std::vector<pollfd> fds{{g_signal_pipe[0], POLLIN, 0}};
    if (out_fd >= 0) fds.push_back({out_fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    if (fds[0].revents & POLLIN) note_signals(take_signals());
    if (m_stop_signal && !exited) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    if (fds.size() > 1 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[65536];
      const ssize_t n = ::read(out_fd, buf, sizeof buf);
      if (n > 0) {
        (void)!::write(STDOUT_FILENO, buf, static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(out_fd);
        out_fd = -1;
      }
    }
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
  }
  if (m_stop_signal) return {};
  const std::string took = " after " + fixed(now_unix() - started, 1) + " s";
  try {
    const doctor::DoctorSummary s = doctor::read_doctor_summary_file(report);
    if (s.healthy) {
      log(tag + "healthy" + took);
      return {};
    }
    std::string problems;
    for (const auto& p : s.problems) problems += (problems.empty() ? "" : "; ") + p;
    std::string hosts;
    for (const auto& h : s.failing_hosts) hosts += (hosts.empty() ? "" : ", ") + h;
    log(tag + "not healthy" + took + " (" + describe_wait(status) + "): " + problems +
        (hosts.empty() ? std::string("; it names no host: the attempt runs on every host")
                       : "; hosts left out of this attempt: " + hosts));
    return s.failing_hosts;
  } catch (const std::exception& e) {
    log(tag + "WARNING: no report" + took + " (" + describe_wait(status) + ": " + e.what() +
        "); the attempt runs on every host");
    return {};
  }
}

AttemptResult Launcher::run_attempt(int number, const std::vector<Placement>& placement, const std::string& binding,
                                    bool oversubscribed) {
  AttemptResult a;
  a.number = number;
  a.id = m_id + "/" + std::to_string(number);
  a.placement = placement;
  for (const auto& p : placement) a.ranks += p.ranks;

  // The hosts of this attempt, as mpirun reads them.
  const std::string hostfile = (fs::path(m_outdir) / "launch-hosts").string();
  const bool bind_given = std::any_of(m_opt.mpirun_args.begin(), m_opt.mpirun_args.end(),
                                      [](const std::string& w) { return w == "--bind-to" || w == "-bind-to"; });
  const std::string attempt_env = std::string(RunStatus::attempt_variable()) + "=" + a.id;
  std::vector<std::string> argv = mpirun_command(placement, binding, oversubscribed, hostfile, true);
  argv.insert(argv.end(), {"run", m_deck, "--output-dir", m_outdir});
  for (const auto& s : m_opt.sets) argv.insert(argv.end(), {"--set", s});

  std::string command;
  for (const auto& word : argv) command += (command.empty() ? "" : " ") + word;
  std::ostringstream where;
  for (const auto& p : placement) where << (where.tellp() > 0 ? " " : "") << p.host << ":" << p.ranks;
  log("attempt " + std::to_string(number) + ": start: " + plural(a.ranks, "rank") + " on " + where.str() +
      ", --bind-to " + (bind_given ? "as given after --" : binding) + (oversubscribed ? " (more ranks than cores: ranks yield when idle)" : "") + "; newest checkpoint: " +
      (newest_checkpoint_step(m_outdir) >= 0 ? "step " + std::to_string(newest_checkpoint_step(m_outdir)) : "none"));
  if (m_log) {
    std::fprintf(m_log, "  %s\n", command.c_str());
    std::fflush(m_log);
  }

  write_attempt_file(a);  // --- fencing: from here on the ranks of earlier attempts write nothing ---
  a.started = now_unix();
  int out_fd = -1, err_fd = -1;
  // The ranks' own watchdog waits twice the stall timeout (launcher/run/heartbeat.hpp): launch acts first.
  // A SPOTRUN_STALL_TIMEOUT in launch's own environment is passed on as it is.
  std::vector<std::string> env{attempt_env};
  if (m_opt.stall_timeout > 0 && !std::getenv("SPOTRUN_STALL_TIMEOUT"))
    env.push_back("SPOTRUN_STALL_TIMEOUT=" + fixed(2 * m_opt.stall_timeout, 3));
  const pid_t pid = spawn(argv, env, &out_fd, &err_fd, SIGUSR1);
  if (pid < 0) {
    a.ended = now_unix();
    a.state = "none";
    a.reason = std::string("cannot start mpirun: ") + std::strerror(errno);
    return a;
  }
  std::string pending[2];
  bool exited = false;
  double exited_at = 0, request_at = 0;
  int escalation = 0;  // 1 waiting to forward SIGUSR1, 2 SIGUSR1 sent, 3 SIGTERM sent, 4 SIGKILL sent
  int fds_open[2] = {out_fd, err_fd};
  std::map<std::string, HostBeat> beats;
  long long beat_step = -1;
  double beat_step_seen = a.started, next_watch = a.started + 1;
  long long grow_checked = newest_checkpoint_step(m_outdir);  // --grow: decide at each newer checkpoint
  double next_grow = a.started + 1;
  auto handle_request = [&](int count) {
    for (int k = 0; k < count; ++k) {
      if (escalation == 0) {
        escalation = 1;
        request_at = now_unix();
        log("attempt " + std::to_string(number) + ": " + launch_signal_name(m_stop_signal) +
            ": stopping the run with a checkpoint (SIGUSR1 to mpirun, which forwards it to every rank); no relaunch");
      } else if (escalation <= 2) {
        escalation = 3;
        ::kill(pid, SIGTERM);
        log("attempt " + std::to_string(number) + ": second stop request: SIGTERM to mpirun (the ranks are killed a "
            "second later; the previous checkpoint stays valid)");
      } else if (escalation == 3) {
        escalation = 4;
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        log("attempt " + std::to_string(number) + ": third stop request: SIGKILL to mpirun");
      }
    }
  };
  if (m_stop_signal) handle_request(1);
  for (;;) {
    std::vector<pollfd> fds;
    for (int s = 0; s < 2; ++s)
      if (fds_open[s] >= 0) fds.push_back({fds_open[s], POLLIN, 0});
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    for (std::size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const int s = fds[i].fd == fds_open[0] ? 0 : 1;
      char buf[65536];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        // Passed on as it comes, and scanned line by line for hosts and ranks mpirun reports.
        for (ssize_t w = 0; w < n;) {
          const ssize_t k = ::write(s == 0 ? STDOUT_FILENO : STDERR_FILENO, buf + w, static_cast<std::size_t>(n - w));
          if (k <= 0) break;
          w += k;
        }
        pending[s].append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = pending[s].find('\n')) != std::string::npos) {
          scan_mpirun_line(pending[s].substr(0, nl), a.notes);
          pending[s].erase(0, nl + 1);
        }
        if (pending[s].size() > 65536) pending[s].clear();
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (!pending[s].empty()) scan_mpirun_line(pending[s], a.notes);
        pending[s].clear();
        ::close(fds_open[s]);
        fds_open[s] = -1;
      }
    }
    if (fds.back().revents & POLLIN) {
      const std::vector<int> sigs = take_signals();
      note_signals(sigs);
      handle_request(static_cast<int>(sigs.size()));
    }
    if (escalation == 1 && !exited) {
      // SIGUSR1 goes to mpirun once this attempt's run has taken its output directory: every rank has
      // its handlers then (a signal to mpirun before its ranks exist would be lost, and the run would go
      // on). A run that never gets there within 30 s is ended with SIGTERM.
      io::StatusRecord r;
      if (record_of(a.id, r)) {
        ::kill(pid, SIGUSR1);
        escalation = 2;
        a.stop_forwarded = true;
      } else if (now_unix() - request_at > 30) {
        ::kill(pid, SIGTERM);
        escalation = 3;
        log("attempt " + std::to_string(number) + ": the run did not start within 30 s of the stop request: SIGTERM to mpirun");
      }
    }
    if (!exited && !a.stalled && escalation == 0 && now_unix() >= next_watch) {
      next_watch = now_unix() + 1;
      if (watch_heartbeats(a, beats, beat_step, beat_step_seen)) {
        log("attempt " + std::to_string(number) + ": stall: " + a.stall_reason + "; ending the attempt (every "
            "process of attempt " + a.id + " on the hosts that answer, then mpirun and its process group)");
        // The ranks first, while they are still blocked: none of them gets to write anything after this
        // (a stopped rank whose daemon dies is woken by SIGCONT). Then mpirun and everything of its
        // process group here (its ssh sessions, local daemons).
        fence(a);
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
      }
    }
    if (m_opt.grow && !exited && !a.stalled && !a.grow && escalation == 0 && now_unix() >= next_grow) {
      next_grow = now_unix() + 1;
      const long long newest = newest_checkpoint_step(m_outdir);
      if (newest > grow_checked) {
        grow_checked = newest;
        io::StatusRecord r;
        if (record_of(a.id, r) && consider_grow(a)) {
          // As a stop request: the ranks agree on a step, write a checkpoint and exit 75.
          ::kill(pid, SIGUSR1);
          a.grow = true;
          a.stop_forwarded = true;
        }
      }
    }
    if (!exited && ::waitpid(pid, &a.wait_status, WNOHANG) == pid) {
      exited = true;
      exited_at = now_unix();
    }
    if (exited && ((fds_open[0] < 0 && fds_open[1] < 0) || now_unix() - exited_at > 2)) break;
  }
  for (int s = 0; s < 2; ++s)
    if (fds_open[s] >= 0) ::close(fds_open[s]);
  // What mpirun started on this machine (its ssh clients, local daemons and ranks) ends with it; what is
  // left of its process group after 10 s is killed, so that the next attempt starts on a clean machine.
  for (double until = now_unix() + 10; ::kill(-pid, 0) == 0 && now_unix() < until;) ::usleep(50000);
  if (::kill(-pid, 0) == 0) {
    ::kill(-pid, SIGKILL);
    log("attempt " + std::to_string(number) + ": processes of mpirun's process group still ran 10 s after it ended: killed");
  }
  // mpirun's rsh launcher puts each ssh client in a process group of its own: one whose node was lost
  // silently waits on a half-open connection for as long as TCP allows. They carry the attempt's id.
  if (const int left = kill_local_processes_with(attempt_env))
    log("attempt " + std::to_string(number) + ": " + std::to_string(left) + " process(es) of the attempt left on this "
        "machine after mpirun (ssh clients in process groups of their own, ranks here): killed");
  a.ended = exited_at;
  read_outcome(a);
  if (a.stalled) {
    // A heartbeat written between launch's last look and the fence: the step reached is the last one any
    // heartbeat of the attempt reported, as the run report reads it.
    for (const io::HeartbeatRecord& b : io::read_heartbeats(m_outdir)) {
      if (b.attempt != a.id || b.step <= a.heartbeat_step) continue;
      a.heartbeat_step = b.step;
      if (b.step_unix >= 0) a.heartbeat_step_at = b.step_unix;
    }
    // OUTDIR/status.json says so: the run's own record stays "running" (its rank 0 could not end it).
    const std::string error = io::mark_status_stalled(
        m_outdir, {a.id, a.stall_reason, a.stalled_hosts, a.heartbeat_step, a.last_heartbeat > 0 ? utc(a.last_heartbeat) : ""});
    if (!error.empty()) log("attempt " + std::to_string(number) + ": WARNING: " + error);
    a.state = "stalled";
    a.exit_code = -1;
    a.reason = a.stall_reason;
  }
  return a;
}

// Reads this attempt's heartbeat files; true (and a.stall_reason) when the run stalled: its step has not
// advanced for the stall timeout, or a host's heartbeat has not changed for --stall-timeout (default 60 s)
// (this machine's clock).
bool Launcher::watch_heartbeats(AttemptResult& a, std::map<std::string, HostBeat>& beats, long long& step,
                                double& step_seen_at) {
  const double now = now_unix();
  double max_gap = 0;
  bool untimed_write = false, loop = false;
  for (const io::HeartbeatRecord& r : io::read_heartbeats(m_outdir)) {
    if (r.attempt != a.id || r.host.empty() || r.unix < 0) continue;
    HostBeat& b = beats[r.host];
    if (r.unix != b.value) {
      b.value = r.unix;
      b.changed_at = now;
      a.last_heartbeat = std::max(a.last_heartbeat, r.unix);
    }
    if (r.step >= 0) {
      loop = true;
      b.step = r.step;
      if (b.step > step) {
        step = b.step;
        step_seen_at = now;
        a.heartbeat_step = step;
        if (r.step_unix >= 0) a.heartbeat_step_at = r.step_unix;
      }
    }
    max_gap = std::max(max_gap, r.max_gap_seconds);
    if (r.writing_state && r.writes_timed == 0) untimed_write = true;
  }
  double timeout = m_opt.stall_timeout;
  if (timeout <= 0) {
    timeout = std::max(k_default_stall_seconds, 10 * max_gap);
    if (untimed_write) timeout = std::max(timeout, 600.0);
  }
  // A heartbeat is written by a thread of its own, through long steps and checkpoint writes alike: its
  // silence needs no allowance for them, so a node lost silently is seen after 60 s (or --stall-timeout)
  // however long the run's checkpoints take.
  const double beat_timeout = m_opt.stall_timeout > 0 ? m_opt.stall_timeout : k_default_stall_seconds;
  // A heartbeat is written every k_heartbeat_seconds: one not renewed for three of them has stopped.
  std::vector<std::string> silent;
  double longest_silence = 0;
  for (const auto& [host, b] : beats)
    if (now - b.changed_at > 3 * k_heartbeat_seconds) {
      silent.push_back(host);
      longest_silence = std::max(longest_silence, now - b.changed_at);
    }
  std::string hosts;
  for (const auto& h : silent) hosts += (hosts.empty() ? "" : ", ") + h;
  // Without a shared file system only the heartbeat of rank 0's host reaches the output directory: say
  // which hosts' heartbeats launch sees, not that every host's goes on.
  std::string going_on = "every host's heartbeat goes on";
  if (beats.size() < a.placement.size()) {
    std::string seen;
    for (const auto& [host, b] : beats) seen += (seen.empty() ? "" : ", ") + host;
    going_on = "heartbeats seen from " + std::to_string(beats.size()) + " of the " + std::to_string(a.placement.size()) +
               " hosts (" + seen + "), none stopped; the others' do not reach " + m_outdir + "/heartbeats (no shared file system?)";
  }
  if (loop && now - step_seen_at > timeout) {
    a.stall_reason = "step " + std::to_string(step) + " has not advanced for " + fixed(now - step_seen_at, 0) +
                     " s (stall timeout " + fixed(timeout, 0) + " s); " +
                     (silent.empty() ? going_on : "heartbeat stopped: " + hosts);
  } else if (longest_silence > beat_timeout) {
    a.stall_reason = "the heartbeat of " + hosts + " stopped " + fixed(longest_silence, 0) + " s ago (stall timeout " +
                     fixed(beat_timeout, 0) + " s)" + (loop ? ", at step " + std::to_string(step) : std::string(", before the time loop"));
  } else {
    return false;
  }
  // A run that has written its end record is on its way out (MPI_Finalize, its last files): not a stall.
  io::StatusRecord record;
  if (record_of(a.id, record) && !record.state.empty() && record.state != "running") return false;
  a.stalled = true;
  a.stalled_hosts = silent;
  return true;
}

// Fencing, 2: every process of the attempt (those whose environment holds SPOTRUN_LAUNCH_ATTEMPT=<its id>,
// never chosen by name) on each of its hosts that answers, killed; a host that does not answer within
// --probe-timeout is not used again.
std::vector<ProbeResult> Launcher::fence_hosts(const std::vector<std::string>& hosts, const std::string& id,
                                               std::vector<long long>& killed) {
  const std::string script =
      "n=0; for d in /proc/[0-9]*; do if tr '\\0' '\\n' 2>/dev/null <\"$d/environ\" | grep -qxF '" +
      std::string(RunStatus::attempt_variable()) + "=" + id +
      "'; then kill -KILL \"${d#/proc/}\" 2>/dev/null && n=$((n+1)); fi; done; echo \"fenced $n\"";
  const std::vector<ProbeResult> results = probe(hosts, {"/bin/sh", "-c", script});
  killed.assign(hosts.size(), -1);
  for (std::size_t k = 0; k < hosts.size(); ++k) {
    const std::string& out = results[k].output;
    const auto at = out.rfind("fenced ");
    if (!results[k].answered || at == std::string::npos) continue;
    const std::string count = out.substr(at + 7, out.find('\n', at) == std::string::npos ? std::string::npos
                                                                                        : out.find('\n', at) - at - 7);
    if (!count.empty() && count.size() < 10 && count.find_first_not_of("0123456789") == std::string::npos)
      killed[k] = std::stoll(count);
  }
  return results;
}

void Launcher::fence(AttemptResult& a) {
  const std::string tag = "attempt " + std::to_string(a.number) + ": fence: ";
  std::vector<std::string> hosts;
  for (const auto& p : a.placement) hosts.push_back(p.host);
  std::vector<long long> killed;
  const std::vector<ProbeResult> results = fence_hosts(hosts, a.id, killed);
  for (std::size_t k = 0; k < hosts.size(); ++k) {
    if (killed[k] >= 0) {
      log(tag + "host " + hosts[k] + ": " + std::to_string(killed[k]) + " process(es) of attempt " + a.id + " killed");
      a.fence_answered.push_back(hosts[k]);
    } else if (m_stop_signal) {
      log(tag + "host " + hosts[k] + ": not fenced: stopped on request");
    } else {
      log(tag + "host " + hosts[k] + " did not answer (" + (results[k].why.empty() ? "no count" : results[k].why) +
          "): it is left out of relaunches" + (m_opt.grow ? " until it answers again (--grow)" : ""));
      m_lost[hosts[k]].insert(a.id);
      a.fence_unanswered = true;
    }
  }
}

int Launcher::run() {
  m_id = std::to_string(static_cast<long long>(now_unix())) + "-" + std::to_string(::getpid());
  const std::string log_path = (fs::path(m_outdir) / "launch.log").string();
  m_log = std::fopen(log_path.c_str(), "a");
  if (!m_log) std::fprintf(stderr, "WARNING: cannot open %s: %s\n", log_path.c_str(), std::strerror(errno));
  {
    std::ostringstream head;
    head << "launch " << m_id << ": deck " << m_deck << ", output directory " << m_outdir << ", "
         << (!m_opt.hosts_command.empty() ? "hosts from --hosts-command '" + m_opt.hosts_command + "'"
             : m_opt.hostfile.empty()      ? std::string("no hostfile (this machine)")
                                           : "hostfile " + m_opt.hostfile)
         << (m_opt.grow ? ", --grow" : "") << ", "
         << (m_opt.np > 0 ? "-np " + std::to_string(m_opt.np) : std::string("ranks: every slot"))
         << (m_opt.ranks_per_node > 0 ? ", " + std::to_string(m_opt.ranks_per_node) + " ranks per node" : std::string())
         << ", at least " << plural(m_opt.min_ranks, "rank") << ", at most " << plural(m_opt.max_restarts, "restart")
         << ", stall timeout "
         << (m_opt.stall_timeout > 0 ? fixed(m_opt.stall_timeout, 0) + " s"
                                     : std::string("max(60 s, 10 x the longest gap between steps); a host's heartbeat: 60 s"))
         << ", mpirun " << m_mpirun;
    log(head.str());
  }
  long long newest_at_last_end = newest_checkpoint_step(m_outdir);
  // The kind of failure of the previous attempt ("" when it did not fail): "failed" (the run's record),
  // "killed" (a record left "running"), "none" (mpirun could not start the run).
  std::string last_failure;
  for (int attempt = 1;; ++attempt) {
    note_signals(take_signals());
    if (m_stop_signal) return stop_exit(m_stop_signal, "before attempt " + std::to_string(attempt));
    std::vector<Placement> capacity;
    std::map<std::string, int> cores;
    m_prep_started = now_unix();
    const bool any = hosts_for_attempt(attempt, capacity, cores);
    if (m_stop_signal) return stop_exit(m_stop_signal, "before attempt " + std::to_string(attempt));
    std::vector<Placement> plan = any ? plan_ranks(capacity, m_opt.np) : std::vector<Placement>{};
    int ranks = 0;
    for (const auto& p : plan) ranks += p.ranks;
    if (ranks < m_opt.min_ranks)
      return finish(1, "gave up: only " + plural(ranks, "rank") + " fit on the hosts left, fewer than --min-ranks " +
                           std::to_string(m_opt.min_ranks));
    // Binding: a core per rank where every host has a core for each of its ranks and each rank runs one
    // thread; otherwise none (OpenMP threads), and on a host with more ranks than cores the ranks yield
    // the core while they wait for messages (Open MPI cannot tell: the slots of the hostfile allow them).
    const char* threads = std::getenv("OMP_NUM_THREADS");
    bool oversubscribed = false;
    for (const auto& p : plan) {
      const auto c = cores.find(p.host);
      if (c == cores.end() || p.ranks > c->second) oversubscribed = true;
    }
    // A GPU build leaves the ranks unbound: each binds itself to cores near its GPU (comm/cpu_binding.hpp),
    // which mpirun's core-by-slot binding does not know.
    const bool bind = !k_gpu_build && !oversubscribed && !(threads && std::atoi(threads) > 1);
    if (m_opt.doctor) {
      // spotrun doctor on the hosts of the plan; the hosts it names are left out of this attempt (and
      // checked again before the next one).
      const std::vector<std::string> failing = run_doctor(attempt, plan, bind ? "core" : "none", oversubscribed);
      if (m_stop_signal) return stop_exit(m_stop_signal, "before attempt " + std::to_string(attempt));
      if (!failing.empty()) {
        std::vector<Placement> healthy;
        for (const auto& c : capacity) {
          const bool bad = std::any_of(failing.begin(), failing.end(),
                                       [&](const std::string& h) { return same_host(c.host, h, m_self); });
          if (!bad) healthy.push_back(c);
        }
        plan = plan_ranks(healthy, m_opt.np);
        ranks = 0;
        for (const auto& p : plan) ranks += p.ranks;
        if (ranks < m_opt.min_ranks)
          return finish(1, "gave up: only " + plural(ranks, "rank") + " fit on the hosts spotrun doctor passed, fewer "
                           "than --min-ranks " + std::to_string(m_opt.min_ranks));
      }
    }
    ++m_attempts;
    AttemptResult a = run_attempt(attempt, plan, bind ? "core" : "none", oversubscribed);

    // What happened, and what it cost.
    const long long newest = newest_checkpoint_step(m_outdir);
    // The step reached: the record's, else (killed) the last thermo row's, written at `reached_at`.
    long long reached = a.start_step;
    double reached_at = a.ended;
    if (a.state == "finished" || a.state == "stopped") reached = std::max(reached, a.step);
    else if (a.state == "stalled" && a.heartbeat_step >= 0) {
      // The last step a heartbeat reported, reached when that heartbeat says.
      reached = std::max(reached, a.heartbeat_step);
      if (a.heartbeat_step_at > 0) reached_at = a.heartbeat_step_at;
    } else if (a.loop_started > 0) reached = std::max(reached, last_thermo_step(m_outdir, &reached_at));
    long long redone = 0;
    double lost = 0;
    if (a.state != "finished" && a.loop_started > 0 && reached >= 0) {
      const long long resume_at = a.state == "stopped" && a.checkpoint_step >= 0 ? a.checkpoint_step : std::max(newest, 0LL);
      redone = std::max(0LL, reached - resume_at);
      const double loop_seconds = reached_at - a.loop_started;
      if (redone > 0 && reached > a.start_step && loop_seconds > 0)
        lost = static_cast<double>(redone) * loop_seconds / static_cast<double>(reached - a.start_step) * a.ranks;
    }
    m_redone += redone;
    m_lost_rank_seconds += lost;
    std::ostringstream end;
    end << "attempt " << attempt << ": end after " << fixed(a.ended - a.started, 1) << " s: " << a.state;
    if (a.exit_code >= 0 && a.state != "finished") end << " (exit " << a.exit_code << ")";
    if (!a.reason.empty()) end << ": " << a.reason;
    end << "; mpirun " << describe_wait(a.wait_status);
    for (const auto& e : a.notes.events) end << "; " << e;
    if (a.start_step >= 0) end << "; started at step " << a.start_step;
    if (reached >= 0 && a.state != "finished") end << ", reached step " << reached;
    if (a.state == "finished") end << ", finished at step " << a.step;
    if (a.state != "finished")
      end << "; newest checkpoint: " << (newest >= 0 ? "step " + std::to_string(newest) : std::string("none")) << "; "
          << plural(redone, "step") << " redone (" << fixed(lost, 1) << " rank-seconds lost)";
    log(end.str());

    {
      std::vector<std::string> names;
      for (const auto& e : m_hosts) names.push_back(e.name);
      for (const auto& h : hosts_lost_by_mpirun(a.notes.lost_hosts, names, a.fence_answered, m_self))
        if (m_lost[h].insert(a.id).second)
          log("attempt " + std::to_string(attempt) + ": host " + h + " is left out of relaunches" +
              (m_opt.grow ? " until it answers again (--grow)" : std::string()) + ": mpirun reported it failed");
      // The hosts mpirun named that answered the fence, as hosts_lost_by_mpirun would name them without it.
      for (const auto& h : hosts_lost_by_mpirun(a.notes.lost_hosts, a.fence_answered, {}, m_self))
        log("attempt " + std::to_string(attempt) + ": host " + h + " stays in: mpirun lost its daemon there after "
            "launch's fence, which that host answered");
    }
    for (const auto& h : a.stop_hosts)
      for (const auto& e : m_hosts)
        if (same_host(e.name, h, m_self) && m_dropped.insert(e.name).second)
          log("attempt " + std::to_string(attempt) + ": host " + e.name + " is not used again: it got a spot notice");
    if (a.loop_started > 0) m_relaunch_seconds.push_back(std::max(0.0, a.loop_started - m_prep_started));
    // Why it ended, in the run report's ledger (docs/report.md, "ended_by").
    {
      auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
        return s;
      };
      std::string ended_by;
      if (a.grow && a.state == "stopped") ended_by = "grow: " + std::to_string(a.ranks) + " -> " + std::to_string(a.grow_to) + " ranks";
      else if (a.stalled) ended_by = "stall" + (a.stalled_hosts.empty() ? std::string() : ": heartbeat stopped on " + join(a.stalled_hosts));
      else if (!a.notes.lost_hosts.empty()) ended_by = "node lost: " + join(a.notes.lost_hosts);
      else if (!a.stop_hosts.empty()) ended_by = "spot notice: " + join(a.stop_hosts);
      else if (a.state == "stopped" && m_stop_signal) ended_by = std::string("stop request: ") + launch_signal_name(m_stop_signal);
      else if (a.state == "killed" && !a.notes.events.empty()) ended_by = "rank lost: " + a.notes.events.front();
      else ended_by = a.state + (a.reason.empty() ? std::string() : ": " + a.reason);
      annotate_ledger(a, ended_by);
    }

    if (a.state == "finished") return finish(0, "finished at step " + std::to_string(a.step));
    if (m_stop_signal) {
      if (a.state == "stopped") return finish(75, "stopped on request with a checkpoint at step " +
                                                      std::to_string(a.checkpoint_step >= 0 ? a.checkpoint_step : newest) +
                                                      "; run the same command to resume");
      return stop_exit(m_stop_signal, "during attempt " + std::to_string(attempt) + " (" + a.state + ")");
    }
    if (a.grow && a.state == "stopped") {
      // Growing back: not a failure, and not counted against --max-restarts.
      for (double until = now_unix() + 10; run_lock_held(m_outdir) && now_unix() < until;) ::usleep(50000);
      last_failure.clear();
      newest_at_last_end = newest;
      log("attempt " + std::to_string(attempt) + ": relaunching on more ranks (grow) from the stop checkpoint at step " +
          std::to_string(a.checkpoint_step >= 0 ? a.checkpoint_step : newest));
      continue;
    }
    if (a.state == "stopped" && a.reason == "time limit")
      return finish(75, "stopped by the run's time limit (run.time_limit) with a checkpoint at step " +
                            std::to_string(a.checkpoint_step) + "; not relaunched");
    if (a.state == "failed" && a.exit_code == k_exit_bad_input)
      return finish(2, "gave up: the run refused its input (exit 2: " + a.reason + "); a relaunch cannot help");
    // The same kind of failure twice in a row from the same checkpoint is not retried again; another
    // kind (a run killed, then a start that fails while the lost host's daemons time out) is.
    const bool failed = a.state != "stopped";
    if (failed && a.state == last_failure && newest <= newest_at_last_end)
      return finish(1, "gave up: attempt " + std::to_string(attempt) + " failed, as attempt " +
                           std::to_string(attempt - 1) + " did, without a new checkpoint in between (" +
                           (newest >= 0 ? "newest: step " + std::to_string(newest) : std::string("none yet")) +
                           "): the failure repeats without progress; last cause: " + a.reason);
    if (m_restarts >= m_opt.max_restarts)
      return finish(1, "gave up after " + plural(m_restarts, "restart") + " (--max-restarts " +
                           std::to_string(m_opt.max_restarts) + "); last cause: " + a.state + ": " + a.reason);
    last_failure = failed ? a.state : std::string();
    newest_at_last_end = newest;
    // The next attempt takes the output directory's lock: wait until this one's rank 0 released it. After
    // a fence that a host did not answer, its rank 0 may hold it (frozen, partitioned): the next attempt's
    // rank 0 waits for that fenced holder itself (launcher/run/output_lock.cpp).
    const bool holder_away = a.stalled && a.fence_unanswered;
    for (double until = now_unix() + 10; !holder_away && run_lock_held(m_outdir) && now_unix() < until;) ::usleep(50000);
    if (holder_away && run_lock_held(m_outdir))
      log("attempt " + std::to_string(attempt) + ": the run lock is held, by a process of a host that did not answer "
          "the fence: the next attempt waits for it (fenced, it ends at its next write)");
    else if (run_lock_held(m_outdir))
      log("attempt " + std::to_string(attempt) + ": WARNING: the run lock of the output directory is still held "
          "10 s after mpirun ended (a rank of this attempt still running?)");
    ++m_restarts;
    log("attempt " + std::to_string(attempt) + ": relaunching (restart " + std::to_string(m_restarts) + " of at most " +
        std::to_string(m_opt.max_restarts) + ") from the newest valid checkpoint");
  }
}

// The output directory's supervisor lock: one launch per output directory.
int take_launch_lock(const std::string& outdir, std::string& error) {
  const std::string path = (fs::path(outdir) / ".spotrun-launch.lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return -1;
  }
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_SETLK, &fl) != 0) {
    char holder[256] = {};
    (void)!::pread(fd, holder, sizeof holder - 1, 0);
    for (char& c : holder)
      if (c == '\n') c = ' ';
    error = "output directory '" + outdir + "' is supervised by another spotrun launch (" +
            (holder[0] ? std::string(holder) : std::string("holder unknown")) + ")";
    ::close(fd);
    return -1;
  }
  const std::string mine = "host " + this_host() + " pid " + std::to_string(::getpid()) + " started " + utc(now_unix()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, mine.data(), mine.size(), 0);
  return fd;
}

}  // namespace

int launch_main(int argc, char** argv) {
  // "-np N" as mpirun spells it; everything after "--" goes to mpirun.
  std::vector<std::string> args;
  LaunchOptions opt;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      opt.mpirun_args.assign(argv + i + 1, argv + argc);
      break;
    }
    args.push_back(a == "-np" ? "--np" : a.rfind("-np=", 0) == 0 ? "--np=" + a.substr(4) : a);
  }
  CLI::App app{"spotrun launch: run a deck under mpirun on ad hoc nodes, relaunching from the newest checkpoint on "
               "the hosts left when ranks or hosts fail (docs/cloud.md)",
               "spotrun launch"};
  app.add_option("deck", opt.deck_path, "Deck file (TOML)")->required();
  app.add_option("--np", opt.np, "Ranks (-np N): at most this many, fewer when the hosts left have fewer slots "
                                 "(default: every slot of the hostfile; without a hostfile: this machine's cores)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--hostfile", opt.hostfile, "Open MPI hostfile, read again before every attempt (default: this machine)");
  app.add_option("--ranks-per-node", opt.ranks_per_node, "Ranks on each host (default: its slots, else its cores)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--max-restarts", opt.max_restarts, "Relaunches at most (default 10)")->check(CLI::Range(0, 1000000));
  app.add_option("--min-ranks", opt.min_ranks, "Give up rather than run on fewer ranks (default 1)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--output-dir", opt.output_dir, "Output directory (default: run.output_dir or runs/<deck stem>)");
  app.add_option("--set", opt.sets, "Override a deck key: section.key=value (repeatable), passed on to spotrun run");
  app.add_option("--mpirun", opt.mpirun, "mpirun to use (default: the one next to spotrun, else the first on PATH)");
  app.add_option("--probe-timeout", opt.probe_timeout, "Seconds a host has to answer its probe (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--stall-timeout", opt.stall_timeout,
                 "Seconds without step progress, or without a host's heartbeat, after which the attempt is declared "
                 "stalled, ended and relaunched (default: without step progress, the larger of 60 s and 10 times the "
                 "longest time between two steps, checkpoint writes included; without a host's heartbeat, 60 s)")
      ->check(CLI::Range(6.0, 1e7));
  app.add_option("--hosts-command", opt.hosts_command,
                 "Shell command that prints the hosts, one per line as in a hostfile (HOST [slots=N]); run before "
                 "every attempt and, with --grow, at every checkpoint (instead of --hostfile)");
  app.add_flag("--grow", opt.grow,
               "When hosts come back (the hostfile or --hosts-command names more that answer), stop at the next "
               "checkpoint and relaunch on more ranks if the measured cost of a relaunch is below the time it saves");
  app.add_flag("--doctor", opt.doctor, "Run spotrun doctor on the hosts before each attempt and leave out those it names");
  app.add_option("--doctor-expect", opt.doctor_expect, "Expected values for spotrun doctor (its --expect FILE)")
      ->check(CLI::ExistingFile);
  app.add_option("--doctor-slow-factor", opt.doctor_slow_factor, "spotrun doctor's --slow-factor (implies --doctor)")
      ->check(CLI::Range(0.01, 0.99));
  app.footer("Arguments after -- go to mpirun. Exit codes: 0 finished, 75 stopped on request (SIGINT, SIGTERM) or by the "
             "run's time limit with a checkpoint, 1 gave up, 2 bad usage or input.");
  std::vector<char*> cargv{argv[0]};
  std::vector<std::string> storage = args;
  for (auto& s : storage) cargv.push_back(s.data());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : k_exit_bad_input;
  }
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK")) {
    std::fprintf(stderr, "ERROR: spotrun launch starts mpirun itself: run it on its own, not under mpirun or srun\n");
    return k_exit_bad_input;
  }
  if (!opt.hostfile.empty() && !opt.hosts_command.empty()) {
    std::fprintf(stderr, "ERROR: --hostfile and --hosts-command both name the hosts: give one of them\n");
    return k_exit_bad_input;
  }
  if (opt.grow && opt.hostfile.empty() && opt.hosts_command.empty()) {
    std::fprintf(stderr, "ERROR: --grow needs --hostfile or --hosts-command (where the hosts to grow onto are named)\n");
    return k_exit_bad_input;
  }
  if (opt.np > 0 && opt.min_ranks > opt.np) {
    std::fprintf(stderr, "ERROR: --min-ranks %d is more than -np %d\n", opt.min_ranks, opt.np);
    return k_exit_bad_input;
  }
  // The deck first, exactly as spotrun run reads it (without MPI: launch has none).
  std::string outdir;
  long long total_steps = 0;
  try {
    Deck deck = Deck::parse(read_regular_file(opt.deck_path, "deck", k_deck_max_bytes), opt.deck_path);
    for (const auto& s : opt.sets) deck.apply_set(s);
    deck.validate();
    outdir = opt.output_dir.empty() ? deck.get_string("run.output_dir") : opt.output_dir;
    if (outdir.empty()) outdir = (fs::path("runs") / fs::path(opt.deck_path).stem()).string();
    if (!opt.hostfile.empty()) parse_hostfile(read_regular_file(opt.hostfile, "hostfile", 1 << 20), opt.hostfile);
    if (!opt.hosts_command.empty()) hosts_from_command(opt.hosts_command, std::max(30.0, opt.probe_timeout));
    total_steps = deck.get_int("run.steps");
  } catch (const InputError& e) {
    std::fprintf(stderr, "ERROR: %s\n", e.what());
    return k_exit_bad_input;
  }
  const std::string mpirun = find_mpirun(opt.mpirun);
  if (mpirun.empty()) {
    std::fprintf(stderr, "ERROR: %s not found (give its path with --mpirun)\n",
                 opt.mpirun.empty() ? "mpirun (next to spotrun or on PATH)" : ("--mpirun " + opt.mpirun).c_str());
    return k_exit_bad_input;
  }
  // The ranks run this spotrun; from a bundle, its wrapper (bin/spotrun sets the bundle's environment).
  std::string spotrun = self_executable();
  if (const char* bundle = std::getenv("SPOTRUN_BUNDLE"))
    if (executable((fs::path(bundle) / "bin" / "spotrun").string())) spotrun = (fs::path(bundle) / "bin" / "spotrun").string();
  if (spotrun.empty()) {
    std::fprintf(stderr, "ERROR: cannot tell where this spotrun is (/proc/self/exe)\n");
    return k_exit_failure;
  }
  std::error_code ec;
  outdir = fs::absolute(outdir, ec).lexically_normal().string();
  while (outdir.size() > 1 && outdir.back() == '/') outdir.pop_back();
  fs::create_directories(outdir, ec);
  if (ec) {
    std::fprintf(stderr, "ERROR: cannot create output directory '%s': %s\n", outdir.c_str(), ec.message().c_str());
    return k_exit_bad_input;
  }
  std::string error;
  const int lock = take_launch_lock(outdir, error);
  if (lock < 0) {
    std::fprintf(stderr, "ERROR: %s\n", error.c_str());
    return k_exit_bad_input;
  }
  if (!opt.hostfile.empty()) opt.hostfile = fs::absolute(opt.hostfile, ec).string();
  if (opt.doctor_slow_factor > 0) opt.doctor = true;
  if (!opt.doctor_expect.empty()) {
    opt.doctor_expect = fs::absolute(opt.doctor_expect, ec).string();
    opt.doctor = true;
  }
  const std::string deck = fs::absolute(opt.deck_path, ec).lexically_normal().string();
  install_launch_signals();
  Launcher launcher(opt, outdir, deck, mpirun, spotrun, total_steps);
  const int code = launcher.run();
  (void)!::ftruncate(lock, 0);
  ::close(lock);
  return code;
}

}  // namespace spotrun::launcher
