#include "launcher/slurm/slurm_env.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "io/child_process.hpp"

namespace spotrun::launcher {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

double seconds_until(std::time_t end) { return std::difftime(end, std::time(nullptr)); }

}  // namespace

std::optional<std::time_t> parse_slurm_timestamp(const std::string& text) {
  static const std::regex re(R"((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2}))");
  std::smatch m;
  const std::string t = trim(text);
  if (!std::regex_match(t, m, re)) return std::nullopt;
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  tm.tm_isdst = -1;  // Slurm prints local time; let the C library decide on daylight saving time
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    return std::nullopt;
  const std::time_t t_end = std::mktime(&tm);
  if (t_end == static_cast<std::time_t>(-1)) return std::nullopt;
  return t_end;
}

std::optional<std::time_t> parse_scontrol_end_time(const std::string& out) {
  // Fields are separated by spaces or newlines; "EndTime=" is preceded by whitespace or starts a line.
  static const std::regex re(R"((^|\s)EndTime=(\S+))");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return std::nullopt;
  return parse_slurm_timestamp(m[2]);
}

std::optional<std::string> run_command(const std::vector<std::string>& argv, double timeout_seconds,
                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::string> {
    if (error) *error = why;
    return std::nullopt;
  };
  if (argv.empty()) return fail("no command");
  // The child starts with default signal dispositions and an empty mask (spotrun's stop handlers and
  // whatever MPI installed do not belong in it).
  const io::SpawnedChild child = io::spawn_with_pipes(argv);
  if (child.pid < 0) {
    if (child.failed_call == std::string("pipe2")) return fail(std::string("pipe: ") + std::strerror(child.error));
    return fail("cannot run " + argv[0] + ": " + std::strerror(child.error));
  }
  const pid_t pid = child.pid;

  std::string out, err;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  bool timed_out = false;
  pollfd fds[2] = {{child.out, POLLIN, 0}, {child.err, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t got = read(f.fd, buf, sizeof buf);
      if (got > 0) {
        (f.fd == child.out ? out : err).append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return fail(argv[0] + " did not answer within " + std::to_string(static_cast<int>(timeout_seconds)) + " s");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = argv[0] + (WIFEXITED(status) ? " exited with code " + std::to_string(WEXITSTATUS(status))
                                                   : std::string(" was killed by a signal"));
    const std::string e = trim(err);
    if (!e.empty()) why += ": " + e;
    return fail(why);
  }
  if (error) *error = err;
  return out;
}

std::optional<double> slurm_seconds_left(std::string* note) {
  const char* job = std::getenv("SLURM_JOB_ID");
  if (!job || !*job) return std::nullopt;
  const std::string id = job;
  if (id.find_first_not_of("0123456789_") != std::string::npos) {
    if (note) *note = "SLURM_JOB_ID '" + id + "' is not a job id";
    return std::nullopt;
  }
  constexpr double k_timeout = 10;
  std::string err1, err2;
  if (auto out = run_command({"squeue", "-h", "-j", id, "-o", "%e"}, k_timeout, &err1)) {
    const std::string text = trim(*out);
    if (auto end = parse_slurm_timestamp(text)) return seconds_until(*end);
    // squeue answered but the job has no end time (no time limit: "N/A", "NONE", ...)
    if (!text.empty() && text.find('\n') == std::string::npos) {
      if (note) *note = "job " + id + " has no time limit (squeue: end time " + text + ")";
      return std::nullopt;
    }
    err1 = "squeue printed '" + text + "'";
  }
  if (auto out = run_command({"scontrol", "show", "job", id}, k_timeout, &err2)) {
    if (auto end = parse_scontrol_end_time(*out)) return seconds_until(*end);
    if (note) *note = "job " + id + " has no end time (scontrol show job)";
    return std::nullopt;
  }
  if (note) *note = "cannot read the end time of Slurm job " + id + ": " + err1 + "; " + err2;
  return std::nullopt;
}

double time_limit_with_slurm(const comm::Communicator& comm, double deck_limit, double start_wtime) {
  double left = -1e300;  // none
  if (comm.is_root()) {
    std::string note;
    if (auto s = slurm_seconds_left(&note)) {
      left = *s;
      std::printf("Slurm job %s ends in %.0f s: stopping with a checkpoint at least %.0f s before\n",
                  std::getenv("SLURM_JOB_ID"), left, k_slurm_exit_margin);
    } else if (!note.empty()) {
      std::printf("Slurm: %s\n", note.c_str());
    }
    std::fflush(stdout);
  }
  SPOTRUN_MPI_CHECK(MPI_Bcast(&left, 1, MPI_DOUBLE, 0, comm.mpi()));
  if (left == -1e300) return deck_limit;
  // At least a millisecond: 0 would mean "no limit" to the run loop.
  const double slurm_limit = std::max(1e-3, (MPI_Wtime() - start_wtime) + left - k_slurm_exit_margin);
  return deck_limit > 0 ? std::min(deck_limit, slurm_limit) : slurm_limit;
}

}  // namespace spotrun::launcher
