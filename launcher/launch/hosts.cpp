// Hostfiles, rank plans and host names (hosts.hpp).
#include "launcher/launch/hosts.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "io/deck/deck.hpp"
#include "launcher/launch/this_machine.hpp"

namespace spotrun::launcher {

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
      throw bad("'" + io::quote_for_message(host, 0) + "' is not a host name or address");
    int slots = 0;
    std::string word;
    while (words >> word) {
      const auto eq = word.find('=');
      const std::string key = word.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (key != "slots" && key != "max_slots" && key != "max-slots")
        throw bad("unknown word '" + io::quote_for_message(word, 0) + "' (expected slots=N or max_slots=N)");
      if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(value) < 1)
        throw bad(key + " must be a whole number from 1 to 999999, not '" + io::quote_for_message(value, 0) + "'");
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

namespace {

std::string short_name(const std::string& host) {
  // An address stays whole; a name loses its domain.
  if (!host.empty() && (std::isdigit(static_cast<unsigned char>(host[0])) || host.find(':') != std::string::npos))
    return host;
  return host.substr(0, host.find('.'));
}

}  // namespace

namespace impl {

bool loopback(const std::string& host) { return host == "localhost" || host == "127.0.0.1" || host == "::1"; }

}  // namespace impl

bool same_host(const std::string& entry, const std::string& reported, const std::string& self) {
  using impl::loopback;
  if (entry == reported || short_name(entry) == short_name(reported)) return true;
  const bool entry_self = loopback(entry) || short_name(entry) == short_name(self);
  const bool reported_self = loopback(reported) || short_name(reported) == short_name(self);
  return entry_self && reported_self;
}

namespace impl {

// The hosts `command` prints (/bin/sh -c, stdout as a hostfile; at most `timeout` seconds, 1 MiB); throws
// InputError naming the command and what it must print.
std::vector<HostEntry> hosts_from_command(const std::string& command, double timeout) {
  const std::string what = "--hosts-command '" + io::quote_for_message(command, 0) + "'";
  const std::string must = "; it must print the hosts, one per line as in a hostfile (HOST [slots=N]), and exit 0";
  const io::SpawnedChild child = start_child({"/bin/sh", "-c", command}, {}, false, SIGKILL);
  if (child.pid < 0) throw InputError(what + ": cannot start /bin/sh: " + std::strerror(child.error));
  const pid_t pid = child.pid;
  const int out_fd = child.out, err_fd = child.err;
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
                     (first.empty() ? std::string() : ": " + io::quote_for_message(first, 0)) + must);
  }
  if (too_long) throw InputError(what + " printed more than 1 MiB" + must);
  return parse_hostfile(out, "from " + what);
}

}  // namespace impl
}  // namespace spotrun::launcher
