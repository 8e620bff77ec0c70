// launcher/launch/launch.hpp and launcher/run/run_status.hpp: hostfiles, rank plans, what mpirun's messages say
// about hosts and ranks, UTC times, and the records of OUTDIR/status.json; the watchdog's timeout
// (launcher/run/heartbeat.hpp). The supervisor itself is
// tested end to end by tests/cli/launch_test.sh.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "comm/communicator.hpp"
#include "comm/errors.hpp"
#include "launcher/run/heartbeat.hpp"
#include "launcher/launch/attempt.hpp"
#include "launcher/launch/fence.hpp"
#include "launcher/launch/launch.hpp"
#include "launcher/run/run_status.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

namespace fs = std::filesystem;
using spotrun::InputError;
using namespace spotrun::launcher;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_hostfile(text, "hosts");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

}  // namespace

TEST(Hostfile, LinesSlotsCommentsAndRepeats) {
  const auto hosts = parse_hostfile(
      "# cluster\n"
      "node1 slots=4\n"
      "\n"
      "node2   slots=8 max_slots=8   # big one\n"
      "10.0.0.7\n"
      "node1 slots=2\n",
      "hosts");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "node1");
  EXPECT_EQ(hosts[0].slots, 6);  // repeats add, as in Open MPI
  EXPECT_EQ(hosts[1].name, "node2");
  EXPECT_EQ(hosts[1].slots, 8);
  EXPECT_EQ(hosts[2].name, "10.0.0.7");
  EXPECT_EQ(hosts[2].slots, 0);  // not given: the host's cores
}

TEST(Hostfile, RefusesWhatItDoesNotKnow) {
  EXPECT_NE(error_of("node1 slots=4\nnode2 slot=4\n").find("hosts:2: unknown word 'slot=4'"), std::string::npos);
  EXPECT_NE(error_of("node1 slots=0\n").find("hosts:1: slots must be a whole number"), std::string::npos);
  EXPECT_NE(error_of("node1 slots=-1\n").find("hosts:1:"), std::string::npos);
  EXPECT_NE(error_of("node1 slots=\n").find("hosts:1:"), std::string::npos);
  EXPECT_NE(error_of("no$de slots=1\n").find("is not a host name"), std::string::npos);
  EXPECT_NE(error_of("# nothing\n\n").find("names no host"), std::string::npos);
}

TEST(RankPlan, FillsHostsInOrderUpToWhatIsWanted) {
  const std::vector<Placement> capacity{{"a", 4}, {"b", 0}, {"c", 4}, {"d", 2}};
  auto plan = plan_ranks(capacity, 0);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].host, "a");
  EXPECT_EQ(plan[1].host, "c");
  EXPECT_EQ(plan[2].ranks, 2);
  plan = plan_ranks(capacity, 6);  // elastic: at most 6
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].ranks, 4);
  EXPECT_EQ(plan[1].ranks, 2);
  plan = plan_ranks(capacity, 100);  // fewer slots left than wanted: what fits
  int total = 0;
  for (const auto& p : plan) total += p.ranks;
  EXPECT_EQ(total, 10);
  EXPECT_TRUE(plan_ranks({}, 4).empty());
}

TEST(SameHost, ShortNamesAndLoopback) {
  EXPECT_TRUE(same_host("node7.cluster.example", "node7", "head"));
  EXPECT_TRUE(same_host("node7", "node7", "head"));
  EXPECT_FALSE(same_host("node7", "node8", "head"));
  EXPECT_TRUE(same_host("localhost", "head", "head"));  // mpirun names this machine by its host name
  EXPECT_TRUE(same_host("127.0.0.1", "head.example", "head"));
  EXPECT_FALSE(same_host("localhost", "node7", "head"));
  EXPECT_FALSE(same_host("10.0.0.7", "10.0.0.8", "head"));
}

TEST(MpirunMessages, RanksKilledAndHostsLost) {
  MpirunNotes notes;
  scan_mpirun_line("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).", notes);
  ASSERT_EQ(notes.events.size(), 1u);
  EXPECT_EQ(notes.events[0], "rank 1 on node vm exited on signal 9 (Killed)");
  EXPECT_TRUE(notes.lost_hosts.empty());  // a rank killed is not a host lost: the probe decides
  scan_mpirun_line("  Remote daemon: [[5620,0],2] on node node3", notes);
  ASSERT_EQ(notes.lost_hosts.size(), 1u);
  EXPECT_EQ(notes.lost_hosts[0], "node3");
  scan_mpirun_line("error on node node4. More information may be available above.", notes);
  ASSERT_EQ(notes.lost_hosts.size(), 2u);
  EXPECT_EQ(notes.lost_hosts[1], "node4");
  scan_mpirun_line("Step 100 ...", notes);
  EXPECT_EQ(notes.events.size(), 3u);
}

TEST(MpirunMessages, HostsLostLeaveOutWhatTheFenceDidNotAnswer) {
  const std::vector<std::string> hosts{"node1.cluster", "node2.cluster", "node3.cluster", "localhost"};
  using V = std::vector<std::string>;
  // No fence (mpirun ended the attempt): every host it names, by its short name, is left out; this
  // machine never is.
  EXPECT_EQ(hosts_lost_by_mpirun({"node2", "head"}, hosts, {}, "head"), V{"node2.cluster"});
  EXPECT_EQ(hosts_lost_by_mpirun({"node3", "node1", "node3"}, hosts, {}, "head"), (V{"node1.cluster", "node3.cluster"}));
  // After launch's fence: the daemons it killed on the hosts that answered are reported lost, those hosts
  // stay; a host that did not answer is left out (by the fence, and again here when mpirun names it).
  const V answered{"node1.cluster", "node3.cluster", "localhost"};
  EXPECT_TRUE(hosts_lost_by_mpirun({"node1", "node3"}, hosts, answered, "head").empty());
  EXPECT_EQ(hosts_lost_by_mpirun({"node1", "node2", "node3"}, hosts, answered, "head"), V{"node2.cluster"});
  EXPECT_TRUE(hosts_lost_by_mpirun({}, hosts, {}, "head").empty());
}

TEST(Utc, FormatsAndParsesBack) {
  char buf[32];
  format_utc(0, buf);
  EXPECT_STREQ(buf, "1970-01-01T00:00:00.000Z");
  format_utc(1700000000.123, buf);
  EXPECT_STREQ(buf, "2023-11-14T22:13:20.123Z");
  format_utc(1709208000.5, buf);  // a leap day
  EXPECT_STREQ(buf, "2024-02-29T12:00:00.500Z");
  EXPECT_NEAR(parse_utc("2024-02-29T12:00:00.500Z"), 1709208000.5, 1e-6);
  EXPECT_NEAR(parse_utc("2023-11-14T22:13:20Z"), 1700000000.0, 1e-6);
  EXPECT_LT(parse_utc("yesterday"), 0);
  EXPECT_LT(parse_utc("2024-02-29 12:00:00"), 0);
}

TEST(RunStatusFile, RecordsInOrder) {
  spotrun::comm::Communicator comm(MPI_COMM_WORLD);
  const fs::path dir = fs::temp_directory_path() / ("spotrun-status-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ::setenv(RunStatus::attempt_variable(), "42-7/3", 1);
  {
    RunStatus status(comm);
    status.begin(dir.string(), "deck.toml");
    auto r = read_json(dir / "status.json");
    EXPECT_EQ(r["state"], "running");
    EXPECT_TRUE(r["step"].is_null());
    EXPECT_TRUE(r["start_step"].is_null());
    EXPECT_EQ(r["attempt"], "42-7/3");
    EXPECT_EQ(r["pid"], static_cast<long long>(::getpid()));
    EXPECT_EQ(r["ranks"], 1);
    EXPECT_EQ(r["deck"], "deck.toml");
    EXPECT_GT(parse_utc(r["started"].get<std::string>()), 1.6e9);
    status.running(300, "out/checkpoints/ckpt-300.h5");
    r = read_json(dir / "status.json");
    EXPECT_EQ(r["step"], 300);
    EXPECT_EQ(r["start_step"], 300);
    EXPECT_EQ(r["resumed_from"], "out/checkpoints/ckpt-300.h5");
    EXPECT_TRUE(r["loop_started"].is_string());
    status.stopped(350, "out/checkpoints/ckpt-350.h5", 350, "notice", {"node3"});
    r = read_json(dir / "status.json");
    EXPECT_EQ(r["state"], "stopped");
    EXPECT_EQ(r["exit_code"], 75);
    EXPECT_EQ(r["reason"], "notice");
    EXPECT_EQ(r["checkpoint"]["step"], 350);
    EXPECT_EQ(r["hosts"][0], "node3");
    EXPECT_EQ(r["start_step"], 300);
    status.failed(1, "too late");  // the first end record stands
    EXPECT_EQ(read_json(dir / "status.json")["state"], "stopped");
  }
  {
    RunStatus status(comm);
    status.failed(1, "before the lock");  // not begun: nothing written
    EXPECT_EQ(read_json(dir / "status.json")["state"], "stopped");
    status.begin(dir.string(), "deck.toml");
    status.failed(2, "a \"quoted\"\nmessage");
    auto r = read_json(dir / "status.json");
    EXPECT_EQ(r["state"], "failed");
    EXPECT_EQ(r["exit_code"], 2);
    EXPECT_EQ(r["reason"], "a \"quoted\"\nmessage");
    EXPECT_FALSE(fs::exists(dir / "status.json.tmp"));
  }
  ::unsetenv(RunStatus::attempt_variable());
  fs::remove_all(dir);
}

TEST(Watchdog, StallTimeout) {
  EXPECT_EQ(rank_stall_timeout(-1, 0, false), 120);         // the floor
  EXPECT_EQ(rank_stall_timeout(-1, 30, false), 600);        // 20 x the longest gap between steps
  EXPECT_EQ(rank_stall_timeout(-1, 30, true), 1200);        // a first state write, not timed yet
  EXPECT_EQ(rank_stall_timeout(-1, 90, true), 1800);
  EXPECT_EQ(rank_stall_timeout(6, 90, true), 6);            // SPOTRUN_STALL_TIMEOUT as it is
  EXPECT_EQ(rank_stall_timeout(0, 90, false), 0);           // 0: off
}

// Growing back: the relaunch pays when the steps left, at the measured step time, take longer on the
// ranks of now than on more ranks by more than the relaunch costs (hand-computed cases).
TEST(GrowEstimate, WeighsRelaunchAgainstSaving) {
  using spotrun::launcher::grow_estimate;
  // 1000 steps x 0.01 s x (1 - 2/4) = 5 s saved; 3 s start-up + 0.5 s checkpoint = 3.5 s: grow.
  auto e = grow_estimate(1000, 0.01, 2, 4, 3.0, 0.5);
  EXPECT_DOUBLE_EQ(e.saving, 5.0);
  EXPECT_DOUBLE_EQ(e.cost, 3.5);
  EXPECT_TRUE(e.worth);
  EXPECT_NE(e.text.find("1000 steps left x 0.01 s/step x (1 - 2/4)"), std::string::npos) << e.text;
  // The same with 200 steps redone at the relaunch: 3.5 + 2 = 5.5 s > 5 s: not worth it.
  e = grow_estimate(1000, 0.01, 2, 4, 3.0, 0.5, 200);
  EXPECT_DOUBLE_EQ(e.cost, 5.5);
  EXPECT_FALSE(e.worth);
  // No more ranks, fewer ranks, nothing left: never.
  EXPECT_FALSE(grow_estimate(1000, 0.01, 4, 4, 0, 0).worth);
  EXPECT_FALSE(grow_estimate(1000, 0.01, 4, 2, 0, 0).worth);
  EXPECT_FALSE(grow_estimate(0, 0.01, 2, 4, 0.1, 0).worth);
  EXPECT_DOUBLE_EQ(grow_estimate(-5, 0.01, 2, 4, 0, 0).saving, 0.0);
}

// The decision to grow from what was measured (hand-computed cases): the step time from the heartbeats, or
// from the start of the time loop to a newer checkpoint's file; the relaunch cost the mean start-up of the
// attempts so far, this one's included.
TEST(GrowDecision, FromWhatWasMeasured) {
  GrowFigures f;
  f.total_steps = 1100;
  f.ranks = 2;
  f.new_ranks = 4;
  f.heartbeat_step = 100;
  f.mean_step_seconds = 0.01;
  f.max_gap_seconds = 0.5;
  f.start_step = 0;
  f.prep_started = 1000;
  f.loop_started = 1004;  // this attempt's start-up: 4 s
  f.relaunch_seconds = {2};
  GrowDecision d = decide_grow(f);
  ASSERT_TRUE(d.known);
  EXPECT_EQ(d.step, 100);
  EXPECT_EQ(d.attempts_measured, 2u);
  // 1000 steps left x 0.01 s x (1 - 2/4) = 5 s saved; (2 + 4) / 2 = 3 s start-up + 0.5 s: grow.
  EXPECT_DOUBLE_EQ(d.estimate.saving, 5.0);
  EXPECT_DOUBLE_EQ(d.estimate.cost, 3.5);
  EXPECT_TRUE(d.estimate.worth);
  // A checkpoint at step 300 written 6 s into the time loop: 0.02 s a step, 800 steps left: 8 s saved.
  f.checkpoint_step = 300;
  f.checkpoint_written = 1010;
  d = decide_grow(f);
  EXPECT_EQ(d.step, 300);
  EXPECT_DOUBLE_EQ(d.estimate.saving, 8.0);
  // A checkpoint file older than the time loop (an earlier attempt's) is not a measure.
  f.checkpoint_written = 1003;
  EXPECT_EQ(decide_grow(f).step, 100);
  // Before the time loop, or without a step time: not known yet.
  f.loop_started = -1;
  EXPECT_FALSE(decide_grow(f).known);
  f.loop_started = 1004;
  f.heartbeat_step = -1;
  f.checkpoint_step = -1;
  EXPECT_FALSE(decide_grow(f).known);
}

// Stop requests during an attempt: a checkpoint first (SIGUSR1 once the run has started, SIGTERM when it
// has not 30 s after the request), SIGTERM on the second, SIGKILL on the third, nothing after.
TEST(StopEscalation, OneStageARequest) {
  using spotrun::launcher::impl::StopEscalation;
  using A = StopEscalation::Action;
  using S = StopEscalation::Stage;
  StopEscalation e;
  EXPECT_FALSE(e.stopping());
  EXPECT_EQ(e.tick(true, 0), A::none);  // no request: nothing to forward
  EXPECT_EQ(e.request(100), A::announce);
  EXPECT_EQ(e.stage(), S::waiting_for_run);
  EXPECT_EQ(e.tick(false, 120), A::none);
  EXPECT_EQ(e.tick(true, 121), A::forward_usr1);
  EXPECT_EQ(e.stage(), S::checkpoint_requested);
  EXPECT_EQ(e.tick(true, 122), A::none);
  EXPECT_EQ(e.request(123), A::terminate);
  EXPECT_EQ(e.request(124), A::kill);
  EXPECT_EQ(e.stage(), S::killed);
  EXPECT_EQ(e.request(125), A::none);

  StopEscalation never_started;
  never_started.request(100);
  EXPECT_EQ(never_started.tick(false, 130), A::none);  // 30 s, not more
  EXPECT_EQ(never_started.tick(false, 130.5), A::terminate_unstarted);
  EXPECT_EQ(never_started.stage(), S::terminated);
  EXPECT_EQ(never_started.request(131), A::kill);

  StopEscalation twice;
  twice.request(100);
  EXPECT_EQ(twice.request(101), A::terminate);  // the second before the run started
  EXPECT_EQ(twice.tick(true, 102), A::none);
}

// The fence's script (launcher/launch/fence_remote.sh, embedded at build time), run here as launch runs it
// on a host: it kills the processes whose environment holds the attempt's entry, and only those.
TEST(Fence, ScriptKillsTheAttemptsProcessesOnly) {
  using namespace spotrun::launcher::impl;
  const std::string id = "test-" + std::to_string(::getpid()) + "/1";
  auto start_sleep = [](const std::string& entry) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv(entry.substr(0, entry.find('=')).c_str(), entry.substr(entry.find('=') + 1).c_str(), 1);
      ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  };
  const pid_t mine = start_sleep(std::string(RunStatus::attempt_variable()) + "=" + id);
  const pid_t other = start_sleep(std::string(RunStatus::attempt_variable()) + "=" + id + "0");
  ::usleep(200000);  // both have exec'd
  std::vector<std::string> argv = fence_command(id);
  ASSERT_EQ(argv[0], "/bin/sh");
  std::string command;
  for (std::size_t k = 1; k < argv.size(); ++k) {
    std::string q = "'";
    for (char c : argv[k]) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += " " + q + "'";
  }
  FILE* out = ::popen(("/bin/sh" + command).c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buf[256];
  while (std::fgets(buf, sizeof buf, out)) text += buf;
  ::pclose(out);
  EXPECT_EQ(fenced_count(text), 1) << text;
  int status = 0;
  EXPECT_EQ(::waitpid(mine, &status, 0), mine);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(::waitpid(other, &status, WNOHANG), 0);  // not the attempt's: still there
  ::kill(other, SIGKILL);
  ::waitpid(other, &status, 0);
  EXPECT_EQ(fenced_count("noise\nfenced 12\n"), 12);
  EXPECT_EQ(fenced_count("fenced x\n"), -1);
  EXPECT_EQ(fenced_count(""), -1);
}
