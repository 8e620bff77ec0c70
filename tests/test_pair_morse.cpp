// md.pair.style = "morse" (solvers/md/pair_morse.hpp), the proof that a style owns its coefficients: the
// Kob-Andersen data file with three Morse pairs against LAMMPS pair morse (tests/data/README.md), both
// list kinds, shifted and not, at 1 and 3 ranks; the evaluator against its closed form and -dE/dr; the deck
// keys d0, alpha, r0 and what is refused (another style's coefficient, a missing one, a pair not given).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/md/md_registration.hpp"
#include "solvers/md/pair.hpp"
#include "support/input_error.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 3);

using namespace spotrun;
using test::input_error;
using test::MdRun;

namespace {

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

md::PairCoeffSpec morse_pair(const std::string& a, const std::string& b, double d0, double alpha, double r0,
                             double cutoff) {
  return {a, b, {{"d0", d0}, {"alpha", alpha}, {"r0", r0}}, cutoff};
}

// tests/data/lammps/in.morse-ref: pair_style morse 2.5 with 1-1 (1.0, 4.0, 1.1), 1-2 (1.5, 4.5, 0.9, 2.0),
// 2-2 (0.5, 5.0, 0.95, 2.2); the 1-2 pair given as "B" "A" (either order).
md::MdConfig morse_config(bool shift) {
  md::MdConfig c;
  c.from_lattice = false;
  c.cutoff = 2.5;
  c.skin = 0.3;
  c.dt = 0.005;
  c.pair_style = "morse";
  c.shift = shift;
  c.types = {{"A", 1.0, 0.0, false}, {"B", 1.0, 0.0, false}};
  c.pair_coeffs = {morse_pair("A", "A", 1.0, 4.0, 1.1, 0.0), morse_pair("B", "A", 1.5, 4.5, 0.9, 2.0),
                   morse_pair("B", "B", 0.5, 5.0, 0.95, 2.2)};
  return c;
}

launcher::Deck valid(const std::string& toml) {
  launcher::Deck d = launcher::Deck::parse(toml, "deck.toml");
  d.validate();
  return d;
}

std::string validate_error(const std::string& toml) {
  return input_error([&] { launcher::Deck::parse(toml, "deck.toml").validate(); });
}

const std::string k_morse_deck =
    "[md]\ncutoff = 2.5\n[md.initial]\nlammps_data = \"ka-small.data\"\n[md.pair]\nstyle = \"morse\"\n"
    "[[md.types]]\nname = \"A\"\n[[md.types]]\nname = \"B\"\n"
    "[[md.pair.coeff]]\ntypes = [\"A\", \"A\"]\nd0 = 1.0\nalpha = 4.0\nr0 = 1.1\n"
    "[[md.pair.coeff]]\ntypes = [\"A\", \"B\"]\nd0 = 1.5\nalpha = 4.5\nr0 = 0.9\ncutoff = 2.0\n"
    "[[md.pair.coeff]]\ntypes = [\"B\", \"B\"]\nd0 = 0.5\nalpha = 5.0\nr0 = 0.95\ncutoff = 2.2\n";

}  // namespace

// 100 steps NVE of tests/data/ka-small.data with Morse pairs against LAMMPS: within 1e-9 relative.
TEST(PairMorse, AgreesWithLammps) {
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-small.data");
  for (const bool shift : {false, true})
    for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
      const std::string csv = shift ? "lammps-ka-small-morse-nve-shift.csv" : "lammps-ka-small-morse-nve.csv";
      const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
      SCOPED_TRACE(csv + ", " + kind);
      auto cfg = morse_config(shift);
      cfg.neighbor_list = list;
      MdRun run(cfg, test::world(), &data);
      ASSERT_EQ(run->natoms(), 864);
      const auto rows = test::run_thermo(*run.solver, 100, 10);
      std::string where;
      const double diff =
          test::max_thermo_diff(rows, test::read_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/" + csv), &where);
      EXPECT_LE(diff, 1e-9) << where;
      test::report(csv + ", " + kind + ", at " + std::to_string(test::nranks()) +
                   " ranks: max relative difference to LAMMPS pair morse " + test::sci(diff) + " (" + where + ")");
    }
}

// E(r0) = -D0 and F(r0) = 0; E and F at other distances from the closed form; the shift is E(rc).
TEST(PairMorse, EvaluatorFollowsTheClosedForm) {
  const double d0 = 1.5, alpha = 4.5, r0 = 0.9, rc = 2.0;
  const md::PairMorse plain(d0, alpha, r0, rc, false), shifted(d0, alpha, r0, rc, true);
  const double erc = d0 * (std::exp(-2 * alpha * (rc - r0)) - 2 * std::exp(-alpha * (rc - r0)));
  EXPECT_EQ(plain.offset, 0.0);
  EXPECT_NEAR(shifted.offset, erc, 1e-15);
  EXPECT_DOUBLE_EQ(plain.cutsq, rc * rc);
  double f = 1, e = 0;
  plain.compute(r0 * r0, f, e);
  EXPECT_NEAR(e, -d0, 1e-15);
  EXPECT_NEAR(f, 0.0, 1e-15);
  for (const double r : {0.7, 0.85, 1.0, 1.3, 1.9}) {
    const double x = std::exp(-alpha * (r - r0));
    const double e_ref = d0 * (x * x - 2 * x);
    const double f_ref = 2 * d0 * alpha * (x * x - x) / r;  // -dE/dr / r
    double fp, ep, fs, es, fo;
    plain.compute(r * r, fp, ep);
    shifted.compute(r * r, fs, es);
    plain.compute_force(r * r, fo);
    EXPECT_NEAR(ep, e_ref, 1e-14 * std::max(1.0, std::abs(e_ref))) << "r " << r;
    EXPECT_NEAR(fp, f_ref, 1e-13 * std::max(1.0, std::abs(f_ref))) << "r " << r;
    EXPECT_EQ(fo, fp);
    EXPECT_EQ(fs, fp);
    EXPECT_NEAR(es, ep - erc, 1e-14);
    // fpair * r == -dE/dr by central differences.
    const double h = 1e-5 * r;
    double f1, e1, f2, e2;
    plain.compute((r + h) * (r + h), f1, e1);
    plain.compute((r - h) * (r - h), f2, e2);
    EXPECT_NEAR(fp * r, -(e1 - e2) / (2 * h), 1e-8 * std::max(1.0, std::abs(fp * r))) << "r " << r;
  }
}

// The deck: the style's coefficients are its [[md.pair.coeff]] keys; the coefficients reach the pair table.
TEST(PairMorse, DeckKeysAreTheStylesCoefficients) {
  const auto d = valid(k_morse_deck);
  const auto cfg = md::config_from_deck(d);
  EXPECT_EQ(cfg.pair_style, "morse");
  EXPECT_TRUE(cfg.pair_defaults.empty());  // morse has no [md.pair] defaults
  const auto p = md::resolve_pair_coeffs(cfg, {"A", "B"});
  ASSERT_EQ(p.style.name, "morse");
  EXPECT_EQ(p.value(0, 2, 1), 1.5);  // d0
  EXPECT_EQ(p.value(1, 1, 2), 4.5);  // alpha
  EXPECT_EQ(p.value(2, 2, 2), 0.95); // r0
  EXPECT_EQ(p.at(p.cutoff, 1, 1), 2.5);
  EXPECT_EQ(p.at(p.cutoff, 1, 2), 2.0);
  EXPECT_EQ(p.min_contact(), 0.9);
  // The coefficients of lj/cut are not keys of a morse deck, nor the other way round.
  EXPECT_EQ(d.physics().find("md.pair.epsilon"), std::string::npos) << d.physics();
  EXPECT_CONTAINS(d.physics(), "d0 = 1.5");
  const auto lj = valid("");
  EXPECT_CONTAINS(lj.physics(), "md.pair.epsilon = 1.0");
  EXPECT_EQ(lj.physics().find("d0"), std::string::npos) << lj.physics();
  EXPECT_EQ(lj.resolved().find("alpha"), std::string::npos) << lj.resolved();
}

TEST(PairMorse, WrongCoefficientsAreNamed) {
  // Another style's coefficient, with the deck's line.
  std::string e = validate_error(k_morse_deck + "[[md.pair.coeff]]\ntypes = [\"1\", \"1\"]\nepsilon = 1.0\n");
  EXPECT_CONTAINS(e, "md.pair.coeff[3].epsilon: not a coefficient of pair style \"morse\" (md.pair.style); its "
                     "coefficients: d0, alpha, r0, cutoff");
  EXPECT_CONTAINS(e, "deck.toml:");
  e = validate_error("[md.pair]\nstyle = \"morse\"\nepsilon = 2.0\n");
  EXPECT_CONTAINS(e, "deck.toml:3: md.pair.epsilon: not a coefficient of pair style \"morse\"");
  e = validate_error("[[md.pair.coeff]]\ntypes = [\"1\", \"1\"]\nepsilon = 1.0\nsigma = 1.0\nr0 = 1.0\n");
  EXPECT_CONTAINS(e, "md.pair.coeff[0].r0: not a coefficient of pair style \"lj/cut\"");
  // A missing one.
  e = validate_error("[md.pair]\nstyle = \"morse\"\n[[md.pair.coeff]]\ntypes = [\"1\", \"1\"]\nd0 = 1.0\nr0 = 1.0\n");
  EXPECT_CONTAINS(e, "deck.toml:3: 'md.pair.coeff[0]' has no key 'alpha' (Morse stiffness alpha of the pair; pair "
                     "style \"morse\" (md.pair.style))");
  e = validate_error("[md.pair]\nstyle = \"morse\"\n[[md.pair.coeff]]\ntypes = [\"1\", \"1\"]\nd0 = 1.0\nalpha = -1.0\n"
                     "r0 = 1.0\n");
  EXPECT_CONTAINS(e, "md.pair.coeff[0].alpha' = -1.0: out of range");
  // A pair not given: morse neither mixes nor has defaults (LAMMPS: All pair coeffs are not set).
  auto c = morse_config(false);
  c.pair_coeffs.erase(c.pair_coeffs.begin() + 1);
  e = input_error([&] { md::resolve_pair_coeffs(c, {"A", "B"}); });
  EXPECT_EQ(e, "md.pair.coeff: pair style \"morse\" does not mix the coefficients of unlike types; give "
               "[[md.pair.coeff]] types = [\"A\", \"B\"] with d0, alpha, r0 (LAMMPS: All pair coeffs are not set)");
  c.pair_coeffs.erase(c.pair_coeffs.begin());
  e = input_error([&] { md::resolve_pair_coeffs(c, {"A", "B"}); });
  EXPECT_EQ(e, "md.pair.coeff: pair style \"morse\" has no defaults for a type's own pair; give [[md.pair.coeff]] "
               "types = [\"A\", \"A\"] with d0, alpha, r0 (LAMMPS: All pair coeffs are not set)");
  // A run refuses them the same way, on every rank.
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-small.data");
  e = input_error([&] { MdRun run(c, test::world(), &data); });
  EXPECT_CONTAINS(e, "has no defaults for a type's own pair");
}
