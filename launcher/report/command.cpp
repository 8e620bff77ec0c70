// `spotrun report OUTDIR [--json] [--png FILE]` (docs/report.md).
#include "command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/child_process.hpp"
#include "io/report/recorder.hpp"
#include "spotrun/timeline_py.hpp"

namespace fs = std::filesystem;

namespace spotrun::report {
namespace {

// Why the PNG cannot be written at `png` (its directory missing, not a directory or not writable, or
// the path a directory), or "" when it may be.
std::string png_path_problem(const std::string& png) {
  std::error_code ec;
  const fs::path p(png);
  if (p.filename().empty() || fs::is_directory(p, ec)) return "it is a directory; give a file name ending in .png";
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec)) return "its directory '" + dir.string() + "' does not exist";
  if (!fs::is_directory(dir, ec)) return "'" + dir.string() + "' is not a directory";
  if (access(dir.c_str(), W_OK) != 0) return "its directory '" + dir.string() + "' is not writable";
  if (fs::exists(p, ec) && access(p.c_str(), W_OK) != 0) return "the file exists and is not writable";
  return {};
}

// Draws the PNG with timeline.py (embedded at build time, written to /tmp and run by /usr/bin/python3);
// returns 0, 2 (the PNG cannot be written) or 1 (no python3 or matplotlib, the script
// failed). The script prints its own one-line error.
int draw_png(const std::string& json_path, const std::string& png, const std::string& thermo_csv) {
  char script[] = "/tmp/spotrun-timeline-XXXXXX.py";
  const int fd = mkstemps(script, 3);
  if (fd < 0) {
    std::fprintf(stderr, "ERROR: spotrun report: --png %s: cannot create a temporary script file in /tmp\n", png.c_str());
    return 1;
  }
  const std::string text = embedded::k_timeline_py;
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  int exit_code = -1;
  if (written) {
    // The script's output is this process's (its own one-line error included).
    io::SpawnOptions options;
    options.inherit_output = true;
    const io::SpawnedChild child =
        io::spawn_with_pipes({"/usr/bin/python3", script, json_path, png, thermo_csv}, options);
    int status = 0;
    if (child.pid > 0 && waitpid(child.pid, &status, 0) == child.pid && WIFEXITED(status))
      exit_code = WEXITSTATUS(status);
    else if (child.pid < 0 && child.failed_call == std::string("posix_spawnp"))
      exit_code = 127;  // /usr/bin/python3 cannot be run
  }
  unlink(script);
  if (written && exit_code == 0) return 0;
  if (written && exit_code >= 2 && exit_code <= 4) return exit_code == 2 ? 2 : 1;  // the script said why
  std::fprintf(stderr, "ERROR: spotrun report: --png %s: %s\n", png.c_str(),
               !written               ? "cannot write the temporary script file in /tmp"
               : exit_code == 127     ? "/usr/bin/python3 not found (Debian: python3, python3-matplotlib)"
                                      : "/usr/bin/python3 ended abnormally while drawing");
  return 1;
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
    // A PNG that cannot be written is refused before anything is printed.
    if (code == 0 && !png.empty()) {
      const std::string why = png_path_problem(png);
      if (!why.empty()) {
        std::fprintf(stderr, "ERROR: spotrun report: --png %s: cannot write the PNG there: %s\n", png.c_str(),
                     why.c_str());
        code = 2;
      }
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
          std::fprintf(stderr, "ERROR: spotrun report: --png %s: cannot create a temporary file in /tmp\n", png.c_str());
          code = 1;
        } else {
          const std::string text = report.dump();
          const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
          close(fd);
          code = ok ? draw_png(tmp, png, (fs::path(outdir) / "thermo.csv").string()) : 1;
          unlink(tmp);
          if (code == 0 && !json) std::printf("Timeline and thermo: %s\n", png.c_str());
        }
      }
    }
  }
  return static_cast<int>(comm.max(static_cast<std::int64_t>(code)));
}

}  // namespace spotrun::report
