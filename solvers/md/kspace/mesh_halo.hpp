#pragma once
// The ghost cells of the mesh bricks of a distributed PPPM (plan apart from the mover, docs/comm.md).
//
// The periodic mesh of n[0] x n[1] x n[2] points is tiled by the ranks' owned boxes (global indices in
// [0, n)). A rank's brick is its owned box and the ghost cells around it that its atoms' stencils reach,
// in unwrapped global indices (within [-n, 2n) along each axis): a ghost cell c is the image of the owned
// cell c - s n (s in {-1, 0, 1}^3) of whichever rank owns that one.
//
//   make_mesh_halo_plan(): from every rank's boxes, the blocks of this rank's brick that are ghosts (and
//     the rank owning them), and the blocks of its owned cells that are ghosts in other bricks (and the rank
//     holding them): one list per side, ordered by partner and image, the same order on both sides;
//   MeshHalo::reverse_sum():  the ghost cells' values are added into the cells they are images of (after
//     the charges were spread, every charge reaches its owner);
//   MeshHalo::forward_fill(): the ghost cells get the values of the cells they are images of (the field,
//     before it is interpolated to the atoms).
//
// One message per partner and direction, through comm::Transport (its buffers in the memory space of the
// mesh); blocks a rank exchanges with itself (periodic images along an axis of one rank) are copied
// within the brick, from the owned cells to their ghost images and back, unless the transport routes them. Unpacking adds block by block in the plan's order, so the
// sums are the same in every run of the same decomposition. Buffers are made once; nothing allocates in
// reverse_sum() and forward_fill().
#include <array>
#include <cstddef>
#include <vector>

#include "comm/transport.hpp"
#include "solvers/fft/box.hpp"
#include "solvers/fft/types.hpp"

namespace spotrun::md::kspace {

struct BrickBoxes {
  fft::Box3i owned;  // in [0, n), may be empty
  fft::Box3i brick;  // owned and ghost cells, unwrapped
};

struct MeshHaloPlan {
  struct Block {
    int peer = 0;
    fft::Box3i box;          // cells of this rank's brick (holder side: ghosts; owner side: owned cells)
    std::size_t offset = 0;  // first element in the single-field buffer of its side
  };
  int rank = 0;
  fft::Layout3 brick;                // this rank's brick, stored [x][y][z]
  std::vector<Block> ghosts;         // holder side, by peer then image
  std::vector<Block> owned;          // owner side, by peer then image
  std::size_t ghost_total = 0, owned_total = 0;  // elements of one field
};

// The plan of rank `rank`. Throws std::invalid_argument when a brick does not contain its owned box or
// reaches beyond [-n, 2n) along an axis, or when the owned boxes do not tile the mesh.
MeshHaloPlan make_mesh_halo_plan(const std::vector<BrickBoxes>& boxes, const std::array<int, 3>& n, int rank);

namespace impl {
// Copies the cells of `box` of a brick (layout `brick`, stored [x][y][z]) to a dense buffer in the same
// order, and back (overwriting, or adding when `add`). Kernels in the mesh's memory space.
void pack_box(const double* brick_data, const fft::Layout3& brick, const fft::Box3i& box, double* buffer);
void unpack_box(const double* buffer, double* brick_data, const fft::Layout3& brick, const fft::Box3i& box, bool add);
// The cells of box `from` of a brick into those of box `to` (the same extents) of the same brick, overwriting or
// adding: a rank's own periodic images, without a buffer.
void copy_within(double* brick_data, const fft::Layout3& brick, const fft::Box3i& from, const fft::Box3i& to, bool add);
}  // namespace impl

class MeshHalo {
 public:
  // max_fields: the most bricks one forward_fill() moves.
  MeshHalo(const MeshHaloPlan& plan, comm::Transport& transport, int max_fields);
  MeshHalo(const MeshHalo&) = delete;
  MeshHalo& operator=(const MeshHalo&) = delete;

  // brick: plan.brick.count() values. Collective.
  void reverse_sum(double* brick);
  // bricks[f], f < count <= max_fields. Collective.
  void forward_fill(int count, double* const bricks[]);

  const MeshHaloPlan& plan() const { return m_plan; }
  // Bytes one reverse_sum() hands the transport (sent and received).
  std::size_t exchanged_bytes() const;

 private:
  // A partner's message: its blocks [first, last) of one side and where they lie in the buffer.
  struct Peer {
    int rank = 0;
    std::size_t first = 0, last = 0;
    std::size_t offset = 0, elements = 0;
  };
  void set_batch(comm::Batch& batch, bool reverse, int count);
  // The rank's own entry of `peers` where its blocks are copied within the brick (the transport does not route
  // messages to the rank itself), else null.
  const Peer* self_peer(const std::vector<Peer>& peers) const;

  MeshHaloPlan m_plan;
  comm::Transport& m_transport;
  int m_max_fields = 1;
  std::vector<Peer> m_ghost_peers, m_owned_peers;  // by rank, this rank included
  fft::RealView m_ghost_buffer, m_owned_buffer;
  comm::Batch m_batch;
};

}  // namespace spotrun::md::kspace
