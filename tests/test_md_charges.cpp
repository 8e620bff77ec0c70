// Charges in md::MdSolver at 1, 2 and 4 ranks: the Kob-Andersen mixture with charges +-0.4 (tests/data/
// ka-charged-small.data, atom_style charge) under lj/cut/coul/cut against LAMMPS (tests/data/README.md: made
// by tools/make_lammps_reference.sh with Debian's lmp), both list kinds; a data file's charges refused under a
// style without Coulomb interactions.
#include <gtest/gtest.h>

#include "comm/errors.hpp"
#include "support/input_error.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 4);  // 3 ranks: no grid of sub-boxes as thick as the Coulomb cutoff + skin

using namespace spotrun;

namespace {

md::MdConfig charged_ka_config() {
  md::MdConfig c = test::ka_config(true);
  c.pair_style = "lj/cut/coul/cut";
  c.coulomb_cutoff = 3.0;
  return c;
}

TEST(MdCharges, CutCoulombAgreesWithLammps) {
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-charged-small.data");
  const test::Csv ref = test::read_named_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-ka-charged-small-coulcut-nve.csv");
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
    auto cfg = charged_ka_config();
    cfg.neighbor_list = list;
    std::string where;
    const double diff = test::run_against(cfg, data, ref, 100, 10, where, test::world());
    const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
    EXPECT_LE(diff, 1e-9) << kind << ": " << where;
    test::report("charged Kob-Andersen, lj/cut/coul/cut, " + kind + ", " + std::to_string(test::nranks()) +
                 " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" + where + ")");
  }
}

// lj/cut/coul/long with PPPM (mesh 24^3, order 5, g_ewald 1.0) and with Ewald (g_ewald 1.0, accuracy 1e-6), as
// LAMMPS ran them: thermo to 1e-6 relative (LAMMPS takes a polynomial erfc good to about 1e-7 and a 4 pi rounded
// to 9 digits; both solvers promise the forces to their accuracy).
TEST(MdCharges, LongRangeCoulombAgreesWithLammps) {
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-charged-small.data");
  for (const char* solver : {"pppm", "ewald"}) {
    const test::Csv ref = test::read_named_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-ka-charged-small-" +
                                               solver + "-nve.csv");
    auto cfg = test::ka_config(true);
    cfg.pair_style = "lj/cut/coul/long";
    cfg.coulomb_cutoff = 3.0;
    cfg.kspace.style = std::string(solver) == "pppm" ? md::KspaceStyle::Pppm : md::KspaceStyle::Ewald;
    cfg.kspace.g_ewald = 1.0;
    if (std::string(solver) == "pppm") {
      cfg.kspace.mesh = {24, 24, 24};
      cfg.kspace.order = 5;
      cfg.kspace.accuracy = 1e-4;  // this mesh's estimate is 3.7e-5; spotrun refuses a mesh short of the accuracy
    } else {
      cfg.kspace.accuracy = 1e-6;
    }
    std::string where;
    const double diff = test::run_against(cfg, data, ref, 100, 10, where, test::world());
    EXPECT_LE(diff, 1e-6) << solver << ": " << where;
    test::report(std::string("charged Kob-Andersen, lj/cut/coul/long + ") + solver + ", " +
                 std::to_string(test::nranks()) + " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" +
                 where + ")");
  }
}

// A long-range pair style needs a k-space solver, and a solver a long-range style.
TEST(MdCharges, LongRangeStyleAndSolverGoTogether) {
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-charged-small.data");
  auto cfg = test::ka_config(true);
  cfg.pair_style = "lj/cut/coul/long";
  std::string e = test::input_error([&] { test::MdRun run(cfg, test::world(), &data); });
  EXPECT_NE(e.find("give [md.kspace] style = \"pppm\" or \"ewald\""), std::string::npos) << e;
  cfg.pair_style = "lj/cut/coul/cut";
  cfg.kspace.style = md::KspaceStyle::Pppm;
  e = test::input_error([&] { test::MdRun run(cfg, test::world(), &data); });
  EXPECT_NE(e.find("md.kspace.style = \"pppm\" needs a long-range pair style"), std::string::npos) << e;
}

TEST(MdCharges, ChargesNeedAChargedStyle) {
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-charged-small.data");
  const md::MdConfig cfg = test::ka_config(true);  // lj/cut
  const std::string e = test::input_error([&] { test::MdRun run(cfg, test::world(), &data); });
  EXPECT_NE(e.find("gives atoms non-zero charges, but md.pair.style \"lj/cut\" does not act between charges; use a "
                   "style with Coulomb interactions (\"lj/cut/coul/cut\", \"lj/cut/coul/long\")"),
            std::string::npos)
      << e;
}

}  // namespace
