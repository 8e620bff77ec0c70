#pragma once
// Per-atom arrays of one rank: owned atoms [0, nlocal) followed by ghost atoms [nlocal, nlocal+nghost).
#include <string>

#include "types.hpp"

namespace spotrun::md {

struct AtomStore {
  Vec3View x{"md::x", 0};
  Vec3View v{"md::v", 0};
  Vec3View f{"md::f", 0};
  IdView id{"md::id", 0};
  IntView type{"md::type", 0};
  Int3View image{"md::image", 0};
  Vec3View x_build{"md::x_build", 0};  // positions at the last neighbour build (owned atoms)
  DoubleView mass_by_type{"md::mass", 0};  // index = type
  int nlocal = 0;
  int nghost = 0;

  int capacity() const { return static_cast<int>(x.extent(0)); }
  int nall() const { return nlocal + nghost; }

  // Grows every per-atom array to hold at least n atoms, keeping contents.
  void reserve(int n) {
    if (n <= capacity()) return;
    int cap = n + n / 4 + 16;
    Kokkos::resize(x, cap);
    Kokkos::resize(v, cap);
    Kokkos::resize(f, cap);
    Kokkos::resize(id, cap);
    Kokkos::resize(type, cap);
    Kokkos::resize(image, cap);
    Kokkos::resize(x_build, cap);
  }
};

}  // namespace spotrun::md
