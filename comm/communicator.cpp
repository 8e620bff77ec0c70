#include "communicator.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace spotrun::comm {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, len));
}

Communicator::Communicator(MPI_Comm comm) : m_comm(comm) {
  SPOTRUN_MPI_CHECK(MPI_Comm_rank(m_comm, &m_rank));
  SPOTRUN_MPI_CHECK(MPI_Comm_size(m_comm, &m_size));
  MPI_Comm node;
  SPOTRUN_MPI_CHECK(MPI_Comm_split_type(m_comm, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &node));
  SPOTRUN_MPI_CHECK(MPI_Comm_rank(node, &m_local_rank));
  SPOTRUN_MPI_CHECK(MPI_Comm_size(node, &m_local_size));
  MPI_Comm_free(&node);
  int leader = m_local_rank == 0 ? 1 : 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&leader, &m_node_count, 1, MPI_INT, MPI_SUM, m_comm));
}

Communicator::~Communicator() = default;

double Communicator::sum(double v) const {
  double r = 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, m_comm));
  return r;
}
std::int64_t Communicator::sum(std::int64_t v) const {
  std::int64_t r = 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_SUM, m_comm));
  return r;
}
double Communicator::max(double v) const {
  double r = 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, m_comm));
  return r;
}
double Communicator::min(double v) const {
  double r = 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MIN, m_comm));
  return r;
}
std::int64_t Communicator::max(std::int64_t v) const {
  std::int64_t r = 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_MAX, m_comm));
  return r;
}
bool Communicator::any(bool v) const {
  int in = v ? 1 : 0, out = 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, m_comm));
  return out != 0;
}
void Communicator::sum_in_place(double* values, int count) const {
  SPOTRUN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, m_comm));
}
void Communicator::barrier() const { SPOTRUN_MPI_CHECK(MPI_Barrier(m_comm)); }

void Communicator::exchange_counts(const std::vector<int>& send_peers, const std::vector<std::uint64_t>& send_counts,
                                   const std::vector<int>& recv_peers, std::vector<std::uint64_t>& recv_counts) const {
  constexpr int k_tag = 7300;
  recv_counts.assign(recv_peers.size(), 0);
  std::vector<MPI_Request> requests(send_peers.size() + recv_peers.size());
  std::size_t k = 0;
  for (std::size_t i = 0; i < recv_peers.size(); ++i)
    SPOTRUN_MPI_CHECK(MPI_Irecv(&recv_counts[i], 1, MPI_UINT64_T, recv_peers[i], k_tag, m_comm, &requests[k++]));
  for (std::size_t i = 0; i < send_peers.size(); ++i)
    SPOTRUN_MPI_CHECK(MPI_Isend(&send_counts[i], 1, MPI_UINT64_T, send_peers[i], k_tag, m_comm, &requests[k++]));
  if (!requests.empty())
    SPOTRUN_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
}

std::vector<std::uint64_t> Communicator::alltoall(const std::vector<std::uint64_t>& counts) const {
  std::vector<std::uint64_t> out(static_cast<std::size_t>(m_size));
  SPOTRUN_MPI_CHECK(MPI_Alltoall(counts.data(), 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, m_comm));
  return out;
}

std::vector<std::int64_t> Communicator::all_gather(const std::vector<std::int64_t>& mine) const {
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(m_size), displs(m_size);
  SPOTRUN_MPI_CHECK(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, m_comm));
  std::int64_t total = 0;
  for (int r = 0; r < m_size; ++r) {
    displs[r] = static_cast<int>(total);
    total += counts[r];
  }
  if (total > INT_MAX) throw std::runtime_error("Communicator::all_gather: more than 2^31 values");
  std::vector<std::int64_t> out(static_cast<std::size_t>(total));
  SPOTRUN_MPI_CHECK(MPI_Allgatherv(mine.data(), n, MPI_INT64_T, out.data(), counts.data(), displs.data(), MPI_INT64_T,
                                   m_comm));
  return out;
}

std::string Communicator::broadcast(const std::string& text, int root) const {
  std::uint64_t n = text.size();
  SPOTRUN_MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, root, m_comm));
  std::string out = m_rank == root ? text : std::string(n, '\0');
  // In pieces of at most 1 GiB: an MPI count is an int.
  constexpr std::uint64_t k_piece = std::uint64_t(1) << 30;
  for (std::uint64_t done = 0; done < n; done += k_piece)
    SPOTRUN_MPI_CHECK(MPI_Bcast(out.data() + done, static_cast<int>(std::min(k_piece, n - done)), MPI_CHAR, root, m_comm));
  return out;
}

std::vector<std::string> Communicator::all_gather(const std::string& text) const {
  int n = static_cast<int>(text.size());
  std::vector<int> counts(m_size), displs(m_size);
  SPOTRUN_MPI_CHECK(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, m_comm));
  int total = 0;
  for (int r = 0; r < m_size; ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::string all(total, '\0');
  SPOTRUN_MPI_CHECK(MPI_Allgatherv(text.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, m_comm));
  std::vector<std::string> out(m_size);
  for (int r = 0; r < m_size; ++r) out[r] = all.substr(displs[r], counts[r]);
  return out;
}

std::string Communicator::first_failure(bool ok, const std::string& message) const {
  int mine = ok ? m_size : m_rank;
  int first = m_size;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, m_comm));
  if (first == m_size) return {};
  std::string text = first == m_rank ? message : std::string();
  text = broadcast(text, first);
  return text.empty() ? std::string("error on rank ") + std::to_string(first) : text;
}

}  // namespace spotrun::comm
