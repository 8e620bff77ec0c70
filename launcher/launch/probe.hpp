#pragma once
// Probes of hosts by `spotrun launch`: a command run on each host at once through mpirun (-H HOST -np 1),
// each with --probe-timeout to answer. The default command, nproc, tells whether a host answers and how
// many cores it has; the fence (fence.hpp) runs its script the same way.
#include <string>
#include <vector>

#include "launcher/launch/signals.hpp"

namespace spotrun::launcher::impl {

struct ProbeResult {
  bool ok = false;
  int cores = 0;
  std::string why;
  bool answered = false;  // the command ran and exited 0
  std::string output;
};

struct Prober {
  std::string mpirun;
  std::vector<std::string> mpirun_args;  // the user's (after --): those that say how to reach the hosts are used
  double timeout = 10;                   // --probe-timeout
};

// Runs `command` on each of `hosts` at once; a stop request (noted in `stop`) ends the probes that are left.
std::vector<ProbeResult> probe_hosts(const Prober& prober, const std::vector<std::string>& hosts,
                                     const std::vector<std::string>& command, StopRequests& stop);

}  // namespace spotrun::launcher::impl
