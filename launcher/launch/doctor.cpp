// spotrun doctor before an attempt of `spotrun launch` (--doctor): the hosts it names are left out.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "comm/number_text.hpp"
#include "launcher/doctor/report.hpp"
#include "launcher/launch/supervisor.hpp"
#include "launcher/launch/this_machine.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher::impl {

// `spotrun doctor` on the hosts of `placement` before attempt `number`; returns the hosts it names as
// failing (none when it could not tell: the attempt then runs on every host, and launch.log says why).
std::vector<std::string> Launcher::run_doctor(int number, const AttemptPlan& plan) {
  const std::vector<Placement>& placement = plan.placement;
  const std::string report = (fs::path(m_outdir) / "doctor.json").string();
  std::vector<std::string> argv =
      mpirun_command(plan, (fs::path(m_outdir) / "launch-hosts").string(), false);
  argv.insert(argv.end(), {"doctor", "--json", report, "--deck", m_deck, "--output-dir", m_outdir});
  for (const auto& s : m_opt.sets) argv.insert(argv.end(), {"--set", s});
  if (!m_opt.doctor_expect.empty()) argv.insert(argv.end(), {"--expect", m_opt.doctor_expect});
  if (m_opt.doctor_slow_factor > 0) argv.insert(argv.end(), {"--slow-factor", fixed(m_opt.doctor_slow_factor, 4)});
  const std::string tag = "attempt " + std::to_string(number) + ": doctor: ";
  log(tag + "spotrun doctor on " + plural(static_cast<long long>(placement.size()), "host") + " (report " + report + ")");
  const double started = now_unix();
  const io::SpawnedChild child = start_child(argv, {}, true, SIGKILL);
  if (child.pid < 0) {
    log(tag + "WARNING: cannot start mpirun: " + std::strerror(child.error) + "; the attempt runs on every host");
    return {};
  }
  const pid_t pid = child.pid;
  int out_fd = child.out;
  // Its table goes to this process's stdout; a stop request ends it at once (it writes nothing to keep).
  int status = 0;
  bool exited = false;
  while (!exited || out_fd >= 0) {
    std::vector<pollfd> fds{{signal_fd(), POLLIN, 0}};
    if (out_fd >= 0) fds.push_back({out_fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    if (fds[0].revents & POLLIN) m_stop.note(take_signals());
    if (m_stop.first && !exited) {
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
  if (m_stop.first) return {};
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

}  // namespace spotrun::launcher::impl
