#include "launcher/run/checkpointing.hpp"

#include "launcher/run/console.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>

#include "launcher/run/checkpoint_levels.hpp"
#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "io/run_directory.hpp"
#include "launcher/run/fence.hpp"  // --- fencing ---
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace fs = std::filesystem;

namespace spotrun::launcher {
namespace {

std::string format_seconds(double s) {
  return significant(s, 3) + " s";
}

}  // namespace

CheckpointSettings CheckpointSettings::from_deck(const Deck& d) {
  CheckpointSettings s;
  s.every_steps = d.get_int("checkpoint.every_steps");
  s.every_seconds = d.get_float("checkpoint.every_seconds");
  s.auto_interval = d.get_string("checkpoint.interval") == "auto";
  s.mtbf = d.get_float("checkpoint.mtbf");
  s.keep = static_cast<int>(d.get_int("checkpoint.keep"));
  s.abort_on_error = d.get_string("checkpoint.on_error") == "abort";
  s.safety_factor = d.get_float("checkpoint.safety_factor");
  s.local_dir = d.get_string("checkpoint.local_dir");
  s.partner = d.get_bool("checkpoint.partner");
  s.durable = io::durable_location(d.get_string("checkpoint.durable"));  // the deck's check allowed it
  s.durable_interval = d.get_float("checkpoint.durable_interval");
  s.durable_wait = d.get_float("checkpoint.durable_wait");
  s.background_nice = static_cast<int>(d.get_int("checkpoint.background_nice"));
  s.durable_nice = static_cast<int>(d.get_int("checkpoint.durable_nice"));
  s.async = d.get_bool("checkpoint.async");
  return s;
}

CheckpointManager::CheckpointManager(const comm::Communicator& comm, const std::string& outdir,
                                     CheckpointSettings settings, io::CheckpointMeta base)
    : m_comm(comm),
      m_outdir(outdir),
      m_dir((fs::path(outdir) / io::k_checkpoint_dir).string()),
      m_settings(settings),
      m_base(std::move(base)) {
  m_store = make_checkpoint_store(comm, outdir, m_settings);
  m_levels = m_store->levels();
}

CheckpointManager::~CheckpointManager() = default;

std::string CheckpointManager::checkpoint_path(std::int64_t step) const {
  return m_store->path(m_outdir, step);
}

std::string CheckpointManager::final_path() const {
  return m_store->final_path(m_outdir);
}

std::vector<CheckpointFile> CheckpointManager::candidates() const {
  std::string listing;
  if (m_comm.is_root()) {
    std::vector<CheckpointFile> files;
    for (const io::CheckpointName& c : io::list_checkpoints(m_outdir)) files.push_back({c.path(m_outdir), c.step});
    std::ostringstream out;
    for (const auto& f : files) out << f.step << ' ' << f.path << '\n';
    listing = out.str();
  }
  listing = m_comm.broadcast(listing);
  std::vector<CheckpointFile> files;
  std::istringstream in(listing);
  std::string line;
  while (std::getline(in, line)) {
    auto sp = line.find(' ');
    files.push_back({line.substr(sp + 1), std::stoll(line.substr(0, sp))});
  }
  // A final state competes by its step, when the file exists (root looks, every rank agrees). A damaged one
  // (step -1) is tried last, where the reader reports why it is skipped; it is verified once, when tried.
  const auto add_final = [&](const fs::path& path, auto step_of) {
    int exists = 0;
    if (m_comm.is_root()) {
      std::error_code ec;
      exists = fs::exists(path, ec) ? 1 : 0;
    }
    SPOTRUN_MPI_CHECK(MPI_Bcast(&exists, 1, MPI_INT, 0, m_comm.mpi()));
    if (!exists) return;
    std::int64_t step = -1;
    try {
      step = step_of(path.string());
    } catch (const InputError&) {
    }
    files.push_back({path.string(), step});
  };
  // final.h5 (a finished run, perhaps extended now): the step from its manifest alone.
  add_final(io::final_name(io::CheckpointKind::shared_file).path(m_outdir),
            [&](const std::string& p) { return io::peek_checkpoint(m_comm, p).step; });
  // final.levels: the final state of a run with checkpoint.local_dir, by the step in its index.
  add_final(io::final_name(io::CheckpointKind::level_set).path(m_outdir),
            [&](const std::string& p) { return io::read_level_index(m_comm, p).step; });
  // The sets of the durable tier, after the nodes' copies of the same step (a copy on the nodes is read first).
  for (const CheckpointFile& d : m_store->more_candidates()) files.push_back(d);
  std::stable_sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
  return files;
}

void CheckpointManager::start_durable_flush(double now) {
  io::DurableFlush& flush = *m_levels->durable();
  const io::LevelIndex& index = m_levels->last_index();
  // Rank 0's clock decides (the ranks' clocks differ).
  int due = m_settings.durable_interval <= 0 || now - m_last_durable_wall >= m_settings.durable_interval ? 1 : 0;
  SPOTRUN_MPI_CHECK(MPI_Bcast(&due, 1, MPI_INT, 0, m_comm.mpi()));
  if (!due) return;
  if (flush.busy()) {  // one flush at a time: this set stays local (and partner); the next one is tried
    const std::string why = "the flush of " + flush.flushing() + " is still running";
    m_events.push_back({index.step, "", {io::DurableState::skipped, why}});
    if (m_comm.is_root())
      std::printf("Durable flush of %s skipped: %s (the next checkpoint is flushed when it is done)\n", index.set.c_str(),
                  why.c_str());
    return;
  }
  flush.start(index);
  m_last_durable_wall = now;
  m_flushing_step = index.step;
  m_events.push_back({index.step, "", {io::DurableState::flushing, ""}});
}

std::vector<TierEvent> CheckpointManager::poll_tiers() {
  // checkpoint.async: the set written in the background, committed once every rank's write ended.
  if (m_levels && m_levels->in_flight())
    if (const auto outcome = m_levels->poll()) finish_background(*outcome);
  if (durable()) {
    const io::DurableFlush::Event e = m_levels->durable()->poll();
    if (e.step >= 0 && m_comm.is_root()) {
      const std::string where = io::durable_join(m_levels->durable_prefix(), m_levels->durable()->flushing() + ".levels");
      m_flushing_step = -1;
      if (e.outcome.state == io::DurableState::durable) {
        m_durable_step = e.step;
        std::printf("Durable checkpoint %s at step %lld\n", where.c_str(), static_cast<long long>(e.step));
      } else {
        std::fprintf(stderr, "WARNING: durable checkpoint %s at step %lld %s; the run goes on, its local and partner "
                             "copies are intact\n", where.c_str(), static_cast<long long>(e.step), e.outcome.text().c_str());
      }
      std::fflush(stdout);
      m_events.push_back({e.step, "", e.outcome});
    }
  }
  std::vector<TierEvent> out;
  out.swap(m_events);
  if (!m_comm.is_root()) out.clear();
  return out;
}

io::DurableOutcome CheckpointManager::flush_durable_now(double seconds) {
  if (!durable()) return {};
  const io::LevelIndex& index = m_levels->last_index();
  if (index.set.empty()) return {};
  io::DurableFlush& flush = *m_levels->durable();
  // The set written last: already durable; being flushed (then it goes on); or not (an older set's flush, if
  // any, gives way to it). Rank 0 knows; every rank acts on its word.
  enum class Plan : int { start, already_durable, in_progress };
  const Plan here = flush.flushing() != index.set ? Plan::start
                    : m_durable_step == index.step ? Plan::already_durable
                    : m_flushing_step == index.step ? Plan::in_progress
                                                    : Plan::start;
  int plan_code = static_cast<int>(here);
  SPOTRUN_MPI_CHECK(MPI_Bcast(&plan_code, 1, MPI_INT, 0, m_comm.mpi()));
  const Plan plan = static_cast<Plan>(plan_code);
  if (plan == Plan::already_durable) return {io::DurableState::durable, ""};
  if (plan == Plan::start) {
    flush.cancel();
    m_flushing_step = -1;
    flush.start(index);
    m_flushing_step = index.step;
    m_events.push_back({index.step, "", {io::DurableState::flushing, ""}});
  }
  if (m_comm.is_root()) {
    std::printf("Flushing %s to the durable tier (%s), waiting at most %.3g s\n", index.set.c_str(),
                m_levels->durable_prefix().c_str(), seconds);
    std::fflush(stdout);
  }
  const double t0 = MPI_Wtime();
  io::DurableFlush::Event e = flush.wait(seconds);
  if (!m_comm.is_root()) return {};
  m_flushing_step = -1;
  if (e.step < 0) e = {index.step, {io::DurableState::failed, "the flush did not end"}};
  const std::string where = io::durable_join(m_levels->durable_prefix(), index.set + ".levels");
  if (e.outcome.state == io::DurableState::durable) {
    m_durable_step = e.step;
    std::printf("Durable checkpoint %s at step %lld (%.3g s)\n", where.c_str(), static_cast<long long>(e.step),
                MPI_Wtime() - t0);
  } else {
    std::fprintf(stderr, "WARNING: checkpoint %s at step %lld did not reach the durable tier (%s, %.3g s); it is on the "
                         "nodes (local%s)\n", index.set.c_str(), static_cast<long long>(e.step), e.outcome.text().c_str(),
                 MPI_Wtime() - t0, m_settings.partner ? ", partner" : "");
  }
  std::fflush(stdout);
  m_events.push_back({e.step, "", e.outcome});
  return e.outcome;
}

std::string CheckpointManager::levels_json() const {
  if (!m_levels) return "";
  auto step = [](std::int64_t s) { return s >= 0 ? nlohmann::json(s) : nlohmann::json(nullptr); };
  nlohmann::json j;
  j["local"] = step(m_local_step);
  j["partner"] = step(m_settings.partner ? m_partner_step : -1);
  j["durable"] = step(m_durable_step);
  j["flushing"] = step(m_flushing_step);
  j["durable_location"] = durable() ? nlohmann::json(m_levels->durable_prefix()) : nlohmann::json(nullptr);
  return j.dump();
}

std::string CheckpointManager::archive_previous_run() const {
  std::string dest, error;
  if (m_comm.is_root()) {
    std::error_code ec;
    const fs::path out(m_outdir);
    std::vector<fs::path> items;
    const std::string final_h5 = io::final_name(io::CheckpointKind::shared_file).file_name();
    const std::string final_levels = io::final_name(io::CheckpointKind::level_set).file_name();
    for (const std::string& name :
         {std::string(io::k_checkpoint_dir), final_h5, final_levels, std::string("thermo.csv"), std::string(io::k_ledger_file),
          std::string("report.json"), std::string("trajectory.h5"), std::string(io::k_progress_file),
          std::string("spotrun.log"), std::string("trajectory.h5md"), std::string("dump.lammpstrj"), std::string("topology.data")})
      if (fs::exists(out / name, ec)) items.push_back(out / name);
    const bool has_state = fs::exists(out / io::k_checkpoint_dir, ec) || !io::list_finals(m_outdir).empty();
    if (has_state) {
      char stamp[32];
      std::time_t t = std::time(nullptr);
      std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&t));
      fs::path d = out / (std::string("previous-") + stamp);
      for (int k = 1; fs::exists(d, ec); ++k) d = out / (std::string("previous-") + stamp + "-" + std::to_string(k));
      fs::create_directories(d, ec);
      if (ec) error = "cannot create " + d.string() + ": " + ec.message();
      for (const auto& p : items) {
        if (!error.empty()) break;
        fs::rename(p, d / p.filename(), ec);
        if (ec) error = "cannot move " + p.string() + " to " + d.string() + ": " + ec.message();
      }
      dest = d.string();
    }
  }
  // The earlier run's durable sets too, else a later resume could pick one of them.
  if (error.empty() && durable() && m_comm.is_root()) {
    const std::string prefix = m_levels->durable_prefix();
    const io::RcloneResult l = io::run_rclone(m_settings.rclone, {"lsf", prefix});
    if (l.exit_code == 0 && !l.output.empty()) {
      char stamp[32];
      std::time_t t = std::time(nullptr);
      std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&t));
      const std::string to = prefix + "-previous-" + stamp;
      const io::RcloneResult m = io::run_rclone(m_settings.rclone, {"move", prefix, to});
      if (m.exit_code != 0)
        error = "cannot move the earlier run's durable checkpoints from " + prefix + " to " + to + ": " + m.brief() +
                "; remove them (rclone purge " + prefix + ") or use another output directory";
      else
        std::printf("Starting fresh: the earlier run's durable checkpoints moved to %s\n", to.c_str());
    }
  }
  m_comm.agree<InputError>(error.empty(), error);
  return m_comm.broadcast(dest);
}

void CheckpointManager::remove_stale_temporaries() const {
  if (!m_comm.is_root()) return;
  std::error_code ec;
  for (const auto& dir : {fs::path(m_dir), fs::path(m_outdir)}) {
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 7 && name.substr(name.size() - 7) == ".h5.tmp") {
        std::printf("Removing incomplete checkpoint %s (left by an interrupted write)\n", e.path().c_str());
        fs::remove(e.path(), ec);
      }
    }
  }
}

double CheckpointManager::interval_seconds() const {
  if (m_settings.auto_interval && m_last_cost > 0) return std::sqrt(2.0 * m_last_cost * m_settings.mtbf);
  return m_settings.every_seconds;
}

double CheckpointManager::reserve_seconds(double state_bytes) const {
  // Before the first checkpoint, assume a pessimistic 50 MB/s and at least one second.
  const double cost = m_last_cost > 0 ? m_last_cost : std::max(1.0, state_bytes / 50e6);
  return m_settings.safety_factor * cost;
}

io::SolverState CheckpointManager::checked_state(Solver& solver, const std::string& path) {
  io::SolverState state = solver.state_reusing(std::move(m_spare));
  // Never a checkpoint of a state that went non-finite: a resume would continue from garbage.
  std::string bad;
  for (const auto& a : state.arrays) {
    for (std::size_t k = 0; k < a.f64.size() && bad.empty(); ++k)
      if (!std::isfinite(a.f64[k]))
        bad = "'" + a.name + "' holds a non-finite value (row " + std::to_string(a.first_row + k / std::max<std::uint64_t>(1, a.row_size())) + ")";
    if (!bad.empty()) break;
  }
  for (const auto& [name, v] : state.reals)
    if (bad.empty() && !std::isfinite(v)) bad = "scalar '" + name + "' is not finite";
  m_comm.agree<RunError>(bad.empty(), "the state at step " + std::to_string(solver.step_index()) + " is not finite: " + bad +
                                          "; " + solver.instability_hint() + ". No checkpoint was written from it (" +
                                          path + "); earlier checkpoints are intact.");
  return state;
}

double CheckpointManager::write_file(Solver& solver, const std::string& path) {
  const double t0 = MPI_Wtime();
  io::SolverState state = checked_state(solver, path);
  io::CheckpointMeta meta = m_base;
  meta.step = solver.step_index();
  meta.time = solver.time();
  meta.nranks = m_comm.size();
  if (m_comm.is_root()) check_attempt_fence(path.c_str());  // --- fencing (launcher/run/fence.hpp): exit 77 when fenced ---
  m_last_levels = m_store->write(meta, state, path);  // the store's kind: one file, or node files and an index
  m_spare = std::move(state);
  return m_comm.max(MPI_Wtime() - t0);
}

// --- checkpoint.async: the loop takes a snapshot (a host copy of the state, its metadata) and goes on; the node
// files, partner copies and the index are written by CheckpointLevels' background writer ---
double CheckpointManager::start_background(Solver& solver, double now, const char* reason, const std::string& path) {
  const double t0 = MPI_Wtime();
  io::SolverState state = checked_state(solver, path);
  io::CheckpointMeta meta = m_base;
  meta.step = solver.step_index();
  meta.time = solver.time();
  meta.nranks = m_comm.size();
  if (m_comm.is_root()) check_attempt_fence(path.c_str());  // --- fencing (launcher/run/fence.hpp): exit 77 when fenced ---
  const std::string name = fs::path(path).filename().string();
  m_levels->start(meta, std::move(state), name.substr(0, name.rfind('.')), path);
  m_in_flight = {reason, now, 0};
  const double blocked = m_comm.max(MPI_Wtime() - t0);
  m_in_flight.blocked = blocked;
  return blocked;
}

void CheckpointManager::wait_background(const char* why) {
  if (!m_levels || !m_levels->in_flight()) return;
  const double t0 = MPI_Wtime();
  const auto outcome = m_levels->wait();
  const double waited = m_comm.max(MPI_Wtime() - t0);
  m_total_seconds += waited;
  m_in_flight.blocked += waited;
  if (m_comm.is_root()) {
    std::printf("Waited %.3g s for checkpoint %s (step %lld, written in the background): %s\n", waited,
                outcome->index_path.c_str(), static_cast<long long>(outcome->step), why);
    std::fflush(stdout);
  }
  finish_background(*outcome);
}

void CheckpointManager::finish_background(const CheckpointLevelsOutcome& o) {
  m_spare = m_levels->take_spent();  // written or not, its memory serves the next snapshot
  if (!o.error.empty()) {
    ++m_failed;
    if (m_settings.abort_on_error)
      throw RunError("checkpoint at step " + std::to_string(o.step) + " failed (written in the background): " + o.error +
                     " (checkpoint.on_error = \"abort\")");
    if (m_comm.is_root())
      std::fprintf(stderr, "WARNING: checkpoint at step %lld failed (written in the background): %s; previous checkpoints "
                           "are intact, retrying at the next interval\n", static_cast<long long>(o.step), o.error.c_str());
    return;
  }
  m_last_levels = "local " + format_seconds(o.times.local) +
                  (m_levels->partner() ? ", partner " + format_seconds(o.times.partner) : "") +
                  "; in the background over " + format_seconds(o.seconds) + ", the loop blocked " +
                  format_seconds(m_in_flight.blocked);
  // Its cost (the interval rule, the time-limit reserve): the write's time with a CPU of its own, as at a stop,
  // not the time it took at low priority beside the loop.
  committed(o.step, o.index_path, m_in_flight.reason.c_str(), m_in_flight.now, o.cost, false);
}

void CheckpointManager::committed(std::int64_t step, const std::string& path, const char* reason, double now, double cost,
                                  bool last) {
  ++m_written;
  m_last_cost = cost;
  m_last_step = step;
  if (m_levels) {  // --- levels: where the set is; the durable tier in the background ---
    m_local_step = m_last_step;
    if (m_settings.partner) m_partner_step = m_last_step;
    m_events.push_back({m_last_step, m_settings.partner ? "local+partner" : "local", {}});
    if (durable() && !last) start_durable_flush(now);
  }
  if (m_comm.is_root()) {
    std::printf("Checkpoint %s at step %lld (%s): %.3g s%s\n", path.c_str(), static_cast<long long>(step), reason, cost,
                m_levels ? (" (" + m_last_levels + ")").c_str() : "");
    std::fflush(stdout);
  }
  apply_keep_policy();
}

bool CheckpointManager::write(Solver& solver, double now, const char* reason, bool last) {
  // One set in flight at a time: the one before is waited for (and committed) first.
  wait_background(last ? "the run stops, its stop checkpoint follows"
                       : "the next checkpoint is due (one set is written in the background at a time)");
  const bool background = m_levels && m_levels->background() && !last;
  std::string path = checkpoint_path(solver.step_index());
  std::string error;
  if (m_comm.is_root()) {
    std::error_code ec;
    fs::create_directories(m_dir, ec);
    if (ec) error = "cannot create checkpoint directory '" + m_dir + "': " + ec.message();
  }
  error = m_comm.broadcast(error);
  double cost = 0;
  if (error.empty()) {
    try {
      cost = background ? start_background(solver, now, reason, path) : write_file(solver, path);
    } catch (const RunError&) {
      throw;  // a non-finite state ends the run whatever on_error says
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!error.empty()) {
    ++m_failed;
    m_last_wall = now;  // retry at the next interval, not at every step
    if (m_settings.abort_on_error) throw RunError("checkpoint at step " + std::to_string(solver.step_index()) +
                                                  " failed: " + error + " (checkpoint.on_error = \"abort\")");
    if (m_comm.is_root())
      std::fprintf(stderr, "WARNING: checkpoint at step %lld failed: %s; previous checkpoints are intact%s\n",
                   static_cast<long long>(solver.step_index()), error.c_str(),
                   last ? "" : ", retrying at the next interval");
    return false;
  }
  m_total_seconds += cost;
  m_last_wall = now;
  if (background) {
    if (m_comm.is_root()) {
      std::printf("Snapshot for checkpoint %s at step %lld (%s): %.3g s; written in the background\n", path.c_str(),
                  static_cast<long long>(solver.step_index()), reason, cost);
      std::fflush(stdout);
    }
    return true;
  }
  committed(solver.step_index(), path, reason, now, cost, last);
  return true;
}

void CheckpointManager::write_final(Solver& solver) {
  wait_background("the run ends, its final state follows");
  const std::string path = final_path();
  const double cost = write_file(solver, path);
  m_total_seconds += cost;
  if (m_levels) {
    m_local_step = solver.step_index();
    if (m_settings.partner) m_partner_step = m_local_step;
    m_events.push_back({m_local_step, m_settings.partner ? "local+partner" : "local", {}});
  }
  if (m_comm.is_root()) {  // a summary line on the terminal (console.hpp); other checkpoint lines are log lines
    char line[4200];
    std::snprintf(line, sizeof line, "Final state %s at step %lld: %.3g s", path.c_str(),
                  static_cast<long long>(solver.step_index()), cost);
    say(Show::normal, line);
  }
}

void CheckpointManager::apply_keep_policy() const {
  std::string kept;
  apply_keep_policy_here(kept);
  // What else belongs to the sets no longer kept goes too (a level set's node files, on every node).
  std::vector<std::string> sets{io::final_name(kind()).set()};
  // The node files a durable flush in progress reads stay.
  if (m_comm.is_root() && m_flushing_step >= 0 && durable()) kept += m_levels->durable()->flushing() + "\n";
  std::istringstream in(m_comm.broadcast(kept));
  for (std::string name; std::getline(in, name);) sets.push_back(name);
  m_store->prune(sets);
}

void CheckpointManager::apply_keep_policy_here(std::string& kept) const {
  if (!m_comm.is_root()) return;
  std::vector<std::pair<long long, fs::path>> files;
  std::error_code ec;
  for (const io::CheckpointName& c : io::list_checkpoints(m_outdir)) files.push_back({c.step, c.path(m_outdir)});
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = static_cast<std::size_t>(m_settings.keep); k < files.size(); ++k) fs::remove(files[k].second, ec);
  for (std::size_t k = 0; k < files.size() && k < static_cast<std::size_t>(m_settings.keep); ++k)
    kept += files[k].second.stem().string() + "\n";
}

std::string physics_changes(const std::string& before, const std::string& now) {
  auto parse = [](const std::string& text) {
    std::map<std::string, std::string> m;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      auto eq = line.find(" = ");
      if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 3);
    }
    return m;
  };
  auto a = parse(before), b = parse(now);
  std::ostringstream out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end())
      out << "\n  " << k << ": " << v << " -> (not set)";
    else if (it->second != v)
      out << "\n  " << k << ": " << v << " -> " << it->second;
  }
  for (const auto& [k, v] : b)
    if (!a.count(k)) out << "\n  " << k << ": (not set) -> " << v;
  return out.str();
}

}  // namespace spotrun::launcher
