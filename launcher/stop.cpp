#include "stop.hpp"

#include <cstring>

#include "comm/communicator.hpp"

namespace spotrun::launcher {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) {
  if (g_signal == 0) g_signal = sig;  // later signals (e.g. during the final checkpoint) change nothing
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

int received_signal() { return g_signal; }
void raise_stop_flag(int sig) { g_signal = sig; }

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
