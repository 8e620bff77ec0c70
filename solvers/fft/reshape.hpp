#pragma once
// Executes a ReshapePlan (the mover of the FFT transposes, docs/comm.md): packs the blocks for other
// ranks (Kokkos kernels in the memory space of the views), exchanges them with one transport batch, and
// unpacks what arrives. Buffers and the batch are made once, in the constructor; execute() allocates
// nothing. Staging through host memory, where the transport needs it, is the transport's (staging.hpp).
// The rank's own block is copied directly, unless the transport routes self-messages (tests). A block
// that is one contiguous run of its array in the order it travels in is neither packed nor unpacked: the
// transport sends it from the input array, or receives it into the output array, where it lies. Where
// the plan puts this rank's input or output inside a larger array (within_arrays(), reshape_plan.hpp),
// every offset, stride and contiguity is that array's: in and out point at the arrays' first elements.
//
// Batched (execute_many, up to the max_batch of the constructor): `count` arrays of the same layout move
// in ONE transport exchange (one round of messages, all posted at once), one message per partner and
// array. A block that is contiguous where it lies moves in place as above; the others are packed (one
// kernel per block and array) into one send buffer, the blocks of all arrays for a partner one after
// the other, and unpacked from one receive buffer. count 1 is execute().
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
  Reshape(const ReshapePlan& plan, comm::Transport& transport, const char* label = "fft::reshape",
          int max_batch = 1);
  Reshape(const Reshape&) = delete;
  Reshape& operator=(const Reshape&) = delete;

  // Moves `in` (plan.input_array() layout) into `out` (plan.output_array() layout; only the cells of
  // plan.out.box are written). Collective. in and out must not overlap.
  void execute(const T* in, T* out);
  // Moves in[f] into out[f] for f < count (1 <= count <= max_batch(), the same count on every rank) with
  // one exchange. Collective.
  void execute_many(int count, const T* const in[], T* const out[]);

  const ReshapePlan& plan() const { return m_plan; }
  int max_batch() const { return m_max_batch; }
  // Elements of the send and of the receive buffer (what the memory estimate counts).
  std::size_t send_buffer_size() const { return m_send.extent(0); }
  std::size_t recv_buffer_size() const { return m_recv.extent(0); }

 private:
  ReshapePlan m_plan;
  comm::Transport& m_transport;
  std::vector<impl::BlockCopy> m_pack, m_unpack;
  // Messages moved in place: the index of the message in m_batch and the block's first element in the
  // caller's input (sends) or output (receives) array.
  struct Direct {
    std::size_t message = 0;
    std::size_t base = 0;
  };
  std::vector<Direct> m_send_direct, m_recv_direct;
  impl::BlockCopy m_self;
  bool m_has_self = false;  // copied directly
  Kokkos::View<T*, MemSpace> m_send, m_recv;
  comm::Batch m_batch;
  // Batched: per message of execute() (sends and receives in m_batch's order), whether it moves in
  // place (base: its first element in the caller's array) or is packed (offset: where its block lies in
  // the buffer for count 1; for `count` arrays, array f's block at count * offset + f * elements), and
  // the copy that packs or unpacks it. m_many[count]: the messages of a call with count arrays, message
  // (i, f) at i * count + f; their pointers are set per call.
  int m_max_batch = 1;
  struct Slot {
    bool direct = false;
    std::size_t base = 0, offset = 0, elements = 0;
    impl::BlockCopy copy;
  };
  std::vector<Slot> m_send_slots, m_recv_slots;
  std::vector<comm::Batch> m_many;
};

extern template class Reshape<double>;
extern template class Reshape<Complex>;

}  // namespace spotrun::fft
