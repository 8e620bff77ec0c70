#pragma once
// Executes a ReshapePlan: packs the blocks for other ranks (Kokkos kernels in the memory space of the
// views), exchanges them with one Transport::alltoallv, and unpacks what arrives. Buffers (and host
// staging buffers when the transport needs host memory but the views live on a device) are allocated
// once, in the constructor; execute() allocates nothing.
#include <cstddef>
#include <vector>

#include "comm/transport.hpp"
#include "reshape_plan.hpp"
#include "types.hpp"

namespace spotrun::fft {

namespace impl {
// Copies a box from one strided array to another: element (a, b, c) of the box (a slowest) moves from
// src[src_base + a*src_a + b*src_b + c*src_c] to dst[dst_base + a*dst_a + b*dst_b + c*dst_c].
struct BlockCopy {
  int e0 = 0, e1 = 0, e2 = 0;
  std::size_t src_base = 0, src_a = 0, src_b = 0, src_c = 0;
  std::size_t dst_base = 0, dst_a = 0, dst_b = 0, dst_c = 0;
};
}  // namespace impl

template <class T>
class Reshape {
 public:
  Reshape(const ReshapePlan& plan, comm::Transport& transport, const char* label = "fft::reshape");
  Reshape(const Reshape&) = delete;
  Reshape& operator=(const Reshape&) = delete;

  // Moves `in` (plan.in layout, plan.in.count() elements) into `out` (plan.out layout). Collective.
  // in and out must not overlap.
  void execute(const T* in, T* out);

  const ReshapePlan& plan() const { return m_plan; }

 private:
  ReshapePlan m_plan;
  comm::Transport& m_transport;
  std::vector<impl::BlockCopy> m_pack, m_unpack;
  impl::BlockCopy m_self;
  bool m_has_self = false;
  Kokkos::View<T*, MemSpace> m_send, m_recv;
  Kokkos::View<T*, Kokkos::HostSpace> m_host_send, m_host_recv;
  bool m_staged = false;
  std::vector<std::size_t> m_send_bytes, m_send_displs, m_recv_bytes, m_recv_displs;
};

extern template class Reshape<double>;
extern template class Reshape<Complex>;

}  // namespace spotrun::fft
