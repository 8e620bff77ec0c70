#pragma once
// GPU sampling for the run report (docs/report.md): on the node-local rank 0 of each node a thread samples
// every GPU NVML shows (utilisation, memory used, power, SM clock) every report.sample_seconds. NVML is
// the driver's libnvidia-ml.so.1, loaded at run time (comm::SharedLibrary), so a machine without a GPU or a driver runs
// without it; its header nvml.h comes from the CUDA toolkit at configure time (SPOTRUN_HAVE_NVML_H), and a
// build without it has no sampler. The thread makes no MPI call.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace spotrun::report {

struct GpuStats {
  std::string uuid;        // "GPU-..." as NVML names it
  std::string pci_bus_id;  // as NVML writes it ("00000000:41:00.0")
  int samples = 0;
  double util_sum = 0, util_min = 0;  // percent
  double memory_max_bytes = 0;
  double power_sum_watts = 0;
  double sm_clock_sum_mhz = 0;
};

// One line per GPU ("uuid bus samples util_sum util_min mem_max power_sum clock_sum"), and back.
std::string encode_gpu_stats(const std::vector<GpuStats>& stats);
std::vector<GpuStats> decode_gpu_stats(const std::string& text);
// The same PCI address in NVML's and CUDA's spellings compares equal ("00000000:41:00.0", "0000:41:00.0").
bool same_pci_bus(const std::string& a, const std::string& b);

class GpuSampler {
 public:
  // active: this rank samples (node-local rank 0 of a node whose ranks have GPUs). Loads NVML and starts
  // the thread; never throws: without NVML status() says why nothing is sampled.
  GpuSampler(bool active, double interval_seconds);
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;
  // "sampling 4 GPU(s) through NVML every 10 s", "off: libnvidia-ml.so.1 not found (...)", ...
  const std::string& status() const { return m_status; }
  bool sampling() const { return m_thread.joinable(); }
  // The sums so far (thread-safe).
  std::vector<GpuStats> snapshot() const;

 private:
  void loop();
  void sample_once();
  struct Nvml;
  std::unique_ptr<Nvml> m_nvml;
  double m_interval = 10;
  std::string m_status;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  std::vector<GpuStats> m_stats;
  std::thread m_thread;
};

}  // namespace spotrun::report
