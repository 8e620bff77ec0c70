#pragma once
// Memory checks before large allocations: a system that cannot fit is refused with exit 2 before any
// rank allocates it, instead of being killed by the kernel (or swapping) part way into the set-up.
#include <cstdint>
#include <string>

#include "comm/communicator.hpp"

namespace spotrun::launcher {

// Bytes this process may still allocate on its node: /proc/meminfo's MemAvailable, lowered to what the
// memory cgroup (v2 memory.max, v1 memory.limit_in_bytes) leaves. -1 when nothing says.
double available_memory_bytes();

// Collective: every rank needs about `bytes_per_rank`; on each node the ranks there together must fit
// in the memory available on it. Otherwise throws InputError on every rank with a message naming
// `what`, the estimate and what is available.
void check_memory_fits(const comm::Communicator& comm, double bytes_per_rank, const std::string& what);

}  // namespace spotrun::launcher
