#pragma once
// What one rank of a solver needs at its peak, by memory (the solvers' memory estimates, docs/solvers.md).

namespace spotrun::solvers {

// Bytes in host memory, and in device memory on a build whose Kokkos memory space is a device's (0 on a
// host build, where host holds everything).
struct MemoryNeed {
  double host = 0;
  double device = 0;
};

}  // namespace spotrun::solvers
