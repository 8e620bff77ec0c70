#pragma once
#include <vector>

#include "../transport.hpp"

namespace spotrun::comm::impl {

// Point-to-point exchange over MPI_Sendrecv on host buffers.
class TransportMpi final : public Transport {
 public:
  explicit TransportMpi(const Communicator& comm) : m_comm(comm) {}
  std::string name() const override { return "mpi"; }
  void sendrecv(const void* send, std::size_t send_bytes, int dest, void* recv, std::size_t recv_bytes, int src,
                int tag) override;
  std::size_t sendrecv_count(std::size_t send_count, int dest, int src, int tag) override;
  void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_displs, void* recv,
                 const std::size_t* recv_bytes, const std::size_t* recv_displs) override;
  bool needs_host_buffers() const override { return true; }

 private:
  const Communicator& m_comm;
  std::vector<int> m_counts[4];  // scratch: send counts, send displs, recv counts, recv displs
};

}  // namespace spotrun::comm::impl
