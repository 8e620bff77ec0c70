#pragma once
// `spotrun launch DECK`: a supervisor for runs on ad hoc nodes (docs/cloud.md). It is a plain process
// without MPI: main() hands it the command line before MPI_Init, because an MPI_Init of its own (a
// singleton) would start an orted and tie the supervisor to the MPI library it watches. It starts Open
// MPI's mpirun on `spotrun run DECK`, watches it, reads OUTDIR/status.json when it ends (not only
// mpirun's exit code), and relaunches from the newest checkpoint on the hosts that are left, with as
// many ranks as fit (spotrun resumes on any rank count). Every attempt goes to OUTDIR/launch.log.
// Its parts (docs/layout.md): hosts.hpp (hostfiles, rank plans, host names), mpirun_output.hpp (what
// mpirun reports), grow.hpp (the decision to grow back), and, inside the library, supervisor.hpp (the loop
// over attempts), attempt.hpp (one attempt, its stop escalation), probe.hpp, fence.hpp (with
// fence_remote.sh), ledger.hpp, run_files.hpp, signals.hpp and this_machine.hpp.
#include "launcher/launch/grow.hpp"
#include "launcher/launch/hosts.hpp"
#include "launcher/launch/mpirun_output.hpp"

namespace spotrun::launcher {

// `spotrun launch ...` (argv[1] == "launch"); returns the exit code: 0 finished, 75 stopped on request
// (or by the run's time limit) with a checkpoint, 1 gave up, 2 bad usage or input.
int launch_main(int argc, char** argv);

}  // namespace spotrun::launcher
