#pragma once
// The supervisor of `spotrun launch` (launch.hpp): attempts one after another on the hosts that answer,
// until the run finishes, is stopped, or cannot go on. Its parts, each in its own file: the loop over
// attempts (supervisor.cpp), one attempt (attempt.cpp), the doctor before an attempt (doctor.cpp), growing
// back (grow.cpp); the pieces they use have their own headers (hosts, probe, fence, mpirun_output,
// run_files, ledger, signals, this_machine).
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/child_process.hpp"
#include "launcher/launch/attempt.hpp"
#include "launcher/launch/hosts.hpp"
#include "launcher/launch/probe.hpp"
#include "launcher/launch/signals.hpp"

namespace spotrun::launcher::impl {

struct LaunchOptions {
  std::string deck_path;
  std::vector<std::string> sets;
  std::string output_dir;
  int np = 0;
  std::string hostfile;
  int ranks_per_node = 0;
  int max_restarts = 10;
  int min_ranks = 1;
  std::string mpirun;
  double probe_timeout = 10;
  double stall_timeout = 0;    // --stall-timeout; 0: max(60 s, 10 x the longest gap between steps); heartbeats 60 s
  bool doctor = false;         // spotrun doctor before each attempt
  std::string doctor_expect;   // its --expect file
  double doctor_slow_factor = 0;  // its --slow-factor (0: its default)
  bool grow = false;              // --grow: relaunch on more ranks when hosts come back (and it pays)
  std::string hosts_command;      // --hosts-command: prints the hosts, as a hostfile
  std::vector<std::string> mpirun_args;
};

// The default stall timeout's floor, and the default time a host's heartbeat may stay unchanged (s).
constexpr double k_default_stall_seconds = 60;

class Launcher {
 public:
  Launcher(LaunchOptions opt, std::string outdir, std::string deck, std::string mpirun, std::string spotrun,
           long long steps);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;
  // Runs attempts until the run ends; returns launch's exit code.
  int run();

 private:
  // The plan of an attempt: its ranks on the hosts, how they are bound.
  struct AttemptPlan {
    std::vector<Placement> placement;
    std::string binding;
    bool oversubscribed = false;
  };
  // supervisor.cpp
  void log(const std::string& text);
  void log_header();
  int finish(int code, const std::string& outcome);
  int stop_exit(int sig, const std::string& when);
  int plan_attempt(int attempt, AttemptPlan& plan);
  bool hosts_for_attempt(int attempt, std::vector<Placement>& capacity, std::map<std::string, int>& cores);
  std::vector<HostEntry> current_hosts() const;
  std::vector<ProbeResult> probe(const std::vector<std::string>& hosts,
                                 const std::vector<std::string>& command = {"nproc"});
  Prober prober() const;
  void account(const AttemptResult& a, long long newest);
  void note_lost_hosts(const AttemptResult& a);
  int after_attempt(const AttemptResult& a, long long newest);
  // doctor.cpp
  std::vector<std::string> run_doctor(int number, const AttemptPlan& plan);
  // attempt.cpp
  std::vector<std::string> mpirun_command(const AttemptPlan& plan, const std::string& hostfile, bool attempt) const;
  AttemptResult run_attempt(int number, const AttemptPlan& plan);
  bool start_attempt(AttemptResult& a, const AttemptPlan& plan, io::SpawnedChild& child);
  void watch_attempt(AttemptResult& a, const io::SpawnedChild& child, double& exited_at);
  void end_attempt(AttemptResult& a, pid_t pid, double exited_at);
  bool watch_heartbeats(AttemptResult& a, std::map<std::string, HostBeat>& beats, long long& step,
                        double& step_seen_at);
  void fence(AttemptResult& a);
  // grow.cpp
  bool consider_grow(AttemptResult& a);
  bool fence_returning_host(const std::string& tag, const std::string& host);

  long long m_total_steps = 0;            // run.steps of the deck
  double m_prep_started = 0;              // when the current attempt's preparation (probes) began
  std::vector<double> m_relaunch_seconds;  // per attempt that reached its time loop: preparation to first step
  LaunchOptions m_opt;
  std::string m_outdir, m_deck, m_mpirun, m_spotrun, m_self;
  std::string m_id;
  FILE* m_log = nullptr;
  std::set<std::string> m_dropped;  // hosts left out for good (a spot notice named them)
  // Hosts lost in an attempt (mpirun lost them, or they did not answer its fence), with the attempts whose
  // processes may still be there: left out of relaunches; with --grow, used again once they answer their
  // probe and the fence of those attempts (consider_grow).
  std::map<std::string, std::set<std::string>> m_lost;
  std::vector<HostEntry> m_hosts;   // the hostfile as last read
  StopRequests m_stop;              // the first stop request (SIGINT, SIGTERM, SIGHUP)
  int m_attempts = 0, m_restarts = 0;
  long long m_redone = 0;
  double m_lost_rank_seconds = 0;
  // Across attempts: the newest checkpoint when the previous attempt ended, and the kind of failure of
  // the previous attempt ("" when it did not fail): "failed" (the run's record), "killed" (a record left
  // "running"), "none" (mpirun could not start the run).
  long long m_newest_at_last_end = -1;
  std::string m_last_failure;
};

}  // namespace spotrun::launcher::impl
