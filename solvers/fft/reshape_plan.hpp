#pragma once
// A reshape plan: how a distributed array held in one layout per rank (`in`) moves to another layout per
// rank (`out`) covering the same global boxes. Computed from the layouts alone, once; Reshape (reshape.hpp)
// executes it every time step with buffers allocated once.
//
// The block a rank sends to rank q is collide(in[me].box, out[q].box); it travels in the storage order of
// the destination layout (out[q].order, the same on every rank), so packing transposes and unpacking
// copies runs. The rank's own block is copied directly and never goes through the transport.
#include <cstddef>
#include <vector>

#include "box.hpp"

namespace spotrun::fft {

struct ReshapePlan {
  struct Block {
    int rank = 0;            // partner
    Box3i box;               // global indices moved
    std::size_t offset = 0;  // first element in the send (or receive) buffer
  };
  int rank = 0;
  int nranks = 1;
  Layout3 in, out;            // this rank's layouts
  std::vector<Block> sends;   // non-empty blocks to other ranks, by rank
  std::vector<Block> recvs;   // non-empty blocks from other ranks, by rank
  Box3i self;                 // part that stays on this rank (may be empty)
  std::size_t send_total = 0; // elements
  std::size_t recv_total = 0;
};

// Plan for rank `rank` of in.size() == out.size() ranks. Throws std::invalid_argument when the boxes of
// `in` and `out` do not tile the same set of indices (checked by counts and pairwise disjointness).
ReshapePlan make_reshape_plan(const std::vector<Layout3>& in, const std::vector<Layout3>& out, int rank);

// The plan moving only the part of every block inside the global box `keep`: the rest of the destination
// is not written (the pruned forward transforms send only the kz that the band keeps). Both sides of
// every message clip by the same box, so they agree on its size.
ReshapePlan clipped(ReshapePlan plan, const Box3i& keep);

// Layout of an x-plane block of an n[0] x n[1] x n[2] array (stored [x][y][z]) owned by rank r of nranks
// under io::block_of: the layout of a checkpointed or written field.
Layout3 x_block_layout(const std::array<int, 3>& n, int nranks, int r);
std::vector<Layout3> x_block_layouts(const std::array<int, 3>& n, int nranks);

}  // namespace spotrun::fft
