#pragma once
// Per-pair Lennard-Jones coefficients of the atom types of a run, resolved as LAMMPS resolves them:
// pairs given in [[md.pair.coeff]], a type's own pair defaulting to [md.pair] epsilon/sigma and md.cutoff,
// every other pair mixed from the two types' own pairs (pair_modify mix geometric|arithmetic; the cutoff
// is mixed like sigma, as LAMMPS lj/cut does).
#include <string>
#include <vector>

#include "md_config.hpp"

namespace spotrun::md {

struct PairCoeffs {
  int ntypes = 0;
  std::vector<std::string> names;            // names[type - 1]
  // Indexed [ti * (ntypes + 1) + tj] with types 1..ntypes (row and column 0 unused), symmetric.
  std::vector<double> epsilon, sigma, cutoff;
  double at(const std::vector<double>& table, int ti, int tj) const { return table[ti * (ntypes + 1) + tj]; }
  double max_cutoff() const;
  double min_sigma() const;
};

// The type names of a run of ntypes types: md.types' names, or "1".."ntypes" when the deck has no md.types.
// Throws InputError when md.types gives another number of types (naming `source`, e.g. the data file).
std::vector<std::string> type_names(const MdConfig& cfg, int ntypes, const std::string& source);

// Resolves the coefficients of every pair; throws InputError naming the [[md.pair.coeff]] entry at fault
// (unknown type, a pair given twice).
PairCoeffs resolve_pair_coeffs(const MdConfig& cfg, const std::vector<std::string>& names);

// The largest pair cutoff the configuration can give, before the types are known: md.cutoff or a larger
// [[md.pair.coeff]] cutoff (mixed cutoffs lie between those of the two types).
double max_configured_cutoff(const MdConfig& cfg);

}  // namespace spotrun::md
