#pragma once
// Write fencing by attempt id (docs/cloud.md, "Fencing"). `spotrun launch` names each attempt in the
// environment of its ranks (SPOTRUN_LAUNCH_ATTEMPT) and writes the id of the current attempt into
// OUTDIR/attempt (atomically: a temporary file renamed over it) before it starts that attempt's mpirun.
// A rank of an older attempt that comes back (a healed partition, a frozen machine that resumes) must not
// write into the run: before every write into the output directory -- the lock file, status.json, thermo
// rows, trajectory and field frames, checkpoints and final.h5, heartbeats -- the writer checks that its
// attempt is still the one OUTDIR/attempt names, and if not, prints why and ends its process at once with
// exit code 77 (k_exit_fenced), writing nothing (no destructor runs: _exit). The other ranks of that
// attempt are then blocked in their next collective with it, and end with mpirun or their watchdog.
//
// A run not started by spotrun launch (no SPOTRUN_LAUNCH_ATTEMPT) is never fenced. A missing or unreadable
// OUTDIR/attempt does not fence either (a launch of an earlier spotrun, a file system hiccup): only a file
// that names another attempt does. The check reads the file itself (open, read, close): on NFS, open()
// revalidates it (close-to-open consistency), so a rank sees the switch as soon as launch closed the file.
// What the check cannot stop is a write already under way when the rank froze (a write blocked in an NFS
// hard mount that completes after the partition heals): that takes fencing by the storage itself.
#include <string>

#include "io/run_directory.hpp"

namespace spotrun::launcher {

constexpr int k_exit_fenced = 77;

// The file that names the current attempt, relative to the output directory.
constexpr const char* k_attempt_file = io::k_attempt_file;  // io/run_directory.hpp

// Arms the fence for output directory `outdir` as attempt `launch_attempt` (SPOTRUN_LAUNCH_ATTEMPT as the
// command read it, launcher/environment.hpp; no-op when ""). Called once, before the first write into the
// directory (the lock), before any thread that checks starts.
void arm_attempt_fence(const std::string& outdir, const std::string& launch_attempt);

// This process's attempt ("" when not under spotrun launch).
const std::string& own_attempt();

// "" when this process may write (not armed, not under launch, or OUTDIR/attempt names its attempt or
// cannot be read); else the attempt OUTDIR/attempt names now.
std::string fenced_by();

// Before a write of `what` ("a thermo row", "status.json", ...): ends the process with exit 77 and a
// message naming both attempts when it is fenced. Any thread, any rank.
void check_attempt_fence(const char* what);

// The same for a signal handler (async-signal-safe): true when the process is fenced.
bool fenced_signal_safe();

}  // namespace spotrun::launcher
