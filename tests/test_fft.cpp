// fft::DistributedFft and its parts at 1-4 ranks: geometry (every stage tiles the grid, uneven splits,
// errors for grids too small), reshapes (also from and into larger arrays), and the distributed transform
// against a one-rank FFTW transform and a naive DFT on odd sizes, slabs and pencils; round trips; pruned
// transforms against unpruned ones; no allocation in a transform.
#include <gtest/gtest.h>
#include <fftw3.h>
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "comm/errors.hpp"
#include "comm/test_hooks.hpp"
#include "comm/transport.hpp"
#include "solvers/fft/distributed_fft.hpp"
#include "support/fft_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;
using fft::Decomposition;

namespace {

using Grid = std::array<int, 3>;

// A deterministic value in [-1, 1) for global point (i, j, k): the same on every rank count.
double value_at(int i, int j, int k) {
  std::uint64_t z = (static_cast<std::uint64_t>(i) * 73856093u) ^ (static_cast<std::uint64_t>(j) * 19349663u) ^
                    (static_cast<std::uint64_t>(k) * 83492791u);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 4503599627370496.0 - 1.0;
}

std::string str(const Grid& n) {
  return std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]);
}

// Every box of a stage: non-empty, disjoint, and together exactly the grid.
void expect_tiles(const std::vector<fft::Layout3>& ls, const Grid& n, const std::string& what) {
  std::size_t total = 0;
  for (std::size_t a = 0; a < ls.size(); ++a) {
    EXPECT_FALSE(ls[a].box.empty()) << what << ": rank " << a << " is empty";
    total += ls[a].count();
    for (int d = 0; d < 3; ++d) {
      EXPECT_GE(ls[a].box.lo[d], 0) << what;
      EXPECT_LT(ls[a].box.hi[d], n[d]) << what;
    }
    for (std::size_t b = a + 1; b < ls.size(); ++b)
      EXPECT_TRUE(fft::collide(ls[a].box, ls[b].box).empty()) << what << ": ranks " << a << " and " << b << " overlap";
  }
  EXPECT_EQ(total, static_cast<std::size_t>(n[0]) * n[1] * n[2]) << what;
}

// The full r2c transform of the whole grid with FFTW on this rank: X[(i * ny + j) * nzc + k].
std::vector<std::complex<double>> one_rank_transform(const Grid& n) {
  const int nzc = n[2] / 2 + 1;
  std::vector<double> in(static_cast<std::size_t>(n[0]) * n[1] * n[2]);
  for (int i = 0; i < n[0]; ++i)
    for (int j = 0; j < n[1]; ++j)
      for (int k = 0; k < n[2]; ++k) in[(static_cast<std::size_t>(i) * n[1] + j) * n[2] + k] = value_at(i, j, k);
  std::vector<std::complex<double>> out(static_cast<std::size_t>(n[0]) * n[1] * nzc);
  fftw_plan p = fftw_plan_dft_r2c_3d(n[0], n[1], n[2], in.data(), reinterpret_cast<fftw_complex*>(out.data()),
                                     FFTW_ESTIMATE);
  EXPECT_NE(p, nullptr);
  fftw_execute(p);
  fftw_destroy_plan(p);
  return out;
}

struct Errors {
  double transform = 0;   // max |X - X_ref| / max |X_ref|
  double round_trip = 0;  // max |backward(forward(x)) / N - x|
  bool input_kept = true;
};

// Runs the distributed transform of value_at on world and compares it with `ref`.
Errors check_transform(const fft::FftGeometry& g, const std::vector<std::complex<double>>& ref) {
  auto transport = comm::make_transport("auto", test::world());
  fft::DistributedFft f(g, test::world(), *transport, fft::backend::Default{});
  const fft::Layout3& rl = f.real_layout();
  const fft::Layout3& sl = f.spectral_layout();
  fft::RealView x("x", f.real_size()), y("y", f.real_size());
  fft::ComplexView X("X", f.complex_size()), X2("X2", f.complex_size());
  auto hx = Kokkos::create_mirror_view(x);
  for (int i = rl.box.lo[0]; i <= rl.box.hi[0]; ++i)
    for (int j = rl.box.lo[1]; j <= rl.box.hi[1]; ++j)
      for (int k = rl.box.lo[2]; k <= rl.box.hi[2]; ++k) hx(rl.offset(i, j, k)) = value_at(i, j, k);
  Kokkos::deep_copy(x, hx);
  f.forward(x.data(), X.data());
  Kokkos::deep_copy(X2, X);
  f.backward(X.data(), y.data());

  Errors e;
  auto hX = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
  auto hX2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X2);
  auto hx_after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  const int ny = g.n[1], nzc = g.nc[2];
  double ref_max = 0;
  for (const auto& v : ref) ref_max = std::max(ref_max, std::abs(v));
  double err = 0;
  for (int i = sl.box.lo[0]; i <= sl.box.hi[0]; ++i)
    for (int j = sl.box.lo[1]; j <= sl.box.hi[1]; ++j)
      for (int k = sl.box.lo[2]; k <= sl.box.hi[2]; ++k) {
        const auto m = sl.offset(i, j, k);
        const std::complex<double> got(hX(m).real(), hX(m).imag());
        err = std::max(err, std::abs(got - ref[(static_cast<std::size_t>(i) * ny + j) * nzc + k]));
        if (hX(m) != hX2(m)) e.input_kept = false;
      }
  e.transform = test::world().max(err / ref_max);
  double rt = 0;
  for (std::size_t p = 0; p < f.real_size(); ++p) {
    rt = std::max(rt, std::abs(hy(p) * f.scale() - hx(p)));
    if (hx_after(p) != hx(p)) e.input_kept = false;
  }
  e.round_trip = test::world().max(rt);
  e.input_kept = test::all_ranks(e.input_kept);
  return e;
}

}  // namespace

TEST(FftGeometry, EveryStageTilesTheGridOnUnevenSplits) {
  const std::vector<Grid> sizes = {{24, 18, 15}, {9, 7, 5}, {16, 16, 16}, {5, 13, 4}, {41, 17, 15}};
  for (const auto& n : sizes)
    for (int P = 1; P <= 12; ++P)
      for (auto kind : {Decomposition::Slab, Decomposition::Pencil}) {
        const auto fits = test::geometry_if_fits(n, P, kind);
        if (!fits) continue;  // too small for P ranks: the error is tested below
        const fft::FftGeometry& g = *fits;
        const std::string what = str(n) + " over " + std::to_string(P) + " ranks, " + g.describe();
        EXPECT_EQ(g.grid[0] * g.grid[1], P) << what;
        expect_tiles(g.real, n, what + ", real");
        expect_tiles(g.stage_a, g.nc, what + ", stage a");
        if (kind == Decomposition::Pencil) expect_tiles(g.stage_b, g.nc, what + ", stage b");
        expect_tiles(g.spectral, g.nc, what + ", spectral");
        for (int r = 0; r < P; ++r) {
          EXPECT_EQ(g.real[r].box.extent(2), n[2]) << what << ": z is whole in the real layout";
          EXPECT_EQ(g.spectral[r].box.extent(0), n[0]) << what << ": kx is whole in the spectral layout";
          EXPECT_EQ(g.spectral[r].order[2], 0) << what << ": kx is the fastest axis";
        }
      }
}

TEST(FftGeometry, UnevenSplitsDifferByAtMostOnePlane) {
  const auto g = fft::make_fft_geometry({24, 18, 15}, 7, Decomposition::Slab);
  int lo = 1 << 30, hi = 0;
  for (const auto& l : g.real) {
    lo = std::min(lo, l.box.extent(0));
    hi = std::max(hi, l.box.extent(0));
  }
  EXPECT_EQ(lo, 3);
  EXPECT_EQ(hi, 4);
}

TEST(FftGeometry, AutoTakesSlabsWhileTheyFitThenPencils) {
  EXPECT_EQ(fft::make_fft_geometry({16, 16, 16}, 4, Decomposition::Auto).kind, Decomposition::Slab);
  const auto g = fft::make_fft_geometry({4, 4, 16}, 8, Decomposition::Auto);
  EXPECT_EQ(g.kind, Decomposition::Pencil);
  EXPECT_EQ(g.grid[0] * g.grid[1], 8);
  const auto sq = fft::make_fft_geometry({16, 16, 16}, 16, Decomposition::Pencil);
  EXPECT_EQ(sq.grid[0], 4);
  EXPECT_EQ(sq.grid[1], 4);
}

TEST(FftGeometry, GridsTooSmallForTheRankCountAreInputErrors) {
  EXPECT_THROW(fft::make_fft_geometry({4, 4, 4}, 5, Decomposition::Slab), InputError);
  EXPECT_THROW(fft::make_fft_geometry({4, 4, 4}, 64, Decomposition::Auto), InputError);
  // 4 x 4 x 4: nz/2 + 1 = 3 complex z-planes cannot be split over p2 = 4 ranks, x over p1 = 4 can.
  EXPECT_THROW(fft::make_fft_geometry({4, 4, 4}, 4, Decomposition::Pencil, {1, 4}), InputError);
  EXPECT_NO_THROW(fft::make_fft_geometry({4, 4, 4}, 4, Decomposition::Pencil, {4, 1}));
  EXPECT_THROW(fft::make_fft_geometry({4, 4, 4}, 4, Decomposition::Pencil, {3, 1}), InputError);  // 3 != 4 ranks
  try {
    fft::make_fft_geometry({4, 4, 4}, 5, Decomposition::Slab);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("5 ranks"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fft::parse_decomposition("cubes"), InputError);
}

TEST(Reshape, MovesEveryElementBetweenLayoutsExactly) {
  const Grid n = {13, 7, 6};
  const int P = test::nranks(), r = test::rank();
  auto transport = comm::make_transport("auto", test::world());
  const auto g = fft::make_fft_geometry(n, P, Decomposition::Pencil);
  const auto planes = fft::x_block_layouts(n, P);
  fft::Reshape<double> there(fft::make_reshape_plan(g.real, planes, r), *transport);
  fft::Reshape<double> back(fft::make_reshape_plan(planes, g.real, r), *transport);
  const auto& rl = g.real[r];
  fft::RealView a("a", rl.count()), b("b", planes[r].count()), c("c", rl.count());
  auto ha = Kokkos::create_mirror_view(a);
  for (int i = rl.box.lo[0]; i <= rl.box.hi[0]; ++i)
    for (int j = rl.box.lo[1]; j <= rl.box.hi[1]; ++j)
      for (int k = rl.box.lo[2]; k <= rl.box.hi[2]; ++k) ha(rl.offset(i, j, k)) = value_at(i, j, k);
  Kokkos::deep_copy(a, ha);
  there.execute(a.data(), b.data());
  back.execute(b.data(), c.data());
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  auto hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
  const auto& pl = planes[r];
  long long wrong = 0;
  for (int i = pl.box.lo[0]; i <= pl.box.hi[0]; ++i)
    for (int j = 0; j < n[1]; ++j)
      for (int k = 0; k < n[2]; ++k) wrong += hb(pl.offset(i, j, k)) != value_at(i, j, k);
  for (std::size_t p = 0; p < rl.count(); ++p) wrong += hc(p) != ha(p);
  EXPECT_EQ(test::world().sum(static_cast<std::int64_t>(wrong)), 0);
}

namespace {

// A layout of an array around `data`: its box grown by lo[d] cells below and hi[d] above along axis d.
fft::Layout3 grown(const fft::Layout3& data, const Grid& lo, const Grid& hi) {
  fft::Layout3 a = data;
  for (int d = 0; d < 3; ++d) {
    a.box.lo[d] -= lo[d];
    a.box.hi[d] += hi[d];
  }
  return a;
}

// `count` fields of layout `l` at distance `stride`: value_at(i, j, k) + f in the cells of `data`, `fill`
// in the others.
fft::RealView fields_in(const fft::Layout3& l, const fft::Box3i& data, int count, std::size_t stride, double fill) {
  fft::RealView v("fields", static_cast<std::size_t>(count) * stride);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t p = 0; p < h.extent(0); ++p) h(p) = fill;
  for (int f = 0; f < count; ++f)
    for (int i = data.lo[0]; i <= data.hi[0]; ++i)
      for (int j = data.lo[1]; j <= data.hi[1]; ++j)
        for (int k = data.lo[2]; k <= data.hi[2]; ++k)
          h(f * stride + l.offset(i, j, k)) = value_at(i, j, k) + f;
  Kokkos::deep_copy(v, h);
  return v;
}

// Elements of a and b (same length) that differ in bits.
long long differing(const fft::RealView& a, const fft::RealView& b) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  long long wrong = a.extent(0) != b.extent(0);
  for (std::size_t p = 0; p < std::min(a.extent(0), b.extent(0)); ++p)
    wrong += std::memcmp(&ha(p), &hb(p), sizeof(double)) != 0;
  return wrong;
}

}  // namespace

// A reshape whose input, output or both lie inside larger arrays (PPPM's bricks around their owned cells,
// fft::within_arrays) moves exactly what the dense reshape moves, and leaves the arrays' other cells alone:
// one array and three (execute_many), pencils to x planes and back, the own block copied or sent to
// itself (route_self), on every rank count.
TEST(Reshape, ReadsAndWritesInsideLargerArrays) {
  const Grid n = {13, 7, 6};
  const int P = test::nranks(), r = test::rank();
  const auto g = fft::make_fft_geometry(n, P, Decomposition::Pencil);
  const auto planes = fft::x_block_layouts(n, P);
  const fft::Layout3 pencil = g.real[r], plane = planes[r];
  // Arrays with cells on every side (unequal, the pencil's below zero), and one the size of the plane.
  const fft::Layout3 pencil_array = grown(pencil, {2, 1, 3}, {1, 2, 2});
  const fft::Layout3 plane_array = grown(plane, {1, 0, 2}, {3, 1, 0});
  const double fill = 7.5;  // outside [-1, 4): no value moved
  const std::size_t ps = pencil.count() + 5, pas = pencil_array.count() + 3, ls = plane.count() + 1,
                    las = plane_array.count() + 2;
  for (int variant = 0; variant < 4; ++variant) {
    const int count = variant % 2 ? 3 : 1;
    const bool route_self = variant >= 2;
    SCOPED_TRACE("count " + std::to_string(count) + (route_self ? ", own block through the transport" : ""));
    comm::TransportOptions options;
    options.kind = "auto";
    options.route_self = route_self;
    auto transport = comm::make_transport(options, test::world());
    // Dense: pencils -> planes -> pencils.
    fft::Reshape<double> there(fft::make_reshape_plan(g.real, planes, r), *transport, "there", count);
    fft::Reshape<double> back(fft::make_reshape_plan(planes, g.real, r), *transport, "back", count);
    const fft::RealView a = fields_in(pencil, pencil.box, count, ps, fill);
    fft::RealView b("b", count * ls), c("c", count * ps);
    Kokkos::deep_copy(b, fill);
    Kokkos::deep_copy(c, fill);
    auto run = [&](fft::Reshape<double>& rs, const fft::RealView& in, std::size_t is, const fft::RealView& out,
                   std::size_t os) {
      const double* ip[3] = {};
      double* op[3] = {};
      for (int f = 0; f < count; ++f) {
        ip[f] = in.data() + f * is;
        op[f] = out.data() + f * os;
      }
      rs.execute_many(count, ip, op);
    };
    run(there, a, ps, b, ls);
    run(back, b, ls, c, ps);
    // Inside arrays: the input of `there` and the output of `back` (the bricks' way), then both sides.
    fft::Reshape<double> there_in(
        fft::within_arrays(fft::make_reshape_plan(g.real, planes, r), pencil_array, {}), *transport, "there_in", count);
    fft::Reshape<double> back_out(
        fft::within_arrays(fft::make_reshape_plan(planes, g.real, r), {}, pencil_array), *transport, "back_out", count);
    fft::Reshape<double> there_both(fft::within_arrays(fft::make_reshape_plan(g.real, planes, r), pencil_array,
                                                       plane_array),
                                    *transport, "there_both", count);
    fft::Reshape<double> back_both(fft::within_arrays(fft::make_reshape_plan(planes, g.real, r), plane_array,
                                                      pencil_array),
                                   *transport, "back_both", count);
    const fft::RealView a_in = fields_in(pencil_array, pencil.box, count, pas, fill);
    fft::RealView b1("b1", count * ls), c1("c1", count * pas), b2("b2", count * las), c2("c2", count * pas);
    for (const auto& v : {b1, c1, b2, c2}) Kokkos::deep_copy(v, fill);
    run(there_in, a_in, pas, b1, ls);
    run(back_out, b, ls, c1, pas);
    run(there_both, a_in, pas, b2, las);
    run(back_both, b2, las, c2, pas);
    long long wrong = differing(b1, b);
    wrong += differing(c1, a_in);  // the data cells as the input's, the others left at `fill`
    wrong += differing(c2, a_in);
    wrong += differing(b2, fields_in(plane_array, plane.box, count, las, fill));
    wrong += differing(c, a);
    EXPECT_EQ(test::world().sum(static_cast<std::int64_t>(wrong)), 0);
  }
  // An array that does not hold its data box, or is stored in another order, is refused.
  const auto plan = fft::make_reshape_plan(g.real, planes, r);
  fft::Layout3 small = pencil_array;
  small.box.hi[1] = pencil.box.hi[1] - 1;
  EXPECT_THROW(fft::within_arrays(plan, small, {}), std::invalid_argument);
  fft::Layout3 turned = plane_array;
  turned.order = {2, 1, 0};
  EXPECT_THROW(fft::within_arrays(plan, {}, turned), std::invalid_argument);
}

TEST(Reshape, PlanRejectsLayoutsThatDoNotTile) {
  std::vector<fft::Layout3> a(2), b(2);
  a[0].box = {{0, 0, 0}, {1, 3, 3}};
  a[1].box = {{2, 0, 0}, {3, 3, 3}};
  b[0].box = {{0, 0, 0}, {2, 3, 3}};
  b[1].box = {{2, 0, 0}, {3, 3, 3}};  // overlaps b[0]
  EXPECT_THROW(fft::make_reshape_plan(a, b, 0), std::invalid_argument);
}

// The distributed transform equals the one-rank FFTW transform of the same data, for odd sizes, uneven
// splits, slabs and pencils (the chosen grid and, where it fits, the transposed grids 1 x P and P x 1).
TEST(DistributedFft, EqualsOneRankTransformOnOddSizes) {
  const int P = test::nranks();
  const std::vector<Grid> sizes = {{24, 18, 15}, {9, 7, 5}, {16, 12, 10}};
  int cases = 0;
  for (const auto& n : sizes) {
    const auto ref = one_rank_transform(n);
    std::vector<std::pair<Decomposition, std::array<int, 2>>> variants = {
        {Decomposition::Slab, {0, 0}}, {Decomposition::Pencil, {0, 0}}, {Decomposition::Pencil, {1, P}},
        {Decomposition::Pencil, {P, 1}}};
    for (const auto& [kind, grid] : variants) {
      const auto fits = test::geometry_if_fits(n, P, kind, grid);
      if (!fits) {
        EXPECT_NE(grid[0], 0) << "the default " << fft::to_string(kind) << " decomposition of " << str(n)
                              << " must fit " << P << " ranks";
        continue;
      }
      const fft::FftGeometry& g = *fits;
      const Errors e = check_transform(g, ref);
      const std::string what = str(n) + " " + g.describe();
      EXPECT_LT(e.transform, 1e-13) << what;
      EXPECT_LT(e.round_trip, 1e-12) << what;
      EXPECT_TRUE(e.input_kept) << what << ": forward() or backward() changed its input";
      test::report("fft " + what + ": transform error " + test::sci(e.transform) + ", round trip " +
                   test::sci(e.round_trip));
      ++cases;
    }
  }
  EXPECT_GE(cases, 6);
}

// An oracle independent of FFTW: the naive DFT X(k) = sum_x x exp(-2 pi i k.x / n).
TEST(DistributedFft, MatchesNaiveDftAndItsSignConvention) {
  const Grid n = {5, 4, 6};
  const int nzc = n[2] / 2 + 1;
  std::vector<std::complex<double>> ref(static_cast<std::size_t>(n[0]) * n[1] * nzc);
  const double two_pi = 6.283185307179586;
  for (int a = 0; a < n[0]; ++a)
    for (int b = 0; b < n[1]; ++b)
      for (int c = 0; c < nzc; ++c) {
        std::complex<double> s = 0;
        for (int i = 0; i < n[0]; ++i)
          for (int j = 0; j < n[1]; ++j)
            for (int k = 0; k < n[2]; ++k)
              s += value_at(i, j, k) *
                   std::polar(1.0, -two_pi * (double(a) * i / n[0] + double(b) * j / n[1] + double(c) * k / n[2]));
        ref[(static_cast<std::size_t>(a) * n[1] + b) * nzc + c] = s;
      }
  for (auto kind : {Decomposition::Slab, Decomposition::Pencil}) {
    const auto g = fft::make_fft_geometry(n, test::nranks(), kind);
    const Errors e = check_transform(g, ref);
    EXPECT_LT(e.transform, 1e-13) << g.describe();
  }
}

namespace {
long long g_allocations = 0;
void count_allocation(const Kokkos::Tools::SpaceHandle, const char*, const void*, const std::uint64_t) {
  ++g_allocations;
}
}  // namespace

// Plans, work arrays and buffers are made once: forward() and backward() allocate no Kokkos memory.
TEST(DistributedFft, TransformsAllocateNothing) {
  auto transport = comm::make_transport("auto", test::world());
  const auto g = fft::make_fft_geometry({12, 10, 9}, test::nranks(), Decomposition::Pencil);
  fft::DistributedFft f(g, test::world(), *transport, fft::backend::Default{});
  fft::RealView x("x", f.real_size());
  fft::ComplexView X("X", f.complex_size());
  Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
  g_allocations = 0;
  { fft::RealView probe("probe", 8); }  // the hook works: this allocation is seen
  const long long probe = g_allocations;
  g_allocations = 0;
  for (int i = 0; i < 3; ++i) {
    f.forward(x.data(), X.data());
    f.backward(X.data(), x.data());
  }
  const long long during = g_allocations;
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  EXPECT_EQ(probe, 1) << "the allocation hook did not fire: the test cannot see allocations";
  EXPECT_EQ(during, 0);
  EXPECT_EQ(f.times().transforms, 6);
}

// The same for pruned transforms, on pencils and slabs (one rank: the zeroing of the gather array).
TEST(DistributedFft, PrunedTransformsAllocateNothing) {
  auto transport = comm::make_transport("auto", test::world());
  const fft::SpectralBand band{{3, 3, 2}};
  std::vector<std::unique_ptr<fft::DistributedFft>> fs;
  for (auto kind : {Decomposition::Pencil, Decomposition::Slab})
    fs.push_back(std::make_unique<fft::DistributedFft>(fft::make_fft_geometry({12, 10, 9}, test::nranks(), kind),
                                                       test::world(), *transport, fft::backend::Default{},
                                                       fft::PlanRigor::Estimate, band));
  std::vector<fft::RealView> xs;
  std::vector<fft::ComplexView> Xs;
  for (const auto& f : fs) {
    xs.emplace_back("x", f->real_size());
    Xs.emplace_back("X", f->complex_size());
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
  g_allocations = 0;
  { fft::RealView probe("probe", 8); }
  const long long probe = g_allocations;
  g_allocations = 0;
  for (int i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < fs.size(); ++k) {
      fs[k]->forward(xs[k].data(), Xs[k].data());
      fs[k]->backward(Xs[k].data(), xs[k].data());
    }
  const long long during = g_allocations;
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  EXPECT_EQ(probe, 1) << "the allocation hook did not fire: the test cannot see allocations";
  EXPECT_EQ(during, 0);
  for (const auto& f : fs) EXPECT_EQ(f->times().transforms, 6);
}

namespace {

struct PrunedErrors {
  double forward = 0;   // max |X_pruned - X| / max |X| on the band's modes
  double backward = 0;  // max |y_pruned - y| / max |y| of a band-limited field
  bool zeros = true;    // the pruned forward leaves exact zeros outside the band
  bool input_kept = true;
};

// The pruned transform against the unpruned one of the same geometry: forward on the band (and zeros
// elsewhere), backward of the band-limited spectrum. Each pruned transform runs twice, alternating, so
// that what one direction leaves in the work arrays is seen by the other.
PrunedErrors check_pruned(const fft::FftGeometry& g, const fft::SpectralBand& band) {
  auto transport = comm::make_transport("auto", test::world());
  fft::DistributedFft full(g, test::world(), *transport, fft::backend::Default{});
  fft::DistributedFft pruned(g, test::world(), *transport, fft::backend::Default{}, fft::PlanRigor::Estimate, band);
  const fft::Layout3& rl = full.real_layout();
  const fft::Layout3& sl = full.spectral_layout();
  fft::RealView x("x", full.real_size()), y("y", full.real_size()), yp("yp", full.real_size());
  fft::ComplexView X("X", full.complex_size()), Xp("Xp", full.complex_size()), Xb("Xb", full.complex_size());
  auto hx = Kokkos::create_mirror_view(x);
  for (int i = rl.box.lo[0]; i <= rl.box.hi[0]; ++i)
    for (int j = rl.box.lo[1]; j <= rl.box.hi[1]; ++j)
      for (int k = rl.box.lo[2]; k <= rl.box.hi[2]; ++k) hx(rl.offset(i, j, k)) = value_at(i, j, k);
  Kokkos::deep_copy(x, hx);
  full.forward(x.data(), X.data());
  // The band-limited spectrum: X on the band, zero elsewhere.
  auto hX = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
  auto hXb = Kokkos::create_mirror_view(Xb);
  auto in_band = [&](int i, int j, int k) {
    return band.kept(g.n, 0, i) && band.kept(g.n, 1, j) && band.kept(g.n, 2, k);
  };
  for (int i = sl.box.lo[0]; i <= sl.box.hi[0]; ++i)
    for (int j = sl.box.lo[1]; j <= sl.box.hi[1]; ++j)
      for (int k = sl.box.lo[2]; k <= sl.box.hi[2]; ++k) {
        const auto m = sl.offset(i, j, k);
        hXb(m) = in_band(i, j, k) ? hX(m) : fft::Complex(0, 0);
      }
  Kokkos::deep_copy(Xb, hXb);
  full.backward(Xb.data(), y.data());
  for (int round = 0; round < 2; ++round) {
    pruned.forward(x.data(), Xp.data());
    pruned.backward(Xb.data(), yp.data());
  }

  PrunedErrors e;
  auto hXp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Xp);
  auto hXb_after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Xb);
  auto hx_after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  auto hyp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yp);
  double xmax = 0, ferr = 0, ymax = 0, berr = 0;
  for (int i = sl.box.lo[0]; i <= sl.box.hi[0]; ++i)
    for (int j = sl.box.lo[1]; j <= sl.box.hi[1]; ++j)
      for (int k = sl.box.lo[2]; k <= sl.box.hi[2]; ++k) {
        const auto m = sl.offset(i, j, k);
        if (hXb_after(m) != hXb(m)) e.input_kept = false;
        if (!in_band(i, j, k)) {
          if (hXp(m) != fft::Complex(0, 0)) e.zeros = false;
          continue;
        }
        xmax = std::max(xmax, Kokkos::abs(hX(m)));
        ferr = std::max(ferr, Kokkos::abs(hXp(m) - hX(m)));
      }
  for (std::size_t p = 0; p < full.real_size(); ++p) {
    ymax = std::max(ymax, std::abs(hy(p)));
    berr = std::max(berr, std::abs(hyp(p) - hy(p)));
    if (hx_after(p) != hx(p)) e.input_kept = false;
  }
  e.forward = test::world().max(ferr) / test::world().max(xmax);
  e.backward = test::world().max(berr) / test::world().max(ymax);
  e.zeros = test::all_ranks(e.zeros);
  e.input_kept = test::all_ranks(e.input_kept);
  return e;
}

}  // namespace

// Pruned transforms (the rows a band zeroes are skipped) equal the unpruned ones to round-off, on slabs
// and pencils, odd and even sizes, the 2/3 band and the band without the Nyquist modes.
TEST(DistributedFft, PrunedTransformsEqualUnprunedOnes) {
  const int P = test::nranks();
  const std::vector<Grid> sizes = {{12, 10, 9}, {9, 7, 11}, {16, 16, 16}, {13, 12, 8}};
  int cases = 0;
  for (const auto& n : sizes) {
    std::vector<fft::SpectralBand> bands(2);
    for (int d = 0; d < 3; ++d) {
      bands[0].kmax[d] = (n[d] - 1) / 3;
      bands[1].kmax[d] = (n[d] - 1) / 2;
    }
    for (auto kind : {Decomposition::Slab, Decomposition::Pencil})
      for (const auto& band : bands) {
        const auto fits = test::geometry_if_fits(n, P, kind);
        if (!fits) continue;
        const fft::FftGeometry& g = *fits;
        const PrunedErrors e = check_pruned(g, band);
        const std::string what = str(n) + " " + g.describe() + " kmax " + std::to_string(band.kmax[0]) + "," +
                                 std::to_string(band.kmax[1]) + "," + std::to_string(band.kmax[2]);
        EXPECT_LT(e.forward, 1e-13) << what;
        EXPECT_LT(e.backward, 1e-13) << what;
        EXPECT_TRUE(e.zeros) << what << ": the pruned forward left non-zeros outside the band";
        EXPECT_TRUE(e.input_kept) << what << ": a pruned transform changed its input";
        test::report("pruned fft " + what + ": forward " + test::sci(e.forward) + ", backward " +
                     test::sci(e.backward));
        ++cases;
      }
  }
  EXPECT_GE(cases, 8);
}

TEST(DistributedFft, BandOutsideTheGridIsRefused) {
  auto transport = comm::make_transport("auto", test::world());
  const auto g = fft::make_fft_geometry({8, 8, 8}, test::nranks(), Decomposition::Auto);
  fft::SpectralBand band;
  band.kmax = {2, 4, 2};  // 4 > (8 - 1) / 2: would keep the Nyquist index
  EXPECT_THROW(fft::DistributedFft(g, test::world(), *transport, fft::backend::Default{}, fft::PlanRigor::Estimate, band),
               std::invalid_argument);
  const auto runs = fft::kept_runs(fft::SpectralBand{{2, 2, 2}}, {8, 8, 8}, 1, 1, 6);
  EXPECT_EQ(runs[0].first, 0);  // global 1..2
  EXPECT_EQ(runs[0].count, 2);
  EXPECT_EQ(runs[1].first, 5);  // global 6
  EXPECT_EQ(runs[1].count, 1);
}

// The build's default backend is the one its memory needs (FFTW on a host build, cuFFT on a device build),
// and FFTW named outright is refused under the device build's rules (comm::device_rules(): on a device
// build by the memory check, on a host build by the test hook) while the default backend is not.
TEST(DistributedFft, DeviceRulesRefuseFftwNamedOutrightNotTheDefault) {
  auto transport = comm::make_transport("auto", test::world());
  const auto g = fft::make_fft_geometry({8, 8, 8}, test::nranks(), Decomposition::Auto);
  fft::DistributedFft chosen(g, test::world(), *transport, fft::backend::Default{});
  EXPECT_EQ(chosen.backend_name(), fft::k_host_accessible ? "fftw" : "cufft");
  const comm::TestHooks before = comm::test_hooks();
  for (const bool rules : {false, true}) {
    comm::TestHooks h = before;
    if (rules)
      h.device_rules = [] { return true; };
    else
      h.device_rules = nullptr;
    comm::set_test_hooks(h);
    const bool refused = rules || !fft::k_host_accessible;
    if (refused)
      EXPECT_THROW(fft::DistributedFft(g, test::world(), *transport, fft::backend::Fftw{}), InputError) << rules;
    else
      EXPECT_NO_THROW(fft::DistributedFft(g, test::world(), *transport, fft::backend::Fftw{}));
    EXPECT_NO_THROW(fft::DistributedFft(g, test::world(), *transport, fft::backend::Default{})) << rules;
  }
  comm::set_test_hooks(before);
}

// The cuFFT backend: in this build either not compiled in or (host memory space) refused with an
// InputError on every rank. SPOTRUN_REQUIRE_GPU=1 turns the missing GPU path into a failure.
TEST(DistributedFft, CufftBackendIsRefusedCleanlyWithoutADevice) {
  auto transport = comm::make_transport("auto", test::world());
  const auto g = fft::make_fft_geometry({8, 8, 8}, test::nranks(), Decomposition::Auto);
  if (fft::k_host_accessible) {
    EXPECT_THROW(fft::DistributedFft(g, test::world(), *transport, fft::backend::Cufft{}), InputError);
    const char* require = std::getenv("SPOTRUN_REQUIRE_GPU");
    if (require && std::string(require) == "1") ADD_FAILURE() << "SPOTRUN_REQUIRE_GPU=1 but this build runs on the host";
    test::report(std::string("cuFFT backend ") + (fft::cufft_compiled() ? "compiled in" : "not compiled in") +
                 "; host build: GPU transform not tested");
  } else {
    fft::DistributedFft f(g, test::world(), *transport, fft::backend::Cufft{});
    EXPECT_EQ(f.backend_name(), "cufft");
  }
}
