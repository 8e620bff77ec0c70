#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace spotrun::md {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using Policy = Kokkos::RangePolicy<ExecSpace>;

using Vec3View = Kokkos::View<double* [3], Kokkos::LayoutRight, MemSpace>;
using Int4View = Kokkos::View<int* [4], Kokkos::LayoutRight, MemSpace>;
using Int3View = Kokkos::View<int* [3], Kokkos::LayoutRight, MemSpace>;
using IntView = Kokkos::View<int*, MemSpace>;
using IdView = Kokkos::View<std::int64_t*, MemSpace>;
// A row of 64-bit integers per atom whose length the run chooses (the second extent): a list the atom
// carries, such as its bonds (atom_fields.hpp).
using IdRowsView = Kokkos::View<std::int64_t**, Kokkos::LayoutRight, MemSpace>;
using DoubleView = Kokkos::View<double*, MemSpace>;
using Int2DView = Kokkos::View<int**, Kokkos::LayoutRight, MemSpace>;
// Neighbour rows: the execution space's natural layout. On a GPU (LayoutLeft) entry jj of every row is
// contiguous, so the threads of a warp (one atom each) read their jj-th neighbours coalesced; on a CPU
// (LayoutRight) a row is contiguous.
using NeighborView = Kokkos::View<int**, ExecSpace::array_layout, MemSpace>;

}  // namespace spotrun::md
