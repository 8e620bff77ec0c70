#pragma once
// Ghost atoms and migration over a 3D rank grid. The plan (which owned or ghost atoms go to which
// neighbour, with which periodic shift) is built at each re-neighbouring by a staged 6-direction
// exchange (x, then y, then z, forwarding ghosts of earlier stages so edges and corners arrive);
// between re-neighbourings update_positions() reuses it, moving only coordinates.
#include <array>
#include <vector>

#include "atoms.hpp"
#include "comm/process_grid.hpp"
#include "comm/transport.hpp"

namespace spotrun::md {

class Halo {
 public:
  Halo(const comm::ProcessGrid& grid, comm::Transport& transport, double cutneigh);

  // Moves owned atoms that left the sub-box to the neighbour that owns them now (after wrapping into
  // the periodic box). Atoms that moved further than one sub-box are dropped: the caller's atom count
  // check reports them as lost. Returns how many owned atoms had a non-finite position or velocity on
  // entry (such atoms are lost or stay where they are): the caller names the cause of a loss with it.
  int migrate(AtomStore& atoms);
  // Builds the ghost plan and fills ghosts (positions, ids, types).
  void build(AtomStore& atoms);
  // Refreshes ghost positions through the current plan.
  void update_positions(AtomStore& atoms);

  long long ghost_count() const;

 private:
  struct Swap {
    int dim = 0, dir = 0;     // dir 0: send to lower neighbour; 1: upper
    int send_rank = 0, recv_rank = 0;
    double shift = 0;         // added to x[dim] of sent atoms (periodic image)
    IntView sendlist{"md::halo::sendlist", 0};
    int nsend = 0, nrecv = 0, first_recv = 0;
  };
  void exchange(const DoubleView& send, std::size_t send_count, int dest, DoubleView& recv, std::size_t recv_count,
                int src, int tag);

  const comm::ProcessGrid& m_grid;
  comm::Transport& m_transport;
  double m_cutneigh;
  std::vector<Swap> m_swaps;
  DoubleView m_send{"md::halo::send", 0};
  DoubleView m_recv{"md::halo::recv", 0};
  Kokkos::View<double*, Kokkos::HostSpace> m_host_send{"md::halo::host_send", 0};
  Kokkos::View<double*, Kokkos::HostSpace> m_host_recv{"md::halo::host_recv", 0};
};

}  // namespace spotrun::md
