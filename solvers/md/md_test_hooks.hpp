// Test hooks of the MD solver, compiled only in builds with tests (SPOTRUN_BUILD_TESTS defines
// SPOTRUN_TEST_HOOKS for spotrun_md; solvers/CMakeLists.txt). Nothing here exists in other builds.
#pragma once
#ifdef SPOTRUN_TEST_HOOKS
#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace spotrun::md::test_hooks {

// SPOTRUN_TEST_FORCE_SLOWDOWN=N: the pair-force kernel runs N times per force evaluation (N - 1 extra
// passes whose forces are discarded: the same results, N times the force work). The planted slowdown
// that the benchmark suite's regression test must catch (tests/bench/suite_regression_test.sh). Read once per process.
inline int force_passes() {
  static const int passes = [] {
    const char* text = std::getenv("SPOTRUN_TEST_FORCE_SLOWDOWN");
    const int n = text ? std::max(1, std::atoi(text)) : 1;
    if (n > 1)
      std::fprintf(stderr, "Warning: SPOTRUN_TEST_FORCE_SLOWDOWN=%d: the force kernel runs %d times per evaluation (a test hook)\n", n, n);
    return n;
  }();
  return passes;
}

}  // namespace spotrun::md::test_hooks
#endif
