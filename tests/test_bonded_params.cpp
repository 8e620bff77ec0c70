// The bonded style registry (solvers/md/bonded/bonded_params.hpp), the deck keys it gives ([md.bond],
// [md.angle], [md.dihedral] and their [[...coeff]] tables, [md.special_bonds]; md_registration.cpp) with
// their checks and documentation, and the resolution of every type's coefficients from the deck and the
// data file (bonded_coeffs.hpp): the Kremer-Grest and semiflexible systems of tests/data, the deck's tables
// winning over the file's rows, and every error naming its key or file and line.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/errors.hpp"
#include "io/lammps_data.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/md/bonded/bonded_coeffs.hpp"
#include "solvers/md/bonded/bonded_params.hpp"
#include "solvers/md/md_registration.hpp"
#include "solvers/md/md_solver.hpp"
#include "support/input_error.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using namespace spotrun;
using md::BondedKind;
using Rows = std::vector<std::vector<double>>;
using test::input_error;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

launcher::Deck valid(const std::string& toml) {
  launcher::Deck d = launcher::Deck::parse(toml, "deck.toml");
  d.validate();
  return d;
}

md::MdConfig config(const std::string& toml) { return md::config_from_deck(valid(toml)); }

std::string validate_error(const std::string& toml) {
  return input_error([&] { launcher::Deck::parse(toml, "deck.toml").validate(); });
}

std::vector<std::string> param_names(const md::BondedStyleInfo& s) {
  std::vector<std::string> names;
  for (const auto& p : s.params) names.push_back(p.name);
  return names;
}

const md::BondedParam& param(BondedKind kind, const std::string& style, const std::string& name) {
  const md::BondedStyleInfo* s = md::find_bonded_style(kind, style);
  if (!s) throw std::logic_error("no style " + style);
  return s->params.at(static_cast<std::size_t>(s->index(name)));
}

// The line of text (1-based) that equals `line`.
int line_of(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  int n = 0;
  for (std::string l; std::getline(in, l);) {
    ++n;
    if (l == line) return n;
  }
  ADD_FAILURE() << "no line '" << line << "'";
  return -1;
}

// The Kremer-Grest deck: FENE bonds 30 1.5 1 1 (LAMMPS bond_coeff 1 30.0 1.5 1.0 1.0), special_bonds fene.
const std::string k_kg_bonds =
    "[md.bond]\nstyle = \"fene\"\n[[md.bond.coeff]]\ntype = 1\nk = 30.0\nr0 = 1.5\nepsilon = 1.0\nsigma = 1.0\n";
const std::string k_kg_deck = k_kg_bonds + "[md.special_bonds]\nlj = [0.0, 1.0, 1.0]\n";

// The semiflexible deck: harmonic bonds 100 1.0 and harmonic angles 2.0 180 (degrees), 1-4 pairs at half.
const std::string k_semiflexible_deck =
    "[md.bond]\nstyle = \"harmonic\"\n[[md.bond.coeff]]\ntype = 1\nk = 100.0\nr0 = 1.0\n"
    "[md.angle]\nstyle = \"harmonic\"\n[[md.angle.coeff]]\ntype = 1\nk = 2.0\ntheta0 = 180.0\n"
    "[md.special_bonds]\nlj = [0, 0, 0.5]\n";

// A chain 1-2-3-4 of atom_style molecular: 3 bonds of 2 types, 2 angles, 1 dihedral, with the given
// Coeffs sections (each its header line, a blank line and its rows) before the Atoms.
std::string chain_data(const std::string& coeffs) {
  return "chain\n\n4 atoms\n1 atom types\n3 bonds\n2 bond types\n2 angles\n1 angle types\n1 dihedrals\n"
         "1 dihedral types\n\n0.0 10.0 xlo xhi\n0.0 10.0 ylo yhi\n0.0 10.0 zlo zhi\n\nMasses\n\n1 1.0\n\n" +
         coeffs +
         "Atoms # molecular\n\n1 1 1 1.0 1.0 1.0\n2 1 1 2.0 1.0 1.0\n3 1 1 2.0 2.0 1.0\n4 1 1 3.0 2.0 2.0\n\n"
         "Bonds\n\n1 1 1 2\n2 2 2 3\n3 1 3 4\n\nAngles\n\n1 1 1 2 3\n2 1 2 3 4\n\nDihedrals\n\n1 1 1 2 3 4\n";
}

const std::string k_chain_coeffs =
    "Bond Coeffs # fene\n\n1 30.0 1.5 1.0 1.0\n2 20.0 1.6 0.5 0.9\n\n"
    "Angle Coeffs # harmonic\n\n1 5.0 109.5\n\n"
    "Dihedral Coeffs # opls\n\n1 1.0 -0.5 0.25 0.0\n\n";

io::LammpsData chain(const std::string& coeffs) { return io::parse_lammps_data(chain_data(coeffs), "t.data"); }

Rows resolve(const md::MdConfig& c, BondedKind kind, const io::LammpsData& d, std::size_t count = 0) {
  const io::LammpsTopology& t = kind == BondedKind::Bond ? d.bonds : kind == BondedKind::Angle ? d.angles : d.dihedrals;
  const io::LammpsCoeffs& f = kind == BondedKind::Bond ? d.bond_coeffs
                              : kind == BondedKind::Angle ? d.angle_coeffs
                                                          : d.dihedral_coeffs;
  return md::resolve_bonded_coeffs(c, kind, t.ntypes, &f, "t.data", count);
}

}  // namespace

// --- the registry -----------------------------------------------------------------------------------------

TEST(BondedParams, EveryStyleListsItsCoefficientsInLammpsOrder) {
  EXPECT_EQ(md::bonded_style_names(BondedKind::Bond), (std::vector<std::string>{"harmonic", "fene"}));
  EXPECT_EQ(md::bonded_style_names(BondedKind::Angle), (std::vector<std::string>{"harmonic", "cosine"}));
  EXPECT_EQ(md::bonded_style_names(BondedKind::Dihedral), (std::vector<std::string>{"harmonic", "opls"}));
  auto names = [](BondedKind kind, const std::string& style) {
    return param_names(*md::find_bonded_style(kind, style));
  };
  EXPECT_EQ(names(BondedKind::Bond, "harmonic"), (std::vector<std::string>{"k", "r0"}));
  EXPECT_EQ(names(BondedKind::Bond, "fene"), (std::vector<std::string>{"k", "r0", "epsilon", "sigma"}));
  EXPECT_EQ(names(BondedKind::Angle, "harmonic"), (std::vector<std::string>{"k", "theta0"}));
  EXPECT_EQ(names(BondedKind::Angle, "cosine"), (std::vector<std::string>{"k"}));
  EXPECT_EQ(names(BondedKind::Dihedral, "harmonic"), (std::vector<std::string>{"k", "d", "n"}));
  EXPECT_EQ(names(BondedKind::Dihedral, "opls"), (std::vector<std::string>{"k1", "k2", "k3", "k4"}));
  EXPECT_EQ(md::find_bonded_style(BondedKind::Bond, "cosine"), nullptr);
  EXPECT_EQ(std::string(param(BondedKind::Angle, "harmonic", "theta0").unit), "degrees");
  EXPECT_EQ(std::string(param(BondedKind::Bond, "fene", "k").unit), "epsilon/sigma^2");
  EXPECT_EQ(md::bonded_coeff_names(BondedKind::Bond), (std::vector<std::string>{"k", "r0", "epsilon", "sigma"}));
  EXPECT_EQ(md::quoted_bonded_style_names(BondedKind::Dihedral), "\"harmonic\", \"opls\"");
  for (const BondedKind kind : md::k_bonded_kinds)
    for (const auto& s : md::bonded_styles(kind)) {
      EXPECT_EQ(s.kind, kind);
      EXPECT_FALSE(s.energy.empty()) << s.name;
      for (const auto& p : s.params) {
        EXPECT_LE(p.min, p.max) << s.name << " " << p.name;
        EXPECT_NE(std::string(p.help), "") << s.name << " " << p.name;
      }
    }
}

TEST(BondedParams, ValuesAgainstTheirStyle) {
  const auto& fene_k = param(BondedKind::Bond, "fene", "k");
  EXPECT_EQ(md::bonded_value_problem(fene_k, 0.0), "out of range; allowed: > 0 and <= 1e+09 (epsilon/sigma^2)");
  EXPECT_EQ(md::bonded_value_problem(fene_k, 30.0), "");
  EXPECT_EQ(md::bonded_value_problem(param(BondedKind::Bond, "harmonic", "k"), 0.0), "");  // a harmonic K may be 0
  EXPECT_EQ(md::bonded_value_problem(param(BondedKind::Bond, "fene", "epsilon"), 0.0), "");
  EXPECT_NE(md::bonded_value_problem(param(BondedKind::Bond, "fene", "epsilon"), -1.0), "");
  EXPECT_NE(md::bonded_value_problem(param(BondedKind::Bond, "fene", "sigma"), 0.0), "");
  EXPECT_NE(md::bonded_value_problem(param(BondedKind::Bond, "fene", "r0"), 0.0), "");
  EXPECT_NE(md::bonded_value_problem(fene_k, std::nan("")), "");
  const auto& theta0 = param(BondedKind::Angle, "harmonic", "theta0");
  EXPECT_EQ(md::bonded_value_problem(theta0, 180.0), "");
  EXPECT_EQ(md::bonded_value_problem(theta0, 181.0), "out of range; allowed: >= 0 and <= 180 (degrees)");
  const auto& d = param(BondedKind::Dihedral, "harmonic", "d");
  EXPECT_EQ(md::bonded_value_problem(d, 1.0), "");
  EXPECT_EQ(md::bonded_value_problem(d, -1.0), "");
  EXPECT_EQ(md::bonded_value_problem(d, 0.0), "not allowed; allowed: +1 or -1");
  EXPECT_EQ(md::bonded_value_problem(d, 0.5), "not allowed; allowed: +1 or -1");
  const auto& n = param(BondedKind::Dihedral, "harmonic", "n");
  EXPECT_EQ(md::bonded_value_problem(n, 0.0), "");
  EXPECT_EQ(md::bonded_value_problem(n, 3.0), "");
  EXPECT_EQ(md::bonded_value_problem(n, 1.5), "not an integer; allowed: an integer >= 0 and <= 1000");
  EXPECT_EQ(md::bonded_value_problem(n, -1.0), "not allowed; allowed: an integer >= 0 and <= 1000");
  EXPECT_EQ(md::bonded_value_problem(param(BondedKind::Dihedral, "opls", "k2"), -0.5), "");
}

// The deck schema's choices of md.bond.style (angle, dihedral) are the registered styles; every coefficient
// is a field of the kind's tables; docs/decks.md allows exactly the registered styles and documents each key.
TEST(BondedParams, AreTheDeckKeysAndDocumented) {
  const std::string decks = read_text(std::string(SPOTRUN_SOURCE_DIR) + "/docs/decks.md");
  ASSERT_FALSE(decks.empty()) << "docs/decks.md";
  for (const BondedKind kind : md::k_bonded_kinds) {
    const std::string key = md::bonded_kind_info(kind).key;
    const io::KeySpec* style = launcher::find_key(key + ".style");
    ASSERT_NE(style, nullptr) << key;
    EXPECT_EQ(style->choices, md::bonded_style_names(kind));
    EXPECT_TRUE(style->default_value.empty()) << "the style has no default: the data file's Coeffs header may name it";
    ASSERT_NE(launcher::find_key(key + ".coeff"), nullptr);
    EXPECT_EQ(launcher::find_key(key + ".coeff")->type, io::KeyType::TableArray);
    ASSERT_NE(launcher::find_key(key + ".coeff.type"), nullptr);
    EXPECT_EQ(launcher::find_key(key + ".coeff.type")->type, io::KeyType::Int);
    for (const auto& s : md::bonded_styles(kind))
      for (const auto& p : s.params) {
        const io::KeySpec* field = launcher::find_key(key + ".coeff." + p.name);
        ASSERT_NE(field, nullptr) << key << ".coeff." << p.name;
        EXPECT_TRUE(field->optional);
        EXPECT_LE(field->min, p.min);
        EXPECT_GE(field->max, p.max);
        EXPECT_CONTAINS(decks, "| `" + key + ".coeff." + p.name + "` |");
      }
    // | key | type | unit | default | allowed | meaning |: the allowed values are the fifth cell.
    const std::string row_start = "| `" + key + ".style` |";
    const std::size_t at = decks.find(row_start);
    ASSERT_NE(at, std::string::npos) << "docs/decks.md has no row for " << key << ".style";
    const std::string row = decks.substr(at, decks.find('\n', at) - at);
    std::vector<std::string> cells;
    std::stringstream s(row);
    for (std::string cell; std::getline(s, cell, '|');) cells.push_back(cell);
    ASSERT_GE(cells.size(), 7u) << row;
    std::string allowed;
    for (const auto& n : md::bonded_style_names(kind)) allowed += (allowed.empty() ? " `\"" : ", `\"") + n + "\"`";
    EXPECT_EQ(cells[5], allowed + " ") << row;
  }
  EXPECT_EQ(launcher::find_key("md.special_bonds.lj")->type, io::KeyType::Float3);
  EXPECT_EQ(launcher::find_key("md.special_bonds.coul")->default_value, "[0.0, 0.0, 0.0]");
  EXPECT_EQ(launcher::find_key("md.dihedral.coeff.d")->type, io::KeyType::Int);
  EXPECT_EQ(launcher::find_key("md.dihedral.coeff.k")->type, io::KeyType::Float);
  // A coefficient of several styles: the loosest range, every unit.
  EXPECT_EQ(launcher::find_key("md.angle.coeff.k")->unit, "epsilon/rad^2 or epsilon");
  EXPECT_EQ(launcher::find_key("md.bond.coeff.k")->unit, "epsilon/sigma^2");
  EXPECT_EQ(launcher::find_key("md.bond.coeff.k")->min, 0.0);
  EXPECT_FALSE(launcher::find_key("md.bond.coeff.k")->min_exclusive);
  EXPECT_TRUE(launcher::find_key("md.bond.coeff.sigma")->min_exclusive);
}

// --- the deck -------------------------------------------------------------------------------------------

TEST(BondedDeck, KeysReachMdConfig) {
  const md::MdConfig c = config(
      k_kg_bonds +
      "[md.angle]\nstyle = \"cosine\"\n[[md.angle.coeff]]\ntype = 2\nk = 1.5\n[[md.angle.coeff]]\ntype = 1\nk = 0\n"
      "[md.dihedral]\nstyle = \"harmonic\"\n[[md.dihedral.coeff]]\ntype = 1\nk = 1.0\nd = -1\nn = 2\n"
      "[md.special_bonds]\nlj = [0.0, 1.0, 1.0]\ncoul = [0, 0, 0.8333]\n"
      "[md.initial]\nlammps_data = \"x.data\"\n");
  EXPECT_EQ(c.bond.style, "fene");
  ASSERT_EQ(c.bond.coeffs.size(), 1u);
  EXPECT_EQ(c.bond.coeffs[0].type, 1);
  EXPECT_EQ(c.bond.coeffs[0].values,
            (std::vector<std::pair<std::string, double>>{{"k", 30.0}, {"r0", 1.5}, {"epsilon", 1.0}, {"sigma", 1.0}}));
  EXPECT_EQ(c.angle.style, "cosine");
  ASSERT_EQ(c.angle.coeffs.size(), 2u);
  EXPECT_EQ(c.angle.coeffs[0].type, 2);
  EXPECT_EQ(c.angle.coeffs[0].values, (std::vector<std::pair<std::string, double>>{{"k", 1.5}}));
  EXPECT_EQ(c.angle.coeffs[1].values, (std::vector<std::pair<std::string, double>>{{"k", 0.0}}));
  EXPECT_EQ(c.dihedral.style, "harmonic");
  EXPECT_EQ(c.dihedral.coeffs.at(0).values,
            (std::vector<std::pair<std::string, double>>{{"k", 1.0}, {"d", -1.0}, {"n", 2.0}}));
  EXPECT_EQ(c.special_lj, (std::array<double, 3>{0.0, 1.0, 1.0}));
  EXPECT_EQ(c.special_coul, (std::array<double, 3>{0.0, 0.0, 0.8333}));
  EXPECT_EQ(&c.bonded(BondedKind::Bond), &c.bond);
  EXPECT_EQ(&c.bonded(BondedKind::Angle), &c.angle);
  EXPECT_EQ(&c.bonded(BondedKind::Dihedral), &c.dihedral);

  const md::MdConfig s = config(k_semiflexible_deck);
  EXPECT_EQ(s.bond.coeffs.at(0).values, (std::vector<std::pair<std::string, double>>{{"k", 100.0}, {"r0", 1.0}}));
  EXPECT_EQ(s.angle.coeffs.at(0).values,
            (std::vector<std::pair<std::string, double>>{{"k", 2.0}, {"theta0", 180.0}}));
  EXPECT_EQ(s.special_lj, (std::array<double, 3>{0.0, 0.0, 0.5}));
  EXPECT_EQ(s.dihedral.style, "");
  EXPECT_TRUE(s.dihedral.coeffs.empty());
}

// Without bonded sections: no style, no tables, the LAMMPS special_bonds default, and the resolved deck and
// its physics (which a resume compares with its checkpoint's) as they were before the keys existed.
TEST(BondedDeck, ADeckWithoutThemIsAsBefore) {
  const launcher::Deck d = valid("");
  const md::MdConfig c = md::config_from_deck(d);
  const md::MdConfig defaults;
  for (const BondedKind kind : md::k_bonded_kinds) {
    EXPECT_EQ(c.bonded(kind).style, "");
    EXPECT_TRUE(c.bonded(kind).coeffs.empty());
    EXPECT_EQ(defaults.bonded(kind).style, "");
  }
  EXPECT_EQ(c.special_lj, defaults.special_lj);
  EXPECT_EQ(c.special_coul, defaults.special_coul);
  EXPECT_EQ(c.special_lj, (std::array<double, 3>{0, 0, 0}));
  for (const char* what : {"md.bond", "md.angle", "md.dihedral", "md.special_bonds"}) {
    EXPECT_EQ(d.physics().find(what), std::string::npos) << what;
    EXPECT_EQ(d.resolved().find(std::string("[") + what), std::string::npos) << what;
  }
  // With a bonded section the special-bond factors apply and are shown, defaults included.
  const launcher::Deck b = valid("[md.bond]\nstyle = \"harmonic\"\n");
  EXPECT_CONTAINS(b.resolved(), "[md.bond]\nstyle = \"harmonic\"\n");
  EXPECT_CONTAINS(b.resolved(), "[md.special_bonds]\nlj = [0.0, 0.0, 0.0]\ncoul = [0.0, 0.0, 0.0]\n");
  EXPECT_CONTAINS(b.physics(), "md.bond.style = \"harmonic\"\n");
  EXPECT_CONTAINS(b.physics(), "md.special_bonds.lj = [0.0, 0.0, 0.0]\n");
  const launcher::Deck kg = valid(k_kg_deck);
  EXPECT_CONTAINS(kg.resolved(), "[md.bond]\nstyle = \"fene\"\ncoeff = [\n  {epsilon = 1.0, k = 30.0, r0 = 1.5, sigma = 1.0, type = 1},\n]\n");
  EXPECT_CONTAINS(kg.physics(), "md.special_bonds.lj = [0.0, 1.0, 1.0]\n");
  // A fluid deck does not resolve them.
  const launcher::Deck fluid = valid("[run]\nsolver = \"fluid\"\n[md.special_bonds]\nlj = [0, 0, 1]\n");
  EXPECT_EQ(fluid.physics().find("md.special_bonds"), std::string::npos);
}

TEST(BondedDeck, UnknownStyleNamesTheKeyAndTheAllowedStyles) {
  const std::string bond = validate_error("[md.bond]\nstyle = \"morse\"\n");
  EXPECT_EQ(bond, "deck.toml:2: key 'md.bond.style' = \"morse\": allowed: one of \"harmonic\", \"fene\"");
  EXPECT_CONTAINS(validate_error("[md.angle]\nstyle = \"quartic\"\n"), "'md.angle.style' = \"quartic\": allowed: one of \"harmonic\", \"cosine\"");
  EXPECT_CONTAINS(validate_error("[md.dihedral]\nstyle = \"charmm\"\n"),
                  "'md.dihedral.style' = \"charmm\": allowed: one of \"harmonic\", \"opls\"");
  // A configuration made in code: the resolution names the key and the styles.
  md::MdConfig c;
  c.bond.style = "morse";
  EXPECT_EQ(input_error([&] { md::resolve_bonded_coeffs(c, BondedKind::Bond, 1, nullptr, "t.data"); }),
            "md.bond.style: bond style 'morse' is not known; allowed: \"harmonic\", \"fene\"");
}

TEST(BondedDeck, CoefficientsAgainstTheStyle) {
  // Another style's coefficient: the key, the style and its coefficients (as the pair style says it).
  EXPECT_EQ(validate_error("[md.bond]\nstyle = \"harmonic\"\n[[md.bond.coeff]]\ntype = 1\nk = 100\nr0 = 1\nepsilon = 1\n"),
            "deck.toml:7: md.bond.coeff[0].epsilon: not a coefficient of bond style \"harmonic\" (md.bond.style); its "
            "coefficients: k, r0");
  EXPECT_EQ(validate_error("[md.dihedral]\nstyle = \"opls\"\n[[md.dihedral.coeff]]\ntype = 1\nk1 = 1\nk2 = 1\nk3 = 1\n"
                           "k4 = 1\nn = 2\n"),
            "deck.toml:9: md.dihedral.coeff[0].n: not a coefficient of dihedral style \"opls\" (md.dihedral.style); "
            "its coefficients: k1, k2, k3, k4");
  // No style's coefficient: the deck engine lists the fields of the tables.
  EXPECT_EQ(validate_error("[[md.bond.coeff]]\ntype = 1\nkk = 1\n"),
            "deck.toml:3: unknown key 'md.bond.coeff[0].kk' in a [[md.bond.coeff]] table; allowed: type, k, r0, "
            "epsilon, sigma");
  // A coefficient missing, the type missing.
  EXPECT_EQ(validate_error("[md.bond]\nstyle = \"fene\"\n[[md.bond.coeff]]\ntype = 1\nk = 30\nr0 = 1.5\nepsilon = 1\n"),
            "deck.toml:3: 'md.bond.coeff[0]' has no key 'sigma' (diameter sigma of the WCA repulsion); bond style "
            "\"fene\" (md.bond.style) takes k, r0, epsilon, sigma");
  EXPECT_CONTAINS(validate_error("[md.angle]\nstyle = \"cosine\"\n[[md.angle.coeff]]\nk = 1\n"),
                  "deck.toml:3: 'md.angle.coeff[0]' has no key 'type'");
  // A type given twice.
  EXPECT_EQ(validate_error("[md.bond]\nstyle = \"harmonic\"\n[[md.bond.coeff]]\ntype = 1\nk = 1\nr0 = 1\n"
                           "[[md.bond.coeff]]\ntype = 2\nk = 1\nr0 = 1\n[[md.bond.coeff]]\ntype = 1\nk = 2\nr0 = 1\n"),
            "deck.toml:12: md.bond.coeff[2].type = 1: bond type 1 is also given in md.bond.coeff[0]; give each type "
            "once");
  EXPECT_CONTAINS(validate_error("[[md.bond.coeff]]\ntype = 0\nk = 1\nr0 = 1\n"), "'md.bond.coeff[0].type' = 0: out of range");
  // The ranges of the style: FENE's K > 0 (a harmonic K of 0 is fine), d +1 or -1, n an integer >= 0.
  EXPECT_EQ(validate_error("[md.bond]\nstyle = \"fene\"\n[[md.bond.coeff]]\ntype = 1\nk = 0\nr0 = 1.5\nepsilon = 1\n"
                           "sigma = 1\n"),
            "deck.toml:5: md.bond.coeff[0].k = 0: bond style \"fene\" (md.bond.style): out of range; allowed: > 0 and "
            "<= 1e+09 (epsilon/sigma^2)");
  EXPECT_NO_THROW(valid("[md.bond]\nstyle = \"harmonic\"\n[[md.bond.coeff]]\ntype = 1\nk = 0\nr0 = 0\n"));
  const std::string dihedral = "[md.dihedral]\nstyle = \"harmonic\"\n[[md.dihedral.coeff]]\ntype = 1\nk = 1\n";
  EXPECT_EQ(validate_error(dihedral + "d = 0\nn = 2\n"),
            "deck.toml:6: md.dihedral.coeff[0].d = 0: dihedral style \"harmonic\" (md.dihedral.style): not allowed; "
            "allowed: +1 or -1");
  EXPECT_CONTAINS(validate_error(dihedral + "d = 1\nn = 1.5\n"), "deck.toml:7: key 'md.dihedral.coeff[0].n' = 1.5: expected an integer");
  EXPECT_CONTAINS(validate_error(dihedral + "d = 1\nn = -1\n"), "deck.toml:7: key 'md.dihedral.coeff[0].n' = -1: out of range");
  EXPECT_CONTAINS(validate_error(dihedral + "d = -1.0\nn = 1\n"), "key 'md.dihedral.coeff[0].d' = -1.0: expected an integer");
  EXPECT_NO_THROW(valid(dihedral + "d = -1\nn = 0\n"));
  EXPECT_CONTAINS(validate_error("[md.angle]\nstyle = \"harmonic\"\n[[md.angle.coeff]]\ntype = 1\nk = 2\ntheta0 = 200\n"),
                  "deck.toml:6: key 'md.angle.coeff[0].theta0' = 200: out of range; allowed: >= 0 and <= 180 (degrees)");
  // Without a style the tables wait for the data file's (resolve_bonded_coeffs checks them then).
  EXPECT_NO_THROW(valid("[[md.bond.coeff]]\ntype = 1\nk = 30\nr0 = 1.5\nepsilon = 1\nsigma = 1\n"));
}

TEST(BondedDeck, SpecialBondsAreThreeFactorsInZeroToOne) {
  EXPECT_EQ(config("[md.special_bonds]\nlj = [0, 0, 1]\n").special_lj, (std::array<double, 3>{0, 0, 1}));
  EXPECT_EQ(validate_error("[md.special_bonds]\nlj = [0, 1.5, 1]\n"),
            "deck.toml:2: key 'md.special_bonds.lj' = [0, 1.5, 1]: each component must be >= 0 and <= 1 (-)");
  EXPECT_EQ(validate_error("[md.special_bonds]\ncoul = [0, -0.5, 1]\n"),
            "deck.toml:2: key 'md.special_bonds.coul' = [0, -0.5, 1]: each component must be >= 0 and <= 1 (-)");
  EXPECT_EQ(validate_error("[md.special_bonds]\nlj = [0, 1]\n"),
            "deck.toml:2: key 'md.special_bonds.lj' = [0, 1]: expected an array of 3 numbers");
  EXPECT_CONTAINS(validate_error("[md.special_bonds]\nlj = [0, \"a\", 1]\n"), "expected an array of 3 numbers");
  EXPECT_CONTAINS(validate_error("[md.special_bonds]\nlj = 0.5\n"), "expected an array of 3 numbers");
  EXPECT_CONTAINS(validate_error("[md.special_bonds]\nlj14 = 0.5\n"), "unknown key 'md.special_bonds.lj14'");
  // --set reaches it as any key.
  launcher::Deck d = launcher::Deck::parse(k_kg_deck, "deck.toml");
  d.apply_set("md.special_bonds.lj=[0, 0.5, 1]");
  d.validate();
  EXPECT_EQ(md::config_from_deck(d).special_lj, (std::array<double, 3>{0, 0.5, 1}));
}

// --- the resolution ---------------------------------------------------------------------------------------

// The Kremer-Grest melt of tests/data: FENE 30 1.5 1 1 from the deck for its one bond type; the file
// (write_data nocoeff) has no Bond Coeffs, and no angles or dihedrals.
TEST(BondedCoeffs, KremerGrest) {
  const io::LammpsData d = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/kg-small.data");
  ASSERT_EQ(d.bonds.ntypes, 1);
  ASSERT_EQ(d.bonds.count(), 1470u);
  ASSERT_FALSE(d.bond_coeffs.present);
  const md::MdConfig c = config(k_kg_deck + "[md.initial]\nlammps_data = \"kg-small.data\"\n");
  EXPECT_EQ(resolve(c, BondedKind::Bond, d), (Rows{{30.0, 1.5, 1.0, 1.0}}));
  EXPECT_EQ(resolve(c, BondedKind::Angle, d), Rows{});
  EXPECT_EQ(resolve(c, BondedKind::Dihedral, d), Rows{});
  EXPECT_EQ(c.special_lj, (std::array<double, 3>{0.0, 1.0, 1.0}));
  // Without a style: the file's bonds and types, and what to give.
  EXPECT_EQ(input_error([&] { resolve(md::MdConfig{}, BondedKind::Bond, d, d.bonds.count()); }),
            "t.data: the data file has 1470 bonds of 1 type; give [md.bond] style (allowed: \"harmonic\", \"fene\"), "
            "or a Bond Coeffs section whose header names it (\"Bond Coeffs # harmonic\")");
  // The style without the coefficients: the type to give.
  md::MdConfig style_only;
  style_only.bond.style = "fene";
  EXPECT_EQ(input_error([&] { resolve(style_only, BondedKind::Bond, d); }),
            "bond type 1 has no coefficients: give [[md.bond.coeff]] with type = 1 or a Bond Coeffs section in t.data");
}

// The semiflexible melt of tests/data: harmonic bonds 100 1.0 and harmonic angles 2.0 180, theta0 in degrees
// as LAMMPS's angle_coeff takes it.
TEST(BondedCoeffs, Semiflexible) {
  const io::LammpsData d = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/semiflexible-small.data");
  ASSERT_EQ(d.bonds.ntypes, 1);
  ASSERT_EQ(d.angles.ntypes, 1);
  ASSERT_EQ(d.angles.count(), 1440u);
  const md::MdConfig c = config(k_semiflexible_deck);
  EXPECT_EQ(resolve(c, BondedKind::Bond, d), (Rows{{100.0, 1.0}}));
  EXPECT_EQ(resolve(c, BondedKind::Angle, d), (Rows{{2.0, 180.0}}));
  EXPECT_EQ(resolve(c, BondedKind::Dihedral, d), Rows{});
  md::MdConfig no_angle = c;
  no_angle.angle = {};
  EXPECT_EQ(input_error([&] { resolve(no_angle, BondedKind::Angle, d, d.angles.count()); }),
            "t.data: the data file has 1440 angles of 1 type; give [md.angle] style (allowed: \"harmonic\", \"cosine\"), "
            "or an Angle Coeffs section whose header names it (\"Angle Coeffs # harmonic\")");
}

// The ghosts' reach for the bonded interactions: 1.2 x the file's longest + md.skin, but where FENE bonds are the
// only ones no further than their largest R0 (a FENE bond is always shorter), nor less than the longest.
TEST(BondedCoeffs, GhostReachOfFeneBondsStopsAtR0) {
  const io::LammpsData kg = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/kg-small.data");
  md::MdConfig c = config(k_kg_deck + "[md.initial]\nlammps_data = \"kg-small.data\"\n");
  c.skin = 0.4;
  EXPECT_EQ(md::bonded_ghost_reach(c, kg, 1.1), 1.5);              // 1.2 x 1.1 + 0.4 = 1.72 > R0
  EXPECT_NEAR(md::bonded_ghost_reach(c, kg, 0.8), 1.36, 1e-15);    // 1.2 x 0.8 + 0.4 below R0
  EXPECT_EQ(md::bonded_ghost_reach(c, kg, 1.6), 1.6);              // never below the longest of the file
  // Harmonic bonds and angles: no such bound.
  const io::LammpsData semi = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/semiflexible-small.data");
  md::MdConfig h = config(k_semiflexible_deck);
  h.skin = 0.4;
  EXPECT_NEAR(md::bonded_ghost_reach(h, semi, 1.1), 1.72, 1e-15);
  // FENE bonds beside angles: the angles' partners are two bonds away, no bound either.
  io::LammpsData with_angles = kg;
  with_angles.angles = semi.angles;
  EXPECT_NEAR(md::bonded_ghost_reach(c, with_angles, 1.1), 1.72, 1e-15);
  // Two FENE types: the larger R0.
  const io::LammpsData two = chain(k_chain_coeffs);
  io::LammpsData bonds_only = two;
  bonds_only.angles = io::LammpsTopology{0, 3, {}, {}};
  bonds_only.dihedrals = io::LammpsTopology{0, 4, {}, {}};
  md::MdConfig none;
  none.skin = 0.4;
  EXPECT_EQ(md::bonded_ghost_reach(none, bonds_only, 1.3), 1.6);
}

// The deck's table of a type wins over the file's row; the file serves every other type; without a deck
// style the file's header names it, and the deck's tables are checked against that.
TEST(BondedCoeffs, DeckWinsOverTheFile) {
  const io::LammpsData d = chain(k_chain_coeffs);
  // Everything from the file, the styles from its headers.
  const md::MdConfig none;
  EXPECT_EQ(resolve(none, BondedKind::Bond, d), (Rows{{30.0, 1.5, 1.0, 1.0}, {20.0, 1.6, 0.5, 0.9}}));
  EXPECT_EQ(resolve(none, BondedKind::Angle, d), (Rows{{5.0, 109.5}}));
  EXPECT_EQ(resolve(none, BondedKind::Dihedral, d), (Rows{{1.0, -0.5, 0.25, 0.0}}));
  EXPECT_EQ(md::bonded_style_of(none, BondedKind::Bond, &d.bond_coeffs), "fene");
  // Type 2 from the deck (its style the file's), type 1 from the file.
  const md::MdConfig over = config("[[md.bond.coeff]]\ntype = 2\nk = 40\nr0 = 1.4\nepsilon = 1\nsigma = 1\n");
  EXPECT_EQ(resolve(over, BondedKind::Bond, d), (Rows{{30.0, 1.5, 1.0, 1.0}, {40.0, 1.4, 1.0, 1.0}}));
  // The same with the style in the deck too, and every type from the deck.
  const md::MdConfig both = config(
      "[md.bond]\nstyle = \"fene\"\n[[md.bond.coeff]]\ntype = 2\nk = 40\nr0 = 1.4\nepsilon = 1\nsigma = 1\n"
      "[[md.bond.coeff]]\ntype = 1\nk = 35\nr0 = 1.45\nepsilon = 0\nsigma = 1\n");
  EXPECT_EQ(resolve(both, BondedKind::Bond, d), (Rows{{35.0, 1.45, 0.0, 1.0}, {40.0, 1.4, 1.0, 1.0}}));
  EXPECT_EQ(md::bonded_style_of(both, BondedKind::Bond, &d.bond_coeffs), "fene");
  // A deck table of another style than the file's header names.
  const md::MdConfig other = config("[[md.bond.coeff]]\ntype = 2\nk = 40\nr0 = 1.4\n");
  const int line = line_of(chain_data(k_chain_coeffs), "Bond Coeffs # fene");
  EXPECT_EQ(input_error([&] { resolve(other, BondedKind::Bond, d); }),
            "'md.bond.coeff[0]' has no key 'epsilon' (energy epsilon of the WCA repulsion); bond style \"fene\" "
            "(t.data:" + std::to_string(line) + " 'Bond Coeffs # fene') takes k, r0, epsilon, sigma");
  // Without a file the deck gives every type.
  const md::MdConfig kg = config(k_kg_deck);
  EXPECT_EQ(md::resolve_bonded_coeffs(kg, BondedKind::Bond, 1, nullptr, ""), (Rows{{30.0, 1.5, 1.0, 1.0}}));
  EXPECT_EQ(input_error([&] { md::resolve_bonded_coeffs(kg, BondedKind::Bond, 2, nullptr, ""); }),
            "bond type 2 has no coefficients: give [[md.bond.coeff]] with type = 2 or a Bond Coeffs section");
}

TEST(BondedCoeffs, FileErrorsNameTheFileAndLine) {
  const std::string bond_header = "Bond Coeffs # fene";
  const std::string rest = "Angle Coeffs # harmonic\n\n1 5.0 109.5\n\nDihedral Coeffs # opls\n\n1 1.0 -0.5 0.25 0.0\n\n";
  const int line = line_of(chain_data(k_chain_coeffs), bond_header);
  const std::string at = "t.data:" + std::to_string(line);
  // The header names another style than the deck's.
  const md::MdConfig harmonic = config("[md.bond]\nstyle = \"harmonic\"\n");
  EXPECT_EQ(input_error([&] { resolve(harmonic, BondedKind::Bond, chain(k_chain_coeffs)); }),
            at + ": Bond Coeffs # fene: the file's coefficients are of bond style \"fene\", but md.bond.style is "
                 "\"harmonic\"; make them agree, or give every type in [[md.bond.coeff]] and remove the section");
  // A header without a style and rows of another shape than the deck's style.
  EXPECT_EQ(input_error([&] { resolve(harmonic, BondedKind::Bond, chain("Bond Coeffs\n\n1 30 1.5 1 1\n2 30 1.5 1 1\n\n" + rest)); }),
            at + ": Bond Coeffs, bond type 1: 4 values; bond style \"harmonic\" (md.bond.style) takes 2: k, r0");
  // Even a row the deck overrides has the style's shape.
  const md::MdConfig over = config("[md.bond]\nstyle = \"harmonic\"\n[[md.bond.coeff]]\ntype = 2\nk = 1\nr0 = 1\n");
  EXPECT_EQ(input_error([&] { resolve(over, BondedKind::Bond, chain("Bond Coeffs\n\n1 100 1\n2 100\n\n" + rest)); }),
            at + ": Bond Coeffs, bond type 2: 1 value; bond style \"harmonic\" (md.bond.style) takes 2: k, r0");
  EXPECT_EQ(resolve(over, BondedKind::Bond, chain("Bond Coeffs\n\n1 100 1\n2 100 -5\n\n" + rest)),
            (Rows{{100.0, 1.0}, {1.0, 1.0}}));
  // A value out of the style's range.
  EXPECT_EQ(input_error([&] { resolve(md::MdConfig{}, BondedKind::Bond, chain("Bond Coeffs # fene\n\n1 30 1.5 -1 1\n2 30 1.5 1 1\n\n" + rest)); }),
            at + ": Bond Coeffs, bond type 1: epsilon = -1: bond style \"fene\" (" + at +
                " 'Bond Coeffs # fene'): out of range; allowed: >= 0 and <= 1e+09 (epsilon)");
  // A style spotrun does not have.
  EXPECT_EQ(input_error([&] { resolve(md::MdConfig{}, BondedKind::Bond, chain("Bond Coeffs # morse\n\n1 1 2 1\n2 1 2 1\n\n" + rest)); }),
            at + " 'Bond Coeffs # morse': bond style \"morse\" is not one spotrun has; allowed: \"harmonic\", \"fene\" "
                 "(give [md.bond] style and the coefficients in [[md.bond.coeff]])");
  // No style in the deck or the header.
  EXPECT_EQ(input_error([&] { resolve(md::MdConfig{}, BondedKind::Bond, chain("Bond Coeffs\n\n1 1 2\n2 1 2\n\n" + rest)); }),
            "t.data: the data file has 2 bond types; give [md.bond] style (allowed: \"harmonic\", \"fene\"), or a Bond "
            "Coeffs section whose header names it (\"Bond Coeffs # harmonic\")");
  // Dihedral harmonic: d +1 or -1, n an integer.
  const std::string head = k_chain_coeffs.substr(0, k_chain_coeffs.find("Dihedral Coeffs"));
  const int dline = line_of(chain_data(head + "Dihedral Coeffs # harmonic\n\n1 1.0 0 2\n\n"), "Dihedral Coeffs # harmonic");
  const std::string dat = "t.data:" + std::to_string(dline);
  EXPECT_EQ(input_error([&] { resolve(md::MdConfig{}, BondedKind::Dihedral, chain(head + "Dihedral Coeffs # harmonic\n\n1 1.0 0 2\n\n")); }),
            dat + ": Dihedral Coeffs, dihedral type 1: d = 0: dihedral style \"harmonic\" (" + dat +
                " 'Dihedral Coeffs # harmonic'): not allowed; allowed: +1 or -1");
  EXPECT_EQ(input_error([&] { resolve(md::MdConfig{}, BondedKind::Dihedral, chain(head + "Dihedral Coeffs # harmonic\n\n1 1.0 1 1.5\n\n")); }),
            dat + ": Dihedral Coeffs, dihedral type 1: n = 1.5: dihedral style \"harmonic\" (" + dat +
                " 'Dihedral Coeffs # harmonic'): not an integer; allowed: an integer >= 0 and <= 1000");
  EXPECT_EQ(resolve(md::MdConfig{}, BondedKind::Dihedral, chain(head + "Dihedral Coeffs # harmonic\n\n1 -2.5 -1 3\n\n")),
            (Rows{{-2.5, -1.0, 3.0}}));
  // Rows as a checkpoint recorded them (no line), one type short.
  io::LammpsCoeffs recorded;
  recorded.present = true;
  recorded.style = "harmonic";
  recorded.rows = {{100.0, 1.0}};
  EXPECT_EQ(input_error([&] { md::resolve_bonded_coeffs(md::MdConfig{}, BondedKind::Bond, 2, &recorded, "ckpt.h5"); }),
            "ckpt.h5: Bond Coeffs has 1 row, but the bond types are 1..2");
  EXPECT_EQ(md::resolve_bonded_coeffs(md::MdConfig{}, BondedKind::Bond, 1, &recorded, "ckpt.h5"), (Rows{{100.0, 1.0}}));
}

TEST(BondedCoeffs, DeckTypesAndValues) {
  const io::LammpsData d = chain(k_chain_coeffs);
  // A type beyond the file's, and any type where there are none.
  const md::MdConfig three = config("[[md.bond.coeff]]\ntype = 3\nk = 1\nr0 = 1\nepsilon = 1\nsigma = 1\n");
  EXPECT_EQ(input_error([&] { resolve(three, BondedKind::Bond, d); }),
            "md.bond.coeff[0].type = 3: the bond types are 1..2 (t.data)");
  const md::MdConfig kg = config(k_kg_deck);
  EXPECT_EQ(input_error([&] { md::resolve_bonded_coeffs(kg, BondedKind::Bond, 0, nullptr, ""); }),
            "md.bond.coeff[0].type = 1: the system has no bond types");
  // A type twice, a coefficient of another style, one missing, a value out of range: in a configuration
  // made in code, the same messages as the deck's, without its lines.
  md::MdConfig c;
  c.bond.style = "harmonic";
  c.bond.coeffs = {{1, {{"k", 1.0}, {"r0", 1.0}}}, {1, {{"k", 2.0}, {"r0", 1.0}}}};
  EXPECT_EQ(input_error([&] { resolve(c, BondedKind::Bond, chain("")); }),
            "md.bond.coeff[1].type = 1: bond type 1 is also given in md.bond.coeff[0]; give each type once");
  c.bond.coeffs = {{1, {{"k", 1.0}, {"r0", 1.0}, {"sigma", 1.0}}}};
  EXPECT_EQ(input_error([&] { resolve(c, BondedKind::Bond, chain("")); }),
            "md.bond.coeff[0].sigma: not a coefficient of bond style \"harmonic\" (md.bond.style); its coefficients: k, r0");
  c.bond.coeffs = {{1, {{"k", 1.0}}}};
  EXPECT_EQ(input_error([&] { resolve(c, BondedKind::Bond, chain("")); }),
            "'md.bond.coeff[0]' has no key 'r0' (equilibrium length r0); bond style \"harmonic\" (md.bond.style) takes k, r0");
  c.bond.coeffs = {{1, {{"k", -1.0}, {"r0", 1.0}}}};
  EXPECT_EQ(input_error([&] { resolve(c, BondedKind::Bond, chain("")); }),
            "md.bond.coeff[0].k = -1: bond style \"harmonic\" (md.bond.style): out of range; allowed: >= 0 and <= 1e+09 "
            "(epsilon/sigma^2)");
  // Type 2 has neither a table nor a file row.
  c.bond.coeffs = {{1, {{"k", 1.0}, {"r0", 1.0}}}};
  EXPECT_EQ(input_error([&] { resolve(c, BondedKind::Bond, chain("")); }),
            "bond type 2 has no coefficients: give [[md.bond.coeff]] with type = 2 or a Bond Coeffs section in t.data");
  c.bond.coeffs.push_back({2, {{"r0", 0.9}, {"k", 50.0}}});  // in any order
  EXPECT_EQ(resolve(c, BondedKind::Bond, chain("")), (Rows{{1.0, 1.0}, {50.0, 0.9}}));
}

// A style with no interactions of its kind is no error (a deck for several data files); no style with none
// neither.
TEST(BondedCoeffs, NoTypesNeedNothing) {
  const md::MdConfig s = config(k_semiflexible_deck + "[md.dihedral]\nstyle = \"opls\"\n");
  EXPECT_EQ(md::resolve_bonded_coeffs(s, BondedKind::Dihedral, 0, nullptr, "t.data"), Rows{});
  EXPECT_EQ(md::resolve_bonded_coeffs(md::MdConfig{}, BondedKind::Bond, 0, nullptr, ""), Rows{});
  io::LammpsCoeffs absent;
  EXPECT_EQ(md::resolve_bonded_coeffs(md::MdConfig{}, BondedKind::Angle, 0, &absent, "t.data"), Rows{});
  EXPECT_EQ(md::bonded_style_of(md::MdConfig{}, BondedKind::Angle, &absent), "");
}
