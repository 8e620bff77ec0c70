// Fencing of `spotrun launch` (fence.hpp).
#include "launcher/launch/fence.hpp"

#include "launcher/run/run_status.hpp"
#include "spotrun/fence_remote_sh.hpp"

namespace spotrun::launcher::impl {

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
