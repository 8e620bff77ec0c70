#pragma once
// The coefficients of every bonded type of a run, resolved as LAMMPS resolves them: the style is the deck's
// ([md.bond] style) or, where the deck names none, the one the data file's Coeffs section names in its
// header comment ("Bond Coeffs # fene", as LAMMPS write_data writes it); a type's coefficients are its
// [[md.bond.coeff]] table (the deck's `bond_coeff`, read after the data file in LAMMPS and so winning over
// it) or else its row of the file's section. The same for angles and dihedrals. The deck engine checks the
// tables against the deck's style when a deck is validated (md_registration.cpp) with the functions below;
// resolve_bonded_coeffs() checks everything again once the types are known.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bonded_params.hpp"
#include "io/lammps_data.hpp"
#include "solvers/md/md_config.hpp"

namespace spotrun::md {

// The start of a message about a deck key ("deck.toml:12"), the keys of tables written with their index
// ("md.bond.coeff.0.k"); empty (or returning ""): no deck at hand, the message starts with the key.
using BondedKeyWhere = std::function<std::string(const std::string& key)>;

// The values of the deck's k-th table of the style's kind ([[md.bond.coeff]] k) in the style's order.
// InputError naming the key for a coefficient the style does not have (listing the style's), one the
// table lacks, or a value the style does not take. style_source: what named the style, for the messages
// ("md.bond.style", or the file's section).
std::vector<double> bonded_table_values(const BondedStyleInfo& style, const BondedCoeffSpec& spec, std::size_t k,
                                        const std::string& style_source, const BondedKeyWhere& where = {});

// InputError naming both tables when two of the deck's tables of the kind give the same type.
void check_bonded_types_unique(const MdConfig& cfg, BondedKind kind, const BondedKeyWhere& where = {});

// The style of the kind a run uses: the deck's, else the style comment of the file's Coeffs section (file:
// nullptr or not present: none), else "" (none).
std::string bonded_style_of(const MdConfig& cfg, BondedKind kind, const io::LammpsCoeffs* file);

// Coefficients of every type 1..ntypes of one kind ([type - 1]), each row in the style's LAMMPS order (raw
// LAMMPS numbers: theta0 in degrees, dihedral harmonic d and n as doubles). A deck table for a type wins
// over the file's row; a file's Coeffs section (from the data file, or as the checkpoint recorded them)
// serves every type the deck does not give. file_name names the file in messages; count: the number of
// interactions of the kind, for the message that asks for a style (0: not known). InputError naming the key
// or file:line and what is allowed: a type the deck names outside 1..ntypes or twice, a type neither
// gives, a file row with the wrong number of values, a file section whose style comment names another
// style than the deck's (or, without a deck style, a style spotrun does not have), coefficients missing,
// unknown or out of the style's range, interactions present (ntypes > 0) but no style given. A style given
// with ntypes == 0 is fine (no rows).
std::vector<std::vector<double>> resolve_bonded_coeffs(const MdConfig& cfg, BondedKind kind, int ntypes,
                                                       const io::LammpsCoeffs* file, const std::string& file_name,
                                                       std::size_t count = 0);

}  // namespace spotrun::md
