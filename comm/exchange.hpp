#pragma once
// Movers call the transport through comm::exchange(): it waits for the packing kernels when the
// transport is not ordered on the device stream, and hands a stream-ordered one (NCCL) the stream of the
// execution-space instance that packed the buffers.
#include <Kokkos_Core.hpp>
#include <type_traits>

#include "transport.hpp"

namespace spotrun::comm {

// Where memory of Kokkos space MemSpace lives, as a transport sees it.
template <class MemSpace>
constexpr Memory memory_of() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible ? Memory::host : Memory::device;
}

// The native stream of an execution-space instance (cudaStream_t for CUDA), or nullptr.
template <class ExecSpace>
void* native_stream(const ExecSpace& space) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) return static_cast<void*>(space.cuda_stream());
#endif
  (void)space;
  return nullptr;
}

// The packing kernels must have finished before the transport is given the buffers, unless it queues
// the batch on the device stream behind them (stream_queued): a stream-ordered transport moves host
// batches at once (over MPI), so those need the fence too.
template <class ExecSpace>
void exchange(Transport& transport, const Batch& batch, const ExecSpace& space) {
  if (!stream_queued(transport, batch)) space.fence();
  transport.exchange(batch, native_stream(space));
}

// The first half of exchange(): the transport's post() after the same fence; transport.complete() ends it.
template <class ExecSpace>
void post(Transport& transport, const Batch& batch, const ExecSpace& space) {
  if (!stream_queued(transport, batch)) space.fence();
  transport.post(batch, native_stream(space));
}

}  // namespace spotrun::comm
