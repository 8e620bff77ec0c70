#pragma once
// `spotrun export` of MD checkpoints (solvers/registry.hpp: SolverExport), from the per-atom field table
// (atom_fields.hpp): the launcher names no MD dataset or scalar.
#include <vector>

#include "atom_fields.hpp"
#include "io/deck/deck.hpp"
#include "io/solver_state.hpp"
#include "solvers/registry.hpp"

namespace spotrun::md {

// The checkpoint dataset of a field of the table: /md/<name>, one row of its components per atom. A list
// field's row has `width` components (< 0: whatever the checkpoint has, and the dataset is optional); a
// k_optional field's dataset is optional.
io::StateArray dataset_layout(const AtomField& f, int width = -1);
// The datasets export reads: /md/<name> of every exported field of the table (id, x, v, image, type,
// molecule), and of every list field (optional: bond, angle, dihedral, special).
std::vector<io::StateArray> export_arrays();
// The atoms of a checkpoint whose arrays hold every row (by id), with the box and masses of its scalars, and
// its molecules where it has them (/md/molecule, the interactions of /md/bond, /md/angle, /md/dihedral, the
// Coeffs of md.bond.style and md.bond.coeff.<type>.<k>, ...); the type names are the deck's [[md.types]]
// names when it has one per type. InputError for a damaged state.
solvers::ExportedSystem export_system(const io::SolverState& all_rows, const io::Deck* deck);

// The kinds of bonded interaction of the per-atom topology datasets (/md/bond, /md/angle, /md/dihedral) and
// of their checkpoint scalars (md.bond.style, md.bond.ntypes, md.bond.coeff.<type>.<k>): name and atoms each.
struct TopologyKind {
  const char* name;
  int width;
};
inline constexpr TopologyKind k_topology_kinds[] = {{"bond", 2}, {"angle", 3}, {"dihedral", 4}};

// The interactions of one kind in the per-atom rows of `a` (/md/bond: column 0 the atom's count c, then c
// slots of the type and the `width` atom ids, each interaction in the row of every one of its atoms), whose
// atoms' ids are `ids` (one per row): each once, from the row of its first atom, in row order then slot
// order. ntypes: the largest type. InputError naming the dataset, the atom and the value for rows of another
// layout.
io::LammpsTopology interactions_of(const io::StateArray& a, const std::int64_t* ids, int width);

// A kind's Coeffs from a checkpoint's scalars: the style md.<kind>.style (none without it) and, per type 1..
// ntypes, md.<kind>.coeff.<type>.<k> for k = 1, 2, ... (LAMMPS's order). InputError naming the scalar a type
// lacks.
io::LammpsCoeffs coeffs_of(const io::SolverState& st, const std::string& kind, int ntypes);

}  // namespace spotrun::md
