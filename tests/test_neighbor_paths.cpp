// Both neighbour-list builds of solvers/md/neighbor.hpp against brute force, on whatever Kokkos backend the
// build has: the device build (bins filled with atomics, then sorted; what a GPU runs) and the host build
// (atoms packed by bin). The atoms and ghosts are those of an MD run after some steps of a liquid at T = 2.
// Full lists: every atom within cutneigh of every owned atom, but itself. Half lists without Newton across
// ghosts (the device's kind): every owned pair once, every owned-ghost pair on the owned side. On a threaded
// Kokkos (tools/threaded-check.sh) the device build's atomics and bins run on several threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "solvers/md/neighbor.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2);

using namespace spotrun;

namespace {

using Pairs = std::vector<std::pair<int, int>>;

// The pairs a list holds: (i, j) for every neighbour j of owned atom i; in a half list an owned pair as
// (min, max). Sorted; duplicates kept (a pair listed twice is an error the comparison shows).
Pairs listed(const md::NeighborList& nl, int nlocal, bool full, std::string* problem) {
  auto nn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.numneigh);
  auto ng = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.numghost);
  auto ne = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.neighbors);
  const int maxn = nl.max_neighbors();
  Pairs out;
  for (int i = 0; i < nlocal; ++i) {
    if (nn(i) < 0 || ng(i) < 0 || nn(i) + ng(i) > maxn) {
      *problem = "row " + std::to_string(i) + ": " + std::to_string(nn(i)) + " owned + " + std::to_string(ng(i)) +
                 " ghost neighbours in a row of " + std::to_string(maxn);
      return {};
    }
    for (int k = 0; k < nn(i); ++k) {
      const int j = ne(i, k);
      out.emplace_back(full ? i : std::min(i, j), full ? j : std::max(i, j));
    }
    for (int k = maxn - ng(i); k < maxn; ++k) out.emplace_back(i, ne(i, k));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The same pairs by brute force over every owned atom and every atom.
Pairs brute_force(const md::AtomStore& atoms, double cutneigh, bool full) {
  auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
  const double cutsq = cutneigh * cutneigh;
  Pairs out;
  for (int i = 0; i < atoms.nlocal; ++i)
    for (int j = 0; j < atoms.nall(); ++j) {
      if (j == i || (!full && j < atoms.nlocal && j < i)) continue;
      const double dx = x(i, 0) - x(j, 0), dy = x(i, 1) - x(j, 1), dz = x(i, 2) - x(j, 2);
      if (dx * dx + dy * dy + dz * dz < cutsq) out.emplace_back(i, j);
    }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(NeighborPaths, DeviceAndHostBuildsListWhatBruteForceFinds) {
  auto cfg = test::lattice_config({6, 5, 7}, 2.0);
  test::MdRun run(cfg, test::world());
  test::run_thermo(*run.solver, 40, 40);  // a liquid: atoms off the lattice, several rebuilds and migrations
  const md::AtomStore& atoms = run->atoms();
  ASSERT_GT(atoms.nlocal, 0);
  const double cutneigh = cfg.cutoff + cfg.skin;
  int cases = 0;
  for (const bool full : {true, false}) {
    const Pairs want = brute_force(atoms, cutneigh, full);
    for (const bool device : {true, false}) {
      md::NeighborList nl;
      nl.setup(run->grid().sub_box(), cutneigh, full, /*newton=*/false);
      // Twice: the second build reuses the first's bins and rows (grown ones included).
      for (int pass = 0; pass < 2; ++pass) {
        if (device)
          nl.build_device(atoms);
        else
          nl.build_host(atoms);
        std::string problem;
        const Pairs got = listed(nl, atoms.nlocal, full, &problem);
        const std::string what = std::string(device ? "device" : "host") + " build, " + (full ? "full" : "half") +
                                 " list, pass " + std::to_string(pass);
        EXPECT_TRUE(problem.empty()) << what << ": " << problem;
        EXPECT_EQ(got.size(), want.size()) << what;
        EXPECT_TRUE(got == want) << what << ": the pairs differ from brute force";
        EXPECT_EQ(nl.total_pairs(), static_cast<long long>(want.size())) << what;
        ++cases;
      }
    }
    EXPECT_GT(want.size(), static_cast<std::size_t>(atoms.nlocal)) << "too few pairs to test anything";
  }
  EXPECT_EQ(cases, 8);
  EXPECT_GT(atoms.nghost, 0);
}
