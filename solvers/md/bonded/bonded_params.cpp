#include "bonded_params.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace spotrun::md {

namespace {

const BondedKindInfo k_kinds[] = {
    {BondedKind::Bond, "bond", "bonds", "md.bond", "Bond Coeffs", "bond_coeff"},
    {BondedKind::Angle, "angle", "angles", "md.angle", "Angle Coeffs", "angle_coeff"},
    {BondedKind::Dihedral, "dihedral", "dihedrals", "md.dihedral", "Dihedral Coeffs", "dihedral_coeff"},
};

// The registry: every style of bonded/styles.hpp with its coefficients in LAMMPS order. Ranges: a harmonic
// stiffness is >= 0 (a negative one has no stable length or angle); FENE needs K, R0 and sigma > 0 (its
// energy divides by them) and epsilon >= 0 (0: no repulsion); a dihedral's terms are periodic and stay
// bounded whatever their sign, so their K take any value, as LAMMPS lets them.
std::vector<BondedStyleInfo> make_registry() {
  using V = BondedValue;
  return {
      {BondedKind::Bond, "harmonic", "E = K (r - r0)^2",
       {{"k", "epsilon/sigma^2", "Spring constant K", 0, 1e9, false, V::Real},
        {"r0", "sigma", "Equilibrium length r0", 0, 1e3, false, V::Real}}},
      {BondedKind::Bond, "fene",
       "E = -K R0^2/2 ln(1 - (r/R0)^2) + 4 epsilon [(sigma/r)^12 - (sigma/r)^6] + epsilon for r < 2^(1/6) sigma",
       {{"k", "epsilon/sigma^2", "Spring constant K", 0, 1e9, true, V::Real},
        {"r0", "sigma", "Maximum length R0", 0, 1e3, true, V::Real},
        {"epsilon", "epsilon", "Energy epsilon of the WCA repulsion", 0, 1e9, false, V::Real},
        {"sigma", "sigma", "Diameter sigma of the WCA repulsion", 0, 1e3, true, V::Real}}},
      {BondedKind::Angle, "harmonic", "E = K (theta - theta0)^2",
       {{"k", "epsilon/rad^2", "Stiffness K", 0, 1e9, false, V::Real},
        {"theta0", "degrees", "Equilibrium angle theta0", 0, 180, false, V::Real}}},
      {BondedKind::Angle, "cosine", "E = K (1 + cos theta)",
       {{"k", "epsilon", "Stiffness K", 0, 1e9, false, V::Real}}},
      {BondedKind::Dihedral, "harmonic", "E = K [1 + d cos(n phi)]",
       {{"k", "epsilon", "Energy K", -1e9, 1e9, false, V::Real},
        {"d", "-", "Sign d", -1, 1, false, V::Sign},
        {"n", "-", "Multiplicity n", 0, 1000, false, V::Integer}}},
      {BondedKind::Dihedral, "opls",
       "E = K1/2 (1 + cos phi) + K2/2 (1 - cos 2 phi) + K3/2 (1 + cos 3 phi) + K4/2 (1 - cos 4 phi)",
       {{"k1", "epsilon", "K1 (the cos phi term)", -1e9, 1e9, false, V::Real},
        {"k2", "epsilon", "K2 (the cos 2 phi term)", -1e9, 1e9, false, V::Real},
        {"k3", "epsilon", "K3 (the cos 3 phi term)", -1e9, 1e9, false, V::Real},
        {"k4", "epsilon", "K4 (the cos 4 phi term)", -1e9, 1e9, false, V::Real}}},
  };
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace

const BondedKindInfo& bonded_kind_info(BondedKind kind) {
  for (const auto& k : k_kinds)
    if (k.kind == kind) return k;
  return k_kinds[0];
}

std::string bonded_allowed_text(const BondedParam& p) {
  if (p.value == BondedValue::Sign) return "+1 or -1";
  const std::string range = (p.min_exclusive ? "> " : ">= ") + number(p.min) + " and <= " + number(p.max);
  return p.value == BondedValue::Integer ? "an integer " + range : range;
}

std::string bonded_value_problem(const BondedParam& p, double value) {
  const bool in_range =
      std::isfinite(value) && value >= p.min && value <= p.max && !(p.min_exclusive && value == p.min);
  const bool whole = value == std::floor(value);
  const bool fine = p.value == BondedValue::Sign ? (value == 1 || value == -1)
                    : p.value == BondedValue::Integer ? in_range && whole
                                                      : in_range;
  if (fine) return "";
  const std::string unit = std::string(p.unit) == "-" ? "" : std::string(" (") + p.unit + ")";
  if (p.value == BondedValue::Real) return "out of range; allowed: " + bonded_allowed_text(p) + unit;
  const bool fraction = p.value == BondedValue::Integer && in_range && !whole;
  return std::string(fraction ? "not an integer" : "not allowed") + "; allowed: " + bonded_allowed_text(p);
}

const std::vector<BondedStyleInfo>& bonded_styles(BondedKind kind) {
  static const std::vector<std::vector<BondedStyleInfo>> by_kind = [] {
    std::vector<std::vector<BondedStyleInfo>> v(std::size(k_kinds));
    for (auto& s : make_registry()) v[static_cast<std::size_t>(s.kind)].push_back(std::move(s));
    return v;
  }();
  return by_kind[static_cast<std::size_t>(kind)];
}

const BondedStyleInfo* find_bonded_style(BondedKind kind, const std::string& name) {
  for (const auto& s : bonded_styles(kind))
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> bonded_style_names(BondedKind kind) {
  std::vector<std::string> names;
  for (const auto& s : bonded_styles(kind)) names.push_back(s.name);
  return names;
}

std::string quoted_bonded_style_names(BondedKind kind) {
  std::string s;
  for (const auto& n : bonded_style_names(kind)) s += (s.empty() ? "\"" : ", \"") + n + "\"";
  return s;
}

std::vector<std::string> bonded_coeff_names(BondedKind kind) {
  std::vector<std::string> names;
  for (const auto& s : bonded_styles(kind))
    for (const auto& p : s.params)
      if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  return names;
}

}  // namespace spotrun::md
