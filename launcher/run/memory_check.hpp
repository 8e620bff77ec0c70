#pragma once
// Memory checks before large allocations: a system that cannot fit is refused with exit 2 before any
// rank allocates it, instead of being killed by the kernel (or swapping) part way into the set-up.
#include <cstdint>
#include <functional>
#include <string>

#include "comm/communicator.hpp"
#include "comm/device.hpp"

namespace spotrun::launcher {

// Bytes this process may still allocate on its node: /proc/meminfo's MemAvailable, lowered to what the
// memory cgroup (v2 memory.max, v1 memory.limit_in_bytes) leaves. -1 when nothing says.
double available_memory_bytes();

// Collective: every rank needs about `bytes_per_rank`; on each node the ranks there together must fit
// in the memory available on it. Otherwise throws InputError on every rank with a message naming
// `what`, the estimate and what is available.
void check_memory_fits(const comm::Communicator& comm, double bytes_per_rank, const std::string& what);

// --- device memory (docs/gpu.md, "Device memory") ---

// The rule of the device check: "" when `ranks_on_gpu` ranks needing `bytes_per_rank` each fit in the
// free memory of their GPU `gpu` on node `host`, else the refusal naming `what`, the need, the GPU and its
// free and total memory. A GPU that is not present passes.
std::string device_memory_refusal(double bytes_per_rank, int ranks_on_gpu, const comm::DeviceMemory& gpu,
                                  const std::string& host, const std::string& what);

// Where check_device_memory_fits() reads the memory of this rank's GPU: comm::device_memory(), unless a
// query is installed here (a test's made-up GPU); an empty one restores comm::device_memory().
using DeviceMemoryQuery = std::function<comm::DeviceMemory()>;
void set_device_memory_query(DeviceMemoryQuery query);

// Collective: every rank needs about `bytes_per_rank` of device memory; the ranks on one GPU of a node
// (the same UUID) must fit in its free memory together. Otherwise throws InputError on every rank
// (device_memory_refusal's message of the lowest rank refused). Nothing is checked, and nothing
// communicated, when bytes_per_rank is 0 (a host build's estimate, the same on every rank); a rank
// without a GPU passes.
void check_device_memory_fits(const comm::Communicator& comm, double bytes_per_rank, const std::string& what);

}  // namespace spotrun::launcher
