#pragma once
// Error types shared by every component, and the exit codes of a run (see docs/exit-codes in README).
#include <stdexcept>
#include <string>

namespace spotrun {

enum ExitCode : int {
  k_exit_finished = 0,
  k_exit_failure = 1,
  k_exit_bad_input = 2,
  k_exit_resume_me = 75,
  k_exit_stalled = 76,  // the in-rank watchdog: no step progress for the stall timeout (launcher/run/heartbeat.hpp)
};

// An error every rank has reached together (a collective verdict): the launcher may finalize MPI and
// exit cleanly with exit_code() on every rank. Errors that one rank alone may have hit are plain
// std::exception and lead to MPI_Abort.
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(const std::string& what, int exit_code) : std::runtime_error(what), m_exit_code(exit_code) {}
  int exit_code() const { return m_exit_code; }

 private:
  int m_exit_code;
};

// Bad user input (CLI, deck, data file, checkpoint file): exit code 2.
class InputError : public CollectiveError {
 public:
  explicit InputError(const std::string& what) : CollectiveError(what, k_exit_bad_input) {}
};

// A failure of the simulation itself, agreed by all ranks (lost atoms, overlapping atoms): exit code 1.
class RunError : public CollectiveError {
 public:
  explicit RunError(const std::string& what) : CollectiveError(what, k_exit_failure) {}
};

}  // namespace spotrun
