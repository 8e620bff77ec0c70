// GPU binding and the description of every rank's device (device.hpp, docs/gpu.md). CUDA runtime calls
// only on a CUDA build of Kokkos (KOKKOS_ENABLE_CUDA); every one is checked.
#include "device.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "agreed_step.hpp"
#include "cpu_binding.hpp"
#include "errors.hpp"
#include "test_hooks.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include "cuda_check.hpp"
#endif

namespace spotrun::comm {
namespace {

// This process's environment, as bind_device() was given it (DeviceEnvironment: read by the program).
DeviceEnvironment& process_environment() {
  static DeviceEnvironment env;
  return env;
}

// A non-negative integer of the environment ("" when unset), or -1 when unset or not a plain number.
int env_int(const std::string& text) {
  if (text.empty()) return -1;
  long n = 0;
  for (const char* p = text.c_str(); *p; ++p) {
    if (*p < '0' || *p > '9' || n > 1000000) return -1;
    n = n * 10 + (*p - '0');
  }
  return static_cast<int>(n);
}

// Whether a launcher's local ranks of a node's ranks number them 0..n-1, each once.
bool numbers_the_node(const std::vector<int>& launcher_ranks) {
  std::vector<int> sorted = launcher_ranks;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int>(i)) return false;
  return true;
}

struct NodePlace {
  int local_rank = 0;
  int local_size = 1;
  int node = 0;  // lowest world rank of the node
  std::string from;
};

// Collective over comm: the shared-memory split, then the launcher's local ranks checked across the node.
NodePlace node_place(MPI_Comm comm) {
  int rank = 0;
  SPOTRUN_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm node;
  SPOTRUN_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  NodePlace p;
  int split_rank = 0;
  SPOTRUN_MPI_CHECK(MPI_Comm_rank(node, &split_rank));
  SPOTRUN_MPI_CHECK(MPI_Comm_size(node, &p.local_size));
  const char* names[2] = {"SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"};
  const DeviceEnvironment& env = process_environment();
  int mine[2] = {env_int(env.slurm_localid), env_int(env.ompi_local_rank)};
  std::vector<int> all(2 * static_cast<std::size_t>(p.local_size));
  SPOTRUN_MPI_CHECK(MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, node));
  p.node = rank;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &p.node, 1, MPI_INT, MPI_MIN, node));
  MPI_Comm_free(&node);
  // The first launcher variable that numbers the node's ranks consistently wins (under mpirun in a Slurm
  // allocation every rank inherits the batch shell's SLURM_LOCALID=0: not consistent, so Open MPI's).
  p.local_rank = split_rank;
  p.from = "MPI_Comm_split_type";
  for (int k = 0; k < 2; ++k) {
    std::vector<int> launcher(static_cast<std::size_t>(p.local_size));
    for (int i = 0; i < p.local_size; ++i) launcher[i] = all[2 * i + k];
    if (!numbers_the_node(launcher)) continue;
    p.local_rank = choose_local_rank(launcher, split_rank);
    p.from = names[k];
    break;
  }
  return p;
}

#if defined(KOKKOS_ENABLE_CUDA)
// The entries of CUDA_VISIBLE_DEVICES, in order (entry i is CUDA device i).
std::vector<std::string> visible_devices_variable() {
  std::vector<std::string> out;
  std::stringstream s(process_environment().cuda_visible_devices);
  std::string item;
  while (std::getline(s, item, ',')) {
    const auto a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    out.push_back(a == std::string::npos ? std::string() : item.substr(a, b - a + 1));
  }
  return out;
}

// The UUID of CUDA device i: the MIG instance's when CUDA_VISIBLE_DEVICES names one there, else the
// device's own (cudaDeviceProp::uuid) as nvidia-smi writes it.
std::string device_uuid(const cudaDeviceProp& p, int i, const std::vector<std::string>& visible_variable) {
  if (i < static_cast<int>(visible_variable.size()) && visible_variable[i].rfind("MIG-", 0) == 0)
    return visible_variable[i];
  const auto* b = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}
#endif

// This rank's device: the one Kokkos runs on once it is initialised, else the binding's choice.
DeviceInfo describe_device(const Communicator& comm, const NodePlace& place) {
  DeviceInfo info;
  info.rank = comm.rank();
  info.host = host_name();
  info.node = place.node;
  info.local_rank = place.local_rank;
  // Where binding near a GPU was tried: the CPUs the process runs on now, and why.
  if (!cpu_binding().note.empty()) info.cpu_binding = "CPUs " + current_cpus() + " (" + cpu_binding().note + ")";
#if defined(KOKKOS_ENABLE_CUDA)
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (e != cudaSuccess) (void)cudaGetLastError();  // reset the runtime's last error: it is reported here
    info.none_reason = std::string("no CUDA device visible") + (e != cudaSuccess ? std::string(": ") + cudaGetErrorString(e) : "");
    return info;
  }
  const auto variable = visible_devices_variable();
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p;
    check_cuda(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties");
    info.visible.push_back(device_uuid(p, i, variable));
  }
  info.gpu = Kokkos::is_initialized() ? Kokkos::Cuda().cuda_device() : choose_device(place.local_rank, count);
  cudaDeviceProp p;
  check_cuda(cudaGetDeviceProperties(&p, info.gpu), "cudaGetDeviceProperties");
  info.uuid = info.visible[static_cast<std::size_t>(info.gpu)];
  info.mig = info.uuid.rfind("MIG-", 0) == 0;
  info.name = p.name;
  info.memory_bytes = p.totalGlobalMem;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  char bus[32] = {};
  check_cuda(cudaDeviceGetPCIBusId(bus, sizeof bus, info.gpu), "cudaDeviceGetPCIBusId");
  info.pci_bus_id = bus;
#else
  info.none_reason = "CPU build";
#endif
  return info;
}

}  // namespace

DeviceMemory device_memory() {
  DeviceMemory m;
#if defined(KOKKOS_ENABLE_CUDA)
  const int gpu = Kokkos::Cuda().cuda_device();
  check_cuda(cudaSetDevice(gpu), "cudaSetDevice");
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  cudaDeviceProp p;
  check_cuda(cudaGetDeviceProperties(&p, gpu), "cudaGetDeviceProperties");
  m.present = true;
  m.free_bytes = static_cast<double>(free_bytes);
  m.total_bytes = static_cast<double>(total_bytes);
  m.id = device_uuid(p, gpu, visible_devices_variable());
#endif
  return m;
}

namespace {

constexpr char k_field = '\x1f';
constexpr char k_item = '\x1e';

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

}  // namespace

std::string host_name() {
  // A test hook: several "hosts" on one machine (comm/test_hooks.hpp).
  if (const auto& hook = test_hooks().host_name)
    if (std::string name = hook(); !name.empty()) return name;
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  SPOTRUN_MPI_CHECK(MPI_Get_processor_name(name, &len));
  return std::string(name, static_cast<std::size_t>(len));
}


int choose_local_rank(const std::vector<int>& launcher_ranks, int split_rank) {
  if (!numbers_the_node(launcher_ranks) || split_rank < 0 || split_rank >= static_cast<int>(launcher_ranks.size())) return split_rank;
  return launcher_ranks[static_cast<std::size_t>(split_rank)];
}

int choose_device(int local_rank, int device_count) { return device_count > 0 ? local_rank % device_count : -1; }

DeviceBinding bind_device(MPI_Comm comm, const DeviceEnvironment& env) {
  process_environment() = env;
  return bind_device(comm);
}

DeviceBinding bind_device(MPI_Comm comm) {
  const DeviceEnvironment& env = process_environment();
  const NodePlace place = node_place(comm);
  DeviceBinding b;
  b.local_rank = place.local_rank;
  b.local_size = place.local_size;
  b.local_rank_from = place.from;
#if defined(KOKKOS_ENABLE_CUDA)
  // No device, or no driver: Kokkos' own start-up then says what is wrong.
  if (cudaGetDeviceCount(&b.device_count) != cudaSuccess) {
    (void)cudaGetLastError();
    b.device_count = 0;
  }
  b.device = choose_device(b.local_rank, b.device_count);
#endif
  // A bad SPOTRUN_CPU_BIND on any rank stops every rank, before bind_cpus' collectives.
  CpuBindMode mode = CpuBindMode::automatic;
  std::string bad;
  try {
    mode = cpu_bind_mode(env.cpu_bind.c_str());
  } catch (const std::invalid_argument& e) {
    bad = e.what();
  }
  int any_bad = bad.empty() ? 0 : 1;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &any_bad, 1, MPI_INT, MPI_MAX, comm));
  if (any_bad)
    throw InputError(!bad.empty() ? bad : "SPOTRUN_CPU_BIND: another rank's value is not auto, gpu or none");
  b.cpu_binding = bind_cpus(comm, b.local_rank, b.device, mode).note;
  b.kokkos_device_chosen = env.kokkos_device_chosen;
  return b;
}

std::string kokkos_device_option(const DeviceBinding& binding, const std::vector<std::string>& kokkos_args) {
  if (binding.device < 0) return {};
  for (const auto& a : kokkos_args)
    for (const char* chosen : {"--kokkos-device-id", "--kokkos-map-device-id-by", "--kokkos-num-devices"})
      if (a.rfind(chosen, 0) == 0) return {};
  if (binding.kokkos_device_chosen) return {};
  return "--kokkos-device-id=" + std::to_string(binding.device);
}

std::string encode_device_info(const DeviceInfo& d) {
  std::string visible;
  for (std::size_t i = 0; i < d.visible.size(); ++i) visible += (i ? std::string(1, k_item) : std::string()) + d.visible[i];
  std::ostringstream s;
  s << d.rank << k_field << d.host << k_field << d.node << k_field << d.local_rank << k_field << d.gpu << k_field
    << d.none_reason << k_field << d.uuid << k_field << d.name << k_field << (d.mig ? 1 : 0) << k_field << d.memory_bytes
    << k_field << d.cc_major << k_field << d.cc_minor << k_field << d.pci_bus_id << k_field << visible << k_field << d.cpu_binding;
  return s.str();
}

DeviceInfo decode_device_info(const std::string& text) {
  const auto f = split(text, k_field);
  if (f.size() != 15) throw std::runtime_error("decode_device_info: " + std::to_string(f.size()) + " fields, expected 15");
  DeviceInfo d;
  try {
    d.rank = std::stoi(f[0]);
    d.host = f[1];
    d.node = std::stoi(f[2]);
    d.local_rank = std::stoi(f[3]);
    d.gpu = std::stoi(f[4]);
    d.none_reason = f[5];
    d.uuid = f[6];
    d.name = f[7];
    d.mig = f[8] == "1";
    d.memory_bytes = std::stoull(f[9]);
    d.cc_major = std::stoi(f[10]);
    d.cc_minor = std::stoi(f[11]);
  } catch (const std::logic_error&) {
    throw std::runtime_error("decode_device_info: a number field is not a number");
  }
  d.pci_bus_id = f[12];
  if (!f[13].empty()) d.visible = split(f[13], k_item);
  d.cpu_binding = f[14];
  return d;
}

std::vector<DeviceInfo> gather_devices(const Communicator& comm) {
  const NodePlace place = node_place(comm.mpi());
  std::string mine;
  // A failing CUDA query on one rank must not leave the others waiting in the gather.
  agreed_step<RunError>(comm, "describing the GPUs: ",
                                  [&] { mine = encode_device_info(describe_device(comm, place)); });
  std::vector<DeviceInfo> out;
  for (const auto& t : comm.all_gather(mine)) out.push_back(decode_device_info(t));
  return out;
}

std::string rank_list(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no rank";
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return s;
}

DeviceReport analyse_devices(const std::vector<DeviceInfo>& ranks) {
  DeviceReport r;
  r.every_rank_has_gpu = !ranks.empty();
  std::map<std::pair<int, std::string>, std::vector<int>> by_uuid, by_physical;
  std::map<int, const DeviceInfo*> by_rank;
  std::vector<int> without;
  for (const auto& d : ranks) {
    by_rank[d.rank] = &d;
    if (d.gpu < 0) {
      r.every_rank_has_gpu = false;
      without.push_back(d.rank);
      continue;
    }
    by_uuid[{d.node, d.uuid}].push_back(d.rank);
    by_physical[{d.node, d.pci_bus_id.empty() ? d.uuid : d.pci_bus_id}].push_back(d.rank);
  }
  std::vector<std::string> refusals;
  if (!without.empty()) {
    const DeviceInfo& first = *by_rank[without.front()];
    refusals.push_back(rank_list(without) + (without.size() == 1 ? " has" : " have") + " no GPU (" + first.none_reason + ")");
  }
  for (const auto& [key, group] : by_uuid) {
    if (group.size() < 2) continue;
    r.shared.push_back(group);
    const DeviceInfo& d = *by_rank[group.front()];
    const std::string what = rank_list(group) + " share GPU " + std::to_string(d.gpu) + " (UUID " + d.uuid + ") of node " + d.host;
    r.warnings.push_back("WARNING: " + what);
    refusals.push_back(what);
  }
  for (const auto& [key, group] : by_physical) {
    if (group.size() < 2) continue;
    r.same_physical_gpu.push_back(group);
    std::set<std::string> uuids;
    for (int k : group) uuids.insert(by_rank[k]->uuid);
    if (uuids.size() == 1) continue;  // one GPU shared: said above
    const DeviceInfo& d = *by_rank[group.front()];
    refusals.push_back(rank_list(group) + " use MIG instances of one GPU (PCI " + key.second + ") of node " + d.host);
  }
  // GPUs a node's ranks see that none of them uses, by the index the first rank seeing one gives it.
  std::map<int, std::vector<std::pair<std::string, int>>> seen;  // node -> (uuid, index) in order first seen
  std::map<int, std::string> host_of;
  for (const auto& d : ranks) {
    host_of.emplace(d.node, d.host);
    auto& list = seen[d.node];
    for (std::size_t i = 0; i < d.visible.size(); ++i) {
      const bool known = std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == d.visible[i]; });
      if (!known) list.emplace_back(d.visible[i], static_cast<int>(i));
    }
  }
  for (const auto& [node, list] : seen)
    for (const auto& [uuid, index] : list)
      if (!by_uuid.count({node, uuid}))
        r.warnings.push_back("WARNING: GPU " + std::to_string(index) + " of node " + host_of[node] + " has no rank (UUID " +
                             uuid + ")");
  for (std::size_t i = 0; i < refusals.size(); ++i) r.nccl_refusal += (i ? "; " : "") + refusals[i];
  return r;
}

std::vector<std::string> device_lines(const std::vector<DeviceInfo>& ranks) {
  std::vector<std::string> out;
  for (const auto& d : ranks) {
    std::string line = "rank " + std::to_string(d.rank) + ": host " + d.host + ", local rank " + std::to_string(d.local_rank) + ", ";
    if (d.gpu < 0) {
      line += "no GPU (" + d.none_reason + ")";
    } else {
      char memory[32];
      std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(d.memory_bytes) / (1024.0 * 1024.0 * 1024.0));
      line += "GPU " + std::to_string(d.gpu) + " " + d.uuid + ", " + d.name + ", " + (d.mig ? "MIG instance" : "whole GPU") +
              ", " + memory + ", compute capability " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    }
    if (!d.cpu_binding.empty()) line += "; " + d.cpu_binding;
    out.push_back(line);
  }
  return out;
}

}  // namespace spotrun::comm
