#pragma once
// The communicator of a run: MPI world, node-local split, small collectives and collective-safe errors.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "errors.hpp"

namespace spotrun::comm {

// Throws std::runtime_error naming the MPI call when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* call);
#define SPOTRUN_MPI_CHECK(call) ::spotrun::comm::check_mpi((call), #call)

class Communicator {
 public:
  explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  MPI_Comm mpi() const { return m_comm; }
  int rank() const { return m_rank; }
  int size() const { return m_size; }
  bool is_root() const { return m_rank == 0; }
  int node_count() const { return m_node_count; }
  int local_rank() const { return m_local_rank; }
  int local_size() const { return m_local_size; }

  double sum(double v) const;
  std::int64_t sum(std::int64_t v) const;
  double max(double v) const;
  double min(double v) const;
  std::int64_t max(std::int64_t v) const;
  bool any(bool v) const;
  void sum_in_place(double* values, int count) const;
  void barrier() const;

  // Host counts of an exchange (the sizes of the messages that follow): send_counts[k] goes to
  // send_peers[k], recv_counts[k] arrives from recv_peers[k]; between two ranks the k-th count one sends
  // the other is the k-th the other receives from it. A peer may be this rank itself.
  void exchange_counts(const std::vector<int>& send_peers, const std::vector<std::uint64_t>& send_counts,
                       const std::vector<int>& recv_peers, std::vector<std::uint64_t>& recv_counts) const;
  // One count to and from every rank: out[r] is what rank r had in counts[this rank].
  std::vector<std::uint64_t> alltoall(const std::vector<std::uint64_t>& counts) const;
  // Every rank's values, concatenated in rank order (any number per rank).
  std::vector<std::int64_t> all_gather(const std::vector<std::int64_t>& mine) const;

  // Broadcasts text from root to every rank.
  std::string broadcast(const std::string& text, int root = 0) const;
  // Gathers one string from each rank on every rank.
  std::vector<std::string> all_gather(const std::string& text) const;

  // Collective-safe check: every rank passes its local verdict; if any rank failed, every rank throws
  // ErrorT with the message of the lowest failing rank, so no rank waits alone in a later collective.
  template <class ErrorT>
  void agree(bool ok, const std::string& message_if_not_ok) const {
    std::string first = first_failure(ok, message_if_not_ok);
    if (!first.empty()) throw ErrorT(first);
  }

 private:
  std::string first_failure(bool ok, const std::string& message) const;

  MPI_Comm m_comm;
  int m_rank = 0;
  int m_size = 1;
  int m_node_count = 1;
  int m_local_rank = 0;
  int m_local_size = 1;
};

}  // namespace spotrun::comm
