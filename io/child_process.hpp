#pragma once
// spotrun's one way of starting a child program: stdin from /dev/null, stdout and stderr into pipes (or
// one pipe, or this process's own), an empty signal mask, the named signals back at their default
// disposition (spotrun's stop handlers and whatever MPI installed do not belong in the child). Used for
// rclone (the durable tier), Slurm's commands (squeue, scontrol, sbatch: run_command), `spotrun launch`'s
// mpirun, probes and --hosts-command, and the plotting script of `spotrun report --png`; each caller reads
// the pipes and waits in its own way, or lets run_command do it.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace spotrun::io {

struct SpawnOptions {
  // The child's environment, "NAME=value" each; null: this process's environment.
  const std::vector<std::string>* environment = nullptr;
  // Added to that environment ("NAME=value" each), replacing a variable of the same name.
  const std::vector<std::string>* added_environment = nullptr;
  // The signals set back to their default disposition in the child; null: every signal.
  const std::vector<int>* default_signals = nullptr;
  // The child leads a process group of its own (kill(-pid, ...) then reaches what it starts, too).
  bool own_process_group = false;
  // The child's stderr goes into its stdout pipe (SpawnedChild::err stays -1).
  bool merge_stderr = false;
  // The child writes to this process's stdout and stderr: no pipe (out and err stay -1).
  bool inherit_output = false;
  // Sent to the child when this process ends (PR_SET_PDEATHSIG), so that a job does not outlive its
  // supervisor unwatched; 0: none. Such a child is started with fork and exec (posix_spawn cannot set it),
  // argv[0] an absolute path: when it cannot be run, the child writes "<exec_error_prefix>cannot run
  // ARGV0: REASON" on its stderr and exits 127, and the start itself succeeds.
  int parent_death_signal = 0;
  const char* exec_error_prefix = "";
};

struct SpawnedChild {
  pid_t pid = -1;
  int out = -1;  // read end of the child's stdout (close-on-exec); the caller closes it
  int err = -1;  // read end of the child's stderr (close-on-exec); the caller closes it
  // On failure (pid < 0): the call that failed ("pipe2", "posix_spawnp" or "fork") and its error number.
  const char* failed_call = nullptr;
  int error = 0;
};

// Starts argv[0], found on PATH as posix_spawnp finds it, with argv. Nothing is left open on failure.
SpawnedChild spawn_with_pipes(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// Runs argv[0] (looked up in PATH) with the arguments, no shell, stdin from /dev/null; returns its
// standard output if it exits 0 within timeout_seconds, else nullopt (the process is killed on
// timeout). *error receives standard error and the reason on failure.
std::optional<std::string> run_command(const std::vector<std::string>& argv, double timeout_seconds,
                                       std::string* error = nullptr);

}  // namespace spotrun::io
