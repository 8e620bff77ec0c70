#pragma once
// Per-atom arrays of one rank: owned atoms [0, nlocal) followed by ghost atoms [nlocal, nlocal+nghost).
// One view per field of the per-atom field table (atom_fields.hpp), generated from it.
#include <string>
#include <type_traits>

#include "atom_fields.hpp"
#include "types.hpp"

namespace spotrun::md {

struct AtomStore {
  // A field's view without atoms (a list field also without columns).
  template <class View>
  static View empty_view(const std::string& label) {
    if constexpr (View::rank_dynamic == 2)
      return View(label, 0, 0);
    else
      return View(label, 0);
  }

  // id, x, v, f, image, x_build (positions at the last neighbour build, owned atoms), type, ...: the table.
#define SPOTRUN_MD_ATOM_VIEW(name, View, flags, noun) View name = empty_view<View>("md::" #name);
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

  // Grows every per-atom array to hold at least n atoms, keeping contents (and a list field's row length).
  void reserve(int n) {
    if (n <= capacity()) return;
    const int cap = n + n / 4 + 16;
    for_each_field([cap](const AtomField&, auto& view) {
      using V = std::decay_t<decltype(view)>;
      if constexpr (V::rank_dynamic == 2)
        Kokkos::resize(view, cap, view.extent(1));
      else
        Kokkos::resize(view, cap);
    });
  }

  // Components per atom of a field: the table's, or a list field's row length (set_width()).
  int width(const AtomField& f) const {
    if (!f.is_list()) return f.width;
    int w = 0;
    for_each_field([&](const AtomField& g, const auto& view) {
      if (&g == &f) w = static_cast<int>(view.extent(1));
    });
    return w;
  }
  int width(AtomFieldId f) const { return width(atom_field(f)); }
  // Sets the row length of a list field (0: the system has none): before its atoms are placed (the
  // contents of the field are lost, zeroed).
  void set_width(AtomFieldId id, int w) {
    for_each_field([&](const AtomField& g, auto& view) {
      using V = std::decay_t<decltype(view)>;
      if constexpr (V::rank_dynamic == 2)
        if (&g == &atom_field(id)) view = V(view.label(), view.extent(0), static_cast<std::size_t>(w));
    });
  }

  // Where each checkpointed field's components lie in a checkpoint record of one atom (md_state.cpp): one
  // 8-byte slot per component, in the order of the table, the list fields with this run's row lengths.
  struct RecordLayout {
    int slot[k_natom_fields] = {};
    int width[k_natom_fields] = {};
    int total = 0;
  };
  RecordLayout record_layout() const {
    RecordLayout r;
    for (int k = 0; k < k_natom_fields; ++k) {
      if (!k_atom_fields[k].has(k_checkpointed)) continue;
      r.slot[k] = r.total;
      r.width[k] = width(k_atom_fields[k]);
      r.total += r.width[k];
    }
    return r;
  }
};

}  // namespace spotrun::md
