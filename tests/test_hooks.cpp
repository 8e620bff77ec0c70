// The test hooks of comm/test_hooks.hpp, installed directly: each acts where spotrun asks for it, and
// with none installed spotrun does what it does without them. (spotrun installs none and holds no
// SPOTRUN_TEST_ string: hooks.none_in_spotrun; the command-line tests get them through spotrun-test.)
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "comm/device.hpp"
#include "comm/errors.hpp"
#include "comm/test_hooks.hpp"
#include "comm/transport.hpp"
#include "io/checkpoint.hpp"
#include "launcher/run/stop.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

// 4x4x4 fcc cells (6.7 sigma): sub-boxes of at least cutoff + skin at 1 and 2 ranks.
SPOTRUN_TEST_RANKS(1, 2);

namespace fs = std::filesystem;
using namespace spotrun;

namespace {

// Installs hooks for one test and removes them at its end, whatever the test did. The device rules of the
// test program (SPOTRUN_TEST_DEVICE_RULES) stay as they were.
struct Installed {
  explicit Installed(comm::TestHooks hooks) {
    hooks.device_rules = comm::test_hooks().device_rules;
    comm::set_test_hooks(std::move(hooks));
  }
  ~Installed() {
    comm::TestHooks kept;
    kept.device_rules = comm::test_hooks().device_rules;
    comm::set_test_hooks(std::move(kept));
  }
};

// Hooks with one member set: with(&comm::TestHooks::host_name, f).
template <class Member, class F>
comm::TestHooks with(Member member, F f) {
  comm::TestHooks h;
  h.*member = std::move(f);
  return h;
}

std::string mpi_processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

}  // namespace

TEST(TestHooks, NoneInstalledByDefault) {
  const comm::TestHooks& h = comm::test_hooks();
  EXPECT_FALSE(h.host_name || h.route_self || h.phase_entered || h.checkpoint_half_written ||
               h.checkpoint_free_bytes || h.force_passes || h.dmi_directory);
  EXPECT_EQ(comm::host_name(), mpi_processor_name());
  EXPECT_FALSE(comm::make_transport("auto", test::world())->route_self());
}

TEST(TestHooks, HostNameReplacesTheProcessorsNameUnlessEmpty) {
  {
    Installed hooks(with(&comm::TestHooks::host_name, [] { return std::string("node-") + std::to_string(test::rank() % 2); }));
    EXPECT_EQ(comm::host_name(), "node-" + std::to_string(test::rank() % 2));
  }
  {
    Installed hooks(with(&comm::TestHooks::host_name, [] { return std::string(); }));
    EXPECT_EQ(comm::host_name(), mpi_processor_name());
  }
  EXPECT_EQ(comm::host_name(), mpi_processor_name());
}

TEST(TestHooks, RouteSelfReachesTheTransportOfARun) {
  for (const char* kind : {"auto", "mpi-host"}) {
    bool asked = false;
    Installed hooks(with(&comm::TestHooks::route_self, [&] { return asked = true; }));
    EXPECT_TRUE(comm::make_transport(kind, test::world())->route_self()) << kind;
    EXPECT_TRUE(asked) << kind;
  }
  EXPECT_FALSE(comm::make_transport("mpi-host", test::world())->route_self());
}

// device_rules: a host build chooses its transport as a device build would (this MPI is not GPU-aware and
// NCCL needs a GPU per rank: "mpi-host", and "mpi" refused), and back to the host rules without the hook.
TEST(TestHooks, DeviceRulesChooseTheTransportOfADeviceBuild) {
  constexpr bool device_build =
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  if (device_build) GTEST_SKIP() << "a device build applies the device rules without the hook";
  const comm::TestHooks before = comm::test_hooks();
  {
    comm::TestHooks off = before;
    off.device_rules = nullptr;
    comm::set_test_hooks(off);
    EXPECT_FALSE(comm::device_rules());
    EXPECT_EQ(comm::make_transport("auto", test::world())->name(), "mpi");
    EXPECT_EQ(comm::make_transport("mpi", test::world())->name(), "mpi");
  }
  bool asked = false;
  comm::TestHooks on = before;
  on.device_rules = [&] { return asked = true; };
  comm::set_test_hooks(on);
  EXPECT_TRUE(comm::device_rules());
  EXPECT_TRUE(asked);
  const auto chosen = comm::make_transport("auto", test::world());
  EXPECT_EQ(chosen->name(), "mpi-host") << chosen->description();
  EXPECT_THROW(comm::make_transport("mpi", test::world()), InputError);
  comm::set_test_hooks(before);
}

TEST(TestHooks, PhaseEnteredNamesEachPhaseAsItStarts) {
  std::vector<std::string> phases;
  {
    Installed hooks(with(&comm::TestHooks::phase_entered, [&](const char* phase) { phases.emplace_back(phase); }));
    launcher::set_signal_mode(launcher::SignalMode::exit_now, "a first phase");
    launcher::set_signal_mode(launcher::SignalMode::exit_now, "a second phase");
  }
  launcher::set_signal_mode(launcher::SignalMode::exit_now, "no hook");
  EXPECT_EQ(phases, (std::vector<std::string>{"a first phase", "a second phase"}));
}

// The hook runs on every rank inside the write, its temporary file there and not yet renamed into place.
TEST(TestHooks, CheckpointHalfWrittenRunsInsideTheWrite) {
  std::string dir;
  if (test::is_root()) {
    const char* base = std::getenv("TMPDIR");
    dir = (fs::path(base && *base ? base : "/tmp") / ("spotrun-test-hooks." + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  dir = test::world().broadcast(dir);
  const std::string path = dir + "/ckpt-42.h5";
  io::CheckpointMeta meta;
  meta.solver = "md";
  meta.step = 42;
  meta.units = "lj";
  io::SolverState state;
  state.solver = "md";
  state.integers = {{"step", 42}};
  std::vector<long long> steps;
  std::vector<bool> temporary_there, final_there;
  {
    Installed hooks(with(&comm::TestHooks::checkpoint_half_written, [&](long long step, const std::string& tmp) {
      steps.push_back(step);
      temporary_there.push_back(fs::exists(tmp) && tmp != path);
      final_there.push_back(fs::exists(path));
    }));
    io::write_checkpoint(test::world(), path, meta, state);
  }
  EXPECT_EQ(steps, std::vector<long long>{42});
  EXPECT_EQ(temporary_there, std::vector<bool>{true});
  EXPECT_EQ(final_there, std::vector<bool>{false});
  EXPECT_TRUE(fs::exists(path));
  io::write_checkpoint(test::world(), dir + "/ckpt-43.h5", meta, state);  // no hook: nothing called
  EXPECT_EQ(steps.size(), 1u);
  test::world().barrier();
  if (test::is_root()) fs::remove_all(dir);
}

// The free space the write checks against is the hook's figure (asked on rank 0 with the directory): too
// little refuses the write before it starts, a negative one (not known) lets it go ahead.
TEST(TestHooks, CheckpointFreeBytesReplacesTheFileSystemsFigure) {
  std::string dir;
  if (test::is_root()) {
    const char* base = std::getenv("TMPDIR");
    dir = (fs::path(base && *base ? base : "/tmp") / ("spotrun-test-free." + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  dir = test::world().broadcast(dir);
  io::CheckpointMeta meta;
  meta.solver = "md";
  meta.step = 7;
  meta.units = "lj";
  io::SolverState state;
  state.solver = "md";
  state.integers = {{"step", 7}};
  std::vector<std::string> asked;
  std::string error;
  {
    Installed hooks(with(&comm::TestHooks::checkpoint_free_bytes, [&](const std::string& d) {
      asked.push_back(d);
      return 1000LL;
    }));
    try {
      io::write_checkpoint(test::world(), dir + "/ckpt-7.h5", meta, state);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  EXPECT_NE(error.find("not enough space on the file system of '" + dir + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("1000 are free"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir + "/ckpt-7.h5"));
  EXPECT_EQ(asked, test::is_root() ? std::vector<std::string>{dir} : std::vector<std::string>{});
  {
    Installed hooks(with(&comm::TestHooks::checkpoint_free_bytes, [](const std::string&) { return -1LL; }));
    io::write_checkpoint(test::world(), dir + "/ckpt-7.h5", meta, state);
  }
  EXPECT_TRUE(fs::exists(dir + "/ckpt-7.h5"));
  test::world().barrier();
  if (test::is_root()) fs::remove_all(dir);
}

// Extra force passes change no result, bit for bit; the hook is asked once per force evaluation.
TEST(TestHooks, ForcePassesRepeatTheForceWorkOnly) {
  constexpr int steps = 20;
  test::MdRun plain(test::lattice_config({4, 4, 4}, 1.0), test::world());
  const auto want = test::run_thermo(*plain.solver, steps, 5);
  int asked = 0;
  std::vector<test::ThermoRow> got;
  {
    Installed hooks(with(&comm::TestHooks::force_passes, [&] { return ++asked, 3; }));
    test::MdRun slowed(test::lattice_config({4, 4, 4}, 1.0), test::world());
    got = test::run_thermo(*slowed.solver, steps, 5);
  }
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t r = 0; r < got.size(); ++r)
    for (std::size_t c = 0; c < got[r].size(); ++c) EXPECT_EQ(got[r][c], want[r][c]) << "row " << r << " column " << c;
  EXPECT_GE(asked, steps + 1);  // setup's evaluation and one per step
}
