#pragma once
// The canonical order of the owned atoms after a re-neighbouring: by neighbour bin (cache locality), then
// by atom id. The state after a rebuild then depends only on the positions, never on the history of
// migrations (bitwise resume on the same rank count).
//
// A counting sort by bin (atomics, then each bin ordered by id, so the order does not depend on thread
// scheduling) into buffers that are kept: no allocation once they have grown to the atom count (unlike
// Kokkos::BinSort, which allocates its bins and scratch on every sort).
#include <array>

#include "atoms.hpp"
#include "neighbor.hpp"

namespace spotrun::md {

class AtomSorter {
 public:
  // Reorders atoms [0, nlocal) (every field of the table that migrates: x, v, type, image, id, ...) by
  // bins.bin_of(x), then id.
  void sort(AtomStore& atoms, const NeighborList& bins);

 private:
  IntView m_start{"md::sort::start", 0};  // bins + 1: where each bin begins in m_order
  IntView m_bin{"md::sort::bin", 0};
  IntView m_order{"md::sort::order", 0};  // m_order(k): the atom that goes to place k
  // Scratch for the permuted arrays, as large as the fields: each permuted field takes its type's scratch
  // array, which takes the field's old array (the labels of the two travel with them).
  Vec3View m_vec3{"md::sort::vec3", 0};
  Int3View m_int3{"md::sort::int3", 0};
  IntView m_int{"md::sort::int", 0};
  IdView m_id{"md::sort::id", 0};
  DoubleView m_double{"md::sort::double", 0};
  // A list field's scratch, one per field (bonds, special neighbours, ...: their row lengths differ).
  std::array<IdRowsView, k_natom_fields> m_lists;
  // The scratch array of a field's type.
  Vec3View& scratch_of(const Vec3View&) { return m_vec3; }
  Int3View& scratch_of(const Int3View&) { return m_int3; }
  IntView& scratch_of(const IntView&) { return m_int; }
  IdView& scratch_of(const IdView&) { return m_id; }
  DoubleView& scratch_of(const DoubleView&) { return m_double; }
  IdRowsView& scratch_of(const AtomField& f, const IdRowsView&) { return m_lists[index_of(f)]; }
  template <class View>
  auto& scratch_of(const AtomField&, const View& v) {
    return scratch_of(v);
  }
};

}  // namespace spotrun::md
