#pragma once
// Signals and collective stop decisions. A signal handler only records the signal; between steps
// every rank contributes its local flags to a non-blocking allreduce that is completed one step
// later, so all ranks act on the same verdict at the same step without a blocking collective per step.
#include <mpi.h>

#include <csignal>

namespace spotrun::launcher {

// Installs handlers for SIGTERM, SIGINT, SIGUSR1, SIGUSR2 (SA_RESTART). Idempotent.
void install_stop_handlers();
// The first stop signal received by this process, or 0.
int received_signal();
// Name of a signal number ("SIGTERM").
const char* signal_name(int sig);
// For tests: pretend a signal arrived.
void raise_stop_flag(int sig);

enum StopFlag : int {
  k_flag_signal = 0,      // a stop signal arrived on some rank
  k_flag_checkpoint = 1,  // a wall-clock checkpoint is due on some rank
  k_flag_time_limit = 2,  // the time limit (minus reserve) is reached on some rank
  k_nflags = 3,
};

class StopAgreement {
 public:
  explicit StopAgreement(MPI_Comm comm) : m_comm(comm) {}
  ~StopAgreement();
  // Called once per step on every rank with this rank's local flags. Returns (in `agreed`) the global
  // OR of the flags posted at the previous call, identical on every rank.
  void exchange(const int local[k_nflags], int agreed[k_nflags]);
  // Blocking variant: agrees on the current flags right now (at a stop or the end).
  void agree_now(const int local[k_nflags], int agreed[k_nflags]);

 private:
  void complete(int agreed[k_nflags]);
  MPI_Comm m_comm;
  MPI_Request m_request = MPI_REQUEST_NULL;
  int m_send[k_nflags] = {0, 0, 0};
  int m_recv[k_nflags] = {0, 0, 0};
};

}  // namespace spotrun::launcher
