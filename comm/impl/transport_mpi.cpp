#include "transport_mpi.hpp"

#include <climits>
#include <cstring>
#include <stdexcept>

namespace spotrun::comm::impl {

void TransportMpi::sendrecv(const void* send, std::size_t send_bytes, int dest, void* recv, std::size_t recv_bytes,
                            int src, int tag) {
  if (dest == m_comm.rank() && src == m_comm.rank()) {
    if (send_bytes != recv_bytes) throw std::logic_error("TransportMpi::sendrecv: self exchange with unequal sizes");
    if (send_bytes > 0 && send != recv) std::memcpy(recv, send, send_bytes);
    return;
  }
  if (send_bytes > static_cast<std::size_t>(INT_MAX) || recv_bytes > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error("TransportMpi::sendrecv: message larger than 2 GiB");
  SPOTRUN_MPI_CHECK(MPI_Sendrecv(send, static_cast<int>(send_bytes), MPI_BYTE, dest, tag, recv,
                                 static_cast<int>(recv_bytes), MPI_BYTE, src, tag, m_comm.mpi(), MPI_STATUS_IGNORE));
}

std::size_t TransportMpi::sendrecv_count(std::size_t send_count, int dest, int src, int tag) {
  std::uint64_t out = send_count, in = 0;
  if (dest == m_comm.rank() && src == m_comm.rank()) return send_count;
  SPOTRUN_MPI_CHECK(MPI_Sendrecv(&out, 1, MPI_UINT64_T, dest, tag, &in, 1, MPI_UINT64_T, src, tag, m_comm.mpi(),
                                 MPI_STATUS_IGNORE));
  return in;
}

void TransportMpi::alltoallv(const void* send, const std::size_t* send_bytes, const std::size_t* send_displs,
                             void* recv, const std::size_t* recv_bytes, const std::size_t* recv_displs) {
  const int n = m_comm.size();
  const std::size_t* in[4] = {send_bytes, send_displs, recv_bytes, recv_displs};
  for (int k = 0; k < 4; ++k) {
    m_counts[k].resize(n);
    for (int r = 0; r < n; ++r) {
      // Counts and displacements of MPI_Alltoallv are int: larger exchanges need a chunked path.
      if (in[k][r] > static_cast<std::size_t>(INT_MAX))
        throw std::runtime_error("TransportMpi::alltoallv: block larger than 2 GiB");
      m_counts[k][r] = static_cast<int>(in[k][r]);
    }
  }
  SPOTRUN_MPI_CHECK(MPI_Alltoallv(send, m_counts[0].data(), m_counts[1].data(), MPI_BYTE, recv, m_counts[2].data(),
                                  m_counts[3].data(), MPI_BYTE, m_comm.mpi()));
}

}  // namespace spotrun::comm::impl

namespace spotrun::comm {

std::unique_ptr<Transport> make_transport(const std::string& kind, const Communicator& comm) {
  if (kind == "auto" || kind == "mpi" || kind == "mpi-host") return std::make_unique<impl::TransportMpi>(comm);
  throw InputError("transport '" + kind + "' is not known; allowed: \"auto\", \"mpi\", \"mpi-host\"");
}

}  // namespace spotrun::comm
