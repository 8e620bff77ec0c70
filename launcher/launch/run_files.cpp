// What `spotrun launch` reads of a run's files (run_files.hpp).
#include "launcher/launch/run_files.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comm/errors.hpp"
#include "launcher/launch/hosts.hpp"
#include "launcher/launch/this_machine.hpp"
#include "launcher/run/fence.hpp"
#include "launcher/run/run_status.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher::impl {

// The step of the newest OUTDIR/checkpoints/ckpt-<step>.h5 or .levels (by name), or -1.
long long newest_checkpoint_step(const std::string& outdir) {
  long long newest = -1;
  std::error_code ec;
  const fs::path dir = fs::path(outdir) / "checkpoints";
  if (!fs::is_directory(dir, ec)) return -1;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    // ckpt-<step>.h5, or the index ckpt-<step>.levels of a level set (checkpoint.local_dir)
    const std::size_t ext = name.size() > 7 && name.substr(name.size() - 7) == ".levels" ? 7 : 3;
    if (name.size() < 6 + ext || name.rfind("ckpt-", 0) != 0 || (ext == 3 && name.substr(name.size() - 3) != ".h5")) continue;
    const std::string digits = name.substr(5, name.size() - 5 - ext);
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    newest = std::max(newest, std::stoll(digits));
  }
  return newest;
}

// The step of the last row of OUTDIR/thermo.csv, or -1; *written: when that row was written (the file's
// modification time).
long long last_thermo_step(const std::string& outdir, double* written) {
  const fs::path path = fs::path(outdir) / "thermo.csv";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    *written = static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
  std::ifstream in(path);
  std::string line;
  long long last = -1;
  while (std::getline(in, line)) {
    const std::string first = line.substr(0, line.find(','));
    if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos || first.size() > 18) continue;
    last = std::stoll(first);
  }
  return last;
}

double checkpoint_file_time(const std::string& outdir, long long step) {
  struct stat st {};
  const std::string ck_path = (fs::path(outdir) / "checkpoints" / ("ckpt-" + std::to_string(step) + ".h5")).string();
  if (::stat(ck_path.c_str(), &st) != 0) return -1;
  return static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
}

bool record_of(const std::string& outdir, const std::string& id, nlohmann::json& record) {
  std::ifstream in(fs::path(outdir) / RunStatus::file_name());
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  record = nlohmann::json::parse(text.str(), nullptr, false);
  if (record.is_discarded() || !record.is_object()) return false;
  const auto attempt = record.find("attempt");
  return attempt != record.end() && attempt->is_string() && attempt->get<std::string>() == id;
}

void read_outcome(const std::string& outdir, const std::string& id, int wait_status, const std::string& self,
                  RunOutcome& a) {
  nlohmann::json r;
  if (!record_of(outdir, id, r)) {
    a.state = "none";
    a.reason = "no status record from this attempt: the run did not get as far as its output directory";
    return;
  }
  a.have_record = true;
  auto num = [&](const char* key, long long dflt) {
    const auto it = r.find(key);
    return it != r.end() && it->is_number_integer() ? it->get<long long>() : dflt;
  };
  auto str = [&](const char* key) {
    const auto it = r.find(key);
    return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  a.state = str("state");
  a.exit_code = static_cast<int>(num("exit_code", -1));
  a.reason = str("reason");
  while (!a.reason.empty() && (a.reason.back() == '.' || a.reason.back() == '\n')) a.reason.pop_back();
  a.start_step = num("start_step", -1);
  a.step = num("step", -1);
  const std::string loop = str("loop_started");
  a.loop_started = loop.empty() ? -1 : parse_utc(loop);
  const auto ck = r.find("checkpoint");
  if (ck != r.end() && ck->is_object()) {
    const auto s = ck->find("step");
    if (s != ck->end() && s->is_number_integer()) a.checkpoint_step = s->get<long long>();
  }
  const auto hosts = r.find("hosts");
  if (hosts != r.end() && hosts->is_array())
    for (const auto& h : *hosts)
      if (h.is_string()) a.stop_hosts.push_back(h.get<std::string>());
  if (a.state == "running") {
    // The run ended without writing how: killed (SIGKILL, out of memory, its node lost). Rank 0 may
    // still be on its way out when mpirun returns: it is given a few seconds.
    const long long pid = num("pid", -1);
    const std::string host = str("host");
    const bool here = same_host(host, self, self);
    for (double until = now_unix() + 5; here && !process_gone(pid) && now_unix() < until;) ::usleep(50000);
    const bool alive = here && !process_gone(pid);
    a.state = "killed";
    a.exit_code = -1;
    a.reason = alive ? "mpirun ended while rank 0 (PID " + std::to_string(pid) + ") still runs, without a record"
                     : "ended without a record (killed)";
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == k_exit_fenced)
      a.reason += "; a rank stopped fenced (exit 77): OUTDIR/" + std::string(k_attempt_file) + " names another attempt";
  } else if (a.state != "finished" && a.state != "stopped" && a.state != "failed") {
    a.state = "none";
    a.reason = "status record in an unknown state";
  }
}

HeartbeatScan scan_heartbeats(const std::string& outdir, const std::string& id, double now,
                              std::map<std::string, HostBeat>& beats, long long& step, double& step_seen_at,
                              AttemptHeartbeats& seen) {
  HeartbeatScan scan;
  double& max_gap = scan.max_gap;
  bool& untimed_write = scan.untimed_write;
  bool& loop = scan.loop;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(outdir) / "heartbeats", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 6 || name.substr(name.size() - 5) != ".json") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (!j.is_object() || !j.contains("attempt") || !j["attempt"].is_string() || j["attempt"] != id) continue;
    if (!j.contains("host") || !j["host"].is_string() || !j.contains("unix") || !j["unix"].is_number()) continue;
    HostBeat& b = beats[j["host"].get<std::string>()];
    const double value = j["unix"].get<double>();
    if (value != b.value) {
      b.value = value;
      b.changed_at = now;
      seen.last_heartbeat = std::max(seen.last_heartbeat, value);
    }
    if (j.contains("step") && j["step"].is_number_integer()) {
      loop = true;
      b.step = j["step"].get<long long>();
      if (b.step > step) {
        step = b.step;
        step_seen_at = now;
        seen.heartbeat_step = step;
        if (j.contains("step_unix") && j["step_unix"].is_number()) seen.heartbeat_step_at = j["step_unix"].get<double>();
      }
    }
    if (j.contains("max_gap_seconds") && j["max_gap_seconds"].is_number())
      max_gap = std::max(max_gap, j["max_gap_seconds"].get<double>());
    if (j.value("writing_state", false) && j.value("writes_timed", 0) == 0) untimed_write = true;
  }
  return scan;
}

void read_last_heartbeat_step(const std::string& outdir, const std::string& id, AttemptHeartbeats& seen) {
  std::error_code hec;
  for (const auto& e : fs::directory_iterator(fs::path(outdir) / "heartbeats", hec)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (!j.is_object() || j.value("attempt", nlohmann::json()) != id) continue;
    if (j.contains("step") && j["step"].is_number_integer() && j["step"].get<long long>() > seen.heartbeat_step) {
      seen.heartbeat_step = j["step"].get<long long>();
      if (j.contains("step_unix") && j["step_unix"].is_number()) seen.heartbeat_step_at = j["step_unix"].get<double>();
    }
  }
}

HeartbeatFigures heartbeat_figures(const std::string& outdir, const std::string& id) {
  HeartbeatFigures f;
  long long& step = f.step;
  double& step_seconds = f.step_seconds;
  double& gap = f.gap;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(outdir) / "heartbeats", ec)) {
    std::ifstream in(e.path());
    std::stringstream t;
    t << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(t.str(), nullptr, false);
    if (!j.is_object() || j.value("attempt", nlohmann::json()) != id) continue;
    if (j.contains("step") && j["step"].is_number_integer()) step = std::max(step, j["step"].get<long long>());
    if (j.contains("mean_step_seconds") && j["mean_step_seconds"].is_number())
      step_seconds = std::max(step_seconds, j["mean_step_seconds"].get<double>());
    if (j.contains("max_gap_seconds") && j["max_gap_seconds"].is_number())
      gap = std::max(gap, j["max_gap_seconds"].get<double>());
  }
  return f;
}

std::string mark_status_stalled(const std::string& outdir, const std::string& id, const std::string& stall_reason,
                                const std::vector<std::string>& stalled_hosts, const AttemptHeartbeats& seen) {
  nlohmann::json record;
  if (!record_of(outdir, id, record)) return {};
  // The record's fields in their order, a few replaced and added.
  std::ifstream in(fs::path(outdir) / RunStatus::file_name());
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json r = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (!r.is_object()) r = nlohmann::ordered_json::object();
  r["state"] = "stalled";
  r["exit_code"] = nullptr;
  r["reason"] = "stalled: " + stall_reason;
  r["stalled_hosts"] = stalled_hosts;
  if (seen.heartbeat_step >= 0) r["step"] = seen.heartbeat_step;
  r["last_heartbeat"] = seen.last_heartbeat > 0 ? nlohmann::json(utc(seen.last_heartbeat)) : nlohmann::json(nullptr);
  const fs::path path = fs::path(outdir) / RunStatus::file_name();
  const std::string tmp = path.string() + ".launch.tmp";
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << r.dump() << "\n";
  }
  fs::rename(tmp, path, ec);
  if (ec) return "cannot write " + path.string() + ": " + ec.message();
  return {};
}

}  // namespace spotrun::launcher::impl
