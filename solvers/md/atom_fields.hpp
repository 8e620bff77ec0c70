#pragma once
// The fields an MD atom carries, declared once (docs/layout.md#extension-points, as LAMMPS's AtomVec lists its
// fields_exchange, fields_border and fields_data_atom): SPOTRUN_MD_ATOM_FIELDS below. Everything else reads it:
//
//   AtomStore (atoms.hpp)          one view per field, grown together (reserve())
//   migration (halo.cpp)           the fields that migrate travel with their atom (particles::Distributor)
//   the sort after re-neighbouring every field that migrates is permuted with its atom (atom_sort.cpp)
//   ghosts (halo.cpp)              the ghosted fields are copied to the ghosts (particles::Halo::build)
//   checkpoints (md_state.cpp)     each checkpointed field is a dataset /md/<name>, rows in id order, in the
//                                  order of the table; a restore gives every migrating field back to its atom
//   `spotrun export`, trajectories the exported fields (md_export.cpp, md_trajectory.cpp)
//
// A new per-atom field (a charge, a molecule id) is one FIELD line: its name (also its dataset's, /md/<name>),
// its view type (types.hpp; the element type and component count follow from it), what the generic code does
// with it, and the noun messages use. Its initial values (zero unless set up) and its physics are the code's
// that uses it.
//
// A list field (IdRowsView: bond, angle, dihedral, special) has a row length the run chooses
// (AtomStore::set_width(), from the data file or the checkpoint; 0 when the system has no such list): its
// dataset /md/<name> has rows of that length and is written only when it is not 0. List fields come after
// every fixed-width field, so the fixed fields' places in a record and among the datasets are constants.
//
// The topology lists (bonded/topology.hpp) hold, per atom, every interaction of the kind it takes part in:
// column 0 the count c, then slot s < c at columns 1 + s (W + 1): the interaction type and the W atom ids in
// the interaction's order (W = 2 bonds, 3 angles, 4 dihedrals). special: columns 0-2 the cumulative counts of
// the 1-2, 1-3 and 1-4 neighbours (LAMMPS's nspecial), then their ids.
//
// min_state: the per-atom vectors of an energy minimisation in progress ([md.minimize], minimize/min_vectors.hpp),
// doubles held by their bit patterns in the 64-bit slots (so that they migrate, sort and checkpoint as a list
// field); length 0 outside a minimisation.
#include <cstdint>

#include "types.hpp"

namespace spotrun::md {

// What the generic code does with a field (AtomField::flags).
enum AtomFieldFlag : unsigned {
  k_migrates = 1u << 0,      // moves with its atom: migration between ranks, the sort, a restore
  k_ghosted = 1u << 1,       // copied to the ghost atoms at each re-neighbouring
  k_checkpointed = 1u << 2,  // a dataset /md/<name> of every checkpoint
  k_exported = 1u << 3,      // read by `spotrun export` and by the trajectory frames (H5MD, dump)
  k_optional = 1u << 4,      // a checkpoint without its dataset (one written before the field existed) reads as 0
};

// FIELD(name, view type, flags, noun), in the order of the checkpoint's datasets.
#define SPOTRUN_MD_ATOM_FIELDS(FIELD)                                                             \
  FIELD(id, IdView, k_migrates | k_ghosted | k_checkpointed | k_exported, "id")                   \
  FIELD(x, Vec3View, k_migrates | k_ghosted | k_checkpointed | k_exported, "position")            \
  FIELD(v, Vec3View, k_migrates | k_checkpointed | k_exported, "velocity")                        \
  FIELD(f, Vec3View, k_checkpointed | k_exported, "force")                                        \
  FIELD(image, Int3View, k_migrates | k_checkpointed | k_exported, "image flag")                  \
  FIELD(x_build, Vec3View, k_checkpointed, "position at the last neighbour build")                \
  FIELD(type, IntView, k_migrates | k_ghosted | k_checkpointed | k_exported, "type")                \
  FIELD(molecule, IdView, k_migrates | k_checkpointed | k_exported | k_optional, "molecule id")     \
  FIELD(q, DoubleView, k_migrates | k_ghosted | k_checkpointed | k_exported | k_optional, "charge") \
  FIELD(bond, IdRowsView, k_migrates | k_checkpointed, "bond list")                                \
  FIELD(angle, IdRowsView, k_migrates | k_checkpointed, "angle list")                              \
  FIELD(dihedral, IdRowsView, k_migrates | k_checkpointed, "dihedral list")                        \
  FIELD(special, IdRowsView, k_migrates | k_checkpointed, "special neighbour list")              \
  FIELD(min_state, IdRowsView, k_migrates | k_checkpointed, "minimiser state")

// The element type of a field's view.
enum class AtomElem { f64, i32, i64 };

namespace impl {
template <class View>
struct AtomViewTraits;
template <>
struct AtomViewTraits<Vec3View> {
  static constexpr AtomElem elem = AtomElem::f64;
  static constexpr int width = 3;
};
template <>
struct AtomViewTraits<DoubleView> {
  static constexpr AtomElem elem = AtomElem::f64;
  static constexpr int width = 1;
};
template <>
struct AtomViewTraits<Int3View> {
  static constexpr AtomElem elem = AtomElem::i32;
  static constexpr int width = 3;
};
template <>
struct AtomViewTraits<IntView> {
  static constexpr AtomElem elem = AtomElem::i32;
  static constexpr int width = 1;
};
template <>
struct AtomViewTraits<IdView> {
  static constexpr AtomElem elem = AtomElem::i64;
  static constexpr int width = 1;
};
template <>
struct AtomViewTraits<IdRowsView> {
  static constexpr AtomElem elem = AtomElem::i64;
  static constexpr int width = 0;  // the run's (AtomStore::width())
};
}  // namespace impl

// One line of the table.
struct AtomField {
  const char* name;   // "x": the AtomStore member, the dataset /md/x
  AtomElem elem;      // double, int or 64-bit int
  int width;          // components per atom: 1 or 3; 0 for a list field (the run's: AtomStore::width())
  unsigned flags;     // AtomFieldFlag
  const char* noun;   // for messages: "image flag"
  constexpr bool has(unsigned flag) const { return (flags & flag) != 0; }
  constexpr bool is_integer() const { return elem != AtomElem::f64; }
  constexpr bool is_list() const { return width == 0; }
};

// The fields by name: AtomFieldId::x.
enum class AtomFieldId : int {
#define SPOTRUN_MD_ATOM_FIELD_ID(name, View, flags, noun) name,
  SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_ATOM_FIELD_ID)
#undef SPOTRUN_MD_ATOM_FIELD_ID
};

inline constexpr AtomField k_atom_fields[] = {
#define SPOTRUN_MD_ATOM_FIELD_ROW(name, View, flags, noun) \
  {#name, impl::AtomViewTraits<View>::elem, impl::AtomViewTraits<View>::width, (flags), noun},
    SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_ATOM_FIELD_ROW)
#undef SPOTRUN_MD_ATOM_FIELD_ROW
};
inline constexpr int k_natom_fields = static_cast<int>(sizeof(k_atom_fields) / sizeof(k_atom_fields[0]));

constexpr const AtomField& atom_field(AtomFieldId f) { return k_atom_fields[static_cast<int>(f)]; }
constexpr int index_of(AtomFieldId f) { return static_cast<int>(f); }
constexpr int index_of(const AtomField& f) { return static_cast<int>(&f - k_atom_fields); }

// A checkpoint record of one atom (md_state.cpp: the atoms' records sent to the ranks that write or restore
// them): the components of every checkpointed field, one 8-byte slot each, in the order of the table. The
// constants below count the fixed-width fields (a list field's slots follow them: AtomStore::record_layout()).
constexpr int record_slot(AtomFieldId f) {
  int slot = 0;
  for (int k = 0; k < index_of(f); ++k)
    if (k_atom_fields[k].has(k_checkpointed)) slot += k_atom_fields[k].width;
  return slot;
}
constexpr int record_slot(const AtomField& f) { return record_slot(static_cast<AtomFieldId>(index_of(f))); }
// The place of a checkpointed field among the checkpoint's datasets (MdSolver::state_layout()).
constexpr int checkpoint_index(AtomFieldId f) {
  int n = 0;
  for (int k = 0; k < index_of(f); ++k)
    if (k_atom_fields[k].has(k_checkpointed)) ++n;
  return n;
}
constexpr int record_slots() {
  int n = 0;
  for (const auto& f : k_atom_fields)
    if (f.has(k_checkpointed)) n += f.width;
  return n;
}
// Bytes one atom takes in the AtomStore (every field), for the memory estimate.
constexpr int atom_store_bytes() {
  int b = 0;
  for (const auto& f : k_atom_fields) b += f.width * (f.elem == AtomElem::i32 ? 4 : 8);
  return b;
}

// Bytes one atom's migrating fields take (a migration message, the buffer of the atoms that stay).
constexpr int migrating_bytes() {
  int b = 0;
  for (const auto& f : k_atom_fields)
    if (f.has(k_migrates)) b += f.width * (f.elem == AtomElem::i32 ? 4 : 8);
  return b;
}

// A field that moves with its atom must be in the checkpoint: a restore gives it back.
constexpr bool migrating_fields_checkpointed() {
  for (const auto& f : k_atom_fields)
    if (f.has(k_migrates) && !f.has(k_checkpointed)) return false;
  return true;
}
// An exported field is read from the checkpoint's datasets (state()).
constexpr bool exported_fields_checkpointed() {
  for (const auto& f : k_atom_fields)
    if (f.has(k_exported) && !f.has(k_checkpointed)) return false;
  return true;
}
static_assert(exported_fields_checkpointed(), "SPOTRUN_MD_ATOM_FIELDS: an exported field must be checkpointed");
static_assert(migrating_fields_checkpointed(), "SPOTRUN_MD_ATOM_FIELDS: a migrating field must be checkpointed");
static_assert(atom_field(AtomFieldId::x).has(k_migrates) && atom_field(AtomFieldId::id).has(k_migrates),
              "SPOTRUN_MD_ATOM_FIELDS: positions and ids move with their atoms");
// List fields come last: the places of the fixed fields do not depend on the run.
constexpr bool list_fields_last() {
  bool list_seen = false;
  for (const auto& f : k_atom_fields) {
    if (!f.is_list() && list_seen) return false;
    list_seen = list_seen || f.is_list();
  }
  return true;
}
static_assert(list_fields_last(), "SPOTRUN_MD_ATOM_FIELDS: list fields (IdRowsView) come after every other field");
// A list field is neither ghosted nor exported one component at a time: the code of its physics reads it.
constexpr bool list_fields_private() {
  for (const auto& f : k_atom_fields)
    if (f.is_list() && (f.has(k_ghosted) || f.has(k_exported))) return false;
  return true;
}
static_assert(list_fields_private(), "SPOTRUN_MD_ATOM_FIELDS: a list field is neither ghosted nor exported");

}  // namespace spotrun::md
