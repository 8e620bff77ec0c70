#pragma once
// The one place that stages exchanges through host memory: a transport that wraps one taking host
// buffers only (MPI without GPU support) and copies a device batch to host buffers and back around it.
// Its buffers persist and grow only, so a steady exchange allocates nothing. It counts the bytes it
// copies (Transport::staged_bytes) for the run summary and the host-copy tests.
#include <memory>

#include <Kokkos_Core.hpp>

#include "transport.hpp"

namespace spotrun::comm {

class StagedTransport final : public Transport {
 public:
  // force: stage host batches too (tests of the staged path on a host build).
  StagedTransport(std::unique_ptr<Transport> inner, bool force);
  std::string name() const override { return m_inner->name(); }
  std::string description() const override;
  Accepts accepts() const override { return Accepts::either; }
  bool route_self() const override { return m_inner->route_self(); }
  void exchange(const Batch& batch, void* stream) override;
  std::size_t staged_bytes() const override { return m_staged; }
  void abort() noexcept override { m_inner->abort(); }

 private:
  std::unique_ptr<Transport> m_inner;
  bool m_force;
  Kokkos::View<char*, Kokkos::HostSpace> m_send{"comm::staging::send", 0};
  Kokkos::View<char*, Kokkos::HostSpace> m_recv{"comm::staging::recv", 0};
  Batch m_host;
  std::size_t m_staged = 0;
};

}  // namespace spotrun::comm
