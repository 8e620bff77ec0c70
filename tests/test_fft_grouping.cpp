// How the pruned transforms' rows are grouped into local plans (fft::PlanGrouping) at 1, 2 and 4 ranks,
// slabs and pencils: the FewLaunches grouping that a device build takes gives every stage batches of one
// loop (one cuFFT call each, impl::cufft_launches), where the Exact grouping's two-loop batches cost a
// call per outer iteration; and its transforms, run through the build's backend (FFTW here, on the very
// batches a device build gives cuFFT; cuFFT on a device build), equal the unpruned ones to round-off (forward on the band and zero on the rest of the band's
// columns, backward of a band-limited spectrum). The launch counter (FftTimes::launches) counts what
// the transforms execute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "comm/transport.hpp"
#include "solvers/fft/distributed_fft.hpp"
#include "support/fft_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 4);

using namespace spotrun;
using fft::Decomposition;
using fft::PlanGrouping;

namespace {

using Grid = std::array<int, 3>;

// A deterministic value in [-1, 1) for global point (i, j, k).
double value_at(int i, int j, int k) {
  std::uint64_t z = (static_cast<std::uint64_t>(i) * 2654435761u) ^ (static_cast<std::uint64_t>(j) * 40503u) ^
                    (static_cast<std::uint64_t>(k) * 2246822519u);
  z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
  z ^= z >> 32;
  return static_cast<double>(z % 2000001) / 1000000.0 - 1.0;
}

fft::SpectralBand two_thirds(const Grid& n) {
  fft::SpectralBand b;
  for (int d = 0; d < 3; ++d) b.kmax[d] = (n[d] - 1) / 3;
  return b;
}

fft::FftBatching grouping(PlanGrouping g) {
  fft::FftBatching b;
  b.grouping = g;
  return b;
}

long long launches_of(const std::vector<fft::impl::BatchSpec>& specs) {
  long long n = 0;
  for (const auto& s : specs) n += fft::impl::cufft_launches(s);
  return n;
}

}  // namespace

// The batches themselves: FewLaunches has one call per batch and at most r2c, c2r, one y batch each way
// and two x batches each way; Exact at 48^3 makes dozens of calls. With several fields the calls are at
// most one per field.
TEST(FftGrouping, FewLaunchesBatchesAreOneCallEach) {
  const Grid n = {48, 48, 48};
  const fft::SpectralBand band = two_thirds(n);
  for (auto kind : {Decomposition::Slab, Decomposition::Pencil}) {
    const auto g = test::geometry_if_fits(n, test::nranks(), kind);
    ASSERT_TRUE(g);
    const std::string what = g->describe();
    const auto few = fft::plan_specs(*g, test::rank(), nullptr, &band, 1, PlanGrouping::FewLaunches);
    const auto exact = fft::plan_specs(*g, test::rank(), nullptr, &band, 1, PlanGrouping::Exact);
    EXPECT_LE(few.size(), 8u) << what;
    for (const auto& s : few) EXPECT_EQ(fft::impl::cufft_launches(s), 1) << what << ": a batch of two loops";
    EXPECT_LE(launches_of(few), 8) << what;
    // Exact: the y batch runs once per x plane (slabs) or x row (pencils), the x batches once per kept ky
    // (summed over the ranks: a rank with few kept rows has few calls either way).
    const std::int64_t few_total = test::world().sum(static_cast<std::int64_t>(launches_of(few)));
    const std::int64_t exact_total = test::world().sum(static_cast<std::int64_t>(launches_of(exact)));
    EXPECT_GT(exact_total, 4 * few_total) << what;
    const auto few3 = fft::plan_specs(*g, test::rank(), nullptr, &band, 3, PlanGrouping::FewLaunches);
    for (const auto& s : few3) EXPECT_LE(fft::impl::cufft_launches(s), 3) << what;
    // Auto is Exact on this host build (a device build's is FewLaunches).
    EXPECT_EQ(fft::resolved(PlanGrouping::Auto),
              fft::k_host_accessible ? PlanGrouping::Exact : PlanGrouping::FewLaunches);
    // Without a band the grouping changes nothing.
    const auto whole_few = fft::plan_specs(*g, test::rank(), nullptr, nullptr, 1, PlanGrouping::FewLaunches);
    const auto whole_exact = fft::plan_specs(*g, test::rank(), nullptr, nullptr, 1, PlanGrouping::Exact);
    EXPECT_EQ(whole_few.size(), whole_exact.size()) << what;
    EXPECT_EQ(launches_of(whole_few), launches_of(whole_exact)) << what;
  }
  // For the record: the calls of one forward and one backward field at 512^3 on this rank count.
  const Grid big = {512, 512, 512};
  const fft::SpectralBand big_band = two_thirds(big);
  for (auto kind : {Decomposition::Slab, Decomposition::Pencil}) {
    const auto g = test::geometry_if_fits(big, test::nranks(), kind);
    if (!g) continue;
    const std::int64_t exact = test::world().max(static_cast<std::int64_t>(
        launches_of(fft::plan_specs(*g, test::rank(), nullptr, &big_band, 1, PlanGrouping::Exact))));
    const std::int64_t few = test::world().max(static_cast<std::int64_t>(
        launches_of(fft::plan_specs(*g, test::rank(), nullptr, &big_band, 1, PlanGrouping::FewLaunches))));
    test::report("512^3 " + g->describe() + ", 2/3 band: cuFFT calls of a forward and a backward field, most of any rank: Exact " +
                 std::to_string(exact) + ", FewLaunches " + std::to_string(few));
  }
}

namespace {

struct Compared {
  double forward = 0, backward = 0;  // relative to the unpruned transforms
  bool zeros = true;                 // zero outside the band in the forward's output
  std::int64_t few_launches = 0, exact_launches = 0;  // summed over the ranks
  long long transforms = 0;
};

// The pruned transform in both groupings against the unpruned one, through the build's backend.
Compared compare(const fft::FftGeometry& g, const fft::SpectralBand& band) {
  auto transport = comm::make_transport("auto", test::world());
  fft::DistributedFft full(g, test::world(), *transport, fft::backend::Default{});
  fft::DistributedFft few(g, test::world(), *transport, fft::backend::Default{}, fft::PlanRigor::Estimate, band,
                          grouping(PlanGrouping::FewLaunches));
  fft::DistributedFft exact(g, test::world(), *transport, fft::backend::Default{}, fft::PlanRigor::Estimate, band,
                            grouping(PlanGrouping::Exact));
  const fft::Layout3& rl = full.real_layout();
  const fft::Layout3& sl = full.spectral_layout();
  fft::RealView x("x", full.real_size()), y("y", full.real_size()), yf("yf", full.real_size()),
      ye("ye", full.real_size());
  fft::ComplexView X("X", full.complex_size()), Xf("Xf", full.complex_size()), Xe("Xe", full.complex_size()),
      Xb("Xb", full.complex_size());
  auto hx = Kokkos::create_mirror_view(x);
  for (int i = rl.box.lo[0]; i <= rl.box.hi[0]; ++i)
    for (int j = rl.box.lo[1]; j <= rl.box.hi[1]; ++j)
      for (int k = rl.box.lo[2]; k <= rl.box.hi[2]; ++k) hx(rl.offset(i, j, k)) = value_at(i, j, k);
  Kokkos::deep_copy(x, hx);
  full.forward(x.data(), X.data());
  auto in_band = [&](int i, int j, int k) {
    return band.kept(g.n, 0, i) && band.kept(g.n, 1, j) && band.kept(g.n, 2, k);
  };
  auto hX = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
  auto hXb = Kokkos::create_mirror_view(Xb);
  for (int i = sl.box.lo[0]; i <= sl.box.hi[0]; ++i)
    for (int j = sl.box.lo[1]; j <= sl.box.hi[1]; ++j)
      for (int k = sl.box.lo[2]; k <= sl.box.hi[2]; ++k) {
        const auto m = sl.offset(i, j, k);
        hXb(m) = in_band(i, j, k) ? hX(m) : fft::Complex(0, 0);
      }
  Kokkos::deep_copy(Xb, hXb);
  full.backward(Xb.data(), y.data());
  // Twice, alternating: what one direction leaves in the work arrays is seen by the other.
  for (int round = 0; round < 2; ++round) {
    few.forward(x.data(), Xf.data());
    few.backward(Xb.data(), yf.data());
    exact.forward(x.data(), Xe.data());
    exact.backward(Xb.data(), ye.data());
  }
  Compared c;
  auto hXf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Xf);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  auto hyf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yf);
  double xmax = 0, ferr = 0, ymax = 0, berr = 0;
  for (int i = sl.box.lo[0]; i <= sl.box.hi[0]; ++i)
    for (int j = sl.box.lo[1]; j <= sl.box.hi[1]; ++j)
      for (int k = sl.box.lo[2]; k <= sl.box.hi[2]; ++k) {
        const auto m = sl.offset(i, j, k);
        if (!in_band(i, j, k)) {
          if (hXf(m) != fft::Complex(0, 0)) c.zeros = false;
          continue;
        }
        xmax = std::max(xmax, Kokkos::abs(hX(m)));
        ferr = std::max(ferr, Kokkos::abs(hXf(m) - hX(m)));
      }
  for (std::size_t p = 0; p < full.real_size(); ++p) {
    ymax = std::max(ymax, std::abs(hy(p)));
    berr = std::max(berr, std::abs(hyf(p) - hy(p)));
  }
  c.forward = test::world().max(ferr) / test::world().max(xmax);
  c.backward = test::world().max(berr) / test::world().max(ymax);
  c.zeros = test::all_ranks(c.zeros);
  c.few_launches = test::world().sum(static_cast<std::int64_t>(few.times().launches));
  c.exact_launches = test::world().sum(static_cast<std::int64_t>(exact.times().launches));
  c.transforms = few.times().transforms;
  return c;
}

}  // namespace

// FewLaunches equals the unpruned transform on slabs and pencils, even and odd sizes, with at most 4
// cuFFT calls per transform, where Exact makes many more.
TEST(FftGrouping, FewLaunchesEqualsTheUnprunedTransform) {
  for (const Grid& n : {Grid{24, 20, 18}, Grid{17, 12, 15}}) {
    for (auto kind : {Decomposition::Slab, Decomposition::Pencil}) {
      const auto g = test::geometry_if_fits(n, test::nranks(), kind);
      if (!g) continue;
      const std::string what = std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]) + " " +
                               g->describe();
      const Compared c = compare(*g, two_thirds(n));
      EXPECT_LT(c.forward, 1e-13) << what;
      EXPECT_LT(c.backward, 1e-13) << what;
      EXPECT_TRUE(c.zeros) << what << ": the forward left non-zeros outside the band";
      ASSERT_EQ(c.transforms, 4) << what;
      EXPECT_GT(c.few_launches, 0) << what;
      EXPECT_LE(c.few_launches, 4 * c.transforms * test::nranks()) << what;
      EXPECT_GT(c.exact_launches, 2 * c.few_launches) << what;
    }
  }
}
