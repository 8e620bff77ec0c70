// The neighbour-list build of solvers/md/neighbor.hpp against brute force, on whatever Kokkos backend the
// build has, with both fillings of its packed arrays: pack_device() (counts by atomics, a scan, each bin
// ordered by atom index: what a GPU runs) and pack_host() (the serial counting sort; host memory only),
// each followed by the one scan of the rows, list_rows(). The atoms and ghosts are those of an MD run after
// some steps of a liquid at T = 2. Every list kind: full (every atom within cutneigh of every owned atom but
// itself); half without Newton across ghosts (every owned pair once, every owned-ghost pair on the owned
// side); half with Newton (owned-ghost pairs only where the ghost lies above the owned atom: a higher z bin,
// or the same z bin and above by z, then y, then x; a host list). Both fillings must give the same rows
// entry for entry. On a threaded Kokkos (tools/threaded-check.sh) pack_device()'s atomics run on several
// threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "solvers/md/neighbor.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;

namespace {

using Pairs = std::vector<std::pair<int, int>>;
using Rows = std::vector<std::vector<int>>;

// The rows of a list as they are stored: each owned atom's owned neighbours, then its ghost neighbours
// (from the end of the row). Empty, with *problem set, when a row's counts do not fit its storage.
Rows stored_rows(const md::NeighborList& nl, int nlocal, std::string* problem) {
  auto nn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.numneigh);
  auto ng = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.numghost);
  auto ne = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.neighbors);
  const int maxn = nl.max_neighbors();
  Rows out(nlocal);
  for (int i = 0; i < nlocal; ++i) {
    if (nn(i) < 0 || ng(i) < 0 || nn(i) + ng(i) > maxn) {
      *problem = "row " + std::to_string(i) + ": " + std::to_string(nn(i)) + " owned + " + std::to_string(ng(i)) +
                 " ghost neighbours in a row of " + std::to_string(maxn);
      return {};
    }
    for (int k = 0; k < nn(i); ++k) out[i].push_back(ne(i, k));
    for (int k = maxn - ng(i); k < maxn; ++k) out[i].push_back(ne(i, k));
  }
  return out;
}

// The pairs of stored rows: (i, j) for every neighbour j of owned atom i; in a half list an owned pair as
// (min, max). Sorted; duplicates kept (a pair listed twice is an error the comparison shows).
Pairs listed(const Rows& rows, int nlocal, bool full) {
  Pairs out;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i)
    for (const int j : rows[i])
      out.emplace_back(full || j >= nlocal ? i : std::min(i, j), full || j >= nlocal ? j : std::max(i, j));
  std::sort(out.begin(), out.end());
  return out;
}

// The same pairs by brute force over every owned atom and every atom, for the list kind of nl (its bins
// tell which z bin an atom lies in: bin_of() grows with z where x and y are fixed).
Pairs brute_force(const md::AtomStore& atoms, double cutneigh, const md::NeighborList& nl) {
  auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
  const double cutsq = cutneigh * cutneigh;
  const bool full = nl.full(), newton = nl.newton();
  Pairs out;
  for (int i = 0; i < atoms.nlocal; ++i)
    for (int j = 0; j < atoms.nall(); ++j) {
      if (j == i || (!full && j < atoms.nlocal && j < i)) continue;
      const double dx = x(i, 0) - x(j, 0), dy = x(i, 1) - x(j, 1), dz = x(i, 2) - x(j, 2);
      if (dx * dx + dy * dy + dz * dz >= cutsq) continue;
      if (newton && j >= atoms.nlocal) {
        const int zi = nl.bin_of(x(i, 0), x(i, 1), x(i, 2)), zj = nl.bin_of(x(i, 0), x(i, 1), x(j, 2));
        const bool above = dz < 0 || (dz == 0 && (dy < 0 || (dy == 0 && dx < 0)));
        if (zj < zi || (zj == zi && !above)) continue;
      }
      out.emplace_back(i, j);
    }
  std::sort(out.begin(), out.end());
  return out;
}

struct ListKind {
  const char* name;
  bool full, newton;
};

}  // namespace

TEST(NeighborPaths, BothFillingsListWhatBruteForceFinds) {
  auto cfg = test::lattice_config({6, 5, 7}, 2.0);
  test::MdRun run(cfg, test::world());
  test::run_thermo(*run.solver, 40, 40);  // a liquid: atoms off the lattice, several rebuilds and migrations
  const md::AtomStore& atoms = run->atoms();
  ASSERT_GT(atoms.nlocal, 0);
  const double cutneigh = cfg.cutoff + cfg.skin;
  constexpr bool host_memory = Kokkos::SpaceAccessibility<Kokkos::HostSpace, md::MemSpace>::accessible;
  int cases = 0;
  for (const ListKind kind : {ListKind{"full", true, false}, ListKind{"half, newton off", false, false},
                              ListKind{"half, newton on", false, true}}) {
    Rows first;  // the rows of the first filling, for the second
    for (const bool device : {true, false}) {
      if (!device && !host_memory) continue;  // pack_host() reads the atoms where they are: host memory only
      md::NeighborList nl;
      nl.setup(run->grid().sub_box(), cutneigh, kind.full, kind.newton);
      EXPECT_EQ(nl.newton(), kind.newton && host_memory) << kind.name;
      const Pairs want = brute_force(atoms, cutneigh, nl);
      EXPECT_GT(want.size(), static_cast<std::size_t>(atoms.nlocal)) << "too few pairs to test anything";
      // Twice: the second build reuses the first's packed arrays and rows (grown ones included).
      for (int pass = 0; pass < 2; ++pass) {
        if (device)
          nl.build_device(atoms);
        else
          nl.build_host(atoms);
        std::string problem;
        const Rows rows = stored_rows(nl, atoms.nlocal, &problem);
        const Pairs got = listed(rows, atoms.nlocal, kind.full);
        const std::string what = std::string(device ? "pack_device" : "pack_host") + ", " + kind.name +
                                 " list, pass " + std::to_string(pass);
        EXPECT_TRUE(problem.empty()) << what << ": " << problem;
        EXPECT_EQ(got.size(), want.size()) << what;
        EXPECT_TRUE(got == want) << what << ": the pairs differ from brute force";
        EXPECT_EQ(nl.total_pairs(), static_cast<long long>(want.size())) << what;
        if (first.empty())
          first = rows;
        else
          EXPECT_TRUE(rows == first) << what << ": the rows differ from the first build's (entries or their order)";
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, host_memory ? 12 : 6);
  EXPECT_GT(atoms.nghost, 0);
}

// The rows' length follows what the builds need: a build that needs more than the rows hold grows them and
// scans again; where a few builds have needed much less than they hold, the rows shrink (a long row costs
// the force loop memory traffic). Every build lists what brute force finds, whatever length it had.
TEST(NeighborPaths, RowsGrowAndShrinkToWhatTheBuildsNeed) {
  auto cfg = test::lattice_config({6, 5, 7}, 2.0);
  test::MdRun run(cfg, test::world());
  test::run_thermo(*run.solver, 20, 20);
  const md::AtomStore& atoms = run->atoms();
  ASSERT_GT(atoms.nlocal, 0);
  const double big = cfg.cutoff + cfg.skin, small = 0.6 * big;
  md::NeighborList nl;
  auto build = [&](double cutneigh, const std::string& what) {
    nl.setup(run->grid().sub_box(), cutneigh, false, true);
    nl.build(atoms);
    const Pairs want = brute_force(atoms, cutneigh, nl);
    std::string problem;
    const Pairs got = listed(stored_rows(nl, atoms.nlocal, &problem), atoms.nlocal, false);
    EXPECT_TRUE(problem.empty()) << what << ": " << problem;
    EXPECT_TRUE(got == want) << what << ": the pairs differ from brute force (" << got.size() << " against "
                             << want.size() << ")";
    return nl.max_neighbors();
  };
  const int first = build(big, "the first build");
  // The rows shrink once a few builds have shown what they need (NeighborList::reserve_rows).
  int shrunk = first;
  for (int b = 1; b <= 6; ++b) shrunk = build(small, "a shorter reach, build " + std::to_string(b));
  EXPECT_LT(shrunk, first) << "the rows did not shrink to the shorter reach's need";
  EXPECT_EQ(build(small, "a shorter reach again"), shrunk) << "rows that fit changed their length";
  EXPECT_GT(build(big, "the longer reach again, from the shorter rows"), shrunk) << "the rows did not grow back";
}
