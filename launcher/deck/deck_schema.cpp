// spotrun's deck schema, assembled here: the launcher's keys ([run], [checkpoint], [comm], [cloud], [report]) below,
// then the keys of every registered solver (solvers/registry.hpp), which also say which of their keys apply
// and the rules between them. docs/decks.md documents the same keys (a test checks that it does).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <set>
#include <stdexcept>

#include "io/cloud/metadata_endpoint.hpp"
#include "io/cloud/provider.hpp"
#include "comm/transport.hpp"
#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "io/checkpoint_durable.hpp"
#include "solvers/registry.hpp"

namespace spotrun::launcher {
namespace {

// The launcher's keys, section by section. resumable: keys that may change between a checkpoint and its
// resume (run length, output, checkpoint settings, transport); every other key defines the physics and must
// not change.

// The keys of [run]: run.solver is one of the registered solvers, the first one registered the default.
std::vector<KeySpec> run_keys() {
  KeySpec solver{"run.solver", KeyType::String, "", "-", "Solver to run"};
  solver.choices = solvers::solver_names();
  if (!solver.choices.empty()) solver.default_value = "\"" + solver.choices.front() + "\"";
  return {
    solver,
    {"run.steps", KeyType::Int, "1000", "steps", "Number of time steps of the run (total, counted from step 0)", 0,
     1e15, false, {}, true},
    {"run.thermo_every", KeyType::Int, "100", "steps", "Thermo output interval (stdout and OUTDIR/thermo.csv)", 1, 1e15,
     false, {}, true},
    {"run.output_dir", KeyType::String, "", "path",
     "Output directory (default: runs/<deck file stem>; --output-dir overrides)", -1e300, 1e300, false, {}, true},
    {"run.progress_seconds", KeyType::Float, "60", "s",
     "Progress report interval: step, share done, throughput and expected end on stderr (root rank) and in "
     "OUTDIR/progress.json; 0 = off", 0, 1e12, false, {}, true},
    {"run.time_limit", KeyType::Duration, "0", "s or HH:MM:SS",
     "Wall-clock limit of this run: stop with a checkpoint (exit 75) before it; 0 = none", 0, 1e300, false, {}, true},
  };
}

// The keys of [checkpoint], with the checks of its two location keys.
std::vector<KeySpec> checkpoint_keys() {
  // checkpoint.local_dir: an absolute path, the same on every node.
  KeySpec local_dir{"checkpoint.local_dir", KeyType::String, "\"\"", "path",
                    "Node-local directory for checkpoints (one file per node, by host name; local NVMe, /dev/shm): no "
                    "checkpoint file goes into the output directory; \"\" = one shared file in OUTDIR/checkpoints",
                    -1e300, 1e300, false, {}, true};
  local_dir.check = [](const std::string& v) -> std::string {
    if (v.empty() || v[0] == '/') return "";
    return "must be an absolute path (the same directory is used on every node), or \"\" for checkpoints in the "
           "output directory";
  };
  // checkpoint.durable: an absolute directory, an rclone remote, or s3://bucket/path (io::durable_location).
  KeySpec durable{"checkpoint.durable", KeyType::String, "\"\"", "path or remote",
                  "Durable tier of the level checkpoints (needs checkpoint.local_dir): a shared directory (absolute "
                  "path) or an rclone remote REMOTE:PATH (s3://BUCKET/PATH = the rclone remote named s3), flushed in "
                  "the background with rclone; \"\" = off", -1e300, 1e300, false, {}, true};
  durable.check = [](const std::string& v) -> std::string {
    try {
      io::durable_location(v);
      return "";
    } catch (const std::invalid_argument& e) {
      return std::string(e.what()) + "; allowed: \"\", an absolute directory, an rclone remote REMOTE:PATH, or "
             "s3://BUCKET/PATH";
    }
  };
  return {
    // [checkpoint]
    {"checkpoint.every_steps", KeyType::Int, "0", "steps", "Checkpoint every this many steps; 0 = off", 0, 1e15,
     false, {}, true},
    {"checkpoint.every_seconds", KeyType::Float, "900", "s",
     "Checkpoint when this much wall-clock time passed since the last one; 0 = off", 0, 1e12, false, {}, true},
    {"checkpoint.interval", KeyType::String, "\"fixed\"", "-",
     "\"fixed\": every_steps/every_seconds as given; \"auto\": the Young/Daly interval sqrt(2 C mtbf) from the "
     "measured checkpoint cost C replaces every_seconds",
     -1e300, 1e300, false, {"fixed", "auto"}, true},
    {"checkpoint.mtbf", KeyType::Float, "7200", "s",
     "Mean time between failures (preemptions) assumed by interval = \"auto\"", 0, 1e12, true, {}, true},
    {"checkpoint.keep", KeyType::Int, "2", "files", "Number of newest checkpoints kept in OUTDIR/checkpoints", 1, 1e6,
     false, {}, true},
    {"checkpoint.on_error", KeyType::String, "\"warn\"", "-",
     "When writing a checkpoint fails: warn and retry at the next interval, or abort the run (exit 1)", -1e300,
     1e300, false, {"warn", "abort"}, true},
    {"checkpoint.safety_factor", KeyType::Float, "2.0", "-",
     "Time-limit reserve: this factor times the measured checkpoint time, plus two steps", 1, 1e3, false, {}, true},
    // Multilevel checkpoints (launcher/run/checkpoint_levels.hpp, docs/checkpoints.md)
    local_dir,
    {"checkpoint.partner", KeyType::Bool, "false", "-",
     "With checkpoint.local_dir: each node's file is also copied (MPI) into the local directory of another node, so "
     "that losing a node loses no checkpoint; needs 2 or more nodes", -1e300, 1e300, false, {}, true},
    {"checkpoint.async", KeyType::Bool, "true", "-",
     "With checkpoint.local_dir: the time loop only takes a snapshot of the state (a host copy) and goes on while a "
     "background thread writes the node files, partner copies and index (needs MPI_THREAD_MULTIPLE, else "
     "synchronous); false = the loop waits for each set", -1e300, 1e300, false, {}, true},
    {"checkpoint.background_nice", KeyType::Int, "10", "-",
     "With checkpoint.local_dir: the nice value (Linux scheduling priority, 19 = lowest) of the threads that write "
     "level sets in the background; where they share the rank's cores the time loop goes first. 0 = the loop's "
     "priority (faster background writes, slower steps)", 0, 19, false, {}, true},
    durable,
    {"checkpoint.durable_nice", KeyType::Int, "19", "-",
     "With checkpoint.durable: the nice value (Linux scheduling priority, 19 = lowest) of the durable tier's rclone "
     "uploads during the run; at 19 a busy core gives them about 1.5 % of its time, an idle one all of it. 0 = the "
     "loop's priority", 0, 19, false, {}, true},
    {"checkpoint.durable_interval", KeyType::Float, "3600", "s",
     "With checkpoint.durable: seconds between durable flushes (the first one this long after the time loop "
     "starts, at a checkpoint); 0 = every checkpoint", 0, 1e12, false, {}, true},
    {"checkpoint.durable_wait", KeyType::Float, "120", "s",
     "With checkpoint.durable: how long the run waits at its end (final state, or a stop without a notice "
     "deadline) for the flush of its last checkpoint", 0, 1e12, false, {}, true},
  };
}

// The keys of [comm], [cloud] and [report].
std::vector<KeySpec> comm_cloud_report_keys() {
  // cloud.metadata_url: loopback and link-local IP literals only (io/cloud/metadata_endpoint.hpp).
  KeySpec metadata_url{"cloud.metadata_url", KeyType::String, "\"\"", "URL",
                       "Metadata service polled for spot notices: http://ADDRESS[:PORT], a loopback or link-local "
                       "IP literal; \"\" = the provider's, http://169.254.169.254",
                       -1e300, 1e300, false, {}, true};
  metadata_url.check = cloud::check_metadata_url;
  return {
    // [comm]
    // comm.transport: the kinds the transport factory knows (comm/transport.hpp).
    {"comm.transport", KeyType::String, "\"auto\"", "-",
     "Which transport moves halos and transposes: auto picks the best the build and the run allow; mpi = MPI "
     "given the solver's memory (GPU-aware where there is a device); mpi-host = MPI on host buffers, device data "
     "staged through host memory; nccl = NCCL on the GPUs (CUDA build, one GPU per rank)",
     -1e300, 1e300, false, comm::transport_kinds(), true},
    // [cloud]: spot notices (docs/cloud.md)
    {"cloud.provider", KeyType::String, "\"none\"", "-",
     "Whose spot notices to watch for (a notice stops the run with a checkpoint, exit 75): none; auto = the "
     "provider DMI names on each node, none elsewhere; aws, gcp, azure",
     -1e300, 1e300, false, cloud::provider_choices(), true},
    {"cloud.poll_seconds", KeyType::Float, "5.0", "s", "Interval between two polls of the metadata service", 0,
     3600, true, {}, true},
    metadata_url,
    // [report]: the run report (docs/report.md)
    {"report.sample_seconds", KeyType::Float, "10.0", "s",
     "Interval between two samples of the GPUs (NVML) on each node's local rank 0", 0, 3600, true, {}, true},
    {"report.price_per_gpu_hour", KeyType::Float, "0.0", "currency / GPU-hour",
     "Price paid for one GPU for one hour (spot); the report's cost is GPU-hours times this; 0 = no cost", 0, 1e9,
     false, {}, true},
    {"report.on_demand_price_per_gpu_hour", KeyType::Float, "0.0", "currency / GPU-hour",
     "On-demand price of the same GPU: the report states what spot saved, net of redone work, checkpoints and "
     "restarts; 0 = no comparison",
     0, 1e9, false, {}, true},
    {"report.min_gpu_utilisation", KeyType::Float, "50.0", "%",
     "The report warns about every rank whose GPU's mean utilisation in an attempt is below this", 0, 100, false,
     {}, true},
  };
}

std::vector<KeySpec> launcher_keys() {
  std::vector<KeySpec> keys = run_keys();
  for (auto* part : {checkpoint_keys, comm_cloud_report_keys}) {
    std::vector<KeySpec> more = part();
    keys.insert(keys.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return keys;
}

// [[run.stage]]: the stages of a run, each with its steps and the keys it sets in a table of its solver
// ([run.stage.md]): the solvers' stage keys (SolverRegistration::stage_keys) below run.stage, optional, without
// a default (a stage keeps what the stages before it set, the first one the solver's section). A key of a
// solver that a stage may not set is refused naming it: it defines the system.
std::vector<KeySpec> stage_keys() {
  std::vector<std::string> settable;
  std::vector<KeySpec> fields;
  for (const auto& solver : solvers::registered_solvers())
    for (KeySpec k : solver.stage_keys) {
      settable.push_back(k.key);
      k.key = "run.stage." + k.key;
      k.default_value.clear();
      k.optional = true;
      k.resumable = false;
      k.help += " (in this stage)";
      fields.push_back(std::move(k));
    }
  KeySpec stage{"run.stage", KeyType::TableArray, "", "-",
                "Stages of the run in order ([[run.stage]] blocks with steps and a table of the solver's keys that "
                "change, [run.stage.md]); one continuous step count, run.steps their sum",
                0, 1000};
  stage.unknown_field = [settable](const std::string& field) -> std::string {
    const std::string section = field.substr(0, field.find('.'));
    const bool solver_key = find_key(field) != nullptr;
    bool solver_section = false;
    for (const auto& k : deck_schema())
      if (k.key.rfind(field + ".", 0) == 0 && k.key.rfind("run.", 0) != 0) solver_section = true;
    if (!solver_key && !solver_section) return "";
    std::string allowed;
    for (const auto& k : settable) allowed += (allowed.empty() ? "" : ", ") + k;
    return std::string(solver_key ? "'" + field + "' defines the system" : "[" + field + "] defines the system") +
           " and may not change between stages; a stage sets steps and " +
           (allowed.empty() ? std::string("nothing else (the solver runs no stages)") : allowed);
  };
  // steps: required by the solver's rules unless the stage does something else than time steps (MD: minimise).
  KeySpec steps{"run.stage.steps", KeyType::Int, "", "steps", "Number of time steps of the stage", 1, 1e15};
  steps.optional = true;
  std::vector<KeySpec> out{stage, steps};
  out.insert(out.end(), fields.begin(), fields.end());
  return out;
}

std::vector<KeySpec> build_schema() {
  std::vector<KeySpec> s = launcher_keys();
  std::set<std::string> sections, keys;
  for (const auto& k : s) {
    sections.insert(k.key.substr(0, k.key.find('.')));
    keys.insert(k.key);
  }
  for (const auto& solver : solvers::registered_solvers()) {
    // A solver's section must not be one of the launcher's: its keys would hide them.
    if (sections.count(solver.name))
      throw std::logic_error("solver registration '" + solver.name + "': [" + solver.name + "] is a launcher section");
    for (const auto& k : solver.keys) {
      if (!keys.insert(k.key).second) throw std::logic_error("deck key '" + k.key + "' is registered twice");
      s.push_back(k);
    }
  }
  const std::vector<KeySpec> stages = stage_keys();
  const auto after = std::find_if(s.begin(), s.end(), [](const KeySpec& k) { return k.key == "run.time_limit"; });
  s.insert(after == s.end() ? s.end() : after + 1, stages.begin(), stages.end());
  return s;
}

// [[run.stage]]: only in decks of a solver that runs stages; run.steps, when given, at most the stages' steps.
void check_stages(const io::Deck& deck) {
  const std::size_t n = deck.count("run.stage");
  if (n == 0) return;
  const std::string solver = deck.get_string("run.solver");
  const solvers::SolverRegistration* r = solvers::find_solver(solver);
  if (r && r->stage_keys.empty())
    throw InputError(deck.where("run.stage") + ": [[run.stage]]: the " + solver + " solver runs no stages");
  const std::int64_t total = stage_steps(deck);
  if (deck.has("run.steps") && deck.get_int("run.steps") > total)
    throw InputError(deck.where("run.steps") + ": key 'run.steps' = " + std::to_string(deck.get_int("run.steps")) +
                     " is more than the " + std::to_string(total) + " steps of the " + std::to_string(n) +
                     " stages ([[run.stage]]); allowed: at most their sum (fewer: the run stops there, and a "
                     "resume with more continues the stages)");
}

// A time limit the run could not keep: it stops when the time since it started plus a reserve reaches the
// limit (launcher/run/run.cpp), the reserve being checkpoint.safety_factor times the cost of a checkpoint,
// at least one second before the first one is measured (CheckpointManager::reserve_seconds), plus two
// steps. A limit within the least reserve would stop the run at its first step: refused here instead.
void check_time_limit(const io::Deck& deck) {
  const double limit = deck.get_seconds("run.time_limit");
  const double factor = deck.get_float("checkpoint.safety_factor");
  const double reserve = factor * 1.0;
  if (limit <= 0 || limit > reserve) return;
  auto number = [](double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", x);
    return std::string(text);
  };
  throw InputError(deck.where("run.time_limit") + ": key 'run.time_limit' = " + number(limit) +
                   " s is not longer than the stop reserve, " + number(reserve) + " s (checkpoint.safety_factor " +
                   number(factor) + " times the cost of a checkpoint, at least 1 s, plus two steps): the run would "
                   "stop at its first step; allowed: 0 (no limit) or more than " + number(reserve) + " s");
}

}  // namespace

std::shared_ptr<const DeckSchema> spotrun_deck_schema() {
  // Built on first use, and again after register_solver() added a solver.
  static std::shared_ptr<const DeckSchema> schema;
  static std::size_t solvers_in_schema = static_cast<std::size_t>(-1);
  if (solvers_in_schema != solvers::registered_solvers().size()) {
    auto s = std::make_shared<DeckSchema>();
    s->keys = build_schema();
    // A solver's keys apply as its registration says (by default: when run.solver names it).
    s->key_active = [](const io::Deck& deck, const std::string& key) {
      const solvers::SolverRegistration* solver = solvers::solver_of_key(key);
      return !solver || solver->key_active(deck, key);
    };
    s->check_rules = [](const io::Deck& deck) {
      check_time_limit(deck);
      check_stages(deck);
      solvers::solver_named(deck.get_string("run.solver"), deck.name()).check_rules(deck);
    };
    schema = std::move(s);
    solvers_in_schema = solvers::registered_solvers().size();
  }
  return schema;
}

std::int64_t stage_steps(const io::Deck& deck) {
  std::int64_t total = 0;
  for (std::size_t k = 0; k < deck.count("run.stage"); ++k)
    if (deck.has("run.stage." + std::to_string(k) + ".steps"))
      total += deck.get_int("run.stage." + std::to_string(k) + ".steps");
  return total;
}

void derive_run_steps(Deck& deck) {
  if (deck.count("run.stage") > 0 && !deck.has("run.steps"))
    deck.apply_set("run.steps=" + std::to_string(stage_steps(deck)));
}

const std::vector<KeySpec>& deck_schema() { return spotrun_deck_schema()->keys; }
const KeySpec* find_key(const std::string& key) { return spotrun_deck_schema()->find(key); }
std::string closest_key(const std::string& key) { return spotrun_deck_schema()->closest(key); }

}  // namespace spotrun::launcher
