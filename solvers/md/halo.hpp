#pragma once
// Ghost atoms and migration over a 3D rank grid (docs/md.md#ghost-atoms):
//
//   migrate(): the migration plan (for each dimension: which owned atoms leave for which neighbour) is
//              computed by kernels from the positions; leaving atoms are packed on the device, moved by
//              one transport exchange per dimension, and unpacked after the atoms that stay.
//   build():   the ghost plan of the generic particle halo (particles::Halo: six swaps, built at each
//              re-neighbouring by a staged exchange), moving the atoms' positions, types and ids.
//   update_positions(): between re-neighbourings, gathers only the positions through the plan (at once, or
//              in steps while the caller computes).
//   reverse_forces():   scatters the forces on the ghosts back to their owners through it.
//
// Everything stays in the memory space of the atoms: only counts cross to the host. Messages from a
// rank to itself (a dimension of one rank) are copied by a kernel unless the transport routes them.
#include <array>
#include <vector>

#include "atoms.hpp"
#include "comm/process_grid.hpp"
#include "comm/transport.hpp"
#include "solvers/particles/halo.hpp"

namespace spotrun::md {

class Halo {
 public:
  Halo(const comm::Communicator& comm, const comm::ProcessGrid& grid, comm::Transport& transport, double cutneigh);

  // Moves owned atoms that left the sub-box to the neighbour that owns them now (after wrapping into
  // the periodic box). Atoms that moved further than one sub-box are dropped: the caller's atom count
  // check reports them as lost. Returns how many owned atoms had a non-finite position or velocity on
  // entry (such atoms are lost or stay where they are): the caller names the cause of a loss with it.
  int migrate(AtomStore& atoms);
  // Builds the ghost plan and fills ghosts (positions, types, ids).
  void build(AtomStore& atoms);
  // Refreshes ghost positions through the current plan.
  void update_positions(AtomStore& atoms);
  // update_positions() in steps (particles::Halo::start_gather()): the pair forces of atoms with owned
  // neighbours only are computed in between (docs/md.md#halo-overlap). progress() returns true when
  // every ghost position is in place.
  void start_update_positions(AtomStore& atoms);
  void finish_update_positions() { m_plan.finish_gather(); }
  // reverse_forces() in steps (particles::Halo::start_scatter()): the pair forces of atoms with owned
  // neighbours only are computed in between; the forces that come back are added to the owned atoms
  // at the finish.
  void start_reverse_forces(AtomStore& atoms);
  void finish_reverse_forces() { m_plan.finish_scatter(); }
  // Moves either on without waiting; true when it is done.
  bool progress() { return m_plan.progress(); }
  // The reverse of update_positions() (Newton's third law across ghosts, NeighborList::newton()): the
  // forces on the ghosts go back through the plan, last swap first (a ghost of a ghost reaches the owner
  // through the rank it came from), and are added to the atoms they are images of.
  void reverse_forces(AtomStore& atoms);

  long long ghost_count() const;
  // Bytes one update_positions() hands the transport (sent plus received; local copies excluded).
  std::size_t position_bytes() const;
  // Bytes one reverse_forces() hands the transport: the same messages the other way.
  std::size_t force_bytes() const { return position_bytes(); }
  // The ghost plan (swaps, send lists, counts) of the last build().
  const particles::Halo& plan() const { return m_plan; }

 private:
  // Exchanges the packed migration buffers of dimension d: `per_atom` doubles per atom; nsend[k] atoms at
  // send offset send_first[k] go to the neighbour in direction k; what arrives from the opposite one lands
  // at recv_first[k] of m_recv. Self-messages are copied by a kernel unless the transport routes them.
  void exchange_dim(int d, int per_atom, const std::array<std::size_t, 2>& send_first,
                    const std::array<std::size_t, 2>& recv_first, const std::array<std::size_t, 2>& nsend,
                    const std::array<std::size_t, 2>& nrecv);

  const comm::Communicator& m_comm;
  const comm::ProcessGrid& m_grid;
  comm::Transport& m_transport;
  particles::Halo m_plan;
  comm::Batch m_batch;
  // Persistent migration buffers (grown, never shrunk): pack, receive, and the atoms that stay.
  DoubleView m_send{"md::halo::send", 0};
  DoubleView m_recv{"md::halo::recv", 0};
  DoubleView m_keep{"md::halo::keep", 0};
  IntView m_code{"md::halo::code", 0};
};

}  // namespace spotrun::md
