#pragma once
// The machinery of the pair style registry; the list of styles is pair.hpp's PairStyles. A pair style is a
// struct (pair_lj_cut.hpp's LjCut, pair_morse.hpp's Morse) with
//   static constexpr const char* name;     its value of md.pair.style
//   static constexpr PairParam params[];    its coefficients (below; a std::array of none for a style
//                                           without, pair_coul.hpp), in LAMMPS pair_coeff order: their
//                                           [[md.pair.coeff]] keys, units, ranges, defaults and mixing
//   static constexpr const char* contact;  the coefficient (a distance) whose half is the closest two
//                                           atoms may start (the close-atoms check of set-up)
//   template <class Real> using Evaluator;  its evaluator at the arithmetic Real (precision.hpp): a small
//                                           copyable struct with real_type, cutsq, compute() and
//                                           compute_force() (force.hpp uses them) and a default
//                                           constructor (the unused entries of a table)
//   template <class Real> static Evaluator<Real> evaluator(const PairCoeffs&, int ti, int tj, const MdConfig&);
//                                           the evaluator of the type pair (ti, tj) from the resolved
//                                           coefficients (pair_coeffs.hpp: c.value(k, ti, tj) is params[k])
// and, optionally,
//   static void check_coeffs(const PairCoeffs&, const MdConfig&);
//                                           InputError for coefficients the style cannot take
// Every pair also has a cutoff (the optional key `cutoff` of [[md.pair.coeff]], default md.cutoff; mixed
// like a ByRule distance where the style mixes).
// PairStyleList<Styles...> gives, from the list alone: AnyPair, a std::variant of the evaluator tables of
// every style at every precision (the force loop is compiled once per alternative; one std::visit per force
// call picks it, no virtual call per pair), the style names (the choices of md.pair.style), the coefficients
// of each style (the deck keys and their checks), the check of a configuration's style and coefficients
// (validate and run alike), and the tables of a run.
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "comm/errors.hpp"
#include "md_config.hpp"
#include "pair_coeffs.hpp"
#include "pair_params.hpp"
#include "precision.hpp"
#include "types.hpp"

namespace spotrun::md {

// Whether a pair evaluator acts between charges: `static constexpr bool charged = true`, and compute() /
// compute_force() take q_i q_j after rsq and split the energy into its van der Waals and Coulomb parts
// (force.hpp).
template <class Pair, class = void>
struct PairCharged : std::false_type {};
template <class Pair>
struct PairCharged<Pair, std::enable_if_t<Pair::charged>> : std::true_type {};
// Whether a charged evaluator's Coulomb part is the real-space part of a k-space sum (`long_range = true`):
// special_bonds then also removes the share (1 - factor) of each special pair's whole Coulomb energy.
template <class Pair, class = void>
struct PairLongRange : std::false_type {};
template <class Pair>
struct PairLongRange<Pair, std::enable_if_t<Pair::long_range>> : std::true_type {};
template <class Style, class = void>
struct HasGlobalCoulombCutoff : std::false_type {};
template <class Style>
struct HasGlobalCoulombCutoff<Style, std::void_t<decltype(Style::global_coulomb_cutoff)>> : std::true_type {};

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

namespace impl {

template <class Style, class = void>
struct HasCheckCoeffs : std::false_type {};
template <class Style>
struct HasCheckCoeffs<Style, std::void_t<decltype(Style::check_coeffs(std::declval<const PairCoeffs&>(),
                                                                      std::declval<const MdConfig&>()))>>
    : std::true_type {};

// The table of every type pair of the coefficients, for Style at the arithmetic Real.
template <class Style, class Real>
PairTable<typename Style::template Evaluator<Real>> style_table(const MdConfig& c, const PairCoeffs& coeffs) {
  using Pair = typename Style::template Evaluator<Real>;
  const int n1 = coeffs.ntypes + 1;
  PairTable<Pair> t{Kokkos::View<Pair**, Kokkos::LayoutRight, MemSpace>("md::pair::table", n1, n1)};
  auto h = Kokkos::create_mirror_view(t.table);
  for (int i = 1; i < n1; ++i)
    for (int j = 1; j < n1; ++j) h(i, j) = Style::template evaluator<Real>(coeffs, i, j, c);
  Kokkos::deep_copy(t.table, h);
  return t;
}

}  // namespace impl

template <class... Styles>
struct PairStyleList {
  static_assert(sizeof...(Styles) > 0, "no pair style registered");

  // Every (style, precision) the force loop is compiled for.
  using AnyPair = std::variant<PairTable<typename Styles::template Evaluator<DoublePrecision::pair_real>>...,
                               PairTable<typename Styles::template Evaluator<MixedPrecision::pair_real>>...>;

  // The names of the styles, in the order of the list (the choices of md.pair.style).
  static std::vector<std::string> names() { return {Styles::name...}; }

  // The names for a message: "\"lj/cut\"", "\"a\", \"b\"".
  static std::string quoted_names() {
    std::string s;
    for (const auto& n : names()) s += (s.empty() ? "\"" : ", \"") + n + "\"";
    return s;
  }

  // The coefficients of the style called name; InputError naming md.pair.style and every registered style
  // when none is.
  static PairStyleInfo info(const std::string& name) {
    std::optional<PairStyleInfo> found;
    (void)((name == Styles::name ? (found.emplace(info_of<Styles>()), true) : false) || ...);
    if (!found) throw InputError("md.pair.style: pair style '" + name + "' is not known; allowed: " + quoted_names());
    return *found;
  }

  // Every style's coefficients, in the order of the list.
  static std::vector<PairStyleInfo> infos() { return {info_of<Styles>()...}; }

  // The coefficients of every type pair of the named types for the configuration's style (pair_coeffs.hpp).
  static PairCoeffs resolve(const MdConfig& c, const std::vector<std::string>& names) {
    return resolve_pair_coeffs(c, names, info(c.pair_style));
  }

  // InputError naming md.pair.style and every registered style when the configuration names another style;
  // then the style's own check of the coefficients, if it has one. validate and run call it (plan_domain).
  static void check(const MdConfig& c, const PairCoeffs& coeffs) {
    const bool known = ((c.pair_style == Styles::name ? (check_style<Styles>(c, coeffs), true) : false) || ...);
    if (!known)
      throw InputError("md.pair.style: pair style '" + c.pair_style + "' is not known; allowed: " + quoted_names());
  }

  // The evaluator tables of every type pair, for the configuration's style at its precision. InputError as
  // check().
  static AnyPair make(const MdConfig& c, const PairCoeffs& coeffs) {
    check(c, coeffs);
    std::optional<AnyPair> made;
    (void)((c.pair_style == Styles::name ? (made.emplace(make_style<Styles>(c, coeffs)), true) : false) || ...);
    return std::move(*made);
  }

 private:
  template <class Style>
  static PairStyleInfo info_of() {
    PairStyleInfo i;
    i.name = Style::name;
    i.contact = Style::contact;
    i.charged = PairCharged<typename Style::template Evaluator<double>>::value;
    i.long_range = PairLongRange<typename Style::template Evaluator<double>>::value;
    if constexpr (HasGlobalCoulombCutoff<Style>::value) i.global_coulomb_cutoff = Style::global_coulomb_cutoff;
    for (const PairParam& p : Style::params) i.params.push_back(p);
    return i;
  }
  template <class Style>
  static void check_style(const MdConfig& c, const PairCoeffs& coeffs) {
    if constexpr (impl::HasCheckCoeffs<Style>::value) Style::check_coeffs(coeffs, c);
  }
  template <class Style>
  static AnyPair make_style(const MdConfig& c, const PairCoeffs& coeffs) {
    if (c.precision == Precision::Mixed) return impl::style_table<Style, MixedPrecision::pair_real>(c, coeffs);
    return impl::style_table<Style, DoublePrecision::pair_real>(c, coeffs);
  }
};

}  // namespace spotrun::md
