#pragma once
// What `spotrun run` prints on the root rank, and OUTDIR/spotrun.log (README.md#output).
// While a Console is alive on the root rank, the process's stdout goes through a pipe to a thread that
// appends every line to OUTDIR/spotrun.log (lines printed before the output directory is known are kept
// and written when the log opens) and passes to the terminal the lines of the level the verbosity shows:
//   quiet    the lines of level Show::always (the final status line); errors (stderr) as always
//   normal   also Show::normal: the short header, the thermo rows, the summary, progress lines
//   verbose  everything rank 0 prints (Show::detail lines, and every other line of stdout)
// A line printed with plain printf is a detail. stderr (warnings and errors) is not redirected: it reaches
// the terminal at once even when the process ends abruptly; say_error() puts a line in both. Other ranks
// and other commands print as before.
#include <memory>
#include <string>

namespace spotrun::launcher {

enum class Verbosity { quiet, normal, verbose };
enum class Show { always, normal, detail };

class Console {
 public:
  // root: whether this rank prints (only the root rank installs the pipe).
  Console(bool root, Verbosity verbosity);
  ~Console();  // flushes, restores stdout and waits for the thread
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // Opens OUTDIR/spotrun.log for appending, writes `heading` and then the lines kept so far. A log that
  // cannot be opened costs the log only (a warning on stderr).
  void open_log(const std::string& path, const std::string& heading);
  Verbosity verbosity() const { return m_verbosity; }

  struct Impl;

 private:
  bool m_root;
  Verbosity m_verbosity;
  std::unique_ptr<Impl> m_impl;
};

// One line (without its newline) at a level, on the root rank: through the Console when one is alive,
// else printed as it is (detail lines too). Thread-compatible with printf (one fputs).
void say(Show level, const std::string& line);
// An error or warning line: to stderr (the terminal) and, when a Console is alive, to the log.
void say_error(const std::string& line);
// A line for the log only (the error that ends a run, which main() prints on stderr itself).
void log_only(const std::string& line);
// Console::open_log() of the Console alive on this rank (none: nothing).
void open_run_log(const std::string& path, const std::string& heading);

}  // namespace spotrun::launcher
