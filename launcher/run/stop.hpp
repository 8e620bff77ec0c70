#pragma once
// Signals and collective stop decisions.
//
// From before MPI_Init until the run has prepared its output directory and knows whether it holds a
// checkpoint (SignalMode::start_up), a stop signal is recorded; at the end of that start-up every rank
// agrees on it and the run ends with the same message, status record and exit code as below (75 when the
// output directory holds a checkpoint). After it, outside the time loop (checkpoint reading, set-up,
// inspect, validate) a stop signal ends the process at once, with a message naming the phase: exit 75 when the output directory holds a checkpoint
// and nothing has been computed yet (run the same command to resume), else 128 + the signal number (130
// for SIGINT, 143 for SIGTERM), as shells expect. In the time loop the handler only records the signal;
// between steps every rank contributes its local flags to a non-blocking allreduce that is completed one
// step later, so all ranks act on the same verdict at the same step without a blocking collective per
// step, then write a checkpoint and exit 75. A second signal while that stop checkpoint (or the final
// state) is being written ends the process at once; the previous checkpoint stays valid (the new one is
// only a .tmp file until its rename).
#include <mpi.h>

#include <csignal>

#include "comm/communicator.hpp"

namespace spotrun::launcher {

// Installs handlers for SIGTERM, SIGINT, SIGUSR1, SIGUSR2 (SA_RESTART). Idempotent.
void install_stop_handlers();
// The first stop signal received by this process in the time loop, or 0.
int received_signal();
// Name of a signal number ("SIGTERM").
const char* signal_name(int sig);

enum class SignalMode : int {
  exit_now = 0,  // outside the time loop: a signal ends the process at once (the default)
  record = 1,    // in the time loop: a signal is recorded and stops the run at the next agreed step
  stopping = 2,  // writing the stop checkpoint or the final state: the first signal is recorded, a second
                 // one ends the process at once
  start_up = 3,  // from before MPI_Init until the run knows its output directory and whether it holds a
                 // checkpoint: the first signal is recorded and acted on at end_start_up(), a second one
                 // ends the process at once
};
// What a signal does from now on. `phase` (a string literal: it is read by the signal handler) names
// what the process is doing, for the message of a signal that ends it.
void set_signal_mode(SignalMode mode, const char* phase);
// Whether a signal that ends the process before the time loop exits with 75 (a checkpoint to resume from
// exists and nothing was computed yet) rather than 128 + the signal number.
void set_resumable_on_signal(bool resumable);
// A file descriptor the handler truncates to zero bytes before it ends the process (the output
// directory's lock file, so that its holder is not reported as a crashed run); -1: none.
void set_lock_fd_for_signal(int fd);
// A function the handler calls just before it ends the process at once, with the signal, the exit code
// and the parts of its message (`why`: " during " or " again while "; `phase`: set_signal_mode's); it
// must be async-signal-safe. It writes the end record of OUTDIR/status.json (launcher/run/run_status.hpp).
// nullptr: none.
using EndNowHook = void (*)(int sig, int code, const char* why, const char* phase);
void set_end_now_hook(EndNowHook hook);

// The end of the start-up (collective): every rank agrees whether a stop signal arrived while the mode
// was start_up, and the mode becomes exit_now with `next_phase`. Returns 0 when none did; else, after the
// message and the end record of a signal (as set_end_now_hook's hook writes it), the exit code to return:
// 75 when set_resumable_on_signal(true) was called (a checkpoint to resume from exists), else 128 + the
// signal number.
int end_start_up(const comm::Communicator& comm, const char* next_phase);

enum StopFlag : int {
  k_flag_signal = 0,      // a stop signal arrived on some rank
  k_flag_checkpoint = 1,  // a wall-clock checkpoint is due on some rank
  k_flag_time_limit = 2,  // the time limit (minus reserve) is reached on some rank
  k_flag_spot_notice = 3, // a spot notice was seen on some node (launcher/run/spot_notices.hpp)
  k_nflags = 4,
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
  int m_send[k_nflags] = {};
  int m_recv[k_nflags] = {};
};

}  // namespace spotrun::launcher
