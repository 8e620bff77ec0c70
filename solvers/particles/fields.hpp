#pragma once
// The per-particle fields one operation of a particle method moves (particles::Halo, particles::Distributor):
// the caller's arrays, by reference: 3-component and scalar doubles, 32- and 64-bit integers and 3-component
// 32-bit integers (sent as integers, so they arrive exactly), and rows of 64-bit integers of a length fixed
// by the view. At most one field is the position.
// Includes nothing of any solver: Kokkos only.
#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace spotrun::particles {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using Vec3View = Kokkos::View<double* [3], Kokkos::LayoutRight, MemSpace>;
using DoubleView = Kokkos::View<double*, MemSpace>;
using IntView = Kokkos::View<int*, MemSpace>;
using Int64View = Kokkos::View<std::int64_t*, MemSpace>;
using Int3View = Kokkos::View<int* [3], Kokkos::LayoutRight, MemSpace>;
// A row of 64-bit integers per particle, its length the view's second extent, the same for every particle
// (a list the particle carries: the ids of its bonded partners).
using Int64RowsView = Kokkos::View<std::int64_t**, Kokkos::LayoutRight, MemSpace>;

// The per-particle fields one halo or migration operation moves. Each is a reference to the caller's view, read at
// every use: the caller may reallocate it in between (as the grow callback of build() does), but the
// view object itself must outlive the Fields.
class Fields {
 public:
  // The positions: shifted by the periodic image shift of each swap. At most one per Fields.
  Fields& position(Vec3View& x);
  Fields& add(Vec3View& v);
  Fields& add(DoubleView& v);
  Fields& add(IntView& v);
  Fields& add(Int64View& v);
  Fields& add(Int3View& v);
  Fields& add(Int64RowsView& v);

  enum class Kind { vec3, scalar, int32, int64, int3, int64_rows };
  struct Field {
    Kind kind;
    void* view;
    bool shifted;
  };
  const std::vector<Field>& fields() const { return m_fields; }
  const Vec3View* position_view() const;  // nullptr when there is none
  // Bytes one particle takes in a message (each field's block padded to 8 bytes per message).
  std::size_t bytes_per_particle() const;

 private:
  std::vector<Field> m_fields;
};

// Grows every per-particle array of the caller to hold at least n particles, keeping their contents.
using Grow = std::function<void(int n)>;

}  // namespace spotrun::particles
