#pragma once
// A reshape plan: how a distributed array held in one layout per rank (`in`) moves to another layout per
// rank (`out`) covering the same global boxes. Computed from the layouts alone, once; Reshape (reshape.hpp)
// executes it every time step with buffers allocated once.
//
// The block a rank sends to rank q is collide(in[me].box, out[q].box); it travels in the storage order of
// the destination layout (out[q].order, the same on every rank), so packing transposes and unpacking
// copies runs. The rank's own block is copied directly and never goes through the transport.
//
// A rank's input (or output) may lie inside a larger array (within_arrays(): PPPM's mesh bricks, whose
// owned cells are the input of the forward reshape and the output of the backward one): the reshape then
// reads (writes) only the data box's cells of that array, at the array's offsets and strides; the rest of
// the array is neither read nor written. By default the array is the data box itself, stored densely.
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
  // The arrays this rank's input and output lie in (boxes containing in.box and out.box, the same storage
  // orders); an empty box: the data box itself (in, out). See input_array() and output_array().
  Layout3 in_array, out_array;
  std::vector<Block> sends;   // non-empty blocks to other ranks, by rank
  std::vector<Block> recvs;   // non-empty blocks from other ranks, by rank
  Box3i self;                 // part that stays on this rank (may be empty)
  std::size_t send_total = 0; // elements
  std::size_t recv_total = 0;

  const Layout3& input_array() const { return in_array.box.empty() ? in : in_array; }
  const Layout3& output_array() const { return out_array.box.empty() ? out : out_array; }
};

// Plan for rank `rank` of in.size() == out.size() ranks. Throws std::invalid_argument when the boxes of
// `in` and `out` do not tile the same set of indices (checked by counts and pairwise disjointness).
ReshapePlan make_reshape_plan(const std::vector<Layout3>& in, const std::vector<Layout3>& out, int rank);

// The plan moving only the part of every block inside the global box `keep`: the rest of the destination
// is not written (the pruned forward transforms send only the kz that the band keeps). Both sides of
// every message clip by the same box, so they agree on its size.
ReshapePlan clipped(ReshapePlan plan, const Box3i& keep);

// The plan reading this rank's input from the array `in_array` and writing its output into `out_array`
// (layouts whose boxes contain plan.in.box and plan.out.box, in the same storage orders; an empty box
// leaves that side as it was). Messages and their sizes are unchanged: every rank may choose its arrays
// alone. Throws std::invalid_argument when an array does not contain its data box or is stored in
// another order.
ReshapePlan within_arrays(ReshapePlan plan, const Layout3& in_array, const Layout3& out_array);

// Layout of an x-plane block of an n[0] x n[1] x n[2] array (stored [x][y][z]) owned by rank r of nranks
// under io::block_of: the layout of a checkpointed or written field.
Layout3 x_block_layout(const std::array<int, 3>& n, int nranks, int r);
std::vector<Layout3> x_block_layouts(const std::array<int, 3>& n, int nranks);

}  // namespace spotrun::fft
