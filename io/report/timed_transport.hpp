#pragma once
// A transport that times the exchanges and fences of another (the run report's communication time,
// docs/report.md): every call is forwarded, only wall-clock seconds are added up. A stream-ordered
// transport (NCCL) returns from exchange() once its messages are queued: on a device build the execution
// space is fenced before the clock starts (the packing kernels are not communication) and before it stops
// (the messages have arrived), comm/timing.hpp. Nothing else changes.
#include <mpi.h>

#include <memory>

#include "comm/timing.hpp"
#include "comm/transport.hpp"

namespace spotrun::report {

class TimedTransport final : public comm::Transport {
 public:
  explicit TimedTransport(std::unique_ptr<comm::Transport> inner) : m_inner(std::move(inner)) {}
  std::string name() const override { return m_inner->name(); }
  std::string description() const override { return m_inner->description(); }
  comm::Accepts accepts() const override { return m_inner->accepts(); }
  bool stream_ordered() const override { return m_inner->stream_ordered(); }
  bool route_self() const override { return m_inner->route_self(); }
  void exchange(const comm::Batch& batch, void* stream = nullptr) override {
    const bool queued = comm::stream_queued(*m_inner, batch);
    if (queued) comm::fence_for_timing();
    const double t = MPI_Wtime();
    m_inner->exchange(batch, stream);
    if (queued) comm::fence_for_timing();
    m_seconds += MPI_Wtime() - t;
  }
  // A posted exchange counts the time spent in post(), test() and complete(): the computation between
  // them is not communication (a halo hidden behind the pair loop costs only what is left to wait).
  void post(const comm::Batch& batch, void* stream = nullptr) override {
    m_queued = comm::stream_queued(*m_inner, batch);
    if (m_queued) comm::fence_for_timing();
    const double t = MPI_Wtime();
    m_inner->post(batch, stream);
    m_seconds += MPI_Wtime() - t;
  }
  bool test() override {
    const double t = MPI_Wtime();
    const bool done = m_inner->test();
    m_seconds += MPI_Wtime() - t;
    return done;
  }
  void complete() override {
    const double t = MPI_Wtime();
    m_inner->complete();
    if (m_queued) comm::fence_for_timing();
    m_queued = false;
    m_seconds += MPI_Wtime() - t;
  }
  void abort() noexcept override { m_inner->abort(); }
  void fence() override {
    comm::fence_for_timing();  // the kernels queued before the outstanding exchanges are not communication
    const double t = MPI_Wtime();
    m_inner->fence();
    m_seconds += MPI_Wtime() - t;
  }
  std::size_t staged_bytes() const override { return m_inner->staged_bytes(); }
  // Seconds spent in exchange(), post(), test(), complete() and fence() so far, on this rank.
  double seconds() const { return m_seconds; }

 private:
  std::unique_ptr<comm::Transport> m_inner;
  double m_seconds = 0;
  bool m_queued = false;  // the posted batch is queued on the device stream (complete() fences)
};

inline std::unique_ptr<TimedTransport> timed(std::unique_ptr<comm::Transport> inner) {
  return std::make_unique<TimedTransport>(std::move(inner));
}

}  // namespace spotrun::report
