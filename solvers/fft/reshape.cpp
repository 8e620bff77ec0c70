#include "reshape.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "comm/exchange.hpp"

namespace spotrun::fft {
namespace {

// The copy of `box` from layout `src` to a destination whose storage order is `order`, either a layout
// (dst_layout != nullptr) or a packed buffer at `buffer_offset` (box stored densely in that order).
impl::BlockCopy make_copy(const Box3i& box, const Layout3& src, const std::array<int, 3>& order,
                          const Layout3* dst_layout, std::size_t buffer_offset) {
  impl::BlockCopy m;
  m.e0 = box.extent(order[0]);
  m.e1 = box.extent(order[1]);
  m.e2 = box.extent(order[2]);
  m.src_base = src.offset(box.lo[0], box.lo[1], box.lo[2]);
  m.src_a = src.stride(order[0]);
  m.src_b = src.stride(order[1]);
  m.src_c = src.stride(order[2]);
  if (dst_layout) {
    m.dst_base = dst_layout->offset(box.lo[0], box.lo[1], box.lo[2]);
    m.dst_a = dst_layout->stride(order[0]);
    m.dst_b = dst_layout->stride(order[1]);
    m.dst_c = dst_layout->stride(order[2]);
  } else {
    m.dst_base = buffer_offset;
    m.dst_a = static_cast<std::size_t>(m.e1) * static_cast<std::size_t>(m.e2);
    m.dst_b = static_cast<std::size_t>(m.e2);
    m.dst_c = 1;
  }
  return m;
}

// The unpack of a dense buffer block (stored in `order`) into layout dst.
impl::BlockCopy make_unpack(const Box3i& box, std::size_t buffer_offset, const Layout3& dst) {
  impl::BlockCopy m;
  const auto& order = dst.order;
  m.e0 = box.extent(order[0]);
  m.e1 = box.extent(order[1]);
  m.e2 = box.extent(order[2]);
  m.src_base = buffer_offset;
  m.src_a = static_cast<std::size_t>(m.e1) * static_cast<std::size_t>(m.e2);
  m.src_b = static_cast<std::size_t>(m.e2);
  m.src_c = 1;
  m.dst_base = dst.offset(box.lo[0], box.lo[1], box.lo[2]);
  m.dst_a = dst.stride(order[0]);
  m.dst_b = dst.stride(order[1]);
  m.dst_c = dst.stride(order[2]);
  return m;
}

// Whether a block copy's source (or destination) is one contiguous run in the copy's loop order.
bool dense(int e0, int e1, int e2, std::size_t a, std::size_t b, std::size_t c) {
  return (e2 <= 1 || c == 1) && (e1 <= 1 || b == static_cast<std::size_t>(e2)) &&
         (e0 <= 1 || a == static_cast<std::size_t>(e1) * static_cast<std::size_t>(e2));
}

}  // namespace

namespace impl {

// Not in the unnamed namespace: CUDA extended lambdas need an enclosing function with external linkage.
template <class T>
void copy_block(const char* name, const T* src_ptr, T* dst_ptr, const impl::BlockCopy& m) {
  if (m.e0 == 0 || m.e1 == 0 || m.e2 == 0) return;
  const T* src = src_ptr;
  T* dst = dst_ptr;
  const std::size_t sb = m.src_base, sa = m.src_a, ss = m.src_b, sc = m.src_c;
  const std::size_t db = m.dst_base, da = m.dst_a, ds = m.dst_b, dc = m.dst_c;
  if constexpr (k_host_accessible) {
    // Rows contiguous on both sides (the slab reshapes to and from the gather layout): one row copy per
    // iteration, no per-element index arithmetic.
    if (m.src_c == 1 && m.dst_c == 1) {
      const int e1 = m.e1, e2 = m.e2;
      Kokkos::parallel_for(
          name, Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int>>(0, m.e0 * m.e1), [=](int r) {
            const std::size_t a = static_cast<std::size_t>(r / e1), b = static_cast<std::size_t>(r % e1);
            std::copy_n(src + sb + a * sa + b * ss, e2, dst + db + a * da + b * ds);
          });
      return;
    }
  }
  using Range3 = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<3, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                                       Kokkos::IndexType<int>>;
  // A transpose (the source's contiguous axis is not the innermost loop) runs in 16 x 16 tiles of the
  // source's and the destination's contiguous axes, so both stay in cache; a plain copy in whole rows.
  int tile[3] = {1, 1, m.e2};
  if (m.src_c != 1 && (m.src_a == 1 || m.src_b == 1)) {
    tile[2] = std::min(m.e2, 16);
    tile[m.src_a == 1 ? 0 : 1] = 16;
  }
  if (!k_host_accessible) tile[0] = tile[1] = tile[2] = 0;  // devices: Kokkos' defaults
  Kokkos::parallel_for(
      name, Range3({0, 0, 0}, {m.e0, m.e1, m.e2}, {tile[0], tile[1], tile[2]}), KOKKOS_LAMBDA(int a, int b, int c) {
        dst[db + a * da + b * ds + c * dc] = src[sb + a * sa + b * ss + c * sc];
      });
}

}  // namespace impl

template <class T>
Reshape<T>::Reshape(const ReshapePlan& plan, comm::Transport& transport, const char* label, int max_batch)
    : m_plan(plan), m_transport(transport), m_max_batch(max_batch) {
  if (max_batch < 1) throw std::invalid_argument("Reshape: max_batch must be at least 1");
  const std::string base(label);
  // Every block travels in the storage order of the destination layouts (one order for all ranks).
  const auto& order = m_plan.out.order;
  auto sends = m_plan.sends;
  auto recvs = m_plan.recvs;
  m_has_self = !m_plan.self.empty();
  if (m_has_self && m_transport.route_self()) {
    // The own block as one more message, to this rank itself.
    sends.push_back({m_plan.rank, m_plan.self, 0});
    recvs.push_back({m_plan.rank, m_plan.self, 0});
    m_has_self = false;
  }
  if (m_has_self) m_self = make_copy(m_plan.self, m_plan.input_array(), order, &m_plan.output_array(), 0);
  // The buffers hold only the blocks that are packed or unpacked, one after the other; a block that is
  // contiguous where it lies moves in place (its message's pointer is set by execute()).
  std::vector<std::size_t> send_offset(sends.size(), 0), recv_offset(recvs.size(), 0);
  std::size_t send_room = 0, recv_room = 0;
  for (std::size_t i = 0; i < sends.size(); ++i) {
    const impl::BlockCopy m = make_copy(sends[i].box, m_plan.input_array(), order, nullptr, send_room);
    if (dense(m.e0, m.e1, m.e2, m.src_a, m.src_b, m.src_c)) {
      m_send_direct.push_back({i, m.src_base});
    } else {
      m_pack.push_back(m);
      send_offset[i] = send_room;
      send_room += sends[i].box.count();
    }
  }
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    const impl::BlockCopy m = make_unpack(recvs[i].box, recv_room, m_plan.output_array());
    if (dense(m.e0, m.e1, m.e2, m.dst_a, m.dst_b, m.dst_c)) {
      m_recv_direct.push_back({i, m.dst_base});
    } else {
      m_unpack.push_back(m);
      recv_offset[i] = recv_room;
      recv_room += recvs[i].box.count();
    }
  }
  // Batched calls: the same messages once per array, the packed blocks max_batch times in the buffers.
  if (m_max_batch > 1) {
    for (std::size_t i = 0; i < sends.size(); ++i) {
      const impl::BlockCopy m = make_copy(sends[i].box, m_plan.input_array(), order, nullptr, send_offset[i]);
      const bool direct = dense(m.e0, m.e1, m.e2, m.src_a, m.src_b, m.src_c);
      m_send_slots.push_back({direct, m.src_base, send_offset[i], sends[i].box.count(), m});
    }
    for (std::size_t i = 0; i < recvs.size(); ++i) {
      const impl::BlockCopy m = make_unpack(recvs[i].box, recv_offset[i], m_plan.output_array());
      const bool direct = dense(m.e0, m.e1, m.e2, m.dst_a, m.dst_b, m.dst_c);
      m_recv_slots.push_back({direct, m.dst_base, recv_offset[i], recvs[i].box.count(), m});
    }
    send_room *= static_cast<std::size_t>(m_max_batch);
    recv_room *= static_cast<std::size_t>(m_max_batch);
    m_many.resize(static_cast<std::size_t>(m_max_batch) + 1);
    for (int c = 2; c <= m_max_batch; ++c) {
      comm::Batch& b = m_many[static_cast<std::size_t>(c)];
      b.memory = comm::memory_of<MemSpace>();
      for (std::size_t i = 0; i < sends.size(); ++i)
        for (int f = 0; f < c; ++f) b.send(sends[i].rank, nullptr, sends[i].box.count() * sizeof(T));
      for (std::size_t i = 0; i < recvs.size(); ++i)
        for (int f = 0; f < c; ++f) b.recv(recvs[i].rank, nullptr, recvs[i].box.count() * sizeof(T));
    }
  }
  m_send = Kokkos::View<T*, MemSpace>(base + "::send", send_room);
  m_recv = Kokkos::View<T*, MemSpace>(base + "::recv", recv_room);
  m_batch.memory = comm::memory_of<MemSpace>();
  for (std::size_t i = 0; i < sends.size(); ++i)
    m_batch.send(sends[i].rank, m_send.data() + send_offset[i], sends[i].box.count() * sizeof(T));
  for (std::size_t i = 0; i < recvs.size(); ++i)
    m_batch.recv(recvs[i].rank, m_recv.data() + recv_offset[i], recvs[i].box.count() * sizeof(T));
}

template <class T>
void Reshape<T>::execute(const T* in, T* out) {
  for (const auto& d : m_send_direct) m_batch.sends[d.message].data = const_cast<T*>(in) + d.base;
  for (const auto& d : m_recv_direct) m_batch.recvs[d.message].data = out + d.base;
  for (const auto& m : m_pack) impl::copy_block("fft::reshape::pack", in, m_send.data(), m);
  if (m_has_self) impl::copy_block("fft::reshape::copy_own", in, out, m_self);
  if (!m_batch.sends.empty() || !m_batch.recvs.empty()) comm::exchange(m_transport, m_batch, ExecSpace());
  for (const auto& m : m_unpack) impl::copy_block("fft::reshape::unpack", m_recv.data(), out, m);
}

template <class T>
void Reshape<T>::execute_many(int count, const T* const in[], T* const out[]) {
  if (count < 1 || count > m_max_batch)
    throw std::invalid_argument("Reshape::execute_many: " + std::to_string(count) + " arrays, this reshape takes 1 to " +
                                std::to_string(m_max_batch));
  if (count == 1) {
    execute(in[0], out[0]);
    return;
  }
  const std::size_t c = static_cast<std::size_t>(count);
  comm::Batch& batch = m_many[c];
  for (std::size_t i = 0; i < m_send_slots.size(); ++i) {
    const Slot& s = m_send_slots[i];
    for (std::size_t f = 0; f < c; ++f) {
      if (s.direct) {
        batch.sends[i * c + f].data = const_cast<T*>(in[f]) + s.base;
        continue;
      }
      impl::BlockCopy m = s.copy;
      m.dst_base = c * s.offset + f * s.elements;
      batch.sends[i * c + f].data = m_send.data() + m.dst_base;
      impl::copy_block("fft::reshape::pack", in[f], m_send.data(), m);
    }
  }
  for (std::size_t i = 0; i < m_recv_slots.size(); ++i) {
    const Slot& s = m_recv_slots[i];
    for (std::size_t f = 0; f < c; ++f)
      batch.recvs[i * c + f].data = s.direct ? out[f] + s.base : m_recv.data() + c * s.offset + f * s.elements;
  }
  if (m_has_self)
    for (std::size_t f = 0; f < c; ++f) impl::copy_block("fft::reshape::copy_own", in[f], out[f], m_self);
  if (!batch.sends.empty() || !batch.recvs.empty()) comm::exchange(m_transport, batch, ExecSpace());
  for (const Slot& s : m_recv_slots) {
    if (s.direct) continue;
    for (std::size_t f = 0; f < c; ++f) {
      impl::BlockCopy m = s.copy;
      m.src_base = c * s.offset + f * s.elements;
      impl::copy_block("fft::reshape::unpack", m_recv.data(), out[f], m);
    }
  }
}

template class Reshape<double>;
template class Reshape<Complex>;

}  // namespace spotrun::fft
