#pragma once
// Test support for spotrun's MPI test executables (see test_main.cpp):
//  - every test file declares the rank counts it supports with SPOTRUN_TEST_RANKS(...); started at any
//    other count, the executable fails on every rank instead of silently testing less;
//  - world() is the communicator of MPI_COMM_WORLD;
//  - a failure on any rank makes the test fail on every rank (rank 0 prints the other ranks' messages),
//    and the exit code is the same on every rank.
// Tests must stay collective-safe: do the collectives first, then EXPECT_* on every rank; never return
// early (ASSERT_*) from a test body between collectives that other ranks still enter.
#include <initializer_list>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace spotrun::test {

// The source tree's tests/data and root, as the build saw them, unless the environment moves them
// (SPOTRUN_TEST_DATA_DIR, SPOTRUN_SOURCE_DIR: tests run from a bundle on another machine,
// tools/gpu-check.sh).
const char* data_dir();
const char* source_dir();

// The exit code of a test executable that skips as a whole (a GPU build without a GPU): ctest's
// SKIP_RETURN_CODE of every test (tests/CMakeLists.txt).
inline constexpr int k_skip_exit_code = 77;

// The communicator of MPI_COMM_WORLD, valid while the tests run.
const comm::Communicator& world();
inline int rank() { return world().rank(); }
inline int nranks() { return world().size(); }
inline bool is_root() { return world().is_root(); }

// Records the rank counts a test executable supports (use SPOTRUN_TEST_RANKS).
struct SupportedRanks {
  SupportedRanks(std::initializer_list<int> counts);
};
const std::vector<int>& supported_ranks();

// True on every rank when ok is true on every rank.
bool all_ranks(bool ok);

// Installs comm::TestHooks::device_rules when SPOTRUN_TEST_DEVICE_RULES=1 (test_main.cpp, first thing):
// transports and FFT backends chosen by a device build's rules on a host build. Keeps the other hooks.
void install_device_rules_from_environment();
// Whether this run applies the device build's rules (comm::device_rules()).
bool device_rules();

// Prints a line on rank 0 only (measured values worth seeing in the ctest log).
void report(const std::string& line);
// A number in %.3e notation, for report().
std::string sci(double v);

}  // namespace spotrun::test

#define SPOTRUN_TEST_RANKS_CAT2(a, b) a##b
#define SPOTRUN_TEST_RANKS_CAT(a, b) SPOTRUN_TEST_RANKS_CAT2(a, b)
#define SPOTRUN_TEST_RANKS(...) \
  static const ::spotrun::test::SupportedRanks SPOTRUN_TEST_RANKS_CAT(spotrun_test_ranks_, __LINE__){__VA_ARGS__}

// Where the tests find their data and the source tree (see data_dir() and source_dir()).
#define SPOTRUN_TEST_DATA_DIR (::spotrun::test::data_dir())
#define SPOTRUN_SOURCE_DIR (::spotrun::test::source_dir())
