// The neighbour-list build of solvers/md/neighbor.hpp against brute force, on whatever Kokkos backend the
// build has, with both fillings of its packed arrays: pack_device() (counts by atomics, a scan, each bin
// ordered by atom index: what a GPU runs) and pack_host() (the serial counting sort; host memory only),
// each followed by the one scan of the rows, list_rows(). The atoms and ghosts are those of an MD run after
// some steps of a liquid at T = 2. Every list kind: full (every atom within cutneigh of every owned atom but
// itself); half without Newton across ghosts (every owned pair once, every owned-ghost pair on the owned
// side); half with Newton (owned-ghost pairs only where the ghost lies above the owned atom: a higher z bin,
// or the same z bin and above by z, then y, then x; a host list). Both fillings must give the same rows
// entry for entry. On a threaded Kokkos (tools/threaded-check.sh) pack_device()'s atomics run on several
// threads. The rows laid end to end (NeighborList::stream, the host's loop for sparse rows) hold the rows in
// their order and give the row-by-row loop's forces, energies and virial.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "solvers/md/force.hpp"
#include "solvers/md/neighbor.hpp"
#include "solvers/md/pair.hpp"
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

// The rows laid end to end (stream_rows(true): what a run's builds do for sparse rows such as a WCA melt's)
// hold every row in the order of `order`, owned neighbours then ghosts, each entry naming its row; the host's
// loop over them (impl::stream_forces_host) gives the forces (owned atoms and ghosts), energies and virial
// of the row-by-row loop (impl::half_list_forces_host, which a build without the layout takes) on the same
// list: a WCA liquid in double and mixed precision, and two types of LJ at 2.5 (several evaluators, most
// pairs within the cutoff), Newton on and off, rows split into three parts as the halo overlap splits them,
// whole and part by part.
TEST(NeighborPaths, RowsLaidEndToEndGiveTheRowByRowForces) {
  constexpr bool host_memory = Kokkos::SpaceAccessibility<Kokkos::HostSpace, md::MemSpace>::accessible;
  if (!host_memory) GTEST_SKIP() << "the rows are laid end to end for the host's loop only";
  struct Case {
    std::string name;
    md::MdConfig cfg;
  };
  std::vector<Case> cases;
  auto wca = test::lattice_config({6, 5, 7}, 1.5);
  wca.cutoff = 1.122462048309373;
  wca.skin = 0.4;
  cases.push_back({"WCA, double", wca});
  wca.precision = md::Precision::Mixed;
  cases.push_back({"WCA, mixed", wca});
  auto two = test::lattice_config({6, 5, 7}, 2.0);
  two.types = {{"A", 1.0, 0.8, true}, {"B", 1.0, 0.2, true}};
  two.pair_coeffs = test::ka_config(true).pair_coeffs;
  cases.push_back({"two types, LJ 2.5", two});
  int compared = 0, split = 0;  // split: lists with rows in each of the three parts
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    test::MdRun run(c.cfg, test::world());
    test::run_thermo(*run.solver, 30, 30);  // sorted atoms off the lattice, ghosts, several builds
    md::AtomStore atoms = run->atoms();     // shares the run's arrays but the forces
    const int nlocal = atoms.nlocal, nall = atoms.nall();
    ASSERT_GT(nlocal, 2);
    std::vector<std::string> names;
    for (const auto& t : c.cfg.types) names.push_back(t.name);
    if (names.empty()) names.push_back("1");
    const md::AnyPair any = md::make_pair(c.cfg, md::resolve_pair_coeffs(c.cfg, names));
    for (const bool newton : {true, false}) {
      SCOPED_TRACE(newton ? "newton on" : "newton off");
      md::NeighborList nl;
      nl.setup(run->grid().sub_box(), c.cfg.cutoff + c.cfg.skin, false, newton);
      md::RowWindows windows;
      windows.first[1] = nlocal / 3;
      windows.last[0] = 2 * nlocal / 3;
      windows.last[1] = nlocal;
      struct Result {
        std::vector<double> f;
        md::PairTally t;
      };
      // The forces with energies, virial alone, or neither (EV, E) over the rows whole or the three parts.
      auto forces = [&](int kind, bool parts) {
        atoms.f = md::Vec3View("test::f", nall);
        md::ForceScatter scatter(atoms.f);
        const int bounds[4] = {0, nl.interior_rows(), nlocal - nl.deferred_rows(), nlocal};
        Result r;
        for (int p = 0; p < (parts ? 3 : 1); ++p) {
          const int b = parts ? bounds[p] : 0, e = parts ? bounds[p + 1] : nlocal;
          const md::PairTally t = std::visit(
              [&](const auto& pair) {
                return kind == 0   ? md::compute_pair_forces<true>(atoms, nl, pair, scatter, b, e)
                       : kind == 1 ? md::compute_pair_forces<true, false>(atoms, nl, pair, scatter, b, e)
                                   : md::compute_pair_forces<false>(atoms, nl, pair, scatter, b, e);
              },
              any);
          r.t.energy += t.energy;
          r.t.ecoul += t.ecoul;
          r.t.virial += t.virial;
        }
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.f);
        for (int i = 0; i < nall; ++i)
          for (int d = 0; d < 3; ++d) r.f.push_back(h(i, d));
        return r;
      };
      nl.stream_rows(false);
      nl.build(atoms, windows);
      ASSERT_FALSE(nl.streamed());
      split += nl.interior_rows() > 0 && nl.deferred_rows() > 0;
      std::vector<Result> rows;
      for (int kind = 0; kind < 3; ++kind) rows.push_back(forces(kind, false));
      nl.stream_rows(true);
      nl.build(atoms, windows);
      ASSERT_TRUE(nl.streamed());
      // The layout: the rows of the order, each as stored_rows() reads it, and each entry's row.
      std::string problem;
      const Rows stored = stored_rows(nl, nlocal, &problem);
      ASSERT_TRUE(problem.empty()) << problem;
      auto order = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.order);
      auto start = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.stream_start);
      auto entries = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.stream);
      auto row_of = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), nl.stream_row);
      int misplaced = 0;
      for (int k = 0; k < nlocal; ++k) {
        const std::vector<int>& want = stored[order(k)];
        misplaced += start(k + 1) - start(k) != static_cast<int>(want.size());
        for (int e = start(k); e < start(k + 1) && e - start(k) < static_cast<int>(want.size()); ++e)
          misplaced += entries(e) != want[e - start(k)] || row_of(e) != k;
      }
      EXPECT_EQ(misplaced, 0) << "rows laid out out of place";
      EXPECT_EQ(start(nlocal), nl.total_pairs());
      const char* kinds[3] = {"energy and virial", "virial", "forces alone"};
      for (int kind = 0; kind < 3; ++kind)
        for (const bool parts : {false, true}) {
          const Result got = forces(kind, parts);
          const Result& want = rows[kind];
          const std::string what = std::string(kinds[kind]) + (parts ? ", by parts" : ", whole");
          double fmax = 0, worst = 0;
          for (std::size_t a = 0; a < want.f.size(); ++a) {
            fmax = std::max(fmax, std::abs(want.f[a]));
            worst = std::max(worst, std::abs(got.f[a] - want.f[a]));
          }
          EXPECT_GT(fmax, 1.0) << what;
          EXPECT_LE(worst, 1e-12 * fmax) << what << ": forces differ by " << worst;
          auto near = [](double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)); };
          EXPECT_TRUE(near(got.t.energy, want.t.energy)) << what << ": energy " << got.t.energy << " against " << want.t.energy;
          EXPECT_TRUE(near(got.t.virial, want.t.virial)) << what << ": virial " << got.t.virial << " against " << want.t.virial;
          if (kind == 0) {
            EXPECT_NE(want.t.energy, 0.0) << what;
          }
          if (kind < 2) {
            EXPECT_NE(want.t.virial, 0.0) << what;
          }
          ++compared;
        }
    }
  }
  EXPECT_EQ(compared, 3 * 2 * 6);
  EXPECT_GT(split, 0) << "no list had rows in every part";
}
