// mpirun's output (mpirun_output.hpp).
#include "launcher/launch/mpirun_output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <regex>

#include "launcher/launch/hosts.hpp"

namespace spotrun::launcher {

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
    if (impl::loopback(h) || std::find(fence_answered.begin(), fence_answered.end(), h) != fence_answered.end()) continue;
    if (std::any_of(reported.begin(), reported.end(), [&](const std::string& r) { return same_host(h, r, self); }))
      lost.push_back(h);
  }
  return lost;
}

namespace impl {

void MpirunOutput::add_to(std::vector<pollfd>& fds) const {
  for (int s = 0; s < 2; ++s)
    if (m_fd[s] >= 0) fds.push_back({m_fd[s], POLLIN, 0});
}

void MpirunOutput::read(const std::vector<pollfd>& fds) {
  for (const pollfd& p : fds) {
    const int s = p.fd == m_fd[0] ? 0 : p.fd == m_fd[1] ? 1 : -1;
    if (s < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[65536];
    const ssize_t n = ::read(p.fd, buf, sizeof buf);
    if (n > 0) {
      // Passed on as it comes, and scanned line by line for hosts and ranks mpirun reports.
      for (ssize_t w = 0; w < n;) {
        const ssize_t k = ::write(s == 0 ? STDOUT_FILENO : STDERR_FILENO, buf + w, static_cast<std::size_t>(n - w));
        if (k <= 0) break;
        w += k;
      }
      m_pending[s].append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = m_pending[s].find('\n')) != std::string::npos) {
        scan_mpirun_line(m_pending[s].substr(0, nl), m_notes);
        m_pending[s].erase(0, nl + 1);
      }
      if (m_pending[s].size() > 65536) m_pending[s].clear();
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      if (!m_pending[s].empty()) scan_mpirun_line(m_pending[s], m_notes);
      m_pending[s].clear();
      ::close(m_fd[s]);
      m_fd[s] = -1;
    }
  }
}

void MpirunOutput::close() {
  for (int& fd : m_fd)
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
}

}  // namespace impl
}  // namespace spotrun::launcher
