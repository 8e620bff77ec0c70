// md::AtomMap: the copy of a global id closest to a position, among owned atoms and ghost images, found
// in a kernel against brute force over every copy; an absent id; rebuilding after the atoms changed. Both
// kinds of map: the array (small ids) and the hash (ids far above the number of atoms).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <random>
#include <vector>

#include "solvers/md/atom_map.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using namespace spotrun;

namespace {

// n owned atoms with ids base + 3 k + 1 in a box of edge 10, then `ghosts` images of random owned atoms shifted by a
// box length in a random direction (some ids get several copies).
md::AtomStore store(int n, int ghosts, unsigned seed, std::int64_t base) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 10);
  std::uniform_int_distribution<int> pick(0, n - 1), shift(-1, 1);
  md::AtomStore a;
  a.reserve(n + ghosts);
  auto x = Kokkos::create_mirror_view(a.x);
  auto id = Kokkos::create_mirror_view(a.id);
  for (int i = 0; i < n; ++i) {
    id(i) = base + 3 * i + 1;  // ids need not be contiguous
    for (int d = 0; d < 3; ++d) x(i, d) = u(rng);
  }
  for (int g = 0; g < ghosts; ++g) {
    const int of = pick(rng), i = n + g;
    id(i) = id(of);
    int s[3];
    do {
      for (int d = 0; d < 3; ++d) s[d] = shift(rng);
    } while (s[0] == 0 && s[1] == 0 && s[2] == 0);
    for (int d = 0; d < 3; ++d) x(i, d) = x(of, d) + 10.0 * s[d];
  }
  Kokkos::deep_copy(a.x, x);
  Kokkos::deep_copy(a.id, id);
  a.nlocal = n;
  a.nghost = ghosts;
  return a;
}

// The kernels of the tests (free functions: a device lambda may not live in a test's private body).
void find_closest(const md::AtomMap::Lookup& lookup, const Kokkos::View<std::int64_t*, md::MemSpace>& qid,
                  const Kokkos::View<double* [3], md::MemSpace>& qx, const Kokkos::View<int*, md::MemSpace>& found) {
  Kokkos::parallel_for(
      "test::map", Kokkos::RangePolicy<md::ExecSpace>(0, static_cast<int>(qid.extent(0))),
      KOKKOS_LAMBDA(int k) { found(k) = lookup.closest(qid(k), qx(k, 0), qx(k, 1), qx(k, 2)); });
}

// How many of the ids base + 3 k + 1, k in [from, to), the map has no copy of.
int count_missing(const md::AtomMap::Lookup& lookup, int from, int to, std::int64_t base) {
  int missing = 0;
  Kokkos::parallel_reduce(
      "test::map::missing", Kokkos::RangePolicy<md::ExecSpace>(from, to),
      KOKKOS_LAMBDA(int k, int& m) { m += lookup.closest(base + 3 * k + 1, 5.0, 5.0, 5.0) < 0 ? 1 : 0; }, missing);
  return missing;
}

}  // namespace

// Ids this far above the atoms' number make the hash kind.
constexpr std::int64_t k_hash_base = std::int64_t(1) << 40;

TEST(AtomMap, ClosestCopyAgreesWithBruteForce) {
  for (const std::int64_t base : {std::int64_t(0), k_hash_base})
  for (const auto& [n, ghosts] : {std::pair<int, int>{1, 0}, {50, 200}, {2000, 3000}}) {
    const md::AtomStore atoms = store(n, ghosts, 5 + n, base);
    md::AtomMap map;
    map.build(atoms);
    EXPECT_EQ(map.dense(), base == 0);
    // Queries: every id once (and ids that are absent) from random reference positions.
    const int q = n + 20;
    Kokkos::View<std::int64_t*, md::MemSpace> qid("qid", q);
    Kokkos::View<double* [3], md::MemSpace> qx("qx", q);
    Kokkos::View<int*, md::MemSpace> found("found", q);
    auto hid = Kokkos::create_mirror_view(qid);
    auto hqx = Kokkos::create_mirror_view(qx);
    std::mt19937_64 rng(99);
    std::uniform_real_distribution<double> u(-5, 15);
    for (int k = 0; k < q; ++k) {
      hid(k) = base + (k < n ? 3 * k + 1 : 3 * k + 2);  // k >= n: ids no atom has
      for (int d = 0; d < 3; ++d) hqx(k, d) = u(rng);
    }
    Kokkos::deep_copy(qid, hid);
    Kokkos::deep_copy(qx, hqx);
    find_closest(map.lookup(), qid, qx, found);
    auto hfound = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), found);
    auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
    auto hatom = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.id);
    int wrong = 0, copies = 0;
    for (int k = 0; k < q; ++k) {
      int best = -1;
      double best_rsq = 0;
      for (int i = 0; i < atoms.nall(); ++i) {
        if (hatom(i) != hid(k)) continue;
        ++copies;
        double rsq = 0;
        for (int d = 0; d < 3; ++d) rsq += (hx(i, d) - hqx(k, d)) * (hx(i, d) - hqx(k, d));
        if (best < 0 || rsq < best_rsq) {
          best = i;
          best_rsq = rsq;
        }
      }
      if (hfound(k) != best) ++wrong;
    }
    EXPECT_EQ(wrong, 0) << n << " atoms, " << ghosts << " ghosts, ids from " << base;
    EXPECT_EQ(copies, n + ghosts);
  }
}

// The map follows the store when rebuilt: a smaller store, then a larger one than its capacity, and from one
// kind to the other and back (no id of an earlier build is found in a later one).
TEST(AtomMap, RebuildsForOtherAtoms) {
  md::AtomMap map;
  for (const auto& [n, base] : {std::pair<int, std::int64_t>{500, 0}, {10, 0}, {5000, k_hash_base}, {20, 0},
                                {3000, 0}, {40, k_hash_base}}) {
    const md::AtomStore atoms = store(n, n / 2, 17, base);
    map.build(atoms);
    EXPECT_EQ(map.dense(), base == 0);
    EXPECT_EQ(count_missing(map.lookup(), 0, n, base), 0) << n;
    EXPECT_EQ(count_missing(map.lookup(), n, n + 1, base), 1);  // id 3 n + 1: no atom has it
    EXPECT_EQ(count_missing(map.lookup(), n, 5000, base), 5000 - n) << n;  // the ids of a larger earlier build
  }
}

// An id beyond the array (larger than every id of the build) or negative is absent, not a read outside it.
TEST(AtomMap, IdsOutsideTheArrayAreAbsent) {
  const md::AtomStore atoms = store(100, 20, 3, 0);
  md::AtomMap map;
  map.build(atoms);
  ASSERT_TRUE(map.dense());
  EXPECT_EQ(count_missing(map.lookup(), 100, 200000, 0), 200000 - 100);
  EXPECT_EQ(count_missing(map.lookup(), 0, 1, -10), 1);
}
