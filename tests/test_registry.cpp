// The solver registry (solvers/registry.hpp): every solver folder registered, run.solver's choices and the
// deck schema from it, the checkpoint bytes a solver registers against what its state() writes, and a
// solver registered only in this executable run through make_solver and the whole launcher.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/transport.hpp"
#include "io/checkpoint.hpp"
#include "launcher/deck/deck.hpp"
#include "launcher/run/memory_check.hpp"
#include "launcher/run/run.hpp"
#include "solvers/registry.hpp"
#include "support/input_error.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2);

using namespace spotrun;
using test::input_error;
namespace fs = std::filesystem;

namespace {

// --- toy: a solver that exists only in this test executable ----------------------------------------------
// `toy.points` values split into even blocks over the ranks (io::block_of); each step adds toy.rate to
// every value.

struct ToyConfig {
  std::int64_t points = 0;
  double rate = 0;
  double start = 0;
  double bytes_per_point = 0;
  double device_bytes_per_point = 0;
};

int g_toys_made = 0;        // solvers the toy factory made, on this rank
int g_toy_inputs_read = 0;  // calls of the toy's read_inputs, on this rank

class ToySolver final : public Solver {
 public:
  ToySolver(const ToyConfig& cfg, const comm::Communicator& comm, double start) : m_cfg(cfg), m_comm(comm) {
    std::uint64_t first = 0, count = 0;
    io::block_of(static_cast<std::uint64_t>(cfg.points), comm.size(), comm.rank(), first, count);
    m_first = first;
    m_values.assign(count, start);
  }
  std::string name() const override { return "toy"; }
  void setup() override {}
  void step(bool) override {
    for (auto& v : m_values) v += m_cfg.rate;
    ++m_step;
    m_time += 1;
  }
  std::int64_t step_index() const override { return m_step; }
  double time() const override { return m_time; }
  std::vector<std::string> thermo_columns() const override { return {"time", "sum"}; }
  std::vector<double> thermo() override {
    double local = 0;
    for (double v : m_values) local += v;
    return {m_time, m_comm.sum(local)};
  }
  double work_per_step() const override { return static_cast<double>(m_cfg.points); }
  std::string work_unit() const override { return "value-steps"; }
  std::vector<std::string> summary() override { return {"toy: done"}; }
  std::string instability_hint() const override { return "toy.rate is not finite"; }
  io::SolverState state() override {
    io::SolverState st;
    st.solver = "toy";
    st.arrays = state_layout();
    st.arrays[0].first_row = m_first;
    st.arrays[0].rows = m_values.size();
    st.arrays[0].f64 = m_values;
    st.integers["step"] = m_step;
    st.reals["time"] = m_time;
    return st;
  }
  std::vector<io::StateArray> state_layout() const override {
    io::StateArray a;
    a.name = "/toy/value";
    a.global_rows = static_cast<std::uint64_t>(m_cfg.points);
    return {a};
  }
  void restore(const io::SolverState& st) override {
    const io::StateArray* a = st.find("/toy/value");
    if (!a || a->rows != m_values.size() || a->first_row != m_first) throw InputError("toy: wrong block");
    m_values = a->f64;
    m_step = st.require_integer("step");
    m_time = st.require_real("time");
  }

 private:
  ToyConfig m_cfg;
  const comm::Communicator& m_comm;
  std::uint64_t m_first = 0;
  std::vector<double> m_values;
  std::int64_t m_step = 0;
  double m_time = 0;
};

solvers::SolverRegistration toy_registration() {
  using launcher::KeyType;
  solvers::SolverDefinition<ToyConfig> d;
  d.name = "toy";
  d.units = "toy-units";
  d.keys = {
      {"toy.points", KeyType::Int, "12", "values", "Number of values", 1, 1e6},
      {"toy.rate", KeyType::Float, "0.5", "1/step", "Increment of every value per step", -1e3, 1e3},
      {"toy.bytes_per_point", KeyType::Float, "8.0", "bytes", "Memory the estimate claims per value", 0, 1e300,
       false, {}, true},
      {"toy.device_bytes_per_point", KeyType::Float, "0.0", "bytes", "GPU memory the estimate claims per value", 0,
       1e300, false, {}, true},
  };
  d.read_config = [](const io::Deck& deck) {
    ToyConfig c;
    c.points = deck.get_int("toy.points");
    c.rate = deck.get_float("toy.rate");
    c.bytes_per_point = deck.get_float("toy.bytes_per_point");
    c.device_bytes_per_point = deck.get_float("toy.device_bytes_per_point");
    return c;
  };
  d.check_rules = [](const io::Deck& deck, const ToyConfig& c) {
    if (c.points == 7) throw InputError(deck.name() + ": toy.points = 7 is unlucky");
  };
  d.memory = [](const ToyConfig& c, double work_units, int nranks) {
    const double n = work_units >= 0 ? work_units : static_cast<double>(c.points);
    return solvers::MemoryEstimate{n * c.bytes_per_point / nranks,
                                   "the toy system of " + std::to_string(c.points) + " values",
                                   n * c.device_bytes_per_point / nranks};
  };
  d.checkpoint_bytes_per_work_unit = [](const ToyConfig&) { return 8.0; };
  d.read_inputs = [](const ToyConfig& c, const solvers::SolverContext&) {
    ++g_toy_inputs_read;
    solvers::SolverInputs in;
    in.work_units = static_cast<double>(c.points);
    in.data = std::make_shared<const double>(100.0);  // the start value, as if read from a file
    return in;
  };
  d.make = [](const ToyConfig& c, const solvers::SolverContext& ctx, const solvers::SolverInputs* inputs) {
    ++g_toys_made;
    const double start = inputs ? *static_cast<const double*>(inputs->data.get()) : 0.0;
    return std::make_unique<ToySolver>(c, ctx.comm, start);
  };
  return solvers::make_registration(std::move(d));
}

// Registered before main(), as an executable's own registration is; the deck schema is built later.
const bool k_toy_registered = [] {
  solvers::register_solver(toy_registration());
  return true;
}();

// --- helpers ---------------------------------------------------------------------------------------------

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

launcher::Deck valid(const std::string& text) {
  launcher::Deck d = launcher::Deck::parse(text, "deck.toml");
  d.validate();
  return d;
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

const std::vector<std::string> k_test_only = {"toy"};
bool built_in(const std::string& name) {
  return std::find(k_test_only.begin(), k_test_only.end(), name) == k_test_only.end();
}

// A directory of this test on every rank, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string name;
    if (test::is_root()) {
      name = (fs::temp_directory_path() / ("spotrun-test-registry." + std::to_string(::getpid()))).string();
      fs::remove_all(name);
      fs::create_directories(name);
    }
    m_path = test::world().broadcast(name);
  }
  ~TempDir() {
    test::world().barrier();
    if (test::is_root()) fs::remove_all(m_path);
  }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

}  // namespace

// --- the registry ----------------------------------------------------------------------------------------

TEST(Registry, ListsMdAndFluidWithTheirKeys) {
  ASSERT_TRUE(k_toy_registered);
  const auto names = solvers::solver_names();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "md");  // the default of run.solver
  EXPECT_EQ(names[1], "fluid");
  const auto* md = solvers::find_solver("md");
  const auto* fluid = solvers::find_solver("fluid");
  ASSERT_NE(md, nullptr);
  ASSERT_NE(fluid, nullptr);
  EXPECT_EQ(md->units, "lj");
  EXPECT_EQ(fluid->units, "nondimensional");
  auto has_key = [](const solvers::SolverRegistration& s, const std::string& key) {
    return std::any_of(s.keys.begin(), s.keys.end(), [&](const launcher::KeySpec& k) { return k.key == key; });
  };
  for (const char* key : {"md.dt", "md.cutoff", "md.pair.epsilon", "md.lattice.cells", "md.initial.lammps_data"})
    EXPECT_TRUE(has_key(*md, key)) << key;
  for (const char* key : {"fluid.n", "fluid.viscosity", "fluid.cfl", "fluid.cfl_limit", "fluid.blowup_factor"})
    EXPECT_TRUE(has_key(*fluid, key)) << key;
  // Every key of every solver is in the deck schema, under the solver's name; the launcher owns its own.
  for (const auto& s : solvers::registered_solvers())
    for (const auto& k : s.keys) {
      const launcher::KeySpec* found = launcher::find_key(k.key);
      ASSERT_NE(found, nullptr) << k.key;
      EXPECT_EQ(found->unit, k.unit) << k.key;
      EXPECT_EQ(solvers::solver_of_key(k.key), &s) << k.key;
    }
  for (const char* key : {"run.solver", "run.steps", "checkpoint.keep", "comm.transport"}) {
    EXPECT_NE(launcher::find_key(key), nullptr) << key;
    EXPECT_EQ(solvers::solver_of_key(key), nullptr) << key;
  }
  EXPECT_EQ(solvers::solver_of_key("mdx.dt"), nullptr);
}

// Each folder solvers/<name>/ with a registration <name>/<name>_registration.cpp is a registered solver,
// and each built-in solver has its folder: a solver cannot be built and silently left out.
TEST(Registry, EverySolverFolderIsRegistered) {
  const fs::path dir = fs::path(SPOTRUN_SOURCE_DIR) / "solvers";
  int folders = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    if (!fs::exists(entry.path() / (name + "_registration.cpp"))) continue;
    ++folders;
    EXPECT_NE(solvers::find_solver(name), nullptr)
        << "solvers/" << name << "/ has a registration, but no solver '" << name
        << "' is registered: add it to SPOTRUN_SOLVERS in solvers/CMakeLists.txt";
  }
  int built = 0;
  for (const auto& name : solvers::solver_names()) {
    if (!built_in(name)) continue;
    ++built;
    EXPECT_TRUE(fs::exists(dir / name / (name + "_registration.cpp"))) << name;
  }
  EXPECT_EQ(folders, built);
  EXPECT_GE(built, 2);
}

TEST(Registry, RunSolverChoicesComeFromTheRegistry) {
  const launcher::KeySpec* solver = launcher::find_key("run.solver");
  ASSERT_NE(solver, nullptr);
  EXPECT_EQ(solver->choices, solvers::solver_names());
  EXPECT_EQ(solver->default_value, "\"md\"");
  EXPECT_NE(std::find(solver->choices.begin(), solver->choices.end(), "toy"), solver->choices.end())
      << "a solver registered by this executable is not a choice of run.solver";
  EXPECT_EQ(valid("").get_string("run.solver"), "md");
  EXPECT_EQ(valid("[run]\nsolver = \"toy\"\n").get_string("run.solver"), "toy");
}

TEST(Registry, UnknownSolverIsRefusedListingTheRegisteredOnes) {
  std::string all;
  for (const auto& n : solvers::solver_names()) all += (all.empty() ? "\"" : ", \"") + n + "\"";
  const std::string e = input_error([] { valid("[run]\nsolver = \"lammps\"\n"); });
  EXPECT_CONTAINS(e, "deck.toml:2: key 'run.solver' = \"lammps\"");
  EXPECT_CONTAINS(e, "allowed: one of " + all);
  const std::string n = input_error([] { solvers::solver_named("lammps", "deck.toml"); });
  EXPECT_CONTAINS(n, "deck.toml: run.solver \"lammps\" is not a solver of this spotrun; registered solvers: " + all);
}

// A registration that would break the deck engine is refused when it is registered.
TEST(Registry, BadRegistrationsAreRefused) {
  auto with = [](const std::function<void(solvers::SolverRegistration&)>& change) {
    solvers::SolverRegistration r = toy_registration();
    r.name = "toy2";
    for (auto& k : r.keys) k.key = "toy2" + k.key.substr(3);
    change(r);
    return r;
  };
  EXPECT_THROW(solvers::register_solver(toy_registration()), std::logic_error);  // toy again
  EXPECT_THROW(solvers::register_solver(with([](auto& r) { r.keys[0].key = "md.points"; })), std::logic_error);
  EXPECT_THROW(solvers::register_solver(with([](auto& r) { r.name = "Toy 2"; })), std::logic_error);
  EXPECT_THROW(solvers::register_solver(with([](auto& r) { r.units.clear(); })), std::logic_error);
  EXPECT_THROW(solvers::register_solver(with([](auto& r) { r.make = nullptr; })), std::logic_error);
  EXPECT_THROW(solvers::register_solver(with([](auto& r) { r.keys.push_back(r.keys[0]); })), std::logic_error);
  EXPECT_EQ(solvers::find_solver("toy2"), nullptr);
}

// make_registration<Definition>() (the form of the built-in solvers): the optional functions a definition
// struct has are registered, those it lacks get the defaults.
struct MinimalToy {
  using Config = ToyConfig;
  static constexpr const char* name = "toy3";
  static constexpr const char* units = "toy-units";
  static std::vector<io::KeySpec> keys() { return {}; }
  static ToyConfig read_config(const io::Deck&) { return {}; }
  static solvers::MemoryEstimate memory(const ToyConfig&, double, int) { return {}; }
  static double checkpoint_bytes_per_work_unit(const ToyConfig&) { return 8; }
  static std::unique_ptr<Solver> make(const ToyConfig&, const solvers::SolverContext&, const solvers::SolverInputs*) {
    return nullptr;
  }
};
struct FullToy : MinimalToy {
  static bool key_active(const io::Deck&, const std::string& key) { return key == "toy3.on"; }
  static void check_rules(const io::Deck& d, const ToyConfig&) { throw InputError(d.name() + ": full toy rule"); }
  static double deck_work_units(const ToyConfig&) { return 42; }
};

TEST(Registry, DefinitionStructsRegisterTheirOptionalFunctions) {
  const launcher::Deck deck = valid("");
  const solvers::SolverRegistration minimal = solvers::make_registration<MinimalToy>();
  EXPECT_EQ(minimal.name, "toy3");
  EXPECT_EQ(minimal.units, "toy-units");
  EXPECT_FALSE(minimal.key_active(deck, "toy3.on"));  // the default: run.solver ("md") does not name it
  EXPECT_NO_THROW(minimal.check_rules(deck));
  EXPECT_EQ(minimal.deck_work_units(deck), -1.0);
  EXPECT_EQ(minimal.checkpoint_bytes_per_work_unit(deck), 8.0);
  const solvers::SolverRegistration full = solvers::make_registration<FullToy>();
  EXPECT_TRUE(full.key_active(deck, "toy3.on"));
  EXPECT_FALSE(full.key_active(deck, "toy3.off"));
  EXPECT_EQ(input_error([&] { full.check_rules(deck); }), "deck.toml: full toy rule");
  EXPECT_EQ(full.deck_work_units(deck), 42.0);
}

// docs/decks.md documents every key of every built-in solver; docs/solvers.md names every built-in solver.
TEST(Registry, EverySolverIsDocumented) {
  const std::string decks = read_text(std::string(SPOTRUN_SOURCE_DIR) + "/docs/decks.md");
  const std::string guide = read_text(std::string(SPOTRUN_SOURCE_DIR) + "/docs/solvers.md");
  ASSERT_FALSE(decks.empty()) << "docs/decks.md";
  ASSERT_FALSE(guide.empty()) << "docs/solvers.md";
  for (const auto& s : solvers::registered_solvers()) {
    if (!built_in(s.name)) continue;
    EXPECT_CONTAINS(guide, "`" + s.name + "`");
    for (const auto& k : s.keys) EXPECT_CONTAINS(decks, "`" + k.key + "`");
  }
  EXPECT_CONTAINS(decks, "`comm.transport`");
}

// A solver's keys apply to its own decks only: registering one changes no other deck's resolved text
// or physics, and a deck of it resolves its keys.
TEST(Registry, KeysOfASolverApplyToItsDecks) {
  const launcher::Deck md = valid("");
  EXPECT_EQ(md.resolved().find("[toy]"), std::string::npos);
  EXPECT_EQ(md.physics().find("toy."), std::string::npos);
  EXPECT_EQ(md.physics().find("fluid."), std::string::npos);
  const launcher::Deck toy = valid("[run]\nsolver = \"toy\"\n[toy]\npoints = 5\n");
  EXPECT_CONTAINS(toy.resolved(), "[toy]\npoints = 5\nrate = 0.5\nbytes_per_point = 8.0\ndevice_bytes_per_point = 0.0\n");
  EXPECT_EQ(toy.physics(), "run.solver = \"toy\"\ntoy.points = 5\ntoy.rate = 0.5\n");
  EXPECT_EQ(toy.resolved().find("[md"), std::string::npos);
  EXPECT_EQ(toy.physics().find("toy.bytes_per_point"), std::string::npos);  // resumable
  EXPECT_EQ(toy.physics().find("comm.transport"), std::string::npos);       // resumable
  EXPECT_CONTAINS(toy.resolved(), "[comm]\ntransport = \"auto\"\n");
  // The solver's own rules run in Deck::validate, for its decks only.
  EXPECT_CONTAINS(input_error([] { valid("[run]\nsolver = \"toy\"\n[toy]\npoints = 7\n"); }),
                  "deck.toml: toy.points = 7 is unlucky");
  EXPECT_NO_THROW(valid("[toy]\npoints = 7\n"));
  // The deck engine's checks apply to its keys: type, range, closest key.
  EXPECT_CONTAINS(input_error([] { valid("[run]\nsolver = \"toy\"\n[toy]\npoints = 0\n"); }),
                  "key 'toy.points' = 0: out of range");
  EXPECT_CONTAINS(input_error([] { valid("[toy]\npoints = 1.5\n"); }), "expected an integer");
  EXPECT_CONTAINS(input_error([] { valid("[toy]\npoint = 3\n"); }), "did you mean 'toy.points'?");
}

// The physics lines of the shipped decks are those their checkpoints hold (written before the registry
// existed): a resume compares them, so they must not change.
TEST(Registry, PhysicsOfTheShippedDecksIsUnchanged) {
  launcher::Deck lj = launcher::Deck::parse(read_text(std::string(SPOTRUN_SOURCE_DIR) + "/inputs/lj-melt.toml"), "lj");
  lj.apply_set("md.lattice.cells=[4,4,4]");
  lj.validate();
  EXPECT_EQ(lj.physics(),
            "md.cutoff = 2.5\nmd.damp = 1.0\nmd.dt = 0.005\nmd.ensemble = \"nve\"\nmd.lattice.cells = [4, 4, 4]\n"
            "md.lattice.density = 0.8442\nmd.lattice.seed = 87287\nmd.lattice.temperature = 3.0\n"
            "md.lattice.type = \"fcc\"\nmd.pair.epsilon = 1.0\nmd.pair.shift = false\nmd.pair.sigma = 1.0\n"
            "md.pair.style = \"lj/cut\"\nmd.seed = 12345\nmd.temperature = 1.0\nrun.solver = \"md\"\n");
  // A fluid deck has always resolved the [md.lattice] defaults too (solvers/md/md_registration.cpp).
  launcher::Deck tgv =
      launcher::Deck::parse(read_text(std::string(SPOTRUN_SOURCE_DIR) + "/inputs/tgv-re1600.toml"), "tgv");
  tgv.apply_set("fluid.n=[16,16,16]");
  tgv.validate();
  EXPECT_EQ(tgv.physics(),
            "fluid.cfl = 0.5\nfluid.dealias = \"two-thirds\"\nfluid.dt = 0.05\nfluid.forcing = \"none\"\n"
            "fluid.forcing_kmax = 2.5\nfluid.forcing_rate = 0.1\nfluid.init = \"taylor-green\"\n"
            "fluid.n = [16, 16, 16]\nfluid.random_energy = 0.5\nfluid.random_peak = 4.0\nfluid.seed = 20240601\n"
            "fluid.viscosity = 0.000625\nmd.lattice.cells = [10, 10, 10]\nmd.lattice.density = 0.8442\n"
            "md.lattice.seed = 87287\nmd.lattice.temperature = 1.0\nmd.lattice.type = \"fcc\"\n"
            "run.solver = \"fluid\"\n");
}

// --- make_solver and the launcher with a solver of this executable ------------------------------------

TEST(Registry, TestSolverRunsThroughMakeSolver) {
  const launcher::Deck deck = valid("[run]\nsolver = \"toy\"\n[toy]\npoints = 9\nrate = 2.0\n");
  auto transport = comm::make_transport(deck.get_string("comm.transport"), test::world());
  const int made = g_toys_made, read = g_toy_inputs_read;
  auto fresh = launcher::make_solver(test::world(), *transport, deck, "deck.toml", false);
  EXPECT_EQ(g_toys_made, made + 1);
  EXPECT_EQ(g_toy_inputs_read, read + 1);
  ASSERT_NE(dynamic_cast<ToySolver*>(fresh.get()), nullptr);
  EXPECT_EQ(fresh->work_per_step(), 9.0);
  fresh->step(true);
  const auto row = fresh->thermo();
  EXPECT_EQ(row[1], 9 * (100.0 + 2.0));  // the start value of its inputs, one step of rate 2
  // Restoring: no inputs read, an empty solver.
  auto empty = launcher::make_solver(test::world(), *transport, deck, "deck.toml", true);
  EXPECT_EQ(g_toy_inputs_read, read + 1);
  EXPECT_EQ(empty->thermo()[1], 0.0);
  // A system that cannot fit is refused on every rank before it is made, with the solver's words.
  launcher::Deck huge = launcher::Deck::parse("[run]\nsolver = \"toy\"\n[toy]\nbytes_per_point = 1e30\n", "huge.toml");
  huge.validate();
  const std::string e = input_error([&] { launcher::make_solver(test::world(), *transport, huge, "huge.toml", false); });
  EXPECT_CONTAINS(e, "the toy system of 12 values");
  EXPECT_EQ(g_toys_made, made + 2);
}

// launcher::run with the toy: thermo rows, a final checkpoint with the solver's units, and a resume.
TEST(Registry, TestSolverRunsThroughTheLauncher) {
  TempDir dir;
  if (test::is_root())
    std::ofstream(dir.path() + "/toy.toml") << "[run]\nsolver = \"toy\"\nsteps = 4\nthermo_every = 2\n"
                                               "[checkpoint]\nevery_steps = 2\n[toy]\npoints = 10\n";
  test::world().barrier();
  launcher::RunOptions opt;
  opt.deck_path = dir.path() + "/toy.toml";
  opt.output_dir = dir.path() + "/out";
  opt.start_wtime = MPI_Wtime();
  EXPECT_EQ(launcher::run(test::world(), opt), k_exit_finished);
  const io::CheckpointMeta meta = io::read_checkpoint_meta(test::world(), opt.output_dir + "/final.h5");
  EXPECT_EQ(meta.solver, "toy");
  EXPECT_EQ(meta.units, "toy-units");
  EXPECT_EQ(meta.step, 4);
  EXPECT_EQ(meta.physics, "run.solver = \"toy\"\ntoy.points = 10\ntoy.rate = 0.5\n");
  // Continued to 6 steps from the final state of the first run.
  opt.sets = {"run.steps=6"};
  EXPECT_EQ(launcher::run(test::world(), opt), k_exit_finished);
  EXPECT_EQ(io::read_checkpoint_meta(test::world(), opt.output_dir + "/final.h5").step, 6);
  std::string csv;
  if (test::is_root()) csv = read_text(opt.output_dir + "/thermo.csv");
  csv = test::world().broadcast(csv);
  EXPECT_EQ(csv, "step,time,sum\n0,0,1000\n2,2,1010\n4,4,1020\n6,6,1030\n");
}

// A system too large for the GPUs is refused by validate and by run alike, on every rank with exit code
// 2, naming the estimate and the GPU's free and total memory, before the solver is made or the output
// directory is touched; the same system on a larger GPU passes. The GPU is made up (a query installed in
// place of cudaMemGetInfo's): every rank of this test sees the same UUID on its node, so the ranks of a
// node share it and need their estimates together.
TEST(Registry, ASystemTooLargeForTheGpuIsRefusedByValidateAndRun) {
  TempDir dir;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  // 12 values of 1 GiB each over the ranks: 12 / np GiB per rank, 12 GiB per node.
  if (test::is_root())
    std::ofstream(dir.path() + "/big.toml") << "[run]\nsolver = \"toy\"\nsteps = 2\n[toy]\npoints = 12\n"
                                               "device_bytes_per_point = " << gib << "\n";
  test::world().barrier();
  const std::string deck = dir.path() + "/big.toml";
  const int on_node = test::world().local_size();
  struct Restore {
    ~Restore() { launcher::set_device_memory_query({}); }
  } restore;
  launcher::set_device_memory_query([&] {
    comm::DeviceMemory m;
    m.present = true;
    m.free_bytes = 10 * gib;
    m.total_bytes = 16 * gib;
    m.id = "GPU-made-up";
    return m;
  });
  const int made = g_toys_made;
  std::string per_rank = std::to_string(12 / test::nranks());
  const std::string expected =
      "the toy system of 12 values needs about " + per_rank + " GiB of GPU memory per rank" +
      (on_node > 1 ? ", " + std::to_string(12 / test::nranks() * on_node) + " GiB for the " + std::to_string(on_node) +
                         " ranks that share GPU GPU-made-up"
                   : std::string(" on GPU GPU-made-up")) +
      " of node " + comm::host_name() + ", but only 10 GiB of its 16 GiB are free";
  int code = -1;
  std::string e;
  try {
    launcher::validate(test::world(), deck, {});
  } catch (const CollectiveError& x) {
    code = x.exit_code();
    e = x.what();
  }
  EXPECT_EQ(code, k_exit_bad_input);
  EXPECT_CONTAINS(e, expected);
  EXPECT_CONTAINS(e, "use more GPUs (one rank each), or a smaller system");

  launcher::RunOptions opt;
  opt.deck_path = deck;
  opt.output_dir = dir.path() + "/out";
  opt.start_wtime = MPI_Wtime();
  code = -1;
  std::string r;
  try {
    launcher::run(test::world(), opt);
  } catch (const CollectiveError& x) {
    code = x.exit_code();
    r = x.what();
  }
  EXPECT_EQ(code, k_exit_bad_input);
  EXPECT_CONTAINS(r, expected);
  EXPECT_EQ(g_toys_made, made);  // refused before the solver was made
  EXPECT_FALSE(fs::exists(opt.output_dir + "/thermo.csv"));

  // 32 GiB free: 12 GiB per node fits; validate passes.
  launcher::set_device_memory_query([&] {
    comm::DeviceMemory m;
    m.present = true;
    m.free_bytes = 32 * gib;
    m.total_bytes = 40 * gib;
    m.id = "GPU-made-up";
    return m;
  });
  EXPECT_EQ(launcher::validate(test::world(), deck, {}), k_exit_finished);
}

// --- checkpoint bytes per unit of work ---------------------------------------------------------------------

// What a solver registers as its checkpoint bytes per unit of work is what its state() writes, summed
// over the ranks (the arrays; the scalars are a few bytes more).
TEST(Registry, CheckpointBytesPerWorkUnitMatchState) {
  const char* decks[] = {"[md.lattice]\ncells = [4, 4, 4]\n",
                         "[run]\nsolver = \"fluid\"\n[fluid]\nn = [8, 6, 10]\n",
                         "[run]\nsolver = \"fluid\"\n[fluid]\nn = [6, 8, 9]\n",
                         "[run]\nsolver = \"toy\"\n[toy]\npoints = 11\n"};
  for (const char* text : decks) {
    SCOPED_TRACE(text);
    const launcher::Deck deck = valid(text);
    const auto& registration = solvers::solver_named(deck.get_string("run.solver"), deck.name());
    auto transport = comm::make_transport(deck.get_string("comm.transport"), test::world());
    auto solver = launcher::make_solver(test::world(), *transport, deck, "deck.toml", false);
    solver->setup();
    const io::SolverState state = solver->state();
    std::int64_t values = 0;
    for (const auto& a : state.arrays) values += static_cast<std::int64_t>(a.rows * a.row_size());
    const double bytes = 8.0 * static_cast<double>(test::world().sum(values));
    const double registered = solver->work_per_step() * registration.checkpoint_bytes_per_work_unit(deck);
    EXPECT_NEAR(registered, bytes, 1e-9 * bytes) << registration.name;
    // The size the deck alone gives (spotrun doctor's checkpoint size) is the solver's, where it says.
    const double deck_units = registration.deck_work_units(deck);
    if (registration.name == "toy")
      EXPECT_LT(deck_units, 0);
    else
      EXPECT_EQ(deck_units, solver->work_per_step()) << registration.name;
    test::report(registration.name + ": " + std::to_string(bytes / solver->work_per_step()) + " bytes per " +
                 solver->work_unit());
  }
}
