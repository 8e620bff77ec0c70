#include "model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "comm/number_text.hpp"

namespace spotrun::report {

using nlohmann::json;

std::string iso_utc(double unix_seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char buf[64];
  const int ms = std::min(999, static_cast<int>((unix_seconds - static_cast<double>(whole)) * 1000.0));
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

json to_json(const Attempt& a) {
  json j;
  j["attempt"] = a.number;
  j["state"] = a.state;
  j["start_unix"] = a.start_unix;
  j["end_unix"] = a.end_unix;
  j["start"] = iso_utc(a.start_unix);
  j["end"] = iso_utc(a.end_unix);
  j["hosts"] = a.hosts;
  j["ranks"] = a.ranks;
  if (a.gpus > 0) j["gpus"] = a.gpus;
  j["exit_code"] = a.exit_code;
  j["exit_cause"] = a.exit_cause;
  if (!a.launch_attempt.empty()) j["launch_attempt"] = a.launch_attempt;
  if (!a.ended_by.empty()) j["ended_by"] = a.ended_by;
  j["resumed_from"] = a.resumed_from;
  j["start_step"] = a.start_step;
  j["end_step"] = a.end_step;
  j["seconds"] = {{"wall", a.parts.wall},         {"setup", a.parts.setup},
                  {"compute", a.parts.compute},   {"communication", a.parts.communication},
                  {"checkpoint", a.parts.checkpoint}, {"idle", a.parts.idle}};
  j["loop_steps_seconds"] = a.loop_steps_seconds;
  json cps = json::array();
  for (const auto& c : a.checkpoints) {
    json cp = {{"step", c.step}, {"at", c.at}, {"seconds", c.seconds}, {"reason", c.reason}, {"ok", c.ok}};
    if (!c.levels.empty()) cp["levels"] = c.levels;
    if (!c.durable.empty()) cp["durable"] = c.durable;
    cps.push_back(cp);
  }
  j["checkpoints"] = cps;
  j["cpu_seconds"] = a.cpu_seconds;
  j["wall_seconds_per_rank"] = a.wall_per_rank;
  if (!a.gpu.empty()) {
    json g = json::array();
    for (const auto& r : a.gpu)
      g.push_back({{"rank", r.rank},
                   {"host", r.host},
                   {"uuid", r.uuid},
                   {"samples", r.samples},
                   {"util_mean_percent", r.util_mean},
                   {"util_min_percent", r.util_min},
                   {"memory_max_bytes", r.memory_max_bytes},
                   {"power_mean_watts", r.power_mean_watts},
                   {"sm_clock_mean_mhz", r.sm_clock_mean_mhz}});
    j["gpu"] = g;
  }
  j["settings"] = {{"price_per_gpu_hour", a.price_per_gpu_hour},
                   {"on_demand_price_per_gpu_hour", a.on_demand_price_per_gpu_hour},
                   {"min_gpu_utilisation", a.min_gpu_utilisation},
                   {"checkpoint_every_steps", a.every_steps},
                   {"checkpoint_every_seconds", a.every_seconds},
                   {"checkpoint_interval", a.auto_interval ? "auto" : "fixed"},
                   {"checkpoint_mtbf", a.mtbf}};
  return j;
}

Attempt attempt_from_json(const json& j) {
  Attempt a;
  a.number = j.at("attempt").get<int>();
  a.state = j.at("state").get<std::string>();
  a.start_unix = j.at("start_unix").get<double>();
  a.end_unix = j.at("end_unix").get<double>();
  a.hosts = j.at("hosts").get<std::vector<std::string>>();
  a.ranks = j.at("ranks").get<int>();
  a.gpus = j.value("gpus", 0);
  a.exit_code = j.at("exit_code").get<int>();
  a.exit_cause = j.at("exit_cause").get<std::string>();
  a.launch_attempt = j.value("launch_attempt", std::string());
  a.ended_by = j.value("ended_by", std::string());
  a.resumed_from = j.at("resumed_from").get<std::string>();
  a.start_step = j.at("start_step").get<std::int64_t>();
  a.end_step = j.at("end_step").get<std::int64_t>();
  const json& s = j.at("seconds");
  a.parts = {s.at("wall").get<double>(),          s.at("setup").get<double>(),
             s.at("compute").get<double>(),       s.at("communication").get<double>(),
             s.at("checkpoint").get<double>(),    s.at("idle").get<double>()};
  a.loop_steps_seconds = j.at("loop_steps_seconds").get<double>();
  for (const auto& c : j.at("checkpoints"))
    a.checkpoints.push_back({c.at("step").get<std::int64_t>(), c.at("at").get<double>(), c.at("seconds").get<double>(),
                             c.at("reason").get<std::string>(), c.at("ok").get<bool>(), c.value("levels", std::string()),
                             c.value("durable", std::string())});
  a.cpu_seconds = j.at("cpu_seconds").get<std::vector<double>>();
  if (j.contains("wall_seconds_per_rank")) a.wall_per_rank = j.at("wall_seconds_per_rank").get<std::vector<double>>();
  if (j.contains("gpu"))
    for (const auto& g : j.at("gpu"))
      a.gpu.push_back({g.at("rank").get<int>(), g.at("host").get<std::string>(), g.at("uuid").get<std::string>(),
                       g.at("samples").get<int>(), g.at("util_mean_percent").get<double>(),
                       g.at("util_min_percent").get<double>(), g.at("memory_max_bytes").get<double>(),
                       g.at("power_mean_watts").get<double>(), g.at("sm_clock_mean_mhz").get<double>()});
  const json& st = j.at("settings");
  a.price_per_gpu_hour = st.at("price_per_gpu_hour").get<double>();
  a.on_demand_price_per_gpu_hour = st.at("on_demand_price_per_gpu_hour").get<double>();
  a.min_gpu_utilisation = st.at("min_gpu_utilisation").get<double>();
  a.every_steps = st.at("checkpoint_every_steps").get<std::int64_t>();
  a.every_seconds = st.at("checkpoint_every_seconds").get<double>();
  a.auto_interval = st.at("checkpoint_interval").get<std::string>() == "auto";
  a.mtbf = st.at("checkpoint_mtbf").get<double>();
  return a;
}

std::vector<Attempt> parse_ledger(const std::string& text, const std::string& name, std::vector<std::string>& warnings) {
  std::vector<Attempt> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(attempt_from_json(json::parse(line)));
    } catch (const std::exception& e) {
      warnings.push_back(name + ":" + std::to_string(n) + ": skipped, not an attempt record (" + e.what() + ")");
    }
  }
  // Lines skipped in the middle leave gaps: number the attempts kept again, in order.
  for (std::size_t k = 0; k < out.size(); ++k) out[k].number = static_cast<int>(k) + 1;
  return out;
}

std::string ledger_text(const std::vector<Attempt>& attempts) {
  std::string text;
  for (const auto& a : attempts) text += to_json(a).dump() + "\n";
  return text;
}

std::vector<std::int64_t> steps_redone(const std::vector<Attempt>& attempts) {
  std::vector<std::int64_t> redone;
  std::int64_t reached = std::numeric_limits<std::int64_t>::min();
  for (const auto& a : attempts) {
    redone.push_back(std::max<std::int64_t>(0, std::min(a.end_step, reached) - a.start_step));
    reached = std::max(reached, a.end_step);
  }
  return redone;
}

double daly_interval(double cost, double mtbi) {
  if (!(cost > 0) || !(mtbi > 0)) return 0;
  if (cost >= 2 * mtbi) return mtbi;
  const double r = cost / (2 * mtbi);
  return std::sqrt(2 * cost * mtbi) * (1 + std::sqrt(r) / 3 + r / 9) - cost;
}

double expected_waste(double interval, double cost, double mtbi) {
  if (!(interval > 0) || !(mtbi > 0)) return 0;
  return cost / interval + (interval + cost) / (2 * mtbi);
}

double expected_run_loss(double interval, double cost, double mtbi, double run_wall) {
  if (!(run_wall > 0) || !(mtbi > 0)) return 0;
  const double t = std::min(interval, run_wall);
  const double writes = std::isfinite(interval) && interval > 0 ? std::floor(run_wall / interval) : 0;
  return writes * cost + run_wall / mtbi * (t + cost) / 2;
}

namespace {

bool interrupted(const Attempt& a) { return a.exit_code == 75 || a.state == "lost"; }

}  // namespace

namespace {

// The checkpoint advice (Young/Daly) of a run from the measured cost and the interruptions seen: wall its
// wall time, mean_step its mean seconds a step, last its last attempt (nullptr: none).
json checkpoint_advice(const std::vector<Attempt>& attempts, double wall, double mean_step, const Attempt* last) {
  json adv;
  double cost_sum = 0;
  int cost_n = 0;
  for (const auto& a : attempts)
    for (const auto& c : a.checkpoints)
      if (c.ok && c.seconds > 0) {
        cost_sum += c.seconds;
        ++cost_n;
      }
  int interruptions = 0;
  for (const auto& a : attempts) interruptions += interrupted(a) ? 1 : 0;
  if (cost_n == 0 || !last) {
    adv["advice"] = "no checkpoint written yet: no measured cost";
  } else {
    const double c = cost_sum / cost_n;
    const bool seen = interruptions > 0;
    const double m = seen ? wall / interruptions : last->mtbf;
    const double opt = daly_interval(c, m);
    adv["checkpoint_cost_seconds"] = c;
    adv["checkpoints_measured"] = cost_n;
    adv["interruptions"] = interruptions;
    adv["mtbi_seconds"] = m;
    adv["mtbi_source"] = seen ? "observed: wall time / interruptions" : "checkpoint.mtbf (no interruption seen yet)";
    adv["optimal_interval_seconds"] = opt;
    adv["young_interval_seconds"] = std::sqrt(2 * c * m);
    adv["expected_waste_percent_at_optimum"] = 100 * expected_waste(opt, c, m);
    double setting = std::numeric_limits<double>::infinity();
    std::string how;
    if (last->auto_interval && last->mtbf > 0) {
      setting = std::sqrt(2 * c * last->mtbf);
      how = "checkpoint.interval = \"auto\" with checkpoint.mtbf = " + significant(last->mtbf, 6) + " s";
    } else if (last->every_seconds > 0) {
      setting = last->every_seconds;
      how = "checkpoint.every_seconds = " + significant(last->every_seconds, 6);
    }
    if (last->every_steps > 0 && mean_step > 0 && last->every_steps * mean_step < setting) {
      setting = static_cast<double>(last->every_steps) * mean_step;
      how = "checkpoint.every_steps = " + std::to_string(last->every_steps) + " at " + significant(mean_step, 4) + " s a step";
    }
    // Whether following the advice would change this run's expected loss by a noticeable share of it.
    const double saved = expected_run_loss(setting, c, m, wall) - expected_run_loss(opt, c, m, wall);
    const double saved_share = wall > 0 ? saved / wall : 0;
    adv["run_wall_seconds"] = wall;
    adv["expected_loss_seconds_at_setting"] = expected_run_loss(setting, c, m, wall);
    adv["expected_loss_seconds_at_optimum"] = expected_run_loss(opt, c, m, wall);
    const bool noticeable = saved_share >= k_advice_noticeable_share;
    const std::string not_worth = "following the optimum would save " + significant(100 * saved_share, 2) +
                                  " % of this run's " + significant(wall, 4) + " s (under " +
                                  significant(100 * k_advice_noticeable_share, 2) + " %): no change needed";
    if (std::isfinite(setting)) {
      const double ratio = opt > 0 ? setting / opt : 0;
      adv["setting_interval_seconds"] = setting;
      adv["setting"] = how;
      adv["setting_over_optimal"] = ratio;
      adv["expected_waste_percent_at_setting"] = 100 * expected_waste(setting, c, m);
      const bool near = ratio > 0.8 && ratio < 1.25;
      adv["advice_changes_setting"] = !near && noticeable;
      adv["advice"] = near ? "the setting is within 25 % of the optimum"
                      : !noticeable ? not_worth
                      : std::string(ratio < 1 ? "checkpoints too often" : "checkpoints too rarely") +
                            ": set checkpoint.every_seconds = " + significant(opt, 3) + " (and checkpoint.every_steps = 0)";
    } else {
      adv["setting"] = "no periodic checkpoint";
      adv["advice_changes_setting"] = noticeable;
      adv["advice"] = noticeable ? "no periodic checkpoint: set checkpoint.every_seconds = " + significant(opt, 3)
                                 : "no periodic checkpoint; " + not_worth;
    }
  }
  return adv;
}

}  // namespace

json derive(const std::vector<Attempt>& attempts, const std::vector<CheckpointFileInfo>& files, const std::string& outdir) {
  json r;
  r["output_dir"] = outdir;
  r["generated"] = iso_utc(static_cast<double>(std::time(nullptr)));
  r["ledger"] = k_ledger_name;
  json warnings = json::array();
  const auto redone = steps_redone(attempts);
  json arr = json::array();
  double wall = 0, rank_hours = 0, gpu_hours = 0, ckpt = 0, redone_s = 0, redone_gpu_h = 0, overhead_gpu_h = 0;
  double util_sum = 0, util_n = 0, util_min = std::numeric_limits<double>::infinity();
  std::int64_t done = 0, redone_total = 0, final_step = 0;
  bool any_gpu = false;
  double step_s_sum = 0;
  std::int64_t step_n = 0;
  for (const auto& a : attempts)
    if (a.end_step > a.start_step && a.loop_steps_seconds > 0) {
      step_s_sum += a.loop_steps_seconds;
      step_n += a.end_step - a.start_step;
    }
  const double mean_step = step_n > 0 ? step_s_sum / static_cast<double>(step_n) : 0;
  for (std::size_t k = 0; k < attempts.size(); ++k) {
    const Attempt& a = attempts[k];
    json j = to_json(a);
    const std::int64_t steps = std::max<std::int64_t>(0, a.end_step - a.start_step);
    const double step_s = steps > 0 && a.loop_steps_seconds > 0 ? a.loop_steps_seconds / static_cast<double>(steps) : mean_step;
    j["steps_done"] = steps;
    j["steps_redone"] = redone[k];
    j["redone_seconds"] = static_cast<double>(redone[k]) * step_s;
    j["rank_hours"] = a.parts.wall * a.ranks / 3600.0;
    if (a.parts.wall > 0 && !a.cpu_seconds.empty()) {
      json cpu = json::array();
      // Each rank's CPU time over its own wall time (the mean when an older ledger has no per-rank walls).
      for (std::size_t r = 0; r < a.cpu_seconds.size(); ++r) {
        const double w = r < a.wall_per_rank.size() && a.wall_per_rank[r] > 0 ? a.wall_per_rank[r] : a.parts.wall;
        cpu.push_back(100 * a.cpu_seconds[r] / w);
      }
      j["cpu_utilisation_percent"] = cpu;
    }
    if (a.gpus > 0) {
      any_gpu = true;
      j["gpu_hours"] = a.parts.wall * a.gpus / 3600.0;
      gpu_hours += a.parts.wall * a.gpus / 3600.0;
      redone_gpu_h += static_cast<double>(redone[k]) * step_s * a.gpus / 3600.0;
      overhead_gpu_h += (static_cast<double>(redone[k]) * step_s + a.parts.checkpoint + (k > 0 ? a.parts.setup : 0)) *
                        a.gpus / 3600.0;
    }
    for (const auto& g : a.gpu) {
      if (g.samples <= 0) continue;
      util_sum += g.util_mean * g.samples;
      util_n += g.samples;
      util_min = std::min(util_min, g.util_min);
      if (g.util_mean < a.min_gpu_utilisation)
        warnings.push_back("attempt " + std::to_string(a.number) + ", rank " + std::to_string(g.rank) + " (" + g.host +
                           "): mean GPU utilisation " + fixed(g.util_mean, 1) + " % is below report.min_gpu_utilisation = " +
                           significant(a.min_gpu_utilisation, 6) + " %");
    }
    if (a.state == "lost")
      warnings.push_back("attempt " + std::to_string(a.number) +
                         " ended without a record (killed, or its node went away): its figures stop at its last "
                         "update or heartbeat, the steps after its last checkpoint or heartbeat are not counted");
    wall += a.parts.wall;
    rank_hours += a.parts.wall * a.ranks / 3600.0;
    ckpt += a.parts.checkpoint;
    redone_s += static_cast<double>(redone[k]) * step_s;
    done += steps;
    redone_total += redone[k];
    final_step = std::max(final_step, a.end_step);
    arr.push_back(j);
  }
  r["attempts"] = arr;
  json t;
  t["attempts"] = attempts.size();
  t["wall_seconds"] = wall;
  t["elapsed_seconds"] = attempts.empty() ? 0.0 : attempts.back().end_unix - attempts.front().start_unix;
  t["rank_hours"] = rank_hours;
  t["steps_done"] = done;
  t["steps_redone"] = redone_total;
  t["final_step"] = final_step;
  t["redone_seconds"] = redone_s;
  t["checkpoint_seconds"] = ckpt;
  t["checkpoint_percent"] = wall > 0 ? 100 * ckpt / wall : 0.0;
  const Attempt* last = attempts.empty() ? nullptr : &attempts.back();
  if (any_gpu) {
    t["gpu_hours"] = gpu_hours;
    t["redone_gpu_hours"] = redone_gpu_h;
    if (util_n > 0) {
      t["gpu_util_mean_percent"] = util_sum / util_n;
      t["gpu_util_min_percent"] = util_min;
    }
    if (last && last->price_per_gpu_hour > 0) {
      const double cost = gpu_hours * last->price_per_gpu_hour;
      t["price_per_gpu_hour"] = last->price_per_gpu_hour;
      t["cost"] = cost;
      if (last->on_demand_price_per_gpu_hour > 0) {
        // On demand, the same work without preemptions: no redone steps, no checkpoints, no restarts.
        const double useful = std::max(0.0, gpu_hours - overhead_gpu_h);
        const double on_demand = useful * last->on_demand_price_per_gpu_hour;
        t["on_demand_price_per_gpu_hour"] = last->on_demand_price_per_gpu_hour;
        t["overhead_gpu_hours"] = overhead_gpu_h;
        t["on_demand_cost"] = on_demand;
        t["spot_saving"] = on_demand - cost;
        t["spot_saving_percent"] = on_demand > 0 ? 100 * (on_demand - cost) / on_demand : 0.0;
      }
    }
  }
  r["totals"] = t;

  r["checkpoint_advice"] = checkpoint_advice(attempts, wall, mean_step, last);
  json fl = json::array();
  for (const auto& f : files) fl.push_back({{"file", f.name}, {"step", f.step}});
  r["checkpoint_files"] = fl;
  r["warnings"] = warnings;
  return r;
}

std::string summary_text(const json& r) {
  std::ostringstream o;
  const json& t = r.at("totals");
  o << "Run report of " << r.at("output_dir").get<std::string>() << " (" << t.at("attempts").get<int>()
    << " attempt(s); " << k_report_name << ", docs/report.md):\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-3s %-24s %5s %4s %-20s %15s %6s %9s %8s %8s %8s %8s %8s\n", "#", "start (UTC)",
                "ranks", "GPUs", "exit", "steps", "redone", "wall s", "setup", "compute", "comm", "ckpt", "idle");
  o << line;
  for (const auto& a : r.at("attempts")) {
    const json& s = a.at("seconds");
    const std::string steps = std::to_string(a.at("start_step").get<long long>()) + "->" +
                              std::to_string(a.at("end_step").get<long long>());
    std::string cause = a.at("exit_cause").get<std::string>();
    // spotrun launch's verdict, where it gave one, says more than the run's own ("lost", "signal SIGUSR1").
    if (a.contains("ended_by") && a["ended_by"].is_string()) cause = a["ended_by"].get<std::string>();
    if (cause.size() > 20) cause = cause.substr(0, 20);
    std::snprintf(line, sizeof line, "  %-3d %-24s %5d %4d %-20s %15s %6lld %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n",
                  a.at("attempt").get<int>(), a.at("start").get<std::string>().c_str(), a.at("ranks").get<int>(),
                  a.value("gpus", 0), cause.c_str(), steps.c_str(), a.at("steps_redone").get<long long>(),
                  s.at("wall").get<double>(), s.at("setup").get<double>(), s.at("compute").get<double>(),
                  s.at("communication").get<double>(), s.at("checkpoint").get<double>(), s.at("idle").get<double>());
    o << line;
  }
  std::snprintf(line, sizeof line,
                "  Totals: wall %.4g s (%.4g s elapsed), %.4g rank-hours; %lld steps done, %lld redone after resumes "
                "(%.3g s); checkpoints %.3g s (%.2g %%)\n",
                t.at("wall_seconds").get<double>(), t.at("elapsed_seconds").get<double>(), t.at("rank_hours").get<double>(),
                t.at("steps_done").get<long long>(), t.at("steps_redone").get<long long>(),
                t.at("redone_seconds").get<double>(), t.at("checkpoint_seconds").get<double>(),
                t.at("checkpoint_percent").get<double>());
  o << line;
  if (t.contains("gpu_hours")) {
    o << "  GPU-hours: " << significant(t.at("gpu_hours").get<double>(), 4);
    if (t.contains("gpu_util_mean_percent"))
      o << ", GPU utilisation mean " << fixed(t.at("gpu_util_mean_percent").get<double>(), 1) << " %, min "
        << fixed(t.at("gpu_util_min_percent").get<double>(), 1) << " %";
    o << "\n";
    if (t.contains("cost")) o << "  Cost: " << fixed(t.at("cost").get<double>(), 2) << " at "
                              << significant(t.at("price_per_gpu_hour").get<double>(), 6) << " per GPU-hour\n";
    if (t.contains("spot_saving"))
      o << "  Spot saving: " << fixed(t.at("spot_saving").get<double>(), 2) << " ("
        << fixed(t.at("spot_saving_percent").get<double>(), 1) << " %) against "
        << fixed(t.at("on_demand_cost").get<double>(), 2) << " on demand, net of "
        << significant(t.at("overhead_gpu_hours").get<double>(), 4) << " GPU-hours of redone work, checkpoints and restarts\n";
  } else {
    o << "  GPUs: none (no GPU-hours or cost)\n";
  }
  const json& adv = r.at("checkpoint_advice");
  if (adv.contains("optimal_interval_seconds")) {
    o << "  Checkpoint advice: cost " << significant(adv.at("checkpoint_cost_seconds").get<double>(), 4) << " s, "
      << adv.at("interruptions").get<int>() << " interruption(s), MTBI " << significant(adv.at("mtbi_seconds").get<double>(), 4)
      << " s (" << adv.at("mtbi_source").get<std::string>() << "): Young/Daly interval "
      << significant(adv.at("optimal_interval_seconds").get<double>(), 4) << " s";
    if (adv.contains("setting_interval_seconds"))
      o << "; this run's " << significant(adv.at("setting_interval_seconds").get<double>(), 4) << " s ("
        << adv.at("setting").get<std::string>() << ") is " << significant(adv.at("setting_over_optimal").get<double>(), 3)
        << " x the optimum (expected loss " << significant(adv.at("expected_waste_percent_at_setting").get<double>(), 3)
        << " % vs " << significant(adv.at("expected_waste_percent_at_optimum").get<double>(), 3) << " %)";
    o << "; " << adv.at("advice").get<std::string>() << "\n";
  } else {
    o << "  Checkpoint advice: " << adv.at("advice").get<std::string>() << "\n";
  }
  // The latest attempt's ranks: CPU time over wall time, GPU utilisation (mean / minimum sample).
  if (!r.at("attempts").empty()) {
    const json& a = r.at("attempts").back();
    std::string cpu, gpu;
    std::size_t shown = 0;
    if (a.contains("cpu_utilisation_percent"))
      for (const auto& c : a.at("cpu_utilisation_percent"))
        if (shown++ < 8) cpu += (cpu.empty() ? "" : ", ") + fixed(c.get<double>(), 0) + " %";
    if (shown > 8) cpu += ", ... (" + std::to_string(shown) + " ranks)";
    shown = 0;
    if (a.contains("gpu"))
      for (const auto& g : a.at("gpu"))
        if (shown++ < 8)
          gpu += (gpu.empty() ? "" : ", ") + std::string("rank ") + std::to_string(g.at("rank").get<int>()) + " " +
                 fixed(g.at("util_mean_percent").get<double>(), 0) + "/" +
                 fixed(g.at("util_min_percent").get<double>(), 0) + " %";
    if (shown > 8) gpu += ", ... (" + std::to_string(shown) + " GPUs)";
    if (!cpu.empty()) o << "  CPU time / wall time per rank (attempt " << a.at("attempt").get<int>() << "): " << cpu << "\n";
    if (!gpu.empty())
      o << "  GPU utilisation mean/min per rank (attempt " << a.at("attempt").get<int>() << "): " << gpu << "\n";
  }
  for (const auto& w : r.at("warnings")) o << "  WARNING: " << w.get<std::string>() << "\n";
  return o.str();
}

std::string check_report_text(const std::string& text, std::size_t attempts) {
  try {
    const json j = json::parse(text);
    if (!j.is_object() || !j.contains("attempts") || !j.at("attempts").is_array() || !j.contains("totals"))
      return "not a run report";
    if (j.at("attempts").size() != attempts)
      return "it lists " + std::to_string(j.at("attempts").size()) + " attempt(s), the ledger " + std::to_string(attempts);
    return "";
  } catch (const std::exception& e) {
    return std::string("not valid JSON: ") + e.what();
  }
}

}  // namespace spotrun::report
