// main() of every spotrun test executable: MPI and Kokkos around GoogleTest, output on rank 0 only,
// failures and exit codes agreed by all ranks. SPOTRUN_TEST_DEVICE_RULES=1 installs the test hook
// comm::TestHooks::device_rules: a host build chooses transports and FFT backends as a device build would
// (comm::device_rules()), so that a CPU run finds the tests that only a GPU would fail for their choice.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "comm/device.hpp"
#include "comm/test_hooks.hpp"
#include "comm/transport.hpp"
#include "launcher/environment.hpp"
#include "support/mpi_test.hpp"

namespace spotrun::test {
namespace {

const comm::Communicator* g_world = nullptr;

std::vector<int>& ranks_registry() {
  static std::vector<int> counts;
  return counts;
}

// Collects this rank's failures of the running test; at its end, every rank learns which ranks failed.
// A rank that passed while another failed gets a failure itself (rank 0 one with the other ranks'
// messages, since only rank 0 prints), so the test verdict and the exit code agree on every rank.
class AgreeOnFailures : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo&) override {
    m_messages.clear();
    m_adding = false;
  }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (m_adding || !r.failed()) return;
    std::ostringstream s;
    s << (r.file_name() ? r.file_name() : "?") << ":" << r.line_number() << ": " << r.message() << "\n";
    m_messages += s.str();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    const auto all = world().all_gather(m_messages);
    // Other ranks' failures, grouped by identical text; those identical to this rank's are left out.
    std::map<std::string, std::string> ranks_by_text;
    for (int r = 0; r < static_cast<int>(all.size()); ++r)
      if (r != world().rank() && !all[r].empty() && all[r] != m_messages) {
        auto& ranks = ranks_by_text[all[r]];
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      }
    bool other_failed = false;
    for (int r = 0; r < static_cast<int>(all.size()); ++r) other_failed = other_failed || (r != world().rank() && !all[r].empty());
    std::string others;
    for (const auto& [text, ranks] : ranks_by_text) others += "--- failure on rank(s) " + ranks + ":\n" + text;
    if (other_failed && (m_messages.empty() || (!others.empty() && world().is_root()))) {
      m_adding = true;
      ADD_FAILURE() << (m_messages.empty() ? "the test failed on another rank\n" : "other ranks failed differently\n")
                    << others;
      m_adding = false;
    }
  }

 private:
  std::string m_messages;
  bool m_adding = false;
};

}  // namespace

const comm::Communicator& world() { return *g_world; }

SupportedRanks::SupportedRanks(std::initializer_list<int> counts) {
  ranks_registry().insert(ranks_registry().end(), counts.begin(), counts.end());
}
const std::vector<int>& supported_ranks() { return ranks_registry(); }

bool all_ranks(bool ok) { return !world().any(!ok); }

void report(const std::string& line) {
  if (!is_root()) return;
  std::printf("[ MEASURED ] %s\n", line.c_str());
  std::fflush(stdout);
}

const char* data_dir() {
  const char* env = std::getenv("SPOTRUN_TEST_DATA_DIR");
  return env && *env ? env : SPOTRUN_TEST_DATA_DIR_BUILT;
}
const char* source_dir() {
  const char* env = std::getenv("SPOTRUN_SOURCE_DIR");
  return env && *env ? env : SPOTRUN_SOURCE_DIR_BUILT;
}

bool device_rules() { return comm::device_rules(); }

void install_device_rules_from_environment() {
  const char* v = std::getenv("SPOTRUN_TEST_DEVICE_RULES");
  if (!v || std::string(v) != "1") return;
  comm::TestHooks hooks = comm::test_hooks();
  hooks.device_rules = [] { return true; };
  comm::set_test_hooks(std::move(hooks));
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

}  // namespace spotrun::test

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  spotrun::test::install_device_rules_from_environment();
  ::testing::InitGoogleTest(&argc, argv);
  // The GPU binding of spotrun's main() (comm/device.hpp): each rank on the GPU of its node-local rank, from
  // the environment spotrun reads (launcher/environment.hpp).
  std::vector<char*> kokkos_argv(argv, argv + argc);
  std::vector<std::string> kokkos_args(argv + 1, argv + argc);
  const auto binding = spotrun::comm::bind_device(MPI_COMM_WORLD, spotrun::launcher::Environment::read().device);
  // A GPU build on a machine without a GPU: every test would need one. Skip (ctest's SKIP_RETURN_CODE,
  // tests/CMakeLists.txt), or fail with SPOTRUN_REQUIRE_GPU=1, so that a GPU run cannot pass by skipping.
  constexpr bool gpu_build =
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  int have = binding.device >= 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (gpu_build && !all) {
    const char* require = std::getenv("SPOTRUN_REQUIRE_GPU");
    const bool required = require && std::string(require) == "1";
    if (rank == 0)
      std::fprintf(stderr, "%s: this is a GPU build (Kokkos %s) and a rank sees no GPU%s\n",
                   required ? "FAILED" : "SKIPPED", Kokkos::DefaultExecutionSpace::name(),
                   required ? " (SPOTRUN_REQUIRE_GPU=1)" : "; SPOTRUN_REQUIRE_GPU=1 makes this a failure");
    MPI_Finalize();
    return required ? 1 : spotrun::test::k_skip_exit_code;
  }
  std::string device_option = spotrun::comm::kokkos_device_option(binding, kokkos_args);
  if (!device_option.empty()) kokkos_argv.push_back(device_option.data());
  int kokkos_argc = static_cast<int>(kokkos_argv.size());
  kokkos_argv.push_back(nullptr);
  Kokkos::initialize(kokkos_argc, kokkos_argv.data());
  int rc = 0;
  {
    spotrun::comm::Communicator world(MPI_COMM_WORLD);
    spotrun::test::g_world = &world;
    if (rank == 0 && spotrun::comm::device_rules() && !gpu_build)
      std::printf("[ DEVICE RULES ] transports and FFT backends chosen as on a device build "
                  "(SPOTRUN_TEST_DEVICE_RULES=1); Kokkos %s, %d threads\n",
                  Kokkos::DefaultExecutionSpace::name(), Kokkos::DefaultExecutionSpace().concurrency());
    const auto& counts = spotrun::test::supported_ranks();
    if (counts.empty() || std::find(counts.begin(), counts.end(), size) == counts.end()) {
      if (rank == 0) {
        std::ostringstream s;
        for (int c : counts) s << ' ' << c;
        std::fprintf(stderr, "FAILED: started on %d MPI ranks; this test executable supports:%s%s\n", size,
                     counts.empty() ? " (none declared: use SPOTRUN_TEST_RANKS)" : "", s.str().c_str());
      }
      rc = 1;
    } else {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      if (rank != 0) delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new spotrun::test::AgreeOnFailures);
      rc = RUN_ALL_TESTS();
      int worst = 0;
      MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      rc = worst;
    }
    spotrun::test::g_world = nullptr;
  }
  Kokkos::finalize();
  MPI_Finalize();
  return rc;
}
