#pragma once
// Timers of phases and exchanges on a device build: a kernel launch returns once the kernel is queued, so
// a wall-clock timer around it holds the time to queue the work, not to do it. fence_for_timing() waits
// for the device (Kokkos::fence) at a timer's boundary on a device build (docs/gpu.md, "Timings"); on
// a host build the kernels are done when their calls return and it does nothing.
#include <Kokkos_Core.hpp>

namespace spotrun::comm {

// Whether the default execution space runs on a device (its memory is not host memory).
inline constexpr bool k_device_execution =
    !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;

inline void fence_for_timing() {
  if constexpr (k_device_execution) Kokkos::fence();
}

}  // namespace spotrun::comm
