// Starting a child program with its output in pipes (child_process.hpp).
#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;

namespace spotrun::io {

SpawnedChild spawn_with_pipes(const std::vector<std::string>& argv, const SpawnOptions& options) {
  SpawnedChild child;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    child.failed_call = "pipe2";
    child.error = errno;
    return child;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    child.failed_call = "pipe2";
    child.error = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return child;
  }
  std::vector<std::string> argv_s = argv;
  std::vector<char*> args;
  for (auto& a : argv_s) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_s;
  std::vector<char*> envp;
  if (options.environment) {
    env_s = *options.environment;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  if (options.default_signals) {
    sigemptyset(&defaults);
    for (int s : *options.default_signals) sigaddset(&defaults, s);
  } else {
    sigfillset(&defaults);
  }
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.own_process_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), options.environment ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    child.failed_call = "posix_spawnp";
    child.error = rc;
    return child;
  }
  child.pid = pid;
  child.out = out_pipe[0];
  child.err = err_pipe[0];
  return child;
}

}  // namespace spotrun::io
