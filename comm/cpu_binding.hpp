#pragma once
// Each rank's CPU cores near its GPU (docs/gpu.md, "CPU binding"). On a node with several GPUs, the cores
// that a GPU's PCIe root hangs off (its NUMA domain) reach it without crossing the socket interconnect:
// the host side of every halo, staging copy and kernel launch is faster there. After the GPU is chosen
// and before Kokkos starts (so every thread it and the run start inherits the binding), every rank asks
// hwloc which CPUs are near its GPU (the PCI device's local CPUs, hwloc/cudart.h); the node's ranks whose
// GPUs are near the same CPUs split those cores among them in node-local-rank order, and each binds its
// process to its share (hwloc_set_cpubind).
//
// SPOTRUN_CPU_BIND chooses:
//   auto (default)  bind, unless the launcher already bound the process to fewer CPUs than it may use
//                   (mpirun --bind-to core, srun --cpu-bind=cores, taskset): that binding is kept
//   gpu             bind, replacing the launcher's binding
//   none            never bind
// A CPU build, or a rank without a GPU, binds nothing.
#include <mpi.h>

#include <string>
#include <vector>

namespace spotrun::comm {

enum class CpuBindMode { automatic, gpu, none };

// SPOTRUN_CPU_BIND's value ("" or unset: auto); throws std::invalid_argument naming the variable, the value
// and the allowed ones.
CpuBindMode cpu_bind_mode(const char* value);

// What bind_cpus did on this rank: `cpus` is the process's CPU list afterwards ("0-7,64-71"), `note` says
// why ("bound near GPU 0: share 1 of 4 of CPUs 0-31", "bound by the launcher to CPUs 3: kept ...", ...).
struct CpuBinding {
  bool bound = false;
  std::string cpus;
  std::string note;
};

// Collective over the ranks of `comm` (it splits them by node). device: this rank's CUDA device index,
// -1 for none. Throws only where an MPI call fails: a failed hwloc call leaves the process as it was and
// says so in `note` (empty on a rank without a GPU, where there is nothing to say).
CpuBinding bind_cpus(MPI_Comm comm, int local_rank, int device, CpuBindMode mode);

// The binding this process made (or not) in bind_cpus; empty fields before it ran.
const CpuBinding& cpu_binding();

// The CPUs this process is bound to now, as hwloc lists them ("0-7"); "?" where hwloc cannot say.
std::string current_cpus();

// --- the pure rule (tests/test_cpu_binding.cpp tries it with made-up topologies) ---------------------

// cores: the cores near the GPU that the process may use, each the list of its hardware threads (OS
// indices), in topology order. The `count` ranks near them take contiguous blocks of whole cores, the
// `index`-th rank the index-th block (sizes differing by at most one core); with fewer cores than ranks,
// the hardware threads are split the same way; with fewer threads than ranks, every rank gets all of
// them. Empty when cores is empty or index is outside 0..count-1.
std::vector<int> share_of_cores(const std::vector<std::vector<int>>& cores, int index, int count);

}  // namespace spotrun::comm
