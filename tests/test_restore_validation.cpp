// Restoring a solver from a checkpoint state validates it first (md::MdSolver::restore,
// fluid::FluidSolver::restore): a damaged or crafted state ends in an InputError on every rank, naming
// the problem, while the unmodified state continues bit for bit. Also: the non-finite-position cause of
// lost atoms, the instability hints, and the memory estimates against the memory really allocated.
#include <gtest/gtest.h>
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "launcher/run/memory_check.hpp"
#include "solvers/fluid/fluid_memory.hpp"
#include "solvers/fluid/fluid_solver.hpp"
#include "solvers/md/md_memory.hpp"
#include "support/alloc_watch.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;
using test::ThermoRow;

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

// An MD solver with its own transport (declared first, destroyed last); restoring: no atoms yet.
struct Md {
  std::unique_ptr<comm::Transport> transport;
  std::unique_ptr<md::MdSolver> solver;
  Md(const md::MdConfig& cfg, bool restoring)
      : transport(comm::make_transport("auto", test::world())),
        solver(std::make_unique<md::MdSolver>(cfg, test::world(), *transport, nullptr, restoring)) {}
  md::MdSolver* operator->() { return solver.get(); }
};

struct Fluid {
  std::unique_ptr<comm::Transport> transport;
  std::unique_ptr<fluid::FluidSolver> solver;
  Fluid(const fluid::FluidConfig& cfg, bool restoring)
      : transport(comm::make_transport("auto", test::world())),
        solver(std::make_unique<fluid::FluidSolver>(cfg, test::world(), *transport, restoring)) {}
  fluid::FluidSolver* operator->() { return solver.get(); }
};

// 864 atoms; sub-boxes >= cutoff + skin at 1-4 ranks.
md::MdConfig md_config() {
  auto cfg = test::lattice_config({6, 6, 6}, 1.5);
  cfg.ensemble = md::Ensemble::Langevin;  // the noise is keyed by step: a resumed run must know its step
  cfg.temperature = 1.2;
  cfg.damp = 0.5;
  return cfg;
}

// A state of md_config() after 37 steps (a liquid with neighbour builds behind it), and the thermo rows
// of the same run continued to step 60 (every 5 steps).
struct MdReference {
  io::SolverState state;
  std::vector<ThermoRow> rows;
};
const MdReference& md_reference() {
  static const MdReference ref = [] {
    MdReference r;
    Md run(md_config(), false);
    run->setup();
    for (int s = 0; s < 37; ++s) run->step(false);
    r.state = run->state();
    for (int s = 38; s <= 60; ++s) {
      run->step(s % 5 == 0);
      if (s % 5 == 0) r.rows.push_back(test::thermo_row(*run.solver));
    }
    return r;
  }();
  return ref;
}

io::StateArray& array(io::SolverState& st, const std::string& name) {
  for (auto& a : st.arrays)
    if (a.name == name) return a;
  throw std::logic_error("no array " + name);
}

// Restores `st` into a fresh solver of `cfg`; returns "" when it succeeds, else "InputError: <message>"
// or "<other exception>: <message>".
template <class Make>
std::string restore_outcome(Make make, const io::SolverState& st) {
  try {
    auto run = make();
    run->restore(st);
    return "";
  } catch (const InputError& e) {
    return std::string("InputError: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("other exception: ") + e.what();
  }
}

// Every rank threw an InputError with the same message, which contains `expect`.
void expect_rejected(const std::string& outcome, const std::string& what, const std::string& expect) {
  const std::string on_root = test::world().broadcast(outcome);
  EXPECT_EQ(outcome.rfind("InputError: ", 0), 0u) << what << ": " << (outcome.empty() ? "restored" : outcome);
  EXPECT_NE(outcome.find(expect), std::string::npos) << what << ": expected '" << expect << "' in: " << outcome;
  EXPECT_EQ(outcome, on_root) << what << ": ranks disagree";
}

// The last rank holds the crafted row, so rank 0 has nothing wrong locally: the verdict must be agreed.
bool on_last_rank() { return test::rank() == test::nranks() - 1; }

}  // namespace

// The unmodified state restores into a fresh solver, which continues bit for bit like the original.
TEST(MdRestore, UnmodifiedStateContinuesBitwise) {
  const MdReference& ref = md_reference();
  Md b(md_config(), true);
  b->restore(ref.state);
  EXPECT_EQ(b->step_index(), 37);
  EXPECT_EQ(b->time(), 37 * md_config().dt);
  b->setup();
  std::vector<ThermoRow> rows;
  for (int s = 38; s <= 60; ++s) {
    b->step(s % 5 == 0);
    if (s % 5 == 0) rows.push_back(test::thermo_row(*b.solver));
  }
  ASSERT_EQ(rows.size(), ref.rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    EXPECT_EQ(std::memcmp(rows[r].data(), ref.rows[r].data(), sizeof(ThermoRow)), 0)
        << "thermo row at step " << ref.rows[r][0] << " differs after the restore";
  EXPECT_EQ(rows.back()[1], 60 * md_config().dt) << "time is step x md.dt";
}

namespace {

// A state a checkpoint writer hands back, spoilt as it may be (its values, and the rows a level write
// renumbered to its node file's); `where` gets each array's memory.
void spoil_spare(io::SolverState& spare, std::vector<const void*>& where) {
  for (auto& a : spare.arrays) {
    where.push_back(a.is_integer ? static_cast<const void*>(a.i64.data()) : static_cast<const void*>(a.f64.data()));
    std::fill(a.f64.begin(), a.f64.end(), k_nan);
    std::fill(a.i64.begin(), a.i64.end(), std::int64_t{-7});
    a.first_row = 3;
    a.global_rows = a.rows;
  }
  spare.integers["step"] = -1;
  spare.reals["left.over"] = 1.0;
}

// `reused` (state_reusing() of the spare whose memory is `where`) is `fresh` (state()) bit for bit, in that memory.
void expect_same_state_in_place(const io::SolverState& reused, const io::SolverState& fresh,
                                const std::vector<const void*>& where) {
  EXPECT_EQ(reused.solver, fresh.solver);
  EXPECT_EQ(reused.integers, fresh.integers);
  EXPECT_EQ(reused.reals, fresh.reals);
  EXPECT_EQ(reused.strings, fresh.strings);
  ASSERT_EQ(reused.arrays.size(), fresh.arrays.size());
  for (std::size_t k = 0; k < fresh.arrays.size(); ++k) {
    const io::StateArray &a = reused.arrays[k], &b = fresh.arrays[k];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.inner, b.inner);
    EXPECT_EQ(a.is_integer, b.is_integer);
    EXPECT_EQ(a.global_rows, b.global_rows);
    EXPECT_EQ(a.first_row, b.first_row);
    EXPECT_EQ(a.rows, b.rows);
    ASSERT_EQ(a.f64.size(), b.f64.size()) << a.name;
    ASSERT_EQ(a.i64.size(), b.i64.size()) << a.name;
    if (!a.f64.empty()) {
      EXPECT_EQ(std::memcmp(a.f64.data(), b.f64.data(), 8 * a.f64.size()), 0) << a.name << " differs";
    }
    if (!a.i64.empty()) {
      EXPECT_EQ(std::memcmp(a.i64.data(), b.i64.data(), 8 * a.i64.size()), 0) << a.name << " differs";
    }
    const void* now = a.is_integer ? static_cast<const void*>(a.i64.data()) : static_cast<const void*>(a.f64.data());
    EXPECT_EQ(now, where[k]) << a.name << " was allocated anew";
  }
}

// The next checkpoint's snapshot in the memory of the last one (Solver::state_reusing) is state() bit for bit,
// and every array stays where it was: no allocation, whatever the spare held. `run`: a fresh solver (set up
// here), stepped `before` steps before the first snapshot and `between` steps between the two.
void check_snapshot_in_place(Solver& run, int before, int between) {
  run.setup();
  for (int s = 0; s < before; ++s) run.step(false);
  io::SolverState spare = run.state();
  std::vector<const void*> where;
  spoil_spare(spare, where);
  for (int s = 0; s < between; ++s) run.step(false);
  const io::SolverState fresh = run.state();
  std::size_t smallest = ~std::size_t(0);
  for (const auto& a : fresh.arrays) smallest = std::min(smallest, 8 * std::max(a.f64.size(), a.i64.size()));
  std::size_t largest = 0;
  io::SolverState reused;
  {
    test::AllocWatch watch;
    reused = run.state_reusing(std::move(spare));
    largest = watch.largest();
  }
  // Where a buffer was freed and made again, the allocator may hand back the same address; an allocation the
  // size of an array may not.
  EXPECT_LT(largest, smallest) << "state_reusing() allocated " << largest << " bytes at once";
  expect_same_state_in_place(reused, fresh, where);
}

}  // namespace

TEST(MdRestore, SnapshotInTheLastOnesMemoryIsTheSameState) {
  Md run(md_config(), false);
  check_snapshot_in_place(*run.solver, 13, 29);  // neighbour builds between: the atoms' order changes
}

// MD time is step x dt on every path: no last-bit difference between a resumed and a straight run.
TEST(MdRestore, TimeIsStepTimesDt) {
  auto cfg = md_config();
  cfg.dt = 0.0055;  // 550 x 0.0055 is not 0.0055 added 550 times
  Md a(cfg, false);
  a->setup();
  for (int s = 0; s < 7; ++s) a->step(false);
  const io::SolverState st = a->state();
  EXPECT_EQ(st.reals.at("time"), 7 * 0.0055);
  Md b(cfg, true);
  b->restore(st);
  for (int s = 0; s < 5; ++s) {
    a->step(false);
    b->step(false);
  }
  EXPECT_EQ(a->time(), 12 * 0.0055);
  EXPECT_EQ(b->time(), 12 * 0.0055);
}

// Crafted copies of a valid state: each is refused on every rank with a message naming the problem.
TEST(MdRestore, RejectsCraftedStates) {
  const MdReference& ref = md_reference();
  const auto cfg = md_config();
  auto data_cfg = cfg;  // a data-file deck: the deck says nothing about box, atom count or masses
  data_cfg.from_lattice = false;
  const int P = test::nranks();
  const std::int64_t natoms = ref.state.integers.at("md.natoms");
  const double lx = ref.state.reals.at("md.box.hi_x") - ref.state.reals.at("md.box.lo_x");

  struct Case {
    std::string what;
    std::function<void(io::SolverState&)> craft;
    std::string expect;
    bool data_deck = false;
  };
  auto on_last = [](const char* name, std::size_t value, double v) {
    return [=](io::SolverState& st) {
      if (on_last_rank()) array(st, name).f64[value] = v;
    };
  };
  std::vector<Case> cases{
      {"negative id", [](io::SolverState& st) { if (on_last_rank()) array(st, "/md/id").i64[0] = -3; },
       "has id -3; ids must be 1.."},
      {"id 0", [](io::SolverState& st) { if (on_last_rank()) array(st, "/md/id").i64[0] = 0; }, "has id 0"},
      {"duplicate id in a block",
       [](io::SolverState& st) {
         if (on_last_rank()) array(st, "/md/id").i64[1] = array(st, "/md/id").i64[0];
       },
       "appears twice"},
      {"ids out of order in a block",
       [](io::SolverState& st) {
         if (on_last_rank()) std::swap(array(st, "/md/id").i64[0], array(st, "/md/id").i64[1]);
       },
       "not in increasing order"},
      {"NaN in x", on_last("/md/x", 1, k_nan), "has a non-finite x (y component nan)"},
      {"NaN in v", on_last("/md/v", 2, k_nan), "has a non-finite v (z component nan)"},
      {"inf in f", on_last("/md/f", 0, HUGE_VAL), "has a non-finite f (x component inf)"},
      {"NaN in x_build", on_last("/md/x_build", 0, k_nan), "has a non-finite x_build"},
      {"x_build at the upper box face", on_last("/md/x_build", 0, lx), "outside the box"},
      {"x_build below the box", on_last("/md/x_build", 3 * 5 + 2, -1e-12), "in z outside the box"},
      {"x far from x_build",
       [lx](io::SolverState& st) {
         if (on_last_rank()) array(st, "/md/x").f64[0] = array(st, "/md/x_build").f64[0] + 0.6 * lx;
       },
       "from its position at the last neighbour build"},
      {"image flag beyond int",
       [](io::SolverState& st) { if (on_last_rank()) array(st, "/md/image").i64[1] = std::int64_t{1} << 40; },
       "image flag 1099511627776 in y outside the range of int"},
      {"type 0", [](io::SolverState& st) { if (on_last_rank()) array(st, "/md/type").i64[0] = 0; },
       "has type 0 outside 1..1"},
      {"type too large", [](io::SolverState& st) { if (on_last_rank()) array(st, "/md/type").i64[0] = 2; },
       "has type 2 outside 1..1"},
      {"step -7", [](io::SolverState& st) { st.integers["step"] = -7; }, "checkpoint step -7 is negative"},
      {"time not step x dt",
       [](io::SolverState& st) { st.reals["time"] = std::nextafter(st.reals["time"], 1e300); },
       "does not match step 37 x md.dt"},
      {"since_build > step", [](io::SolverState& st) { st.integers["md.since_build"] = 38; }, "md.since_build = 38"},
      {"negative dangerous builds", [](io::SolverState& st) { st.integers["md.dangerous_builds"] = -1; },
       "md.dangerous_builds = -1"},
      {"mass 0", [](io::SolverState& st) { st.reals["md.mass.1"] = 0; }, "mass of type 1 is 0;"},
      {"mass NaN", [](io::SolverState& st) { st.reals["md.mass.1"] = k_nan; }, "mass of type 1 is nan"},
      {"mass 2 for a lattice deck", [](io::SolverState& st) { st.reals["md.mass.1"] = 2; },
       "checkpoint mass of type 1 is 2, but the deck gives it mass 1 (md.types, default 1)"},
      {"two types for a lattice deck",
       [](io::SolverState& st) {
         st.integers["md.ntypes"] = 2;
         st.reals["md.mass.2"] = 1;
       },
       "checkpoint has 2 atom type(s), but the deck's lattice has 1 (md.types)"},
      {"ntypes 0", [](io::SolverState& st) { st.integers["md.ntypes"] = 0; }, "md.ntypes = 0 is outside"},
      {"box one ulp larger than the lattice's",
       [](io::SolverState& st) { st.reals["md.box.hi_y"] = std::nextafter(st.reals["md.box.hi_y"], 1e300); },
       "but the deck's lattice (md.lattice.cells, md.lattice.density) gives"},
      {"inverted box", [](io::SolverState& st) { st.reals["md.box.lo_z"] = 1e3; }, "not a finite, non-empty interval"},
      {"natoms other than the lattice's", [](io::SolverState& st) { st.integers["md.natoms"] += 1; },
       "but the deck's lattice has 864 atoms"},
      {"natoms other than the datasets' rows", [](io::SolverState& st) { st.integers["md.natoms"] += 1; },
       "rows, but md.natoms is 865", true},
      {"natoms 0", [](io::SolverState& st) { st.integers["md.natoms"] = 0; }, "md.natoms = 0", true},
      {"missing dataset",
       [](io::SolverState& st) {
         st.arrays.erase(std::remove_if(st.arrays.begin(), st.arrays.end(),
                                        [](const io::StateArray& a) { return a.name == "/md/f"; }),
                         st.arrays.end());
       },
       "checkpoint has no dataset /md/f"},
      {"short dataset", [](io::SolverState& st) { if (on_last_rank()) array(st, "/md/v").f64.pop_back(); },
       "values for"},
      {"missing attribute", [](io::SolverState& st) { st.integers.erase("md.since_build"); },
       "no attribute 'md.since_build'"},
      {"another solver", [](io::SolverState& st) { st.solver = "fluid"; }, "not 'md'"},
  };
  if (P > 1) {
    // Ids are 1..N in row order here, so the first id of rank 1's block is first_row + 1.
    cases.push_back({"duplicate id where two blocks meet",
                     [](io::SolverState& st) {
                       auto& id = array(st, "/md/id");
                       if (test::rank() == 1) id.i64[0] = static_cast<std::int64_t>(id.first_row);
                     },
                     "where two blocks meet: id " + std::to_string(natoms / P) + " at row " +
                         std::to_string(natoms / P) + " follows id " + std::to_string(natoms / P) + " (a duplicate)"});
    cases.push_back({"ids out of order where two blocks meet",
                     [natoms](io::SolverState& st) {
                       if (test::rank() == 0) array(st, "/md/id").i64.back() = natoms + 100;
                     },
                     "not strictly increasing where two blocks meet"});
  }
  for (const auto& c : cases) {
    io::SolverState st = ref.state;
    c.craft(st);
    const auto& deck = c.data_deck ? data_cfg : cfg;
    const std::string outcome = restore_outcome([&] { return Md(deck, true); }, st);
    expect_rejected(outcome, c.what, c.expect);
  }
}

// What a data-file deck does not fix is not checked against it: a box one ulp larger restores.
TEST(MdRestore, DataFileDeckAcceptsAnyValidBox) {
  auto cfg = md_config();
  cfg.from_lattice = false;
  io::SolverState st = md_reference().state;
  st.reals["md.box.hi_x"] = std::nextafter(st.reals["md.box.hi_x"], 1e300);
  const std::string outcome = restore_outcome([&] { return Md(cfg, true); }, st);
  EXPECT_EQ(outcome, "");
}

// Lost atoms with non-finite positions say so, with the hint: an atom sent to +inf is lost where a
// dimension has more than one rank. At one rank nothing can be lost (every dimension wraps locally).
TEST(MdInstability, LostAtomsWithNonFinitePositionsNameTheCause) {
  if (test::nranks() == 1) {
    test::report("one rank: no atom can be lost (see InstabilityWithoutNonFiniteValuesIsNamedToo)");
    return;  // no collective follows
  }
  Md run(test::lattice_config({6, 6, 6}, 1.5), false);
  run->setup();
  const double inf = HUGE_VAL;
  test::set_position(*run.solver, 1, {inf, inf, inf});
  std::string error;
  try {
    run->recompute_forces();
  } catch (const RunError& e) {
    error = e.what();
  }
  EXPECT_EQ(error.rfind("non-finite positions at step 0: the time step md.dt = 0.005 is too large for this system, "
                        "or atoms overlap",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find("(1 atoms with a non-finite position or velocity, 1 lost)"), std::string::npos) << error;
  EXPECT_EQ(error, test::world().broadcast(error)) << "ranks disagree";
}

// md.dt = 1000: the atoms fly far in one step (the lattice forces are zero, so the positions stay
// finite). With more than one rank they are lost and the message carries the hint; at one rank the
// run goes on until the thermo is non-finite, which the launcher stops.
TEST(MdInstability, InstabilityWithoutNonFiniteValuesIsNamedToo) {
  auto cfg = test::lattice_config({6, 6, 6}, 1.5);
  cfg.dt = 1000;
  Md run(cfg, false);
  run->setup();
  std::string error;
  bool finite = true;
  try {
    for (int step = 1; step <= 10 && finite; ++step) {
      run->step(true);
      for (double v : run->thermo()) finite = finite && std::isfinite(v);
    }
  } catch (const RunError& e) {
    error = e.what();
  }
  if (test::nranks() == 1) {
    EXPECT_EQ(error, "");
    EXPECT_FALSE(finite) << "thermo stayed finite for 10 steps of md.dt = 1000";
  } else {
    EXPECT_NE(error.find("atoms lost at step 1"), std::string::npos) << error;
    EXPECT_NE(error.find("the time step md.dt = 1000 is too large"), std::string::npos) << error;
    EXPECT_EQ(error, test::world().broadcast(error)) << "ranks disagree";
  }
  test::report("md.dt = 1000 at " + std::to_string(test::nranks()) + " rank(s), step " + std::to_string(run->step_index()) +
               ": " + (error.empty() ? "non-finite thermo" : error));
}

TEST(MdInstability, HintNamesTheTimeStep) {
  auto cfg = md_config();
  cfg.dt = 0.007;
  Md run(cfg, true);
  EXPECT_EQ(run->instability_hint(),
            "the time step md.dt = 0.007 is too large for this system, or atoms overlap (check the initial "
            "configuration, md.pair.epsilon/sigma)");
}

// At one rank the advice is about the box, not the rank count.
TEST(MdDomain, BoxThinnerThanTheCutoffSaysSo) {
  auto cfg = test::lattice_config({1, 4, 4}, 1.0);
  std::string error;
  try {
    Md run(cfg, false);
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("is thinner than cutoff + skin = 2.8 sigma in x"), std::string::npos) << error;
  EXPECT_NE(error.find("more md.lattice.cells, or a shorter md.cutoff / md.skin"), std::string::npos) << error;
  EXPECT_EQ(error.find("fewer ranks"), std::string::npos) << error;
}

// --- fluid ---------------------------------------------------------------------------------------------

namespace {

fluid::FluidConfig fluid_config() {
  fluid::FluidConfig c;
  c.n = {16, 12, 10};
  c.viscosity = 0.01;
  c.dt = 0.05;
  return c;
}

struct FluidReference {
  io::SolverState state;
  std::vector<double> row;  // thermo after 3 more steps
};
const FluidReference& fluid_reference() {
  static const FluidReference ref = [] {
    FluidReference r;
    Fluid run(fluid_config(), false);
    run->setup();
    for (int s = 0; s < 3; ++s) run->step(false);
    r.state = run->state();
    for (int s = 0; s < 3; ++s) run->step(s == 2);
    r.row = run->thermo();
    return r;
  }();
  return ref;
}

}  // namespace

TEST(FluidRestore, SnapshotInTheLastOnesMemoryIsTheSameState) {
  Fluid run(fluid_config(), false);
  check_snapshot_in_place(*run.solver, 2, 3);
}

TEST(FluidRestore, UnmodifiedStateContinuesBitwise) {
  const FluidReference& ref = fluid_reference();
  Fluid b(fluid_config(), true);
  b->restore(ref.state);
  b->setup();
  for (int s = 0; s < 3; ++s) b->step(s == 2);
  const auto row = b->thermo();
  ASSERT_EQ(row.size(), ref.row.size());
  EXPECT_EQ(std::memcmp(row.data(), ref.row.data(), row.size() * sizeof(double)), 0);
}

TEST(FluidRestore, RejectsCraftedStates) {
  const FluidReference& ref = fluid_reference();
  struct Case {
    std::string what;
    std::function<void(io::SolverState&)> craft;
    std::string expect;
  };
  // The last rank's block has kx = 15 (or more); its first value is the real part of component 0 there.
  auto nan_in = [](const char* name, std::size_t v) {
    return [=](io::SolverState& st) {
      if (on_last_rank()) array(st, name).f64[v] = k_nan;
    };
  };
  const std::uint64_t last_first_row = [&] {
    std::uint64_t first = 0, rows = 0;
    io::block_of(16, test::nranks(), test::nranks() - 1, first, rows);
    return first;
  }();
  const std::vector<Case> cases{
      {"NaN in uhat", nan_in("/fluid/uhat", 6 * (6 * 2 + 3) + 3),
       "/fluid/uhat has the non-finite value nan at kx = " + std::to_string(last_first_row) +
           ", ky = 2, kz = 3, component 1"},
      {"NaN in u", nan_in("/fluid/u", 3 * (10 * 4 + 7) + 2),
       "/fluid/u has the non-finite value nan at x = " + std::to_string(last_first_row) + ", y = 4, z = 7, component 2"},
      {"step -1", [](io::SolverState& st) { st.integers["step"] = -1; }, "checkpoint step -1 is negative"},
      {"dt 0", [](io::SolverState& st) { st.reals["dt"] = 0; }, "checkpoint dt 0 is not finite and > 0"},
      {"dt -0.05", [](io::SolverState& st) { st.reals["dt"] = -0.05; }, "checkpoint dt -0.050000000000000003"},
      {"dt NaN", [](io::SolverState& st) { st.reals["dt"] = k_nan; }, "checkpoint dt nan"},
      {"time inf", [](io::SolverState& st) { st.reals["time"] = HUGE_VAL; }, "checkpoint time inf"},
      {"energy_ref NaN", [](io::SolverState& st) { st.reals["fluid.energy_ref"] = k_nan; }, "fluid.energy_ref nan"},
      {"another grid", [](io::SolverState& st) { st.integers["fluid.nz"] = 12; }, "the deck's fluid.n is [16, 12, 10]"},
      {"missing attribute", [](io::SolverState& st) { st.reals.erase("dt"); }, "no attribute 'dt'"},
  };
  for (const auto& c : cases) {
    io::SolverState st = ref.state;
    c.craft(st);
    const std::string outcome = restore_outcome([] { return Fluid(fluid_config(), true); }, st);
    expect_rejected(outcome, c.what, c.expect);
  }
}

TEST(FluidInstability, HintNamesStepCflAndGrid) {
  auto cfg = fluid_config();
  Fluid fixed(cfg, true);
  EXPECT_EQ(fixed->instability_hint(),
            "the time step fluid.dt = 0.05 is too large for the CFL condition (lower it, or set fluid.cfl for an "
            "adaptive step), or the grid fluid.n = [16, 12, 10] under-resolves the flow (refine it)");
  cfg.cfl = 0.5;
  Fluid adaptive(cfg, true);
  EXPECT_EQ(adaptive->instability_hint(),
            "the CFL number fluid.cfl = 0.5 (steps of at most fluid.dt = 0.05) is too large, or the grid fluid.n = "
            "[16, 12, 10] under-resolves the flow (refine it)");
}

// --- memory estimates ---------------------------------------------------------------------------------

namespace {

// Bytes of Kokkos allocations made while tracking that are still live, and their peak.
std::unordered_map<const void*, std::uint64_t> g_live;
double g_current = 0, g_peak = 0;
void on_allocate(const Kokkos::Tools::SpaceHandle, const char*, const void* ptr, const std::uint64_t size) {
  g_live[ptr] = size;
  g_current += static_cast<double>(size);
  g_peak = std::max(g_peak, g_current);
}
void on_deallocate(const Kokkos::Tools::SpaceHandle, const char*, const void* ptr, const std::uint64_t) {
  auto it = g_live.find(ptr);
  if (it == g_live.end()) return;  // allocated before tracking began
  g_current -= static_cast<double>(it->second);
  g_live.erase(it);
}

double status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return 1024.0 * std::stod(line.substr(std::strlen(key) + 1));
  return 0;
}

struct Usage {
  double kokkos = 0;  // peak of the Kokkos views allocated during f
  double rss = 0;     // peak resident memory during f above the resident memory before it
};

// Runs f (collective) and measures what it allocates on this rank. Large blocks are mapped afresh by
// malloc (fixed mmap threshold), so freed memory is not reused unseen and the resident peak counts
// them; /proc/self/clear_refs resets the peak.
Usage measure(const std::function<void()>& f) {
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  mallopt(M_TRIM_THRESHOLD, 64 * 1024);
  malloc_trim(0);
  g_live.clear();
  g_current = g_peak = 0;
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(on_deallocate);
  { std::ofstream("/proc/self/clear_refs") << "5"; }
  test::world().barrier();
  const double rss0 = status_bytes("VmRSS:");
  f();
  const double hwm = status_bytes("VmHWM:");
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  g_live.clear();
  return {g_peak, hwm - rss0};
}

std::string mib(double bytes) {
  std::ostringstream s;
  s.precision(3);
  s << bytes / (1024.0 * 1024.0) << " MiB";
  return s.str();
}

// The estimate covers what was allocated, and is not more than 3 times it (on every rank).
void expect_estimate_fits(const std::string& what, double estimate, const Usage& u) {
  const double actual = std::max(u.kokkos, u.rss);
  EXPECT_GE(estimate, actual) << what << ": estimate " << mib(estimate) << ", Kokkos peak " << mib(u.kokkos)
                              << ", resident peak " << mib(u.rss);
  EXPECT_LE(estimate, 3 * actual) << what << ": estimate " << mib(estimate) << ", Kokkos peak " << mib(u.kokkos)
                                  << ", resident peak " << mib(u.rss);
  const double worst_rss = test::world().max(u.rss), worst_kokkos = test::world().max(u.kokkos);
  test::report(what + " at " + std::to_string(test::nranks()) + " rank(s): estimate " + mib(estimate) +
               " per rank; largest rank: Kokkos peak " + mib(worst_kokkos) + ", resident peak " + mib(worst_rss) +
               " (estimate / actual " + std::to_string(estimate / std::max(worst_kokkos, worst_rss)) + ")");
}

}  // namespace

TEST(MemoryEstimate, LatticeAtomsDoNotOverflow) {
  md::MdConfig cfg;
  cfg.cells = {1300, 1300, 1300};
  EXPECT_EQ(md::lattice_atoms(cfg), 4.0 * 1300 * 1300 * 1300);
  cfg.cells = {100000, 100000, 100000};
  EXPECT_EQ(md::lattice_atoms(cfg), 4e15);
  // 1300^3 cells on 64 ranks: about 8.8e9 atoms, terabytes in all, more than 10 GiB per rank.
  cfg.cells = {1300, 1300, 1300};
  EXPECT_GT(md::estimated_bytes_per_rank(cfg, md::lattice_atoms(cfg), 64), 10.0 * (1 << 30));
}

// The device check's rule on made-up GPUs: what fits in the free memory passes, what does not is refused
// naming the system, the need per rank and per GPU, the GPU, its node, its free and total memory.
TEST(MemoryEstimate, DeviceMemoryRefusalNamesTheNumbers) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  comm::DeviceMemory gpu;
  gpu.present = true;
  gpu.free_bytes = 10 * gib;
  gpu.total_bytes = 80 * gib;
  gpu.id = "GPU-1234";
  const std::string what = "the MD system of 1.6e+07 atoms";
  EXPECT_EQ(launcher::device_memory_refusal(6 * gib, 1, gpu, "gn01", what), "");
  EXPECT_EQ(launcher::device_memory_refusal(10 * gib, 1, gpu, "gn01", what), "");  // exactly the free memory
  EXPECT_EQ(launcher::device_memory_refusal(11 * gib, 1, gpu, "gn01", what),
            "the MD system of 1.6e+07 atoms needs about 11 GiB of GPU memory per rank on GPU GPU-1234 of node gn01, "
            "but only 10 GiB of its 80 GiB are free; use more GPUs (one rank each), or a smaller system");
  // Two ranks on one GPU need their estimates together.
  EXPECT_EQ(launcher::device_memory_refusal(6 * gib, 2, gpu, "gn01", what),
            "the MD system of 1.6e+07 atoms needs about 6 GiB of GPU memory per rank, 12 GiB for the 2 ranks that "
            "share GPU GPU-1234 of node gn01, but only 10 GiB of its 80 GiB are free; use more GPUs (one rank each), "
            "or a smaller system");
  // An estimate that is not a number is refused; a rank without a GPU passes.
  EXPECT_NE(launcher::device_memory_refusal(std::numeric_limits<double>::infinity(), 1, gpu, "gn01", what), "");
  EXPECT_NE(launcher::device_memory_refusal(std::nan(""), 1, gpu, "gn01", what), "");
  EXPECT_EQ(launcher::device_memory_refusal(1e30, 1, comm::DeviceMemory{}, "gn01", what), "");
}

// On a host build the estimates are all host memory: nothing for a device check to refuse. On a device
// build both parts are counted.
TEST(MemoryEstimate, DeviceMemoryIsCountedOnDeviceBuildsOnly) {
  auto md_cfg = test::lattice_config({16, 16, 16}, 1.5);
  const auto md_need = md::estimated_memory(md_cfg, md::lattice_atoms(md_cfg), test::nranks());
  fluid::FluidConfig fl = fluid_config();
  fl.n = {48, 40, 36};
  const auto fluid_need = fluid::estimated_memory(fl, test::nranks());
  EXPECT_EQ(md_need.host, md::estimated_bytes_per_rank(md_cfg, md::lattice_atoms(md_cfg), test::nranks()));
  EXPECT_EQ(fluid_need.host, fluid::estimated_bytes_per_rank(fl, test::nranks()));
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, md::MemSpace>::accessible) {
    EXPECT_EQ(md_need.device, 0.0);
    EXPECT_EQ(fluid_need.device, 0.0);
  } else {
    EXPECT_GT(md_need.device, 0.0);
    EXPECT_GT(fluid_need.device, 0.0);
  }
  EXPECT_GT(md_need.host, 0.0);
  EXPECT_GT(fluid_need.host, 0.0);
}

// A fresh run (lattice, setup, steps with thermo, a checkpoint's state()) and a restored one.
TEST(MemoryEstimate, MdCoversWhatARunAllocates) {
  auto cfg = test::lattice_config({16, 16, 16}, 1.5);  // 16384 atoms
  const double estimate = md::estimated_bytes_per_rank(cfg, md::lattice_atoms(cfg), test::nranks());
  io::SolverState st;
  const Usage fresh = measure([&] {
    Md run(cfg, false);
    run->setup();
    for (int s = 1; s <= 20; ++s) run->step(s % 10 == 0);
    st = run->state();
    // Neighbour builds while the checkpoint's buffers are kept, the next snapshot in their memory, and a
    // trajectory frame's state() while the checkpoint writer holds its own.
    for (int s = 21; s <= 40; ++s) run->step(s % 10 == 0);
    st = run->state_reusing(std::move(st));
    const io::SolverState frame = run->state();
  });
  expect_estimate_fits("MD 16^3 cells fresh run", estimate, fresh);
  const Usage restored = measure([&] {
    Md run(cfg, true);
    run->restore(st);
    for (int s = 1; s <= 10; ++s) run->step(s % 10 == 0);
    io::SolverState again = run->state();
    for (int s = 11; s <= 30; ++s) run->step(s % 10 == 0);
    again = run->state_reusing(std::move(again));
  });
  expect_estimate_fits("MD 16^3 cells restored run", estimate, restored);
}

TEST(MemoryEstimate, FluidCoversWhatARunAllocates) {
  fluid::FluidConfig cfg = fluid_config();
  cfg.n = {48, 40, 36};
  const double estimate = fluid::estimated_bytes_per_rank(cfg, test::nranks());
  io::SolverState st;
  const Usage fresh = measure([&] {
    Fluid run(cfg, false);
    run->setup();
    for (int s = 0; s < 2; ++s) run->step(true);
    run->thermo();
    st = run->state();
  });
  expect_estimate_fits("fluid 48 x 40 x 36 fresh run", estimate, fresh);
  const Usage restored = measure([&] {
    Fluid run(cfg, true);
    run->restore(st);
    run->setup();
    run->step(true);
    const io::SolverState again = run->state();
  });
  expect_estimate_fits("fluid 48 x 40 x 36 restored run", estimate, restored);
}
