// One attempt of `spotrun launch`: its mpirun command, start, watch (stop requests, stalls, growing back)
// and end (attempt.hpp).
#include "launcher/launch/attempt.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "comm/number_text.hpp"
#include "io/run_directory.hpp"
#include "launcher/launch/fence.hpp"
#include "launcher/launch/supervisor.hpp"
#include "launcher/launch/this_machine.hpp"
#include "launcher/run/heartbeat.hpp"
#include "launcher/run/run_status.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace spotrun::launcher::impl {

StopEscalation::Action StopEscalation::request(double now) {
  switch (m_stage) {
    case Stage::running:
      m_stage = Stage::waiting_for_run;
      m_request_at = now;
      return Action::announce;
    case Stage::waiting_for_run:
    case Stage::checkpoint_requested:
      m_stage = Stage::terminated;
      return Action::terminate;
    case Stage::terminated:
      m_stage = Stage::killed;
      return Action::kill;
    case Stage::killed:
      break;
  }
  return Action::none;
}

StopEscalation::Action StopEscalation::tick(bool run_started, double now) {
  if (m_stage != Stage::waiting_for_run) return Action::none;
  if (run_started) {
    m_stage = Stage::checkpoint_requested;
    return Action::forward_usr1;
  }
  if (now - m_request_at > k_start_wait_seconds) {
    m_stage = Stage::terminated;
    return Action::terminate_unstarted;
  }
  return Action::none;
}

// mpirun on the hosts of `hostfile` (written from `placement`), up to and including the spotrun the ranks
// run: binding, the environment the ranks get, the user's mpirun options.
std::vector<std::string> Launcher::mpirun_command(const AttemptPlan& plan, const std::string& hostfile,
                                                  bool attempt) const {
  const std::vector<Placement>& placement = plan.placement;
  {
    std::ofstream out(hostfile, std::ios::trunc);
    out << "# written by spotrun launch\n";
    for (const auto& p : placement) out << p.host << " slots=" << p.ranks << "\n";
  }
  int ranks = 0;
  for (const auto& p : placement) ranks += p.ranks;
  // Ranks fill each host's slots in turn (--map-by slot), each bound to a core of its own where the
  // hosts have a core per rank (--bind-to core), else not bound.
  // The user's --map-by and --bind-to (after --) replace these.
  std::vector<std::string> argv{m_mpirun, "--hostfile", hostfile, "-np", std::to_string(ranks)};
  const auto given = [&](const char* option) {
    return std::any_of(m_opt.mpirun_args.begin(), m_opt.mpirun_args.end(), [&](const std::string& a) {
      return a == std::string("--") + option || a == std::string("-") + option;
    });
  };
  if (!given("map-by")) argv.insert(argv.end(), {"--map-by", "slot"});
  if (!given("bind-to")) argv.insert(argv.end(), {"--bind-to", plan.binding});
  if (plan.oversubscribed) argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  // The ranks' environment: spotrun's, Open MPI's, OpenMP's and Kokkos's variables of this process (one
  // thread per rank unless OMP_NUM_THREADS says otherwise), and the attempt's name (`attempt`).
  std::set<std::string> forwarded;
  if (attempt) forwarded.insert(RunStatus::attempt_variable());
  if (attempt && m_opt.stall_timeout > 0) forwarded.insert("SPOTRUN_STALL_TIMEOUT");
  for (char** e = environ; *e; ++e) {
    const std::string var(*e);
    const std::string name = var.substr(0, var.find('='));
    // A bundle's variables are set on each node by its own env.sh (docs/gpu.md).
    if (name.rfind("SPOTRUN_BUNDLE", 0) == 0) continue;
    for (const char* prefix : {"SPOTRUN_", "OMPI_", "OMP_", "KOKKOS_"})
      if (name.rfind(prefix, 0) == 0 && name.size() > std::strlen(prefix)) forwarded.insert(name);
  }
  if (!std::getenv("OMP_NUM_THREADS")) argv.insert(argv.end(), {"-x", "OMP_NUM_THREADS=1"});
  for (const auto& name : forwarded) argv.insert(argv.end(), {"-x", name});
  argv.insert(argv.end(), m_opt.mpirun_args.begin(), m_opt.mpirun_args.end());
  argv.push_back(m_spotrun);
  return argv;
}

AttemptResult Launcher::run_attempt(int number, const AttemptPlan& plan) {
  AttemptResult a;
  a.number = number;
  a.id = m_id + "/" + std::to_string(number);
  a.placement = plan.placement;
  for (const auto& p : plan.placement) a.ranks += p.ranks;
  io::SpawnedChild child;
  if (!start_attempt(a, plan, child)) return a;
  double exited_at = 0;
  watch_attempt(a, child, exited_at);
  end_attempt(a, child.pid, exited_at);
  return a;
}

// Logs the attempt, writes OUTDIR/attempt (fencing, 1) and starts mpirun; false (and a.state "none") when
// it cannot be started.
bool Launcher::start_attempt(AttemptResult& a, const AttemptPlan& plan, io::SpawnedChild& child) {
  const int number = a.number;
  const std::string& binding = plan.binding;
  const bool oversubscribed = plan.oversubscribed;
  // The hosts of this attempt, as mpirun reads them.
  const std::string hostfile = (fs::path(m_outdir) / "launch-hosts").string();
  const bool bind_given = std::any_of(m_opt.mpirun_args.begin(), m_opt.mpirun_args.end(),
                                      [](const std::string& w) { return w == "--bind-to" || w == "-bind-to"; });
  const std::string attempt_env = std::string(RunStatus::attempt_variable()) + "=" + a.id;
  std::vector<std::string> argv = mpirun_command(plan, hostfile, true);
  argv.insert(argv.end(), {"run", m_deck, "--output-dir", m_outdir});
  for (const auto& s : m_opt.sets) argv.insert(argv.end(), {"--set", s});

  std::string command;
  for (const auto& word : argv) command += (command.empty() ? "" : " ") + word;
  std::ostringstream where;
  for (const auto& p : plan.placement) where << (where.tellp() > 0 ? " " : "") << p.host << ":" << p.ranks;
  log("attempt " + std::to_string(number) + ": start: " + plural(a.ranks, "rank") + " on " + where.str() +
      ", --bind-to " + (bind_given ? "as given after --" : binding) + (oversubscribed ? " (more ranks than cores: ranks yield when idle)" : "") + "; newest checkpoint: " +
      (io::newest_checkpoint_step(m_outdir) >= 0 ? "step " + std::to_string(io::newest_checkpoint_step(m_outdir)) : "none"));
  if (m_log) {
    std::fprintf(m_log, "  %s\n", command.c_str());
    std::fflush(m_log);
  }

  // --- fencing: from here on the ranks of earlier attempts write nothing ---
  // A file that still named the previous attempt would fence this one: none at all fences nothing.
  const std::string unfenced = io::write_attempt_file(m_outdir, a.id);  // io/run_directory.hpp
  if (!unfenced.empty())
    log("attempt " + std::to_string(number) + ": WARNING: cannot write " + io::run_path(m_outdir, io::k_attempt_file) +
        " (" + unfenced + "): ranks of earlier attempts are not fenced during this one");
  a.started = now_unix();
  // The ranks' own watchdog waits twice the stall timeout (launcher/run/heartbeat.hpp): launch acts first.
  // A SPOTRUN_STALL_TIMEOUT in launch's own environment is passed on as it is.
  std::vector<std::string> env{attempt_env};
  if (m_opt.stall_timeout > 0 && !std::getenv("SPOTRUN_STALL_TIMEOUT"))
    env.push_back("SPOTRUN_STALL_TIMEOUT=" + fixed(2 * m_opt.stall_timeout, 3));
  child = start_child(argv, env, false, SIGUSR1);
  if (child.pid < 0) {
    a.ended = now_unix();
    a.state = "none";
    a.reason = std::string("cannot start mpirun: ") + std::strerror(child.error);
    return false;
  }
  return true;
}

// Passes mpirun's output on, escalates stop requests (StopEscalation), ends a stalled attempt with a fence,
// and with --grow stops it at a checkpoint worth growing from; until mpirun has ended (and its output, or
// 2 s more).
void Launcher::watch_attempt(AttemptResult& a, const io::SpawnedChild& child, double& exited_at) {
  const pid_t pid = child.pid;
  const std::string tag = "attempt " + std::to_string(a.number) + ": ";
  MpirunOutput output(child.out, child.err, a.notes);
  bool exited = false;
  StopEscalation stop;
  std::map<std::string, HostBeat> beats;
  long long beat_step = -1;
  double beat_step_seen = a.started, next_watch = a.started + 1;
  long long grow_checked = io::newest_checkpoint_step(m_outdir);  // --grow: decide at each newer checkpoint
  double next_grow = a.started + 1;
  using Action = StopEscalation::Action;
  const auto act = [&](Action action) {
    switch (action) {
      case Action::none:
        break;
      case Action::announce:
        log(tag + launch_signal_name(m_stop.first) +
            ": stopping the run with a checkpoint (SIGUSR1 to mpirun, which forwards it to every rank); no relaunch");
        break;
      case Action::forward_usr1:
        ::kill(pid, SIGUSR1);
        a.stop_forwarded = true;
        break;
      case Action::terminate:
        ::kill(pid, SIGTERM);
        log(tag + "second stop request: SIGTERM to mpirun (the ranks are killed a second later; the previous "
            "checkpoint stays valid)");
        break;
      case Action::terminate_unstarted:
        ::kill(pid, SIGTERM);
        log(tag + "the run did not start within 30 s of the stop request: SIGTERM to mpirun");
        break;
      case Action::kill:
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        log(tag + "third stop request: SIGKILL to mpirun");
        break;
    }
  };
  if (m_stop.first) act(stop.request(now_unix()));
  for (;;) {
    std::vector<pollfd> fds;
    output.add_to(fds);
    fds.push_back({signal_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    output.read(fds);
    if (fds.back().revents & POLLIN) {
      const std::vector<int> sigs = take_signals();
      m_stop.note(sigs);
      for (std::size_t k = 0; k < sigs.size(); ++k) act(stop.request(now_unix()));
    }
    if (stop.stage() == StopEscalation::Stage::waiting_for_run && !exited) {
      // SIGUSR1 goes to mpirun once this attempt's run has taken its output directory: every rank has
      // its handlers then (a signal to mpirun before its ranks exist would be lost, and the run would go
      // on). A run that never gets there within 30 s is ended with SIGTERM.
      io::StatusRecord r;
      const bool started = record_of(m_outdir, a.id, r);
      act(stop.tick(started, now_unix()));
    }
    if (!exited && !a.stalled && !stop.stopping() && now_unix() >= next_watch) {
      next_watch = now_unix() + 1;
      if (watch_heartbeats(a, beats, beat_step, beat_step_seen)) {
        log(tag + "stall: " + a.stall_reason + "; ending the attempt (every "
            "process of attempt " + a.id + " on the hosts that answer, then mpirun and its process group)");
        // The ranks first, while they are still blocked: none of them gets to write anything after this
        // (a stopped rank whose daemon dies is woken by SIGCONT). Then mpirun and everything of its
        // process group here (its ssh sessions, local daemons).
        fence(a);
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
      }
    }
    if (m_opt.grow && !exited && !a.stalled && !a.grow && !stop.stopping() && now_unix() >= next_grow) {
      next_grow = now_unix() + 1;
      const long long newest = io::newest_checkpoint_step(m_outdir);
      if (newest > grow_checked) {
        grow_checked = newest;
        io::StatusRecord r;
        if (record_of(m_outdir, a.id, r) && consider_grow(a)) {
          // As a stop request: the ranks agree on a step, write a checkpoint and exit 75.
          ::kill(pid, SIGUSR1);
          a.grow = true;
          a.stop_forwarded = true;
        }
      }
    }
    if (!exited && ::waitpid(pid, &a.wait_status, WNOHANG) == pid) {
      exited = true;
      exited_at = now_unix();
    }
    if (exited && (output.closed() || now_unix() - exited_at > 2)) break;
  }
}

// After mpirun: what is left of it on this machine killed, the outcome read, a stall recorded.
void Launcher::end_attempt(AttemptResult& a, pid_t pid, double exited_at) {
  const int number = a.number;
  const std::string attempt_env = std::string(RunStatus::attempt_variable()) + "=" + a.id;
  // What mpirun started on this machine (its ssh clients, local daemons and ranks) ends with it; what is
  // left of its process group after 10 s is killed, so that the next attempt starts on a clean machine.
  for (double until = now_unix() + 10; ::kill(-pid, 0) == 0 && now_unix() < until;) ::usleep(50000);
  if (::kill(-pid, 0) == 0) {
    ::kill(-pid, SIGKILL);
    log("attempt " + std::to_string(number) + ": processes of mpirun's process group still ran 10 s after it ended: killed");
  }
  // mpirun's rsh launcher puts each ssh client in a process group of its own: one whose node was lost
  // silently waits on a half-open connection for as long as TCP allows. They carry the attempt's id.
  if (const int left = kill_local_processes_with(attempt_env))
    log("attempt " + std::to_string(number) + ": " + std::to_string(left) + " process(es) of the attempt left on this "
        "machine after mpirun (ssh clients in process groups of their own, ranks here): killed");
  a.ended = exited_at;
  read_outcome(m_outdir, a.id, a.wait_status, m_self, a);
  if (a.stalled) {
    // A heartbeat written between launch's last look and the fence: the step reached is the last one any
    // heartbeat of the attempt reported, as the run report reads it.
    for (const io::HeartbeatRecord& b : io::read_heartbeats(m_outdir)) {
      if (b.attempt != a.id || b.step <= a.heartbeat_step) continue;
      a.heartbeat_step = b.step;
      if (b.step_unix >= 0) a.heartbeat_step_at = b.step_unix;
    }
    // OUTDIR/status.json says so: the run's own record stays "running" (its rank 0 could not end it).
    const std::string why = io::mark_status_stalled(
        m_outdir, {a.id, a.stall_reason, a.stalled_hosts, a.heartbeat_step, a.last_heartbeat > 0 ? utc(a.last_heartbeat) : ""});
    if (!why.empty()) log("attempt " + std::to_string(number) + ": WARNING: " + why);
    a.state = "stalled";
    a.exit_code = -1;
    a.reason = a.stall_reason;
  }
}

// Reads this attempt's heartbeat files; true (and a.stall_reason) when the run stalled: its step has not
// advanced for the stall timeout, or a host's heartbeat has not changed for --stall-timeout (default 60 s)
// (this machine's clock).
bool Launcher::watch_heartbeats(AttemptResult& a, std::map<std::string, HostBeat>& beats, long long& step,
                                double& step_seen_at) {
  const double now = now_unix();
  const HeartbeatScan scan = scan_heartbeats(m_outdir, a.id, now, beats, step, step_seen_at, a);
  const double max_gap = scan.max_gap;
  const bool untimed_write = scan.untimed_write, loop = scan.loop;
  double timeout = m_opt.stall_timeout;
  if (timeout <= 0) {
    timeout = std::max(k_default_stall_seconds, 10 * max_gap);
    if (untimed_write) timeout = std::max(timeout, 600.0);
  }
  // A heartbeat is written by a thread of its own, through long steps and checkpoint writes alike: its
  // silence needs no allowance for them, so a node lost silently is seen after 60 s (or --stall-timeout)
  // however long the run's checkpoints take.
  const double beat_timeout = m_opt.stall_timeout > 0 ? m_opt.stall_timeout : k_default_stall_seconds;
  // A heartbeat is written every k_heartbeat_seconds: one not renewed for three of them has stopped.
  std::vector<std::string> silent;
  double longest_silence = 0;
  for (const auto& [host, b] : beats)
    if (now - b.changed_at > 3 * k_heartbeat_seconds) {
      silent.push_back(host);
      longest_silence = std::max(longest_silence, now - b.changed_at);
    }
  std::string hosts;
  for (const auto& h : silent) hosts += (hosts.empty() ? "" : ", ") + h;
  // Without a shared file system only the heartbeat of rank 0's host reaches the output directory: say
  // which hosts' heartbeats launch sees, not that every host's goes on.
  std::string going_on = "every host's heartbeat goes on";
  if (beats.size() < a.placement.size()) {
    std::string seen;
    for (const auto& [host, b] : beats) seen += (seen.empty() ? "" : ", ") + host;
    going_on = "heartbeats seen from " + std::to_string(beats.size()) + " of the " + std::to_string(a.placement.size()) +
               " hosts (" + seen + "), none stopped; the others' do not reach " + m_outdir + "/heartbeats (no shared file system?)";
  }
  if (loop && now - step_seen_at > timeout) {
    a.stall_reason = "step " + std::to_string(step) + " has not advanced for " + fixed(now - step_seen_at, 0) +
                     " s (stall timeout " + fixed(timeout, 0) + " s); " +
                     (silent.empty() ? going_on : "heartbeat stopped: " + hosts);
  } else if (longest_silence > beat_timeout) {
    a.stall_reason = "the heartbeat of " + hosts + " stopped " + fixed(longest_silence, 0) + " s ago (stall timeout " +
                     fixed(beat_timeout, 0) + " s)" + (loop ? ", at step " + std::to_string(step) : std::string(", before the time loop"));
  } else {
    return false;
  }
  // A run that has written its end record is on its way out (MPI_Finalize, its last files): not a stall.
  io::StatusRecord record;
  if (record_of(m_outdir, a.id, record) && !record.state.empty() && record.state != "running") return false;
  a.stalled = true;
  a.stalled_hosts = silent;
  return true;
}

void Launcher::fence(AttemptResult& a) {
  const std::string tag = "attempt " + std::to_string(a.number) + ": fence: ";
  std::vector<std::string> hosts;
  for (const auto& p : a.placement) hosts.push_back(p.host);
  std::vector<long long> killed;
  const std::vector<ProbeResult> results = fence_hosts(prober(), hosts, a.id, m_stop, killed);
  for (std::size_t k = 0; k < hosts.size(); ++k) {
    if (killed[k] >= 0) {
      log(tag + "host " + hosts[k] + ": " + std::to_string(killed[k]) + " process(es) of attempt " + a.id + " killed");
      a.fence_answered.push_back(hosts[k]);
    } else if (m_stop.first) {
      log(tag + "host " + hosts[k] + ": not fenced: stopped on request");
    } else {
      log(tag + "host " + hosts[k] + " did not answer (" + (results[k].why.empty() ? "no count" : results[k].why) +
          "): it is left out of relaunches" + (m_opt.grow ? " until it answers again (--grow)" : ""));
      m_lost[hosts[k]].insert(a.id);
      a.fence_unanswered = true;
    }
  }
}

}  // namespace spotrun::launcher::impl
