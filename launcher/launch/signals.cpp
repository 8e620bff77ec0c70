// Stop requests of `spotrun launch` (signals.hpp).
#include "launcher/launch/signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace spotrun::launcher::impl {

namespace {

int g_signal_pipe[2] = {-1, -1};

extern "C" void on_launch_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  (void)!::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

void install_launch_signals() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2 failed");
  struct sigaction sa {};
  sa.sa_handler = on_launch_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// Signals received since the last call, in order.
std::vector<int> take_signals() {
  std::vector<int> sigs;
  unsigned char buf[64];
  for (;;) {
    const ssize_t n = ::read(g_signal_pipe[0], buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t k = 0; k < n; ++k) sigs.push_back(buf[k]);
  }
  return sigs;
}

int signal_fd() { return g_signal_pipe[0]; }

const char* launch_signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

}  // namespace spotrun::launcher::impl
