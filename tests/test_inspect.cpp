// `spotrun inspect` checks what a resume checks: a checkpoint whose bytes and checksums are all sound but
// whose state the solver refuses (a negative atom id, a missing dataset) is not called OK, and a resume
// from it fails with the same reason. Files are written through io::write_checkpoint, so every checksum
// and the whole-file manifest are right: only the restore can tell.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "comm/errors.hpp"
#include "comm/transport.hpp"
#include "io/checkpoint.hpp"
#include "launcher/run/run.hpp"
#include "solvers/fluid/fluid_registration.hpp"
#include "solvers/fluid/fluid_solver.hpp"
#include "solvers/md/md_registration.hpp"
#include "solvers/md/md_solver.hpp"
#include "support/mpi_test.hpp"
#include "spotrun/version.hpp"

SPOTRUN_TEST_RANKS(1, 2);

using namespace spotrun;
namespace fs = std::filesystem;

namespace {

constexpr const char* k_deck = "[run]\nsteps = 20\nthermo_every = 10\n[md.lattice]\ncells = [6, 6, 6]\n";
// An NVT mixture of two named types (the second twice as heavy) on 4^3 cells: 256 atoms.
constexpr const char* k_nvt_deck =
    "[run]\nsteps = 20\n[md]\nensemble = \"nvt\"\ntemperature = 0.8\ndamp = 0.25\n[[md.types]]\nname = \"A\"\n"
    "fraction = 0.5\n[[md.types]]\nname = \"B\"\nmass = 2.0\nfraction = 0.5\n[md.lattice]\ncells = [4, 4, 4]\n";
constexpr const char* k_fluid_deck = "[run]\nsolver = \"fluid\"\nsteps = 6\nthermo_every = 2\n[fluid]\nn = [8, 8, 8]\n";
// The MD deck with a lattice of 100000^3 cells (4e15 atoms): no node holds its memory estimate.
constexpr const char* k_huge_deck = "[run]\nsteps = 20\nthermo_every = 10\n[md.lattice]\ncells = [100000, 100000, 100000]\n";

class Inspect : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name;
    if (test::is_root()) {
      name = (fs::temp_directory_path() / ("spotrun-test-inspect." + std::to_string(::getpid()))).string();
      fs::remove_all(name);
      fs::create_directories(name);
      std::ofstream(name + "/deck.toml") << k_deck;
      std::ofstream(name + "/fluid.toml") << k_fluid_deck;
      std::ofstream(name + "/nvt.toml") << k_nvt_deck;
      std::ofstream(name + "/huge.toml") << k_huge_deck;
    }
    m_dir = test::world().broadcast(name);
    m_deck = launcher::load_deck(test::world(), m_dir + "/deck.toml", {});
    // A state after 10 steps of the deck's system, and the metadata a run would write with it.
    auto transport = comm::make_transport("auto", test::world());
    md::MdSolver solver(md::config_from_deck(m_deck), test::world(), *transport, nullptr, false);
    solver.setup();
    for (int s = 0; s < 10; ++s) solver.step(false);
    m_state = solver.state();
    m_meta.solver = "md";
    m_meta.step = solver.step_index();
    m_meta.time = solver.time();
    m_meta.deck = m_deck.resolved();
    m_meta.physics = m_deck.physics();
    m_meta.units = "lj";
    m_meta.version = k_version;
    m_meta.git_hash = k_git_hash;
  }
  void TearDown() override {
    test::world().barrier();
    if (test::is_root()) fs::remove_all(m_dir);
    test::world().barrier();
  }

  std::string write(const std::string& name, const io::SolverState& state) { return write(name, state, m_meta); }
  std::string write(const std::string& name, const io::SolverState& state, const io::CheckpointMeta& meta) {
    const std::string p = m_dir + "/" + name;
    io::write_checkpoint(test::world(), p, meta, state);
    return p;
  }
  launcher::Deck deck(const std::string& file, const std::vector<std::string>& sets = {}) {
    return launcher::load_deck(test::world(), m_dir + "/" + file, sets);
  }
  // inspect's exit code, and its report on rank 0.
  int inspect(const std::string& p, std::string& report) {
    if (test::is_root()) ::testing::internal::CaptureStdout();
    const int code = launcher::inspect(test::world(), {p});
    if (test::is_root()) report = ::testing::internal::GetCapturedStdout();
    return code;
  }
  // The message of the InputError a resume from `p` throws ("" when it resumes).
  std::string resume_error(const std::string& p, const std::string& deck_file = "deck.toml") {
    launcher::RunOptions opt;
    opt.deck_path = m_dir + "/" + deck_file;
    opt.output_dir = m_dir + "/out-" + fs::path(p).stem().string();
    opt.resume = p;
    opt.start_wtime = MPI_Wtime();
    if (test::is_root()) ::testing::internal::CaptureStdout();
    std::string error;
    try {
      launcher::run(test::world(), opt);
    } catch (const InputError& e) {
      error = e.what();
    }
    if (test::is_root()) ::testing::internal::GetCapturedStdout();
    return error;
  }

  std::string m_dir;
  launcher::Deck m_deck;
  io::SolverState m_state;
  io::CheckpointMeta m_meta;
};

#define EXPECT_HAS(text, word) \
  EXPECT_NE(std::string(text).find(word), std::string::npos) << "'" << (text) << "' lacks '" << (word) << "'"

}  // namespace

TEST_F(Inspect, ASoundCheckpointIsOkAndResumes) {
  const std::string p = write("good.h5", m_state);
  std::string report;
  EXPECT_EQ(inspect(p, report), 0);
  if (test::is_root()) {
    EXPECT_HAS(report, "restore: the state restores into the md solver of its deck");
    EXPECT_HAS(report, "OK: every byte and checksum verified, the state restores");
  }
  EXPECT_EQ(resume_error(p), "");
}

// Besides solver, step and time, inspect says what the checkpoint simulates (Solver::describe()): the atoms
// and their types, the box, the ensemble and its targets.
TEST_F(Inspect, SaysTheAtomsBoxAndEnsemble) {
  std::string report;
  ASSERT_EQ(inspect(write("nve.h5", m_state), report), 0) << report;
  if (test::is_root()) {
    EXPECT_HAS(report, "\n  solver: md\n  step: 10\n  time: 0.05");
    EXPECT_HAS(report, "\n  atoms: 864 of 1 type(s) (1 mass 1)\n");
    EXPECT_HAS(report, "\n  box: 10.07757715 x 10.07757715 x 10.07757715 sigma from (0, 0, 0), periodic; 0.8442 atoms/sigma^3\n");
    EXPECT_HAS(report, "\n  ensemble: nve (velocity Verlet), no thermostat\n");
    EXPECT_HAS(report, "\n  time step: 0.005 tau; pair style lj/cut\n");
  }
  const launcher::Deck d = deck("nvt.toml");
  auto transport = comm::make_transport(d.get_string("comm.transport"), test::world());
  md::MdSolver solver(md::config_from_deck(d), test::world(), *transport, nullptr, false);
  solver.setup();
  io::CheckpointMeta meta = m_meta;
  meta.step = solver.step_index();
  meta.time = solver.time();
  meta.deck = d.resolved();
  meta.physics = d.physics();
  ASSERT_EQ(inspect(write("nvt.h5", solver.state(), meta), report), 0) << report;
  if (test::is_root()) {
    EXPECT_HAS(report, "\n  atoms: 256 of 2 type(s) (1 \"A\" mass 1, 2 \"B\" mass 2)\n");
    EXPECT_HAS(report, "\n  ensemble: nvt (Nose-Hoover chain of 3), temperature 0.8 epsilon/k_B, damp 0.25 tau\n");
  }
}

TEST_F(Inspect, ANegativeAtomIdWithRightChecksumsIsRefusedLikeAResume) {
  io::SolverState bad = m_state;
  if (bad.arrays[0].first_row == 0 && bad.arrays[0].rows > 0) bad.arrays[0].i64[0] = -5;
  const std::string p = write("negative-id.h5", bad);
  // The file layer finds nothing wrong ...
  EXPECT_TRUE(io::verify_checkpoint(test::world(), p).ok);
  // ... inspect does, as the resume does.
  std::string report;
  EXPECT_EQ(inspect(p, report), 2);
  if (test::is_root()) {
    EXPECT_HAS(report, "restore: BAD:");
    EXPECT_HAS(report, "REFUSED");
  }
  const std::string e = resume_error(p);
  EXPECT_HAS(e, "cannot resume from " + p);
  EXPECT_HAS(e, "-5");
}

TEST_F(Inspect, AMissingDatasetIsRefusedLikeAResume) {
  io::SolverState bad = m_state;
  bad.arrays.erase(bad.arrays.begin() + 2);  // /md/v
  ASSERT_EQ(m_state.arrays[2].name, "/md/v");
  const std::string p = write("no-v.h5", bad);
  EXPECT_TRUE(io::verify_checkpoint(test::world(), p).ok);
  std::string report;
  EXPECT_EQ(inspect(p, report), 2);
  if (test::is_root()) {
    EXPECT_HAS(report, "dataset '/md/v' is missing");
  }
  EXPECT_HAS(resume_error(p), "dataset '/md/v' is missing");
}

// The checkpoint's own deck is part of what a resume checks (launcher::checkpoint_deck), whichever deck
// resumes it: a /meta/deck that is not a deck, or that describes other physics than /meta/physics, is
// refused by inspect and by a resume alike.
TEST_F(Inspect, AMetaDeckThatIsNotADeckIsRefusedLikeAResume) {
  io::CheckpointMeta meta = m_meta;
  meta.deck = "[run\nsteps = ";
  const std::string p = write("garbage-deck.h5", m_state, meta);
  EXPECT_TRUE(io::verify_checkpoint(test::world(), p).ok);
  std::string report;
  EXPECT_EQ(inspect(p, report), 2);
  if (test::is_root()) {
    EXPECT_HAS(report, "restore: BAD: its deck (/meta/deck) is not a valid deck");
    EXPECT_HAS(report, "REFUSED");
  }
  const std::string e = resume_error(p);
  EXPECT_HAS(e, "cannot resume from " + p + ": its deck (/meta/deck) is not a valid deck");
}

TEST_F(Inspect, AMetaDeckWithOtherPhysicsThanMetaPhysicsIsRefusedLikeAResume) {
  io::CheckpointMeta meta = m_meta;
  meta.deck = deck("deck.toml", {"md.pair.epsilon=2.5"}).resolved();  // /meta/physics still says 1.0
  const std::string p = write("other-epsilon.h5", m_state, meta);
  std::string report;
  EXPECT_EQ(inspect(p, report), 2);
  if (test::is_root()) {
    EXPECT_HAS(report, "does not describe the physics it records (/meta/physics):");
    EXPECT_HAS(report, "md.pair.epsilon: 1.0 -> 2.5");
  }
  const std::string e = resume_error(p);
  EXPECT_HAS(e, "cannot resume from " + p + ": its deck (/meta/deck) does not describe the physics it records");
  EXPECT_HAS(e, "md.pair.epsilon: 1.0 -> 2.5");
}

// A deck whose system does not fit in memory is refused by both, before anything of it is allocated:
// /meta/deck alone describing it (its physics is not /meta/physics), or /meta/deck and /meta/physics
// both (inspect: its memory estimate; a resume by that deck: the same estimate, the same message).
TEST_F(Inspect, AHugeSystemIsRefusedLikeAResume) {
  io::CheckpointMeta meta = m_meta;
  meta.deck = deck("huge.toml").resolved();
  const std::string p = write("huge-deck.h5", m_state, meta);
  std::string report;
  EXPECT_EQ(inspect(p, report), 2);
  if (test::is_root()) {
    EXPECT_HAS(report, "md.lattice.cells: [6, 6, 6] -> [100000, 100000, 100000]");
  }
  EXPECT_HAS(resume_error(p), "md.lattice.cells: [6, 6, 6] -> [100000, 100000, 100000]");

  meta.physics = deck("huge.toml").physics();
  const std::string q = write("huge-physics.h5", m_state, meta);
  EXPECT_EQ(inspect(q, report), 2);
  if (test::is_root()) {
    EXPECT_HAS(report, "restore: BAD: the MD system of");
    EXPECT_HAS(report, "needs about");
  }
  const std::string e = resume_error(q, "huge.toml");
  EXPECT_HAS(e, "cannot resume from " + q + ": the MD system of");
  EXPECT_HAS(e, "needs about");
}

// The fluid's checkpoint holds the velocity twice: /fluid/uhat (restored) and /fluid/u, its inverse
// transform. A /fluid/u that is not that transform is refused by restore(), so by inspect and a resume.
TEST_F(Inspect, AFluidVelocityThatIsNotTheTransformOfItsSpectrumIsRefusedLikeAResume) {
  const launcher::Deck d = deck("fluid.toml");
  auto transport = comm::make_transport("auto", test::world());
  fluid::FluidSolver solver(fluid::config_from_deck(d), test::world(), *transport, false);
  solver.setup();
  for (int s = 0; s < 2; ++s) solver.step(false);
  io::CheckpointMeta meta = m_meta;
  meta.solver = "fluid";
  meta.step = solver.step_index();
  meta.time = solver.time();
  meta.deck = d.resolved();
  meta.physics = d.physics();
  meta.units = "nondimensional";
  io::SolverState state = solver.state();
  const std::string good = write("fluid-good.h5", state, meta);
  std::string report;
  EXPECT_EQ(inspect(good, report), 0) << report;
  if (test::is_root()) {  // what it simulates (Solver::describe())
    EXPECT_HAS(report, "\n  solver: fluid\n  step: 2\n");
    EXPECT_HAS(report, "\n  grid: 8 x 8 x 8 points (512) of the periodic box [0, 2pi)^3; dealiasing ");
    EXPECT_HAS(report, "\n  viscosity: ");
    EXPECT_HAS(report, "\n  forcing: none (decaying)\n");
  }
  EXPECT_EQ(resume_error(good, "fluid.toml"), "");

  io::StateArray& u = state.arrays[0];
  ASSERT_EQ(u.name, "/fluid/u");
  if (u.first_row == 0 && u.rows > 0) u.f64[3 * (8 * 2 + 5) + 1] += 1e-3;  // x = 0, y = 2, z = 5, component 1
  const std::string p = write("fluid-u-changed.h5", state, meta);
  EXPECT_TRUE(io::verify_checkpoint(test::world(), p).ok);
  EXPECT_EQ(inspect(p, report), 2);
  const std::string where = "checkpoint dataset /fluid/u does not match /fluid/uhat: at x = 0, y = 2, z = 5, component 1";
  if (test::is_root()) {
    EXPECT_HAS(report, "restore: BAD: " + where);
    EXPECT_HAS(report, "REFUSED");
  }
  EXPECT_HAS(resume_error(p, "fluid.toml"), "cannot resume from " + p + ": " + where);
}
