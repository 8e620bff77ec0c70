#pragma once
// Per-pair coefficients of the atom types of a run, for the run's pair style, resolved as LAMMPS resolves
// them: pairs given in [[md.pair.coeff]]; a type's own pair not given takes the [md.pair] defaults of the
// style's coefficients (md.pair.epsilon, md.pair.sigma of lj/cut) and md.cutoff, or is an error where the
// style has none; every other pair is mixed from the two types' own pairs as each coefficient says
// (pair_params.hpp; pair_modify mix geometric|arithmetic; the cutoff is mixed like sigma, as LAMMPS lj/cut
// does), or is an error where the style does not mix (LAMMPS pair morse).
#include <string>
#include <vector>

#include "md_config.hpp"
#include "pair_params.hpp"

namespace spotrun::md {

struct PairCoeffs {
  int ntypes = 0;
  std::vector<std::string> names;            // names[type - 1]
  PairStyleInfo style;                       // the style whose coefficients these are
  // Tables indexed [ti * (ntypes + 1) + tj] with types 1..ntypes (row and column 0 unused), symmetric:
  // values[k] of the style's coefficient k, cutoff of the pair's cutoff.
  std::vector<std::vector<double>> values;
  std::vector<double> cutoff;
  // A charged style's Coulomb cutoff of each pair, as LAMMPS's lj/cut/coul/cut sets it: a [[md.pair.coeff]]
  // block's `cutoff` is both cutoffs of its pair, other own pairs take md.pair.coulomb_cutoff, unlike pairs not
  // given mix their types' (md.pair.mix). Empty for an uncharged style.
  std::vector<double> coul_cutoff;
  double at(const std::vector<double>& table, int ti, int tj) const { return table[ti * (ntypes + 1) + tj]; }
  // The style's coefficient k (its index in style.params) of the pair (ti, tj).
  double value(std::size_t k, int ti, int tj) const { return at(values[k], ti, tj); }
  double max_cutoff() const;
  // The smallest value of the style's contact coefficient over all pairs (lj/cut: sigma; morse: r0); 0 for a
  // style without one (coul/cut, coul/long).
  double min_contact() const;
};

// The type names of a run of ntypes types: md.types' names, or "1".."ntypes" when the deck has no md.types.
// Throws InputError when md.types gives another number of types (naming `source`, e.g. the data file).
std::vector<std::string> type_names(const MdConfig& cfg, int ntypes, const std::string& source);

// Resolves the coefficients of every pair for `style`; throws InputError naming the [[md.pair.coeff]]
// entry at fault (unknown type, a pair given twice, a coefficient missing or not one of the style's) or
// the pair that is needed and not given (a style without defaults or mixing).
PairCoeffs resolve_pair_coeffs(const MdConfig& cfg, const std::vector<std::string>& names, const PairStyleInfo& style);
// The same for the registered style md.pair.style names (pair.hpp); InputError when none is registered.
PairCoeffs resolve_pair_coeffs(const MdConfig& cfg, const std::vector<std::string>& names);

// The largest pair cutoff the configuration can give, before the types are known: md.cutoff or a larger
// [[md.pair.coeff]] cutoff (mixed cutoffs lie between those of the two types).
double max_configured_cutoff(const MdConfig& cfg);

}  // namespace spotrun::md
