#pragma once
// What the coefficients of each bonded style are (as pair_params.hpp says it of the pair styles): every
// style of bonded/styles.hpp lists its coefficients once, in LAMMPS `bond_coeff` / `Bond Coeffs` order,
// and the deck keys of [md.bond], [md.angle], [md.dihedral] (md_registration.cpp), their checks, the
// resolution of every type's coefficients (bonded_coeffs.hpp), the messages and the documentation follow
// from that list. A new style is its evaluator (styles.hpp) and one entry of the registry in
// bonded_params.cpp.
#include <string>
#include <vector>

#include "solvers/md/md_config.hpp"

namespace spotrun::md {

// The kinds in deck order, for loops over all of them.
inline constexpr BondedKind k_bonded_kinds[] = {BondedKind::Bond, BondedKind::Angle, BondedKind::Dihedral};

// The words spotrun and LAMMPS use for one kind, for keys and messages.
struct BondedKindInfo {
  BondedKind kind;
  const char* name;      // "bond": the style of "bond style \"fene\"", "bond type 2"
  const char* plural;    // "bonds": the data file's "1470 bonds"
  const char* key;       // "md.bond": its deck section; [[md.bond.coeff]] its tables
  const char* section;   // "Bond Coeffs": the data file's section of the coefficients
  const char* command;   // "bond_coeff": the LAMMPS command whose order the coefficients have
};
const BondedKindInfo& bonded_kind_info(BondedKind kind);

// What values a coefficient takes beyond its range: any number, a whole number, or +1 and -1 alone.
enum class BondedValue { Real, Integer, Sign };

struct BondedParam {
  const char* name;    // its key in [[md.bond.coeff]] tables; the list's order is LAMMPS bond_coeff's
  const char* unit;    // in lj units (an angle in degrees, as LAMMPS writes it)
  const char* help;    // one line, for the schema and messages
  double min, max;     // allowed values: min <= value <= max (min < value when min_exclusive)
  bool min_exclusive;
  BondedValue value;
};

// Why `value` is not one the coefficient takes ("out of range; allowed: > 0 and <= 1e+09 (epsilon/sigma^2)",
// "allowed: +1 or -1"), or "" when it is fine.
std::string bonded_value_problem(const BondedParam& p, double value);
// What the coefficient takes, for messages and the schema: "> 0 and <= 1e+09", "+1 or -1", "an integer >= 0
// and <= 1000".
std::string bonded_allowed_text(const BondedParam& p);

// One registered style.
struct BondedStyleInfo {
  BondedKind kind;
  std::string name;                 // its value of md.bond.style (md.angle.style, md.dihedral.style)
  std::string energy;               // its energy, one line: "E = K (r - r0)^2"
  std::vector<BondedParam> params;  // its coefficients, in LAMMPS order

  // The coefficient names, "k, r0", for messages.
  std::string names() const {
    std::string s;
    for (const auto& p : params) s += (s.empty() ? "" : ", ") + std::string(p.name);
    return s;
  }
  // The index of the coefficient called name, or -1.
  int index(const std::string& name) const {
    for (std::size_t k = 0; k < params.size(); ++k)
      if (name == params[k].name) return static_cast<int>(k);
    return -1;
  }
};

// The registered styles of a kind, in registry order (the choices of its deck key).
const std::vector<BondedStyleInfo>& bonded_styles(BondedKind kind);
// The style of the kind called name, or nullptr.
const BondedStyleInfo* find_bonded_style(BondedKind kind, const std::string& name);
// The names of the kind's styles, in registry order; quoted for a message: "\"harmonic\", \"fene\"".
std::vector<std::string> bonded_style_names(BondedKind kind);
std::string quoted_bonded_style_names(BondedKind kind);
// Every coefficient name of the kind's styles, each once, in the order of first appearance (the fields of
// its [[md.bond.coeff]] tables besides `type`).
std::vector<std::string> bonded_coeff_names(BondedKind kind);

}  // namespace spotrun::md
