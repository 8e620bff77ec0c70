// MPI latency and bandwidth between pairs of nodes (one rank per node), in rounds of disjoint pairs.
#include <mpi.h>

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "comm/probes/probes.hpp"

namespace spotrun::probes {

namespace {

constexpr int k_tag_ping = 7301;
constexpr int k_tag_data = 7302;
constexpr int k_tag_ack = 7303;

// Seconds of the best of `batches` batches of `iterations` round trips of 8 bytes; `first` starts each.
double ping_pong(MPI_Comm comm, int peer, bool first, int iterations, int batches) {
  char buf[8] = {};
  double best = std::numeric_limits<double>::infinity();
  for (int batch = -1; batch < batches; ++batch) {  // batch -1: warm-up (connections made)
    const int n = batch < 0 ? std::max(iterations / 10, 10) : iterations;
    const double t0 = MPI_Wtime();
    for (int i = 0; i < n; ++i) {
      if (first) {
        SPOTRUN_MPI_CHECK(MPI_Send(buf, 8, MPI_CHAR, peer, k_tag_ping, comm));
        SPOTRUN_MPI_CHECK(MPI_Recv(buf, 8, MPI_CHAR, peer, k_tag_ping, comm, MPI_STATUS_IGNORE));
      } else {
        SPOTRUN_MPI_CHECK(MPI_Recv(buf, 8, MPI_CHAR, peer, k_tag_ping, comm, MPI_STATUS_IGNORE));
        SPOTRUN_MPI_CHECK(MPI_Send(buf, 8, MPI_CHAR, peer, k_tag_ping, comm));
      }
    }
    if (batch >= 0) best = std::min(best, MPI_Wtime() - t0);
  }
  return best;
}

// Bytes per second from `sender` to its peer: windows of messages in flight, each repetition closed by
// an acknowledgement from the receiver (as osu_bw); the best of `batches` batches, timed on the sender.
double stream(MPI_Comm comm, int peer, bool sender, const MpiSizes& s) {
  const std::size_t bytes = s.message_bytes;
  std::vector<char> buf(bytes * (sender ? 1 : static_cast<std::size_t>(s.window)), 1);
  std::vector<MPI_Request> requests(static_cast<std::size_t>(s.window));
  char ack = 0;
  double best = std::numeric_limits<double>::infinity();
  for (int batch = -1; batch < s.batches; ++batch) {  // batch -1: warm-up
    const double t0 = MPI_Wtime();
    for (int rep = 0; rep < s.repetitions; ++rep) {
      for (int w = 0; w < s.window; ++w) {
        if (sender)
          SPOTRUN_MPI_CHECK(MPI_Isend(buf.data(), static_cast<int>(bytes), MPI_CHAR, peer, k_tag_data, comm, &requests[w]));
        else
          SPOTRUN_MPI_CHECK(MPI_Irecv(buf.data() + bytes * static_cast<std::size_t>(w), static_cast<int>(bytes), MPI_CHAR,
                                      peer, k_tag_data, comm, &requests[w]));
      }
      SPOTRUN_MPI_CHECK(MPI_Waitall(s.window, requests.data(), MPI_STATUSES_IGNORE));
      if (sender)
        SPOTRUN_MPI_CHECK(MPI_Recv(&ack, 1, MPI_CHAR, peer, k_tag_ack, comm, MPI_STATUS_IGNORE));
      else
        SPOTRUN_MPI_CHECK(MPI_Send(&ack, 1, MPI_CHAR, peer, k_tag_ack, comm));
    }
    if (batch >= 0) best = std::min(best, MPI_Wtime() - t0);
  }
  return static_cast<double>(bytes) * s.window * s.repetitions / best;
}

}  // namespace

std::vector<std::vector<std::pair<int, int>>> mpi_rounds(const std::vector<int>& node_of_rank) {
  const std::set<int> nodes(node_of_rank.begin(), node_of_rank.end());
  std::vector<int> leaders;  // the lowest rank of each node
  for (int node : nodes)
    for (std::size_t r = 0; r < node_of_rank.size(); ++r)
      if (node_of_rank[r] == node) {
        leaders.push_back(static_cast<int>(r));
        break;
      }
  std::sort(leaders.begin(), leaders.end());
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (leaders.size() == 1) {
    if (node_of_rank.size() >= 2) rounds.push_back({{0, 1}});
    return rounds;
  }
  // The circle method: the first stays, the others rotate; -1 is the bye of an odd count.
  if (leaders.size() % 2 == 1) leaders.push_back(-1);
  const std::size_t m = leaders.size();
  for (std::size_t r = 0; r + 1 < m; ++r) {
    std::vector<int> order{leaders[0]};
    for (std::size_t k = 0; k + 1 < m; ++k) order.push_back(leaders[1 + (k + r) % (m - 1)]);
    std::vector<std::pair<int, int>> round;
    for (std::size_t i = 0; i < m / 2; ++i) {
      const int a = order[i], b = order[m - 1 - i];
      if (a >= 0 && b >= 0) round.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(round.begin(), round.end());
    rounds.push_back(round);
  }
  return rounds;
}

std::vector<PairFigures> probe_mpi(const comm::Communicator& comm,
                                   const std::vector<std::vector<std::pair<int, int>>>& rounds, const MpiSizes& sizes) {
  std::vector<PairFigures> mine;
  for (const auto& round : rounds) {
    comm.barrier();  // one round at a time: only its disjoint pairs share the network
    for (const auto& [a, b] : round) {
      if (comm.rank() != a && comm.rank() != b) continue;
      const bool first = comm.rank() == a;
      const int peer = first ? b : a;
      const double rtt = ping_pong(comm.mpi(), peer, first, sizes.latency_iterations, sizes.batches);
      const double bw = stream(comm.mpi(), peer, first, sizes);
      if (first) {
        PairFigures p;
        p.rank_a = a;
        p.rank_b = b;
        p.figures["mpi.latency_us"] = rtt / (2.0 * sizes.latency_iterations) * 1e6;
        p.figures["mpi.bandwidth_gbs"] = bw / 1e9;
        mine.push_back(p);
      }
    }
  }
  comm.barrier();
  return mine;
}

}  // namespace spotrun::probes
