#pragma once
// The registry of pair styles: a new potential is one evaluator header plus one line here.
#include <string>
#include <variant>

#include "md_config.hpp"
#include "pair_lj_cut.hpp"

namespace spotrun::md {

using AnyPair = std::variant<PairLJCut>;

inline const char* k_pair_styles = "\"lj/cut\"";

inline AnyPair make_pair(const MdConfig& c) {
  if (c.pair_style == "lj/cut") return PairLJCut(c.epsilon, c.sigma, c.cutoff, c.shift);
  throw std::invalid_argument("pair style '" + c.pair_style + "' is not known; allowed: " + k_pair_styles);
}

}  // namespace spotrun::md
