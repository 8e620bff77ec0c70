#pragma once
// What a pair style's coefficients are (HOOMD's param_type): each style (pair_style.hpp) lists its
// coefficients once, and the deck keys, their checks, the resolution of every type pair (pair_coeffs.hpp),
// the messages and the documentation follow from that list.
#include <string>
#include <vector>

namespace spotrun::md {

// How an unlike pair that [[md.pair.coeff]] does not give gets a coefficient from the two types' own pairs.
enum class PairParamMix {
  Geometric,  // sqrt(a_i a_j), whatever md.pair.mix says (LAMMPS's epsilon)
  ByRule,     // md.pair.mix: sqrt(a_i a_j) (geometric) or (a_i + a_j) / 2 (arithmetic) (LAMMPS's sigma)
  None        // not mixed: every unlike pair must be given (LAMMPS: "All pair coeffs are not set")
};

struct PairParam {
  const char* name;          // its key in [[md.pair.coeff]] tables; the list's order is LAMMPS pair_coeff's
  const char* unit;          // in lj units
  const char* help;          // one line, for the schema and decks.md
  double min, max;           // allowed values: min < value <= max
  // The default of the [md.pair] key of the same name: what a type's own pair not given in
  // [[md.pair.coeff]] takes. nullptr: no such key; every type's own pair must be given.
  const char* type_default;
  PairParamMix mix;
};

// One registered style as the rest of spotrun sees it.
struct PairStyleInfo {
  std::string name;                 // md.pair.style
  std::vector<PairParam> params;    // its coefficients, in LAMMPS order (without the cutoff)
  std::string contact;              // the coefficient whose half bounds the closest start distance
  bool charged = false;             // it acts between charges (force.hpp's PairCharged): md.pair.coulomb_cutoff
  bool long_range = false;          // its Coulomb part is the real-space part of [md.kspace]'s sum
  bool global_coulomb_cutoff = false;  // md.pair.coulomb_cutoff is every pair's (no per-pair Coulomb cutoff)

  // Whether an unlike pair not given can be mixed (no coefficient is PairParamMix::None).
  bool mixes() const {
    for (const auto& p : params)
      if (p.mix == PairParamMix::None) return false;
    return true;
  }
  // Whether a type's own pair not given has defaults ([md.pair] keys) for every coefficient.
  bool has_type_defaults() const {
    for (const auto& p : params)
      if (!p.type_default) return false;
    return true;
  }
  // The coefficient names, "d0, alpha, r0" (with ", cutoff" when with_cutoff), for messages.
  std::string names(bool with_cutoff) const {
    std::string s;
    for (const auto& p : params) s += (s.empty() ? "" : ", ") + std::string(p.name);
    return with_cutoff ? s + ", cutoff" : s;
  }
  // The index of the coefficient called name, or -1.
  int index(const std::string& name) const {
    for (std::size_t k = 0; k < params.size(); ++k)
      if (name == params[k].name) return static_cast<int>(k);
    return -1;
  }
};

}  // namespace spotrun::md
