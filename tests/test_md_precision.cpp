// md.precision = "mixed" (solvers/md/precision.hpp) at 1-3 ranks: thermo within the bounds docs/md.md states,
// against LAMMPS (double) and against spotrun in double, for every list kind (half with and without Newton
// across ghosts, full) and pair style, one type and several; bitwise repeatable run to run and across a
// state()/restore() at the same rank count; a switch of precision on restore; the double path unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3);

using namespace spotrun;
using test::MdRun;
using test::ThermoRow;
using test::list_name;

namespace {

// The bounds of docs/md.md ("Precision"): mixed against double over 100 steps (0.5 tau) of a liquid, absolute,
// per atom: temperature, pe, ke and etotal within k_energy_bound, pressure within k_press_bound; at step 0
// (the same positions) within k_energy_bound0 and k_press_bound0.
constexpr double k_energy_bound = 2e-5;  // epsilon per atom (epsilon/k_B for temp)
constexpr double k_press_bound = 1e-4;   // epsilon/sigma^3
constexpr double k_energy_bound0 = 2e-6;
constexpr double k_press_bound0 = 1e-5;

const std::vector<md::NeighborListKind> k_lists = {md::NeighborListKind::Half, md::NeighborListKind::HalfNoNewton,
                                                   md::NeighborListKind::Full};

struct Diff {
  double energy = 0, press = 0, energy0 = 0, press0 = 0;
  std::string where;
};

// Largest absolute differences of temp, pe, ke, etotal (energy) and press, at step 0 and over all rows.
Diff thermo_diff(const std::vector<ThermoRow>& a, const std::vector<ThermoRow>& b) {
  Diff d;
  EXPECT_EQ(a.size(), b.size());
  for (std::size_t r = 0; r < std::min(a.size(), b.size()); ++r) {
    EXPECT_EQ(a[r][0], b[r][0]);
    for (int c = 2; c < 7; ++c) {
      const double x = std::abs(a[r][c] - b[r][c]);
      double& worst = c == 6 ? d.press : d.energy;
      if (x > worst) {
        worst = x;
        d.where = "step " + std::to_string(static_cast<long long>(a[r][0])) + " " + test::k_thermo_names[c];
      }
      if (r == 0) (c == 6 ? d.press0 : d.energy0) = std::max(c == 6 ? d.press0 : d.energy0, x);
    }
  }
  return d;
}

void expect_within_bounds(const Diff& d, const std::string& what) {
  EXPECT_LE(d.energy, k_energy_bound) << what << " (" << d.where << ")";
  EXPECT_LE(d.press, k_press_bound) << what << " (" << d.where << ")";
  EXPECT_LE(d.energy0, k_energy_bound0) << what;
  EXPECT_LE(d.press0, k_press_bound0) << what;
  test::report(what + " at " + std::to_string(test::nranks()) + " ranks: energies " + test::sci(d.energy) +
               " (step 0: " + test::sci(d.energy0) + "), press " + test::sci(d.press) + " (step 0: " +
               test::sci(d.press0) + "), largest at " + d.where);
}

md::MdConfig liquid(md::Precision p, md::NeighborListKind list) {
  auto c = test::lattice_config({8, 8, 8}, 1.44);  // in.lj's start, 2048 atoms
  c.precision = p;
  c.neighbor_list = list;
  return c;
}

md::MdConfig ka_config(md::Precision p, md::NeighborListKind list) {
  auto c = test::ka_config(true);
  c.precision = p;
  c.neighbor_list = list;
  return c;
}

std::string data_path(const std::string& f) { return std::string(SPOTRUN_TEST_DATA_DIR) + "/" + f; }

// Positions and velocities of every atom, bitwise.
bool same_atoms(const std::vector<test::AtomState>& a, const std::vector<test::AtomState>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].x != b[i].x || a[i].v != b[i].v || a[i].image != b[i].image) return false;
  return true;
}

bool same_rows(const std::vector<ThermoRow>& a, const std::vector<ThermoRow>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t r = 0; r < a.size(); ++r)
    for (int c = 0; c < 7; ++c)
      if (a[r][c] != b[r][c]) return false;
  return true;
}

}  // namespace

// The LAMMPS references of tests/data (double precision throughout): one type (lj-small, shifted and not)
// and the Kob-Andersen mixture (three pairs with their own cutoffs), 100 steps, every list kind.
TEST(MdPrecision, MixedAgreesWithLammpsWithinTheStatedBounds) {
  struct Case {
    std::string data, csv;
    bool ka, shift;
  };
  for (const Case& c : {Case{"lj-small.data", "lammps-lj-small-nve.csv", false, false},
                        Case{"lj-small.data", "lammps-lj-small-nve-shift.csv", false, true},
                        Case{"ka-small.data", "lammps-ka-small-nve.csv", true, false}}) {
    const auto data = io::read_lammps_data(data_path(c.data));
    const auto ref = test::read_csv(data_path(c.csv));
    for (const auto list : k_lists) {
      const std::string what = c.csv + ", " + list_name(list) + ", mixed vs LAMMPS";
      SCOPED_TRACE(what);
      auto cfg = c.ka ? ka_config(md::Precision::Mixed, list) : test::lattice_config({6, 6, 6}, 1.0);
      if (!c.ka) {
        cfg.from_lattice = false;
        cfg.precision = md::Precision::Mixed;
        cfg.neighbor_list = list;
      }
      cfg.shift = c.shift;
      MdRun run(cfg, test::world(), &data);
      const auto rows = test::run_thermo(*run.solver, 100, 10);
      const Diff d = thermo_diff(rows, ref);
      expect_within_bounds(d, what);
      // Not double in disguise: float pair arithmetic leaves a trace at step 0 already.
      EXPECT_GT(d.energy0 + d.press0, 1e-12) << "mixed gave LAMMPS's double thermo to 1e-12";
    }
  }
}

// An in.lj liquid (fcc at 0.8442, T = 1.44; 2048 atoms), 100 steps: mixed against double in spotrun, every list
// kind. Double itself is list-independent to rounding (test_md_physics); mixed stays within the bounds of it.
TEST(MdPrecision, MixedAgreesWithDoubleWithinTheStatedBounds) {
  for (const auto list : k_lists) {
    const std::string what = "in.lj 2048 atoms, " + list_name(list) + ", mixed vs double";
    SCOPED_TRACE(what);
    MdRun dbl(liquid(md::Precision::Double, list), test::world());
    MdRun mix(liquid(md::Precision::Mixed, list), test::world());
    const auto rd = test::run_thermo(*dbl.solver, 100, 10);
    const auto rm = test::run_thermo(*mix.solver, 100, 10);
    const Diff d = thermo_diff(rm, rd);
    expect_within_bounds(d, what);
    EXPECT_GT(d.energy0 + d.press0, 1e-12) << "mixed gave double's thermo to 1e-12";
  }
}

// Newton's third law holds pair by pair in mixed (the reaction is the same float product, summed in double):
// the total force vanishes to double rounding, every list kind.
TEST(MdPrecision, MixedForcesSumToZero) {
  for (const auto list : k_lists) {
    SCOPED_TRACE(list_name(list));
    MdRun run(liquid(md::Precision::Mixed, list), test::world());
    run->setup();
    for (int n = 0; n < 20; ++n) run->step(false);  // off the lattice, where every force vanishes by symmetry
    const auto& a = run->atoms();
    auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.f);
    double sum[4] = {0, 0, 0, 0};  // sum of f, and of |f|
    for (int i = 0; i < a.nlocal; ++i)
      for (int d = 0; d < 3; ++d) {
        sum[d] += hf(i, d);
        sum[3] += std::abs(hf(i, d));
      }
    test::world().sum_in_place(sum, 4);
    EXPECT_GT(sum[3], 1e3) << "the forces are not trivially zero";
    for (int d = 0; d < 3; ++d) EXPECT_LE(std::abs(sum[d]), 1e-12 * sum[3]) << "component " << d;
  }
}

// Two runs of the same mixed deck: the same thermo and atoms bit for bit (one type and several, every list).
TEST(MdPrecision, MixedIsBitwiseRepeatable) {
  const auto data = io::read_lammps_data(data_path("ka-small.data"));
  for (const auto list : k_lists)
    for (const bool ka : {false, true}) {
      SCOPED_TRACE(list_name(list) + (ka ? ", Kob-Andersen" : ", in.lj"));
      const auto cfg = ka ? ka_config(md::Precision::Mixed, list) : liquid(md::Precision::Mixed, list);
      MdRun a(cfg, test::world(), ka ? &data : nullptr), b(cfg, test::world(), ka ? &data : nullptr);
      const auto ra = test::run_thermo(*a.solver, 60, 10), rb = test::run_thermo(*b.solver, 60, 10);
      EXPECT_TRUE(same_rows(ra, rb));
      EXPECT_TRUE(same_atoms(test::gather_atoms(*a.solver, test::world()), test::gather_atoms(*b.solver, test::world())));
    }
}

namespace {

// run 100 steps in one go; and 53 steps, state(), a fresh solver of `resumed` precision restore()d from it, 47
// steps. Returns {one go, resumed} thermo rows of the steps after 53 and their final atoms.
struct Legs {
  std::vector<ThermoRow> whole, resumed;
  std::vector<test::AtomState> whole_atoms, resumed_atoms;
};
Legs run_legs(md::MdConfig cfg, md::Precision resumed_precision) {
  Legs out;
  MdRun whole(cfg, test::world());
  whole->setup();
  for (int n = 1; n <= 100; ++n) {
    whole->step(n > 53 && n % 10 == 0);
    if (n > 53 && n % 10 == 0) out.whole.push_back(test::thermo_row(*whole.solver));
  }
  out.whole_atoms = test::gather_atoms(*whole.solver, test::world());
  MdRun first(cfg, test::world());
  first->setup();
  for (int n = 1; n <= 53; ++n) first->step(n == 53);
  const io::SolverState st = first->state();
  cfg.precision = resumed_precision;
  auto transport = comm::make_transport("auto", test::world());
  md::MdSolver second(cfg, test::world(), *transport, nullptr, true);
  second.restore(st);
  second.setup();
  for (int n = 54; n <= 100; ++n) {
    second.step(n % 10 == 0);
    if (n % 10 == 0) out.resumed.push_back(test::thermo_row(second));
  }
  out.resumed_atoms = test::gather_atoms(second, test::world());
  return out;
}

}  // namespace

// A mixed run stopped at step 53 and restored at the same rank count continues bit for bit.
TEST(MdPrecision, MixedResumesBitwise) {
  for (const auto list : k_lists) {
    SCOPED_TRACE(list_name(list));
    const Legs l = run_legs(liquid(md::Precision::Mixed, list), md::Precision::Mixed);
    EXPECT_TRUE(same_rows(l.whole, l.resumed));
    EXPECT_TRUE(same_atoms(l.whole_atoms, l.resumed_atoms));
  }
}

// md.precision may change on resume (docs/md.md): a double checkpoint continued in mixed (and back) stays within
// the bounds of the run continued in its own precision, and is not that run.
TEST(MdPrecision, PrecisionMaySwitchOnRestore) {
  for (const auto from : {md::Precision::Double, md::Precision::Mixed}) {
    const auto to = from == md::Precision::Double ? md::Precision::Mixed : md::Precision::Double;
    const std::string what = std::string("restored ") + md::precision_name(from) + " -> " + md::precision_name(to);
    SCOPED_TRACE(what);
    const Legs l = run_legs(liquid(from, md::NeighborListKind::Half), to);
    std::vector<ThermoRow> whole = l.whole, resumed = l.resumed;
    const Diff d = thermo_diff(resumed, whole);
    EXPECT_LE(d.energy, k_energy_bound) << d.where;
    EXPECT_LE(d.press, k_press_bound) << d.where;
    EXPECT_FALSE(same_rows(whole, resumed)) << "the restored solver did not switch precision";
  }
}

// The default is double, and double runs the double kernels: the mixed table is not the one built.
TEST(MdPrecision, DefaultIsDoubleAndTheTableFollowsThePrecision) {
  md::MdConfig c;
  EXPECT_EQ(c.precision, md::Precision::Double);
  md::PairCoeffs coeffs = md::resolve_pair_coeffs(c, {"1"});
  EXPECT_TRUE(std::holds_alternative<md::PairTable<md::PairLJCut>>(md::make_pair(c, coeffs)));
  c.precision = md::Precision::Mixed;
  const auto any = md::make_pair(c, coeffs);
  ASSERT_TRUE(std::holds_alternative<md::PairTable<md::PairLJCutMixed>>(any));
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), std::get<md::PairTable<md::PairLJCutMixed>>(any).table);
  EXPECT_EQ(h(1, 1).cutsq, 6.25f);
  EXPECT_EQ(h(1, 1).lj1, 48.0f);
}
