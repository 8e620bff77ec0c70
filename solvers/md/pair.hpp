#pragma once
// The registry of pair styles. A new potential is one header (an evaluator and its style struct, as
// pair_lj_cut.hpp; pair_style.hpp says what a style gives) and its entry in PairStyles below, beside its
// #include. Everything else reads this list: the choices of md.pair.style (md_registration.cpp, so the
// deck engine's message lists them), the check of a configuration's style and coefficients that validate
// and run make (plan_domain, md_setup.cpp), the evaluator tables of a run (make_pair) and the variant of
// them whose alternatives the one force loop (force.hpp) is compiled for.
#include <string>
#include <vector>

#include "md_config.hpp"
#include "pair_coeffs.hpp"
#include "pair_coul.hpp"
#include "pair_lj_cut.hpp"
#include "pair_lj_cut_coul_cut.hpp"
#include "pair_lj_cut_coul_long.hpp"
#include "pair_morse.hpp"
#include "pair_style.hpp"

namespace spotrun::md {

using PairStyles = PairStyleList<LjCut, Morse, LjCutCoulCut, LjCutCoulLong, CoulCut, CoulLong>;

// The evaluator tables of every (style, precision): the kernels' pair argument, visited once per force call.
using AnyPair = PairStyles::AnyPair;

// The registered style names, in the order of PairStyles.
inline std::vector<std::string> pair_style_names() { return PairStyles::names(); }

// The coefficients of every registered style (the deck keys of [md.pair] and [[md.pair.coeff]]).
inline std::vector<PairStyleInfo> pair_style_infos() { return PairStyles::infos(); }
// The style called name (InputError naming md.pair.style and the registered styles when none is).
inline PairStyleInfo pair_style_info(const std::string& name) { return PairStyles::info(name); }
// The styles that act between charges, for messages: "\"lj/cut/coul/cut\"".
inline std::string charged_pair_style_names() {
  std::string s;
  for (const auto& i : pair_style_infos())
    if (i.charged) s += (s.empty() ? "\"" : ", \"") + i.name + "\"";
  return s;
}

// InputError when the configuration's style is not registered (naming every registered style) or the style
// refuses the coefficients.
inline void check_pair_style(const MdConfig& c, const PairCoeffs& coeffs) { PairStyles::check(c, coeffs); }

// The evaluators of every type pair for the configuration's style and precision; InputError as
// check_pair_style().
inline AnyPair make_pair(const MdConfig& c, const PairCoeffs& coeffs) { return PairStyles::make(c, coeffs); }

}  // namespace spotrun::md
