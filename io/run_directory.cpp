#include "io/run_directory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace spotrun::io {
namespace {

constexpr const char* k_checkpoint_prefix = "ckpt-";
constexpr const char* k_final_stem = "final";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The whole file, or nullopt when it cannot be read.
std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Field readers: a field absent or of another type reads as the default.
std::int64_t int_or(const nlohmann::json& j, const char* key, std::int64_t dflt) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : dflt;
}
double number_or(const nlohmann::json& j, const char* key, double dflt) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : dflt;
}
std::string string_or(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Json null_or(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }
Json null_or(std::int64_t v) { return v >= 0 ? Json(v) : Json(nullptr); }

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// A record's own fields, then the shared ones, then a newline.
std::string with_shared(const Json& own, const std::string& shared_text) {
  const std::string text = dump(own);
  return text.substr(0, text.size() - 1) + "," + shared_text + "}\n";
}

// A file name from a host name: anything but [A-Za-z0-9._-] becomes '_'.
std::string file_safe(const std::string& host) {
  std::string s = host.empty() ? "unknown" : host;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  if (s[0] == '.') s[0] = '_';
  return s;
}

}  // namespace

std::string replace_file(const std::string& path, const std::string& text, const std::string& suffix) {
  const fs::path tmp = path + suffix;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return "cannot write '" + tmp.string() + "'";
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return "cannot replace '" + path + "': " + ec.message();
  }
  return "";
}

std::string run_path(const std::string& outdir, const std::string& name) { return (fs::path(outdir) / name).string(); }

// ---- checkpoint names -----------------------------------------------------------------------------------

const char* checkpoint_extension(CheckpointKind kind) {
  return kind == CheckpointKind::level_set ? ".levels" : ".h5";
}

std::optional<CheckpointName> CheckpointName::parse(const std::string& name) {
  CheckpointName c;
  std::string stem;
  if (ends_with(name, ".levels")) {
    c.kind = CheckpointKind::level_set;
    stem = name.substr(0, name.size() - 7);
  } else if (ends_with(name, ".h5")) {
    stem = name.substr(0, name.size() - 3);
  } else {
    return std::nullopt;
  }
  const auto set = parse_set(stem);
  if (!set) return std::nullopt;
  c.step = set->step;
  c.final = set->final;
  return c;
}

std::optional<CheckpointName> CheckpointName::parse_set(const std::string& set) {
  CheckpointName c;
  if (set == k_final_stem) {
    c.final = true;
    return c;
  }
  if (set.rfind(k_checkpoint_prefix, 0) != 0) return std::nullopt;
  const std::string digits = set.substr(5);
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  c.step = std::stoll(digits);
  return c;
}

std::string node_file_name(const std::string& set, const std::string& host) { return set + "." + host + ".h5"; }

std::optional<std::string> node_file_set(const std::string& name) {
  const auto dot = name.find('.');
  if (!(name.size() > 3 && ends_with(name, ".h5") && dot != std::string::npos &&
        (name.rfind(k_checkpoint_prefix, 0) == 0 || name.rfind("final.", 0) == 0)))
    return std::nullopt;
  return name.substr(0, dot);
}

std::string CheckpointName::set() const {
  return final ? std::string(k_final_stem) : k_checkpoint_prefix + std::to_string(step);
}

std::string CheckpointName::file_name() const { return set() + checkpoint_extension(kind); }

std::string CheckpointName::path(const std::string& outdir) const {
  return final ? run_path(outdir, file_name()) : (fs::path(outdir) / k_checkpoint_dir / file_name()).string();
}

CheckpointName checkpoint_name(std::int64_t step, CheckpointKind kind) {
  CheckpointName c;
  c.step = step;
  c.kind = kind;
  return c;
}

CheckpointName final_name(CheckpointKind kind) {
  CheckpointName c;
  c.kind = kind;
  c.final = true;
  return c;
}

std::vector<CheckpointName> list_checkpoints(const std::string& outdir) {
  std::vector<CheckpointName> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(outdir) / k_checkpoint_dir, ec)) {
    const auto c = CheckpointName::parse(e.path().filename().string());
    if (c && !c->final) names.push_back(*c);
  }
  std::sort(names.begin(), names.end(), [](const CheckpointName& a, const CheckpointName& b) {
    return a.step != b.step ? a.step < b.step : a.kind < b.kind;
  });
  return names;
}

std::int64_t newest_checkpoint_step(const std::string& outdir) {
  const auto names = list_checkpoints(outdir);
  return names.empty() ? -1 : names.back().step;
}

std::vector<CheckpointName> list_finals(const std::string& outdir) {
  std::vector<CheckpointName> finals;
  for (const CheckpointKind kind : {CheckpointKind::shared_file, CheckpointKind::level_set}) {
    std::error_code ec;
    if (fs::exists(final_name(kind).path(outdir), ec)) finals.push_back(final_name(kind));
  }
  return finals;
}

// ---- status.json ----------------------------------------------------------------------------------------

std::optional<StatusRecord> read_status(const std::string& outdir) {
  const auto text = read_text(run_path(outdir, k_status_file));
  if (!text) return std::nullopt;
  const nlohmann::json r = nlohmann::json::parse(*text, nullptr, false);
  if (r.is_discarded() || !r.is_object()) return std::nullopt;
  StatusRecord s;
  s.state = string_or(r, "state");
  s.exit_code = static_cast<int>(int_or(r, "exit_code", -1));
  s.reason = string_or(r, "reason");
  s.step = int_or(r, "step", -1);
  s.start_step = int_or(r, "start_step", -1);
  s.loop_started = string_or(r, "loop_started");
  const auto ck = r.find("checkpoint");
  if (ck != r.end() && ck->is_object()) {
    s.checkpoint_step = int_or(*ck, "step", -1);
    s.checkpoint_path = string_or(*ck, "path");
  }
  const auto hosts = r.find("hosts");
  if (hosts != r.end() && hosts->is_array())
    for (const auto& h : *hosts)
      if (h.is_string()) s.hosts.push_back(h.get<std::string>());
  s.pid = int_or(r, "pid", -1);
  s.host = string_or(r, "host");
  s.attempt = string_or(r, "attempt");
  return s;
}

std::string status_shared_text(const StatusShared& c) {
  Json common;
  common["version"] = c.version;
  common["attempt"] = c.attempt ? Json(*c.attempt) : Json(nullptr);
  common["pid"] = c.pid;
  common["host"] = c.host;
  common["ranks"] = c.ranks;
  common["nodes"] = c.nodes;
  common["deck"] = c.deck;
  common["output_dir"] = c.output_dir;
  common["started"] = c.started;
  common["start_step"] = null_or(c.start_step);
  common["resumed_from"] = null_or(c.resumed_from);
  common["loop_started"] = null_or(c.loop_started);
  if (!c.levels_json.empty()) common["levels"] = Json::parse(c.levels_json, nullptr, false);
  const std::string text = dump(common);
  return text.substr(1, text.size() - 2);  // without the braces
}

std::string status_running_text(std::int64_t step, const std::string& updated, const std::string& shared_text) {
  Json record;
  record["state"] = "running";
  record["step"] = null_or(step);
  record["updated"] = updated;
  return with_shared(record, shared_text);
}

std::string status_end_text(const StatusEnd& e, const std::string& shared_text) {
  using State = StatusEnd::State;
  Json record;
  record["state"] = e.state == State::finished ? "finished" : e.state == State::stopped ? "stopped" : "failed";
  record["exit_code"] = e.exit_code;
  record["step"] = e.state == State::failed ? Json(nullptr) : Json(e.step);
  if (e.state == State::finished) record["final"] = e.final_path;
  if (e.state != State::finished) record["reason"] = e.reason;
  if (e.state == State::stopped) {
    record["checkpoint"] =
        e.checkpoint.empty() ? Json(nullptr) : Json{{"path", e.checkpoint}, {"step", e.checkpoint_step}};
    if (!e.hosts.empty()) record["hosts"] = e.hosts;
  }
  record["ended"] = e.ended;
  return with_shared(record, shared_text);
}

std::string mark_status_stalled(const std::string& outdir, const StatusStalled& s) {
  const auto status = read_status(outdir);
  if (!status || status->attempt != s.attempt) return "";
  const fs::path path = run_path(outdir, k_status_file);
  // The record's fields in their order, a few replaced and added.
  Json r = Json::parse(read_text(path).value_or(""), nullptr, false);
  if (!r.is_object()) r = Json::object();
  r["state"] = "stalled";
  r["exit_code"] = nullptr;
  r["reason"] = "stalled: " + s.reason;
  r["stalled_hosts"] = s.hosts;
  if (s.step >= 0) r["step"] = s.step;
  r["last_heartbeat"] = null_or(s.last_heartbeat);
  return replace_file(path.string(), r.dump() + "\n", ".launch.tmp");
}

// ---- progress.json ---------------------------------------------------------------------------------------

std::string progress_text(const ProgressRecord& p) {
  nlohmann::json j;
  j["step"] = p.step;
  j["steps"] = p.steps;
  j["percent"] = p.percent;
  j["measure"] = p.measure.empty() ? nlohmann::json("steps") : nlohmann::json(p.measure);
  j["steps_per_second"] = p.steps_per_second;
  j["work_per_second"] = p.work_per_second;
  j["work_unit"] = p.work_unit + "/s";
  j["elapsed_seconds"] = p.elapsed;
  j["remaining_seconds"] = p.remaining >= 0 ? nlohmann::json(p.remaining) : nlohmann::json(nullptr);
  j["expected_end_utc"] = p.expected_end_utc.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.expected_end_utc);
  j["updated_utc"] = p.updated_utc;
  j["finished"] = p.finished;
  return j.dump(2) + "\n";
}

std::optional<ProgressRecord> read_progress(const std::string& outdir) {
  const auto text = read_text(run_path(outdir, k_progress_file));
  if (!text) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  ProgressRecord p;
  p.step = int_or(j, "step", 0);
  p.steps = int_or(j, "steps", 0);
  p.percent = number_or(j, "percent", 0);
  p.measure = string_or(j, "measure");
  if (p.measure == "steps") p.measure.clear();
  p.steps_per_second = number_or(j, "steps_per_second", 0);
  p.work_per_second = number_or(j, "work_per_second", 0);
  p.work_unit = string_or(j, "work_unit");
  if (ends_with(p.work_unit, "/s")) p.work_unit.resize(p.work_unit.size() - 2);
  p.elapsed = number_or(j, "elapsed_seconds", 0);
  p.remaining = number_or(j, "remaining_seconds", -1);
  p.expected_end_utc = string_or(j, "expected_end_utc");
  p.updated_utc = string_or(j, "updated_utc");
  const auto f = j.find("finished");
  p.finished = f != j.end() && f->is_boolean() && f->get<bool>();
  return p;
}

// ---- attempt, attempts.jsonl ------------------------------------------------------------------------------

std::string write_attempt_file(const std::string& outdir, const std::string& id) {
  const std::string path = run_path(outdir, k_attempt_file);
  const std::string tmp = path + ".tmp";
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
    return "";
  }
  const std::string why = std::strerror(errno);
  ::unlink(tmp.c_str());
  ::unlink(path.c_str());
  return why;
}

void annotate_ledger(const std::string& outdir, const std::string& launch_attempt, const std::string& ended_by) {
  const fs::path path = run_path(outdir, k_ledger_file);
  std::ifstream in(path);
  if (!in) return;
  std::string line, text;
  bool found = false;
  while (std::getline(in, line)) {
    Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("launch_attempt") && j["launch_attempt"] == launch_attempt) {
      j["ended_by"] = ended_by;
      line = j.dump();
      found = true;
    }
    text += line + "\n";
  }
  in.close();
  if (!found) return;
  (void)replace_file(path.string(), text, ".launch.tmp");  // a ledger left unannotated is no error
}

// ---- .spotrun.lock ---------------------------------------------------------------------------------------

LockRecord parse_lock(const std::string& content) {
  LockRecord r;
  std::istringstream in(content);
  std::string key, value;
  while (in >> key && std::getline(in >> std::ws, value)) {
    if (key == "host") r.host = value;
    if (key == "pid") r.pid = value;
    if (key == "started") r.started = value;
    if (key == "attempt") r.attempt = value;
  }
  return r;
}

long LockRecord::pid_number() const {
  try {
    return pid.empty() ? -1 : std::stol(pid);
  } catch (...) {
    return -1;
  }
}

std::string lock_text(const LockRecord& r) {
  return "host " + r.host + "\npid " + r.pid + "\nstarted " + r.started + "\n" +
         (r.attempt.empty() ? std::string() : "attempt " + r.attempt + "\n");
}

// ---- heartbeats -----------------------------------------------------------------------------------------

std::string heartbeat_path(const std::string& outdir, const std::string& host) {
  return (fs::path(outdir) / k_heartbeat_dir / (file_safe(host) + ".json")).string();
}

std::string heartbeat_text(const HeartbeatRecord& b) {
  nlohmann::json j;
  j["attempt"] = b.attempt.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.attempt);
  j["host"] = b.host;
  j["rank"] = b.rank;
  j["pid"] = b.pid;
  j["step"] = b.step >= 0 ? nlohmann::json(b.step) : nlohmann::json(nullptr);
  j["start_step"] = b.start_step >= 0 ? nlohmann::json(b.start_step) : nlohmann::json(nullptr);
  j["mean_step_seconds"] = b.mean_step_seconds >= 0 ? nlohmann::json(b.mean_step_seconds) : nlohmann::json(nullptr);
  j["max_gap_seconds"] = b.max_gap_seconds;
  j["writing_state"] = b.writing_state;
  j["writes_timed"] = b.writes_timed;
  j["step_unix"] = b.step_unix >= 0 ? nlohmann::json(b.step_unix) : nlohmann::json(nullptr);
  j["unix"] = b.unix;
  j["utc"] = b.utc;
  return j.dump() + "\n";
}

std::vector<HeartbeatRecord> read_heartbeats(const std::string& outdir) {
  std::vector<HeartbeatRecord> beats;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(outdir) / k_heartbeat_dir, ec)) {
    if (!ends_with(e.path().filename().string(), ".json")) continue;
    const auto text = read_text(e.path());
    if (!text) continue;
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    HeartbeatRecord b;
    b.attempt = string_or(j, "attempt");
    b.host = string_or(j, "host");
    b.rank = static_cast<int>(int_or(j, "rank", 0));
    b.pid = int_or(j, "pid", 0);
    b.step = int_or(j, "step", -1);
    b.start_step = int_or(j, "start_step", -1);
    b.mean_step_seconds = number_or(j, "mean_step_seconds", -1);
    b.max_gap_seconds = number_or(j, "max_gap_seconds", 0);
    const auto w = j.find("writing_state");
    b.writing_state = w != j.end() && w->is_boolean() && w->get<bool>();
    b.writes_timed = static_cast<int>(int_or(j, "writes_timed", 0));
    b.step_unix = number_or(j, "step_unix", -1);
    b.unix = number_or(j, "unix", -1);
    b.utc = string_or(j, "utc");
    beats.push_back(std::move(b));
  }
  return beats;
}

}  // namespace spotrun::io
