#include "launcher/run/memory_check.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"

namespace spotrun::launcher {
namespace {

// The first number in a file (cgroup files hold one, or "max"); -1 when absent or not a number.
double number_in(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return -1;
  try {
    std::size_t used = 0;
    const double v = std::stod(word, &used);
    return used == word.size() ? v : -1;
  } catch (...) {
    return -1;
  }
}

double meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  return -1;
}

std::string gib(double bytes) {
  return significant(bytes / (1024.0 * 1024.0 * 1024.0), 3) + " GiB";
}

}  // namespace

double available_memory_bytes() {
  double avail = meminfo_available();
  auto lower = [&](double limit, double usage) {
    // cgroups without a limit report "max" (v2) or a huge number (v1).
    if (limit <= 0 || limit >= 1e18 || usage < 0) return;
    const double left = std::max(0.0, limit - usage);
    avail = avail < 0 ? left : std::min(avail, left);
  };
  lower(number_in("/sys/fs/cgroup/memory.max"), number_in("/sys/fs/cgroup/memory.current"));
  lower(number_in("/sys/fs/cgroup/memory/memory.limit_in_bytes"), number_in("/sys/fs/cgroup/memory/memory.usage_in_bytes"));
  return avail;
}

void check_memory_fits(const comm::Communicator& comm, double bytes_per_rank, const std::string& what) {
  const double avail = available_memory_bytes();
  const double need = bytes_per_rank * comm.local_size();
  bool ok = avail < 0 || (std::isfinite(need) && need <= avail);
  std::string message;
  if (!ok) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::ostringstream m;
    m << what << " needs about " << gib(bytes_per_rank) << " per rank, " << gib(need) << " for the "
      << comm.local_size() << " rank(s) on node " << host << ", but only " << gib(avail)
      << " are available there; use more nodes, or a smaller system";
    message = m.str();
  }
  comm.agree<InputError>(ok, message);
}

std::string device_memory_refusal(double bytes_per_rank, int ranks_on_gpu, const comm::DeviceMemory& gpu,
                                  const std::string& host, const std::string& what) {
  if (!gpu.present) return "";
  ranks_on_gpu = std::max(ranks_on_gpu, 1);
  const double need = bytes_per_rank * ranks_on_gpu;
  if (std::isfinite(need) && need <= gpu.free_bytes) return "";
  std::ostringstream m;
  m << what << " needs about " << gib(bytes_per_rank) << " of GPU memory per rank";
  if (ranks_on_gpu > 1) m << ", " << gib(need) << " for the " << ranks_on_gpu << " ranks that share GPU " << gpu.id;
  else m << " on GPU " << gpu.id;
  m << " of node " << host << ", but only " << gib(gpu.free_bytes) << " of its " << gib(gpu.total_bytes)
    << " are free; use more GPUs (one rank each), or a smaller system";
  return m.str();
}

namespace {
DeviceMemoryQuery& installed_query() {
  static DeviceMemoryQuery query;
  return query;
}
}  // namespace

void set_device_memory_query(DeviceMemoryQuery query) { installed_query() = std::move(query); }

void check_device_memory_fits(const comm::Communicator& comm, double bytes_per_rank, const std::string& what) {
  if (bytes_per_rank <= 0) return;
  comm::DeviceMemory gpu;
  std::string error;
  try {
    gpu = installed_query() ? installed_query()() : comm::device_memory();
  } catch (const std::exception& e) {
    error = "rank " + std::to_string(comm.rank()) + ": the memory of its GPU: " + e.what();
  }
  comm.agree<RunError>(error.empty(), error);
  // The ranks on this GPU: those of the same node with the same UUID.
  const std::string host = comm::host_name();
  const std::string key = gpu.present ? host + "\n" + gpu.id : std::string();
  int ranks_on_gpu = 0;
  for (const std::string& k : comm.all_gather(key)) ranks_on_gpu += !key.empty() && k == key;
  const std::string refusal = device_memory_refusal(bytes_per_rank, ranks_on_gpu, gpu, host, what);
  comm.agree<InputError>(refusal.empty(), refusal);
}

}  // namespace spotrun::launcher
