// `spotrun report OUTDIR [--json] [--png FILE]` (docs/report.md).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "recorder.hpp"

namespace fs = std::filesystem;

namespace spotrun::report {
namespace {

// The timeline: one bar per attempt (set-up, then the time loop; redone work hatched at its start),
// checkpoints as ticks, how each attempt ended as a marker; below it the step reached against time.
const char* const k_timeline_script = R"PY(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Patch
from matplotlib.lines import Line2D

r = json.load(open(sys.argv[1]))
att = r["attempts"]
if not att:
    sys.exit("no attempt recorded")
t0 = att[0]["start_unix"]
span = max(a["end_unix"] for a in att) - t0
scale, unit = (3600.0, "h") if span > 7200 else ((60.0, "min") if span > 120 else (1.0, "s"))
fig, (ax, bx) = plt.subplots(2, 1, figsize=(11, 2.2 + 0.45 * len(att) + 3), sharex=True,
                             gridspec_kw={"height_ratios": [max(1, len(att)), 3]})
for i, a in enumerate(att):
    y = len(att) - i
    s = (a["start_unix"] - t0) / scale
    sec = a["seconds"]
    setup = sec["setup"] / scale
    end = (a["end_unix"] - t0) / scale
    ax.barh(y, setup, left=s, color="0.7", height=0.6)
    ax.barh(y, max(0.0, end - s - setup), left=s + setup, color="tab:green", height=0.6)
    red = a.get("redone_seconds", 0.0) / scale
    if red > 0:
        ax.barh(y, red, left=s + setup, color="none", edgecolor="tab:red", hatch="///", height=0.6)
    for c in a["checkpoints"]:
        x = s + c["at"] / scale
        ax.plot([x, x], [y - 0.35, y + 0.35], color="tab:blue" if c["ok"] else "tab:orange", lw=1.5)
    fin = a["exit_code"] == 0
    ax.plot(end, y, marker="o" if fin else "X", color="black" if fin else "tab:red", ms=9)
    ax.text(end, y + 0.38, " " + a["exit_cause"], fontsize=7, va="bottom")
    bx.plot([s + setup, end], [a["start_step"], a["end_step"]], color="tab:green", lw=2)
    if a["steps_redone"] > 0:
        bx.fill_between([s + setup, s + setup + red], a["start_step"], a["start_step"] + a["steps_redone"],
                        color="tab:red", alpha=0.3)
ax.set_yticks([len(att) - i for i in range(len(att))])
ax.set_yticklabels(["attempt %d" % a["attempt"] for a in att])
ax.legend(handles=[Patch(color="0.7", label="set-up"), Patch(color="tab:green", label="time loop"),
                   Patch(facecolor="none", edgecolor="tab:red", hatch="///", label="redone work"),
                   Line2D([], [], color="tab:blue", label="checkpoint"),
                   Line2D([], [], marker="X", color="tab:red", ls="", label="stopped / preempted"),
                   Line2D([], [], marker="o", color="black", ls="", label="finished")],
          fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
t = r["totals"]
title = "%s: %d attempt(s), %.4g s wall, %d steps redone" % (r["output_dir"], len(att), t["wall_seconds"], t["steps_redone"])
if "gpu_hours" in t:
    title += ", %.3g GPU-hours" % t["gpu_hours"]
if "cost" in t:
    title += ", cost %.2f" % t["cost"]
ax.set_title(title, fontsize=9)
bx.set_ylabel("step")
bx.set_xlabel("time since the first attempt started (%s)" % unit)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
)PY";

int draw_png(const std::string& json_path, const std::string& png) {
  char script[] = "/tmp/spotrun-timeline-XXXXXX.py";
  const int fd = mkstemps(script, 3);
  if (fd < 0) {
    std::fprintf(stderr, "ERROR: --png: cannot create a temporary script file\n");
    return 1;
  }
  const std::string text = k_timeline_script;
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  int status = -1;
  if (written) {
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/usr/bin/python3", "/usr/bin/python3", script, json_path.c_str(), png.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    if (pid > 0) waitpid(pid, &status, 0);
  }
  unlink(script);
  if (!written || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr,
                 "ERROR: --png %s: drawing the timeline failed (%s); it needs /usr/bin/python3 with matplotlib "
                 "(Debian: python3-matplotlib)\n",
                 png.c_str(), !written ? "cannot write the script"
                              : WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "/usr/bin/python3 not found"
                                                                                 : "the script failed, see above");
    return 1;
  }
  return 0;
}

}  // namespace

int report_command(const comm::Communicator& comm, const std::string& outdir, bool json, const std::string& png) {
  int code = 0;
  if (comm.is_root()) {
    std::vector<std::string> warnings;
    bool found = false;
    std::error_code ec;
    if (!fs::is_directory(outdir, ec)) {
      std::fprintf(stderr, "ERROR: spotrun report: '%s' is not a directory\n", outdir.c_str());
      code = 2;
    }
    nlohmann::json report;
    if (code == 0) {
      report = load_report(outdir, warnings, found);
      if (!found) {
        std::fprintf(stderr,
                     "ERROR: spotrun report: '%s' holds no %s: not an output directory of spotrun run (or of a "
                     "spotrun without run reports)\n",
                     outdir.c_str(), k_ledger_name);
        code = 2;
      }
    }
    if (code == 0) {
      for (const auto& w : warnings) std::fprintf(stderr, "WARNING: %s\n", w.c_str());
      if (json)
        std::printf("%s\n", report.dump(2).c_str());
      else
        std::printf("%s", summary_text(report).c_str());
      std::fflush(stdout);
      if (!png.empty()) {
        // The report as derived now (a running run's report.json may be a checkpoint old).
        char tmp[] = "/tmp/spotrun-report-XXXXXX.json";
        const int fd = mkstemps(tmp, 5);
        if (fd < 0) {
          code = 1;
        } else {
          const std::string text = report.dump();
          const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
          close(fd);
          code = ok ? draw_png(tmp, png) : 1;
          unlink(tmp);
          if (code == 0 && !json) std::printf("Timeline: %s\n", png.c_str());
        }
      }
    }
  }
  return static_cast<int>(comm.max(static_cast<std::int64_t>(code)));
}

}  // namespace spotrun::report
