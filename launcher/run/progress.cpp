#include "launcher/run/progress.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "io/run_directory.hpp"

namespace spotrun::launcher {
namespace {

std::string utc_text(double epoch, const char* format) {
  const auto t = static_cast<std::time_t>(std::llround(epoch));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// "3 h 02 min", "12 min 05 s", "42 s"
std::string duration_text(double s) {
  const auto total = static_cast<long long>(std::llround(s));
  char buf[64];
  if (total >= 86400)
    std::snprintf(buf, sizeof buf, "%lld d %02lld h %02lld min", total / 86400, total % 86400 / 3600, total % 3600 / 60);
  else if (total >= 3600)
    std::snprintf(buf, sizeof buf, "%lld h %02lld min", total / 3600, total % 3600 / 60);
  else if (total >= 60)
    std::snprintf(buf, sizeof buf, "%lld min %02lld s", total / 60, total % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld s", total);
  return buf;
}

double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

ProgressFigures progress_figures(std::int64_t first_step, std::int64_t step, std::int64_t steps, double elapsed,
                                 double work_per_step, double now, double first_fraction, double fraction,
                                 const std::string& measure) {
  ProgressFigures f;
  f.step = step;
  f.steps = steps;
  const double by_steps = steps > 0 ? static_cast<double>(step) / static_cast<double>(steps) : 1.0;
  // The solver's own measure where it is ahead of the steps: the run ends on whichever comes first.
  const bool own = fraction > by_steps;
  f.percent = 100.0 * (own ? std::min(fraction, 1.0) : by_steps);
  if (own) f.measure = measure;
  f.elapsed = elapsed;
  const auto done = static_cast<double>(step - first_step);
  if (done > 0 && elapsed > 0) {
    f.steps_per_second = done / elapsed;
    f.work_per_second = f.steps_per_second * work_per_step;
    if (!own)
      f.remaining = static_cast<double>(steps - step) / f.steps_per_second;
    else if (fraction > first_fraction)
      f.remaining = std::max(0.0, elapsed * (1.0 - fraction) / (fraction - first_fraction));
    if (f.remaining >= 0) f.eta_utc = utc_text(now + f.remaining, "%Y-%m-%dT%H:%M:%SZ");
  }
  return f;
}

std::string progress_line(const ProgressFigures& f, const std::string& work_unit) {
  char buf[512];
  // "step 1200 of 5000", or with the solver's own measure "step 83, time 2.5 of 10"
  char where[256];
  if (f.measure.empty())
    std::snprintf(where, sizeof where, "step %lld of %lld", static_cast<long long>(f.step), static_cast<long long>(f.steps));
  else
    std::snprintf(where, sizeof where, "step %lld, %s", static_cast<long long>(f.step), f.measure.c_str());
  if (f.remaining < 0) {
    std::snprintf(buf, sizeof buf, "Progress: %s (%.1f%%), no step done yet", where, f.percent);
    return buf;
  }
  std::string eta = f.eta_utc;  // 2026-11-30T17:40:12Z -> 2026-11-30 17:40:12 UTC
  if (eta.size() == 20) eta = eta.substr(0, 10) + " " + eta.substr(11, 8) + " UTC";
  std::snprintf(buf, sizeof buf, "Progress: %s (%.1f%%), %.4g steps/s (%.4g %s/s), %s left, ends at %s", where,
                f.percent, f.steps_per_second,
                f.work_per_second, work_unit.c_str(), duration_text(f.remaining).c_str(), eta.c_str());
  return buf;
}

std::string progress_json(const ProgressFigures& f, const std::string& work_unit, bool finished) {
  io::ProgressRecord p;  // progress.json's record (io/run_directory.hpp)
  p.step = f.step;
  p.steps = f.steps;
  p.percent = f.percent;
  p.measure = f.measure;
  p.steps_per_second = f.steps_per_second;
  p.work_per_second = f.work_per_second;
  p.work_unit = work_unit;
  p.elapsed = f.elapsed;
  p.remaining = f.remaining;
  p.expected_end_utc = f.eta_utc;
  p.updated_utc = utc_text(now_epoch(), "%Y-%m-%dT%H:%M:%SZ");
  p.finished = finished;
  return io::progress_text(p);
}

ProgressReporter::ProgressReporter(bool root, std::string outdir, double interval, std::int64_t first_step,
                                   std::int64_t steps, double loop_start, std::string work_unit,
                                   double first_fraction)
    : m_root(root), m_outdir(std::move(outdir)), m_interval(interval), m_first_step(first_step), m_steps(steps),
      m_loop_start(loop_start), m_last(loop_start), m_work_unit(std::move(work_unit)),
      m_first_fraction(first_fraction) {}

void ProgressReporter::after_step(std::int64_t step, double now, double work_per_step, double fraction,
                                  const std::string& measure) {
  if (!m_root || m_interval <= 0 || now - m_last < m_interval) return;
  m_last = now;
  report(step, now, work_per_step, false, true, fraction, measure);
}

void ProgressReporter::at_end(std::int64_t step, double now, double work_per_step, bool finished, double fraction,
                              const std::string& measure) {
  if (!m_root || m_interval <= 0) return;
  report(step, now, work_per_step, finished, false, fraction, measure);
}

void ProgressReporter::report(std::int64_t step, double now, double work_per_step, bool finished, bool print,
                              double fraction, const std::string& measure) {
  ProgressFigures f = progress_figures(m_first_step, step, m_steps, now - m_loop_start, work_per_step, now_epoch(),
                                       m_first_fraction, fraction, measure);
  if (finished) {  // the run reached its end, whichever measure ended it
    f.percent = 100;
    f.remaining = 0;
    f.eta_utc = utc_text(now_epoch(), "%Y-%m-%dT%H:%M:%SZ");
  }
  if (print) {
    const std::string line = progress_line(f, m_work_unit);
    if (m_print) {
      m_print(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
  }
  // progress.json through a temporary file and a rename; a failure costs the report, never the run.
  const std::filesystem::path path = std::filesystem::path(m_outdir) / io::k_progress_file;  // io/run_directory.hpp
  const std::string tmp = path.string() + ".tmp";
  std::error_code ec;
  bool ok;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << progress_json(f, m_work_unit, finished);
    out.flush();
    ok = static_cast<bool>(out);
  }
  if (ok) std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) std::filesystem::remove(tmp, ec);  // a full disk leaves no temporary file behind
}

}  // namespace spotrun::launcher
