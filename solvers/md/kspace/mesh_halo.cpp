#include "mesh_halo.hpp"

#include <stdexcept>
#include <string>

#include "comm/exchange.hpp"

namespace spotrun::md::kspace {

namespace {

fft::Box3i shifted(fft::Box3i b, const std::array<int, 3>& s, const std::array<int, 3>& n) {
  for (int d = 0; d < 3; ++d) {
    b.lo[d] += s[d] * n[d];
    b.hi[d] += s[d] * n[d];
  }
  return b;
}

std::string box_text(const fft::Box3i& b) {
  std::string t = "[";
  for (int d = 0; d < 3; ++d)
    t += (d ? ", " : "") + std::to_string(b.lo[d]) + ".." + std::to_string(b.hi[d]);
  return t + "]";
}

bool inside(const fft::Box3i& inner, const fft::Box3i& outer) {
  for (int d = 0; d < 3; ++d)
    if (inner.lo[d] < outer.lo[d] || inner.hi[d] > outer.hi[d]) return false;
  return true;
}

// The 27 images in a fixed order (the x shift slowest).
template <class F>
void for_each_image(F&& f) {
  for (int sx = -1; sx <= 1; ++sx)
    for (int sy = -1; sy <= 1; ++sy)
      for (int sz = -1; sz <= 1; ++sz) f(std::array<int, 3>{sx, sy, sz});
}

}  // namespace

namespace impl {

// The cells of a box (extents e, stored [x][y][z]) from one array to another, each side with its own
// first element and strides along x and y (z contiguous on both): dst = src, or dst += src. On host
// backends one iteration per (x, y) row, the row a plain loop (short rows, a z extent of a few ghost
// cells, cost little); on a device one thread per cell.
// Not in the unnamed namespace: CUDA extended lambdas need an enclosing function with external linkage.
struct BoxCopy {
  int e[3] = {0, 0, 0};
  long src_base = 0, src_s0 = 0, src_s1 = 0;
  long dst_base = 0, dst_s0 = 0, dst_s1 = 0;
};

void copy_box(const BoxCopy& c, const double* src, double* dst, bool add) {
  if (c.e[0] <= 0 || c.e[1] <= 0 || c.e[2] <= 0) return;
  const BoxCopy k = c;
  // A plain if of a constant (a CUDA extended lambda may not first capture in a constexpr-if context).
  if (fft::k_host_accessible) {
    const int rows = k.e[0] * k.e[1];
    Kokkos::parallel_for(
        "md::kspace::halo_copy_rows", Kokkos::RangePolicy<fft::ExecSpace, Kokkos::IndexType<int>>(0, rows),
        KOKKOS_LAMBDA(const int r) {
          const int a = r / k.e[1], b = r - a * k.e[1];
          const double* from = src + k.src_base + a * k.src_s0 + b * k.src_s1;
          double* to = dst + k.dst_base + a * k.dst_s0 + b * k.dst_s1;
          if (add)
            for (int z = 0; z < k.e[2]; ++z) to[z] += from[z];
          else
            for (int z = 0; z < k.e[2]; ++z) to[z] = from[z];
        });
  } else {
    using BoxRange = Kokkos::MDRangePolicy<fft::ExecSpace, Kokkos::Rank<3, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                                           Kokkos::IndexType<int>>;
    Kokkos::parallel_for(
        "md::kspace::halo_copy", BoxRange({0, 0, 0}, {k.e[0], k.e[1], k.e[2]}),
        KOKKOS_LAMBDA(const int a, const int b, const int z) {
          const double v = src[k.src_base + a * k.src_s0 + b * k.src_s1 + z];
          if (add)
            dst[k.dst_base + a * k.dst_s0 + b * k.dst_s1 + z] += v;
          else
            dst[k.dst_base + a * k.dst_s0 + b * k.dst_s1 + z] = v;
        });
  }
}

namespace {
// A box of a brick as one side of a BoxCopy.
void brick_side(const fft::Layout3& brick, const fft::Box3i& box, long& base, long& s0, long& s1) {
  base = static_cast<long>(brick.offset(box.lo[0], box.lo[1], box.lo[2]));
  s0 = static_cast<long>(brick.stride(0));
  s1 = static_cast<long>(brick.stride(1));
}
// A dense buffer holding the box in the same order as the other side.
void dense_side(const fft::Box3i& box, long& base, long& s0, long& s1) {
  base = 0;
  s1 = static_cast<long>(box.extent(2));
  s0 = static_cast<long>(box.extent(1)) * s1;
}
BoxCopy box_copy(const fft::Box3i& box) {
  BoxCopy c;
  for (int d = 0; d < 3; ++d) c.e[d] = box.empty() ? 0 : static_cast<int>(box.extent(d));
  return c;
}
}  // namespace

void pack_box(const double* brick_ptr, const fft::Layout3& brick, const fft::Box3i& box, double* buffer_ptr) {
  BoxCopy c = box_copy(box);
  brick_side(brick, box, c.src_base, c.src_s0, c.src_s1);
  dense_side(box, c.dst_base, c.dst_s0, c.dst_s1);
  copy_box(c, brick_ptr, buffer_ptr, false);
}

void unpack_box(const double* buffer_ptr, double* brick_ptr, const fft::Layout3& brick, const fft::Box3i& box, bool add) {
  BoxCopy c = box_copy(box);
  dense_side(box, c.src_base, c.src_s0, c.src_s1);
  brick_side(brick, box, c.dst_base, c.dst_s0, c.dst_s1);
  copy_box(c, buffer_ptr, brick_ptr, add);
}

void copy_within(double* brick_ptr, const fft::Layout3& brick, const fft::Box3i& from, const fft::Box3i& to, bool add) {
  BoxCopy c = box_copy(from);
  brick_side(brick, from, c.src_base, c.src_s0, c.src_s1);
  brick_side(brick, to, c.dst_base, c.dst_s0, c.dst_s1);
  copy_box(c, brick_ptr, brick_ptr, add);
}

}  // namespace impl

MeshHaloPlan make_mesh_halo_plan(const std::vector<BrickBoxes>& boxes, const std::array<int, 3>& n, int rank) {
  const int nranks = static_cast<int>(boxes.size());
  if (rank < 0 || rank >= nranks) throw std::invalid_argument("make_mesh_halo_plan: rank out of range");
  fft::Box3i mesh;
  fft::Box3i reach;  // [-n, 2n)
  for (int d = 0; d < 3; ++d) {
    mesh.lo[d] = 0;
    mesh.hi[d] = n[d] - 1;
    reach.lo[d] = -n[d];
    reach.hi[d] = 2 * n[d] - 1;
  }
  std::size_t owned_count = 0;
  for (int r = 0; r < nranks; ++r) {
    const BrickBoxes& b = boxes[static_cast<std::size_t>(r)];
    if (!b.owned.empty() && (!inside(b.owned, b.brick) || !inside(b.owned, mesh)))
      throw std::invalid_argument("make_mesh_halo_plan: rank " + std::to_string(r) + " owns " + box_text(b.owned) +
                                  ", outside its brick " + box_text(b.brick) + " or the mesh");
    if (b.brick.empty() || !inside(b.brick, reach))
      throw std::invalid_argument("make_mesh_halo_plan: the brick " + box_text(b.brick) + " of rank " + std::to_string(r) +
                                  " reaches more than one mesh length beyond the mesh");
    owned_count += b.owned.count();
    for (int q = 0; q < r; ++q)
      if (!fft::collide(b.owned, boxes[static_cast<std::size_t>(q)].owned).empty())
        throw std::invalid_argument("make_mesh_halo_plan: ranks " + std::to_string(q) + " and " + std::to_string(r) +
                                    " own the same mesh points");
  }
  if (owned_count != mesh.count()) throw std::invalid_argument("make_mesh_halo_plan: the owned boxes do not tile the mesh");

  MeshHaloPlan plan;
  plan.rank = rank;
  plan.brick.box = boxes[static_cast<std::size_t>(rank)].brick;
  const fft::Box3i& mine = plan.brick.box;
  const fft::Box3i& own = boxes[static_cast<std::size_t>(rank)].owned;
  for (int q = 0; q < nranks; ++q)
    for_each_image([&](const std::array<int, 3>& s) {
      if (q == rank && s[0] == 0 && s[1] == 0 && s[2] == 0) return;
      const fft::Box3i c = fft::collide(mine, shifted(boxes[static_cast<std::size_t>(q)].owned, s, n));
      if (c.empty()) return;
      plan.ghosts.push_back({q, c, plan.ghost_total});
      plan.ghost_total += c.count();
    });
  for (int h = 0; h < nranks; ++h)
    for_each_image([&](const std::array<int, 3>& s) {
      if (h == rank && s[0] == 0 && s[1] == 0 && s[2] == 0) return;
      const fft::Box3i c = fft::collide(boxes[static_cast<std::size_t>(h)].brick, shifted(own, s, n));
      if (c.empty()) return;
      plan.owned.push_back({h, shifted(c, {-s[0], -s[1], -s[2]}, n), plan.owned_total});
      plan.owned_total += c.count();
    });
  return plan;
}

MeshHalo::MeshHalo(const MeshHaloPlan& plan, comm::Transport& transport, int max_fields)
    : m_plan(plan), m_transport(transport), m_max_fields(max_fields) {
  if (max_fields < 1) throw std::invalid_argument("MeshHalo: max_fields must be at least 1");
  auto group = [](const std::vector<MeshHaloPlan::Block>& blocks, std::vector<Peer>& peers) {
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (peers.empty() || peers.back().rank != blocks[i].peer) peers.push_back({blocks[i].peer, i, i, blocks[i].offset, 0});
      peers.back().last = i + 1;
      peers.back().elements += blocks[i].box.count();
    }
  };
  group(m_plan.ghosts, m_ghost_peers);
  group(m_plan.owned, m_owned_peers);
  // The own images pair up block by block (copied within the brick without the buffers).
  std::size_t own_ghosts = 0, own_owned = 0;
  for (const Peer& p : m_ghost_peers)
    if (p.rank == m_plan.rank) own_ghosts = p.last - p.first;
  for (const Peer& p : m_owned_peers)
    if (p.rank == m_plan.rank) own_owned = p.last - p.first;
  if (own_ghosts != own_owned) throw std::invalid_argument("MeshHalo: the rank's own image blocks do not pair up");
  const std::size_t f = static_cast<std::size_t>(max_fields);
  m_ghost_buffer = fft::RealView("md::kspace::halo_ghosts", m_plan.ghost_total * f);
  m_owned_buffer = fft::RealView("md::kspace::halo_owned", m_plan.owned_total * f);
}

void MeshHalo::set_batch(comm::Batch& batch, bool reverse, int count) {
  batch.clear();
  batch.memory = comm::memory_of<fft::MemSpace>();
  const std::size_t c = static_cast<std::size_t>(count);
  const bool self_through = m_transport.route_self();
  auto add = [&](const std::vector<Peer>& peers, double* buffer, bool send) {
    for (const Peer& p : peers) {
      if (p.rank == m_plan.rank && !self_through) continue;
      double* data = buffer + c * p.offset;
      const std::size_t bytes = c * p.elements * sizeof(double);
      if (send)
        batch.send(p.rank, data, bytes);
      else
        batch.recv(p.rank, data, bytes);
    }
  };
  // reverse: ghosts go to their owners; forward: owned cells go to the bricks holding their images.
  add(m_ghost_peers, m_ghost_buffer.data(), reverse);
  add(m_owned_peers, m_owned_buffer.data(), !reverse);
}

const MeshHalo::Peer* MeshHalo::self_peer(const std::vector<Peer>& peers) const {
  if (m_transport.route_self()) return nullptr;
  for (const Peer& p : peers)
    if (p.rank == m_plan.rank) return &p;
  return nullptr;
}

void MeshHalo::reverse_sum(double* brick) {
  const Peer* own_ghosts = self_peer(m_ghost_peers);
  for (const Peer& p : m_ghost_peers) {
    if (&p == own_ghosts) continue;  // added straight from the brick below
    for (std::size_t b = p.first; b < p.last; ++b) {
      const auto& blk = m_plan.ghosts[b];
      impl::pack_box(brick, m_plan.brick, blk.box, m_ghost_buffer.data() + blk.offset);
    }
  }
  set_batch(m_batch, true, 1);
  if (!m_batch.sends.empty() || !m_batch.recvs.empty()) comm::exchange(m_transport, m_batch, fft::ExecSpace());
  for (const Peer& p : m_owned_peers) {
    if (own_ghosts && p.rank == m_plan.rank) {
      // The rank's own periodic images: each ghost block added into the owned block it is an image of (the
      // k-th own ghost block and the k-th own owned block are the same image, make_mesh_halo_plan).
      for (std::size_t b = p.first; b < p.last; ++b)
        impl::copy_within(brick, m_plan.brick, m_plan.ghosts[own_ghosts->first + (b - p.first)].box,
                          m_plan.owned[b].box, true);
      continue;
    }
    // Block b of the partner at from + (offset of b - offset of the partner's first block).
    const double* from = m_owned_buffer.data() + p.offset;
    for (std::size_t b = p.first; b < p.last; ++b) {
      const auto& blk = m_plan.owned[b];
      impl::unpack_box(from + (blk.offset - p.offset), brick, m_plan.brick, blk.box, true);
    }
  }
}

void MeshHalo::forward_fill(int count, double* const bricks[]) {
  if (count < 1 || count > m_max_fields)
    throw std::invalid_argument("MeshHalo::forward_fill: " + std::to_string(count) + " fields, this halo moves 1 to " +
                                std::to_string(m_max_fields));
  const std::size_t c = static_cast<std::size_t>(count);
  const Peer* own_cells = self_peer(m_owned_peers);
  // A partner's message holds its blocks field after field.
  for (const Peer& p : m_owned_peers) {
    if (&p == own_cells) continue;  // copied straight within the brick below
    for (std::size_t f = 0; f < c; ++f)
      for (std::size_t b = p.first; b < p.last; ++b) {
        const auto& blk = m_plan.owned[b];
        impl::pack_box(bricks[f], m_plan.brick, blk.box,
                       m_owned_buffer.data() + c * p.offset + f * p.elements + (blk.offset - p.offset));
      }
  }
  set_batch(m_batch, false, count);
  if (!m_batch.sends.empty() || !m_batch.recvs.empty()) comm::exchange(m_transport, m_batch, fft::ExecSpace());
  for (const Peer& p : m_ghost_peers) {
    if (own_cells && p.rank == m_plan.rank) {
      for (std::size_t f = 0; f < c; ++f)
        for (std::size_t b = p.first; b < p.last; ++b)
          impl::copy_within(bricks[f], m_plan.brick, m_plan.owned[own_cells->first + (b - p.first)].box,
                            m_plan.ghosts[b].box, false);
      continue;
    }
    const double* from = m_ghost_buffer.data() + c * p.offset;
    for (std::size_t f = 0; f < c; ++f)
      for (std::size_t b = p.first; b < p.last; ++b) {
        const auto& blk = m_plan.ghosts[b];
        impl::unpack_box(from + f * p.elements + (blk.offset - p.offset), bricks[f], m_plan.brick, blk.box, false);
      }
  }
}

std::size_t MeshHalo::exchanged_bytes() const {
  std::size_t bytes = 0;
  for (const Peer& p : m_ghost_peers)
    if (p.rank != m_plan.rank || m_transport.route_self()) bytes += p.elements * sizeof(double);
  for (const Peer& p : m_owned_peers)
    if (p.rank != m_plan.rank || m_transport.route_self()) bytes += p.elements * sizeof(double);
  return bytes;
}

}  // namespace spotrun::md::kspace
