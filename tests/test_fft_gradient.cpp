// The spectral gradient of a distributed FFT (DistributedFft::backward_gradient) at 1-4 ranks, on slabs and
// pencils, odd and even sizes, with the rank's own blocks through the transport or not (so that one rank
// takes the plane by plane path, the batched path, or three transforms):
//   - it equals three backward transforms of i k_d X, the products made here from the spectral layout, to
//     round-off, preserves its input and counts three transforms;
//   - on a trigonometric field it is the analytic gradient to round-off, and a Nyquist mode (derivative
//     zero by the rule of derivative.hpp) adds nothing;
//   - its report of final planes (`ready`) comes in increasing order up to every plane of the rank's real
//     block, each plane reported then equal bit for bit to the end's; plane by plane where the path makes the
//     planes one by one, else once at the end;
//   - pruned transforms, too small a batch and the input as scratch are refused on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "solvers/fft/distributed_fft.hpp"
#include "support/fft_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;
using fft::Decomposition;

namespace {

using Grid = std::array<int, 3>;
constexpr double k_two_pi = 6.283185307179586;

std::string str(const Grid& n) {
  return std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]);
}

// The signed wavenumber of index i along an axis of n points whose derivative a real field holds: 0 on the
// Nyquist index of an even n.
double wavenumber(int i, int n) {
  if (n % 2 == 0 && i == n / 2) return 0.0;
  return i <= n / 2 ? i : i - n;
}

template <class T>
std::vector<T> host_of(const Kokkos::View<T*, fft::MemSpace>& v, std::size_t size) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<T>(h.data(), h.data() + size);
}

template <class T>
void set(const Kokkos::View<T*, fft::MemSpace>& v, const std::vector<T>& values) {
  Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(values.data(), values.size());
  Kokkos::deep_copy(Kokkos::subview(v, std::make_pair<std::size_t, std::size_t>(0, values.size())), h);
}

// A transport forwarding to MPI that routes, where asked, the rank's own blocks through itself (so that one
// rank takes the batched path).
class SelfRouting final : public comm::Transport {
 public:
  explicit SelfRouting(bool route_self)
      : m_inner(comm::make_transport("auto", test::world())), m_route_self(route_self) {}
  bool route_self() const override { return m_route_self; }
  std::string name() const override { return m_inner->name(); }
  std::string description() const override { return m_inner->description(); }
  comm::Accepts accepts() const override { return m_inner->accepts(); }
  void exchange(const comm::Batch& batch, void* stream) override { m_inner->exchange(batch, stream); }

 private:
  std::unique_ptr<comm::Transport> m_inner;
  bool m_route_self;
};

fft::FftBatching batch_of_three(const fft::DistributedFft& plain) {
  fft::FftBatching b;
  b.max_batch = 3;
  b.real_distance = fft::padded_field(plain.real_size());
  b.complex_distance = fft::padded_field(plain.complex_size());
  return b;
}

// A smooth field: sin(2 pi (a i / nx + b j / ny + c k / nz) + phase) summed over a few modes, plus a Nyquist
// mode (-1)^i along each even axis, on this rank's real block; and its gradient, unit_k = 2 pi / L.
struct Trig {
  static constexpr int k_modes = 3;
  int mode[k_modes][3] = {{1, 0, 0}, {2, -1, 3}, {0, 2, -1}};
  double amp[k_modes] = {1.0, 0.5, -0.75}, phase[k_modes] = {0.3, -1.1, 2.0};
  std::array<double, 3> length{1.5, 2.0, 0.8};

  double value(const Grid& n, int i, int j, int k, int grad) const {
    const int ijk[3] = {i, j, k};
    double v = 0;
    for (int m = 0; m < k_modes; ++m) {
      double arg = phase[m];
      for (int d = 0; d < 3; ++d) arg += k_two_pi * mode[m][d] * ijk[d] / n[d];
      v += grad < 0 ? amp[m] * std::sin(arg) : amp[m] * std::cos(arg) * k_two_pi * mode[m][grad] / length[grad];
    }
    if (grad < 0)
      for (int d = 0; d < 3; ++d)
        if (n[d] % 2 == 0) v += 0.25 * ((ijk[d] % 2) ? -1.0 : 1.0);
    return v;
  }
};

struct GradientErrors {
  double vs_transforms = 0;  // max |gradient - backward(i k_d X)| / max |backward(i k_d X)|
  double vs_analytic = 0;    // max |gradient / N - analytic| / max |analytic|
  bool input_kept = true;
  long long transforms = 0;
  // ready: its calls, whether they rose to every plane of the real block, and the planes whose values when
  // reported differ from the end's.
  int ready_calls = 0;
  bool ready_complete = false;
  long long ready_changed = 0;
};

GradientErrors check_gradient(const fft::FftGeometry& g, bool route_self) {
  SelfRouting transport(route_self);
  fft::DistributedFft plain(g, test::world(), transport, fft::backend::Default{});
  fft::DistributedFft fast(g, test::world(), transport, fft::backend::Default{}, fft::PlanRigor::Estimate,
                           std::nullopt, batch_of_three(plain));
  const fft::Layout3 &rl = plain.real_layout(), &sl = plain.spectral_layout();
  const std::size_t nr = plain.real_size(), ns = plain.complex_size();
  const Trig trig;
  const std::array<double, 3> unit_k{k_two_pi / trig.length[0], k_two_pi / trig.length[1], k_two_pi / trig.length[2]};

  std::vector<double> x(nr);
  for (int i = rl.box.lo[0]; i <= rl.box.hi[0]; ++i)
    for (int j = rl.box.lo[1]; j <= rl.box.hi[1]; ++j)
      for (int k = rl.box.lo[2]; k <= rl.box.hi[2]; ++k) x[rl.offset(i, j, k)] = trig.value(g.n, i, j, k, -1);
  fft::RealView xr("x", nr), y("y", nr), out("gradient", 3 * fft::padded_field(nr));
  fft::ComplexView X("X", ns), scratch("scratch", ns), Y("Y", ns);
  set(xr, x);
  plain.forward(xr.data(), X.data());
  const std::vector<fft::Complex> Xh = host_of(X, ns);

  double* outs[3];
  for (int d = 0; d < 3; ++d) outs[d] = out.data() + d * fft::padded_field(nr);
  // Each reported plane's values as reported (order[0] is the slowest axis of the block: a plane is a run).
  const int planes = rl.box.extent(rl.order[0]);
  const std::size_t run = planes > 0 ? nr / static_cast<std::size_t>(planes) : 0;
  std::vector<double> reported(3 * nr, 0.0);
  int calls = 0, seen = 0;
  bool rising = true;
  const fft::DistributedFft::PlanesReady ready = [&](int e) {
    ++calls;
    rising = rising && e > seen && e <= planes;
    const std::size_t first = static_cast<std::size_t>(seen) * run, last = static_cast<std::size_t>(e) * run;
    const std::vector<double> now = host_of(out, 3 * fft::padded_field(nr));
    for (int d = 0; d < 3; ++d)
      for (std::size_t p = first; p < last && p < nr; ++p) reported[d * nr + p] = now[d * fft::padded_field(nr) + p];
    seen = std::max(seen, e);
  };
  fast.backward_gradient(X.data(), scratch.data(), outs, unit_k, ready);
  GradientErrors e;
  e.ready_calls = calls;
  e.ready_complete = rising && seen == planes;
  e.transforms = fast.times().transforms;
  e.input_kept = test::all_ranks(host_of(X, ns) == Xh);
  const std::vector<double> grad = host_of(out, 3 * fft::padded_field(nr));
  for (int d = 0; d < 3; ++d)
    for (std::size_t p = 0; p < nr; ++p) e.ready_changed += reported[d * nr + p] != grad[d * fft::padded_field(nr) + p];

  double err_t = 0, max_t = 0, err_a = 0, max_a = 0;
  const double N = static_cast<double>(g.total_real());
  for (int d = 0; d < 3; ++d) {
    std::vector<fft::Complex> Yh(ns);
    for (int i = sl.box.lo[0]; i <= sl.box.hi[0]; ++i)
      for (int j = sl.box.lo[1]; j <= sl.box.hi[1]; ++j)
        for (int k = sl.box.lo[2]; k <= sl.box.hi[2]; ++k) {
          const int idx[3] = {i, j, k};
          const std::size_t p = sl.offset(i, j, k);
          Yh[p] = fft::Complex(0, unit_k[d] * wavenumber(idx[d], g.n[d])) * Xh[p];
        }
    set(Y, Yh);
    plain.backward(Y.data(), y.data());
    const std::vector<double> ref = host_of(y, nr);
    const double* gd = grad.data() + d * fft::padded_field(nr);
    for (int i = rl.box.lo[0]; i <= rl.box.hi[0]; ++i)
      for (int j = rl.box.lo[1]; j <= rl.box.hi[1]; ++j)
        for (int k = rl.box.lo[2]; k <= rl.box.hi[2]; ++k) {
          const std::size_t p = rl.offset(i, j, k);
          max_t = std::max(max_t, std::abs(ref[p]));
          err_t = std::max(err_t, std::abs(gd[p] - ref[p]));
          const double a = trig.value(g.n, i, j, k, d);
          max_a = std::max(max_a, std::abs(a));
          err_a = std::max(err_a, std::abs(gd[p] / N - a));
        }
  }
  e.vs_transforms = test::world().max(err_t) / test::world().max(max_t);
  e.vs_analytic = test::world().max(err_a) / test::world().max(max_a);
  return e;
}

}  // namespace

// Equal to three backward transforms and to the analytic gradient: slabs and pencils, odd and even sizes
// (on one rank 12 x 10 x 9 goes plane by plane, 9 x 7 x 11, whose planes are an odd number of doubles, by
// three transforms), own blocks through the transport or not.
TEST(FftGradient, EqualsThreeTransformsAndTheAnalyticGradient) {
  const std::vector<Grid> sizes = {{12, 10, 9}, {9, 7, 11}, {16, 16, 16}, {13, 12, 8}};
  const int geometries = test::for_each_geometry(sizes, test::nranks(), [](const fft::FftGeometry& g) {
    for (bool self : {false, true}) {
      const GradientErrors e = check_gradient(g, self);
      const std::string what = str(g.n) + " " + g.describe() + (self ? ", own blocks sent" : "");
      EXPECT_LT(e.vs_transforms, 1e-13) << what;
      EXPECT_LT(e.vs_analytic, 1e-12) << what;
      EXPECT_TRUE(e.input_kept) << what << ": backward_gradient changed its input";
      EXPECT_EQ(e.transforms, 3) << what;
      EXPECT_TRUE(e.ready_complete) << what << ": ready did not rise to every plane";
      EXPECT_EQ(e.ready_changed, 0) << what << ": values reported final changed afterwards";
      // One rank whose own blocks stay home and whose (y, z) planes are a whole number of 16 bytes goes plane by
      // plane (distributed_fft.cpp): a report after each plane; every other path one at the end.
      const bool by_plane = test::nranks() == 1 && !self && g.kind == Decomposition::Slab && (g.n[1] * g.n[2]) % 2 == 0;
      EXPECT_EQ(e.ready_calls, by_plane ? g.n[0] : 1) << what;
      test::report("fft gradient " + what + ": against the transforms " + test::sci(e.vs_transforms) +
                   ", against the analytic gradient " + test::sci(e.vs_analytic));
    }
  });
  EXPECT_GE(geometries, 2 * 2);  // at least two sizes on both decompositions at every rank count
}

// Pruned transforms, a batch below three fields on the batched path, and the input as its own scratch are
// refused on every rank alike.
TEST(FftGradient, MisuseIsRefused) {
  const Grid n{12, 10, 8};
  const auto g = test::geometry_if_fits(n, test::nranks(), Decomposition::Slab);
  ASSERT_TRUE(g);
  SelfRouting transport(true);
  fft::DistributedFft one(*g, test::world(), transport, fft::backend::Default{});
  fft::SpectralBand band;
  for (int d = 0; d < 3; ++d) band.kmax[d] = (n[d] - 1) / 3;
  fft::DistributedFft pruned(*g, test::world(), transport, fft::backend::Default{}, fft::PlanRigor::Estimate, band,
                             batch_of_three(one));
  fft::DistributedFft three(*g, test::world(), transport, fft::backend::Default{}, fft::PlanRigor::Estimate,
                            std::nullopt, batch_of_three(one));
  fft::ComplexView X("X", one.complex_size()), scratch("scratch", one.complex_size());
  fft::RealView out("out", 3 * fft::padded_field(one.real_size()));
  double* outs[3] = {out.data(), out.data() + fft::padded_field(one.real_size()),
                     out.data() + 2 * fft::padded_field(one.real_size())};
  const std::array<double, 3> unit_k{1, 1, 1};
  EXPECT_THROW(one.backward_gradient(X.data(), scratch.data(), outs, unit_k), std::invalid_argument);
  EXPECT_THROW(pruned.backward_gradient(X.data(), scratch.data(), outs, unit_k), std::invalid_argument);
  EXPECT_THROW(three.backward_gradient(X.data(), X.data(), outs, unit_k), std::invalid_argument);
  EXPECT_NO_THROW(three.backward_gradient(X.data(), scratch.data(), outs, unit_k));
}
