// Why an attempt ended, as the run report's ledger says it (ledger.hpp).
#include "launcher/launch/ledger.hpp"

#include "launcher/launch/signals.hpp"

namespace spotrun::launcher::impl {

std::string ended_by(const AttemptResult& a, int stop_signal) {
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (a.grow && a.state == "stopped") return "grow: " + std::to_string(a.ranks) + " -> " + std::to_string(a.grow_to) + " ranks";
  if (a.stalled) return "stall" + (a.stalled_hosts.empty() ? std::string() : ": heartbeat stopped on " + join(a.stalled_hosts));
  if (!a.notes.lost_hosts.empty()) return "node lost: " + join(a.notes.lost_hosts);
  if (!a.stop_hosts.empty()) return "spot notice: " + join(a.stop_hosts);
  if (a.state == "stopped" && stop_signal) return std::string("stop request: ") + launch_signal_name(stop_signal);
  if (a.state == "killed" && !a.notes.events.empty()) return "rank lost: " + a.notes.events.front();
  return a.state + (a.reason.empty() ? std::string() : ": " + a.reason);
}

}  // namespace spotrun::launcher::impl
