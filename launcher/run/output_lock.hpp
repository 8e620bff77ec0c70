#pragma once
// An output directory belongs to one run. Rank 0 holds an exclusive fcntl lock on OUTDIR/.spotrun.lock
// for the lifetime of the run; the file says who holds it (host, PID, start time). A second run into
// the same directory is refused (exit 2) naming the holder. A lock file left by a run that ended without
// releasing it (killed, or its node lost) is taken over with a warning: the kernel released its lock.
// On a file system without fcntl locks the holder's PID is checked instead (same host only).
#include <string>

#include "comm/communicator.hpp"
#include "io/run_directory.hpp"

namespace spotrun::launcher {

class OutputDirectoryLock {
 public:
  // Collective. Arms the write fence of attempt `launch_attempt` (launcher/run/fence.hpp; "" when not under
  // spotrun launch) and takes the lock (the directory must exist); throws InputError on every rank when
  // another run holds it.
  OutputDirectoryLock(const comm::Communicator& comm, const std::string& outdir, const std::string& launch_attempt);
  // Empties the lock file and releases the lock (rank 0).
  ~OutputDirectoryLock();
  OutputDirectoryLock(const OutputDirectoryLock&) = delete;
  OutputDirectoryLock& operator=(const OutputDirectoryLock&) = delete;

  static const char* file_name() { return io::k_lock_file; }  // io/run_directory.hpp

 private:
  int m_fd = -1;
};

}  // namespace spotrun::launcher
