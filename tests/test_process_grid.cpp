// comm::choose_grid (surface-minimising rank grids) and comm::ProcessGrid (sub-boxes, neighbours).
// The choose_grid tests are pure and run on every rank; the ProcessGrid tests use MPI_COMM_WORLD and
// check every factorisation of the rank count.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "comm/process_grid.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using spotrun::comm::Box3;
using spotrun::comm::choose_grid;
using spotrun::comm::ProcessGrid;
using Grid = std::array<int, 3>;
using Lengths = std::array<double, 3>;

namespace {

// Every ordered factorisation px * py * pz == n.
std::vector<Grid> factorisations(int n) {
  std::vector<Grid> out;
  for (int px = 1; px <= n; ++px)
    for (int py = 1; py <= n; ++py)
      if (n % (px * py) == 0) out.push_back({px, py, n / (px * py)});
  return out;
}

double surface(const Grid& g, const Lengths& L) {
  const double a = L[0] / g[0], b = L[1] / g[1], c = L[2] / g[2];
  return a * b + b * c + a * c;
}

double thinnest(const Grid& g, const Lengths& L) {
  return std::min({L[0] / g[0], L[1] / g[1], L[2] / g[2]});
}

std::string str(const Grid& g) {
  return std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]);
}

bool is_prime(int n) {
  if (n < 2) return false;
  for (int d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

}  // namespace

// Hand-derived: for a cube the sub-box surface is (px + py + pz) L^2 / n, so the grid minimises
// px + py + pz; ties go to the larger px, then the larger py.
TEST(ChooseGrid, CubeOneToTwelveRanks) {
  const std::map<int, Grid> want = {{1, {1, 1, 1}}, {2, {2, 1, 1}},  {3, {3, 1, 1}},  {4, {2, 2, 1}},
                                    {5, {5, 1, 1}}, {6, {3, 2, 1}},  {7, {7, 1, 1}},  {8, {2, 2, 2}},
                                    {9, {3, 3, 1}}, {10, {5, 2, 1}}, {11, {11, 1, 1}}, {12, {3, 2, 2}}};
  for (const auto& [n, g] : want) EXPECT_EQ(choose_grid(n, {10, 10, 10}), g) << n << " ranks on a cube";
}

// Hand-derived for elongated boxes (surfaces in the comments, sub-box a x b x c: ab + bc + ac).
TEST(ChooseGrid, ElongatedBoxes) {
  // 40 x 10 x 10: slabs along x until they get thinner than the cross-section.
  EXPECT_EQ(choose_grid(2, {40, 10, 10}), (Grid{2, 1, 1}));
  EXPECT_EQ(choose_grid(4, {40, 10, 10}), (Grid{4, 1, 1}));   // 300 < 350 (2x2x1)
  EXPECT_EQ(choose_grid(6, {40, 10, 10}), (Grid{6, 1, 1}));   // 233.3 < 250 (3x2x1)
  EXPECT_EQ(choose_grid(8, {40, 10, 10}), (Grid{8, 1, 1}));   // 200 == 200 (4x2x1): tie, larger px
  EXPECT_EQ(choose_grid(9, {40, 10, 10}), (Grid{9, 1, 1}));   // 188.9 < 211.1 (3x3x1)
  EXPECT_EQ(choose_grid(10, {40, 10, 10}), (Grid{5, 2, 1}));  // 170 < 180 (10x1x1)
  EXPECT_EQ(choose_grid(12, {40, 10, 10}), (Grid{6, 2, 1}));  // 150 < 158.3 (3x2x2)
  // 10 x 10 x 30: the long axis is z.
  EXPECT_EQ(choose_grid(2, {10, 10, 30}), (Grid{1, 1, 2}));
  EXPECT_EQ(choose_grid(4, {10, 10, 30}), (Grid{1, 1, 4}));
  EXPECT_EQ(choose_grid(6, {10, 10, 30}), (Grid{2, 1, 3}));   // 200 == 200 (1x2x3, 1x1x6): larger px
  EXPECT_EQ(choose_grid(8, {10, 10, 30}), (Grid{2, 1, 4}));   // 162.5 < 175 (2x2x2)
  EXPECT_EQ(choose_grid(12, {10, 10, 30}), (Grid{2, 2, 3}));
  // 6 x 12 x 24
  EXPECT_EQ(choose_grid(4, {6, 12, 24}), (Grid{1, 2, 2}));
  EXPECT_EQ(choose_grid(8, {6, 12, 24}), (Grid{1, 2, 4}));
  EXPECT_EQ(choose_grid(12, {6, 12, 24}), (Grid{1, 3, 4}));
}

// Against brute force: the chosen grid multiplies to n and no factorisation has a smaller surface;
// among equal surfaces the chosen px (then py) is the largest.
TEST(ChooseGrid, MinimisesTheSurfaceAgainstBruteForce) {
  const std::vector<Lengths> boxes = {{10, 10, 10}, {40, 10, 10}, {10, 40, 10}, {10, 10, 40}, {7.3, 11.1, 5.2},
                                      {3, 100, 3},  {1, 1, 1},    {20, 20, 5},  {6, 12, 24},  {10.0776, 10.0776, 10.0776}};
  for (const auto& L : boxes)
    for (int n = 1; n <= 12; ++n) {
      const Grid g = choose_grid(n, L);
      ASSERT_EQ(g[0] * g[1] * g[2], n) << str(g);
      const double s = surface(g, L);
      for (const Grid& other : factorisations(n)) {
        const double so = surface(other, L);
        EXPECT_GE(so, s * (1 - 1e-12)) << n << " ranks, box " << L[0] << " " << L[1] << " " << L[2] << ": "
                                       << str(other) << " has surface " << so << " < " << s << " of " << str(g);
        if (std::abs(so - s) <= 1e-12 * s) {
          EXPECT_TRUE(other[0] < g[0] || (other[0] == g[0] && other[1] <= g[1]))
              << "tie between " << str(g) << " and " << str(other) << " should go to the larger px, then py";
        }
      }
    }
}

TEST(ChooseGrid, PrimesSplitTheLongestAxis) {
  for (int p = 2; p <= 12; ++p) {
    if (!is_prime(p)) continue;
    EXPECT_EQ(choose_grid(p, {30, 10, 20}), (Grid{p, 1, 1})) << p;
    EXPECT_EQ(choose_grid(p, {10, 30, 20}), (Grid{1, p, 1})) << p;
    EXPECT_EQ(choose_grid(p, {10, 20, 30}), (Grid{1, 1, p})) << p;
    EXPECT_EQ(choose_grid(p, {10.5, 10, 10}), (Grid{p, 1, 1})) << p;
    EXPECT_EQ(choose_grid(p, {10, 10, 10.5}), (Grid{1, 1, p})) << p;
  }
}

TEST(ChooseGrid, MinThicknessExcludesGrids) {
  // 12 ranks on 5 x 8 x 12: the best grid 2x2x3 (2.5 x 4 x 4, surface 36) is thinner than 2.6; the best
  // grid at least 2.6 thick is 1x3x4 (5 x 2.67 x 3, surface 36.3).
  EXPECT_EQ(choose_grid(12, {5, 8, 12}), (Grid{2, 2, 3}));
  EXPECT_EQ(choose_grid(12, {5, 8, 12}, 2.5), (Grid{2, 2, 3}));  // exactly as thick as required: allowed
  EXPECT_EQ(choose_grid(12, {5, 8, 12}, 2.6), (Grid{1, 3, 4}));
  // Cube of 10: 8 ranks fit only as 2x2x2 (5 thick).
  EXPECT_EQ(choose_grid(8, {10, 10, 10}, 5.0), (Grid{2, 2, 2}));
  EXPECT_EQ(choose_grid(8, {10, 10, 10}, 5.0001), (Grid{0, 0, 0}));
  EXPECT_EQ(choose_grid(4, {10, 10, 10}, 6.0), (Grid{0, 0, 0}));
  EXPECT_EQ(choose_grid(1, {10, 10, 2}, 2.8), (Grid{0, 0, 0}));  // even one rank: the box is too thin
  EXPECT_EQ(choose_grid(1, {10, 10, 2}, 2.0), (Grid{1, 1, 1}));
  EXPECT_EQ(choose_grid(3, {10.08, 6.72, 6.72}, 2.8), (Grid{3, 1, 1}));
  EXPECT_EQ(choose_grid(4, {10.08, 6.72, 6.72}, 2.8), (Grid{2, 2, 1}));
  // Brute force: with a thickness limit the choice is the smallest surface among the grids that fit.
  for (const Lengths& L : {Lengths{5, 8, 12}, Lengths{10, 10, 10}, Lengths{40, 10, 10}, Lengths{7.3, 11.1, 5.2}})
    for (int n = 1; n <= 12; ++n)
      for (double t : {0.5, 1.0, 2.0, 2.6, 3.3, 5.0, 8.0}) {
        const Grid g = choose_grid(n, L, t);
        double best = std::numeric_limits<double>::max();
        for (const Grid& o : factorisations(n))
          if (thinnest(o, L) >= t) best = std::min(best, surface(o, L));
        if (best == std::numeric_limits<double>::max()) {
          EXPECT_EQ(g, (Grid{0, 0, 0})) << n << " ranks, thickness " << t;
        } else {
          ASSERT_EQ(g[0] * g[1] * g[2], n);
          EXPECT_GE(thinnest(g, L), t);
          EXPECT_LE(surface(g, L), best * (1 + 1e-12));
        }
      }
}

namespace {

// What one rank knows about its place in the grid, gathered to every rank.
struct RankView {
  Grid coords;
  std::array<std::array<int, 2>, 3> neighbor;
  std::array<std::array<bool, 2>, 3> boundary;
  Box3 sub;
};

std::vector<RankView> gather(const ProcessGrid& g) {
  std::vector<double> mine;
  for (int d = 0; d < 3; ++d) mine.push_back(g.coords()[d]);
  for (int d = 0; d < 3; ++d)
    for (int dir = 0; dir < 2; ++dir) mine.push_back(g.neighbor(d, dir));
  for (int d = 0; d < 3; ++d)
    for (int dir = 0; dir < 2; ++dir) mine.push_back(g.at_boundary(d, dir) ? 1 : 0);
  for (int d = 0; d < 3; ++d) mine.push_back(g.sub_box().lo[d]);
  for (int d = 0; d < 3; ++d) mine.push_back(g.sub_box().hi[d]);
  const int n = static_cast<int>(mine.size());
  std::vector<double> all(static_cast<std::size_t>(n) * spotrun::test::nranks());
  MPI_Allgather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, MPI_COMM_WORLD);
  std::vector<RankView> out(spotrun::test::nranks());
  for (int r = 0; r < spotrun::test::nranks(); ++r) {
    const double* p = &all[static_cast<std::size_t>(r) * n];
    auto& v = out[r];
    for (int d = 0; d < 3; ++d) v.coords[d] = static_cast<int>(p[d]);
    for (int d = 0; d < 3; ++d)
      for (int dir = 0; dir < 2; ++dir) v.neighbor[d][dir] = static_cast<int>(p[3 + 2 * d + dir]);
    for (int d = 0; d < 3; ++d)
      for (int dir = 0; dir < 2; ++dir) v.boundary[d][dir] = p[9 + 2 * d + dir] != 0;
    for (int d = 0; d < 3; ++d) v.sub.lo[d] = p[15 + d];
    for (int d = 0; d < 3; ++d) v.sub.hi[d] = p[18 + d];
  }
  return out;
}

void check_grid(const ProcessGrid& g, const Box3& box, const Grid& dims) {
  const int n = spotrun::test::nranks();
  EXPECT_EQ(g.dims(), dims);
  EXPECT_EQ(g.rank(), spotrun::test::rank());
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(g.global_box().lo[d], box.lo[d]);
    EXPECT_EQ(g.global_box().hi[d], box.hi[d]);
  }
  const auto all = gather(g);
  std::map<Grid, int> rank_at;
  double volume = 0;
  for (int r = 0; r < n; ++r) {
    const auto& v = all[r];
    for (int d = 0; d < 3; ++d) {
      EXPECT_GE(v.coords[d], 0);
      EXPECT_LT(v.coords[d], dims[d]);
    }
    EXPECT_TRUE(rank_at.emplace(v.coords, r).second) << "two ranks at coords " << str(v.coords);
    volume += v.sub.volume();
  }
  ASSERT_EQ(static_cast<int>(rank_at.size()), n);
  EXPECT_NEAR(volume, box.volume(), 1e-12 * box.volume()) << "sub-boxes do not add up to the box";
  for (int r = 0; r < n; ++r) {
    const auto& v = all[r];
    for (int d = 0; d < 3; ++d) {
      const double width = box.length(d) / dims[d];
      EXPECT_NEAR(v.sub.length(d), width, 1e-12 * box.length(d)) << "rank " << r << " dim " << d;
      // Faces: the global bounds exactly at the ends, the neighbour's face exactly inside.
      if (v.coords[d] == 0) {
        EXPECT_EQ(v.sub.lo[d], box.lo[d]) << "rank " << r << " dim " << d;
      }
      if (v.coords[d] == dims[d] - 1) {
        EXPECT_EQ(v.sub.hi[d], box.hi[d]) << "rank " << r << " dim " << d;
      }
      EXPECT_EQ(v.boundary[d][0], v.coords[d] == 0);
      EXPECT_EQ(v.boundary[d][1], v.coords[d] == dims[d] - 1);
      for (int dir = 0; dir < 2; ++dir) {
        Grid c = v.coords;
        c[d] = (c[d] + (dir == 0 ? -1 : 1) + dims[d]) % dims[d];
        const int nb = rank_at.at(c);
        EXPECT_EQ(v.neighbor[d][dir], nb) << "rank " << r << " dim " << d << " dir " << dir;
        EXPECT_EQ(all[nb].neighbor[d][1 - dir], r) << "neighbours are not mutual: " << r << " and " << nb;
        // Shared face: bit-identical, and the other two dimensions coincide.
        if (dir == 1 && v.coords[d] < dims[d] - 1) {
          EXPECT_EQ(v.sub.hi[d], all[nb].sub.lo[d]);
        }
        for (int e = 0; e < 3; ++e)
          if (e != d) {
            EXPECT_EQ(v.sub.lo[e], all[nb].sub.lo[e]);
            EXPECT_EQ(v.sub.hi[e], all[nb].sub.hi[e]);
          }
      }
    }
  }
  // Every point of the box belongs to exactly one half-open sub-box [lo, hi).
  std::vector<std::array<double, 3>> points;
  for (int i = 0; i <= 6; ++i)
    for (int j = 0; j <= 6; ++j)
      for (int k = 0; k <= 6; ++k) {
        std::array<double, 3> p;
        const int ijk[3] = {i, j, k};
        for (int d = 0; d < 3; ++d) p[d] = box.lo[d] + box.length(d) * ijk[d] / 6.0;
        bool inside = true;
        for (int d = 0; d < 3; ++d) inside = inside && p[d] < box.hi[d];
        if (inside) points.push_back(p);
      }
  for (const auto& v : all)  // the exact faces
    points.push_back({v.sub.lo[0], v.sub.lo[1], v.sub.lo[2]});
  for (const auto& p : points) {
    int owners = 0;
    for (const auto& v : all) {
      bool in = true;
      for (int d = 0; d < 3; ++d) in = in && p[d] >= v.sub.lo[d] && p[d] < v.sub.hi[d];
      owners += in;
    }
    EXPECT_EQ(owners, 1) << "point " << p[0] << " " << p[1] << " " << p[2];
  }
}

}  // namespace

TEST(ProcessGrid, EveryFactorisationTilesTheBox) {
  Box3 box;
  box.lo = {-1.5, 2.0, 0.1};
  box.hi = {8.7, 9.3, 4.0};
  for (const Grid& dims : factorisations(spotrun::test::nranks())) {
    SCOPED_TRACE("grid " + str(dims));
    ProcessGrid g(spotrun::test::world(), box, dims);
    check_grid(g, box, dims);
  }
}

TEST(ProcessGrid, DefaultGridIsChooseGrid) {
  Box3 box;
  box.lo = {0, 0, 0};
  box.hi = {10.077577148295044, 10.077577148295044, 10.077577148295044};
  ProcessGrid g(spotrun::test::world(), box);
  const Grid want = choose_grid(spotrun::test::nranks(), {box.length(0), box.length(1), box.length(2)});
  check_grid(g, box, want);
}
