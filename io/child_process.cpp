// Starting a child program with its output in pipes (child_process.hpp).
#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace spotrun::io {

namespace {

// The pipes of a child: [0] read end, [1] write end; -1 where none is made.
struct Pipes {
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  void close_all() {
    for (int* p : {out, err})
      for (int k = 0; k < 2; ++k)
        if (p[k] >= 0) {
          ::close(p[k]);
          p[k] = -1;
        }
  }
};

// The child's environment: the base (`environment`, else this process's) with `added` replacing variables
// of the same name.
std::vector<std::string> child_environment(const SpawnOptions& options) {
  std::vector<std::string> env;
  if (options.environment) {
    env = *options.environment;
  } else {
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
  }
  if (options.added_environment)
    for (const auto& a : *options.added_environment) {
      const std::string name = a.substr(0, a.find('=') + 1);
      for (auto it = env.begin(); it != env.end();) it = it->rfind(name, 0) == 0 ? env.erase(it) : it + 1;
      env.push_back(a);
    }
  return env;
}

// Writes "<prefix>cannot run <path>: <reason>\n" on stderr without allocating (after fork).
void write_exec_error(const char* prefix, const char* path, int err) {
  char msg[1024];
  std::size_t n = 0;
  const char* const parts[] = {prefix, "cannot run ", path, ": ", std::strerror(err), "\n"};
  for (const char* part : parts)
    for (const char* c = part; *c && n < sizeof msg; ++c) msg[n++] = *c;
  (void)!::write(STDERR_FILENO, msg, n);
}

// fork and exec: for a child that must get a parent-death signal.
pid_t fork_exec(char* const* args, char* const* envp, const Pipes& pipes, const SpawnOptions& options) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (options.own_process_group) ::setpgid(0, 0);
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  if (options.default_signals) {
    for (int sig : *options.default_signals) ::sigaction(sig, &sa, nullptr);
  } else {
    for (int sig = 1; sig < NSIG; ++sig)
      if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &sa, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
  if (::getppid() != parent) ::raise(options.parent_death_signal);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  if (!options.inherit_output) {
    ::dup2(pipes.out[1], STDOUT_FILENO);
    ::dup2(options.merge_stderr ? pipes.out[1] : pipes.err[1], STDERR_FILENO);
  }
  ::execve(args[0], args, envp);
  write_exec_error(options.exec_error_prefix ? options.exec_error_prefix : "", args[0], errno);
  ::_exit(127);
}

pid_t posix_spawn_child(char* const* args, char* const* envp, const Pipes& pipes, const SpawnOptions& options,
                        int& rc) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!options.inherit_output) {
    posix_spawn_file_actions_adddup2(&actions, pipes.out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, options.merge_stderr ? pipes.out[1] : pipes.err[1], 2);
  }
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
  rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

}  // namespace

SpawnedChild spawn_with_pipes(const std::vector<std::string>& argv, const SpawnOptions& options) {
  SpawnedChild child;
  Pipes pipes;
  const bool want_err = !options.inherit_output && !options.merge_stderr;
  const bool want_out = !options.inherit_output;
  if ((want_out && ::pipe2(pipes.out, O_CLOEXEC) != 0) || (want_err && ::pipe2(pipes.err, O_CLOEXEC) != 0)) {
    child.failed_call = "pipe2";
    child.error = errno;
    pipes.close_all();
    return child;
  }
  std::vector<std::string> argv_s = argv;
  std::vector<char*> args;
  for (auto& a : argv_s) args.push_back(a.data());
  args.push_back(nullptr);
  const bool own_env = options.environment || options.added_environment;
  std::vector<std::string> env_s = own_env ? child_environment(options) : std::vector<std::string>{};
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  char* const* env = own_env ? envp.data() : environ;

  pid_t pid = -1;
  int rc = 0;
  if (options.parent_death_signal != 0) {
    pid = fork_exec(args.data(), env, pipes, options);
    rc = pid < 0 ? errno : 0;
  } else {
    pid = posix_spawn_child(args.data(), env, pipes, options, rc);
  }
  for (int* p : {pipes.out, pipes.err})
    if (p[1] >= 0) {
      ::close(p[1]);
      p[1] = -1;
    }
  if (pid < 0) {
    pipes.close_all();
    child.failed_call = options.parent_death_signal != 0 ? "fork" : "posix_spawnp";
    child.error = rc;
    return child;
  }
  child.pid = pid;
  child.out = pipes.out[0];
  child.err = pipes.err[0];
  return child;
}

namespace {

// `s` without the blanks and line ends around it.
std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::optional<std::string> run_command(const std::vector<std::string>& argv, double timeout_seconds,
                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::string> {
    if (error) *error = why;
    return std::nullopt;
  };
  if (argv.empty()) return fail("no command");
  // The child starts with default signal dispositions and an empty mask (spotrun's stop handlers and
  // whatever MPI installed do not belong in it).
  const SpawnedChild child = spawn_with_pipes(argv);
  if (child.pid < 0) {
    if (child.failed_call == std::string("pipe2")) return fail(std::string("pipe: ") + std::strerror(child.error));
    return fail("cannot run " + argv[0] + ": " + std::strerror(child.error));
  }
  const pid_t pid = child.pid;

  std::string out, err;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  bool timed_out = false;
  pollfd fds[2] = {{child.out, POLLIN, 0}, {child.err, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t got = read(f.fd, buf, sizeof buf);
      if (got > 0) {
        (f.fd == child.out ? out : err).append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return fail(argv[0] + " did not answer within " + std::to_string(static_cast<int>(timeout_seconds)) + " s");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = argv[0] + (WIFEXITED(status) ? " exited with code " + std::to_string(WEXITSTATUS(status))
                                                   : std::string(" was killed by a signal"));
    const std::string e = trimmed(err);
    if (!e.empty()) why += ": " + e;
    return fail(why);
  }
  if (error) *error = err;
  return out;
}

}  // namespace spotrun::io
