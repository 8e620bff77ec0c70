#include "staging.hpp"

namespace spotrun::comm {
namespace {

using DeviceSpace = Kokkos::DefaultExecutionSpace::memory_space;
template <class Space>
using Bytes = Kokkos::View<char*, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class View>
void grow(View& v, std::size_t n) {
  if (v.extent(0) < n) v = View(Kokkos::view_alloc(v.label(), Kokkos::WithoutInitializing), n + n / 4);
}

// Copies n bytes between a buffer of the batch (in `memory`) and a host staging buffer.
void copy_bytes(void* dst, const void* src, std::size_t n, Memory memory, bool to_host) {
  if (n == 0) return;
  Bytes<Kokkos::HostSpace> host(static_cast<char*>(to_host ? dst : const_cast<void*>(src)), n);
  if (memory == Memory::device) {
    Bytes<DeviceSpace> dev(static_cast<char*>(to_host ? const_cast<void*>(src) : dst), n);
    if (to_host)
      Kokkos::deep_copy(host, dev);
    else
      Kokkos::deep_copy(dev, host);
  } else {
    Bytes<Kokkos::HostSpace> other(static_cast<char*>(to_host ? const_cast<void*>(src) : dst), n);
    if (to_host)
      Kokkos::deep_copy(host, other);
    else
      Kokkos::deep_copy(other, host);
  }
}

}  // namespace

StagedTransport::StagedTransport(std::unique_ptr<Transport> inner, bool force) : m_inner(std::move(inner)), m_force(force) {}

std::string StagedTransport::description() const {
  return with_choice(m_inner->description() + "; device buffers staged through host memory");
}

void StagedTransport::exchange(const Batch& batch, void* stream) {
  if (!m_force && accepts_memory(m_inner->accepts(), batch.memory)) {
    m_inner->exchange(batch, stream);
    return;
  }
  grow(m_send, batch.send_bytes());
  grow(m_recv, batch.recv_bytes());
  m_host.clear();
  m_host.memory = Memory::host;
  std::size_t offset = 0;
  for (const auto& m : batch.sends) {
    copy_bytes(m_send.data() + offset, m.data, m.bytes, batch.memory, true);
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
    copy_bytes(m.data, m_recv.data() + offset, m.bytes, batch.memory, false);
    offset += m.bytes;
  }
  m_staged += batch.send_bytes() + batch.recv_bytes();
}

}  // namespace spotrun::comm
