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
// The atoms of a checkpoint whose arrays hold every row (by id), with the box and masses of its scalars; the
// type names are the deck's [[md.types]] names when it has one per type. InputError for a damaged state.
solvers::ExportedSystem export_system(const io::SolverState& all_rows, const io::Deck* deck);

}  // namespace spotrun::md
