#include "staging.hpp"

#include <cstring>

namespace spotrun::comm {
namespace impl {

// The messages of one pack or unpack kernel, passed to it by value (as kernel arguments: no copy of a
// table to the device per exchange). A batch with more messages takes one kernel per group.
constexpr int k_segment_group = 32;
struct SegmentGroup {
  int count = 0;
  std::uintptr_t message[k_segment_group] = {};  // a message's buffer
  std::size_t offset[k_segment_group] = {};      // its place in the contiguous buffer
  std::size_t bytes[k_segment_group] = {};
};

// pack: every message of the group to its place in `contiguous`; else back (unpack). One team per
// message; 8-byte words where both ends and the length allow. External linkage: a CUDA extended lambda
// may not live in a function with internal linkage.
void copy_segments(const SegmentGroup& group, char* contiguous, bool pack) {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Member = Kokkos::TeamPolicy<Exec>::member_type;
  const SegmentGroup g = group;
  Kokkos::parallel_for(
      pack ? "comm::staging::pack" : "comm::staging::unpack", Kokkos::TeamPolicy<Exec>(g.count, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team) {
        const int s = team.league_rank();
        char* in_message = reinterpret_cast<char*>(g.message[s]);
        char* in_contiguous = contiguous + g.offset[s];
        char* dst = pack ? in_contiguous : in_message;
        const char* src = pack ? in_message : in_contiguous;
        const std::size_t n = g.bytes[s];
        if (((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src) | n) & 7u) == 0) {
          auto* d = reinterpret_cast<std::uint64_t*>(dst);
          const auto* q = reinterpret_cast<const std::uint64_t*>(src);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n / 8), [&](std::size_t i) { d[i] = q[i]; });
        } else {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](std::size_t i) { dst[i] = src[i]; });
        }
      });
}

}  // namespace impl

namespace {

template <class Space>
using Bytes = Kokkos::View<char*, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class View>
void grow(View& v, std::size_t n) {
  if (v.extent(0) < n) v = View(Kokkos::view_alloc(v.label(), Kokkos::WithoutInitializing), n + n / 4);
}

std::size_t round_up8(std::size_t n) { return (n + 7) / 8 * 8; }

// Whether the non-empty messages lie back to back in one buffer, in order; then *first is its start.
bool back_to_back(const std::vector<Message>& ms, char** first) {
  char* next = nullptr;
  *first = nullptr;
  for (const auto& m : ms) {
    if (m.bytes == 0) continue;
    char* p = static_cast<char*>(m.data);
    if (next && p != next) return false;
    if (!*first) *first = p;
    next = p + m.bytes;
  }
  return true;
}

// The place of each message in the contiguous buffer: its offset from *first when back to back, else
// packed in order at 8-byte boundaries. Returns the length of the contiguous buffer.
std::size_t layout(const std::vector<Message>& ms, bool contiguous, char* first, std::vector<std::size_t>& offsets) {
  offsets.clear();
  std::size_t end = 0;
  for (const auto& m : ms) {
    const std::size_t off = m.bytes == 0 ? end : contiguous ? static_cast<std::size_t>(static_cast<char*>(m.data) - first) : end;
    offsets.push_back(off);
    if (m.bytes) end = contiguous ? off + m.bytes : round_up8(off + m.bytes);
  }
  return end;
}

// Runs the pack (or unpack) kernels of the messages, 32 to a kernel.
void copy_all(const std::vector<Message>& ms, const std::vector<std::size_t>& offsets, char* contiguous, bool pack) {
  impl::SegmentGroup g;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    if (ms[i].bytes == 0) continue;
    g.message[g.count] = reinterpret_cast<std::uintptr_t>(ms[i].data);
    g.offset[g.count] = offsets[i];
    g.bytes[g.count] = ms[i].bytes;
    if (++g.count == impl::k_segment_group) {
      impl::copy_segments(g, contiguous, pack);
      g.count = 0;
    }
  }
  if (g.count) impl::copy_segments(g, contiguous, pack);
}

}  // namespace

StagedTransport::StagedTransport(std::unique_ptr<Transport> inner, bool force) : m_inner(std::move(inner)), m_force(force) {}

std::string StagedTransport::description() const {
  return with_choice(m_inner->description() + "; device buffers staged through host memory");
}

bool StagedTransport::passes_through(const Batch& batch) const {
  return !m_force && accepts_memory(m_inner->accepts(), batch.memory);
}

void StagedTransport::exchange(const Batch& batch, void* stream) {
  if (passes_through(batch)) {
    m_inner->exchange(batch, stream);
    return;
  }
  constexpr bool host_build = Kokkos::SpaceAccessibility<Kokkos::HostSpace, DeviceSpace>::accessible;
  if (batch.memory == Memory::device || host_build)
    exchange_through_device(batch);
  else
    exchange_on_host(batch);
  m_staged += batch.send_bytes() + batch.recv_bytes();
  ++m_stats.exchanges;
}

void StagedTransport::post(const Batch& batch, void* stream) {
  if (passes_through(batch)) {
    m_inner->post(batch, stream);
    m_inner_posted = true;
    return;
  }
  exchange(batch, stream);
}

void StagedTransport::complete() {
  if (!m_inner_posted) return;
  m_inner_posted = false;
  m_inner->complete();
}

void StagedTransport::exchange_through_device(const Batch& batch) {
  std::vector<std::size_t> send_off, recv_off;
  char* send_first = nullptr;
  char* recv_first = nullptr;
  const bool send_in_place = back_to_back(batch.sends, &send_first);
  const bool recv_in_place = back_to_back(batch.recvs, &recv_first);
  const std::size_t send_total = layout(batch.sends, send_in_place, send_first, send_off);
  const std::size_t recv_total = layout(batch.recvs, recv_in_place, recv_first, recv_off);
  grow(m_send, send_total);
  grow(m_recv, recv_total);

  // Down: one pack kernel (unless the sends are one span already), one copy.
  if (send_total > 0) {
    const char* span = send_first;
    if (!send_in_place) {
      grow(m_device_send, send_total);
      copy_all(batch.sends, send_off, m_device_send.data(), true);
      span = m_device_send.data();
      ++m_stats.pack_kernels;
    }
    Kokkos::deep_copy(Bytes<PinnedSpace>(m_send.data(), send_total),
                      Bytes<DeviceSpace>(const_cast<char*>(span), send_total));
    ++m_stats.copies_down;
  }
  m_host.clear();
  m_host.memory = Memory::host;
  for (std::size_t i = 0; i < batch.sends.size(); ++i)
    m_host.send(batch.sends[i].peer, m_send.data() + send_off[i], batch.sends[i].bytes);
  for (std::size_t i = 0; i < batch.recvs.size(); ++i)
    m_host.recv(batch.recvs[i].peer, m_recv.data() + recv_off[i], batch.recvs[i].bytes);
  m_inner->exchange(m_host, nullptr);

  // Up: one copy, then one unpack kernel (unless the receives are one span: the copy lands in place).
  if (recv_total > 0) {
    char* span = recv_first;
    if (!recv_in_place) {
      grow(m_device_recv, recv_total);
      span = m_device_recv.data();
    }
    Kokkos::deep_copy(Bytes<DeviceSpace>(span, recv_total), Bytes<PinnedSpace>(m_recv.data(), recv_total));
    ++m_stats.copies_up;
    if (!recv_in_place) {
      copy_all(batch.recvs, recv_off, m_device_recv.data(), false);
      ++m_stats.unpack_kernels;
    }
    Kokkos::fence();  // the receive buffers are complete when exchange() returns
  }
}

void StagedTransport::exchange_on_host(const Batch& batch) {
  grow(m_send, batch.send_bytes());
  grow(m_recv, batch.recv_bytes());
  m_host.clear();
  m_host.memory = Memory::host;
  std::size_t offset = 0;
  for (const auto& m : batch.sends) {
    if (m.bytes) std::memcpy(m_send.data() + offset, m.data, m.bytes);
    m_host.send(m.peer, m_send.data() + offset, m.bytes);
    offset += m.bytes;
  }
  offset = 0;
  for (const auto& m : batch.recvs) {
    m_host.recv(m.peer, m_recv.data() + offset, m.bytes);
    offset += m.bytes;
  }
  m_inner->exchange(m_host, nullptr);
  offset = 0;
  for (const auto& m : batch.recvs) {
    if (m.bytes) std::memcpy(m.data, m_recv.data() + offset, m.bytes);
    offset += m.bytes;
  }
}

}  // namespace spotrun::comm
