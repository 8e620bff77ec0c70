#pragma once
// The run report's model (docs/report.md): the attempts of one output directory as recorded in its ledger
// (OUTDIR/attempts.jsonl, one JSON object per attempt, written by every `spotrun run`), and what is derived
// from them: steps redone after each resume, rank- and GPU-hours, cost and spot saving, GPU utilisation
// warnings and the Young/Daly checkpoint interval. Pure C++, no MPI: `spotrun run` and `spotrun report`
// both derive report.json from the same ledger, so a damaged report.json is always rebuilt from it.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace spotrun::report {

inline constexpr const char* k_ledger_name = "attempts.jsonl";
inline constexpr const char* k_report_name = "report.json";

// One write of the solver's state in an attempt.
struct CheckpointRecord {
  std::int64_t step = 0;
  double at = 0;       // seconds since the attempt's start
  double seconds = 0;  // its cost (the slowest rank's)
  std::string reason;  // "every_steps", "interval", "signal", "time limit", "spot notice", "final"
  bool ok = true;
  // Multilevel checkpoints (docs/checkpoints.md): the levels written ("local", "local+partner"; "" for a shared
  // file) and the durable tier's verdict ("" none, "flushing", "durable", "skipped: ...", "failed: ...").
  std::string levels;
  std::string durable;
};

// Mean, minimum and peaks of one GPU's samples over an attempt (NVML, io/report/gpu_sampler.hpp).
struct GpuRecord {
  int rank = 0;
  std::string host;
  std::string uuid;
  int samples = 0;
  double util_mean = 0, util_min = 0;  // percent of time a kernel ran
  double memory_max_bytes = 0;
  double power_mean_watts = 0;
  double sm_clock_mean_mhz = 0;
};

// Seconds of an attempt, means over its ranks; idle = wall less the other parts.
struct TimeParts {
  double wall = 0, setup = 0, compute = 0, communication = 0, checkpoint = 0, idle = 0;
};

struct Attempt {
  int number = 0;               // 1, 2, ...
  std::string state;            // "running" (being recorded), "ended", or "lost" (ended without a record: killed)
  double start_unix = 0;        // seconds since 1970 (UTC)
  double end_unix = 0;          // the end, or the last update while running
  std::vector<std::string> hosts;
  int ranks = 0;
  int gpus = 0;                 // distinct GPUs bound to its ranks; 0: none
  int exit_code = -1;           // -1 while running or when the attempt ended without a record
  std::string exit_cause;       // "finished", "signal SIGTERM", "time limit", "spot notice", "failed ...", "lost ..."
  std::string launch_attempt;   // the spotrun launch attempt id (SPOTRUN_LAUNCH_ATTEMPT); "" when not under launch
  std::string ended_by;         // why spotrun launch ended it ("stall: ...", "node lost: ...", "grow: ...", ...;
                                // written into the ledger by launch after the attempt); "" when not known
  std::string resumed_from;     // checkpoint file, or "" for a fresh start
  std::int64_t start_step = 0, end_step = 0;
  TimeParts parts;
  double loop_steps_seconds = 0;  // mean rank's seconds in steps (compute + communication inside steps)
  std::vector<CheckpointRecord> checkpoints;
  std::vector<double> cpu_seconds;  // per rank: CPU time of its process (every thread)
  std::vector<double> wall_per_rank;  // per rank: its own wall time, from its own start (parts.wall: their mean)
  std::vector<GpuRecord> gpu;       // per rank with a GPU; empty without
  // The deck's settings in force (report.* and checkpoint.*).
  double price_per_gpu_hour = 0, on_demand_price_per_gpu_hour = 0, min_gpu_utilisation = 0;
  std::int64_t every_steps = 0;
  double every_seconds = 0, mtbf = 0;
  bool auto_interval = false;
};

nlohmann::json to_json(const Attempt& a);
// Throws std::exception (nlohmann's) for a record that lacks a field or holds the wrong type.
Attempt attempt_from_json(const nlohmann::json& j);

// Reads a ledger's text: every valid line, in order; `warnings` gets one line per line skipped.
std::vector<Attempt> parse_ledger(const std::string& text, const std::string& name, std::vector<std::string>& warnings);
std::string ledger_text(const std::vector<Attempt>& attempts);

// Steps of attempt k computed already by an earlier attempt: min(end_k, max of the earlier ends) - start_k,
// at least 0.
std::vector<std::int64_t> steps_redone(const std::vector<Attempt>& attempts);

// Daly's (2006) optimum checkpoint interval for a checkpoint cost C and a mean time between interruptions
// M (both seconds): sqrt(2 C M) [1 + sqrt(C / 2M) / 3 + (C / 2M) / 9] - C when C < 2 M, else M. Young's
// first-order sqrt(2 C M) is its leading term.
double daly_interval(double cost, double mtbi);
// Expected fraction of the time lost with interval T (first order): C / T for writing checkpoints plus
// (T + C) / 2M redone after each interruption.
double expected_waste(double interval, double cost, double mtbi);
// Expected seconds lost over a run of W seconds of wall time with interval T: floor(W / T) checkpoints of
// C seconds, plus, for each of the W / M interruptions expected, half an interval and a checkpoint redone,
// the interval capped at W (a run shorter than its interval writes no periodic checkpoint and loses at most
// what it has done). T may be infinite (no periodic checkpoint).
double expected_run_loss(double interval, double cost, double mtbi, double run_wall);
// Checkpoint advice changes the setting only when following it would save at least this share of the
// run's wall time (expected_run_loss at the setting less that at the optimum).
inline constexpr double k_advice_noticeable_share = 0.01;

// The checkpoint files of an output directory, for the report (steps from their names).
struct CheckpointFileInfo {
  std::string name;
  std::int64_t step = -1;
};

// report.json from the attempts and the checkpoint files (docs/report.md lists every field).
nlohmann::json derive(const std::vector<Attempt>& attempts, const std::vector<CheckpointFileInfo>& files,
                      const std::string& outdir);
// The short human summary of a derived report.
std::string summary_text(const nlohmann::json& report);
// Whether `text` holds a report.json this ledger could have produced (parses, has as many attempts);
// "" when it does, else what is wrong with it.
std::string check_report_text(const std::string& text, std::size_t attempts);

// UTC ISO 8601 ("2026-11-30T17:12:13.250Z") of seconds since 1970.
std::string iso_utc(double unix_seconds);

}  // namespace spotrun::report
