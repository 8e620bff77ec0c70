// Probes of hosts through mpirun (probe.hpp).
#include "launcher/launch/probe.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "comm/number_text.hpp"
#include "io/deck/deck.hpp"
#include "launcher/launch/this_machine.hpp"

namespace spotrun::launcher::impl {

namespace {

struct Running {
  pid_t pid = -1;
  int fd = -1;
  std::string output;
  bool done = false;
  int status = 0;
};

// mpirun options that say how to reach and start on the hosts go to the probe too.
std::vector<std::string> reach_options(const std::vector<std::string>& args) {
  std::vector<std::string> reach;
  for (std::size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    if ((a == "--mca" || a == "-mca") && k + 2 < args.size()) {
      reach.insert(reach.end(), {a, args[k + 1], args[k + 2]});
      k += 2;
    } else if ((a == "--prefix" || a == "--launch-agent") && k + 1 < args.size()) {
      reach.insert(reach.end(), {a, args[k + 1]});
      k += 1;
    }
  }
  return reach;
}

// Reads the probes' output and reaps them until all have ended, the deadline passes or a stop request comes.
void wait_for_probes(std::vector<Running>& procs, double deadline, StopRequests& stop) {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t k = 0; k < procs.size(); ++k)
      if (procs[k].fd >= 0) {
        fds.push_back({procs[k].fd, POLLIN, 0});
        which.push_back(k);
      }
    fds.push_back({signal_fd(), POLLIN, 0});
    bool all_done = true;
    for (const auto& p : procs) all_done = all_done && p.done && p.fd < 0;
    if (all_done) break;
    const double left = deadline - now_unix();
    if (left <= 0 || stop.first != 0) break;
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
    if (fds.back().revents & POLLIN) stop.note(take_signals());
    for (auto& p : procs)
      if (!p.done && p.pid > 0 && ::waitpid(p.pid, &p.status, WNOHANG) == p.pid) p.done = true;
  }
}

// The answer of a probe that ended: the last line that is a number (the host's cores); the reason
// otherwise: the first line of mpirun's message.
void read_answer(const Running& p, ProbeResult& result) {
  std::istringstream lines(p.output);
  std::string line, first;
  while (std::getline(lines, line)) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (!line.empty() && line.size() < 7 && line.find_first_not_of("0123456789") == std::string::npos) {
      result.cores = std::stoi(line);
    } else if (first.empty() && line.find_first_not_of("-") != std::string::npos) {
      first = line;
    }
  }
  result.answered = WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0;
  result.output = p.output;
  result.ok = result.answered && result.cores > 0;
  if (!result.ok)
    result.why = describe_wait(p.status) + (first.empty() ? std::string() : ": " + io::quote_for_message(first, 0));
}

}  // namespace

std::vector<ProbeResult> probe_hosts(const Prober& prober, const std::vector<std::string>& hosts,
                                     const std::vector<std::string>& command, StopRequests& stop) {
  const std::vector<std::string> reach = reach_options(prober.mpirun_args);
  std::vector<Running> procs(hosts.size());
  std::vector<ProbeResult> results(hosts.size());
  for (std::size_t k = 0; k < hosts.size(); ++k) {
    std::vector<std::string> argv{prober.mpirun};
    argv.insert(argv.end(), reach.begin(), reach.end());
    argv.insert(argv.end(), {"--bind-to", "none", "-H", hosts[k], "-np", "1"});
    argv.insert(argv.end(), command.begin(), command.end());
    const io::SpawnedChild child = start_child(argv, {}, true, SIGKILL);
    procs[k].pid = child.pid;
    procs[k].fd = child.out;
    if (procs[k].pid < 0) {
      procs[k].done = true;
      results[k].why = std::string("cannot start mpirun: ") + std::strerror(child.error);
    }
  }
  wait_for_probes(procs, now_unix() + prober.timeout, stop);
  for (std::size_t k = 0; k < procs.size(); ++k) {
    Running& p = procs[k];
    if (!p.done && p.pid > 0) {
      ::kill(-p.pid, SIGKILL);
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, &p.status, 0);
      results[k].why = stop.first ? "stopped on request" : "no answer within " + fixed(prober.timeout, 0) + " s";
      p.done = true;
      if (p.fd >= 0) ::close(p.fd);
      p.fd = -1;
      continue;
    }
    if (p.fd >= 0) ::close(p.fd);
    if (p.pid < 0) continue;
    read_answer(p, results[k]);
  }
  return results;
}

}  // namespace spotrun::launcher::impl
