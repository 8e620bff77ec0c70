#pragma once
// The registry of pair styles: a new potential is one evaluator header plus one line here. The evaluator
// of every pair of atom types lives in a table in the memory where the kernels run (one force loop for
// one type or many: force.hpp looks the pair up by the two atoms' types).
#include <string>
#include <variant>

#include "md_config.hpp"
#include "pair_coeffs.hpp"
#include "pair_lj_cut.hpp"
#include "precision.hpp"
#include "types.hpp"

namespace spotrun::md {

// Evaluators by type pair, [ti][tj] for types 1..ntypes (row and column 0 unused).
template <class Pair>
struct PairTable {
  Kokkos::View<Pair**, Kokkos::LayoutRight, MemSpace> table;

  KOKKOS_INLINE_FUNCTION const Pair& operator()(int ti, int tj) const { return table(ti, tj); }
};

// The table of a run of one type whose pair is p.
template <class Pair>
PairTable<Pair> single_type_table(const Pair& p) {
  PairTable<Pair> t{Kokkos::View<Pair**, Kokkos::LayoutRight, MemSpace>("md::pair::table", 2, 2)};
  auto h = Kokkos::create_mirror_view(t.table);
  h(1, 1) = p;
  Kokkos::deep_copy(t.table, h);
  return t;
}

// The table of every type pair of the deck's coefficients, for the evaluator Pair (a style at a precision).
template <class Pair>
PairTable<Pair> pair_table(const MdConfig& c, const PairCoeffs& coeffs) {
  const int n1 = coeffs.ntypes + 1;
  PairTable<Pair> t{Kokkos::View<Pair**, Kokkos::LayoutRight, MemSpace>("md::pair::table", n1, n1)};
  auto h = Kokkos::create_mirror_view(t.table);
  for (int i = 1; i < n1; ++i)
    for (int j = 1; j < n1; ++j)
      h(i, j) = Pair(coeffs.at(coeffs.epsilon, i, j), coeffs.at(coeffs.sigma, i, j), coeffs.at(coeffs.cutoff, i, j),
                     c.shift);
  Kokkos::deep_copy(t.table, h);
  return t;
}

// Every (style, precision) the kernels are compiled for.
using AnyPair = std::variant<PairTable<PairLJCut>, PairTable<PairLJCutMixed>>;

inline const char* k_pair_styles = "\"lj/cut\"";

// The style's evaluator template at the configuration's precision.
template <template <class> class Style>
AnyPair pair_at_precision(const MdConfig& c, const PairCoeffs& coeffs) {
  if (c.precision == Precision::Mixed) return pair_table<Style<MixedPrecision::pair_real>>(c, coeffs);
  return pair_table<Style<DoublePrecision::pair_real>>(c, coeffs);
}

inline AnyPair make_pair(const MdConfig& c, const PairCoeffs& coeffs) {
  if (c.pair_style == "lj/cut") return pair_at_precision<PairLJCutT>(c, coeffs);
  throw std::invalid_argument("pair style '" + c.pair_style + "' is not known; allowed: " + k_pair_styles);
}

}  // namespace spotrun::md
