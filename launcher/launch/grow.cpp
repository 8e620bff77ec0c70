// Growing back (grow.hpp): the decision, and what Launcher::consider_grow measures for it.
#include "launcher/launch/grow.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "comm/errors.hpp"
#include "io/run_directory.hpp"
#include "launcher/launch/fence.hpp"
#include "launcher/launch/run_files.hpp"
#include "launcher/launch/supervisor.hpp"
#include "launcher/launch/this_machine.hpp"
#include "launcher/run/run_status.hpp"

namespace spotrun::launcher {

GrowEstimate grow_estimate(long long remaining_steps, double step_seconds, int old_ranks, int new_ranks,
                           double relaunch_seconds, double stop_checkpoint_seconds, long long redone_steps) {
  GrowEstimate e;
  const double steps = static_cast<double>(std::max(0LL, remaining_steps));
  const double step = std::max(0.0, step_seconds);
  const double redo = static_cast<double>(std::max(0LL, redone_steps)) * step;
  e.cost = std::max(0.0, relaunch_seconds) + std::max(0.0, stop_checkpoint_seconds) + redo;
  e.saving = new_ranks > old_ranks && old_ranks > 0
                 ? steps * step * (1.0 - static_cast<double>(old_ranks) / static_cast<double>(new_ranks))
                 : 0.0;
  e.worth = new_ranks > old_ranks && e.saving > e.cost;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "relaunch cost %.3g s (start-up %.3g s + stop checkpoint %.3g s + %lld steps redone) %s saving %.3g s "
                "(%lld steps left x %.3g s/step x (1 - %d/%d))",
                e.cost, relaunch_seconds, stop_checkpoint_seconds, std::max(0LL, redone_steps),
                e.worth ? "<" : ">=", e.saving, std::max(0LL, remaining_steps), step, old_ranks, new_ranks);
  e.text = buf;
  return e;
}

GrowDecision decide_grow(const GrowFigures& f) {
  GrowDecision d;
  long long step = f.heartbeat_step;
  double step_seconds = f.mean_step_seconds;
  // The newest checkpoint is newer than the last heartbeat (one every 2 s): the step time from the
  // start of the time loop to that checkpoint's file, checkpoint writes included.
  const long long ck = f.checkpoint_step;
  if (ck > f.start_step && f.start_step >= 0 && f.loop_started > 0 && f.checkpoint_written > f.loop_started) {
    step = std::max(step, ck);
    step_seconds = (f.checkpoint_written - f.loop_started) / static_cast<double>(ck - f.start_step);
  }
  d.step = step;
  if (step < 0 || step_seconds <= 0 || f.loop_started <= 0) return d;
  d.known = true;
  std::vector<double> starts = f.relaunch_seconds;
  starts.push_back(f.loop_started - f.prep_started);
  double relaunch = 0;
  for (double s : starts) relaunch += s;
  relaunch /= static_cast<double>(starts.size());
  d.attempts_measured = starts.size();
  d.estimate = grow_estimate(f.total_steps - step, step_seconds, f.ranks, f.new_ranks, relaunch, f.max_gap_seconds, 0);
  return d;
}

namespace impl {

// Growing back (--grow): at a new checkpoint of attempt `a`, whether hosts that the hostfile (or
// --hosts-command) names and the attempt does not use answer their probe, and a relaunch on the larger
// set of ranks pays for itself (grow_estimate); true: stop the attempt (SIGUSR1) and relaunch.
bool Launcher::consider_grow(AttemptResult& a) {
  const std::string tag = "attempt " + std::to_string(a.number) + ": grow: ";
  std::vector<HostEntry> hosts;
  try {
    hosts = current_hosts();
  } catch (const InputError& e) {
    log(tag + "WARNING: " + e.what() + "; not growing now");
    return false;
  }
  std::vector<std::string> fresh;
  for (const auto& h : hosts) {
    if (m_dropped.count(h.name)) continue;
    const bool used = std::any_of(a.placement.begin(), a.placement.end(),
                                  [&](const Placement& p) { return same_host(p.host, h.name, m_self); });
    if (!used) fresh.push_back(h.name);
  }
  if (fresh.empty()) return false;
  std::vector<ProbeResult> probes = probe(fresh);
  // A host lost in an earlier attempt that answers again (a partition healed, a node rebooted) is fenced
  // first: whatever the attempts it missed left there ends before it is counted.
  for (std::size_t k = 0; k < fresh.size(); ++k)
    if (probes[k].ok && m_lost.count(fresh[k]) && !fence_returning_host(tag, fresh[k])) probes[k].ok = false;
  std::vector<Placement> capacity = a.placement;
  std::string added;
  for (std::size_t k = 0; k < fresh.size(); ++k) {
    if (!probes[k].ok) continue;
    const HostEntry& h = *std::find_if(hosts.begin(), hosts.end(), [&](const HostEntry& e) { return e.name == fresh[k]; });
    const int cap = m_opt.ranks_per_node > 0 ? m_opt.ranks_per_node : h.slots > 0 ? h.slots : probes[k].cores;
    capacity.push_back({h.name, cap});
    added += (added.empty() ? "" : ", ") + h.name + " (" + plural(cap, "slot") + ")";
  }
  int ranks = 0;
  for (const auto& p : plan_ranks(capacity, m_opt.np)) ranks += p.ranks;
  if (ranks <= a.ranks) return false;
  // The run's figures: its step and mean step time (heartbeats), the longest gap between two steps (a
  // checkpoint write: the stop checkpoint costs about as much), its first step (status.json), its newest
  // checkpoint and when that was written.
  GrowFigures f;
  f.total_steps = m_total_steps;
  f.ranks = a.ranks;
  f.new_ranks = ranks;
  for (const io::HeartbeatRecord& b : io::read_heartbeats(m_outdir)) {
    if (b.attempt != a.id) continue;
    f.heartbeat_step = std::max(f.heartbeat_step, static_cast<long long>(b.step));
    f.mean_step_seconds = std::max(f.mean_step_seconds, b.mean_step_seconds);
    f.max_gap_seconds = std::max(f.max_gap_seconds, b.max_gap_seconds);
  }
  io::StatusRecord r;
  if (record_of(m_outdir, a.id, r) && !r.loop_started.empty()) f.loop_started = parse_utc(r.loop_started);
  if (r.start_step >= 0) f.start_step = r.start_step;
  // The newest checkpoint's own file: ckpt-<step>.h5, or the index ckpt-<step>.levels of a level set.
  const std::vector<io::CheckpointName> checkpoints = io::list_checkpoints(m_outdir);
  f.checkpoint_step = checkpoints.empty() ? -1 : checkpoints.back().step;
  struct stat st {};
  if (f.checkpoint_step > f.start_step && f.start_step >= 0 && f.loop_started > 0 &&
      ::stat(checkpoints.back().path(m_outdir).c_str(), &st) == 0)
    f.checkpoint_written = static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
  f.prep_started = m_prep_started;
  f.relaunch_seconds = m_relaunch_seconds;
  const GrowDecision d = decide_grow(f);
  if (!d.known) {
    log(tag + "more slots answer (" + added + ") but the run's step time is not known yet; deciding at the next checkpoint");
    return false;
  }
  const GrowEstimate& e = d.estimate;
  log(tag + "at step " + std::to_string(d.step) + ", " + plural(ranks, "rank") + " fit with " + added + " instead of " +
      std::to_string(a.ranks) + ": " + e.text + " (start-up measured over " +
      plural(static_cast<long long>(d.attempts_measured), "attempt") + "): " +
      (e.worth ? "stopping with a checkpoint to relaunch on " + plural(ranks, "rank") : std::string("not worth a relaunch")));
  if (e.worth) a.grow_to = ranks;
  return e.worth;
}

// Host `host`, lost in earlier attempts, answers its probe again: the fence of each of those attempts runs
// there first. True (and the host no longer lost) when it answered them all.
bool Launcher::fence_returning_host(const std::string& tag, const std::string& host) {
  const auto lost = m_lost.find(host);
  for (const std::string& id : lost->second) {
    std::vector<long long> killed;
    const std::vector<ProbeResult> r = fence_hosts(prober(), {host}, id, m_stop, killed);
    if (killed[0] < 0) {
      log(tag + "host " + host + " answers again but not its fence of attempt " + id + " (" +
          (r[0].why.empty() ? "no count" : r[0].why) + "): still left out");
      return false;
    }
    log(tag + "host " + host + " answers again: " + std::to_string(killed[0]) + " process(es) of attempt " + id +
        " killed there");
  }
  m_lost.erase(lost);
  return true;
}

}  // namespace impl
}  // namespace spotrun::launcher
