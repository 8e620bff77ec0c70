// The durable tier: rclone child processes, background flushes, listing and fetching durable sets (see
// checkpoint_durable.hpp and docs/checkpoints.md, "The durable tier").
#include "checkpoint_durable.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "child_process.hpp"
#include "run_directory.hpp"
#include "comm/errors.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace spotrun::io {
namespace {

constexpr std::size_t k_output_max = 64 * 1024;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

long long step_of(const std::string& set) {  // -1: "final"; -2: not a set's name (io/run_directory.hpp)
  const auto c = CheckpointName::parse_set(set);
  return !c ? -2 : c->final ? -1 : c->step;
}

// One line of rclone's output worth showing: its last ERROR or Failed line, else its last line.
std::string last_error_line(const std::string& out) {
  std::istringstream in(out);
  std::string line, last, error;
  while (std::getline(in, line)) {
    if (line.empty() || line.find("NOTICE: Config file") != std::string::npos) continue;
    last = line;
    if (line.find("ERROR") != std::string::npos || line.find("Failed") != std::string::npos) error = line;
  }
  return error.empty() ? last : error;
}

}  // namespace

std::string rclone_program(const std::string& rclone) { return rclone.empty() ? "rclone" : rclone; }

std::string RcloneResult::brief() const {
  if (cancelled) return "rclone was stopped (cancelled or out of time)";
  const std::string line = last_error_line(errors);
  if (exit_code < 0) return line.empty() ? "rclone could not be run" : line;
  return "rclone exited with " + std::to_string(exit_code) + (line.empty() ? "" : ": " + line);
}

RcloneResult run_rclone(const std::string& rclone, const std::vector<std::string>& args,
                        const std::atomic<bool>* cancel, double timeout_seconds) {
  RcloneResult result;
  const std::string program = rclone_program(rclone);
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  // This process's environment, with rclone's retry and timeout defaults where the user set none.
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  const std::size_t inherited = env.size();
  for (const char* def : {"RCLONE_RETRIES=2", "RCLONE_LOW_LEVEL_RETRIES=3", "RCLONE_CONTIMEOUT=15s", "RCLONE_TIMEOUT=60s"}) {
    const std::string name_is = std::string(def).substr(0, std::strchr(def, '=') - def + 1);  // "NAME="
    bool set = false;
    for (std::size_t k = 0; k < inherited && !set; ++k) set = env[k].compare(0, name_is.size(), name_is) == 0;
    if (!set) env.emplace_back(def);
  }
  const std::vector<int> default_signals{SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGPIPE};
  SpawnOptions options;
  options.environment = &env;
  options.default_signals = &default_signals;
  options.own_process_group = true;  // a stop reaches whatever rclone starts
  const SpawnedChild child = spawn_with_pipes(argv, options);
  if (child.pid < 0) {
    if (child.failed_call == std::string("pipe2"))
      result.errors = std::string("cannot make a pipe for rclone: ") + std::strerror(child.error);
    else
      result.errors = "cannot run '" + program + "': " + std::strerror(child.error) +
                      " (install rclone, e.g. apt-get install rclone, or name it in SPOTRUN_RCLONE)";
    return result;
  }
  const pid_t pid = child.pid;
  const double t0 = now_seconds();
  double term_at = -1;
  int open = 2;
  int status = 0;
  bool reaped = false;
  std::string* sinks[2] = {&result.output, &result.errors};
  const int sources[2] = {child.out, child.err};
  bool is_open[2] = {true, true};
  auto drain = [&](int k, bool all) {
    char buf[4096];
    for (;;) {
      const ssize_t got = ::read(sources[k], buf, sizeof buf);
      if (got > 0) {
        sinks[k]->append(buf, static_cast<std::size_t>(got));
        if (k == 1 && sinks[k]->size() > 2 * k_output_max) sinks[k]->erase(0, sinks[k]->size() - k_output_max);
        if (all) continue;
        return;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno == EAGAIN) return;
      if (is_open[k]) --open;  // end of file, or an error
      is_open[k] = false;
      return;
    }
  };
  for (;;) {
    const bool stop = (cancel && cancel->load()) || (timeout_seconds > 0 && now_seconds() - t0 > timeout_seconds);
    if (stop && term_at < 0) {
      result.cancelled = true;
      ::kill(-pid, SIGTERM);
      term_at = now_seconds();
    } else if (term_at > 0 && now_seconds() - term_at > 2) {
      ::kill(-pid, SIGKILL);
    }
    if (open > 0) {
      pollfd p[2] = {{sources[0], static_cast<short>(is_open[0] ? POLLIN : 0), 0},
                     {sources[1], static_cast<short>(is_open[1] ? POLLIN : 0), 0}};
      if (::poll(p, 2, 50) > 0)
        for (int k = 0; k < 2; ++k)
          if (is_open[k] && (p[k].revents & (POLLIN | POLLHUP | POLLERR))) drain(k, false);
    } else {
      ::usleep(20000);
    }
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      reaped = true;
      for (int k = 0; k < 2; ++k)
        if (is_open[k]) {
          ::fcntl(sources[k], F_SETFL, O_NONBLOCK);
          drain(k, true);
        }
      break;
    }
  }
  ::close(child.out);
  ::close(child.err);
  if (reaped && WIFEXITED(status) && !result.cancelled) result.exit_code = WEXITSTATUS(status);
  if (result.errors.size() > k_output_max) result.errors.erase(0, result.errors.size() - k_output_max);
  return result;
}

std::string durable_location(const std::string& value) {
  if (value.empty()) return value;
  if (value.rfind("s3://", 0) == 0) {
    const std::string rest = value.substr(5);
    if (rest.empty() || rest[0] == '/') throw std::invalid_argument("'" + value + "' names no bucket");
    return "s3:" + rest;
  }
  if (value[0] == '/') return value;
  const auto colon = value.find(':');
  const auto slash = value.find('/');
  if (colon != std::string::npos && colon > 0 && (slash == std::string::npos || colon < slash)) return value;
  throw std::invalid_argument("'" + value + "' is neither an absolute directory nor an rclone remote");
}

std::string durable_join(const std::string& location, const std::string& name) {
  if (location.empty()) return name;
  const char last = location.back();
  return location + (last == '/' || last == ':' ? "" : "/") + name;
}

std::string stat_object(const std::string& rclone, const std::string& path, ObjectInfo& info,
                        const std::atomic<bool>* cancel) {
  // MD5 first (S3, GCS, Azure, a directory); else whatever hash the backend keeps.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<std::string> args{"lsjson", "--stat"};
    if (attempt == 0) args.insert(args.end(), {"--hash-type", "MD5"});
    else args.push_back("--hash");
    args.push_back(path);
    const RcloneResult r = run_rclone(rclone, args, cancel);
    if (r.exit_code != 0) return "listing '" + path + "' failed: " + r.brief();
    const auto brace = r.output.find('{');
    const nlohmann::json j = nlohmann::json::parse(brace == std::string::npos ? std::string() : r.output.substr(brace),
                                                   nullptr, false);
    if (j.is_discarded() || !j.is_object()) return "listing '" + path + "': rclone's answer is not JSON";
    if (j.value("IsDir", false) || !j.contains("Size")) return "'" + path + "' does not exist";
    info.size = j["Size"].is_number_integer() ? j["Size"].get<std::int64_t>() : -1;
    info.hashes.clear();
    if (j.contains("Hashes") && j["Hashes"].is_object())
      for (const auto& [k, v] : j["Hashes"].items())
        if (v.is_string() && !v.get<std::string>().empty()) info.hashes.emplace_back(k, v.get<std::string>());
    if (!info.hashes.empty() || attempt == 1) return "";
  }
  return "";
}

std::string copy_confirmed(const std::string& rclone, const std::string& from, const std::string& to,
                           const std::atomic<bool>* cancel) {
  const RcloneResult r = run_rclone(rclone, {"copyto", "--checksum", from, to}, cancel);
  if (r.exit_code != 0) return "copying '" + from + "' to '" + to + "' failed: " + r.brief();
  ObjectInfo dst, src;
  std::string e = stat_object(rclone, to, dst, cancel);
  if (!e.empty()) return "after the copy, " + e;
  // The source's hash of the type the destination keeps (one hash: the source may be large).
  std::vector<std::string> args{"lsjson", "--stat"};
  if (!dst.hashes.empty()) args.insert(args.end(), {"--hash-type", dst.hashes.front().first});
  args.push_back(from);
  const RcloneResult s = run_rclone(rclone, args, cancel);
  if (s.exit_code != 0) return "listing '" + from + "' failed: " + s.brief();
  const auto brace = s.output.find('{');
  const nlohmann::json j = nlohmann::json::parse(brace == std::string::npos ? std::string() : s.output.substr(brace), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("Size")) return "listing '" + from + "': rclone's answer is not JSON";
  src.size = j["Size"].get<std::int64_t>();
  if (src.size != dst.size)
    return "'" + to + "' has " + std::to_string(dst.size) + " bytes, '" + from + "' " + std::to_string(src.size);
  if (!dst.hashes.empty()) {
    const std::string type = dst.hashes.front().first;
    const std::string want = j.contains("Hashes") && j["Hashes"].contains(type) ? j["Hashes"][type].get<std::string>() : "";
    if (!want.empty() && want != dst.hashes.front().second)
      return "'" + to + "': its " + type + " " + dst.hashes.front().second + " is not the local file's " + want;
  }
  return "";
}

std::vector<DurableSet> list_durable_sets(const comm::Communicator& world, const std::string& rclone,
                                          const std::string& prefix) {
  std::string listing;
  if (world.is_root()) {
    const RcloneResult r = run_rclone(rclone, {"lsf", "--files-only", prefix});
    if (r.exit_code == 3) {
      // directory not found: nothing flushed there yet
    } else if (r.exit_code != 0) {
      std::fprintf(stderr, "WARNING: cannot list the durable checkpoints in %s: %s; resuming from the nodes' copies only\n",
                   prefix.c_str(), r.brief().c_str());
    } else {
      std::istringstream in(r.output);
      std::vector<DurableSet> sets;
      for (std::string line; std::getline(in, line);) {
        if (line.size() < 8 || line.compare(line.size() - 7, 7, ".levels") != 0) continue;
        DurableSet s;
        s.set = line.substr(0, line.size() - 7);
        s.index = durable_join(prefix, line);
        const long long step = step_of(s.set);
        if (step < -1) continue;
        s.step = step;
        if (s.set == "final") {
          const RcloneResult c = run_rclone(rclone, {"cat", s.index});
          try {
            if (c.exit_code != 0) throw std::runtime_error(c.brief());
            s.step = LevelIndex::decode(c.output).step;
          } catch (const std::exception& e) {
            std::fprintf(stderr, "WARNING: durable checkpoint %s: %s; skipped\n", s.index.c_str(), e.what());
            continue;
          }
        }
        listing += std::to_string(s.step) + " " + s.set + " " + s.index + "\n";
      }
    }
  }
  listing = world.broadcast(listing);
  std::vector<DurableSet> sets;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    std::istringstream w(line);
    DurableSet s;
    w >> s.step >> s.set;
    std::getline(w >> std::ws, s.index);
    sets.push_back(s);
  }
  std::stable_sort(sets.begin(), sets.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
  return sets;
}

std::string fetch_durable_set(const NodeGroups& nodes, const std::string& rclone, const std::string& prefix,
                              const DurableSet& set, const std::string& into) {
  const comm::Communicator& world = nodes.world();
  const std::string what = "durable checkpoint " + set.index;
  std::string error;
  if (nodes.is_leader()) {  // a clean folder for the downloads
    std::error_code ec;
    fs::remove_all(into, ec);
    fs::create_directories(into, ec);
    if (ec) error = "host " + nodes.host() + ": cannot create '" + into + "': " + ec.message();
  }
  world.agree<InputError>(error.empty(), what + ": " + error);
  const std::string index_path = into + "/" + set.set + ".levels";
  std::string text;
  if (world.is_root()) {
    try {
      const RcloneResult c = run_rclone(rclone, {"cat", set.index});
      if (c.exit_code != 0) throw std::runtime_error("cannot read the index: " + c.brief());
      const LevelIndex x = LevelIndex::decode(c.output);
      text = c.output;
      // Every node file is there with the size the index records (an upload cut short is refused here).
      const std::string folder = durable_join(prefix, set.set);
      const RcloneResult l = run_rclone(rclone, {"lsjson", "--files-only", folder});
      if (l.exit_code != 0) throw std::runtime_error("cannot list '" + folder + "': " + l.brief());
      const auto bracket = l.output.find('[');
      const nlohmann::json j =
          nlohmann::json::parse(bracket == std::string::npos ? std::string() : l.output.substr(bracket), nullptr, false);
      if (j.is_discarded() || !j.is_array()) throw std::runtime_error("listing '" + folder + "': rclone's answer is not JSON");
      std::map<std::string, std::int64_t> sizes;
      for (const auto& e : j)
        if (e.is_object() && e.contains("Name") && e.contains("Size")) sizes[e["Name"].get<std::string>()] = e["Size"].get<std::int64_t>();
      for (const auto& f : x.nodes) {
        auto it = sizes.find(f.file);
        if (it == sizes.end())
          throw std::runtime_error("node file " + f.file + " is missing in " + folder + " (an upload that did not finish)");
        if (it->second != static_cast<std::int64_t>(f.size))
          throw std::runtime_error("node file " + durable_join(folder, f.file) + " has " + std::to_string(it->second) +
                                   " bytes, the index says " + std::to_string(f.size) +
                                   " (a half-uploaded or damaged object)");
      }
      std::ofstream o(index_path, std::ios::binary | std::ios::trunc);
      o << text;
      o.flush();
      if (!o) throw std::runtime_error("cannot write '" + index_path + "'");
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  world.agree<InputError>(error.empty(), what + ": " + error);
  const LevelIndex x = LevelIndex::decode(world.broadcast(text));
  if (nodes.is_leader()) {
    for (std::size_t k = static_cast<std::size_t>(nodes.index()); k < x.nodes.size() && error.empty();
         k += static_cast<std::size_t>(nodes.count())) {
      const std::string from = durable_join(durable_join(prefix, set.set), x.nodes[k].file);
      const RcloneResult r = run_rclone(rclone, {"copyto", "--checksum", from, into + "/" + x.nodes[k].file});
      if (r.exit_code != 0) error = "host " + nodes.host() + ": downloading '" + from + "' failed: " + r.brief();
    }
  }
  world.agree<InputError>(error.empty(), what + ": " + error);
  return index_path;
}

// ---- background flushes ------------------------------------------------------------------------------------

std::string DurableOutcome::text() const {
  switch (state) {
    case DurableState::none: return "";
    case DurableState::flushing: return "flushing";
    case DurableState::durable: return "durable";
    case DurableState::skipped: return "skipped: " + why;
    case DurableState::failed: return "failed: " + why;
  }
  return "";
}

struct DurableFlush::Job {
  std::atomic<bool> done{false};
  std::atomic<bool> cancel{false};
  std::string error;  // read once done
  std::thread thread;
  ~Job() {
    cancel = true;
    if (thread.joinable()) thread.join();
  }
};

DurableFlush::DurableFlush(const NodeGroups& nodes, std::string prefix, std::string directory,
                           DurableSettings settings)
    : m_nodes(nodes), m_prefix(std::move(prefix)), m_directory(std::move(directory)),
      m_keep(std::max(1, settings.keep)), m_nice(settings.nice), m_rclone(std::move(settings.rclone)) {
  SPOTRUN_MPI_CHECK(MPI_Comm_dup(nodes.world().mpi(), &m_comm));
}

DurableFlush::~DurableFlush() {
  m_job.reset();  // cancels and joins
  // A pending allreduce (an error path: the other ranks may never post theirs) is left to MPI_Finalize.
  if (m_request == MPI_REQUEST_NULL && m_comm != MPI_COMM_NULL) MPI_Comm_free(&m_comm);
}

bool DurableFlush::busy() const { return m_nodes.world().any(m_phase != 0); }

void DurableFlush::start_job(std::unique_ptr<Job> job) { m_job = std::move(job); }

void DurableFlush::start(const LevelIndex& index) {
  m_set = index.set;
  m_step = index.step;
  m_phase = 1;
  m_posted = false;
  m_job.reset();
  if (m_nodes.world().is_root()) m_index_text = index.encode();
  if (!m_nodes.is_leader()) return;
  auto job = std::make_unique<Job>();
  Job* j = job.get();
  const std::string file = index.nodes[static_cast<std::size_t>(m_nodes.index())].file;
  const std::string local = m_directory + "/" + file;
  const std::string remote = durable_join(durable_join(m_prefix, m_set), file);
  const std::string old_index = durable_join(m_prefix, m_set + ".levels");
  const bool root = m_nodes.world().is_root();
  const int nice = m_nice;
  const std::string rclone = m_rclone;
  j->thread = std::thread([j, local, remote, old_index, root, nice, rclone] {
    lower_thread_priority(nice);  // and the rclone it runs: the loop goes first
    // A set of that name flushed before (a final state extended) loses its index first: never an index with
    // node files of another state.
    if (root) run_rclone(rclone, {"deletefile", old_index}, &j->cancel);
    j->error = copy_confirmed(rclone, local, remote, &j->cancel);
    if (j->cancel && j->error.empty()) j->error = "cancelled";
    j->done = true;
  });
  start_job(std::move(job));
}

DurableFlush::Event DurableFlush::poll() {
  Event none;
  if (m_phase == 1) {
    if (!m_posted) {
      if (m_job && !m_job->done) return none;
      const std::string error = m_job ? m_job->error : "";
      m_job.reset();
      if (!error.empty())
        std::fprintf(stderr, "WARNING: durable checkpoint %s (step %lld): host %s: %s; the run goes on, its local and "
                             "partner copies are intact\n",
                     m_set.c_str(), static_cast<long long>(m_step), m_nodes.host().c_str(), error.c_str());
      m_send[0] = error.empty() ? 1 : 0;
      SPOTRUN_MPI_CHECK(MPI_Iallreduce(m_send, m_recv, 1, MPI_INT, MPI_MIN, m_comm, &m_request));
      m_posted = true;
    }
    int flag = 0;
    SPOTRUN_MPI_CHECK(MPI_Test(&m_request, &flag, MPI_STATUS_IGNORE));
    if (!flag) return none;
    m_posted = false;
    if (m_recv[0] != 1) {
      m_phase = 0;
      if (m_nodes.world().is_root())
        return {m_step, {DurableState::failed, "a node's upload failed (see its warning)"}};
      return none;
    }
    if (!m_nodes.world().is_root()) {
      m_phase = 0;
      return none;
    }
    // Rank 0: every node file is confirmed; the index commits the set, then older sets go.
    m_phase = 2;
    auto job = std::make_unique<Job>();
    Job* j = job.get();
    const std::string tmp = m_directory + "/" + m_set + ".levels.upload";
    const std::string remote = durable_join(m_prefix, m_set + ".levels");
    const std::string text = m_index_text, prefix = m_prefix, current = m_set;
    const int keep = m_keep;
    const std::int64_t step = m_step;
    const int nice = m_nice;
    const std::string rclone = m_rclone;
    j->thread = std::thread([j, tmp, remote, text, prefix, current, keep, step, nice, rclone] {
      lower_thread_priority(nice);
      {
        std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
        o << text;
        o.flush();
        if (!o) j->error = "cannot write '" + tmp + "'";
      }
      if (j->error.empty()) j->error = copy_confirmed(rclone, tmp, remote, &j->cancel);
      std::error_code ec;
      fs::remove(tmp, ec);
      if (j->cancel && j->error.empty()) j->error = "cancelled";
      if (j->error.empty()) {
        // Keep this set, the final state and the keep-1 newest older sets with an index; everything else
        // (older sets, sets of a later step left by a lost timeline, folders of flushes that failed) goes.
        const RcloneResult l = run_rclone(rclone, {"lsf", prefix}, &j->cancel);
        if (l.exit_code == 0) {
          std::map<long long, std::pair<bool, bool>> sets;  // step -> (index, folder)
          std::istringstream in(l.output);
          for (std::string line; std::getline(in, line);) {
            const bool folder = !line.empty() && line.back() == '/';
            const bool index = line.size() > 7 && line.compare(line.size() - 7, 7, ".levels") == 0;
            if (!folder && !index) continue;
            const std::string set = line.substr(0, line.size() - (folder ? 1 : 7));
            const long long s = step_of(set);
            if (s < 0) continue;
            (folder ? sets[s].second : sets[s].first) = true;
          }
          int kept = current == "final" ? 0 : 1;
          for (auto it = sets.rbegin(); it != sets.rend(); ++it) {
            const std::string set = checkpoint_name(it->first, CheckpointKind::level_set).set();
            if (set == current) continue;
            if (it->first < step && it->second.first && kept < keep) {
              ++kept;
              continue;
            }
            if (it->second.first) run_rclone(rclone, {"deletefile", durable_join(prefix, set + ".levels")}, &j->cancel);
            if (it->second.second) run_rclone(rclone, {"purge", durable_join(prefix, set)}, &j->cancel);
          }
        }
      }
      j->done = true;
    });
    start_job(std::move(job));
    return none;
  }
  if (m_phase == 2) {
    if (!m_job || !m_job->done) return none;
    const std::string error = m_job->error;
    m_job.reset();
    m_phase = 0;
    return {m_step, error.empty() ? DurableOutcome{DurableState::durable, ""} : DurableOutcome{DurableState::failed, error}};
  }
  return none;
}

DurableFlush::Event DurableFlush::wait(double seconds) {
  SPOTRUN_MPI_CHECK(MPI_Bcast(&seconds, 1, MPI_DOUBLE, 0, m_nodes.world().mpi()));
  const double deadline = now_seconds() + std::max(0.0, seconds);
  Event last;
  while (m_phase != 0) {
    const Event e = poll();
    if (e.step >= 0 || e.outcome.ended()) last = e;
    if (m_phase == 0) break;
    if (now_seconds() > deadline && m_job) m_job->cancel = true;
    ::usleep(2000);
  }
  return last;
}

void DurableFlush::cancel() {
  if (m_job) m_job->cancel = true;
  // The index job may start while the node jobs end: it is cancelled as soon as wait() sees it.
  wait(0);
}

}  // namespace spotrun::io
