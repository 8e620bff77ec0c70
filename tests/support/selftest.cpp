// Self-test of the test support (registered with expected outputs in tests/CMakeLists.txt): a failure
// on one rank only must fail the test on rank 0, which prints the other rank's message.
#include <gtest/gtest.h>

#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(2);

TEST(SupportSelfTest, FailsOnRank1Only) {
  EXPECT_NE(spotrun::test::rank(), 1) << "intended failure on rank 1";
}

TEST(SupportSelfTest, PassesEverywhere) { EXPECT_TRUE(spotrun::test::all_ranks(true)); }
