// The run directory (io/run_directory.hpp): checkpoint names parsed and formatted for both kinds, and the
// records of OUTDIR written byte for byte as earlier spotrun wrote them (hand-written golden text: older
// run directories and the supervisor read these files) and read back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/run_directory.hpp"
#include "support/mpi_test.hpp"

using namespace spotrun::io;
namespace fs = std::filesystem;

SPOTRUN_TEST_RANKS(1);

namespace {

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("spotrun-rundir-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(RunDirectory, CheckpointNamesOfBothKinds) {
  const auto h5 = CheckpointName::parse("ckpt-1200.h5");
  ASSERT_TRUE(h5);
  EXPECT_EQ(h5->step, 1200);
  EXPECT_EQ(h5->kind, CheckpointKind::shared_file);
  EXPECT_FALSE(h5->final);
  const auto levels = CheckpointName::parse("ckpt-40.levels");
  ASSERT_TRUE(levels);
  EXPECT_EQ(levels->step, 40);
  EXPECT_EQ(levels->kind, CheckpointKind::level_set);
  EXPECT_EQ(levels->set(), "ckpt-40");
  const auto fin = CheckpointName::parse("final.levels");
  ASSERT_TRUE(fin);
  EXPECT_TRUE(fin->final);
  EXPECT_EQ(fin->file_name(), "final.levels");
  for (const char* bad : {"ckpt-.h5", "ckpt-12.h5.tmp", "ckpt-1x.h5", "ckpt-1234567890123456789.h5", "ckpt-3.n1.h5",
                          "thermo.csv", "ckpt-7.levels.upload", "final.h5.tmp"})
    EXPECT_FALSE(CheckpointName::parse(bad)) << bad;
  EXPECT_EQ(checkpoint_name(7, CheckpointKind::level_set).path("out"), "out/checkpoints/ckpt-7.levels");
  EXPECT_EQ(checkpoint_name(7, CheckpointKind::shared_file).path("out"), "out/checkpoints/ckpt-7.h5");
  EXPECT_EQ(final_name(CheckpointKind::shared_file).path("out"), "out/final.h5");
  EXPECT_EQ(node_file_name("ckpt-7", "n1.example"), "ckpt-7.n1.example.h5");
  EXPECT_EQ(node_file_set("ckpt-7.n1.example.h5").value_or(""), "ckpt-7");
  EXPECT_EQ(node_file_set("final.n1.h5").value_or(""), "final");
  EXPECT_FALSE(node_file_set("trajectory.h5"));
  EXPECT_EQ(CheckpointName::parse_set("ckpt-9")->step, 9);
  EXPECT_FALSE(CheckpointName::parse_set("ckpt-"));
}

TEST(RunDirectory, ListsCheckpointsByStepAndFinals) {
  const fs::path d = scratch("list");
  for (const char* f : {"ckpt-30.levels", "ckpt-4.h5", "ckpt-200.h5", "ckpt-5.h5.tmp", "ckpt-30.n1.h5", "notes.txt"})
    write(d / "checkpoints" / f, "x");
  write(d / "final.levels", "x");
  const auto names = list_checkpoints(d.string());
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0].file_name(), "ckpt-4.h5");
  EXPECT_EQ(names[1].file_name(), "ckpt-30.levels");
  EXPECT_EQ(names[2].file_name(), "ckpt-200.h5");
  EXPECT_EQ(newest_checkpoint_step(d.string()), 200);
  const auto finals = list_finals(d.string());
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0].kind, CheckpointKind::level_set);
  EXPECT_EQ(newest_checkpoint_step((d / "none").string()), -1);
  fs::remove_all(d);
}

TEST(RunDirectory, StatusRecordsAsEarlierSpotrunWroteThem) {
  StatusShared c;
  c.version = "1.2";
  c.pid = 77;
  c.host = "n1";
  c.ranks = 4;
  c.nodes = 2;
  c.deck = "in.toml";
  c.output_dir = "out";
  c.started = "S";
  const std::string shared = status_shared_text(c);
  EXPECT_EQ(shared,
            "\"version\":\"1.2\",\"attempt\":null,\"pid\":77,\"host\":\"n1\",\"ranks\":4,\"nodes\":2,\"deck\":\"in.toml\","
            "\"output_dir\":\"out\",\"started\":\"S\",\"start_step\":null,\"resumed_from\":null,\"loop_started\":null");
  EXPECT_EQ(status_running_text(-1, "U", shared), "{\"state\":\"running\",\"step\":null,\"updated\":\"U\"," + shared + "}\n");
  c.attempt = "a-1";
  c.start_step = 10;
  c.resumed_from = "out/checkpoints/ckpt-10.h5";
  c.loop_started = "L";
  c.levels_json = "{\"local\":10}";
  const std::string shared2 = status_shared_text(c);
  EXPECT_NE(shared2.find("\"attempt\":\"a-1\""), std::string::npos);
  EXPECT_NE(shared2.find("\"loop_started\":\"L\",\"levels\":{\"local\":10}"), std::string::npos);

  StatusEnd stop;
  stop.state = StatusEnd::State::stopped;
  stop.exit_code = 75;
  stop.step = 12;
  stop.reason = "spot notice";
  stop.checkpoint = "out/checkpoints/ckpt-12.h5";
  stop.checkpoint_step = 12;
  stop.hosts = {"n2"};
  stop.ended = "E";
  EXPECT_EQ(status_end_text(stop, shared),
            "{\"state\":\"stopped\",\"exit_code\":75,\"step\":12,\"reason\":\"spot notice\",\"checkpoint\":{\"path\":"
            "\"out/checkpoints/ckpt-12.h5\",\"step\":12},\"hosts\":[\"n2\"],\"ended\":\"E\"," + shared + "}\n");
  StatusEnd fin;
  fin.state = StatusEnd::State::finished;
  fin.exit_code = 0;
  fin.step = 100;
  fin.final_path = "out/final.h5";
  fin.ended = "E";
  EXPECT_EQ(status_end_text(fin, shared),
            "{\"state\":\"finished\",\"exit_code\":0,\"step\":100,\"final\":\"out/final.h5\",\"ended\":\"E\"," + shared + "}\n");
  StatusEnd failed;
  failed.exit_code = 2;
  failed.reason = "bad deck";
  failed.ended = "E";
  EXPECT_EQ(status_end_text(failed, shared),
            "{\"state\":\"failed\",\"exit_code\":2,\"step\":null,\"reason\":\"bad deck\",\"ended\":\"E\"," + shared + "}\n");

  // Read back, and the supervisor's stalled rewrite of this attempt's record only.
  const fs::path d = scratch("status");
  c.attempt = "a-1";
  write(d / k_status_file, status_end_text(stop, status_shared_text(c)));
  const auto r = read_status(d.string());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, "stopped");
  EXPECT_EQ(r->exit_code, 75);
  EXPECT_EQ(r->checkpoint_step, 12);
  EXPECT_EQ(r->hosts, std::vector<std::string>{"n2"});
  EXPECT_EQ(r->attempt, "a-1");
  EXPECT_EQ(r->pid, 77);
  EXPECT_EQ(r->start_step, 10);
  EXPECT_EQ(r->loop_started, "L");
  const std::string before = read(d / k_status_file);
  EXPECT_EQ(mark_status_stalled(d.string(), {"a-0", "old", {}, 5, ""}), "");
  EXPECT_EQ(read(d / k_status_file), before);  // another attempt's record: untouched
  EXPECT_EQ(mark_status_stalled(d.string(), {"a-1", "no progress", {"n2"}, 14, "T"}), "");
  const std::string after = read(d / k_status_file);
  EXPECT_EQ(after.rfind("{\"state\":\"stalled\",\"exit_code\":null,\"step\":14,\"reason\":\"stalled: no progress\",", 0), 0u)
      << after;
  EXPECT_NE(after.find("\"stalled_hosts\":[\"n2\"],\"last_heartbeat\":\"T\"}\n"), std::string::npos) << after;
  write(d / k_status_file, "not json");
  EXPECT_FALSE(read_status(d.string()));
  fs::remove_all(d);
}

TEST(RunDirectory, HeartbeatsAsEarlierSpotrunWroteThem) {
  HeartbeatRecord b;
  b.attempt = "a-1";
  b.host = "n1";
  b.pid = 9;
  b.max_gap_seconds = 0.5;
  b.unix = 100.25;
  b.utc = "U";
  // nlohmann::json's object: keys sorted.
  EXPECT_EQ(heartbeat_text(b),
            "{\"attempt\":\"a-1\",\"host\":\"n1\",\"max_gap_seconds\":0.5,\"mean_step_seconds\":null,\"pid\":9,\"rank\":0,"
            "\"start_step\":null,\"step\":null,\"step_unix\":null,\"unix\":100.25,\"utc\":\"U\",\"writes_timed\":0,"
            "\"writing_state\":false}\n");
  const fs::path d = scratch("beats");
  EXPECT_EQ(heartbeat_path(d.string(), "node 1"), (d / "heartbeats" / "node_1.json").string());
  b.step = 40;
  b.start_step = 10;
  b.mean_step_seconds = 0.25;
  b.step_unix = 99.5;
  b.writing_state = true;
  write(heartbeat_path(d.string(), "n1"), heartbeat_text(b));
  write(d / "heartbeats" / "n2.json.tmp", heartbeat_text(b));
  write(d / "heartbeats" / "n3.json", "{\"attempt\":7,\"step\":\"x\"}");
  auto beats = read_heartbeats(d.string());
  ASSERT_EQ(beats.size(), 2u);
  std::sort(beats.begin(), beats.end(), [](const auto& x, const auto& y) { return x.host > y.host; });
  EXPECT_EQ(beats[0].attempt, "a-1");
  EXPECT_EQ(beats[0].step, 40);
  EXPECT_EQ(beats[0].start_step, 10);
  EXPECT_DOUBLE_EQ(beats[0].mean_step_seconds, 0.25);
  EXPECT_DOUBLE_EQ(beats[0].step_unix, 99.5);
  EXPECT_TRUE(beats[0].writing_state);
  EXPECT_EQ(beats[1].attempt, "");  // a number: read as absent
  EXPECT_EQ(beats[1].step, -1);
  EXPECT_LT(beats[1].unix, 0);
  fs::remove_all(d);
}

TEST(RunDirectory, ProgressAsEarlierSpotrunWroteIt) {
  ProgressRecord p;
  p.step = 1200;
  p.steps = 5000;
  p.percent = 24;
  p.steps_per_second = 310;
  p.work_per_second = 2.5;
  p.work_unit = "atom-steps";
  p.elapsed = 4;
  p.updated_utc = "U";
  // nlohmann::json's object, indented by 2: keys sorted.
  EXPECT_EQ(progress_text(p),
            "{\n  \"elapsed_seconds\": 4.0,\n  \"expected_end_utc\": null,\n  \"finished\": false,\n  \"measure\": \"steps\",\n"
            "  \"percent\": 24.0,\n  \"remaining_seconds\": null,\n  \"step\": 1200,\n  \"steps\": 5000,\n"
            "  \"steps_per_second\": 310.0,\n  \"updated_utc\": \"U\",\n  \"work_per_second\": 2.5,\n"
            "  \"work_unit\": \"atom-steps/s\"\n}\n");
  const fs::path d = scratch("progress");
  p.measure = "time 2.5 of 10";
  p.remaining = 12.5;
  p.finished = true;
  write(d / k_progress_file, progress_text(p));
  const auto back = read_progress(d.string());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->step, 1200);
  EXPECT_EQ(back->measure, "time 2.5 of 10");
  EXPECT_EQ(back->work_unit, "atom-steps");
  EXPECT_DOUBLE_EQ(back->remaining, 12.5);
  EXPECT_TRUE(back->finished);
  fs::remove_all(d);
}

TEST(RunDirectory, LockAttemptAndLedger) {
  const LockRecord lock{"n1", "42", "T", "a-3"};
  EXPECT_EQ(lock_text(lock), "host n1\npid 42\nstarted T\nattempt a-3\n");
  EXPECT_EQ(lock_text({"n1", "42", "T", ""}), "host n1\npid 42\nstarted T\n");
  const LockRecord back = parse_lock(lock_text(lock));
  EXPECT_EQ(back.host, "n1");
  EXPECT_EQ(back.pid_number(), 42);
  EXPECT_EQ(back.attempt, "a-3");
  EXPECT_TRUE(parse_lock("").empty());
  EXPECT_EQ(parse_lock("pid x\n").pid_number(), -1);

  const fs::path d = scratch("ledger");
  EXPECT_EQ(write_attempt_file(d.string(), "a-4"), "");
  EXPECT_EQ(read(d / k_attempt_file), "a-4\n");
  write(d / k_ledger_file, "{\"attempt\":1,\"launch_attempt\":\"a-3\"}\n{\"attempt\":2,\"launch_attempt\":\"a-4\"}\n");
  annotate_ledger(d.string(), "a-4", "stall");
  EXPECT_EQ(read(d / k_ledger_file),
            "{\"attempt\":1,\"launch_attempt\":\"a-3\"}\n{\"attempt\":2,\"launch_attempt\":\"a-4\",\"ended_by\":\"stall\"}\n");
  fs::remove_all(d);
}
