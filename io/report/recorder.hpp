#pragma once
// The run report of `spotrun run` (docs/report.md): this attempt's record in OUTDIR/attempts.jsonl (the
// ledger: one line per attempt, replaced atomically by the root rank) and OUTDIR/report.json derived from
// it, both rewritten at every checkpoint and at the end; the human summary printed at the end. Its time
// parts: set-up (process start, MPI_Init included, to the time loop), compute (time in steps less the transport's),
// communication (the transport's exchanges and fences, the stop agreement), checkpoint (writes of the
// state), idle (the rest of the wall time). A report that cannot be written warns; it never stops a run.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/device.hpp"
#include "gpu_sampler.hpp"
#include "model.hpp"
#include "timed_transport.hpp"

namespace spotrun::report {

// What the recorder takes from the run (the launcher reads them from the deck and the environment,
// launcher/run/run.cpp): the GPU sampler's interval and the settings an attempt's record keeps.
struct RecorderSettings {
  double sample_seconds = 10;               // report.sample_seconds
  double price_per_gpu_hour = 0;            // report.price_per_gpu_hour
  double on_demand_price_per_gpu_hour = 0;  // report.on_demand_price_per_gpu_hour
  double min_gpu_utilisation = 0;           // report.min_gpu_utilisation
  std::int64_t every_steps = 0;             // checkpoint.every_steps
  double every_seconds = 0;                 // checkpoint.every_seconds
  bool auto_interval = false;               // checkpoint.interval = "auto"
  double mtbf = 0;                          // checkpoint.mtbf
  std::string launch_attempt;               // the spotrun launch attempt id; "" when not under launch
};

class RunRecorder {
 public:
  // Collective, once OUTDIR is locked: reads the ledger (an attempt left "running" was lost), checks
  // report.json (damaged: rebuilt from the ledger and the checkpoint files, with a warning), records this
  // attempt and starts the GPU sampler on each node's local rank 0. start_wtime: MPI_Wtime() at start.
  RunRecorder(const comm::Communicator& comm, const RecorderSettings& settings, const std::string& outdir,
              double start_wtime, const TimedTransport& transport);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;
  // The run header's line (root rank): where the report goes and what the GPU sampler does.
  const std::string& header() const { return m_header; }

  // The time loop starts at `now` (MPI_Wtime) from `step`; resumed_from: the checkpoint, or "".
  void loop_started(double now, std::int64_t step, const std::string& resumed_from);
  void step_begin() { m_step_transport = m_transport.seconds(); }
  // A step (with its thermo and outputs) took `seconds` on this rank.
  void step_end(double seconds) {
    m_steps_seconds += seconds;
    m_transport_in_steps += m_transport.seconds() - m_step_transport;
  }
  void add_communication(double seconds) { m_agreement_seconds += seconds; }
  // Runs `write` (a collective write of the state at `step`), times it as checkpoint time, records it
  // and rewrites the ledger and report.json (collective). Returns what `write` returns.
  bool checkpoint(std::int64_t step, const char* reason, const std::function<bool()>& write);
  // Root only, no MPI: where checkpoint `step` went (multilevel checkpoints: levels written, the durable tier's
  // verdict; either "" = unchanged); rewrites the ledger and report.json.
  void checkpoint_levels(std::int64_t step, const std::string& levels, const std::string& durable);
  // Collective, at the end: records how the attempt ended and prints the summary (root).
  void finish(int exit_code, const std::string& cause, std::int64_t step);

 private:
  void update(std::int64_t step);  // collective
  void write_files(bool with_report = true);  // root: the ledger, then report.json
  const comm::Communicator& m_comm;
  std::string m_outdir;
  double m_start_wtime;
  double m_before_start = 0;  // seconds from the process's start to start_wtime (MPI_Init)
  const TimedTransport& m_transport;
  std::unique_ptr<GpuSampler> m_sampler;
  std::vector<comm::DeviceInfo> m_devices;  // every rank's (root)
  std::vector<Attempt> m_attempts;          // the ledger, this attempt last (root)
  std::string m_header;
  bool m_write_warned = false;
  bool m_finished = false;
  double m_loop_start = -1;
  double m_transport_at_loop = 0;
  double m_step_transport = 0;
  double m_steps_seconds = 0, m_transport_in_steps = 0, m_agreement_seconds = 0, m_checkpoint_seconds = 0;
  double m_transport_in_checkpoints = 0;  // the transport's time inside checkpoint writes (checkpoint time)
};

// The report of OUTDIR from its ledger and checkpoint files (root); warnings: ledger lines skipped.
nlohmann::json load_report(const std::string& outdir, std::vector<std::string>& warnings, bool& found);

}  // namespace spotrun::report
