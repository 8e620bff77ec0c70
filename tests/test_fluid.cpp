// fluid::FluidSolver at 1-4 ranks: exact Taylor-Green decay, divergence at round-off, diagnostics equal
// to a one-rank run, the energy budget, checkpoint state round trips (bitwise, and on another rank
// count), rank-count-independent random fields, bad input, deck keys, HDF5/XDMF output.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/fluid/fluid_registration.hpp"
#include "solvers/fluid/fluid_solver.hpp"
#include "solvers/registry.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;
using fft::Decomposition;
using fluid::FluidConfig;
using fluid::FluidSolver;
using Grid = std::array<int, 3>;
using Rows = std::vector<std::vector<double>>;  // thermo rows: step, then the thermo columns

namespace {

constexpr double k_two_pi = 6.283185307179586476925286766559;

FluidConfig taylor_green(const Grid& n, double nu, double dt, fluid::InitKind init = fluid::InitKind::TaylorGreen) {
  FluidConfig c;
  c.n = n;
  c.viscosity = nu;
  c.dt = dt;
  c.init = init;
  return c;
}

// A solver with its own transport (declared first, destroyed last).
struct SolverRun {
  std::unique_ptr<comm::Transport> transport;
  std::unique_ptr<FluidSolver> solver;
  SolverRun(const comm::Communicator& c, const FluidConfig& cfg, bool restoring = false)
      : transport(comm::make_transport("auto", c)), solver(std::make_unique<FluidSolver>(cfg, c, *transport, restoring)) {}
  FluidSolver& operator*() { return *solver; }
  FluidSolver* operator->() { return solver.get(); }
};

std::vector<double> row_of(FluidSolver& s) {
  std::vector<double> r{static_cast<double>(s.step_index())};
  for (double v : s.thermo()) r.push_back(v);
  return r;
}

// Sets up and runs `steps` steps, with a thermo row at step 0 and every `every` steps.
Rows run_rows(const comm::Communicator& c, const FluidConfig& cfg, int steps, int every) {
  SolverRun run(c, cfg);
  run->setup();
  Rows rows{row_of(*run)};
  for (int s = 1; s <= steps; ++s) {
    run->step(s % every == 0);
    if (s % every == 0) rows.push_back(row_of(*run));
  }
  return rows;
}

std::vector<double> flatten(const Rows& rows) {
  std::vector<double> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

// Runs f on a one-rank communicator holding world rank 0 alone; its values reach every rank.
std::vector<double> on_rank0_alone(const std::function<std::vector<double>(const comm::Communicator&)>& f) {
  MPI_Comm one = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, test::is_root() ? 0 : MPI_UNDEFINED, 0, &one);
  std::vector<double> out;
  std::string error;
  if (test::is_root()) {
    try {
      comm::Communicator c(one);
      out = f(c);
    } catch (const std::exception& e) {
      error = e.what();
    }
    MPI_Comm_free(&one);
  }
  error = test::world().broadcast(error);
  if (!error.empty()) throw std::runtime_error("one-rank reference run failed: " + error);
  std::uint64_t n = out.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  out.resize(n);
  MPI_Bcast(out.data(), static_cast<int>(n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return out;
}

// Every rank's block of rows of an array, gathered into the global array on every rank.
std::vector<double> gather_rows(const comm::Communicator& c, const io::StateArray& a) {
  const int n = c.size();
  int mine = static_cast<int>(a.f64.size());
  std::vector<int> counts(n), displs(n, 0);
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, c.mpi());
  for (int r = 1; r < n; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<double> all(static_cast<std::size_t>(displs[n - 1] + counts[n - 1]));
  MPI_Allgatherv(a.f64.data(), mine, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, c.mpi());
  return all;
}

// The state `global` (arrays as gathered global arrays) as rank r of n would read it from a checkpoint.
io::SolverState block_state(const io::SolverState& like, const std::vector<std::vector<double>>& global, int n, int r) {
  io::SolverState st = like;
  for (std::size_t k = 0; k < st.arrays.size(); ++k) {
    auto& a = st.arrays[k];
    io::block_of(a.global_rows, n, r, a.first_row, a.rows);
    const std::size_t rs = a.row_size();
    a.f64.assign(global[k].begin() + static_cast<std::ptrdiff_t>(a.first_row * rs),
                 global[k].begin() + static_cast<std::ptrdiff_t>((a.first_row + a.rows) * rs));
  }
  return st;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

double rel(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-300}); }

// Largest difference between thermo rows: relative for time, energy, dissipation, enstrophy and cfl,
// absolute for divmax (a round-off value).
double rows_diff(const std::vector<double>& a, const std::vector<double>& b, std::string& where) {
  if (a.size() != b.size()) {
    where = "different row counts";
    return 1e300;
  }
  double worst = 0;
  const char* names[7] = {"step", "time", "energy", "dissipation", "enstrophy", "divmax", "cfl"};
  for (std::size_t i = 0; i < a.size(); ++i) {
    const int col = static_cast<int>(i % 7);
    const double d = col == 5 ? std::abs(a[i] - b[i]) : rel(a[i], b[i]);
    if (d > worst) {
      worst = d;
      std::ostringstream s;
      s.precision(17);
      s << "step " << a[i - col] << " " << names[col] << ": " << a[i] << " vs " << b[i];
      where = s.str();
    }
  }
  return worst;
}

}  // namespace

// 2D Taylor-Green is an exact solution: u = (sin x cos y, -cos x sin y, 0) exp(-2 nu t); the nonlinear
// term is a gradient the projection removes, so only round-off separates the solver from it.
TEST(FluidTaylorGreen2d, MatchesTheExactDecay) {
  for (auto kind : {Decomposition::Slab, Decomposition::Pencil}) {
    FluidConfig cfg = taylor_green({16, 16, 4}, 0.05, 0.02, fluid::InitKind::TaylorGreen2d);
    cfg.decomposition = kind;
    SolverRun run(test::world(), cfg);
    run->setup();
    for (int s = 0; s < 25; ++s) run->step(false);
    const double t = run->time();
    const double decay = std::exp(-2 * cfg.viscosity * t);
    const auto u = run->velocity();
    const auto& l = run->fft().real_layout();
    double err = 0;
    for (int i = l.box.lo[0]; i <= l.box.hi[0]; ++i)
      for (int j = l.box.lo[1]; j <= l.box.hi[1]; ++j)
        for (int k = l.box.lo[2]; k <= l.box.hi[2]; ++k) {
          const double x = k_two_pi * i / 16, y = k_two_pi * j / 16;
          const auto p = l.offset(i, j, k);
          err = std::max({err, std::abs(u[0][p] - std::sin(x) * std::cos(y) * decay),
                          std::abs(u[1][p] + std::cos(x) * std::sin(y) * decay), std::abs(u[2][p])});
        }
    err = test::world().max(err);
    const auto d = run->diagnostics();
    const double e_exact = 0.25 * decay * decay;
    EXPECT_NEAR(t, 0.5, 1e-14);
    EXPECT_LT(err, 1e-10) << run->fft().geometry().describe();
    EXPECT_LT(rel(d.energy, e_exact), 1e-10);
    EXPECT_LT(rel(d.dissipation, 4 * cfg.viscosity * e_exact), 1e-10);  // -dE/dt = 4 nu E
    test::report("taylor-green-2d " + run->fft().geometry().describe() + ": max |u - exact| " + test::sci(err) +
                 ", energy rel. error " + test::sci(rel(d.energy, e_exact)));
  }
}

// The nonlinear term against a hand-derived one: for the 3D Taylor-Green field, (u.grad)u =
// 1/4 (1 + cos 2z) (sin 2x, sin 2y, 0) and the pressure is (cos 2x + cos 2y)(2 + cos 2z) / 16, so at
// t = 0 (nu = 0) du/dt = 1/8 (-sin 2x cos 2z, -sin 2y cos 2z, (cos 2x + cos 2y) sin 2z). The solver's
// one-step difference quotients D(h) = (u(h) - u(0)) / h, extrapolated as 2 D(h/2) - D(h), must give it
// to O(h^2).
TEST(FluidTaylorGreen, NonlinearTermMatchesTheHandDerivedOne) {
  const double h = 1e-3;
  std::array<std::vector<double>, 3> u0, uh, uh2;
  for (double dt : {h, h / 2}) {
    SolverRun run(test::world(), taylor_green({16, 12, 10}, 0.0, dt));
    run->setup();
    u0 = run->velocity();
    run->step(false);
    (dt == h ? uh : uh2) = run->velocity();
  }
  SolverRun run(test::world(), taylor_green({16, 12, 10}, 0.0, h));
  const auto& l = run->fft().real_layout();
  double err = 0;
  for (int i = l.box.lo[0]; i <= l.box.hi[0]; ++i)
    for (int j = l.box.lo[1]; j <= l.box.hi[1]; ++j)
      for (int k = l.box.lo[2]; k <= l.box.hi[2]; ++k) {
        const double x = k_two_pi * i / 16, y = k_two_pi * j / 12, z = k_two_pi * k / 10;
        const double want[3] = {-std::sin(2 * x) * std::cos(2 * z) / 8, -std::sin(2 * y) * std::cos(2 * z) / 8,
                                (std::cos(2 * x) + std::cos(2 * y)) * std::sin(2 * z) / 8};
        const auto p = l.offset(i, j, k);
        for (int c = 0; c < 3; ++c) {
          const double d1 = (uh[c][p] - u0[c][p]) / h, d2 = (uh2[c][p] - u0[c][p]) / (h / 2);
          err = std::max(err, std::abs(2 * d2 - d1 - want[c]));
        }
      }
  err = test::world().max(err);
  EXPECT_LT(err, 1e-6);
  test::report("taylor-green du/dt at t = 0 against the hand-derived term: max error " + test::sci(err));
}

// Taylor-Green 3D at t = 0: E = 1/8, enstrophy 3/8, dissipation 2 nu enstrophy.
TEST(FluidTaylorGreen, InitialDiagnosticsAreTheKnownValues) {
  const FluidConfig cfg = taylor_green({16, 12, 10}, 1.0 / 1600, 0.01);
  SolverRun run(test::world(), cfg);
  run->setup();
  const auto d = run->diagnostics();
  EXPECT_NEAR(d.energy, 0.125, 1e-15);
  EXPECT_NEAR(d.enstrophy, 0.375, 1e-14);
  EXPECT_NEAR(d.dissipation, 0.75 / 1600, 1e-17);
  EXPECT_LT(d.divmax, 1e-14);
  const auto e = run->energy_spectrum();
  double sum = 0;
  for (double v : e) sum += v;
  EXPECT_NEAR(sum, 0.125, 1e-15);
  EXPECT_NEAR(e[2], 0.125, 1e-15);  // all energy at |k| = sqrt 3 (shell 2)
}

TEST(FluidSolver, DivergenceStaysAtRoundOff) {
  FluidConfig cfg = taylor_green({16, 16, 16}, 0.01, 0.1, fluid::InitKind::Random);
  cfg.cfl = 0.5;
  SolverRun run(test::world(), cfg);
  run->setup();
  double worst = run->diagnostics().divmax;
  for (int s = 0; s < 10; ++s) {
    run->step(true);
    worst = std::max(worst, run->diagnostics().divmax);
  }
  EXPECT_LT(worst, 1e-12);
  test::report("random 16^3: max |div u| over 10 steps " + test::sci(worst));
}

// The thermo rows at P ranks equal those of a one-rank run on a split communicator.
TEST(FluidSolver, DiagnosticsEqualAtEveryRankCount) {
  struct Case {
    FluidConfig cfg;
    const char* name;
  };
  std::vector<Case> cases;
  cases.push_back({taylor_green({16, 16, 16}, 0.01, 0.05), "taylor-green 16^3 slab"});
  cases.push_back({taylor_green({16, 16, 16}, 0.01, 0.05), "taylor-green 16^3 pencil"});
  cases.back().cfg.decomposition = Decomposition::Pencil;
  FluidConfig rnd = taylor_green({16, 12, 10}, 0.02, 0.1, fluid::InitKind::Random);
  rnd.cfl = 0.4;
  rnd.forcing = fluid::Forcing::Linear;
  cases.push_back({rnd, "random 16x12x10 forced, adaptive dt"});
  for (const auto& c : cases) {
    const auto here = flatten(run_rows(test::world(), c.cfg, 10, 5));
    const auto one = on_rank0_alone([&](const comm::Communicator& one_rank) {
      return flatten(run_rows(one_rank, c.cfg, 10, 5));
    });
    std::string where;
    const double d = rows_diff(here, one, where);
    EXPECT_LT(d, 1e-12) << c.name << ": " << where;
    test::report(std::string(c.name) + ": largest difference to one rank " + test::sci(d));
  }
}

namespace {

// Sets up two runs of the same flow, steps them side by side and expects the same thermo rows (1e-12)
// and the same final spectral state (1e-12 of its largest value); returns both differences for the report.
std::string expect_same_run(SolverRun& a, SolverRun& b, int steps, const std::string& name) {
  a->setup();
  b->setup();
  Rows ra{row_of(*a)}, rb{row_of(*b)};
  for (int s = 0; s < steps; ++s) {
    a->step(true);
    b->step(true);
    ra.push_back(row_of(*a));
    rb.push_back(row_of(*b));
  }
  std::string where;
  const double rows = rows_diff(flatten(ra), flatten(rb), where);
  EXPECT_LT(rows, 1e-12) << name << ": " << where;
  const auto pa = a->spectral_planes(), pb = b->spectral_planes();
  EXPECT_EQ(pa.values.size(), pb.values.size()) << name;
  double largest = 0, diff = 0;
  for (std::size_t i = 0; i < std::min(pa.values.size(), pb.values.size()); ++i) {
    largest = std::max(largest, std::abs(pb.values[i]));
    diff = std::max(diff, std::abs(pa.values[i] - pb.values[i]));
  }
  largest = test::world().max(largest);
  diff = test::world().max(diff);
  EXPECT_GT(largest, 0) << name;
  EXPECT_LT(diff, 1e-12 * largest) << name << ": state differs by " << diff << " of " << largest;
  return "thermo " + test::sci(rows) + ", state " + test::sci(diff / largest) + " (relative)";
}

}  // namespace

// The pruned transforms (the default: the rows the dealiasing zeroes are not transformed) give the
// states and thermo rows of unpruned ones to round-off: slabs and pencils, odd and even sizes, the 2/3
// rule and no dealiasing (where only the Nyquist rows are skipped).
TEST(FluidSolver, PrunedTransformsGiveTheUnprunedResults) {
  struct Case {
    FluidConfig cfg;
    std::string name;
  };
  std::vector<Case> cases;
  for (const Grid& n : {Grid{16, 16, 16}, Grid{15, 12, 9}})
    for (auto kind : {Decomposition::Slab, Decomposition::Pencil}) {
      FluidConfig c = taylor_green(n, 0.02, 0.1, fluid::InitKind::Random);
      c.cfl = 0.4;
      c.decomposition = kind;
      cases.push_back({c, std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2])});
    }
  cases.push_back({cases[0].cfg, cases[0].name + " no dealiasing"});
  cases.back().cfg.dealias = fluid::Dealias::None;
  cases.push_back({cases[3].cfg, cases[3].name + " forced"});
  cases.back().cfg.forcing = fluid::Forcing::Linear;
  for (const auto& c : cases) {
    FluidConfig unpruned = c.cfg;
    unpruned.prune_transforms = false;
    SolverRun a(test::world(), c.cfg), b(test::world(), unpruned);
    ASSERT_TRUE(a->fft().band().has_value());
    ASSERT_FALSE(b->fft().band().has_value());
    const std::string same = expect_same_run(a, b, 6, c.name);
    test::report(c.name + " " + a->fft().geometry().describe() + ": pruned vs unpruned, " + same);
  }
}

// Batched transforms (fluid.fft_batch = "fields": the components, and the velocity with its vorticity,
// in one distributed transform) give the states and thermo rows of one transform per component ("none")
// to round-off: slabs and pencils, odd and even sizes, pruned and unpruned.
TEST(FluidSolver, BatchedTransformsGiveTheUnbatchedResults) {
  int cases = 0;
  for (const Grid& n : {Grid{16, 16, 16}, Grid{15, 12, 9}})
    for (auto kind : {Decomposition::Slab, Decomposition::Pencil})
      for (bool pruned : {true, false}) {
        FluidConfig c = taylor_green(n, 0.02, 0.1, fluid::InitKind::Random);
        c.cfl = 0.4;
        c.decomposition = kind;
        c.prune_transforms = pruned;
        c.fft_batch = fluid::FftBatch::Fields;
        FluidConfig single = c;
        single.fft_batch = fluid::FftBatch::None;
        SolverRun a(test::world(), c), b(test::world(), single);
        EXPECT_EQ(a->fft().max_batch(), fluid::k_fluid_max_batch);
        EXPECT_EQ(b->fft().max_batch(), 1);
        const std::string name = std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]) +
                                 " " + a->fft().geometry().describe() + (pruned ? " pruned" : " unpruned");
        test::report(name + ": batched vs one field per transform, " + expect_same_run(a, b, 4, name));
        ++cases;
      }
  EXPECT_EQ(cases, 8);
}

// E(T) - E(0) = -int_0^T dissipation dt, with the integral by Simpson's rule over the steps: the residual
// falls with the fourth power of dt (RK4; Simpson is fourth order too).
TEST(FluidSolver, EnergyBudgetHoldsToTheTimeSteppingOrder) {
  const double T = 1.0;
  std::vector<double> residual;
  for (int steps : {10, 20}) {
    const FluidConfig cfg = taylor_green({16, 16, 16}, 0.02, T / steps);
    SolverRun run(test::world(), cfg);
    run->setup();
    std::vector<double> eps{run->diagnostics().dissipation};
    const double e0 = run->diagnostics().energy;
    for (int s = 0; s < steps; ++s) {
      run->step(true);
      eps.push_back(run->diagnostics().dissipation);
    }
    const double h = T / steps;
    double integral = eps.front() + eps.back();
    for (int s = 1; s < steps; ++s) integral += (s % 2 ? 4 : 2) * eps[s];
    integral *= h / 3;
    residual.push_back(std::abs(run->diagnostics().energy - e0 + integral));
  }
  const double order = std::log2(residual[0] / residual[1]);
  EXPECT_GT(order, 3.5) << "residuals " << residual[0] << ", " << residual[1];
  EXPECT_LT(residual[1], 1e-7);
  test::report("energy budget residual " + test::sci(residual[0]) + " (dt 0.1), " + test::sci(residual[1]) +
               " (dt 0.05): order " + std::to_string(order));
}

TEST(FluidSolver, TimeEndIsHitExactly) {
  FluidConfig cfg = taylor_green({8, 8, 8}, 0.01, 0.1);
  cfg.time_end = 0.25;
  SolverRun run(test::world(), cfg);
  run->setup();
  int steps = 0;
  while (!run->finished() && steps < 10) {
    run->step(false);
    ++steps;
  }
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(run->time(), 0.25);
  EXPECT_NEAR(run->dt(), 0.05, 1e-15);
}

namespace {
long long g_allocations = 0;
void count_allocation(const Kokkos::Tools::SpaceHandle, const char*, const void*, const std::uint64_t) {
  ++g_allocations;
}
}  // namespace

TEST(FluidSolver, StepsAllocateNothing) {
  FluidConfig cfg = taylor_green({12, 10, 8}, 0.01, 0.05);
  cfg.cfl = 0.3;
  SolverRun run(test::world(), cfg);
  run->setup();
  run->step(false);  // the first step makes the decay factors of its dt (small tables, no allocation)
  Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
  g_allocations = 0;
  { fft::RealView probe("probe", 4); }
  const long long probe = g_allocations;
  g_allocations = 0;
  for (int s = 0; s < 3; ++s) run->step(false);
  const long long during = g_allocations;
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  EXPECT_EQ(probe, 1) << "the allocation hook did not fire";
  EXPECT_EQ(during, 0);
}

// state() then restore() into a fresh solver gives the same state bit for bit, and both continue
// bit-identically (fixed and adaptive dt).
TEST(FluidState, RoundTripIsBitwiseAndTheContinuationBitIdentical) {
  for (double cfl : {0.0, 0.4}) {
    FluidConfig cfg = taylor_green({16, 12, 10}, 0.01, 0.05);
    cfg.cfl = cfl;
    SolverRun a(test::world(), cfg);
    a->setup();
    for (int s = 0; s < 3; ++s) a->step(false);
    const io::SolverState st = a->state();
    SolverRun b(test::world(), cfg, true);
    b->restore(st);
    b->setup();
    const io::SolverState st2 = b->state();
    ASSERT_EQ(st.arrays.size(), st2.arrays.size());
    for (std::size_t k = 0; k < st.arrays.size(); ++k)
      EXPECT_TRUE(test::all_ranks(same_bits(st.arrays[k].f64, st2.arrays[k].f64))) << st.arrays[k].name;
    EXPECT_EQ(st.integers, st2.integers);
    EXPECT_EQ(st.reals, st2.reals);
    for (int s = 0; s < 3; ++s) {
      a->step(false);
      b->step(false);
    }
    const auto ra = row_of(*a), rb = row_of(*b);
    EXPECT_TRUE(same_bits(ra, rb)) << "cfl " << cfl;
    const io::SolverState sa = a->state(), sb = b->state();
    for (std::size_t k = 0; k < sa.arrays.size(); ++k)
      EXPECT_TRUE(test::all_ranks(same_bits(sa.arrays[k].f64, sb.arrays[k].f64))) << sa.arrays[k].name << " cfl " << cfl;
    EXPECT_EQ(a->time(), b->time());
  }
}

// A state written at P ranks restores at 1 and P - 1 ranks: the spectral field arrives bit for bit and
// the continuation agrees to round-off.
TEST(FluidState, RestoresOnADifferentRankCount) {
  FluidConfig cfg = taylor_green({16, 12, 10}, 0.01, 0.05);
  SolverRun a(test::world(), cfg);
  a->setup();
  for (int s = 0; s < 3; ++s) a->step(false);
  const io::SolverState st = a->state();
  std::vector<std::vector<double>> global;
  for (const auto& arr : st.arrays) global.push_back(gather_rows(test::world(), arr));
  for (int s = 0; s < 3; ++s) a->step(false);
  const auto want = row_of(*a);

  std::vector<int> counts{1};
  if (test::nranks() > 2) counts.push_back(test::nranks() - 1);
  for (int P2 : counts) {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, test::rank() < P2 ? 0 : MPI_UNDEFINED, test::rank(), &sub);
    std::vector<double> got;
    int exact = 1;
    std::string error;
    if (test::rank() < P2) {
      try {
        comm::Communicator c(sub);
        SolverRun b(c, cfg, true);
        b->restore(block_state(st, global, P2, c.rank()));
        b->setup();
        const io::SolverState sb = b->state();
        for (std::size_t k = 0; k < sb.arrays.size(); ++k)
          if (sb.arrays[k].name == "/fluid/uhat") exact = same_bits(gather_rows(c, sb.arrays[k]), global[k]) ? 1 : 0;
        for (int s = 0; s < 3; ++s) b->step(false);
        got = row_of(*b);
      } catch (const std::exception& e) {
        error = e.what();
      }
      MPI_Comm_free(&sub);
    }
    error = test::world().broadcast(error);
    ASSERT_TRUE(error.empty()) << error;
    got.resize(want.size());
    MPI_Bcast(got.data(), static_cast<int>(got.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&exact, 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string where;
    EXPECT_EQ(exact, 1) << "restored spectral field differs from the written one at " << P2 << " ranks";
    EXPECT_LT(rows_diff(want, got, where), 1e-12) << P2 << " ranks: " << where;
  }
}

TEST(FluidState, RestoreRejectsAnotherGrid) {
  const FluidConfig cfg = taylor_green({16, 12, 10}, 0.01, 0.05);
  SolverRun a(test::world(), cfg);
  a->setup();
  const io::SolverState st = a->state();
  FluidConfig other = cfg;
  other.n = {16, 12, 12};
  SolverRun b(test::world(), other, true);
  EXPECT_THROW(b->restore(st), InputError);
}

// Every Fourier mode of the random field is a function of (seed, wavenumber) alone.
TEST(FluidInit, RandomFieldIsTheSameOnAnyRankCountAndSolenoidal) {
  FluidConfig cfg = taylor_green({16, 12, 10}, 0.01, 0.05, fluid::InitKind::Random);
  cfg.random_energy = 0.3;
  cfg.decomposition = Decomposition::Pencil;
  SolverRun a(test::world(), cfg);
  a->setup();
  const io::SolverState st = a->state();
  const auto here = gather_rows(test::world(), st.arrays[1]);
  const auto one = on_rank0_alone([&](const comm::Communicator& c) {
    SolverRun b(c, cfg);
    b->setup();
    return b->state().arrays[1].f64;
  });
  ASSERT_EQ(here.size(), one.size());
  double worst = 0, big = 0;
  for (std::size_t i = 0; i < here.size(); ++i) {
    worst = std::max(worst, std::abs(here[i] - one[i]));
    big = std::max(big, std::abs(one[i]));
  }
  EXPECT_LT(worst, 1e-14 * big);
  const auto d = a->diagnostics();
  EXPECT_NEAR(d.energy, 0.3, 1e-14);
  EXPECT_LT(d.divmax, 1e-13);
  FluidConfig other = cfg;
  other.seed = cfg.seed + 1;
  SolverRun c(test::world(), other);
  const auto sc = gather_rows(test::world(), c->state().arrays[1]);
  EXPECT_FALSE(same_bits(sc, here)) << "the seed does not change the field";
}

TEST(FluidBadInput, GridsTooSmallAreInputErrors) {
  EXPECT_THROW(SolverRun(test::world(), taylor_green({2, 16, 16}, 0.01, 0.01)), InputError);
  FluidConfig c = taylor_green({16, 16, 16}, 0.01, 0.01);
  c.viscosity = -1;
  EXPECT_THROW(SolverRun(test::world(), c), InputError);
}

TEST(FluidBadInput, SizesWithLargePrimeFactorsWarn) {
  SolverRun run(test::world(), taylor_green({22, 16, 16}, 0.01, 0.01));
  ASSERT_EQ(run->warnings().size(), 1u);
  EXPECT_NE(run->warnings()[0].find("11"), std::string::npos) << run->warnings()[0];
}

// A fixed dt above the CFL limit is bad input at setup (exit 2) on every rank.
TEST(FluidBadInput, DtViolatingTheCflLimitIsAnInputError) {
  SolverRun run(test::world(), taylor_green({16, 16, 16}, 0.01, 1.0));
  try {
    run->setup();
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("CFL"), std::string::npos) << e.what();
  }
}

// An unstable run (no dealiasing, no viscosity, CFL 2) is stopped with a RunError naming step and time.
TEST(FluidBadInput, BlowUpIsReportedWithStepAndTime) {
  FluidConfig cfg = taylor_green({16, 16, 16}, 0.0, 0.8);
  cfg.dealias = fluid::Dealias::None;
  cfg.cfl_limit = 1e6;  // let it run into the instability
  SolverRun run(test::world(), cfg);
  run->setup();
  std::string message;
  int steps = 0;
  try {
    for (; steps < 500; ++steps) {
      run->step(true);
      run->thermo();
    }
  } catch (const RunError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("blow-up at step"), std::string::npos) << "after " << steps << " steps: " << message;
  EXPECT_NE(message.find("t = "), std::string::npos) << message;
  EXPECT_EQ(test::world().max(static_cast<std::int64_t>(steps)), static_cast<std::int64_t>(steps))
      << "ranks stopped at different steps";
  test::report("blow-up detected after " + std::to_string(steps) + " steps: " + message);
}

// --- deck keys -------------------------------------------------------------------------------------------

TEST(FluidDeck, KeysGiveTheConfigAndDefaults) {
  const auto deck = launcher::Deck::parse(R"([run]
solver = "fluid"
[fluid]
n = [24, 18, 16]
viscosity = 0.000625
cfl = 0.5
init = "random"
decomposition = "pencil"
seed = 7
forcing = "linear"
spectrum_every = 10
)",
                                          "test.toml");
  deck.validate();
  const FluidConfig c = fluid::config_from_deck(deck);
  EXPECT_EQ(c.n, (Grid{24, 18, 16}));
  EXPECT_EQ(c.viscosity, 0.000625);
  EXPECT_EQ(c.cfl, 0.5);
  EXPECT_EQ(c.init, fluid::InitKind::Random);
  EXPECT_EQ(c.decomposition, Decomposition::Pencil);
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.forcing, fluid::Forcing::Linear);
  EXPECT_EQ(c.spectrum_every, 10);
  EXPECT_EQ(c.dt, 0.01);  // defaults
  EXPECT_EQ(c.field_every, 0);
  EXPECT_EQ(c.dealias, fluid::Dealias::TwoThirds);
  EXPECT_EQ(c.fft_plan, fft::PlanRigor::Estimate);
}

// The deck engine checks the keys (types, ranges, choices) and the fluid registration's rule between
// fluid.cfl and fluid.cfl_limit.
TEST(FluidDeck, BadValuesAreInputErrors) {
  const char* bad[] = {"[fluid]\nviscosity = -1.0\n", "[fluid]\ninit = \"vortex\"\n", "[fluid]\nn = [2, 16, 16]\n",
                       "[fluid]\nn = [16, 16, 1]\n",    "[fluid]\ndt = 0\n",          "[fluid]\nn = 16\n",
                       "[fluid]\ncfl = 2.0\n",         "[fluid]\nspectrum_every = 1.5\n"};
  for (const char* text : bad) {
    const auto deck = launcher::Deck::parse(std::string("[run]\nsolver = \"fluid\"\n") + text, "bad.toml");
    EXPECT_THROW(deck.validate(), InputError) << text;
  }
  const auto deck = launcher::Deck::parse("[run]\nsolver = \"fluid\"\n[fluid]\ncfl = 2.0\n", "bad.toml");
  try {
    deck.validate();
    ADD_FAILURE() << "fluid.cfl > fluid.cfl_limit is valid";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml:4: fluid.cfl = 2.000000 exceeds fluid.cfl_limit = 1.000000"),
              std::string::npos)
        << e.what();
  }
}

TEST(FluidDeck, DocsAndInputsCoverEveryKey) {
  std::ifstream in(std::string(SPOTRUN_SOURCE_DIR) + "/docs/fluid.md");
  ASSERT_TRUE(in) << "docs/fluid.md is missing";
  std::stringstream doc;
  doc << in.rdbuf();
  ASSERT_NE(solvers::find_solver("fluid"), nullptr);
  for (const auto& k : solvers::find_solver("fluid")->keys) {
    EXPECT_NE(doc.str().find("`" + k.key + "`"), std::string::npos) << "docs/fluid.md does not document " << k.key;
    EXPECT_FALSE(k.unit.empty()) << k.key;
  }
  for (const char* name : {"tgv-re1600.toml", "taylor-green-2d.toml"}) {
    std::ifstream f(std::string(SPOTRUN_SOURCE_DIR) + "/inputs/" + name);
    ASSERT_TRUE(f) << name;
    std::stringstream text;
    text << f.rdbuf();
    const auto deck = launcher::Deck::parse(text.str(), name);
    EXPECT_NO_THROW(deck.validate()) << name;
    EXPECT_NO_THROW(fluid::config_from_deck(deck)) << name;
    EXPECT_EQ(deck.get_string("run.solver"), "fluid") << name;
  }
}

// --- output ----------------------------------------------------------------------------------------------

namespace {

std::vector<double> read_dataset(const std::string& file, const std::string& name, std::vector<hsize_t>& dims) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("cannot open " + file);
  hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  hid_t s = H5Dget_space(d);
  const int rank = H5Sget_simple_extent_ndims(s);
  dims.assign(static_cast<std::size_t>(std::max(rank, 0)), 0);
  H5Sget_simple_extent_dims(s, dims.data(), nullptr);
  std::size_t n = 1;
  for (auto v : dims) n *= v;
  std::vector<double> out(n);
  const herr_t rc = H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
  H5Sclose(s);
  H5Dclose(d);
  H5Fclose(f);
  if (d < 0 || rc < 0) throw std::runtime_error("cannot read " + file + ":" + name);
  return out;
}

}  // namespace

// The field file holds the velocity in (nz, ny, nx, 3) order, x fastest, as XDMF describes it; the
// spectrum sums to the energy.
TEST(FluidOutput, WritesHdf5FieldsXdmfAndSpectrum) {
  namespace fs = std::filesystem;
  std::string dir = test::is_root()
                        ? (fs::temp_directory_path() / ("spotrun-fluid-output-" + std::to_string(::getpid()))).string()
                        : std::string();
  dir = test::world().broadcast(dir);
  FluidConfig cfg = taylor_green({16, 12, 10}, 0.01, 0.05);
  cfg.spectrum_every = 1;
  cfg.field_every = 2;
  SolverRun run(test::world(), cfg);
  run->setup();
  run->write_outputs(dir, 0);
  run->step(false);
  run->write_outputs(dir, 1);  // spectrum only
  run->step(false);
  run->write_outputs(dir, 2);
  if (test::is_root()) {
    try {
      std::vector<hsize_t> dims;
      const auto u = read_dataset(dir + "/fields/velocity_000000000.h5", "/velocity", dims);
      if (dims != std::vector<hsize_t>{10, 12, 16, 3}) throw std::runtime_error("velocity dataset has the wrong shape");
      double err = 0;
      for (int k = 0; k < 10; ++k)
        for (int j = 0; j < 12; ++j)
          for (int i = 0; i < 16; ++i) {
            const double x = k_two_pi * i / 16, y = k_two_pi * j / 12, z = k_two_pi * k / 10;
            const std::size_t p = ((static_cast<std::size_t>(k) * 12 + j) * 16 + i) * 3;
            err = std::max({err, std::abs(u[p] - std::sin(x) * std::cos(y) * std::cos(z)),
                            std::abs(u[p + 1] + std::cos(x) * std::sin(y) * std::cos(z)), std::abs(u[p + 2])});
          }
      EXPECT_LT(err, 1e-14);
      const auto e = read_dataset(dir + "/spectrum.h5", "/step_000000000/E", dims);
      double sum = 0;
      for (double v : e) sum += v;
      EXPECT_NEAR(sum, 0.125, 1e-15);
      read_dataset(dir + "/spectrum.h5", "/step_000000001/E", dims);
      EXPECT_TRUE(fs::exists(dir + "/fields/velocity_000000002.h5"));
      EXPECT_FALSE(fs::exists(dir + "/fields/velocity_000000001.h5"));
      std::ifstream x(dir + "/velocity.xmf");
      std::stringstream xs;
      xs << x.rdbuf();
      EXPECT_NE(xs.str().find("fields/velocity_000000000.h5:/velocity"), std::string::npos);
      EXPECT_NE(xs.str().find("fields/velocity_000000002.h5:/velocity"), std::string::npos);
      EXPECT_NE(xs.str().find("Dimensions=\"10 12 16 3\""), std::string::npos) << xs.str();
    } catch (const std::exception& ex) {
      ADD_FAILURE() << ex.what();
    }
    fs::remove_all(dir);
  }
  test::world().barrier();
}
