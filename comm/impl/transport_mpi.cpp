#include "transport_mpi.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace spotrun::comm::impl {
namespace {

// One MPI message carries at most this many bytes (counts are int); larger ones go in pieces, matched
// in order (MPI does not let messages of one sender, tag and communicator overtake each other).
constexpr std::size_t k_piece = std::size_t(1) << 30;
constexpr int k_tag = 7301;

}  // namespace

bool mpi_is_gpu_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

TransportMpi::TransportMpi(const Communicator& comm, Accepts accepts, bool route_self)
    : m_comm(comm), m_accepts(accepts), m_route_self(route_self) {}

std::string TransportMpi::description() const {
  return with_choice(m_accepts == Accepts::host
                         ? "MPI point-to-point on host buffers"
                         : "MPI point-to-point on the buffers where they lie (GPU-aware on a device build)");
}

void TransportMpi::exchange(const Batch& batch, void* stream) {
  post(batch, stream);
  complete();
}

void TransportMpi::post(const Batch& batch, void*) {
  if (!accepts_memory(m_accepts, batch.memory))
    throw std::logic_error("transport " + name() + " given device buffers: stage them (comm::StagedTransport)");
  if (!m_requests.empty()) throw std::logic_error("transport " + name() + ": post() before the last one completed");
  // Receives first, so that every message finds its buffer posted. Empty messages are not sent: both
  // sides know their sizes, so both skip them.
  for (const auto& m : batch.recvs)
    for (std::size_t done = 0; done < m.bytes; done += k_piece) {
      m_requests.emplace_back();
      SPOTRUN_MPI_CHECK(MPI_Irecv(static_cast<char*>(m.data) + done, static_cast<int>(std::min(k_piece, m.bytes - done)),
                                  MPI_BYTE, m.peer, k_tag, m_comm.mpi(), &m_requests.back()));
    }
  for (const auto& m : batch.sends)
    for (std::size_t done = 0; done < m.bytes; done += k_piece) {
      m_requests.emplace_back();
      SPOTRUN_MPI_CHECK(MPI_Isend(static_cast<const char*>(m.data) + done,
                                  static_cast<int>(std::min(k_piece, m.bytes - done)), MPI_BYTE, m.peer, k_tag,
                                  m_comm.mpi(), &m_requests.back()));
    }
}

bool TransportMpi::test() {
  if (m_requests.empty()) return true;
  int done = 0;
  SPOTRUN_MPI_CHECK(MPI_Testall(static_cast<int>(m_requests.size()), m_requests.data(), &done, MPI_STATUSES_IGNORE));
  if (done) m_requests.clear();
  return done != 0;
}

void TransportMpi::complete() {
  if (m_requests.empty()) return;
  SPOTRUN_MPI_CHECK(MPI_Waitall(static_cast<int>(m_requests.size()), m_requests.data(), MPI_STATUSES_IGNORE));
  m_requests.clear();
}

}  // namespace spotrun::comm::impl
