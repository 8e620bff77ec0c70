// Batched distributed FFTs (DistributedFft::forward_many / backward_many) at 1-4 ranks: the result of a
// batch of `count` fields equals that of count separate transforms of a one-field DistributedFft, to
// round-off (FFTW may pick other algorithms for a batch of fields, so not bitwise); on slabs and pencils,
// odd and even sizes, pruned and unpruned, count 1, 3 and 6, with the fields as rows of one view (the
// transforms at the ends batched), as separate views (one execution per field) and as two views of
// three rows (the fluid solver's velocity and vorticity); count 6 also with the rank's own blocks sent
// through the transport (route_self), so that one rank takes the batched path, not the field-by-field
// one of a host rank that exchanges nothing. A batch moves in as many transport exchanges as one field,
// allocates nothing, and preserves its inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
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

// Relative tolerance of batched against separate transforms: both are the same sums of FFTW's
// codelets, rounded in a possibly different order (about 1e-16 per butterfly level).
constexpr double k_tolerance = 1e-13;

// A deterministic value in [-1, 1) for global point (i, j, k) of field f: the same on every rank count.
double value_at(int f, int i, int j, int k) {
  std::uint64_t z = (static_cast<std::uint64_t>(i) * 73856093u) ^ (static_cast<std::uint64_t>(j) * 19349663u) ^
                    (static_cast<std::uint64_t>(k) * 83492791u) ^ (static_cast<std::uint64_t>(f + 1) * 2654435761u);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 4503599627370496.0 - 1.0;
}

std::string str(const Grid& n) {
  return std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]);
}

// A transport that counts the exchanges it forwards to the MPI transport. route_self: movers send the
// rank's own block through it too (MPI delivers messages to the rank itself), so that a one-rank run
// takes the batched path, which a host rank that exchanges nothing skips.
class CountingTransport final : public comm::Transport {
 public:
  CountingTransport(std::unique_ptr<comm::Transport> inner, bool route_self)
      : m_inner(std::move(inner)), m_route_self(route_self) {}
  bool route_self() const override { return m_route_self; }
  std::string name() const override { return m_inner->name(); }
  std::string description() const override { return m_inner->description(); }
  comm::Accepts accepts() const override { return m_inner->accepts(); }
  void exchange(const comm::Batch& batch, void* stream) override {
    ++exchanges;
    m_inner->exchange(batch, stream);
  }
  long long exchanges = 0;

 private:
  std::unique_ptr<comm::Transport> m_inner;
  bool m_route_self = false;
};

// How the `count` fields of a batch lie in memory.
enum class Placement {
  Rows,       // rows of one view, at the distances the transform was told (transforms at the ends batched)
  Separate,   // one view per field (one execution per field at the ends)
  TwoViews,   // rows of two views, 3 fields each (count 6: the fluid solver's velocity and vorticity)
};

const char* name_of(Placement p) {
  return p == Placement::Rows ? "rows" : p == Placement::Separate ? "separate" : "two views";
}

// `count` fields of `size` elements (padded to fft::padded_field) placed as `p` says; field(f) points
// at field f.
template <class T>
class Fields {
 public:
  Fields(Placement p, int count, std::size_t size) : m_count(count), m_dist(fft::padded_field(size)) {
    if (p == Placement::Separate) {
      for (int f = 0; f < count; ++f) m_views.emplace_back("field", m_dist);
      for (int f = 0; f < count; ++f) m_ptr.push_back(m_views[f].data());
    } else {
      const int per_view = p == Placement::TwoViews && count > 3 ? 3 : count;
      for (int f = 0; f < count; f += per_view) m_views.emplace_back("fields", m_dist * per_view);
      for (int f = 0; f < count; ++f) m_ptr.push_back(m_views[f / per_view].data() + (f % per_view) * m_dist);
    }
  }
  T* field(int f) const { return m_ptr[f]; }
  T* const* all() const { return m_ptr.data(); }
  std::size_t dist() const { return m_dist; }
  // The host copy of field f (size elements).
  std::vector<T> host(int f, std::size_t size) const {
    Kokkos::View<T*, fft::MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(m_ptr[f], size);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    return std::vector<T>(h.data(), h.data() + size);
  }
  void set(int f, const std::vector<T>& values) const {
    Kokkos::View<T*, fft::MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(m_ptr[f], values.size());
    Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(values.data(), values.size());
    Kokkos::deep_copy(v, h);
  }

 private:
  int m_count;
  std::size_t m_dist;
  std::vector<Kokkos::View<T*, fft::MemSpace>> m_views;
  std::vector<T*> m_ptr;
};

// The field f of the test on this rank's real block.
std::vector<double> real_field(const fft::Layout3& rl, int f) {
  std::vector<double> v(rl.count());
  for (int i = rl.box.lo[0]; i <= rl.box.hi[0]; ++i)
    for (int j = rl.box.lo[1]; j <= rl.box.hi[1]; ++j)
      for (int k = rl.box.lo[2]; k <= rl.box.hi[2]; ++k) v[rl.offset(i, j, k)] = value_at(f, i, j, k);
  return v;
}

struct BatchErrors {
  double forward = 0;   // max over fields and modes |X_batch - X_single| / max |X_single|
  double backward = 0;  // the same for the backward transforms of X_single
  bool inputs_kept = true;
  long long exchanges_single = 0;  // exchanges of one field's forward + backward, one-field transform
  long long exchanges_batch = 0;   // exchanges of the batch's forward_many + backward_many
};

BatchErrors check_batch(const fft::FftGeometry& g, const std::optional<fft::SpectralBand>& band, int count,
                        Placement placement, bool route_self) {
  CountingTransport transport(comm::make_transport("auto", test::world()), route_self);
  fft::DistributedFft single(g, test::world(), transport, fft::backend::Default{}, fft::PlanRigor::Estimate, band);
  fft::FftBatching batching;
  batching.max_batch = 6;
  const std::size_t nr = single.real_size(), ns = single.complex_size();
  if (placement != Placement::Separate) {
    batching.real_distance = fft::padded_field(nr);
    batching.complex_distance = fft::padded_field(ns);
  }
  fft::DistributedFft batched(g, test::world(), transport, fft::backend::Default{}, fft::PlanRigor::Estimate, band,
                              batching);
  const fft::Layout3& rl = single.real_layout();

  // Separate transforms: X_single[f] = forward(x[f]), y_single[f] = backward(X_single[f]).
  std::vector<std::vector<double>> x(count), y_single(count);
  std::vector<std::vector<fft::Complex>> X_single(count);
  fft::RealView xs("x", nr), ys("y", nr);
  fft::ComplexView Xs("X", ns);
  BatchErrors e;
  for (int f = 0; f < count; ++f) {
    x[f] = real_field(rl, f);
    Kokkos::deep_copy(Xs, fft::Complex(0, 0));
    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hx(x[f].data(), nr);
    Kokkos::deep_copy(xs, hx);
    const long long before = transport.exchanges;
    single.forward(xs.data(), Xs.data());
    single.backward(Xs.data(), ys.data());
    if (f == 0) e.exchanges_single = transport.exchanges - before;
    auto hX = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Xs);
    auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ys);
    X_single[f].assign(hX.data(), hX.data() + ns);
    y_single[f].assign(hy.data(), hy.data() + nr);
  }

  // The batch: the same inputs, outputs zeroed like the separate ones (pruned forward transforms leave
  // the columns outside the band as they find them).
  Fields<double> in(placement, count, nr), out(placement, count, nr);
  Fields<fft::Complex> spec(placement, count, ns), spec_in(placement, count, ns);
  for (int f = 0; f < count; ++f) {
    in.set(f, x[f]);
    spec_in.set(f, X_single[f]);
  }
  const long long before = transport.exchanges;
  std::vector<const double*> in_ptr(in.all(), in.all() + count);
  std::vector<const fft::Complex*> spec_in_ptr(spec_in.all(), spec_in.all() + count);
  batched.forward_many(count, in_ptr.data(), spec.all());
  batched.backward_many(count, spec_in_ptr.data(), out.all());
  e.exchanges_batch = transport.exchanges - before;

  double fmax = 0, ferr = 0, bmax = 0, berr = 0;
  for (int f = 0; f < count; ++f) {
    const auto X = spec.host(f, ns), X_after = spec_in.host(f, ns);
    const auto y = out.host(f, nr), x_after = in.host(f, nr);
    for (std::size_t m = 0; m < ns; ++m) {
      fmax = std::max(fmax, Kokkos::abs(X_single[f][m]));
      ferr = std::max(ferr, Kokkos::abs(X[m] - X_single[f][m]));
      if (X_after[m] != X_single[f][m]) e.inputs_kept = false;
    }
    for (std::size_t p = 0; p < nr; ++p) {
      bmax = std::max(bmax, std::abs(y_single[f][p]));
      berr = std::max(berr, std::abs(y[p] - y_single[f][p]));
      if (x_after[p] != x[f][p]) e.inputs_kept = false;
    }
  }
  e.forward = test::world().max(ferr) / test::world().max(fmax);
  e.backward = test::world().max(berr) / test::world().max(bmax);
  e.inputs_kept = test::all_ranks(e.inputs_kept);
  EXPECT_EQ(batched.times().transforms, 2 * count);
  return e;
}

}  // namespace

// A batch equals separate transforms: slabs and pencils, odd and even sizes, pruned (the 2/3 band) and
// unpruned, count 1, 3 and 6, the fields as rows, separate views or two views of rows.
TEST(BatchedFft, EqualsSeparateTransforms) {
  const int P = test::nranks();
  const std::vector<Grid> sizes = {{12, 10, 9}, {9, 7, 11}, {16, 16, 16}, {13, 12, 8}};
  int cases = 0;
  for (const auto& n : sizes)
    for (auto kind : {Decomposition::Slab, Decomposition::Pencil}) {
      const auto fits = test::geometry_if_fits(n, P, kind);
      if (!fits) continue;
      const fft::FftGeometry& g = *fits;
      fft::SpectralBand two_thirds;
      for (int d = 0; d < 3; ++d) two_thirds.kmax[d] = (n[d] - 1) / 3;
      for (const std::optional<fft::SpectralBand>& band : {std::optional<fft::SpectralBand>{},
                                                           std::optional<fft::SpectralBand>{two_thirds}})
        for (int count : {1, 3, 6})
          for (auto placement : {Placement::Rows, Placement::Separate, Placement::TwoViews})
            for (bool self : {false, true}) {
              if (placement == Placement::TwoViews && count != 6) continue;
              if (self && count != 6) continue;  // own blocks through the transport: batched on one rank too
              const BatchErrors e = check_batch(g, band, count, placement, self);
              const std::string what = str(n) + " " + g.describe() + (band ? " pruned" : " unpruned") + " count " +
                                       std::to_string(count) + " " + name_of(placement) +
                                       (self ? ", own blocks sent" : "");
              EXPECT_LT(e.forward, k_tolerance) << what;
              EXPECT_LT(e.backward, k_tolerance) << what;
              EXPECT_TRUE(e.inputs_kept) << what << ": a batched transform changed its input";
              // One batch moves in the exchanges of one field: one per reshape stage, whatever the count.
              EXPECT_EQ(e.exchanges_batch, e.exchanges_single) << what;
              if (P > 1 && g.kind == Decomposition::Slab) {
                EXPECT_EQ(e.exchanges_single, 2) << what;
              }
              if (count == 6 && placement == Placement::TwoViews)
                test::report("batched fft " + what + ": forward " + test::sci(e.forward) + ", backward " +
                             test::sci(e.backward) + ", " + std::to_string(e.exchanges_batch) + " exchanges");
              ++cases;
            }
    }
  EXPECT_GE(cases, 2 * 2 * 2 * 10);  // at least two sizes on both decompositions at every rank count
}

namespace {
long long g_allocations = 0;
void count_allocation(const Kokkos::Tools::SpaceHandle, const char*, const void*, const std::uint64_t) {
  ++g_allocations;
}
}  // namespace

// Plans, work arrays and buffers of every batch size are made once: batched calls allocate no Kokkos
// memory, pruned or not, with the fields batched at the ends or not.
TEST(BatchedFft, TransformsAllocateNothing) {
  auto transport = comm::make_transport("auto", test::world());
  std::vector<std::unique_ptr<fft::DistributedFft>> fs;
  for (auto kind : {Decomposition::Pencil, Decomposition::Slab})
    for (bool pruned : {false, true}) {
      const auto g = fft::make_fft_geometry({12, 10, 9}, test::nranks(), kind);
      fft::FftBatching b;
      b.max_batch = 6;
      b.real_distance = fft::padded_field(g.real[test::rank()].count());
      b.complex_distance = fft::padded_field(g.spectral[test::rank()].count());
      std::optional<fft::SpectralBand> band;
      if (pruned) band = fft::SpectralBand{{3, 3, 2}};
      fs.push_back(std::make_unique<fft::DistributedFft>(g, test::world(), *transport, fft::backend::Default{},
                                                         fft::PlanRigor::Estimate, band, b));
    }
  std::vector<Fields<double>> xs;
  std::vector<Fields<fft::Complex>> Xs;
  for (const auto& f : fs) {
    xs.emplace_back(Placement::TwoViews, 6, f->real_size());
    Xs.emplace_back(Placement::TwoViews, 6, f->complex_size());
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
  g_allocations = 0;
  { fft::RealView probe("probe", 8); }  // the hook works: this allocation is seen
  const long long probe = g_allocations;
  g_allocations = 0;
  for (std::size_t k = 0; k < fs.size(); ++k)
    for (int count : {1, 3, 6}) {
      std::vector<const double*> in(xs[k].all(), xs[k].all() + count);
      std::vector<const fft::Complex*> spec(Xs[k].all(), Xs[k].all() + count);
      fs[k]->forward_many(count, in.data(), Xs[k].all());
      fs[k]->backward_many(count, spec.data(), xs[k].all());
    }
  const long long during = g_allocations;
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  EXPECT_EQ(probe, 1) << "the allocation hook did not fire: the test cannot see allocations";
  EXPECT_EQ(during, 0);
  for (const auto& f : fs) EXPECT_EQ(f->times().transforms, 2 * (1 + 3 + 6));
}

// A count outside 1 .. max_batch, or a field distance below a field's size, is refused.
TEST(BatchedFft, BadCountsAndDistancesAreRefused) {
  auto transport = comm::make_transport("auto", test::world());
  const auto g = fft::make_fft_geometry({8, 8, 8}, test::nranks(), Decomposition::Auto);
  fft::FftBatching b;
  b.max_batch = 3;
  fft::DistributedFft f(g, test::world(), *transport, fft::backend::Default{}, fft::PlanRigor::Estimate, std::nullopt, b);
  EXPECT_EQ(f.max_batch(), 3);
  Fields<double> x(Placement::Separate, 4, f.real_size());
  Fields<fft::Complex> X(Placement::Separate, 4, f.complex_size());
  std::vector<const double*> in(x.all(), x.all() + 4);
  EXPECT_THROW(f.forward_many(4, in.data(), X.all()), std::invalid_argument);
  EXPECT_THROW(f.forward_many(0, in.data(), X.all()), std::invalid_argument);
  b.max_batch = 0;
  EXPECT_THROW(fft::DistributedFft(g, test::world(), *transport, fft::backend::Default{}, fft::PlanRigor::Estimate,
                                   std::nullopt, b),
               std::invalid_argument);
  b.max_batch = 2;
  b.real_distance = g.real[test::rank()].count() - 1;
  EXPECT_THROW(fft::DistributedFft(g, test::world(), *transport, fft::backend::Default{}, fft::PlanRigor::Estimate,
                                   std::nullopt, b),
               std::invalid_argument);
}
