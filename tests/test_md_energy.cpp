// md::MdSolver energetics: NVE energy conservation over 10^4 steps, and the forces of the whole system
// as minus the gradient of its energy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

// 5x5x5 fcc cells (8.4 sigma): sub-boxes of at least cutoff + skin = 2.8 sigma at 1 and 2 ranks only.
SPOTRUN_TEST_RANKS(1, 2);

using namespace spotrun;
using test::MdRun;

// Velocity Verlet conserves a shadow Hamiltonian: E(t) fluctuates by O(dt^2) around a constant with no
// systematic drift. For LJ at dt = 0.005 the fluctuation is of order 1e-4 of E (the LAMMPS reference
// lammps-lj-small-nve-shift.csv, T = 1.75, moves by 3e-4 of E in 100 steps); the shifted potential keeps
// the energy continuous at the cutoff, so crossings add no jumps. Measured here (fcc at T = 1 melting to
// T ~ 0.55): max |E(t) - E(0)| / |E(0)| = 1.27e-4 (the first few hundred steps, as kinetic and potential
// energy equilibrate), drift of the mean 4e-6 to 3e-5 depending on the (chaotic) trajectory. Bounds:
// 3e-4 for the largest deviation, 1e-4 for the drift; an O(dt) integrator error, a missing half kick or
// forces inconsistent with the energy exceed both by orders of magnitude.
TEST(MdEnergy, NveConservesEnergyOver10000Steps) {
  auto cfg = test::lattice_config({5, 5, 5}, 1.0);  // 500 atoms
  cfg.shift = true;
  MdRun run(cfg, test::world());
  constexpr int steps = 10000, every = 10;
  const auto rows = test::run_thermo(*run.solver, steps, every);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(steps / every + 1));
  const double e0 = rows.front()[5];
  double worst = 0, head = 0, tail = 0;
  const std::size_t tenth = rows.size() / 10;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    worst = std::max(worst, std::abs(rows[r][5] - e0) / std::abs(e0));
    if (r < tenth) head += rows[r][5] / tenth;
    if (r >= rows.size() - tenth) tail += rows[r][5] / tenth;
  }
  const double drift = std::abs(tail - head) / std::abs(e0);
  EXPECT_LT(worst, 3e-4) << "E(0) = " << e0;
  EXPECT_LT(drift, 1e-4);
  EXPECT_EQ(run->dangerous_builds(), 0);
  // Sanity: the lattice melted partly or stayed solid, but did not blow up.
  EXPECT_GT(rows.back()[2], 0.2);
  EXPECT_LT(rows.back()[2], 1.0);
  char line[256];
  std::snprintf(line, sizeof line,
                "NVE %d steps, dt 0.005, 500 atoms, shifted LJ, %d ranks: E(0) = %.10f, max |E(t)-E(0)|/|E(0)| = %.3e, "
                "drift (mean of last vs first tenth) = %.3e, T(end) = %.4f",
                steps, test::nranks(), e0, worst, drift, rows.back()[2]);
  test::report(line);
}

// The energy error of velocity Verlet is O(dt^2): halving dt over the same 2.5 tau divides the largest
// deviation by about 4 (a first-order error would give 2).
TEST(MdEnergy, EnergyErrorScalesAsDtSquared) {
  double dev[2];
  for (int k = 0; k < 2; ++k) {
    auto cfg = test::lattice_config({5, 5, 5}, 1.0);
    cfg.shift = true;
    cfg.dt = k == 0 ? 0.005 : 0.0025;
    MdRun run(cfg, test::world());
    const int steps = k == 0 ? 500 : 1000;
    const auto rows = test::run_thermo(*run.solver, steps, k == 0 ? 5 : 10);  // the same times
    dev[k] = 0;
    for (const auto& r : rows) dev[k] = std::max(dev[k], std::abs(r[5] - rows.front()[5]));
  }
  const double ratio = dev[0] / dev[1];
  EXPECT_GT(ratio, 3.0);
  EXPECT_LT(ratio, 5.0);
  char line[200];
  std::snprintf(line, sizeof line, "max |E(t)-E(0)| per atom over 2.5 tau: dt 0.005 %.3e, dt 0.0025 %.3e, ratio %.2f",
                dev[0], dev[1], ratio);
  test::report(line);
}

// The force on an atom is -dU/dx of the total energy: displace it by +-h, recompute the energy.
TEST(MdEnergy, ForceIsMinusTheGradientOfTheTotalEnergy) {
  auto cfg = test::lattice_config({5, 5, 5}, 1.0);
  cfg.shift = true;  // continuous energy at the cutoff
  MdRun run(cfg, test::world());
  run->setup();
  for (int n = 0; n < 50; ++n) run->step(false);  // off the lattice: forces are not zero
  run->recompute_forces();
  const double natoms = static_cast<double>(run->natoms());
  const double h = 1e-5;
  double worst = 0;
  for (std::int64_t id : {1, 137, 250, 421, 500}) {
    const auto atoms = test::gather_atoms(*run.solver, test::world());
    const auto x0 = atoms[id - 1].x;
    run->recompute_forces();
    const auto f = test::force_on(*run.solver, test::world(), id);
    const double fnorm = std::sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    for (int d = 0; d < 3; ++d) {
      double e[2];
      for (int s = 0; s < 2; ++s) {
        auto x = x0;
        x[d] += s == 0 ? h : -h;
        test::set_position(*run.solver, id, x);
        run->recompute_forces();
        e[s] = run->compute_thermo().pe * natoms;
      }
      test::set_position(*run.solver, id, x0);
      const double grad = (e[0] - e[1]) / (2 * h);
      const double rel = std::abs(f[d] + grad) / std::max(fnorm, 1.0);
      worst = std::max(worst, rel);
      EXPECT_LT(rel, 1e-6) << "atom " << id << " component " << d << ": F = " << f[d] << ", -dU/dx = " << -grad;
    }
  }
  run->recompute_forces();
  char line[160];
  std::snprintf(line, sizeof line, "F vs -dU/dx (h = 1e-5), %d ranks: max relative difference %.3e", test::nranks(),
                worst);
  test::report(line);
}
