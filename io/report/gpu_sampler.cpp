#include "gpu_sampler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <type_traits>

#include "comm/shared_library.hpp"

#if SPOTRUN_HAVE_NVML_H
#include <nvml.h>
#endif

namespace spotrun::report {

std::string encode_gpu_stats(const std::vector<GpuStats>& stats) {
  std::ostringstream o;
  o.precision(17);
  for (const auto& s : stats)
    o << s.uuid << ' ' << s.pci_bus_id << ' ' << s.samples << ' ' << s.util_sum << ' ' << s.util_min << ' '
      << s.memory_max_bytes << ' ' << s.power_sum_watts << ' ' << s.sm_clock_sum_mhz << '\n';
  return o.str();
}

std::vector<GpuStats> decode_gpu_stats(const std::string& text) {
  std::vector<GpuStats> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    GpuStats s;
    if (l >> s.uuid >> s.pci_bus_id >> s.samples >> s.util_sum >> s.util_min >> s.memory_max_bytes >> s.power_sum_watts >>
        s.sm_clock_sum_mhz)
      out.push_back(s);
  }
  return out;
}

bool same_pci_bus(const std::string& a, const std::string& b) {
  // domain:bus:device.function; the domain is 4 or 8 hex digits.
  auto norm = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto colon = s.find(':');
    if (colon == std::string::npos) return s;
    return std::to_string(std::strtoull(s.substr(0, colon).c_str(), nullptr, 16)) + s.substr(colon);
  };
  return !a.empty() && norm(a) == norm(b);
}

#if SPOTRUN_HAVE_NVML_H
// The NVML entry points used, resolved from libnvidia-ml.so.1 (their types from nvml.h).
struct GpuSampler::Nvml {
  comm::SharedLibrary lib;
  decltype(&nvmlInit_v2) init = nullptr;
  decltype(&nvmlShutdown) shutdown = nullptr;
  decltype(&nvmlDeviceGetCount_v2) count = nullptr;
  decltype(&nvmlDeviceGetHandleByIndex_v2) handle = nullptr;
  decltype(&nvmlDeviceGetUUID) uuid = nullptr;
  decltype(&nvmlDeviceGetPciInfo_v3) pci = nullptr;
  decltype(&nvmlDeviceGetUtilizationRates) util = nullptr;
  decltype(&nvmlDeviceGetMemoryInfo) memory = nullptr;
  decltype(&nvmlDeviceGetPowerUsage) power = nullptr;
  decltype(&nvmlDeviceGetClockInfo) clock = nullptr;
  decltype(&nvmlErrorString) error = nullptr;
  std::vector<nvmlDevice_t> devices;
};
#else
struct GpuSampler::Nvml {};
#endif

GpuSampler::GpuSampler(bool active, double interval_seconds) : m_interval(interval_seconds) {
  if (!active) {
    m_status = "off on this rank";
    return;
  }
#if SPOTRUN_HAVE_NVML_H
  auto n = std::make_unique<Nvml>();
  n->lib = comm::SharedLibrary::open("libnvidia-ml.so.1");
  if (!n->lib.loaded()) {
    m_status = "off: libnvidia-ml.so.1 not found (" + n->lib.error() + ")";
    return;
  }
  bool ok = true;
  auto sym = [&](auto& f, const char* name) {
    f = n->lib.find<std::remove_reference_t<decltype(f)>>(name);
    if (!f && ok) {
      ok = false;
      m_status = std::string("off: libnvidia-ml.so.1 lacks ") + name;
    }
  };
  sym(n->init, "nvmlInit_v2");
  sym(n->shutdown, "nvmlShutdown");
  sym(n->count, "nvmlDeviceGetCount_v2");
  sym(n->handle, "nvmlDeviceGetHandleByIndex_v2");
  sym(n->uuid, "nvmlDeviceGetUUID");
  sym(n->pci, "nvmlDeviceGetPciInfo_v3");
  sym(n->util, "nvmlDeviceGetUtilizationRates");
  sym(n->memory, "nvmlDeviceGetMemoryInfo");
  sym(n->power, "nvmlDeviceGetPowerUsage");
  sym(n->clock, "nvmlDeviceGetClockInfo");
  sym(n->error, "nvmlErrorString");
  nvmlReturn_t rc = NVML_SUCCESS;
  unsigned count = 0;
  if (ok && (rc = n->init()) != NVML_SUCCESS) {
    ok = false;
    m_status = std::string("off: nvmlInit_v2 failed: ") + n->error(rc);
  } else if (ok && (rc = n->count(&count)) != NVML_SUCCESS) {
    ok = false;
    m_status = std::string("off: nvmlDeviceGetCount_v2 failed: ") + n->error(rc);
    n->shutdown();
  }
  if (ok) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t d{};
      if (n->handle(i, &d) != NVML_SUCCESS) continue;
      GpuStats s;
      char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      if (n->uuid(d, uuid, sizeof uuid) == NVML_SUCCESS) s.uuid = uuid;
      nvmlPciInfo_t pci{};
      if (n->pci(d, &pci) == NVML_SUCCESS) s.pci_bus_id = pci.busId;
      if (s.uuid.empty()) s.uuid = "-";
      if (s.pci_bus_id.empty()) s.pci_bus_id = "-";
      n->devices.push_back(d);
      m_stats.push_back(s);
    }
    if (n->devices.empty()) {
      ok = false;
      m_status = "off: NVML shows no GPU";
      n->shutdown();
    }
  }
  if (!ok) return;  // the library closes with `n`
  m_nvml = std::move(n);
  std::ostringstream s;
  s << "sampling " << m_stats.size() << " GPU(s) through NVML every " << m_interval << " s";
  m_status = s.str();
  m_thread = std::thread([this] { loop(); });
#else
  m_status = "off: built without nvml.h (no CUDA toolkit at configure time)";
#endif
}

GpuSampler::~GpuSampler() {
  if (m_thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
  }
#if SPOTRUN_HAVE_NVML_H
  if (m_nvml) m_nvml->shutdown();  // then the library closes with m_nvml
#endif
}

std::vector<GpuStats> GpuSampler::snapshot() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_stats;
}

void GpuSampler::loop() {
  std::unique_lock<std::mutex> lock(m_mutex);
  while (!m_stop) {
    lock.unlock();
    sample_once();
    lock.lock();
    m_wake.wait_for(lock, std::chrono::duration<double>(m_interval), [this] { return m_stop; });
  }
}

void GpuSampler::sample_once() {
#if SPOTRUN_HAVE_NVML_H
  // Read every device outside the lock (NVML calls can take milliseconds), then add up under it.
  struct Reading {
    bool util = false, mem = false, power = false, clock = false;
    double u = 0, m = 0, p = 0, c = 0;
  };
  std::vector<Reading> r(m_nvml->devices.size());
  for (std::size_t k = 0; k < r.size(); ++k) {
    nvmlDevice_t d = m_nvml->devices[k];
    nvmlUtilization_t u{};
    if ((r[k].util = m_nvml->util(d, &u) == NVML_SUCCESS)) r[k].u = u.gpu;
    nvmlMemory_t m{};
    if ((r[k].mem = m_nvml->memory(d, &m) == NVML_SUCCESS)) r[k].m = static_cast<double>(m.used);
    unsigned mw = 0;
    if ((r[k].power = m_nvml->power(d, &mw) == NVML_SUCCESS)) r[k].p = mw / 1000.0;
    unsigned mhz = 0;
    if ((r[k].clock = m_nvml->clock(d, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS)) r[k].c = mhz;
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  for (std::size_t k = 0; k < r.size(); ++k) {
    if (!r[k].util) continue;  // a sample counts when its utilisation was read
    GpuStats& s = m_stats[k];
    s.util_min = s.samples == 0 ? r[k].u : std::min(s.util_min, r[k].u);
    ++s.samples;
    s.util_sum += r[k].u;
    s.memory_max_bytes = std::max(s.memory_max_bytes, r[k].m);
    s.power_sum_watts += r[k].p;
    s.sm_clock_sum_mhz += r[k].c;
  }
#endif
}

}  // namespace spotrun::report
