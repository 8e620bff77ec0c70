#pragma once
// Per-atom arrays of one rank: owned atoms [0, nlocal) followed by ghost atoms [nlocal, nlocal+nghost).
// One view per field of the per-atom field table (atom_fields.hpp), generated from it.
#include <string>

#include "atom_fields.hpp"
#include "types.hpp"

namespace spotrun::md {

struct AtomStore {
  // id, x, v, f, image, x_build (positions at the last neighbour build, owned atoms), type, ...: the table.
#define SPOTRUN_MD_ATOM_VIEW(name, View, flags, noun) View name{"md::" #name, 0};
  SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_ATOM_VIEW)
#undef SPOTRUN_MD_ATOM_VIEW
  DoubleView mass_by_type{"md::mass", 0};  // index = type
  int nlocal = 0;
  int nghost = 0;

  int capacity() const { return static_cast<int>(x.extent(0)); }
  int nall() const { return nlocal + nghost; }

  // Calls fn(const AtomField&, view&) for every field of the table, in its order.
  template <class Fn>
  void for_each_field(Fn&& fn) {
#define SPOTRUN_MD_ATOM_VISIT(name, View, flags, noun) fn(atom_field(AtomFieldId::name), name);
    SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_ATOM_VISIT)
  }
  template <class Fn>
  void for_each_field(Fn&& fn) const {
    SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_ATOM_VISIT)
#undef SPOTRUN_MD_ATOM_VISIT
  }

  // Grows every per-atom array to hold at least n atoms, keeping contents.
  void reserve(int n) {
    if (n <= capacity()) return;
    const int cap = n + n / 4 + 16;
    for_each_field([cap](const AtomField&, auto& view) { Kokkos::resize(view, cap); });
  }
};

}  // namespace spotrun::md
