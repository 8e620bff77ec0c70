#pragma once
// MPI backend of the transport: every message of a batch posted with MPI_Irecv / MPI_Isend (post()), then
// one MPI_Waitall (complete(); MPI_Testall in test()). Host buffers (mpi-host), or the buffers where they
// lie (mpi: GPU-aware MPI, which takes device pointers).
#include <mpi.h>

#include <vector>

#include "../transport.hpp"

namespace spotrun::comm::impl {

class TransportMpi final : public Transport {
 public:
  // accepts: Accepts::host (mpi-host) or Accepts::either (mpi: the library takes device memory too).
  TransportMpi(const Communicator& comm, Accepts accepts, bool route_self);
  std::string name() const override { return m_accepts == Accepts::host ? "mpi-host" : "mpi"; }
  std::string description() const override;
  Accepts accepts() const override { return m_accepts; }
  bool route_self() const override { return m_route_self; }
  void exchange(const Batch& batch, void* stream) override;
  void post(const Batch& batch, void* stream) override;
  bool test() override;
  void complete() override;

 private:
  const Communicator& m_comm;
  Accepts m_accepts;
  bool m_route_self;
  std::vector<MPI_Request> m_requests;  // kept: no allocation per exchange in steady state
};

// Whether the MPI library takes device (CUDA) pointers: Open MPI's MPIX_Query_cuda_support().
bool mpi_is_gpu_aware();

}  // namespace spotrun::comm::impl
