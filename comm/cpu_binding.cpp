// CPU cores near each rank's GPU (cpu_binding.hpp, docs/gpu.md "CPU binding"), with hwloc.
#include "cpu_binding.hpp"

#include <hwloc.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "communicator.hpp"
#include "test_hooks.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#include <hwloc/cudart.h>
#endif

namespace spotrun::comm {
namespace {

CpuBinding& made() {
  static CpuBinding b;
  return b;
}

// An hwloc bitmap freed on scope exit.
struct Bitmap {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  ~Bitmap() { hwloc_bitmap_free(set); }
  Bitmap() = default;
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
};

std::string list_text(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) return "?";
  std::string out(text);
  std::free(text);
  return out;
}

// The topology of this machine, loaded once per bind_cpus; destroyed on scope exit.
struct Topology {
  hwloc_topology_t t = nullptr;
  bool loaded = false;
  Topology() {
    if (hwloc_topology_init(&t) != 0) {
      t = nullptr;
      return;
    }
    loaded = hwloc_topology_load(t) == 0;
  }
  ~Topology() {
    if (t) hwloc_topology_destroy(t);
  }
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
};

// The CPUs near this rank's GPU as a CPU list, "" when there is none or hwloc cannot say; `why` set then.
std::string near_cpus(Topology& topo, int local_rank, int device, std::string& why) {
  if (const auto& hook = test_hooks().gpu_cpus) {
    std::string list = hook(local_rank);
    if (list.empty()) why = "no GPU locality (test hook)";
    return list;
  }
  if (device < 0) {
    why = "no GPU";
    return {};
  }
  if (!topo.loaded) {
    why = "hwloc could not read this machine's topology";
    return {};
  }
#if defined(KOKKOS_ENABLE_CUDA)
  Bitmap near;
  if (hwloc_cudart_get_device_cpuset(topo.t, device, near.set) != 0) {
    (void)cudaGetLastError();
    why = "hwloc could not find the CPUs near GPU " + std::to_string(device);
    return {};
  }
  return list_text(near.set);
#else
  why = "no GPU";
  return {};
#endif
}

// Every rank's string on every rank of `comm`, in rank order.
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  int size = 0;
  SPOTRUN_MPI_CHECK(MPI_Comm_size(comm, &size));
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  SPOTRUN_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm));
  int total = 0;
  for (int i = 0; i < size; ++i) {
    offsets[i] = total;
    total += lengths[i];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  SPOTRUN_MPI_CHECK(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm));
  std::vector<std::string> out;
  for (int i = 0; i < size; ++i) out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i])));
  return out;
}

// The cores of `topo` with hardware threads in `usable`, each as those threads' OS indices.
std::vector<std::vector<int>> cores_within(hwloc_topology_t topo, hwloc_const_bitmap_t usable) {
  std::vector<std::vector<int>> cores;
  const int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  Bitmap both;
  for (int i = 0; i < n; ++i) {
    const hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    if (!core || !core->cpuset) continue;
    hwloc_bitmap_and(both.set, core->cpuset, usable);
    std::vector<int> threads;
    for (int id = hwloc_bitmap_first(both.set); id >= 0; id = hwloc_bitmap_next(both.set, id)) threads.push_back(id);
    if (!threads.empty()) cores.push_back(threads);
  }
  if (cores.empty()) {  // no core objects (some virtual machines): each hardware thread a core
    for (int id = hwloc_bitmap_first(usable); id >= 0; id = hwloc_bitmap_next(usable, id)) cores.push_back({id});
  }
  return cores;
}

}  // namespace

CpuBindMode cpu_bind_mode(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "auto") return CpuBindMode::automatic;
  if (v == "gpu") return CpuBindMode::gpu;
  if (v == "none") return CpuBindMode::none;
  throw std::invalid_argument("SPOTRUN_CPU_BIND=\"" + v + "\": expected auto, gpu or none");
}

const CpuBinding& cpu_binding() { return made(); }

std::string current_cpus() {
  Topology topo;
  Bitmap current;
  if (!topo.loaded || hwloc_get_cpubind(topo.t, current.set, HWLOC_CPUBIND_PROCESS) != 0) return "?";
  return list_text(current.set);
}

std::vector<int> share_of_cores(const std::vector<std::vector<int>>& cores, int index, int count) {
  if (cores.empty() || count < 1 || index < 0 || index >= count) return {};
  const auto block = [&](std::size_t n) {  // [first, last) of the index-th of count blocks of n items
    const std::size_t c = static_cast<std::size_t>(count), i = static_cast<std::size_t>(index);
    return std::pair<std::size_t, std::size_t>{i * n / c, (i + 1) * n / c};
  };
  std::vector<int> out;
  if (cores.size() >= static_cast<std::size_t>(count)) {
    const auto [first, last] = block(cores.size());
    for (std::size_t k = first; k < last; ++k) out.insert(out.end(), cores[k].begin(), cores[k].end());
    return out;
  }
  std::vector<int> threads;
  for (const auto& c : cores) threads.insert(threads.end(), c.begin(), c.end());
  if (threads.size() < static_cast<std::size_t>(count)) return threads;
  const auto [first, last] = block(threads.size());
  return {threads.begin() + static_cast<std::ptrdiff_t>(first), threads.begin() + static_cast<std::ptrdiff_t>(last)};
}

CpuBinding bind_cpus(MPI_Comm comm, int local_rank, int device, CpuBindMode mode) {
  CpuBinding& b = made();
  b = CpuBinding{};
  int rank = 0;
  SPOTRUN_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm node;
  SPOTRUN_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  const bool wanted = mode != CpuBindMode::none && (device >= 0 || test_hooks().gpu_cpus);
  std::optional<Topology> topo;
  std::string near, why = mode == CpuBindMode::none ? "SPOTRUN_CPU_BIND=none" : "";
  if (wanted) {
    topo.emplace();
    near = near_cpus(*topo, local_rank, device, why);
  }
  // Every rank of the node takes part, bound or not: the groups are decided from every rank's GPU locality.
  const auto nears = gather_strings(node, near);
  const auto ranks = gather_strings(node, std::to_string(local_rank));
  MPI_Comm_free(&node);
  if (near.empty()) {
    // Said only where a GPU could have been near: nothing to say on a CPU build.
    if (device >= 0 || test_hooks().gpu_cpus) b.note = why.empty() ? "not bound" : "not bound: " + why;
    return b;
  }
  if (!topo->loaded) {
    b.note = "not bound: hwloc could not read this machine's topology";
    return b;
  }
  int index = 0, count = 0;
  for (std::size_t i = 0; i < nears.size(); ++i) {
    if (nears[i] != near) continue;
    ++count;
    if (std::stoi(ranks[i]) < local_rank) ++index;
  }
  Bitmap current, candidates, chosen;
  const hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo->t);
  const bool have_current = hwloc_get_cpubind(topo->t, current.set, HWLOC_CPUBIND_PROCESS) == 0;
  if (mode == CpuBindMode::automatic && have_current && !hwloc_bitmap_isincluded(allowed, current.set)) {
    b.cpus = list_text(current.set);
    b.note = "bound by the launcher to CPUs " + b.cpus + ": kept (SPOTRUN_CPU_BIND=gpu replaces it)";
    return b;
  }
  if (hwloc_bitmap_list_sscanf(candidates.set, near.c_str()) != 0) {
    b.note = "not bound: the CPU list near the GPU (" + near + ") is not one";
    return b;
  }
  hwloc_bitmap_and(candidates.set, candidates.set, allowed);
  const auto cores = cores_within(topo->t, candidates.set);
  const auto share = share_of_cores(cores, index, count);
  if (share.empty()) {
    b.note = "not bound: none of the CPUs near the GPU (" + near + ") is allowed to this process (" + list_text(allowed) + ")";
    return b;
  }
  for (int id : share) hwloc_bitmap_set(chosen.set, static_cast<unsigned>(id));
  const std::string where = (device >= 0 ? "near GPU " + std::to_string(device) : std::string("near its GPU")) +
                            ": share " + std::to_string(index + 1) + " of " + std::to_string(count) + " of CPUs " + near;
  if (hwloc_set_cpubind(topo->t, chosen.set, HWLOC_CPUBIND_PROCESS) != 0) {
    b.cpus = have_current ? list_text(current.set) : "";
    b.note = "not bound: hwloc_set_cpubind failed for CPUs " + list_text(chosen.set);
    return b;
  }
  b.bound = true;
  b.cpus = list_text(chosen.set);
  b.note = "bound " + where;
  return b;
}

}  // namespace spotrun::comm
