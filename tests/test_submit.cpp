// launcher/slurm/submit.hpp and launcher/slurm/slurm_env.hpp: the batch script spotrun submit renders (quoting,
// refusals, GPU and CPU variants) and the job's end time read from Slurm (with a stand-in squeue).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "comm/errors.hpp"
#include "launcher/slurm/slurm_env.hpp"
#include "launcher/slurm/submit.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

namespace fs = std::filesystem;
using spotrun::InputError;
using namespace spotrun::launcher;

namespace {

SubmitOptions basic() {
  SubmitOptions o;
  o.deck_path = "/data/deck.toml";
  o.output_dir = "/data/runs/deck";
  o.spotrun = "/opt/spotrun/bin/spotrun";
  return o;
}

// The #SBATCH lines of a script.
std::vector<std::string> sbatch_lines(const std::string& script) {
  std::vector<std::string> lines;
  std::istringstream in(script);
  std::string l;
  while (std::getline(in, l))
    if (l.rfind("#SBATCH ", 0) == 0) lines.push_back(l.substr(8));
  return lines;
}

bool has_line(const std::vector<std::string>& lines, const std::string& l) {
  return std::find(lines.begin(), lines.end(), l) != lines.end();
}

// A directory on PATH with a stand-in command; restores PATH on destruction.
struct FakeCommand {
  fs::path dir;
  std::string old_path;
  FakeCommand(const std::string& name, const std::string& script) {
    dir = fs::temp_directory_path() / ("spotrun-test-submit-" + std::to_string(getpid()) + "-" + name);
    fs::create_directories(dir);
    const fs::path f = dir / name;
    std::ofstream(f) << "#!/bin/sh\n" << script << "\n";
    chmod(f.c_str(), 0755);
    old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    setenv("PATH", (dir.string() + ":" + old_path).c_str(), 1);
  }
  ~FakeCommand() {
    setenv("PATH", old_path.c_str(), 1);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string timestamp_in(int seconds) {
  std::time_t t = std::time(nullptr) + seconds;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

}  // namespace

TEST(ShellQuote, BashReadsEveryStringBackUnchanged) {
  const std::vector<std::string> hostile = {
      "plain", "", "with space", "it's", "''", "$(touch /tmp/pwned)", "`touch /tmp/pwned`", "a\"b", "a;b&&c|d",
      "$HOME ${PATH} * ? [a] ~ \\ \\\\", "line\nbreak", "-n", "\t tab", "'; touch /tmp/pwned; echo '"};
  for (const auto& s : hostile) {
    std::string err;
    auto out = run_command({"bash", "-c", "printf %s " + shell_quote(s)}, 10, &err);
    ASSERT_TRUE(out) << err;
    EXPECT_EQ(*out, s);
  }
  EXPECT_FALSE(fs::exists("/tmp/pwned"));
}

TEST(RunCommand, ExitCodesTimeoutsAndMissingCommands) {
  std::string err;
  auto out = run_command({"sh", "-c", "echo hello; echo noise >&2"}, 10, &err);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "hello\n");
  EXPECT_FALSE(run_command({"sh", "-c", "echo why >&2; exit 3"}, 10, &err));
  EXPECT_NE(err.find("exited with code 3"), std::string::npos) << err;
  EXPECT_NE(err.find("why"), std::string::npos) << err;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(run_command({"sleep", "20"}, 0.5, &err));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_NE(err.find("did not answer"), std::string::npos) << err;
  EXPECT_FALSE(run_command({"spotrun-no-such-command"}, 5, &err));
}

TEST(SlurmTime, Timestamps) {
  auto t = parse_slurm_timestamp("2024-05-01T12:34:56");
  ASSERT_TRUE(t);
  std::tm tm{};
  localtime_r(&*t, &tm);
  EXPECT_EQ(tm.tm_year, 124);
  EXPECT_EQ(tm.tm_mon, 4);
  EXPECT_EQ(tm.tm_mday, 1);
  EXPECT_EQ(tm.tm_hour, 12);
  EXPECT_EQ(tm.tm_min, 34);
  EXPECT_EQ(tm.tm_sec, 56);
  EXPECT_TRUE(parse_slurm_timestamp(" 2024-05-01T12:34:56\n"));
  for (const char* s : {"N/A", "Unknown", "NONE", "INVALID", "", "2024-05-01 12:34:56", "2024-13-01T00:00:00"})
    EXPECT_FALSE(parse_slurm_timestamp(s)) << s;
  const std::string scontrol =
      "JobId=17 JobName=spotrun-deck\n   RunTime=00:00:12 TimeLimit=00:01:00 TimeMin=N/A\n"
      "   SubmitTime=2024-05-01T12:00:00 EligibleTime=2024-05-01T12:00:00\n"
      "   StartTime=2024-05-01T12:00:01 EndTime=2024-05-01T12:01:01 Deadline=N/A\n";
  auto end = parse_scontrol_end_time(scontrol);
  ASSERT_TRUE(end);
  EXPECT_EQ(*end, *parse_slurm_timestamp("2024-05-01T12:01:01"));
  EXPECT_FALSE(parse_scontrol_end_time("JobId=17 StartTime=2024-05-01T12:00:01 EndTime=Unknown Deadline=N/A"));
  EXPECT_FALSE(parse_scontrol_end_time("JobId=17 NotEndTime=2024-05-01T12:00:01"));
}

TEST(SlurmTime, SecondsLeftFromSqueue) {
  const char* saved = std::getenv("SLURM_JOB_ID");
  const std::string saved_id = saved ? saved : "";
  unsetenv("SLURM_JOB_ID");
  std::string note;
  EXPECT_FALSE(slurm_seconds_left(&note));  // not under Slurm
  setenv("SLURM_JOB_ID", "12$(touch /tmp/pwned)", 1);
  EXPECT_FALSE(slurm_seconds_left(&note));
  EXPECT_NE(note.find("not a job id"), std::string::npos) << note;
  setenv("SLURM_JOB_ID", "4242", 1);
  {
    // squeue -h -j 4242 -o %e: the end time 300 s from now.
    FakeCommand squeue("squeue", "[ \"$1 $2 $3 $4 $5\" = \"-h -j 4242 -o %e\" ] || exit 1\necho " + timestamp_in(300));
    auto left = slurm_seconds_left(&note);
    ASSERT_TRUE(left) << note;
    EXPECT_NEAR(*left, 300, 3);
  }
  {
    FakeCommand squeue("squeue", "echo NONE");
    note.clear();
    EXPECT_FALSE(slurm_seconds_left(&note));
    EXPECT_NE(note.find("no time limit"), std::string::npos) << note;
  }
  {
    // squeue fails: scontrol show job is asked instead.
    FakeCommand squeue("squeue", "exit 1");
    FakeCommand scontrol("scontrol", "echo 'JobId=4242 JobName=x'; echo '   StartTime=2024-05-01T12:00:01 EndTime=" +
                                         timestamp_in(100) + " Deadline=N/A'");
    auto left = slurm_seconds_left(&note);
    ASSERT_TRUE(left) << note;
    EXPECT_NEAR(*left, 100, 3);
  }
  if (saved)
    setenv("SLURM_JOB_ID", saved_id.c_str(), 1);
  else
    unsetenv("SLURM_JOB_ID");
  EXPECT_FALSE(fs::exists("/tmp/pwned"));
}

TEST(RenderSbatch, CpuJob) {
  SubmitOptions o = basic();
  o.nodes = 2;
  o.ntasks_per_node = 16;
  o.time = "12:00:00";
  o.partition = "spot";
  o.account = "proj-1";
  o.max_requeues = 7;
  o.sets = {"run.steps=1000"};
  const std::string s = render_sbatch(o);
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  auto lines = sbatch_lines(s);
  for (const char* l : {"--nodes=2", "--ntasks-per-node=16", "--time=12:00:00", "--partition=spot", "--account=proj-1",
                        "--requeue", "--signal=B:USR1@120", "--open-mode=append", "--job-name=spotrun-deck",
                        "--output=/data/runs/deck/slurm-%j.out"})
    EXPECT_TRUE(has_line(lines, l)) << l;
  EXPECT_EQ(s.find("gpus-per-"), std::string::npos);
  EXPECT_EQ(s.find("--gpu-bind"), std::string::npos);
  EXPECT_NE(s.find("\nMAX_REQUEUES=7\n"), std::string::npos);
  EXPECT_NE(s.find("\nRUN_ARGS=(--set 'run.steps=1000')\n"), std::string::npos);
  EXPECT_NE(s.find("\nDECK='/data/deck.toml'\n"), std::string::npos);
  // The shared body closes the script; every #SBATCH line comes before the first command.
  const std::string& body = sbatch_job_body();
  ASSERT_GE(s.size(), body.size());
  EXPECT_EQ(s.substr(s.size() - body.size()), body);
  EXPECT_LT(s.rfind("#SBATCH"), s.find("\nSPOTRUN="));
}

TEST(RenderSbatch, GpuJobOneRankPerGpu) {
  SubmitOptions o = basic();
  o.gpus_per_node = 8;
  o.cpus_per_task = 6;
  o.signal_lead = 0;
  const std::string s = render_sbatch(o);
  auto lines = sbatch_lines(s);
  EXPECT_TRUE(has_line(lines, "--ntasks-per-node=8"));
  // Every rank sees the node's 8 GPUs (NCCL needs the NVLink peers); spotrun binds each near its own.
  EXPECT_TRUE(has_line(lines, "--gpus-per-node=8"));
  EXPECT_EQ(s.find("gpus-per-task"), std::string::npos);
  EXPECT_TRUE(has_line(lines, "--cpus-per-task=6"));
  for (const auto& l : lines) EXPECT_EQ(l.find("--signal"), std::string::npos) << l;
  EXPECT_NE(s.find("\n[ -z \"${SPOTRUN_GPU_BIND:-}\" ] || SRUN_ARGS+=(--gpu-bind=\"$SPOTRUN_GPU_BIND\")\n"), std::string::npos);
  EXPECT_NE(s.find("\nSRUN_ARGS+=(--cpu-bind=\"${SPOTRUN_SRUN_CPU_BIND:-none}\")\n"), std::string::npos);
}

TEST(RenderSbatch, HostilePathsAreQuotedNotRefused) {
  SubmitOptions o = basic();
  o.deck_path = "/data/$(touch /tmp/pwned)/it's `x`; \"y\".toml";
  o.output_dir = "/data/out dir/%j";
  o.sets = {"run.output_dir=$(reboot)"};
  const std::string s = render_sbatch(o);
  EXPECT_NE(s.find("DECK=" + shell_quote(o.deck_path) + "\n"), std::string::npos);
  // An output directory Slurm would not read literally keeps the log in the submit directory.
  EXPECT_TRUE(has_line(sbatch_lines(s), "--output=slurm-%x-%j.out"));
  for (const auto& l : sbatch_lines(s)) EXPECT_EQ(l.find("touch"), std::string::npos) << l;
  std::string err;
  auto parsed = run_command({"bash", "-n", "-c", s}, 10, &err);
  EXPECT_TRUE(parsed) << err;
}

TEST(RenderSbatch, Refusals) {
  auto refused = [](const std::function<void(SubmitOptions&)>& change) {
    SubmitOptions o = basic();
    change(o);
    EXPECT_FALSE(check_submit_options(o).empty());
    EXPECT_THROW(render_sbatch(o), InputError);
  };
  refused([](SubmitOptions& o) { o.partition = "$(touch /tmp/pwned)"; });
  refused([](SubmitOptions& o) { o.partition = "a b"; });
  refused([](SubmitOptions& o) { o.partition = "-x"; });
  refused([](SubmitOptions& o) { o.account = "a\nb"; });
  refused([](SubmitOptions& o) { o.job_name = "x`id`"; });
  refused([](SubmitOptions& o) { o.deck_path = "/data/a\n#SBATCH --uid=0\n.toml"; });
  refused([](SubmitOptions& o) { o.output_dir = "/data/\r"; });
  refused([](SubmitOptions& o) { o.sets = {"run.steps=1\n"}; });
  refused([](SubmitOptions& o) { o.time = "1:00; id"; });
  refused([](SubmitOptions& o) { o.time = "1:2:3:4"; });
  refused([](SubmitOptions& o) { o.time = "0"; });
  refused([](SubmitOptions& o) { o.time = "1"; o.signal_lead = 30; });  // USR1 at the start of the job
  refused([](SubmitOptions& o) { o.nodes = 0; });
  refused([](SubmitOptions& o) { o.max_requeues = -1; });
  refused([](SubmitOptions& o) { o.gpus_per_node = 4; o.ntasks_per_node = 2; });
  for (const char* t : {"30", "30:00", "1:00:00", "2-12", "2-12:30", "2-12:30:00", "UNLIMITED"}) {
    SubmitOptions o = basic();
    o.time = t;
    EXPECT_EQ(check_submit_options(o), "") << t;
  }
  SubmitOptions o = basic();
  o.partition = "spot,ondemand";
  o.account = "a.b_c-1";
  o.job_name = "my-run.2";
  EXPECT_EQ(check_submit_options(o), "");
}
