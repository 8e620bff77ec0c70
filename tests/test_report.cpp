// The run report's model (io/report/model.hpp): steps redone, Young/Daly, hours, cost and spot
// saving, utilisation warnings, ledger damage; the GPU sampler without NVML. Every expected figure is
// worked out by hand from the made-up attempts.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "io/report/gpu_sampler.hpp"
#include "io/report/model.hpp"
#include "support/mpi_test.hpp"

using namespace spotrun::report;

SPOTRUN_TEST_RANKS(1);

namespace {

Attempt attempt(int n, std::int64_t from, std::int64_t to, double wall, int exit_code, int gpus = 0) {
  Attempt a;
  a.number = n;
  a.state = "ended";
  a.start_unix = 1.7e9 + 1000.0 * n;
  a.end_unix = a.start_unix + wall;
  a.hosts = {"n1"};
  a.ranks = 2;
  a.gpus = gpus;
  a.exit_code = exit_code;
  a.exit_cause = exit_code == 0 ? "finished" : "signal SIGTERM";
  a.start_step = from;
  a.end_step = to;
  a.parts = {wall, 10, wall - 30, 5, 10, 5};
  a.loop_steps_seconds = wall - 25;
  a.every_steps = 0;
  a.every_seconds = 900;
  a.mtbf = 7200;
  a.min_gpu_utilisation = 50;
  return a;
}

}  // namespace

TEST(Report, StepsRedoneAfterEachResume) {
  // 0->120 (stopped), resumed from 100 -> 180 (20 redone), resumed from 150 -> 400 (30 redone).
  std::vector<Attempt> a{attempt(1, 0, 120, 100, 75), attempt(2, 100, 180, 100, 75), attempt(3, 150, 400, 100, 0)};
  EXPECT_EQ(steps_redone(a), (std::vector<std::int64_t>{0, 20, 30}));
  // A resume from an older checkpoint that stops before it reaches the earlier end: only what it did.
  a = {attempt(1, 0, 300, 100, 75), attempt(2, 100, 150, 100, 75), attempt(3, 150, 400, 100, 0)};
  EXPECT_EQ(steps_redone(a), (std::vector<std::int64_t>{0, 50, 150}));
  // A run extended from its final state redoes nothing.
  a = {attempt(1, 0, 100, 100, 0), attempt(2, 100, 200, 100, 0)};
  EXPECT_EQ(steps_redone(a), (std::vector<std::int64_t>{0, 0}));
}

TEST(Report, DalyInterval) {
  // C = 50 s, M = 3600 s: sqrt(2*50*3600) = 600; r = 50/7200; 600 (1 + sqrt(r)/3 + r/9) - 50.
  const double r = 50.0 / 7200.0;
  EXPECT_NEAR(daly_interval(50, 3600), 600 * (1 + std::sqrt(r) / 3 + r / 9) - 50, 1e-9);
  EXPECT_NEAR(daly_interval(50, 3600), 600 + 600.0 / 36 + 600.0 / 1296 - 50, 1e-9);  // sqrt(r) = 1/12
  EXPECT_DOUBLE_EQ(daly_interval(100, 40), 40);  // C >= 2M: checkpoint once per M
  EXPECT_DOUBLE_EQ(daly_interval(0, 40), 0);
  // Young's waste C/T + (T + C)/2M.
  EXPECT_NEAR(expected_waste(600, 50, 3600), 50.0 / 600 + 650.0 / 7200, 1e-12);
}

TEST(Report, HoursCostAndSpotSaving) {
  // Two attempts on 4 GPUs: 3600 s and 1800 s of wall; the second redid 100 of its 200 steps at
  // (1800 - 25) / 200 s a step; checkpoints 10 s each; the second's set-up 10 s.
  std::vector<Attempt> a{attempt(1, 0, 300, 3600, 75, 4), attempt(2, 200, 400, 1800, 0, 4)};
  for (auto& x : a) {
    x.price_per_gpu_hour = 2.0;
    x.on_demand_price_per_gpu_hour = 6.0;
    x.checkpoints.push_back({x.end_step, x.parts.wall - 5, 10, "signal", true});
  }
  const auto r = derive(a, {}, "out");
  const auto& t = r.at("totals");
  EXPECT_DOUBLE_EQ(t.at("gpu_hours").get<double>(), 4 * 1.5);
  EXPECT_DOUBLE_EQ(t.at("rank_hours").get<double>(), 2 * 1.5);
  EXPECT_DOUBLE_EQ(t.at("cost").get<double>(), 12.0);
  EXPECT_EQ(t.at("steps_redone").get<long long>(), 100);
  EXPECT_EQ(t.at("steps_done").get<long long>(), 500);
  const double redone_s = 100 * (1800.0 - 25) / 200;
  EXPECT_NEAR(t.at("redone_seconds").get<double>(), redone_s, 1e-9);
  const double overhead_h = 4 * (redone_s + 10 + 10 + 10) / 3600;  // redone, two checkpoints, one restart
  EXPECT_NEAR(t.at("overhead_gpu_hours").get<double>(), overhead_h, 1e-12);
  EXPECT_NEAR(t.at("on_demand_cost").get<double>(), (6.0 - overhead_h) * 6.0, 1e-9);
  EXPECT_NEAR(t.at("spot_saving").get<double>(), (6.0 - overhead_h) * 6.0 - 12.0, 1e-9);
  // Advice: C = 10 s, one interruption in 5400 s of wall; the setting is every_seconds = 900.
  const auto& adv = r.at("checkpoint_advice");
  EXPECT_EQ(adv.at("interruptions").get<int>(), 1);
  EXPECT_DOUBLE_EQ(adv.at("mtbi_seconds").get<double>(), 5400);
  EXPECT_NEAR(adv.at("optimal_interval_seconds").get<double>(), daly_interval(10, 5400), 1e-9);
  EXPECT_DOUBLE_EQ(adv.at("setting_interval_seconds").get<double>(), 900);
  EXPECT_NEAR(adv.at("setting_over_optimal").get<double>(), 900 / daly_interval(10, 5400), 1e-9);
  // No on-demand price: no saving.
  for (auto& x : a) x.on_demand_price_per_gpu_hour = 0;
  EXPECT_FALSE(derive(a, {}, "out").at("totals").contains("spot_saving"));
}

TEST(Report, NoGpuNoGpuFields) {
  std::vector<Attempt> a{attempt(1, 0, 100, 60, 0)};
  a[0].price_per_gpu_hour = 3;
  a[0].cpu_seconds = {30, 57};  // 50 % and 95 % of the 60 s of wall
  EXPECT_EQ(derive(a, {}, "out").at("attempts")[0].at("cpu_utilisation_percent"), nlohmann::json({50.0, 95.0}));
  const auto r = derive(a, {}, "out");
  for (const char* k : {"gpu_hours", "cost", "spot_saving", "gpu_util_mean_percent"})
    EXPECT_FALSE(r.at("totals").contains(k)) << k;
  EXPECT_FALSE(r.at("attempts")[0].contains("gpu_hours"));
  EXPECT_FALSE(r.at("attempts")[0].contains("gpus"));
  EXPECT_NE(summary_text(r).find("GPUs: none"), std::string::npos);
  EXPECT_NE(summary_text(r).find("CPU time / wall time per rank (attempt 1): 50 %, 95 %"), std::string::npos);
}

TEST(Report, UtilisationWarningAndMtbfWithoutInterruptions) {
  std::vector<Attempt> a{attempt(1, 0, 100, 600, 0, 2)};
  a[0].gpu = {{0, "n1", "GPU-a", 10, 80, 60, 1e9, 300, 1900}, {1, "n1", "GPU-b", 10, 30, 5, 1e9, 100, 1900}};
  a[0].checkpoints.push_back({50, 100, 4, "every_steps", true});
  a[0].every_steps = 50;
  const auto r = derive(a, {}, "out");
  ASSERT_EQ(r.at("warnings").size(), 1u);
  EXPECT_NE(r.at("warnings")[0].get<std::string>().find("rank 1"), std::string::npos);
  EXPECT_NE(summary_text(r).find("GPU utilisation mean/min per rank (attempt 1): rank 0 80/60 %, rank 1 30/5 %"),
            std::string::npos)
      << summary_text(r);
  EXPECT_DOUBLE_EQ(r.at("totals").at("gpu_util_mean_percent").get<double>(), 55);
  EXPECT_DOUBLE_EQ(r.at("totals").at("gpu_util_min_percent").get<double>(), 5);
  const auto& adv = r.at("checkpoint_advice");
  EXPECT_EQ(adv.at("interruptions").get<int>(), 0);
  EXPECT_DOUBLE_EQ(adv.at("mtbi_seconds").get<double>(), 7200);  // checkpoint.mtbf
  // every_steps = 50 at (600 - 25) / 100 s a step is shorter than every_seconds = 900.
  EXPECT_NEAR(adv.at("setting_interval_seconds").get<double>(), 50 * 5.75, 1e-9);
}

TEST(Report, LostAttemptIsAnInterruption) {
  // Attempt 2 was killed (SIGKILL) after its checkpoint at step 160: no end recorded, state "lost".
  std::vector<Attempt> a{attempt(1, 0, 100, 100, 75), attempt(2, 100, 160, 100, -1), attempt(3, 140, 300, 100, 0)};
  a[1].state = "lost";
  a[1].exit_cause = "lost: ended without a record";
  a[2].checkpoints.push_back({200, 50, 2, "every_steps", true});
  const auto r = derive(a, {}, "out");
  EXPECT_EQ(r.at("attempts")[2].at("steps_redone").get<long long>(), 20);
  EXPECT_EQ(r.at("checkpoint_advice").at("interruptions").get<int>(), 2);
  EXPECT_DOUBLE_EQ(r.at("checkpoint_advice").at("mtbi_seconds").get<double>(), 150);
  ASSERT_EQ(r.at("warnings").size(), 1u);
  EXPECT_NE(r.at("warnings")[0].get<std::string>().find("attempt 2 ended without a record"), std::string::npos);
}

TEST(Report, LedgerRoundTripAndDamage) {
  std::vector<Attempt> a{attempt(1, 0, 120, 100, 75, 1), attempt(2, 120, 400, 100, 0, 1)};
  a[0].gpu = {{0, "n1", "GPU-a", 3, 80, 60, 1e9, 300, 1900}};
  a[1].checkpoints.push_back({200, 50, 2, "every_steps", false});
  std::vector<std::string> warnings;
  const auto back = parse_ledger(ledger_text(a), "L", warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(to_json(back[0]), to_json(a[0]));
  EXPECT_EQ(to_json(back[1]), to_json(a[1]));
  // A torn line is skipped with a warning naming it; the attempts after it are kept, numbered again.
  std::string text = ledger_text({attempt(1, 0, 10, 5, 75), attempt(2, 10, 20, 5, 75), attempt(3, 20, 30, 5, 0)});
  const auto second = text.find('\n') + 1;
  text.replace(second + 10, 30, "");
  const auto kept = parse_ledger(text, "L", warnings);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[1].number, 2);
  EXPECT_EQ(kept[1].start_step, 20);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("L:2:"), std::string::npos);
  // report.json checks.
  EXPECT_EQ(check_report_text(derive(a, {}, "o").dump(), 2), "");
  EXPECT_NE(check_report_text(derive(a, {}, "o").dump(), 3), "");
  EXPECT_NE(check_report_text("{\"attempts\": [", 2), "");
}

TEST(Report, GpuStatsAndPciBus) {
  std::vector<GpuStats> s{{"GPU-1", "00000000:41:00.0", 4, 320, 50, 2e9, 1200, 7600}};
  const auto back = decode_gpu_stats(encode_gpu_stats(s));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].uuid, "GPU-1");
  EXPECT_DOUBLE_EQ(back[0].util_sum, 320);
  EXPECT_TRUE(same_pci_bus("00000000:41:00.0", "0000:41:00.0"));
  EXPECT_FALSE(same_pci_bus("00000000:41:00.0", "0000:42:00.0"));
}

TEST(Report, SamplerWithoutNvmlIsNoError) {
  // Inactive: nothing. Active on a machine without NVML (or a build without nvml.h): off, with the reason.
  GpuSampler off(false, 0.1);
  EXPECT_FALSE(off.sampling());
  GpuSampler s(true, 0.1);
  if (s.sampling()) GTEST_SKIP() << "NVML is present here: " << s.status();
  EXPECT_EQ(s.status().rfind("off: ", 0), 0u) << s.status();
  EXPECT_TRUE(s.snapshot().empty());
}

TEST(Report, SamplerReadsEveryGpuThroughNvml) {
  // Where NVML and a GPU are present: every GPU sampled at the interval, figures in their ranges. Skipped
  // elsewhere; SPOTRUN_REQUIRE_GPU=1 turns the skip into a failure.
  GpuSampler s(true, 0.05);
  if (!s.sampling()) {
    const char* require = std::getenv("SPOTRUN_REQUIRE_GPU");
    if (require && std::string(require) == "1") FAIL() << "SPOTRUN_REQUIRE_GPU=1 but " << s.status();
    GTEST_SKIP() << "no GPU sampling here: " << s.status();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto stats = s.snapshot();
  ASSERT_FALSE(stats.empty());
  for (const auto& g : stats) {
    EXPECT_EQ(g.uuid.rfind("GPU-", 0), 0u) << g.uuid;
    EXPECT_GE(g.samples, 3) << g.uuid;  // one at the start, then every 50 ms
    EXPECT_GE(g.util_min, 0);
    EXPECT_LE(g.util_min * g.samples, g.util_sum + 1e-9);
    EXPECT_LE(g.util_sum, 100.0 * g.samples);
    EXPECT_GT(g.memory_max_bytes, 0);
    EXPECT_GT(g.sm_clock_sum_mhz, 0);
  }
}

TEST(Report, ExpectedRunLoss) {
  // W = 36000 s, C = 10 s, M = 7200 s: 5 interruptions expected.
  EXPECT_DOUBLE_EQ(expected_run_loss(900, 10, 7200, 36000), 40 * 10 + 5 * (900 + 10) / 2.0);
  // No periodic checkpoint: an interruption loses half the run so far.
  EXPECT_DOUBLE_EQ(expected_run_loss(std::numeric_limits<double>::infinity(), 10, 7200, 36000), 5 * (36000 + 10) / 2.0);
  // An interval longer than the run: no write, the interval capped at the run.
  EXPECT_DOUBLE_EQ(expected_run_loss(900, 0.5, 7200, 60), 60 / 7200.0 * (60 + 0.5) / 2);
}

TEST(Report, AdviceOnlyWhenFollowingItSavesANoticeableShare) {
  // A 10-hour run with every_seconds = 900, C = 10 s, M = checkpoint.mtbf = 7200 s: the optimum (373 s) saves 2 %.
  std::vector<Attempt> a{attempt(1, 0, 100, 36000, 0)};
  a[0].checkpoints.push_back({50, 100, 10, "interval", true});
  auto adv = derive(a, {}, "out").at("checkpoint_advice");
  const double opt = daly_interval(10, 7200);
  const double saved = expected_run_loss(900, 10, 7200, 36000) - expected_run_loss(opt, 10, 7200, 36000);
  ASSERT_GT(saved / 36000, k_advice_noticeable_share);
  EXPECT_TRUE(adv.at("advice_changes_setting").get<bool>());
  EXPECT_EQ(adv.at("advice").get<std::string>(),
            "checkpoints too rarely: set checkpoint.every_seconds = 373 (and checkpoint.every_steps = 0)");
  EXPECT_DOUBLE_EQ(adv.at("expected_loss_seconds_at_setting").get<double>(), 2675);

  // The quick-start melt: 1.5 s of wall, the same setting 29.7 x the optimum, and nothing to gain.
  a = {attempt(1, 0, 250, 1.5, 0)};
  a[0].checkpoints.push_back({250, 1.4, 0.064, "final", true});
  adv = derive(a, {}, "out").at("checkpoint_advice");
  EXPECT_GT(adv.at("setting_over_optimal").get<double>(), 25);
  EXPECT_FALSE(adv.at("advice_changes_setting").get<bool>());
  EXPECT_EQ(adv.at("advice").get<std::string>(),
            "following the optimum would save 0 % of this run's 1.5 s (under 1 %): no change needed");
  EXPECT_EQ(summary_text(derive(a, {}, "out")).find("too rarely"), std::string::npos);
}
