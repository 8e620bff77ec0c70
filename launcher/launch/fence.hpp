#pragma once
// Fencing of `spotrun launch` (the ranks' side: launcher/run/fence.hpp). 1: OUTDIR/attempt names the
// attempt about to start, before its mpirun does (io::write_attempt_file, io/run_directory.hpp); a rank of
// an earlier attempt that reads it stops without writing (exit 77). 2: when an attempt is ended, every
// process of it (those whose environment holds SPOTRUN_LAUNCH_ATTEMPT=<its id>, never chosen by name) on
// each of its hosts that answers is killed, by fence_remote.sh run there through mpirun; a host that does
// not answer within --probe-timeout is not used again.
#include <string>
#include <vector>

#include "launcher/launch/probe.hpp"

namespace spotrun::launcher::impl {

// Fencing, 2: the command that runs fence_remote.sh for attempt `id` on a host.
std::vector<std::string> fence_command(const std::string& id);
// The count of processes a host's fence killed, from its output ("fenced N"), or -1 when there is none.
long long fenced_count(const std::string& output);
// Runs the fence of attempt `id` on `hosts`; `killed`: each host's count, -1 where it did not answer.
std::vector<ProbeResult> fence_hosts(const Prober& prober, const std::vector<std::string>& hosts,
                                     const std::string& id, StopRequests& stop, std::vector<long long>& killed);

}  // namespace spotrun::launcher::impl
