#pragma once
// The transport interface: moves bytes between ranks. It knows nothing about atoms or fields; packing
// is done by the solver in its own memory space. Backends: Mpi (host memory, or device memory when MPI
// is GPU-aware); an NCCL backend sits beside it in impl/.
#include <cstddef>
#include <memory>
#include <string>

#include "communicator.hpp"

namespace spotrun::comm {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string name() const = 0;
  // One line for the run header: the backend and the memory it moves ("MPI, host buffers").
  virtual std::string description() const { return name(); }
  // Sends send_bytes from send to rank dest while receiving recv_bytes from rank src into recv.
  // dest == src == own rank copies locally. Blocking.
  virtual void sendrecv(const void* send, std::size_t send_bytes, int dest, void* recv, std::size_t recv_bytes,
                        int src, int tag) = 0;
  // Exchanges one count (e.g. number of items to send) with the partners of a sendrecv.
  virtual std::size_t sendrecv_count(std::size_t send_count, int dest, int src, int tag) = 0;
  // All-to-all personalised exchange of bytes (the FFT transposes): rank r's block for rank q is
  // send[send_displs[q] .. + send_bytes[q]) and arrives in recv[recv_displs[r] ..) on q. Collective.
  virtual void alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_displs, void* recv,
                         const std::size_t* recv_bytes, const std::size_t* recv_displs) = 0;
  // Whether buffers passed in must be host memory (staged) or may be device memory.
  virtual bool needs_host_buffers() const = 0;
};

// Makes the transport named by kind ("auto", "mpi", "mpi-host"); throws InputError listing the known kinds.
std::unique_ptr<Transport> make_transport(const std::string& kind, const Communicator& comm);

}  // namespace spotrun::comm
