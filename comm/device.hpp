#pragma once
// Which GPU each rank runs on (docs/gpu.md, "GPU binding"). Before Kokkos starts, every rank takes its
// node-local rank (the launcher's SLURM_LOCALID or OMPI_COMM_WORLD_LOCAL_RANK when they number the
// node's ranks consistently, else the rank of MPI_Comm_split_type's shared-memory split) modulo the number
// of devices it sees (CUDA_VISIBLE_DEVICES applied, MIG instances included), and main() hands that index
// to Kokkos. After Kokkos has started, every rank describes the device Kokkos runs on; the descriptions,
// gathered, feed `spotrun info`, the run header and the transport choice (NCCL refuses two ranks on one
// GPU). On a CPU build nothing is bound and every rank reports "no GPU (CPU build)".
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "communicator.hpp"

namespace spotrun::comm {

// What this process's environment says about its place and its device, as the program read it at its start
// (spotrun: launcher::Environment, launcher/environment.hpp); nothing in comm/ reads the environment itself.
// An unset variable is "", as is an empty one.
struct DeviceEnvironment {
  std::string slurm_localid;         // SLURM_LOCALID: srun's node-local rank
  std::string ompi_local_rank;       // OMPI_COMM_WORLD_LOCAL_RANK: Open MPI's node-local rank
  std::string cuda_visible_devices;  // CUDA_VISIBLE_DEVICES: the devices CUDA shows, in order (MIG-... an instance)
  std::string cpu_bind;              // SPOTRUN_CPU_BIND: auto, gpu or none (cpu_binding.hpp)
  bool kokkos_device_chosen = false;  // KOKKOS_DEVICE_ID, KOKKOS_MAP_DEVICE_ID_BY or KOKKOS_NUM_DEVICES is set
};

// This rank's place on its node and the device chosen for it; bind_device() makes it before Kokkos starts.
struct DeviceBinding {
  int local_rank = 0;           // node-local rank
  int local_size = 1;           // ranks on this node
  std::string local_rank_from;  // "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK" or "MPI_Comm_split_type"
  int device_count = 0;         // CUDA devices this rank sees; 0 on a CPU build
  int device = -1;              // local_rank % device_count; -1: none (CPU build, or no device visible)
  std::string cpu_binding;      // what bind_cpus did (cpu_binding.hpp): "bound near GPU 0: CPUs 0-7 of ..."
  bool kokkos_device_chosen = false;  // the environment chose Kokkos' device (DeviceEnvironment)
};

// Collective over `comm`; uses MPI, the CUDA runtime and hwloc only, so it runs before Kokkos::initialize.
// After choosing the device, binds the process to CPUs near it (cpu_binding.hpp; env.cpu_bind, the
// SPOTRUN_CPU_BIND of the environment): a bad value on any rank throws InputError (comm/errors.hpp) on every
// rank. `env` is kept as this process's: gather_devices() and device_memory() read it, and bind_device(comm)
// binds again with it (an empty one until the first call).
DeviceBinding bind_device(MPI_Comm comm, const DeviceEnvironment& env);
DeviceBinding bind_device(MPI_Comm comm);

// This process's host name (MPI_Get_processor_name), as `spotrun info`, the doctor and the spot notice
// record name it; the test hook TestHooks::host_name replaces it (comm/test_hooks.hpp).
std::string host_name();

// The Kokkos command-line option that puts Kokkos on binding.device ("--kokkos-device-id=N"), or "" when
// there is no device to bind or the user chose one (--kokkos-device-id, --kokkos-map-device-id-by or
// --kokkos-num-devices among kokkos_args, or KOKKOS_DEVICE_ID / KOKKOS_MAP_DEVICE_ID_BY /
// KOKKOS_NUM_DEVICES in the environment: binding.kokkos_device_chosen). Appended to Kokkos' own options,
// it keeps them all working.
std::string kokkos_device_option(const DeviceBinding& binding, const std::vector<std::string>& kokkos_args);

// The memory of the GPU this rank runs on, after Kokkos::initialize: free and total bytes as
// cudaMemGetInfo gives them, and the GPU's UUID (a MIG instance's own), which tells the ranks of a node
// that share it. present = false on a CPU build. Throws std::runtime_error naming a failed CUDA call.
struct DeviceMemory {
  bool present = false;
  double free_bytes = 0;
  double total_bytes = 0;
  std::string id;
};
DeviceMemory device_memory();

// --- pure rules (tests/test_device.cpp tries them with made-up inputs) --------------------------------

// launcher_ranks[i]: the node-local rank the launcher gives the node's i-th rank in MPI_Comm_split_type
// order (-1: none). Taken when they number the node's ranks 0..n-1, each once; otherwise split_rank.
int choose_local_rank(const std::vector<int>& launcher_ranks, int split_rank);
// local_rank modulo device_count; -1 when there is no device.
int choose_device(int local_rank, int device_count);

// What one rank runs on, as `spotrun info` and the run header list it.
struct DeviceInfo {
  int rank = 0;
  std::string host;
  int node = 0;        // the lowest world rank on this rank's node (identifies the node)
  int local_rank = 0;
  int gpu = -1;        // CUDA device index as this rank sees it; -1: no GPU
  std::string none_reason;  // why there is no GPU ("CPU build", "no CUDA device visible: ...")
  std::string uuid;    // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", or the MIG instance's "MIG-..."
  std::string name;
  bool mig = false;    // a MIG instance rather than a whole GPU
  std::uint64_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  std::string pci_bus_id;            // the physical GPU ("0000:41:00.0"); MIG instances of one GPU share it
  std::vector<std::string> visible;  // UUIDs of every device this rank sees, by CUDA index
  std::string cpu_binding;           // bind_cpus' note (cpu_binding.hpp); "" where it had nothing to say
};

// Every rank's DeviceInfo, in rank order, on every rank (collective). After Kokkos::initialize: the GPU
// is the one Kokkos runs on.
std::vector<DeviceInfo> gather_devices(const Communicator& comm);

// The verdict on a set of ranks' devices.
struct DeviceReport {
  bool every_rank_has_gpu = false;
  // Groups of ranks of one node on one GPU (the same UUID), each of two or more ranks.
  std::vector<std::vector<int>> shared;
  // Groups of ranks of one node on one physical GPU (the same PCI bus ID): the shared ones, and MIG
  // instances of one GPU. NCCL refuses every such group ("Duplicate GPU detected").
  std::vector<std::vector<int>> same_physical_gpu;
  // "WARNING: ..." lines: GPUs shared by ranks, GPUs of a node that no rank uses.
  std::vector<std::string> warnings;
  // Why NCCL cannot run on these devices, naming the ranks ("ranks 0 and 1 share GPU 0 (UUID ...) of node
  // n1"); empty when it can (every rank has its own physical GPU).
  std::string nccl_refusal;
};
DeviceReport analyse_devices(const std::vector<DeviceInfo>& ranks);

// One line per rank ("rank 0: host n1, local rank 0, GPU 0 GPU-..., NVIDIA H200, whole GPU, 139.8 GiB,
// compute capability 9.0", or "... no GPU (CPU build)").
std::vector<std::string> device_lines(const std::vector<DeviceInfo>& ranks);

// "ranks 0, 1 and 2" / "rank 3".
std::string rank_list(const std::vector<int>& ranks);

// One rank's DeviceInfo as text for a gather, and back (decode throws std::runtime_error on bad text).
std::string encode_device_info(const DeviceInfo& info);
DeviceInfo decode_device_info(const std::string& text);

}  // namespace spotrun::comm
