#pragma once
// What mpirun's output says about hosts and ranks (scan_mpirun_line and hosts_lost_by_mpirun are pure,
// tested in tests/test_launch.cpp), and MpirunOutput, which passes that output on as it comes.
#include <poll.h>

#include <string>
#include <vector>

namespace spotrun::launcher {

// What a line of mpirun's output says about hosts and ranks.
struct MpirunNotes {
  std::vector<std::string> lost_hosts;  // hosts mpirun lost ("Remote daemon: ... on node H") or could not
                                        // start the program on ("encountered an error on node H")
  std::vector<std::string> events;      // "rank 1 on node H exited on signal 9 (Killed)", ...
};
void scan_mpirun_line(const std::string& line, MpirunNotes& notes);

// The hostfile entries (`hosts`) that mpirun's reports (`reported`, MpirunNotes::lost_hosts) name as
// failed, to be left out of relaunches; `self` as for same_host. Loopback entries never are. When launch
// ended the attempt itself with a fence, the hosts that answered it (`fence_answered`) are not either:
// the fence kills mpirun's daemons too, and mpirun may report them lost before it is killed in turn.
std::vector<std::string> hosts_lost_by_mpirun(const std::vector<std::string>& reported,
                                              const std::vector<std::string>& hosts,
                                              const std::vector<std::string>& fence_answered, const std::string& self);

namespace impl {

// mpirun's stdout and stderr pipes: what comes is written to this process's stdout and stderr as it comes,
// and scanned line by line (scan_mpirun_line) into `notes`.
class MpirunOutput {
 public:
  MpirunOutput(int out_fd, int err_fd, MpirunNotes& notes) : m_fd{out_fd, err_fd}, m_notes(notes) {}
  ~MpirunOutput() { close(); }
  MpirunOutput(const MpirunOutput&) = delete;
  MpirunOutput& operator=(const MpirunOutput&) = delete;
  // Appends a pollfd for each pipe still open.
  void add_to(std::vector<pollfd>& fds) const;
  // Reads what poll() found on the pipes among `fds`; a pipe at its end is closed.
  void read(const std::vector<pollfd>& fds);
  bool closed() const { return m_fd[0] < 0 && m_fd[1] < 0; }
  void close();

 private:
  int m_fd[2];
  std::string m_pending[2];
  MpirunNotes& m_notes;
};

}  // namespace impl
}  // namespace spotrun::launcher
