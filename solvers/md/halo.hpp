#pragma once
// Ghost atoms and migration over a 3D rank grid, as plans and movers (docs/comm.md):
//
//   migrate(): the migration plan (for each dimension: which owned atoms leave for which neighbour) is
//              computed by kernels from the positions; leaving atoms are packed on the device, moved by
//              one transport exchange per dimension, and unpacked after the atoms that stay.
//   build():   the ghost plan (for each of the six swaps: the indices of the atoms within cutneigh of a
//              face, the periodic shift, how many arrive) is built on the device at each
//              re-neighbouring, by a staged exchange (x, then y, then z, forwarding ghosts of earlier
//              dimensions so that edges and corners arrive); both directions of a dimension travel in
//              one batch.
//   update_positions(): between re-neighbourings, reuses the plan and moves only coordinates.
//
// Everything stays in the memory space of the atoms: only counts cross to the host. Messages from a
// rank to itself (a dimension of one rank) are copied by a kernel unless the transport routes them.
#include <array>
#include <vector>

#include "atoms.hpp"
#include "comm/process_grid.hpp"
#include "comm/transport.hpp"

namespace spotrun::md {

class Halo {
 public:
  Halo(const comm::Communicator& comm, const comm::ProcessGrid& grid, comm::Transport& transport, double cutneigh);

  // Moves owned atoms that left the sub-box to the neighbour that owns them now (after wrapping into
  // the periodic box). Atoms that moved further than one sub-box are dropped: the caller's atom count
  // check reports them as lost. Returns how many owned atoms had a non-finite position or velocity on
  // entry (such atoms are lost or stay where they are): the caller names the cause of a loss with it.
  int migrate(AtomStore& atoms);
  // Builds the ghost plan and fills ghosts (positions, ids, types).
  void build(AtomStore& atoms);
  // Refreshes ghost positions through the current plan.
  void update_positions(AtomStore& atoms);
  // The reverse of update_positions() (Newton's third law across ghosts, NeighborList::newton()): the
  // forces on the ghosts go back through the plan, last swap first (a ghost of a ghost reaches the owner
  // through the rank it came from), and are added to the atoms they are images of.
  void reverse_forces(AtomStore& atoms);

  long long ghost_count() const;
  // Bytes one update_positions() hands the transport (sent plus received; local copies excluded).
  std::size_t position_bytes() const;
  // Bytes one reverse_forces() hands the transport: the same messages the other way.
  std::size_t force_bytes() const { return position_bytes(); }

 private:
  struct Swap {
    int dim = 0, dir = 0;     // dir 0: send to lower neighbour; 1: upper
    int send_rank = 0, recv_rank = 0;
    double shift = 0;         // added to x[dim] of sent atoms (periodic image)
    IntView sendlist{"md::halo::sendlist", 0};
    int nsend = 0, nrecv = 0, first_recv = 0;
  };
  // Exchanges the packed buffers of the two swaps of dimension d: swap k's `per_atom` doubles per atom
  // at send offset send_first[k] go to its send_rank; what arrives from its recv_rank lands at
  // recv_first[k] of m_recv. Self-messages are copied by a kernel unless the transport routes them.
  // The messages of dimension d's two swaps with 3 doubles per atom (positions, or forces when reverse):
  // counts, offsets in m_send / m_recv, and whether any goes to another rank (else both are local
  // copies); the buffers are grown to fit.
  struct Layout3 {
    std::array<std::size_t, 2> nsend{}, nrecv{}, send_first{}, recv_first{};
    bool remote = false;
  };
  Layout3 layout3(int d, bool reverse);
  bool local(const Swap& s) const;  // a periodic image of this rank's own atoms, copied by a kernel
  // reverse: the other way (to each swap's recv_rank, from its send_rank), for reverse_forces().
  void exchange_dim(int d, int per_atom, const std::array<std::size_t, 2>& send_first,
                    const std::array<std::size_t, 2>& recv_first, const std::array<std::size_t, 2>& nsend,
                    const std::array<std::size_t, 2>& nrecv, bool reverse = false);

  const comm::Communicator& m_comm;
  const comm::ProcessGrid& m_grid;
  comm::Transport& m_transport;
  double m_cutneigh;
  std::vector<Swap> m_swaps;
  comm::Batch m_batch;
  // Persistent buffers (grown, never shrunk): pack, receive, and the atoms that stay during migration.
  DoubleView m_send{"md::halo::send", 0};
  DoubleView m_recv{"md::halo::recv", 0};
  DoubleView m_keep{"md::halo::keep", 0};
  IntView m_code{"md::halo::code", 0};
};

}  // namespace spotrun::md
