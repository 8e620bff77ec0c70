// The loop over attempts of `spotrun launch` (supervisor.hpp): the hosts and plan of each attempt, what
// each cost, and whether to relaunch.
#include "launcher/launch/supervisor.hpp"

#include <unistd.h>

#include <Kokkos_Macros.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "io/run_directory.hpp"
#include "launcher/launch/ledger.hpp"
#include "launcher/launch/run_files.hpp"
#include "launcher/launch/this_machine.hpp"
#include "launcher/run/fence.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher::impl {

namespace {

#if defined(KOKKOS_ENABLE_CUDA)
constexpr bool k_gpu_build = true;
#else
constexpr bool k_gpu_build = false;
#endif

}  // namespace

Launcher::Launcher(LaunchOptions opt, std::string outdir, std::string deck, std::string mpirun, std::string spotrun,
                   long long steps)
    : m_total_steps(steps),
      m_opt(std::move(opt)),
      m_outdir(std::move(outdir)),
      m_deck(std::move(deck)),
      m_mpirun(std::move(mpirun)),
      m_spotrun(std::move(spotrun)),
      m_self(this_host()) {}

Launcher::~Launcher() {
  if (m_log) std::fclose(m_log);
}

void Launcher::log(const std::string& text) {
  const std::string stamp = utc(now_unix());
  if (m_log) {
    std::fprintf(m_log, "%s %s\n", stamp.c_str(), text.c_str());
    std::fflush(m_log);
  }
  std::fprintf(stderr, "spotrun launch: %s\n", text.c_str());
  std::fflush(stderr);
}

int Launcher::finish(int code, const std::string& outcome) {
  log("summary: " + outcome + ". " + plural(m_attempts, "attempt") + " (" + plural(m_restarts, "restart") + "), " +
      plural(m_redone, "step") + " redone, " + fixed(m_lost_rank_seconds, 1) +
      " rank-seconds of compute lost; exit " + std::to_string(code));
  return code;
}

int Launcher::stop_exit(int sig, const std::string& when) {
  if (io::newest_checkpoint_step(m_outdir) >= 0 || !io::list_finals(m_outdir).empty())
    return finish(75, "stopped on request (" + std::string(launch_signal_name(sig)) + ") " + when +
                          "; the output directory holds a checkpoint: run the same command to resume");
  return finish(128 + sig, "stopped on request (" + std::string(launch_signal_name(sig)) + ") " + when +
                               "; there is no checkpoint yet");
}

Prober Launcher::prober() const { return {m_mpirun, m_opt.mpirun_args, m_opt.probe_timeout}; }

std::vector<ProbeResult> Launcher::probe(const std::vector<std::string>& hosts, const std::vector<std::string>& command) {
  return probe_hosts(prober(), hosts, command, m_stop);
}

// The hosts and how many ranks each can take, for attempt `attempt`; false when there are none.
bool Launcher::hosts_for_attempt(int attempt, std::vector<Placement>& capacity, std::map<std::string, int>& cores) {
  capacity.clear();
  cores.clear();
  if (m_opt.hostfile.empty() && m_opt.hosts_command.empty()) {
    const int n = m_opt.np > 0 ? m_opt.np : local_cores();
    capacity.push_back({"localhost", m_opt.ranks_per_node > 0 ? std::min(n, m_opt.ranks_per_node) : n});
    cores["localhost"] = local_cores();
    return true;
  }
  try {
    m_hosts = current_hosts();
  } catch (const InputError& e) {
    log("attempt " + std::to_string(attempt) + ": WARNING: " + e.what() + "; using the hosts it named before");
  }
  std::vector<std::string> names;
  for (const auto& h : m_hosts) {
    if (m_dropped.count(h.name) || m_lost.count(h.name)) {
      log("attempt " + std::to_string(attempt) + ": host " + h.name + " left out: it failed in an earlier attempt");
      continue;
    }
    names.push_back(h.name);
  }
  const std::vector<ProbeResult> probes = probe(names);
  std::ostringstream seen;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const HostEntry& h = *std::find_if(m_hosts.begin(), m_hosts.end(), [&](const HostEntry& e) { return e.name == names[k]; });
    if (!probes[k].ok) {
      log("attempt " + std::to_string(attempt) + ": host " + h.name + " left out: its probe failed (" + probes[k].why + ")");
      continue;
    }
    const int cap = m_opt.ranks_per_node > 0 ? m_opt.ranks_per_node : h.slots > 0 ? h.slots : probes[k].cores;
    capacity.push_back({h.name, cap});
    cores[h.name] = probes[k].cores;
    seen << (seen.tellp() > 0 ? ", " : "") << h.name << " (" << cap << (cap == 1 ? " slot, " : " slots, ")
         << probes[k].cores << " cores)";
  }
  if (!capacity.empty()) log("attempt " + std::to_string(attempt) + ": hosts that answered: " + seen.str());
  return !capacity.empty();
}

// The hosts as the hostfile or --hosts-command says now; InputError naming the source.
std::vector<HostEntry> Launcher::current_hosts() const {
  if (!m_opt.hosts_command.empty()) return hosts_from_command(m_opt.hosts_command, std::max(30.0, m_opt.probe_timeout));
  return parse_hostfile(read_regular_file(m_opt.hostfile, "hostfile", 1 << 20), m_opt.hostfile);
}

void Launcher::log_header() {
  std::ostringstream head;
  head << "launch " << m_id << ": deck " << m_deck << ", output directory " << m_outdir << ", "
       << (!m_opt.hosts_command.empty() ? "hosts from --hosts-command '" + m_opt.hosts_command + "'"
           : m_opt.hostfile.empty()      ? std::string("no hostfile (this machine)")
                                         : "hostfile " + m_opt.hostfile)
       << (m_opt.grow ? ", --grow" : "") << ", "
       << (m_opt.np > 0 ? "-np " + std::to_string(m_opt.np) : std::string("ranks: every slot"))
       << (m_opt.ranks_per_node > 0 ? ", " + std::to_string(m_opt.ranks_per_node) + " ranks per node" : std::string())
       << ", at least " << plural(m_opt.min_ranks, "rank") << ", at most " << plural(m_opt.max_restarts, "restart")
       << ", stall timeout "
       << (m_opt.stall_timeout > 0 ? fixed(m_opt.stall_timeout, 0) + " s"
                                   : std::string("max(60 s, 10 x the longest gap between steps); a host's heartbeat: 60 s"))
       << ", mpirun " << m_mpirun;
  log(head.str());
}

int Launcher::run() {
  m_id = std::to_string(static_cast<long long>(now_unix())) + "-" + std::to_string(::getpid());
  const std::string log_path = (fs::path(m_outdir) / "launch.log").string();
  m_log = std::fopen(log_path.c_str(), "a");
  if (!m_log) std::fprintf(stderr, "WARNING: cannot open %s: %s\n", log_path.c_str(), std::strerror(errno));
  log_header();
  m_newest_at_last_end = io::newest_checkpoint_step(m_outdir);
  for (int attempt = 1;; ++attempt) {
    AttemptPlan plan;
    if (const int code = plan_attempt(attempt, plan); code >= 0) return code;
    ++m_attempts;
    const AttemptResult a = run_attempt(attempt, plan);
    const long long newest = io::newest_checkpoint_step(m_outdir);
    account(a, newest);
    note_lost_hosts(a);
    if (a.loop_started > 0) m_relaunch_seconds.push_back(std::max(0.0, a.loop_started - m_prep_started));
    // Why it ended, in the run report's ledger (docs/report.md, "ended_by").
    io::annotate_ledger(m_outdir, a.id, ended_by(a, m_stop.first));  // io/run_directory.hpp
    if (const int code = after_attempt(a, newest); code >= 0) return code;
  }
}

// The hosts and ranks of attempt `attempt` (probes, and spotrun doctor with --doctor); launch's exit code
// when it ends here (a stop request, too few ranks), else -1.
int Launcher::plan_attempt(int attempt, AttemptPlan& out) {
  m_stop.note(take_signals());
  if (m_stop.first) return stop_exit(m_stop.first, "before attempt " + std::to_string(attempt));
  std::vector<Placement> capacity;
  std::map<std::string, int> cores;
  m_prep_started = now_unix();
  const bool any = hosts_for_attempt(attempt, capacity, cores);
  if (m_stop.first) return stop_exit(m_stop.first, "before attempt " + std::to_string(attempt));
  std::vector<Placement> plan = any ? plan_ranks(capacity, m_opt.np) : std::vector<Placement>{};
  int ranks = 0;
  for (const auto& p : plan) ranks += p.ranks;
  if (ranks < m_opt.min_ranks)
    return finish(1, "gave up: only " + plural(ranks, "rank") + " fit on the hosts left, fewer than --min-ranks " +
                         std::to_string(m_opt.min_ranks));
  // Binding: a core per rank where every host has a core for each of its ranks and each rank runs one
  // thread; otherwise none (OpenMP threads), and on a host with more ranks than cores the ranks yield
  // the core while they wait for messages (Open MPI cannot tell: the slots of the hostfile allow them).
  const char* threads = std::getenv("OMP_NUM_THREADS");
  bool oversubscribed = false;
  for (const auto& p : plan) {
    const auto c = cores.find(p.host);
    if (c == cores.end() || p.ranks > c->second) oversubscribed = true;
  }
  // A GPU build leaves the ranks unbound: each binds itself to cores near its GPU (comm/cpu_binding.hpp),
  // which mpirun's core-by-slot binding does not know.
  const bool bind = !k_gpu_build && !oversubscribed && !(threads && std::atoi(threads) > 1);
  out = {plan, bind ? "core" : "none", oversubscribed};
  if (!m_opt.doctor) return -1;
  // spotrun doctor on the hosts of the plan; the hosts it names are left out of this attempt (and
  // checked again before the next one).
  const std::vector<std::string> failing = run_doctor(attempt, out);
  if (m_stop.first) return stop_exit(m_stop.first, "before attempt " + std::to_string(attempt));
  if (failing.empty()) return -1;
  std::vector<Placement> healthy;
  for (const auto& c : capacity) {
    const bool bad = std::any_of(failing.begin(), failing.end(),
                                 [&](const std::string& h) { return same_host(c.host, h, m_self); });
    if (!bad) healthy.push_back(c);
  }
  out.placement = plan_ranks(healthy, m_opt.np);
  ranks = 0;
  for (const auto& p : out.placement) ranks += p.ranks;
  if (ranks < m_opt.min_ranks)
    return finish(1, "gave up: only " + plural(ranks, "rank") + " fit on the hosts spotrun doctor passed, fewer "
                     "than --min-ranks " + std::to_string(m_opt.min_ranks));
  return -1;
}

// What happened in attempt `a`, and what it cost (steps redone, rank-seconds lost): its end line.
void Launcher::account(const AttemptResult& a, long long newest) {
  const int attempt = a.number;
  // The step reached: the record's, else (killed) the last thermo row's, written at `reached_at`.
  long long reached = a.start_step;
  double reached_at = a.ended;
  if (a.state == "finished" || a.state == "stopped") reached = std::max(reached, a.step);
  else if (a.state == "stalled" && a.heartbeat_step >= 0) {
    // The last step a heartbeat reported, reached when that heartbeat says.
    reached = std::max(reached, a.heartbeat_step);
    if (a.heartbeat_step_at > 0) reached_at = a.heartbeat_step_at;
  } else if (a.loop_started > 0) reached = std::max(reached, last_thermo_step(m_outdir, &reached_at));
  long long redone = 0;
  double lost = 0;
  if (a.state != "finished" && a.loop_started > 0 && reached >= 0) {
    const long long resume_at = a.state == "stopped" && a.checkpoint_step >= 0 ? a.checkpoint_step : std::max(newest, 0LL);
    redone = std::max(0LL, reached - resume_at);
    const double loop_seconds = reached_at - a.loop_started;
    if (redone > 0 && reached > a.start_step && loop_seconds > 0)
      lost = static_cast<double>(redone) * loop_seconds / static_cast<double>(reached - a.start_step) * a.ranks;
  }
  m_redone += redone;
  m_lost_rank_seconds += lost;
  std::ostringstream end;
  end << "attempt " << attempt << ": end after " << fixed(a.ended - a.started, 1) << " s: " << a.state;
  if (a.exit_code >= 0 && a.state != "finished") end << " (exit " << a.exit_code << ")";
  if (!a.reason.empty()) end << ": " << a.reason;
  end << "; mpirun " << describe_wait(a.wait_status);
  for (const auto& e : a.notes.events) end << "; " << e;
  if (a.start_step >= 0) end << "; started at step " << a.start_step;
  if (reached >= 0 && a.state != "finished") end << ", reached step " << reached;
  if (a.state == "finished") end << ", finished at step " << a.step;
  if (a.state != "finished")
    end << "; newest checkpoint: " << (newest >= 0 ? "step " + std::to_string(newest) : std::string("none")) << "; "
        << plural(redone, "step") << " redone (" << fixed(lost, 1) << " rank-seconds lost)";
  log(end.str());
}

// The hosts attempt `a` lost (mpirun's reports; a fence's are noted by fence()), and those a spot notice
// named: left out of the next attempts.
void Launcher::note_lost_hosts(const AttemptResult& a) {
  const int attempt = a.number;
  std::vector<std::string> names;
  for (const auto& e : m_hosts) names.push_back(e.name);
  for (const auto& h : hosts_lost_by_mpirun(a.notes.lost_hosts, names, a.fence_answered, m_self))
    if (m_lost[h].insert(a.id).second)
      log("attempt " + std::to_string(attempt) + ": host " + h + " is left out of relaunches" +
          (m_opt.grow ? " until it answers again (--grow)" : std::string()) + ": mpirun reported it failed");
  // The hosts mpirun named that answered the fence, as hosts_lost_by_mpirun would name them without it.
  for (const auto& h : hosts_lost_by_mpirun(a.notes.lost_hosts, a.fence_answered, {}, m_self))
    log("attempt " + std::to_string(attempt) + ": host " + h + " stays in: mpirun lost its daemon there after "
        "launch's fence, which that host answered");
  for (const auto& h : a.stop_hosts)
    for (const auto& e : m_hosts)
      if (same_host(e.name, h, m_self) && m_dropped.insert(e.name).second)
        log("attempt " + std::to_string(attempt) + ": host " + e.name + " is not used again: it got a spot notice");
}

// After attempt `a`: launch's exit code when it ends here (finished, stopped, gave up), else -1 (relaunch).
int Launcher::after_attempt(const AttemptResult& a, long long newest) {
  const int attempt = a.number;
  if (a.state == "finished") return finish(0, "finished at step " + std::to_string(a.step));
  if (m_stop.first) {
    if (a.state == "stopped") return finish(75, "stopped on request with a checkpoint at step " +
                                                    std::to_string(a.checkpoint_step >= 0 ? a.checkpoint_step : newest) +
                                                    "; run the same command to resume");
    return stop_exit(m_stop.first, "during attempt " + std::to_string(attempt) + " (" + a.state + ")");
  }
  if (a.grow && a.state == "stopped") {
    // Growing back: not a failure, and not counted against --max-restarts.
    for (double until = now_unix() + 10; run_lock_held(m_outdir) && now_unix() < until;) ::usleep(50000);
    m_last_failure.clear();
    m_newest_at_last_end = newest;
    log("attempt " + std::to_string(attempt) + ": relaunching on more ranks (grow) from the stop checkpoint at step " +
        std::to_string(a.checkpoint_step >= 0 ? a.checkpoint_step : newest));
    return -1;
  }
  if (a.state == "stopped" && a.reason == "time limit")
    return finish(75, "stopped by the run's time limit (run.time_limit) with a checkpoint at step " +
                          std::to_string(a.checkpoint_step) + "; not relaunched");
  if (a.state == "failed" && a.exit_code == k_exit_bad_input)
    return finish(2, "gave up: the run refused its input (exit 2: " + a.reason + "); a relaunch cannot help");
  // The same kind of failure twice in a row from the same checkpoint is not retried again; another
  // kind (a run killed, then a start that fails while the lost host's daemons time out) is.
  const bool failed = a.state != "stopped";
  if (failed && a.state == m_last_failure && newest <= m_newest_at_last_end)
    return finish(1, "gave up: attempt " + std::to_string(attempt) + " failed, as attempt " +
                         std::to_string(attempt - 1) + " did, without a new checkpoint in between (" +
                         (newest >= 0 ? "newest: step " + std::to_string(newest) : std::string("none yet")) +
                         "): the failure repeats without progress; last cause: " + a.reason);
  if (m_restarts >= m_opt.max_restarts)
    return finish(1, "gave up after " + plural(m_restarts, "restart") + " (--max-restarts " +
                         std::to_string(m_opt.max_restarts) + "); last cause: " + a.state + ": " + a.reason);
  m_last_failure = failed ? a.state : std::string();
  m_newest_at_last_end = newest;
  // The next attempt takes the output directory's lock: wait until this one's rank 0 released it. After
  // a fence that a host did not answer, its rank 0 may hold it (frozen, partitioned): the next attempt's
  // rank 0 waits for that fenced holder itself (launcher/run/output_lock.cpp).
  const bool holder_away = a.stalled && a.fence_unanswered;
  for (double until = now_unix() + 10; !holder_away && run_lock_held(m_outdir) && now_unix() < until;) ::usleep(50000);
  if (holder_away && run_lock_held(m_outdir))
    log("attempt " + std::to_string(attempt) + ": the run lock is held, by a process of a host that did not answer "
        "the fence: the next attempt waits for it (fenced, it ends at its next write)");
  else if (run_lock_held(m_outdir))
    log("attempt " + std::to_string(attempt) + ": WARNING: the run lock of the output directory is still held "
        "10 s after mpirun ended (a rank of this attempt still running?)");
  ++m_restarts;
  log("attempt " + std::to_string(attempt) + ": relaunching (restart " + std::to_string(m_restarts) + " of at most " +
      std::to_string(m_opt.max_restarts) + ") from the newest valid checkpoint");
  return -1;
}

}  // namespace spotrun::launcher::impl
