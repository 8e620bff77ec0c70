#pragma once
// Starting a child program whose output this process reads: stdin from /dev/null, stdout and stderr into
// two pipes, an empty signal mask, the named signals back at their default disposition (spotrun's stop
// handlers and whatever MPI installed do not belong in the child). Used for rclone (the durable tier) and
// for Slurm's commands (squeue, scontrol, sbatch); each caller reads the pipes and waits in its own way.
#include <sys/types.h>

#include <string>
#include <vector>

namespace spotrun::io {

struct SpawnOptions {
  // The child's environment, "NAME=value" each; null: this process's environment.
  const std::vector<std::string>* environment = nullptr;
  // The signals set back to their default disposition in the child; null: every signal.
  const std::vector<int>* default_signals = nullptr;
  // The child leads a process group of its own (kill(-pid, ...) then reaches what it starts, too).
  bool own_process_group = false;
};

struct SpawnedChild {
  pid_t pid = -1;
  int out = -1;  // read end of the child's stdout (close-on-exec); the caller closes it
  int err = -1;  // read end of the child's stderr (close-on-exec); the caller closes it
  // On failure (pid < 0): the call that failed ("pipe2" or "posix_spawnp") and its error number.
  const char* failed_call = nullptr;
  int error = 0;
};

// Starts argv[0], found on PATH as posix_spawnp finds it, with argv. Nothing is left open on failure.
SpawnedChild spawn_with_pipes(const std::vector<std::string>& argv, const SpawnOptions& options = {});

}  // namespace spotrun::io
