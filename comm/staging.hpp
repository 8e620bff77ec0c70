#pragma once
// The one place that stages exchanges through host memory: a transport that wraps one taking host
// buffers only (MPI without GPU support) and moves a device batch through one host buffer each way:
//
//   sends:  one pack kernel gathers every send message into one contiguous device buffer (skipped when
//           the messages already lie back to back) -> one deep_copy to a pinned host buffer
//   MPI:    the wrapped transport moves the messages as pieces of the pinned buffers
//   recvs:  one deep_copy of the pinned receive buffer to the device -> one unpack kernel scatters it
//           to the receive messages (skipped when they lie back to back: the copy lands in place)
//
// Pinned host memory (Kokkos::CudaHostPinnedSpace on CUDA builds, host memory otherwise) lets the copies
// run at full bus speed. Its buffers persist and grow only, so a steady exchange allocates nothing. It
// counts the bytes it stages (Transport::staged_bytes) for the run summary and the host-copy tests, and
// its copies and kernels (stats()) for the tests of the one-copy-each-way rule.
#include <cstdint>
#include <memory>

#include <Kokkos_Core.hpp>

#include "transport.hpp"

namespace spotrun::comm {

class StagedTransport final : public Transport {
 public:
#if defined(KOKKOS_ENABLE_CUDA)
  using PinnedSpace = Kokkos::CudaHostPinnedSpace;
#else
  using PinnedSpace = Kokkos::HostSpace;
#endif
  using DeviceSpace = Kokkos::DefaultExecutionSpace::memory_space;

  // What the staged exchanges did so far (tests).
  struct Stats {
    std::uint64_t exchanges = 0;      // batches staged
    std::uint64_t copies_down = 0;    // deep_copies device -> pinned host (at most one per exchange)
    std::uint64_t copies_up = 0;      // deep_copies pinned host -> device (at most one per exchange)
    std::uint64_t pack_kernels = 0;   // exchanges whose sends were gathered by the pack kernel
    std::uint64_t unpack_kernels = 0; // exchanges whose receives were scattered by the unpack kernel
  };

  // force: stage host batches too (tests of the staged path on a host build).
  StagedTransport(std::unique_ptr<Transport> inner, bool force);
  std::string name() const override { return m_inner->name(); }
  std::string description() const override;
  Accepts accepts() const override { return Accepts::either; }
  bool route_self() const override { return m_inner->route_self(); }
  void exchange(const Batch& batch, void* stream) override;
  // A batch the inner transport takes as it is is posted through it; a staged one is exchanged at once.
  void post(const Batch& batch, void* stream) override;
  bool test() override { return !m_inner_posted || m_inner->test(); }
  void complete() override;
  std::size_t staged_bytes() const override { return m_staged; }
  void abort() noexcept override { m_inner->abort(); }
  const Stats& stats() const { return m_stats; }

 private:
  // Whether a batch goes to the inner transport as it is (it takes the batch's memory, no forced staging).
  bool passes_through(const Batch& batch) const;
  // Through the default execution space: device batches, and on a host build every batch.
  void exchange_through_device(const Batch& batch);
  // Host batches on a device build (forced staging): copied on the host.
  void exchange_on_host(const Batch& batch);

  std::unique_ptr<Transport> m_inner;
  bool m_force;
  Kokkos::View<char*, PinnedSpace> m_send{"comm::staging::send", 0};
  Kokkos::View<char*, PinnedSpace> m_recv{"comm::staging::recv", 0};
  Kokkos::View<char*, DeviceSpace> m_device_send{"comm::staging::device_send", 0};
  Kokkos::View<char*, DeviceSpace> m_device_recv{"comm::staging::device_recv", 0};
  Batch m_host;
  bool m_inner_posted = false;  // post() handed the batch to the inner transport as it is
  std::size_t m_staged = 0;
  Stats m_stats;
};

}  // namespace spotrun::comm
