// The machine `spotrun launch` runs on (this_machine.hpp).
#include "launcher/launch/this_machine.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comm/errors.hpp"
#include "launcher/run/run_status.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher::impl {

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

io::SpawnedChild start_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                             bool merge_stderr, int parent_death_signal) {
  static const std::vector<int> defaults{SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2};
  io::SpawnOptions options;
  options.added_environment = &env;
  options.default_signals = &defaults;
  options.own_process_group = true;
  options.merge_stderr = merge_stderr;
  options.parent_death_signal = parent_death_signal;
  options.exec_error_prefix = "spotrun launch: ";
  return io::spawn_with_pipes(argv, options);
}

std::string describe_wait(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status));
  return "ended";
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

}  // namespace spotrun::launcher::impl
