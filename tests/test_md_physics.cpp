// md::MdSolver physics at 1-4 ranks: the fcc lattice energy, independence of the rank count, agreement
// with LAMMPS, time reversibility, neighbour-list settings, periodic wrapping.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>

#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;
using test::AtomState;
using test::MdRun;
using test::ThermoRow;
using test::max_thermo_diff;
using test::read_csv;

namespace {

// Runs f on a one-rank communicator holding world rank 0 alone and broadcasts its rows to every rank.
std::vector<ThermoRow> serial_on_rank0(const std::function<std::vector<ThermoRow>(const comm::Communicator&)>& f) {
  MPI_Comm one = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, test::is_root() ? 0 : MPI_UNDEFINED, 0, &one);
  std::vector<ThermoRow> rows;
  std::string error;
  if (test::is_root()) {
    try {
      comm::Communicator c(one);
      rows = f(c);
    } catch (const std::exception& e) {
      error = e.what();
    }
    MPI_Comm_free(&one);
  }
  error = test::world().broadcast(error);
  if (!error.empty()) throw std::runtime_error("serial reference run failed: " + error);
  std::uint64_t n = rows.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  rows.resize(n);
  MPI_Bcast(rows.data(), static_cast<int>(7 * n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return rows;
}

// The fcc lattice sums per atom, directly over lattice vectors (independent of the solver):
// energy 1/2 sum E(r) and virial 1/2 sum r F(r), r < rc.
void fcc_lattice_sums(double density, double rc, double& energy, double& virial) {
  const long double a = std::cbrt(4.0L / density);
  const int k = static_cast<int>(std::ceil(rc / a)) + 1;
  const long double basis[4][3] = {{0, 0, 0}, {0.5L, 0.5L, 0}, {0.5L, 0, 0.5L}, {0, 0.5L, 0.5L}};
  long double e = 0, w = 0;
  for (int i = -k; i <= k; ++i)
    for (int j = -k; j <= k; ++j)
      for (int l = -k; l <= k; ++l)
        for (const auto& b : basis) {
          const long double x = (i + b[0]) * a, y = (j + b[1]) * a, z = (l + b[2]) * a;
          const long double r2 = x * x + y * y + z * z;
          if (r2 == 0 || r2 >= static_cast<long double>(rc) * rc) continue;
          const long double ir6 = 1 / (r2 * r2 * r2);
          e += 4 * (ir6 * ir6 - ir6);
          w += 48 * ir6 * ir6 - 24 * ir6;  // r . F = 48 r^-12 - 24 r^-6
        }
  energy = static_cast<double>(e / 2);
  virial = static_cast<double>(w / 2);
}

}  // namespace

// LAMMPS: fcc 0.8442, lj/cut 2.5, unshifted: pe/atom -6.7733680532529573 (bench/in.lj, melt).
TEST(MdPhysics, FccLatticeEnergyTemperatureMomentum) {
  auto cfg = test::lattice_config({6, 4, 4}, 1.0);  // 384 atoms; sub-boxes >= 2.8 at 1-4 ranks
  MdRun run(cfg, test::world());
  run->setup();
  const md::Thermo t = run->compute_thermo();
  const std::int64_t n = run->natoms();
  EXPECT_EQ(n, 384);
  EXPECT_NEAR(t.pe, -6.7733680532529573, 1e-12 * 6.7733680532529573);
  double e_sum = 0, w_sum = 0;
  fcc_lattice_sums(0.8442, 2.5, e_sum, w_sum);
  EXPECT_NEAR(e_sum, -6.7733680532529573, 1e-13 * 6.78) << "the lattice-sum oracle itself";
  EXPECT_NEAR(t.temp, 1.0, 1e-13) << "velocities are scaled exactly to the requested temperature";
  EXPECT_NEAR(t.ke, 1.5 * (n - 1.0) / n, 1e-13);
  EXPECT_NEAR(t.etotal, t.pe + t.ke, 1e-14 * 6.8);
  // Pressure: (N - 1) k T / V + rho W / 3, W the lattice virial per atom.
  const double volume = n / 0.8442;
  const double press = (n - 1.0) * 1.0 / volume + 0.8442 * w_sum / 3.0;
  EXPECT_NEAR(t.press, press, 1e-11 * std::abs(press));

  const auto atoms = test::gather_atoms(*run.solver, test::world());
  ASSERT_EQ(atoms.size(), 384u);
  double p[3] = {0, 0, 0};
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    EXPECT_EQ(atoms[i].id, static_cast<std::int64_t>(i) + 1) << "atom ids 1..N, each owned once";
    for (int d = 0; d < 3; ++d) p[d] += atoms[i].v[d];  // mass 1
  }
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(p[d], 0.0, 1e-12) << "total momentum, component " << d;
  const auto& box = run->grid().global_box();
  EXPECT_EQ(run->grid().dims(), comm::choose_grid(test::nranks(), {box.length(0), box.length(1), box.length(2)}, 2.8));
}

// Distributed over N ranks vs the same configuration on one rank: the same thermo to 1e-10.
TEST(MdPhysics, ThermoIndependentOfTheRankCount) {
  double t_nve = 0;
  for (const auto ensemble : {md::Ensemble::Nve, md::Ensemble::Langevin}) {
    const bool nve = ensemble == md::Ensemble::Nve;
    SCOPED_TRACE(nve ? "nve" : "langevin");
    auto cfg = test::lattice_config({6, 6, 6}, 3.0);  // 864 atoms, liquid
    cfg.ensemble = ensemble;
    cfg.temperature = 1.5;
    cfg.damp = 0.5;
    std::vector<ThermoRow> dist;
    {
      MdRun run(cfg, test::world());
      dist = test::run_thermo(*run.solver, 100, 10);
    }
    const auto serial = serial_on_rank0([&](const comm::Communicator& one) {
      MdRun run(cfg, one);
      return test::run_thermo(*run.solver, 100, 10);
    });
    std::string where;
    const double diff = max_thermo_diff(dist, serial, &where);
    EXPECT_LE(diff, 1e-10) << where;
    test::report(std::string(nve ? "NVE" : "Langevin") + " liquid, " + std::to_string(test::nranks()) +
                 " ranks vs 1 rank, 100 steps: max relative thermo difference " + test::sci(diff));
    // The thermostat acts: after 0.5 tau (one damping time) the Langevin run is near 1.5 and cooler than
    // the NVE run (measured: 1.504 vs 1.642).
    if (nve) {
      t_nve = dist.back()[2];
    } else {
      EXPECT_NEAR(dist.back()[2], 1.5, 0.1);
      EXPECT_LT(dist.back()[2], t_nve - 0.05);
    }
  }
}

// Thermo of 100 steps from lj-small.data against LAMMPS 29 Sep 2021 (tests/data/README.md).
TEST(MdPhysics, AgreesWithLammps) {
  struct Case {
    const char* data;
    const char* csv;
    bool shift;
  };
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full})
  for (const Case& c : {Case{"lj-small.data", "lammps-lj-small-nve.csv", false},
                        Case{"lj-small.data", "lammps-lj-small-nve-shift.csv", true},
                        Case{"lj-small-noimage.data", "lammps-lj-small-zero-v.csv", false}}) {
    const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
    SCOPED_TRACE(std::string(c.csv) + ", " + kind);
    const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/" + c.data);
    const auto ref = read_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/" + c.csv);
    md::MdConfig cfg;
    cfg.from_lattice = false;
    cfg.cutoff = 2.5;
    cfg.skin = 0.3;
    cfg.neighbor_every = 1;
    cfg.neighbor_check = true;
    cfg.dt = 0.005;
    cfg.shift = c.shift;
    cfg.neighbor_list = list;
    MdRun run(cfg, test::world(), &data);
    EXPECT_EQ(run->natoms(), 864);
    const auto rows = test::run_thermo(*run.solver, 100, 10);
    std::string where;
    const double diff = max_thermo_diff(rows, ref, &where);
    EXPECT_LE(diff, 1e-9) << where;
    test::report(std::string(c.csv) + ", " + kind + ", at " + std::to_string(test::nranks()) +
                 " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" + where + ")");
  }
}

// The full list (the GPU default) and the half list (the CPU default) give the same forces to
// rounding, and a full-list run repeats itself bit for bit (no atomics in its force loop).
TEST(MdPhysics, FullAndHalfListsAgreeAndTheFullListRepeatsBitwise) {
  auto half = test::lattice_config({6, 5, 5}, 2.0);  // a hot liquid: many rebuilds and migrations
  half.neighbor_list = md::NeighborListKind::Half;
  auto full = half;
  full.neighbor_list = md::NeighborListKind::Full;
  MdRun rh(half, test::world()), rf(full, test::world()), rf2(full, test::world());
  EXPECT_FALSE(rh->full_neighbor_list());
  EXPECT_TRUE(rf->full_neighbor_list());
  const auto rows_h = test::run_thermo(*rh.solver, 100, 10);
  const auto rows_f = test::run_thermo(*rf.solver, 100, 10);
  const auto rows_f2 = test::run_thermo(*rf2.solver, 100, 10);
  std::string where;
  const double diff = max_thermo_diff(rows_h, rows_f, &where);
  EXPECT_LE(diff, 1e-10) << where;
  EXPECT_EQ(max_thermo_diff(rows_f, rows_f2, &where), 0.0) << where;
  test::report("full vs half neighbour list over 100 steps of a hot liquid: max relative thermo difference " +
               test::sci(diff));
}

// Velocity Verlet is time reversible: 100 steps, reverse the velocities, 100 steps: back to the start.
TEST(MdPhysics, TimeReversible) {
  auto cfg = test::lattice_config({6, 6, 6}, 3.0);
  MdRun run(cfg, test::world());
  run->setup();
  const auto start = test::gather_atoms(*run.solver, test::world());
  for (int n = 0; n < 100; ++n) run->step(false);
  const auto mid = test::gather_atoms(*run.solver, test::world());
  run->reverse_velocities();
  for (int n = 0; n < 100; ++n) run->step(false);
  const auto end = test::gather_atoms(*run.solver, test::world());
  ASSERT_EQ(start.size(), end.size());
  const auto& box = run->grid().global_box();
  double worst = 0, worst_periodic = 0, moved = 0;
  int crossed = 0;
  std::string details;
  for (std::size_t i = 0; i < start.size(); ++i)
    for (int d = 0; d < 3; ++d) {
      const double err = std::abs(end[i].unwrapped[d] - start[i].unwrapped[d]);
      const double L = box.length(d);
      double periodic = std::fmod(std::abs(end[i].x[d] - start[i].x[d]), L);
      periodic = std::min(periodic, L - periodic);
      worst = std::max(worst, err);
      worst_periodic = std::max(worst_periodic, periodic);
      moved = std::max(moved, std::abs(mid[i].unwrapped[d] - start[i].unwrapped[d]));
      crossed += mid[i].image[d] != 0;
      EXPECT_NEAR(end[i].v[d], -start[i].v[d], 1e-6) << "atom " << i + 1;
      if (err > 1e-7 && details.size() < 2000) {
        char line[256];
        std::snprintf(line, sizeof line, "  atom %zu dim %d: start x %.17g image %d; after 100 steps x %.17g image %d; "
                      "back: x %.17g image %d\n", i + 1, d, start[i].x[d], start[i].image[d], mid[i].x[d],
                      mid[i].image[d], end[i].x[d], end[i].image[d]);
        details += line;
      }
    }
  EXPECT_LE(worst_periodic, 1e-7) << "positions modulo the box do not come back";
  EXPECT_LE(worst, 1e-7) << "unwrapped positions x + image L do not come back (periodic error " << worst_periodic
                         << "):\n" << details;
  EXPECT_GT(moved, 0.3) << "the atoms should have moved in between";
  EXPECT_GT(crossed, 0) << "some atoms should have crossed the periodic boundary in between";
  test::report("time reversal, " + std::to_string(test::nranks()) + " ranks: max unwrapped position error " +
               test::sci(worst) + ", modulo the box " + test::sci(worst_periodic) + " after 100+100 steps (max displacement " + test::sci(moved) + ", " +
               std::to_string(crossed) + " boundary crossings)");
}

// Rebuilding every 20 steps without the check, or every step with it, changes nothing while no atom
// moves more than skin/2 between builds.
TEST(MdPhysics, NeighborSettingsDoNotChangePhysics) {
  auto a = test::lattice_config({6, 4, 4}, 0.05);
  a.neighbor_every = 20;
  a.neighbor_check = false;
  auto b = a;
  b.neighbor_every = 1;
  b.neighbor_check = true;
  MdRun ra(a, test::world()), rb(b, test::world());
  const auto rows_a = test::run_thermo(*ra.solver, 100, 10);
  const auto rows_b = test::run_thermo(*rb.solver, 100, 10);
  ASSERT_EQ(ra->dangerous_builds(), 0) << "the test needs a system without dangerous builds";
  ASSERT_EQ(rb->dangerous_builds(), 0);
  EXPECT_EQ(ra->neighbor_builds(), 1 + 100 / 20) << "setup, then steps 20, 40, 60, 80, 100";
  std::string where;
  const double diff = max_thermo_diff(rows_a, rows_b, &where);
  EXPECT_LE(diff, 1e-10) << where;
  test::report("neighbor every 20/no check vs every 1/check: max relative thermo difference " + test::sci(diff) +
               " (builds " + std::to_string(ra->neighbor_builds()) + " vs " + std::to_string(rb->neighbor_builds()) + ")");
}

// Wrapping an atom that sits a hair below the lower face: x + image * L must stay where it was (to
// well within 1e-9). Checked in z, which has one rank at every rank count here (the wrap in
// Halo::migrate), and in x, which has several ranks from 2 ranks on (the wrap on the way to the neighbour).
TEST(MdPhysics, WrapAtTheLowerFaceKeepsTheUnwrappedPosition) {
  for (int d : {2, 0}) {
    SCOPED_TRACE("dimension " + std::to_string(d));
    auto cfg = test::lattice_config({6, 4, 4}, 0.0);
    MdRun run(cfg, test::world());
    run->setup();
    // Atom 1 is at the origin; move it to -1e-17 in dimension d (-1e-17 + L rounds to L).
    std::array<double, 3> x{0.0, 0.0, 0.0};
    x[d] = -1e-17;
    test::set_position(*run.solver, 1, x);
    run->recompute_forces();
    const auto atoms = test::gather_atoms(*run.solver, test::world());
    ASSERT_EQ(atoms.size(), 384u);
    const AtomState& a = atoms[0];
    const double L = run->grid().global_box().length(d);
    EXPECT_GE(a.x[d], 0.0);
    EXPECT_LT(a.x[d], L);
    EXPECT_NEAR(a.unwrapped[d], -1e-17, 1e-9) << "rank grid " << run->grid().dims()[d] << " in this dimension: x = "
                                              << a.x[d] << ", image = " << a.image[d] << ", L = " << L;
  }
}

// Every atom of a data file ends up on some rank, including one a hair below the upper face.
TEST(MdPhysics, KeepsEveryAtomOfADataFile) {
  const std::string text =
      "t\n\n3 atoms\n1 atom types\n\n-5 5 xlo xhi\n-5 5 ylo yhi\n-5 5 zlo zhi\n\nMasses\n\n1 1\n\nAtoms\n\n"
      "1 1 4.9999999999999991 0 0\n2 1 0 2 2\n3 1 -2 -2 -2\n";
  const auto data = io::parse_lammps_data(text, "t.data");
  md::MdConfig cfg;
  cfg.from_lattice = false;
  MdRun run(cfg, test::world(), &data);
  EXPECT_EQ(run->natoms(), 3) << "an atom of the data file was silently dropped";
}

namespace {
long long g_md_allocations = 0;
std::string g_md_allocation_labels;
void count_md_allocation(const Kokkos::Tools::SpaceHandle, const char* label, const void*, const std::uint64_t) {
  ++g_md_allocations;
  if (g_md_allocation_labels.find(label) == std::string::npos) g_md_allocation_labels += std::string(" ") + label;
}
}  // namespace

// Persistent buffers: once the first rebuilds have sized them, steps allocate nothing, neighbour rebuilds
// (migration, sort, ghosts, lists) included, on either list kind. A warm liquid, so that atoms migrate
// between ranks and lists change between rebuilds.
TEST(MdPhysics, StepsAndRebuildsAllocateNothing) {
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
    auto cfg = test::lattice_config({6, 6, 6}, 3.0);
    cfg.neighbor_list = list;
    cfg.neighbor_every = 1;
    cfg.neighbor_check = true;
    MdRun run(cfg, test::world());
    run->setup();
    for (int n = 0; n < 60; ++n) run->step(n % 10 == 0);  // sizes the buffers (grown with margin)
    const long long builds = run->neighbor_builds();
    Kokkos::Tools::Experimental::set_allocate_data_callback(count_md_allocation);
    g_md_allocations = 0;
    { md::DoubleView probe("probe", 4); }
    const long long probe = g_md_allocations;
    g_md_allocations = 0;
    g_md_allocation_labels.clear();
    for (int n = 0; n < 40; ++n) run->step(n % 10 == 0);
    const long long during = g_md_allocations;
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
    EXPECT_EQ(probe, 1) << "the allocation hook did not fire";
    EXPECT_GT(run->neighbor_builds(), builds + 3) << kind << ": the steps should rebuild the lists";
    EXPECT_EQ(during, 0) << kind << ": allocations in 40 steps:" << g_md_allocation_labels;
  }
}
