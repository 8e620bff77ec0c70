// Atom types of md::MdSolver at 1-4 ranks: the Kob-Andersen 80:20 mixture from a data file against LAMMPS
// (explicit unlike pair and pair_modify mix arithmetic), the pair coefficients LAMMPS's mixing rules give,
// errors naming the [[md.pair.coeff]] entry at fault, and lattice starts with a type fraction.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "comm/errors.hpp"
#include "solvers/md/pair_coeffs.hpp"
#include "support/input_error.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;
using test::ka_config;
using test::input_error;
using test::MdRun;

// 100 steps NVE of tests/data/ka-small.data against LAMMPS (tests/data/README.md), both list kinds.
TEST(MdTypes, KobAndersenAgreesWithLammps) {
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-small.data");
  ASSERT_EQ(data.ntypes, 2);
  for (const bool explicit_ab : {true, false})
    for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
      const std::string csv = explicit_ab ? "lammps-ka-small-nve.csv" : "lammps-ka-small-mixed-nve.csv";
      const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
      SCOPED_TRACE(csv + ", " + kind);
      auto cfg = ka_config(explicit_ab);
      cfg.neighbor_list = list;
      MdRun run(cfg, test::world(), &data);
      EXPECT_EQ(run->natoms(), 864);
      const auto rows = test::run_thermo(*run.solver, 100, 10);
      std::string where;
      const double diff = test::max_thermo_diff(rows, test::read_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/" + csv), &where);
      EXPECT_LE(diff, 1e-9) << where;
      test::report(csv + ", " + kind + ", at " + std::to_string(test::nranks()) +
                   " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" + where + ")");
    }
}

// 100 steps of Nose-Hoover NVT (LAMMPS fix nvt temp 0.8 0.8 0.25, tchain 3) from the same start. The
// system starts at T = 1.07 and is pulled towards 0.8; the extended energy (etotal + thermostat energy per
// atom) stays put while etotal falls.
TEST(MdTypes, NoseHooverNvtAgreesWithLammps) {
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-small.data");
  const auto ref = test::read_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-ka-small-nvt.csv");
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
    const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
    SCOPED_TRACE(kind);
    auto cfg = ka_config(true);
    cfg.neighbor_list = list;
    cfg.ensemble = md::Ensemble::Nvt;
    cfg.temperature = 0.8;
    cfg.damp = 0.25;
    cfg.tchain = 3;
    MdRun run(cfg, test::world(), &data);
    run->setup();
    const double extended0 = run->thermo()[4] + run->thermostat().energy() / 864;
    const auto rows = test::run_thermo(*run.solver, 100, 10, false);
    const double extended1 = rows.back()[5] + run->thermostat().energy() / 864;
    std::string where;
    const double diff = test::max_thermo_diff(rows, ref, &where);
    EXPECT_LE(diff, 1e-9) << where;
    EXPECT_LT(std::abs(extended1 - extended0), 2e-3 * std::abs(extended0));
    EXPECT_LT(rows.back()[5], rows.front()[5] - 0.3);  // the thermostat takes energy out
    test::report("lammps-ka-small-nvt.csv, " + kind + ", at " + std::to_string(test::nranks()) +
                 " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" + where +
                 "); extended energy per atom " + test::sci(extended0) + " -> " + test::sci(extended1));
  }
}

// The coefficients of every pair as LAMMPS resolves them (hand-computed from the mixing rules).
TEST(MdTypes, PairCoefficientsFollowTheMixingRules) {
  md::MdConfig c;
  c.cutoff = 3.0;
  c.pair_defaults = {{"epsilon", 2.0}, {"sigma", 1.2}};  // type "3" is not given: md.pair.epsilon/sigma, md.cutoff
  c.pair_coeffs = {test::lj_pair("1", "1", 1.0, 1.0, 2.5), test::lj_pair("2", "2", 0.5, 0.8, 0.0),
                   test::lj_pair("2", "1", 1.5, 0.9, 2.25)};
  const std::vector<std::string> names{"1", "2", "3"};
  for (const auto mix : {md::PairMix::Geometric, md::PairMix::Arithmetic}) {
    c.mix = mix;
    const auto p = md::resolve_pair_coeffs(c, names);
    const bool geo = mix == md::PairMix::Geometric;
    // given: 1-2 (either order), 2-2 with the default cutoff md.cutoff
    EXPECT_EQ(p.value(0, 1, 2), 1.5);
    EXPECT_EQ(p.value(1, 2, 1), 0.9);
    EXPECT_EQ(p.at(p.cutoff, 1, 2), 2.25);
    EXPECT_EQ(p.at(p.cutoff, 2, 2), 3.0);
    EXPECT_EQ(p.value(0, 3, 3), 2.0);
    // mixed: 1-3 and 2-3
    EXPECT_DOUBLE_EQ(p.value(0, 1, 3), std::sqrt(2.0));
    EXPECT_DOUBLE_EQ(p.value(0, 3, 2), 1.0);
    EXPECT_DOUBLE_EQ(p.value(1, 1, 3), geo ? std::sqrt(1.2) : 1.1);
    EXPECT_DOUBLE_EQ(p.value(1, 2, 3), geo ? std::sqrt(0.96) : 1.0);
    EXPECT_DOUBLE_EQ(p.at(p.cutoff, 3, 1), geo ? std::sqrt(7.5) : 2.75);
    EXPECT_DOUBLE_EQ(p.at(p.cutoff, 2, 3), 3.0);
    EXPECT_DOUBLE_EQ(p.max_cutoff(), 3.0);
    EXPECT_DOUBLE_EQ(p.min_contact(), 0.8);
  }
}

TEST(MdTypes, BadPairCoefficientsNameTheEntry) {
  md::MdConfig c;
  c.pair_coeffs = {test::lj_pair("A", "A", 1.0, 1.0, 2.5), test::lj_pair("A", "C", 1.0, 1.0, 2.5)};
  const std::vector<std::string> names{"A", "B"};
  std::string e = input_error([&] { md::resolve_pair_coeffs(c, names); });
  EXPECT_NE(e.find("md.pair.coeff[1].types: no atom type named \"C\"; the types are \"A\", \"B\""), std::string::npos) << e;
  c.pair_coeffs = {test::lj_pair("A", "B", 1.0, 1.0, 2.5), test::lj_pair("B", "A", 1.0, 1.0, 2.5)};
  e = input_error([&] { md::resolve_pair_coeffs(c, names); });
  EXPECT_NE(e.find("md.pair.coeff[1]: the pair \"B\" \"A\" is given twice"), std::string::npos) << e;
  // md.types must name as many types as the data file has.
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-small.data");
  c = ka_config(true);
  c.types.push_back({"C", 1.0, 0.0, false});
  e = input_error([&] { MdRun run(c, test::world(), &data); });
  EXPECT_NE(e.find("md.types names 3 atom type(s), but the data file has 2"), std::string::npos) << e;
  c = ka_config(true);
  c.types[1].mass = 2.0;
  c.types[1].mass_given = true;
  e = input_error([&] { MdRun run(c, test::world(), &data); });
  EXPECT_NE(e.find("md.types[1].mass = 2 for type \"B\", but the data file's Masses give type 2 mass 1"),
            std::string::npos)
      << e;
}

// A lattice start with two types: each site draws its type keyed by its id, so every rank count gives the
// same types; about the requested share is B; another md.lattice.type_seed gives another draw; the heavier
// type moves more slowly (the masses reach the integrator).
TEST(MdTypes, LatticeTypeFractionIsRankIndependent) {
  auto cfg = test::lattice_config({6, 6, 6}, 1.0);
  cfg.types = {{"A", 1.0, 0.8, true}, {"B", 4.0, 0.2, true}};
  cfg.pair_coeffs = ka_config(true).pair_coeffs;
  MdRun run(cfg, test::world());
  const auto atoms = test::gather_atoms(*run.solver, test::world());
  ASSERT_EQ(atoms.size(), 864u);
  int nb = 0;
  double v2[3] = {0, 0, 0};
  for (const auto& a : atoms) {
    nb += a.type == 2;
    v2[a.type] += a.v[0] * a.v[0] + a.v[1] * a.v[1] + a.v[2] * a.v[2];
  }
  // Binomial(864, 0.2): mean 172.8, standard deviation 11.8; 5 sigma either side.
  EXPECT_GT(nb, 113);
  EXPECT_LT(nb, 232);
  // velocity create gives each component (u - 1/2)/sqrt(m): <v^2> of B is a quarter of A's (within 30%).
  const double ratio = (v2[2] / nb) / (v2[1] / (864 - nb));
  EXPECT_NEAR(ratio, 0.25, 0.075);
  // The same types at one rank (rank 0 alone builds the lattice) and at this rank count.
  std::vector<int> types_here;
  for (const auto& a : atoms) types_here.push_back(a.type);
  std::vector<int> types_one(864);
  if (test::is_root()) {
    MPI_Comm one = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_SELF, 0, 0, &one);
    {
      comm::Communicator c(one);
      MdRun serial(cfg, c);
      for (const auto& a : test::gather_atoms(*serial.solver, c)) types_one[a.id - 1] = a.type;
    }
    MPI_Comm_free(&one);
    EXPECT_EQ(types_here, types_one);
  }
  auto other = cfg;
  other.type_seed = cfg.type_seed + 1;
  MdRun run2(other, test::world());
  int differ = 0;
  for (const auto& a : test::gather_atoms(*run2.solver, test::world())) differ += a.type != types_here[a.id - 1];
  EXPECT_GT(differ, 50);
  // Runs, and conserves energy (the potential shifted to zero at each pair's cutoff: no jumps).
  cfg.shift = true;
  MdRun shifted(cfg, test::world());
  const auto rows = test::run_thermo(*shifted.solver, 100, 100);
  EXPECT_LT(std::abs(rows.back()[5] - rows.front()[5]), 1e-3 * std::abs(rows.front()[5]));
  const double drift = std::abs(rows.back()[5] - rows.front()[5]) / std::abs(rows.front()[5]);
  test::report("lattice mixture: " + std::to_string(nb) + " of 864 sites type B (share 0.2), <v^2> B/A " +
               test::sci(ratio) + ", " + std::to_string(differ) + " types differ with another seed, relative " +
               "energy drift over 100 steps " + test::sci(drift));
}

// Two atoms moved next to two others, 0.1 and 0.25 sigma away, far from each other and from the rest
// (the fcc nearest-neighbour distance is 1.19 sigma): setup() refuses the start on every rank, naming a
// close pair and its distance. At one rank the closest pair is the one named, and the count is that of
// the list: each close pair once in a half list, twice (i -> j, j -> i) in a full one.
TEST(MdTypes, CloseAtomsAreRefusedNamingTheClosestPair) {
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
    SCOPED_TRACE(list == md::NeighborListKind::Full ? "full list" : "half list");
    auto cfg = test::lattice_config({6, 6, 6}, 1.0);
    cfg.neighbor_list = list;
    MdRun run(cfg, test::world());
    const auto atoms = test::gather_atoms(*run.solver, test::world());
    const double L = run->grid().global_box().length(0);
    auto inside = [&](const test::AtomState& a) {
      for (int d = 0; d < 3; ++d)
        if (a.x[d] < 1.0 || a.x[d] > L - 1.0) return false;
      return true;
    };
    auto dist = [](const std::array<double, 3>& a, const std::array<double, 3>& b) {
      return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
    };
    // p and s: interior atoms at least 4 sigma apart; q and r: two atoms far from both.
    std::int64_t p = 0, s = 0, q = 0, r = 0;
    for (const auto& a : atoms) {
      if (!inside(a)) continue;
      if (p == 0) p = a.id;
      else if (s == 0 && dist(a.x, atoms[p - 1].x) > 4.0) s = a.id;
    }
    for (const auto& a : atoms)
      if (dist(a.x, atoms[p - 1].x) > 3.0 && dist(a.x, atoms[s - 1].x) > 3.0) {
        if (q == 0) q = a.id;
        else if (r == 0) r = a.id;
      }
    ASSERT_TRUE(p && s && q && r);
    const auto xp = atoms[p - 1].x, xs = atoms[s - 1].x;
    test::set_position(*run.solver, q, {xp[0] + 0.1, xp[1], xp[2]});
    test::set_position(*run.solver, r, {xs[0], xs[1] + 0.25, xs[2]});
    const std::string e = input_error([&] { run->setup(); });
    const std::string pq = "atoms " + std::to_string(p) + " and " + std::to_string(q) + " are 0.1 sigma apart";
    const std::string qp = "atoms " + std::to_string(q) + " and " + std::to_string(p) + " are 0.1 sigma apart";
    const std::string sr = "atoms " + std::to_string(s) + " and " + std::to_string(r) + " are 0.25 sigma apart";
    const std::string rs = "atoms " + std::to_string(r) + " and " + std::to_string(s) + " are 0.25 sigma apart";
    auto has = [&](const std::string& t) { return e.find(t) != std::string::npos; };
    EXPECT_TRUE(has("closer than the allowed 0.5 sigma (half the smallest pair sigma)")) << e;
    EXPECT_TRUE(has("; check the initial configuration")) << e;
    if (test::nranks() == 1) {
      EXPECT_TRUE(has(pq) || has(qp)) << e;
      EXPECT_TRUE(has(list == md::NeighborListKind::Full ? "(4 such pairs on rank 0)" : "(2 such pairs on rank 0)")) << e;
    } else {
      // The lowest rank that sees a close pair speaks: either pair, with its own distance.
      EXPECT_TRUE(has(pq) || has(qp) || has(sr) || has(rs)) << e;
    }
  }
}

// A data file with what the MD does not simulate is read, then refused on every rank: bonds without a style
// (the deck's [md.bond] or the file's Bond Coeffs comment), impropers, charges.
TEST(MdTypes, WhatIsNotSimulatedIsRefused) {
  const std::string head = "t\n\n2 atoms\n1 atom types\n";
  const std::string box = "\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\nMasses\n\n1 1.0\n\n";
  const auto bonded = io::parse_lammps_data(
      head + "1 bonds\n1 bond types\n" + box + "Atoms # bond\n\n1 1 1 1 1 1\n2 1 1 2 1 1\n\nBonds\n\n1 1 1 2\n", "b.data");
  md::MdConfig c;
  c.from_lattice = false;
  std::string e = input_error([&] { MdRun run(c, test::world(), &bonded); });
  EXPECT_EQ(e, "md.initial.lammps_data: the data file has 1 bond of 1 type; give [md.bond] style (allowed: \"harmonic\", "
               "\"fene\"), or a Bond Coeffs section whose header names it (\"Bond Coeffs # harmonic\")");
  const auto improper = io::parse_lammps_data(
      "t\n\n4 atoms\n1 atom types\n1 impropers\n1 improper types\n" + box +
          "Atoms # molecular\n\n1 1 1 1 1 1\n2 1 1 2 1 1\n3 1 1 2 2 1\n4 1 1 2 2 2\n\nImpropers\n\n1 1 1 2 3 4\n",
      "i.data");
  e = input_error([&] { MdRun run(c, test::world(), &improper); });
  EXPECT_NE(e.find("the data file has 1 impropers; spotrun's MD has no improper style yet"), std::string::npos) << e;
  const auto charged =
      io::parse_lammps_data(head + box + "Atoms # charge\n\n1 1 0.5 1 1 1\n2 1 -0.5 2 1 1\n", "q.data");
  e = input_error([&] { MdRun run(c, test::world(), &charged); });
  EXPECT_NE(e.find("gives atoms non-zero charges; spotrun's MD does not simulate electrostatics yet"), std::string::npos)
      << e;
  // Zero charges are no charges: the run starts.
  const auto neutral = io::parse_lammps_data(head + box + "Atoms # full\n\n1 1 1 0 1 1 1\n2 1 1 0 2.5 1 1\n", "n.data");
  MdRun run(c, test::world(), &neutral);
  EXPECT_EQ(run->natoms(), 2);
}
