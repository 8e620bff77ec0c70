#pragma once
// `spotrun launch DECK`: a supervisor for runs on ad hoc nodes (docs/cloud.md). It is a plain process
// without MPI: main() hands it the command line before MPI_Init, because an MPI_Init of its own (a
// singleton) would start an orted and tie the supervisor to the MPI library it watches. It starts Open
// MPI's mpirun on `spotrun run DECK`, watches it, reads OUTDIR/status.json when it ends (not only
// mpirun's exit code), and relaunches from the newest checkpoint on the hosts that are left, with as
// many ranks as fit (spotrun resumes on any rank count). Every attempt goes to OUTDIR/launch.log.
#include <string>
#include <vector>

namespace spotrun::launcher {

// One line of an Open MPI hostfile: "HOST [slots=N] [max_slots=M]".
struct HostEntry {
  std::string name;
  int slots = 0;  // 0: not given (the host's cores, as its probe reports them)
};

// Parses an Open MPI hostfile (comments after '#', one host per line, a host named twice adds its
// slots). Throws InputError naming `name`, the line and the problem, or when it names no host.
std::vector<HostEntry> parse_hostfile(const std::string& text, const std::string& name);

struct Placement {
  std::string host;
  int ranks = 0;
};
// Places min(wanted, total capacity) ranks (wanted <= 0: the whole capacity) on the hosts in order,
// filling each up to its capacity, as Open MPI maps by slot. Hosts that get no rank are left out.
std::vector<Placement> plan_ranks(const std::vector<Placement>& capacity, int wanted);

// Whether the host mpirun names in a message (a short host name, without the domain unless Open MPI
// keeps it) is hostfile entry `entry`; `self`: this machine's host name, which loopback entries
// (localhost, 127.0.0.1, ::1) stand for.
bool same_host(const std::string& entry, const std::string& reported, const std::string& self);

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

// Growing back (spotrun launch --grow, docs/cloud.md): whether to stop an attempt of `old_ranks` ranks at
// a checkpoint and relaunch it on `new_ranks`. The cost of the relaunch is what the attempts so far took
// from the end of the previous attempt to their first step (`relaunch_seconds`: probes, mpirun, start-up,
// the checkpoint read) plus the stop checkpoint (`stop_checkpoint_seconds`) plus the steps redone
// (`redone_steps` x `step_seconds`; 0 after a stop with a checkpoint); the saving is the time the steps left
// take now less what they would take on more ranks, assuming the step time scales as 1 / ranks:
// `remaining_steps` x `step_seconds` x (1 - old_ranks / new_ranks). It grows when the saving is larger.
struct GrowEstimate {
  double cost = 0, saving = 0;
  bool worth = false;
  std::string text;  // "relaunch 4.1 s (...) < saving 12.3 s (...)"
};
GrowEstimate grow_estimate(long long remaining_steps, double step_seconds, int old_ranks, int new_ranks,
                           double relaunch_seconds, double stop_checkpoint_seconds, long long redone_steps = 0);

// `spotrun launch ...` (argv[1] == "launch"); returns the exit code: 0 finished, 75 stopped on request
// (or by the run's time limit) with a checkpoint, 1 gave up, 2 bad usage or input.
int launch_main(int argc, char** argv);

}  // namespace spotrun::launcher
