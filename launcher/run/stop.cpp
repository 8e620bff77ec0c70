#include "launcher/run/stop.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <ctime>

#include "comm/communicator.hpp"
#include "comm/test_hooks.hpp"
#include "launcher/run/fence.hpp"

namespace spotrun::launcher {
namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_mode = static_cast<int>(SignalMode::exit_now);
volatile std::sig_atomic_t g_resumable = 0;
volatile std::sig_atomic_t g_lock_fd = -1;
const char* volatile g_phase = "start-up";
const char* volatile g_signal_phase = "start-up";  // the phase in which g_signal arrived
EndNowHook volatile g_end_now_hook = nullptr;

// Async-signal-safe output: write(2) of a NUL-terminated string.
void say(const char* text) {
  std::size_t n = 0;
  while (text[n]) ++n;
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

// The message and the status record of a stop signal that ends the process; async-signal-safe.
void announce_end(int sig, const char* why, const char* phase, int code) {
  say("spotrun: ");
  say(signal_name(sig));
  say(why);
  say(phase);
  say(code == 75 ? ": stopping (exit 75: resume from the checkpoint in the output directory)\n" : ": stopping\n");
  if (EndNowHook hook = g_end_now_hook) hook(sig, code, why, phase);
}

[[noreturn]] void end_now(int sig, const char* why, int code) {
  announce_end(sig, why, g_phase, code);
  if (g_lock_fd >= 0 && !fenced_signal_safe()) (void)::ftruncate(g_lock_fd, 0);  // fencing: a fenced attempt writes nothing
  ::_exit(code);
}

extern "C" void on_stop_signal(int sig) {
  const int mode = g_mode;
  if (mode == static_cast<int>(SignalMode::exit_now))
    end_now(sig, " during ", g_resumable ? 75 : 128 + sig);
  if (g_signal == 0) {
    g_signal_phase = g_phase;
    g_signal = sig;  // acted on between steps, or at the end of the start-up
    return;
  }
  if (mode == static_cast<int>(SignalMode::start_up)) end_now(sig, " again during ", g_resumable ? 75 : 128 + sig);
  // A second signal while the stop checkpoint (or the final state) is written: the user insists. The
  // new checkpoint is only a .tmp file until its rename, so the previous one stays valid.
  if (mode == static_cast<int>(SignalMode::stopping)) end_now(sig, " again while ", 128 + sig);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
}

void set_signal_mode(SignalMode mode, const char* phase) {
  g_phase = phase;
  g_mode = static_cast<int>(mode);
  // Test hook: tests pause the process here to signal it in this phase (comm/test_hooks.hpp).
  if (const auto& hook = comm::test_hooks().phase_entered) hook(phase);
}
void set_resumable_on_signal(bool resumable) { g_resumable = resumable ? 1 : 0; }
void set_lock_fd_for_signal(int fd) { g_lock_fd = fd; }
void set_end_now_hook(EndNowHook hook) { g_end_now_hook = hook; }

int end_start_up(const comm::Communicator& comm, const char* next_phase) {
  const char* phase = g_signal_phase;
  set_signal_mode(SignalMode::exit_now, next_phase);  // a signal from here on ends the process at once
  const int sig = static_cast<int>(comm.max(static_cast<std::int64_t>(g_signal)));
  if (sig == 0) return 0;
  const int code = g_resumable ? 75 : 128 + sig;
  // Every rank that received it says so; the root speaks for the others (mpirun forwards a signal to all).
  if (g_signal != 0 || comm.is_root()) announce_end(sig, " during ", phase, code);
  return code;
}

int received_signal() { return g_signal; }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "signal";
  }
}

StopAgreement::~StopAgreement() {
  if (m_request != MPI_REQUEST_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Wait(&m_request, MPI_STATUS_IGNORE);
  }
}

void StopAgreement::complete(int agreed[k_nflags]) {
  if (m_request == MPI_REQUEST_NULL) {
    for (int k = 0; k < k_nflags; ++k) agreed[k] = 0;
    return;
  }
  SPOTRUN_MPI_CHECK(MPI_Wait(&m_request, MPI_STATUS_IGNORE));
  for (int k = 0; k < k_nflags; ++k) agreed[k] = m_recv[k];
}

void StopAgreement::exchange(const int local[k_nflags], int agreed[k_nflags]) {
  complete(agreed);
  for (int k = 0; k < k_nflags; ++k) m_send[k] = local[k];
  SPOTRUN_MPI_CHECK(MPI_Iallreduce(m_send, m_recv, k_nflags, MPI_INT, MPI_MAX, m_comm, &m_request));
}

void StopAgreement::agree_now(const int local[k_nflags], int agreed[k_nflags]) {
  int pending[k_nflags];
  complete(pending);
  int mine[k_nflags];
  for (int k = 0; k < k_nflags; ++k) mine[k] = local[k] > pending[k] ? local[k] : pending[k];
  SPOTRUN_MPI_CHECK(MPI_Allreduce(mine, agreed, k_nflags, MPI_INT, MPI_MAX, m_comm));
}

}  // namespace spotrun::launcher
