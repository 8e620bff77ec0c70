#pragma once
// The stop requests of `spotrun launch` (SIGINT, SIGTERM, SIGHUP): the handler writes the signal number into
// a pipe that the supervising loops poll (signal_fd()), and StopRequests keeps the first one.
#include <vector>

namespace spotrun::launcher::impl {

// Installs the handlers (and ignores SIGPIPE); once, before anything is started.
void install_launch_signals();
// The read end of the pipe, for poll().
int signal_fd();
// Signals received since the last call, in order.
std::vector<int> take_signals();
// "SIGINT", "SIGTERM", "SIGHUP", or "a signal".
const char* launch_signal_name(int sig);

// The first stop request, or 0.
struct StopRequests {
  int first = 0;
  void note(const std::vector<int>& sigs) {
    for (int sig : sigs)
      if (first == 0) first = sig;
  }
};

}  // namespace spotrun::launcher::impl
