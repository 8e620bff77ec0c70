// The run report's ledger, annotated by `spotrun launch` (ledger.hpp).
#include "launcher/launch/ledger.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "launcher/launch/signals.hpp"

namespace fs = std::filesystem;

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

void annotate_ledger(const std::string& outdir, const std::string& id, const std::string& verdict) {
  const fs::path path = fs::path(outdir) / "attempts.jsonl";
  std::ifstream in(path);
  if (!in) return;
  std::string line, text;
  bool found = false;
  while (std::getline(in, line)) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("launch_attempt") && j["launch_attempt"] == id) {
      j["ended_by"] = verdict;
      line = j.dump();
      found = true;
    }
    text += line + "\n";
  }
  in.close();
  if (!found) return;
  const std::string tmp = path.string() + ".launch.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
}

}  // namespace spotrun::launcher::impl
