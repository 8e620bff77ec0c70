#include "launcher/run/output_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "comm/errors.hpp"
#include "launcher/run/fence.hpp"
#include "launcher/run/stop.hpp"

namespace spotrun::launcher {
namespace {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::string now_utc() {
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return stamp;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[512];
  for (off_t at = 0; text.size() < 4096;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    at += n;
  }
  return text;
}

// "host H pid P started T" from the lock file (io/run_directory.hpp's LockRecord); "" when it is empty.
// *attempt: the spotrun launch attempt of the holder ("" when not under launch).
std::string describe(const std::string& content, std::string* host = nullptr, long* pid = nullptr,
                     std::string* attempt = nullptr) {
  const io::LockRecord r = io::parse_lock(content);
  if (host) *host = r.host;
  if (attempt) *attempt = r.attempt;
  if (pid) *pid = r.pid_number();
  if (r.empty()) return {};
  const auto or_mark = [](const std::string& v) { return v.empty() ? std::string("?") : v; };
  return "host " + or_mark(r.host) + ", PID " + or_mark(r.pid) + ", started " + or_mark(r.started) +
         (r.attempt.empty() ? std::string() : ", attempt " + r.attempt);
}

// How long the first rank of the current attempt waits for a lock held by a fenced attempt (one that
// OUTDIR/attempt no longer names): that holder ends at its next write, or its lock goes with it when its
// node stays away (an NFSv4 lease expires after 90 s by default).
constexpr double k_fenced_holder_wait_seconds = 300;

}  // namespace

OutputDirectoryLock::OutputDirectoryLock(const comm::Communicator& comm, const std::string& outdir,
                                         const std::string& launch_attempt) {
  std::string error, warning;
  arm_attempt_fence(outdir, launch_attempt);  // --- fencing: every rank (heartbeat threads check too) ---
  if (comm.is_root()) {
    check_attempt_fence("the lock file");
    const std::string path = (std::filesystem::path(outdir) / file_name()).string();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
      error = "cannot open the lock file '" + path + "' of output directory '" + outdir + "': " + std::strerror(errno);
    } else {
      const std::string previous = read_all(fd);
      std::string holder_host, holder_attempt;
      long holder_pid = -1;
      const std::string holder = describe(previous, &holder_host, &holder_pid, &holder_attempt);
      struct flock fl {};
      fl.l_type = F_WRLCK;
      fl.l_whence = SEEK_SET;
      int rc;
      do {
        rc = ::fcntl(fd, F_SETLK, &fl);
      } while (rc != 0 && errno == EINTR);
      // --- fencing: a holder of an older attempt of spotrun launch (not the one OUTDIR/attempt names, which
      // is ours) ends at its next write; wait for it rather than refuse the directory ---
      if (rc != 0 && (errno == EAGAIN || errno == EACCES) && !own_attempt().empty() && !holder_attempt.empty() &&
          holder_attempt != own_attempt()) {
        std::fprintf(stderr, "spotrun: the lock of output directory '%s' is held by attempt %s (%s), no longer the "
                     "current one: waiting up to %.0f s for it to end (fenced)\n", outdir.c_str(),
                     holder_attempt.c_str(), holder.c_str(), k_fenced_holder_wait_seconds);
        std::fflush(stderr);
        for (int k = 0; k < static_cast<int>(k_fenced_holder_wait_seconds * 5); ++k) {
          ::usleep(200000);
          check_attempt_fence("the lock file");
          rc = ::fcntl(fd, F_SETLK, &fl);
          if (rc == 0 || (errno != EAGAIN && errno != EACCES && errno != EINTR)) break;
        }
        if (rc == 0) warning = "took the lock of output directory '" + outdir + "' once fenced attempt " +
                               holder_attempt + " let go of it";
        else errno = EAGAIN;
      }
      const int err = rc == 0 ? 0 : errno;
      bool take = false;
      if (rc == 0) {
        take = true;
        if (!holder.empty() && warning.empty())
          warning = "taking over the lock of output directory '" + outdir + "' left by a run that ended without "
                    "releasing it (" + holder + ")";
      } else if (err == EAGAIN || err == EACCES) {
        error = "output directory '" + outdir + "' is in use by another spotrun run (" +
                (holder.empty() ? std::string("holder not yet recorded") : holder) +
                "); wait for it to end, or use another --output-dir";
      } else {
        // No fcntl locks on this file system: judge by the recorded holder (only on its own host).
        const bool alive = holder_pid > 0 && (::kill(static_cast<pid_t>(holder_pid), 0) == 0 || errno == EPERM);
        if (holder.empty()) {
          take = true;
        } else if (holder_host == this_host() && !alive) {
          take = true;
          warning = "taking over the lock of output directory '" + outdir + "' left by a run that is gone (" + holder +
                    "); the file system has no fcntl locks (" + std::strerror(err) + ")";
        } else {
          error = "output directory '" + outdir + "' is in use by another spotrun run (" + holder +
                  "), as far as its lock file says (the file system has no fcntl locks: " + std::strerror(err) +
                  "); if that run is gone, delete " + path;
        }
      }
      if (take) {
        // --- fencing: the lock file names the attempt that holds it ---
        const std::string mine = io::lock_text({this_host(), std::to_string(::getpid()), now_utc(), own_attempt()});
        if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) != static_cast<ssize_t>(mine.size()))
          error = "cannot write the lock file '" + path + "': " + std::strerror(errno);
        else
          m_fd = fd;
      }
      if (m_fd < 0) ::close(fd);
    }
  }
  comm.agree<InputError>(error.empty(), error);
  if (comm.is_root() && !warning.empty()) std::fprintf(stderr, "WARNING: %s\n", warning.c_str());
  set_lock_fd_for_signal(m_fd);
}

OutputDirectoryLock::~OutputDirectoryLock() {
  if (m_fd < 0) return;
  set_lock_fd_for_signal(-1);
  if (fenced_by().empty()) (void)::ftruncate(m_fd, 0);  // a fenced attempt's process writes nothing
  ::close(m_fd);  // releases the lock
}

}  // namespace spotrun::launcher
