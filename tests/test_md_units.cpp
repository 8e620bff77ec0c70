// md.units (LAMMPS units lj, real, metal) in md::MdSolver at 1 to 4 ranks: liquid argon in real and in metal
// units against LAMMPS (tests/data/argon-real.data, argon-metal.data; tests/data/README.md: made by
// tools/make_lammps_reference.sh with Debian's lmp), the same argon in lj units scaled by hand against the
// real-units run, charged argon in real units (lj/cut/coul/cut, lj/cut/coul/long with Ewald and PPPM) against
// LAMMPS, and the deck's checks of md.units.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/md/md_registration.hpp"
#include "solvers/md/units.hpp"
#include "support/input_error.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;

namespace {

// Argon: 39.948 g/mol, sigma 3.405 A, epsilon 0.2381 kcal/mol (real) or 0.010323 eV (metal), cutoff 8.5 A,
// skin 2 A (LAMMPS's default in both), time step 2 fs.
constexpr double k_sigma = 3.405, k_eps_real = 0.2381, k_eps_metal = 0.010323, k_cut = 8.5;

md::MdConfig argon_config(md::UnitStyle units) {
  md::MdConfig c;
  c.units = units;
  c.from_lattice = false;
  c.cutoff = k_cut;
  c.skin = 2.0;
  c.dt = units == md::UnitStyle::Metal ? 0.002 : 2.0;
  c.pair_defaults = {{"epsilon", units == md::UnitStyle::Metal ? k_eps_metal : k_eps_real}, {"sigma", k_sigma}};
  return c;
}

std::string data_path(const std::string& name) { return std::string(SPOTRUN_TEST_DATA_DIR) + "/" + name; }

// 200 steps of cfg from data_file against the LAMMPS thermo csv (every 20 steps): every column to `tolerance`
// relative, but `loose_column` (if any) to `loose`.
void expect_agrees(md::MdConfig cfg, const std::string& data_file, const std::string& csv, double tolerance,
                   const std::string& what, const std::string& loose_column = "", double loose = 0) {
  const auto data = io::read_lammps_data(data_path(data_file));
  const test::Csv ref = test::read_named_csv(data_path(csv));
  cfg.thermo_style = ref.header;
  test::MdRun run(cfg, test::world(), &data);
  run->setup();
  std::vector<std::vector<double>> rows;
  for (int n = 0; n <= 200; ++n) {
    if (n > 0) run->step(n % 20 == 0);
    if (n % 20 != 0) continue;
    run->prepare_thermo();
    rows.push_back({static_cast<double>(run->step_index())});
    for (const double v : run->thermo()) rows.back().push_back(v);
  }
  ASSERT_EQ(rows.size(), ref.rows.size());
  double worst[2] = {0, 0};
  std::string where[2];
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < ref.header.size(); ++c) {
      const double d = test::rel_diff(rows[r][c], ref.rows[r][c]);
      const int k = ref.header[c] == loose_column ? 1 : 0;
      if (d <= worst[k]) continue;
      worst[k] = d;
      std::ostringstream s;
      s.precision(17);
      s << "step " << rows[r][0] << " " << ref.header[c] << ": " << rows[r][c] << " vs LAMMPS " << ref.rows[r][c];
      where[k] = s.str();
    }
  EXPECT_LE(worst[0], tolerance) << what << ": " << where[0];
  std::string line = what + ", " + std::to_string(test::nranks()) + " ranks: max relative difference to LAMMPS " +
                     test::sci(worst[0]) + " (" + where[0] + ")";
  if (!loose_column.empty()) {
    EXPECT_LE(worst[1], loose) << what << ": " << where[1];
    line += "; " + loose_column + " " + test::sci(worst[1]) + " (" + where[1] + ")";
  }
  test::report(line);
}

TEST(MdUnits, RealArgonAgreesWithLammps) {
  expect_agrees(argon_config(md::UnitStyle::Real), "argon-real.data", "lammps-argon-real-nve.csv", 1e-9,
                "liquid argon, units real");
}

TEST(MdUnits, MetalArgonAgreesWithLammps) {
  expect_agrees(argon_config(md::UnitStyle::Metal), "argon-metal.data", "lammps-argon-metal-nve.csv", 1e-9,
                "liquid argon, units metal");
}

// The Nose-Hoover chain (kT = boltz T) at 100 K, Tdamp 100 fs = 0.1 ps, against LAMMPS's fix nvt.
TEST(MdUnits, NoseHooverArgonAgreesWithLammps) {
  for (const auto units : {md::UnitStyle::Real, md::UnitStyle::Metal}) {
    md::MdConfig c = argon_config(units);
    c.ensemble = md::Ensemble::Nvt;
    c.temperature = 100.0;
    c.damp = units == md::UnitStyle::Metal ? 0.1 : 100.0;
    c.tchain = 3;
    const std::string name = md::unit_constants(units).name;
    expect_agrees(c, "argon-" + name + ".data", "lammps-argon-" + name + "-nvt.csv", 1e-9,
                  "liquid argon, units " + name + ", fix nvt");
  }
}

// Constant pressure (kT = boltz T, pressure in atm or bar through nktv2p): fix npt at 100 K (Tdamp 100 fs) and
// 100 atm = 101.325 bar (Pdamp 1 ps) against LAMMPS, the columns vol, ecouple and econserve too.
TEST(MdUnits, NptArgonAgreesWithLammps) {
  for (const auto units : {md::UnitStyle::Real, md::UnitStyle::Metal}) {
    md::MdConfig c = argon_config(units);
    const bool metal = units == md::UnitStyle::Metal;
    c.ensemble = md::Ensemble::Npt;
    c.temperature = 100.0;
    c.damp = metal ? 0.1 : 100.0;
    c.pressure = metal ? 101.325 : 100.0;
    c.pressure_damp = metal ? 1.0 : 1000.0;
    const std::string name = md::unit_constants(units).name;
    expect_agrees(c, "argon-" + name + ".data", "lammps-argon-" + name + "-npt.csv", 1e-9,
                  "liquid argon, units " + name + ", fix npt");
  }
}

// Argon in real units and in lj units scaled by hand: the thermo rows of the lj run, back in real units
// (energies x epsilon, x N: lj's are per atom; temperature x epsilon / boltz; pressure x nktv2p epsilon /
// sigma^3; time x tau), against the real run's.
void expect_lj_scales_to_real(const md::MdConfig& rc, const md::MdConfig& lc, const io::LammpsData* rd,
                              const io::LammpsData* ld, double natoms, double tau, const std::string& what) {
  const md::UnitConstants& real = md::unit_constants(md::UnitStyle::Real);
  test::MdRun r(rc, test::world(), rd), l(lc, test::world(), ld);
  const auto rows_real = test::run_thermo(*r.solver, 200, 20);
  const auto rows_lj = test::run_thermo(*l.solver, 200, 20);
  const double e = k_eps_real;
  const double scale[7] = {1.0, tau, e / real.boltz, natoms * e, natoms * e, natoms * e,
                           real.nktv2p * e / (k_sigma * k_sigma * k_sigma)};
  std::vector<test::ThermoRow> scaled = rows_lj;
  for (auto& row : scaled)
    for (int c = 0; c < 7; ++c) row[static_cast<std::size_t>(c)] *= scale[c];
  std::string where;
  const double diff = test::max_thermo_diff(rows_real, scaled, &where);
  EXPECT_LE(diff, 1e-9) << what << ": " << where;
  test::report(what + ", lj units scaled by hand vs units real, " + std::to_string(test::nranks()) +
               " ranks: max relative difference " + test::sci(diff) + " (" + where + ")");
}

// The unit of velocity and of time of argon in lj units, in real units: sqrt(epsilon / (m mvv2e)) A/fs and
// sigma over it (fs).
constexpr double k_argon_mass = 39.948;
double argon_velocity_unit() {
  return std::sqrt(k_eps_real / (k_argon_mass * md::unit_constants(md::UnitStyle::Real).mvv2e));
}

md::MdConfig argon_lj_config(double tau) {
  md::MdConfig c;
  c.cutoff = k_cut / k_sigma;
  c.skin = 2.0 / k_sigma;
  c.dt = 2.0 / tau;
  return c;
}

// The argon of argon-real.data in lj units: lengths / sigma, velocities / (sigma / tau), masses 1.
TEST(MdUnits, LjScaledByHandAgreesWithReal) {
  const double velocity = argon_velocity_unit();
  const double tau = k_sigma / velocity;
  const io::LammpsData data = io::read_lammps_data(data_path("argon-real.data"));
  io::LammpsData lj = data;
  for (int d = 0; d < 3; ++d) {
    lj.lo[static_cast<std::size_t>(d)] /= k_sigma;
    lj.hi[static_cast<std::size_t>(d)] /= k_sigma;
  }
  for (auto& x : lj.x) x /= k_sigma;
  for (auto& v : lj.v) v /= velocity;
  for (auto& m : lj.masses) m = 1.0;

  md::MdConfig lc = argon_lj_config(tau);
  lc.from_lattice = false;
  expect_lj_scales_to_real(argon_config(md::UnitStyle::Real), lc, &data, &lj, static_cast<double>(data.natoms()),
                           tau, "liquid argon from argon-real.data");
}

// The Langevin thermostat at 120 K, damp 100 fs: its random numbers are keyed by atom, step and component, so
// the lj run with T and damp scaled (kT = boltz T; forces -m v / (damp ftm2v) and the noise's
// sqrt(24 boltz T m / (damp dt mvv2e)) / ftm2v) follows the real one.
TEST(MdUnits, LangevinInLjScaledByHandAgreesWithReal) {
  const double velocity = argon_velocity_unit();
  const double tau = k_sigma / velocity;
  const io::LammpsData data = io::read_lammps_data(data_path("argon-real.data"));
  io::LammpsData lj = data;
  for (std::size_t d = 0; d < 3; ++d) {
    lj.lo[d] /= k_sigma;
    lj.hi[d] /= k_sigma;
  }
  for (auto& x : lj.x) x /= k_sigma;
  for (auto& v : lj.v) v /= velocity;
  for (auto& m : lj.masses) m = 1.0;
  md::MdConfig rc = argon_config(md::UnitStyle::Real);
  rc.ensemble = md::Ensemble::Langevin;
  rc.temperature = 120.0;
  rc.damp = 100.0;
  md::MdConfig lc = argon_lj_config(tau);
  lc.from_lattice = false;
  lc.ensemble = md::Ensemble::Langevin;
  lc.temperature = 120.0 * md::unit_constants(md::UnitStyle::Real).boltz / k_eps_real;
  lc.damp = 100.0 / tau;
  expect_lj_scales_to_real(rc, lc, &data, &lj, static_cast<double>(data.natoms()), tau,
                           "liquid argon, Langevin at 120 K");
}

// A lattice start (fcc 6x6x6, lattice constant 5.8 A) at 120 K: the velocities md.lattice.temperature creates
// (T = mvv2e sum m v^2 / (dof boltz)) are those of the lj run at 120 boltz / epsilon, scaled.
TEST(MdUnits, LatticeStartInRealIsTheLjOneScaled) {
  const double tau = k_sigma / argon_velocity_unit();
  md::MdConfig rc = argon_config(md::UnitStyle::Real);
  rc.from_lattice = true;
  rc.cells = {6, 6, 6};
  rc.density = 4.0 / (5.8 * 5.8 * 5.8);
  rc.lattice_temperature = 120.0;
  rc.types = {{"Ar", k_argon_mass, 0.0, true}};
  md::MdConfig lc = argon_lj_config(tau);
  lc.cells = rc.cells;
  lc.density = rc.density * k_sigma * k_sigma * k_sigma;
  lc.lattice_temperature = 120.0 * md::unit_constants(md::UnitStyle::Real).boltz / k_eps_real;
  {
    test::MdRun r(rc, test::world());
    r->setup();
    EXPECT_NEAR(r->thermo()[1], 120.0, 1e-10);  // temp at step 0
  }
  expect_lj_scales_to_real(rc, lc, nullptr, nullptr, 864.0, tau, "argon lattice at 120 K");
}

// Charges +-0.1 e on the argon atoms (argon-charged.data), units real: qqr2e = 332.06371.
md::MdConfig charged_argon_config() {
  md::MdConfig c = argon_config(md::UnitStyle::Real);
  c.coulomb_cutoff = 9.5;
  return c;
}

TEST(MdUnits, RealCutCoulombAgreesWithLammps) {
  md::MdConfig c = charged_argon_config();
  c.pair_style = "lj/cut/coul/cut";
  expect_agrees(c, "argon-charged.data", "lammps-argon-charged-coulcut-nve.csv", 1e-9,
                "charged argon, units real, lj/cut/coul/cut");
}

// lj/cut/coul/long with Ewald (g_ewald 0.3, accuracy 1e-6: the k-vectors from qqr2e's force of two unit charges)
// and PPPM (mesh 20^3, order 5, g_ewald 0.3): to 1e-6 relative, as the lj-units k-space references (LAMMPS's
// polynomial erfc, good to 1.5e-7 absolute); ecoul to 5e-6: at g_ewald 0.3 the real-space part is a tenth of
// the Coulomb energy, a sum of terms of both signs, and the erfc's error is relative to its terms.
TEST(MdUnits, RealLongRangeCoulombAgreesWithLammps) {
  for (const char* solver : {"ewald", "pppm"}) {
    md::MdConfig c = charged_argon_config();
    c.pair_style = "lj/cut/coul/long";
    c.kspace.g_ewald = 0.3;
    if (std::string(solver) == "pppm") {
      c.kspace.style = md::KspaceStyle::Pppm;
      c.kspace.mesh = {20, 20, 20};
      c.kspace.order = 5;
      c.kspace.accuracy = 1e-4;
    } else {
      c.kspace.style = md::KspaceStyle::Ewald;
      c.kspace.accuracy = 1e-6;
    }
    expect_agrees(c, "argon-charged.data", std::string("lammps-argon-charged-") + solver + "-nve.csv", 1e-6,
                  std::string("charged argon, units real, lj/cut/coul/long + ") + solver, "ecoul", 5e-6);
  }
}

// --- the deck ---------------------------------------------------------------------------------------------

std::string deck_error(const std::string& toml) {
  return test::input_error([&] { launcher::Deck::parse(toml, "deck.toml").validate(); });
}

TEST(MdUnitsDeck, UnknownUnitsNameTheKeyAndTheAllowedValues) {
  const std::string e = deck_error("[md]\nunits = \"si\"\ndt = 1.0\n");
  EXPECT_NE(e.find("md.units"), std::string::npos) << e;
  for (const char* u : {"\"lj\"", "\"real\"", "\"metal\""}) EXPECT_NE(e.find(u), std::string::npos) << e;
}

TEST(MdUnitsDeck, RealAndMetalNeedTheirTimeStep) {
  const std::string e = deck_error("[md]\nunits = \"real\"\n");
  EXPECT_NE(e.find("md.units = \"real\" needs md.dt, the time step in fs"), std::string::npos) << e;
  launcher::Deck d = launcher::Deck::parse("[md]\nunits = \"metal\"\ndt = 0.001\n", "deck.toml");
  d.validate();
  EXPECT_EQ(md::config_from_deck(d).units, md::UnitStyle::Metal);
}

// The minimiser is lj's for now: [md.minimize] in real units is refused, naming md.units.
TEST(MdUnitsDeck, MinimisationInEveryUnits) {
  // [md.minimize] in real and metal as in lj (MdMinimize.ArgonInRealAndMetalAgreesWithLammps runs them).
  launcher::Deck::parse("[md]\nunits = \"real\"\ndt = 1.0\n[md.minimize]\nstyle = \"cg\"\n", "deck.toml").validate();
  launcher::Deck::parse("[md]\nunits = \"metal\"\ndt = 0.001\n[md.minimize]\nstyle = \"fire\"\n", "deck.toml").validate();
  launcher::Deck::parse("[md]\n[md.minimize]\nstyle = \"fire\"\n", "deck.toml").validate();
}

// The physics lines hold md.units for real and metal (a resume with other units differs in them), and lj decks'
// physics are those of before the key existed, with or without it.
TEST(MdUnitsDeck, PhysicsNamesTheUnitsOfRealAndMetal) {
  auto physics = [](const std::string& toml) {
    launcher::Deck d = launcher::Deck::parse(toml, "deck.toml");
    d.validate();
    return d.physics();
  };
  EXPECT_EQ(physics(""), physics("[md]\nunits = \"lj\"\n"));
  EXPECT_NE(physics("[md]\nunits = \"real\"\ndt = 1.0\n").find("md.units = \"real\""), std::string::npos);
  EXPECT_EQ(physics("").find("md.units"), std::string::npos);
}

TEST(MdUnitsDeck, ConstantsAreLammpsUpdateCpp) {
  const auto& real = md::unit_constants(md::UnitStyle::Real);
  EXPECT_EQ(real.boltz, 0.0019872067);
  EXPECT_EQ(real.mvv2e, 48.88821291 * 48.88821291);
  EXPECT_EQ(real.ftm2v, 1.0 / 48.88821291 / 48.88821291);
  EXPECT_EQ(real.nktv2p, 68568.415);
  EXPECT_EQ(real.qqr2e, 332.06371);
  const auto& metal = md::unit_constants(md::UnitStyle::Metal);
  EXPECT_EQ(metal.boltz, 8.617343e-5);
  EXPECT_EQ(metal.mvv2e, 1.0364269e-4);
  EXPECT_EQ(metal.ftm2v, 1.0 / 1.0364269e-4);
  EXPECT_EQ(metal.nktv2p, 1.6021765e6);
  EXPECT_EQ(metal.qqr2e, 14.399645);
  const auto& lj = md::unit_constants(md::UnitStyle::Lj);
  EXPECT_EQ(lj.boltz * lj.mvv2e * lj.ftm2v * lj.nktv2p * lj.qqrd2e, 1.0);
}

}  // namespace
