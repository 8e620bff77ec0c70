// Fencing of `spotrun launch` (fence.hpp).
#include "launcher/launch/fence.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "launcher/run/fence.hpp"
#include "launcher/run/run_status.hpp"
#include "spotrun/fence_remote_sh.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher::impl {

std::string write_attempt_file(const std::string& outdir, const std::string& id) {
  const fs::path path = fs::path(outdir) / k_attempt_file;
  const std::string tmp = path.string() + ".tmp";
  const std::string text = id + "\n";
  bool ok = false;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd >= 0) {
    ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
    ok = ::close(fd) == 0 && ok;
    ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  }
  if (ok) {
    const int dfd = ::open(outdir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      (void)::fsync(dfd);
      ::close(dfd);
    }
    return {};
  }
  // A file that still named the previous attempt would fence this one: none at all fences nothing.
  const std::string why = std::strerror(errno);
  ::unlink(tmp.c_str());
  ::unlink(path.c_str());
  return "cannot write " + path.string() + " (" + why + ")";
}

std::vector<std::string> fence_command(const std::string& id) {
  return {"/bin/sh", "-c", embedded::k_fence_remote_sh, "fence", std::string(RunStatus::attempt_variable()) + "=" + id};
}

long long fenced_count(const std::string& out) {
  const auto at = out.rfind("fenced ");
  if (at == std::string::npos) return -1;
  const std::string count = out.substr(at + 7, out.find('\n', at) == std::string::npos ? std::string::npos
                                                                                      : out.find('\n', at) - at - 7);
  if (!count.empty() && count.size() < 10 && count.find_first_not_of("0123456789") == std::string::npos)
    return std::stoll(count);
  return -1;
}

std::vector<ProbeResult> fence_hosts(const Prober& prober, const std::vector<std::string>& hosts,
                                     const std::string& id, StopRequests& stop, std::vector<long long>& killed) {
  const std::vector<ProbeResult> results = probe_hosts(prober, hosts, fence_command(id), stop);
  killed.assign(hosts.size(), -1);
  for (std::size_t k = 0; k < hosts.size(); ++k)
    if (results[k].answered) killed[k] = fenced_count(results[k].output);
  return results;
}

}  // namespace spotrun::launcher::impl
