#pragma once
// Ghost atoms and migration over a 3D rank grid (docs/md.md#ghost-atoms):
//
//   migrate(): for each dimension, the destination of every owned atom (stays, or leaves for the lower or
//              upper neighbour) is computed by a kernel from the positions; the generic particle migration
//              (particles::Distributor: plan, then mover) packs the migrating fields of the per-atom field
//              table (atom_fields.hpp) on the device, moves them by one transport exchange per dimension,
//              and unpacks them after the atoms that stay.
//   build():   the ghost plan of the generic particle halo (particles::Halo: six swaps, built at each
//              re-neighbouring by a staged exchange), moving the ghosted fields of the table (positions,
//              types, ids).
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
#include "solvers/particles/distributor.hpp"
#include "solvers/particles/halo.hpp"

namespace spotrun::md {

// The fields of the per-atom field table (atom_fields.hpp) that have `flag` (k_migrates, k_ghosted), as the
// particle halo and migration take them: x as the position.
particles::Fields atom_fields_with(AtomStore& atoms, unsigned flag);

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

  // After the grid's box changed (constant pressure): the ghosts' image shifts follow it (the plan stays).
  void box_changed() { m_plan.update_shifts(); }

  long long ghost_count() const;
  // Bytes one update_positions() hands the transport (sent plus received; local copies excluded).
  std::size_t position_bytes() const;
  // Bytes one reverse_forces() hands the transport: the same messages the other way.
  std::size_t force_bytes() const { return position_bytes(); }
  // The ghost plan (swaps, send lists, counts) of the last build().
  const particles::Halo& plan() const { return m_plan; }

 private:
  const comm::ProcessGrid& m_grid;
  particles::Halo m_plan;
  particles::Distributor m_migration;  // the migration plan of one dimension, and its buffers
  IntView m_code{"md::halo::code", 0};
};

}  // namespace spotrun::md
