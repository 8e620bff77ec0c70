#include "distributed_fft.hpp"

#include "derivative.hpp"

#include "comm/exchange.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/timing.hpp"

namespace spotrun::fft {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Adds a stage's wall time to a counter. On a host build the stage is complete when its call returns; on
// a device build the execution space is fenced at both ends (comm/timing.hpp), so that the counter holds
// the stage's transforms or transposes, not the time to queue them.
class Timed {
 public:
  explicit Timed(double& acc) : m_acc(acc) {
    comm::fence_for_timing();
    m_t0 = Clock::now();
  }
  ~Timed() {
    comm::fence_for_timing();
    m_acc += seconds_since(m_t0);
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  double& m_acc;
  Clock::time_point m_t0;
};

// Pointers to the `count` fields of a work array at distance `dist`.
std::vector<Complex*> fields_of(const ComplexView& v, std::size_t dist, int count) {
  std::vector<Complex*> p(static_cast<std::size_t>(count));
  for (int f = 0; f < count; ++f) p[f] = v.data() + static_cast<std::size_t>(f) * dist;
  return p;
}

// Runs the plans of `set` (DistributedFft::PlanSet) on in[f] -> out[f], f < count, in the fewest
// executions: from each field on, the plan of the most fields that lie at the set's distances, on both
// sides. Adds the cuFFT calls of those executions to `launches`.
template <class Set, class I, class O>
void run_plans(const Set& set, int count, I* const in[], O* const out[], long long& launches) {
  const int most = static_cast<int>(set.by_fields.size());
  for (int f = 0; f < count;) {
    int k = std::min(count - f, most);
    for (; k > 1; --k) {
      if (!set.by_fields[k - 1]) continue;
      bool even = true;
      for (int j = 1; j < k && even; ++j)
        even = in[f + j] == in[f] + j * set.in_dist && out[f + j] == out[f] + j * set.out_dist;
      if (even) break;
    }
    set.by_fields[k - 1]->execute(const_cast<void*>(static_cast<const void*>(in[f])), out[f]);
    launches += set.launches[k - 1];
    f += k;
  }
}

}  // namespace

DistributedFft::DistributedFft(const FftGeometry& geometry, const comm::Communicator& comm, comm::Transport& transport,
                               std::unique_ptr<impl::LocalBackend> backend, const std::optional<SpectralBand>& band,
                               const FftBatching& batching)
    : m_geometry(geometry),
      m_comm(comm),
      m_rank(comm.rank()),
      m_batching(batching),
      m_backend(std::move(backend)),
      m_band(band) {
  if (m_band) check_band(*m_band, m_geometry.n);
  if (m_batching.max_batch < 1)
    throw std::invalid_argument("DistributedFft: max_batch " + std::to_string(m_batching.max_batch) + " is below 1");
  if ((m_batching.real_distance != 0 && m_batching.real_distance < m_geometry.real[m_rank].count()) ||
      (m_batching.complex_distance != 0 && m_batching.complex_distance < m_geometry.spectral[m_rank].count()))
    throw std::invalid_argument("DistributedFft: a field distance is below the size of a field");
  if (m_geometry.nranks != comm.size())
    throw std::invalid_argument("DistributedFft: the geometry was made for " + std::to_string(m_geometry.nranks) +
                                " ranks, the communicator has " + std::to_string(comm.size()));
  if (m_backend->needs_device_memory() && k_host_accessible)
    throw InputError("the " + m_backend->name() + " FFT backend needs device memory, but this build's Kokkos memory "
                     "space is host memory (build Kokkos with CUDA)");
  if (!m_backend->needs_device_memory() && !k_host_accessible)
    throw InputError("the " + m_backend->name() + " FFT backend needs host memory, but this build's Kokkos memory "
                     "space is not host-accessible (use the cufft backend)");

  const auto& g = m_geometry;
  const bool pencil = g.kind == Decomposition::Pencil;
  // The gather layout of every rank: its spectral box, stored [x][ky][kz].
  std::vector<Layout3> gather = g.spectral;
  for (auto& l : gather) l.order = {0, 1, 2};
  // A rank that exchanges nothing (one rank, unless the transport routes messages to the rank itself)
  // gains nothing from batching on the host, and loses the cache: it runs a batch field by field through
  // one field of the work arrays. Device builds batch anyway (fewer launches).
  m_one_by_one = k_host_accessible && g.nranks == 1 && !transport.route_self();
  const int batch = m_one_by_one ? 1 : m_batching.max_batch;
  const std::size_t fields = static_cast<std::size_t>(batch);
  m_da = padded_field(g.stage_a[m_rank].count());
  m_db = pencil ? padded_field(g.stage_b[m_rank].count()) : 0;
  m_dg = padded_field(gather[m_rank].count());
  m_wa = ComplexView("fft::work_a", fields * m_da);
  if (pencil) m_wb = ComplexView("fft::work_b", fields * m_db);
  m_a_is_g = !pencil && g.stage_a[m_rank] == gather[m_rank];  // one rank: the same box and order
  m_grouping = resolved(m_batching.grouping);
  m_zero_before_x = m_band && m_a_is_g && m_grouping == PlanGrouping::FewLaunches;
  m_wg = m_a_is_g ? m_wa : ComplexView("fft::work_g", fields * m_dg);
  m_wgb = (m_band && !m_a_is_g) ? ComplexView("fft::work_g_backward", fields * m_dg) : m_wg;
  m_pa = fields_of(m_wa, m_da, batch);
  if (pencil) m_pb = fields_of(m_wb, m_db, batch);
  m_pg = fields_of(m_wg, m_dg, batch);
  m_pgb = fields_of(m_wgb, m_dg, batch);
  // Pruned: the forward transposes carry only the kz the band keeps (the other columns of stage B and
  // of the gather array are never transformed or read); the backward ones carry everything, the zeros
  // included, which the c2r needs.
  auto forward_plan = [&](const std::vector<Layout3>& from, const std::vector<Layout3>& to) {
    ReshapePlan p = make_reshape_plan(from, to, m_rank);
    if (m_band) p = clipped(p, Box3i{{0, 0, 0}, {g.nc[0] - 1, g.nc[1] - 1, m_band->kmax[2]}});
    return p;
  };
  if (pencil) {
    m_a_to_b = std::make_unique<Reshape<Complex>>(forward_plan(g.stage_a, g.stage_b), transport, "fft::reshape_zy", batch);
    m_b_to_g = std::make_unique<Reshape<Complex>>(forward_plan(g.stage_b, gather), transport, "fft::reshape_yx", batch);
    m_g_to_b = std::make_unique<Reshape<Complex>>(make_reshape_plan(gather, g.stage_b, m_rank), transport,
                                                  "fft::reshape_xy", batch);
    m_b_to_a = std::make_unique<Reshape<Complex>>(make_reshape_plan(g.stage_b, g.stage_a, m_rank), transport,
                                                  "fft::reshape_yz", batch);
  } else if (!m_a_is_g) {
    m_a_to_g = std::make_unique<Reshape<Complex>>(forward_plan(g.stage_a, gather), transport, "fft::reshape_slab", batch);
    m_g_to_a = std::make_unique<Reshape<Complex>>(make_reshape_plan(gather, g.stage_a, m_rank), transport,
                                                  "fft::reshape_slab_back", batch);
  }
  // A planning failure on one rank must not leave the others waiting in the first transpose.
  std::string error;
  try {
    make_plans();
  } catch (const std::exception& e) {
    error = std::string("FFT setup on rank ") + std::to_string(m_rank) + ": " + e.what();
  }
  m_comm.agree<RunError>(error.empty(), error);
  // FFTW_MEASURE planning writes the arrays; backward() relies on the zeros of m_wgb's other columns.
  if (m_wgb.data() != m_wg.data()) Kokkos::deep_copy(m_wgb, Complex(0, 0));
}

DistributedFft::~DistributedFft() = default;

std::string DistributedFft::backend_name() const { return m_backend->name(); }

namespace impl {

// The batches of every local transform of one rank, by stage (plan_specs lists them in this order).
struct StageSpecs {
  BatchSpec r2c, c2r;
  std::vector<BatchSpec> y_forward, y_backward, x_forward, x_backward;
};

BatchSpec backward_of(BatchSpec s) {
  s.kind = s.kind == TransformKind::C2CForward ? TransformKind::C2CBackward : TransformKind::C2CForward;
  std::swap(s.istride, s.ostride);
  std::swap(s.idist, s.odist);
  std::swap(s.idist2, s.odist2);
  std::swap(s.ioffset, s.ooffset);
  return s;
}

// A forward rank-1 c2c of length n on `stream`; the caller sets the batches of its stage (rows, strides,
// offsets).
BatchSpec c2c_spec(int n, bool in_place, void* stream) {
  BatchSpec s;
  s.stream = stream;
  s.rank = 1;
  s.n[0] = n;
  s.in_place = in_place;
  s.kind = TransformKind::C2CForward;
  return s;
}

// few: PlanGrouping::FewLaunches (with a band; see distributed_fft.hpp).
StageSpecs stage_specs(const FftGeometry& g, int rank, void* stream, const SpectralBand* band, bool few) {
  StageSpecs out;
  const Layout3& real = g.real[rank];
  const Layout3& spec = g.spectral[rank];
  const bool pencil = g.kind == Decomposition::Pencil;
  few = few && band;
  BatchSpec s;
  s.stream = stream;
  if (pencil || (band && !few)) {
    // r2c along z over every (x, y) row; a pruned slab does its y transforms apart (below).
    s.rank = 1;
    s.n[0] = g.n[2];
    s.howmany = real.box.extent(0) * real.box.extent(1);
  } else {
    s.rank = 2;
    s.n[0] = g.n[1];
    s.n[1] = g.n[2];
    s.howmany = real.box.extent(0);
  }
  s.in_place = false;
  s.kind = TransformKind::R2C;
  out.r2c = s;
  s.kind = TransformKind::C2R;
  out.c2r = s;

  const int nzc = g.nc[2];
  if (pencil) {
    // y-pencils [x][kz][y]: rows (x, kz), y contiguous.
    const Layout3& b = g.stage_b[rank];
    BatchSpec y = c2c_spec(g.n[1], true, stream);
    if (!band) {
      y.howmany = b.box.extent(0) * b.box.extent(2);
      out.y_forward.push_back(y);
    } else {
      const IndexRun kz = kept_runs(*band, g.n, 2, b.box.lo[2], b.box.hi[2])[0];
      if (few && kz.count > 0) {
        // every kz row of the pencil: one contiguous batch (the dropped rows are never carried on)
        y.howmany = b.box.extent(0) * b.box.extent(2);
        out.y_forward.push_back(y);
      } else if (kz.count > 0) {
        y.istride = y.ostride = 1;
        y.idist = y.odist = g.n[1];
        y.howmany = kz.count;
        y.howmany2 = b.box.extent(0);
        y.idist2 = y.odist2 = static_cast<long>(b.box.extent(2)) * g.n[1];
        y.ioffset = y.ooffset = static_cast<long>(kz.first) * g.n[1];
        out.y_forward.push_back(y);
      }
    }
  } else if (band && !few) {
    // Pruned slab: stage A [x][ky][kz] after the r2c along z; c2c along y (stride nz/2 + 1) on the
    // kept kz of every x-plane. (FewLaunches: the 2D r2c / c2r above does them, on every kz.)
    const Layout3& a = g.stage_a[rank];
    const IndexRun kz = kept_runs(*band, g.n, 2, 0, nzc - 1)[0];
    BatchSpec y = c2c_spec(g.n[1], true, stream);
    y.istride = y.ostride = nzc;
    y.idist = y.odist = 1;
    y.howmany = kz.count;
    y.howmany2 = a.box.extent(0);
    y.idist2 = y.odist2 = static_cast<long>(g.n[1]) * nzc;
    if (kz.count > 0 && a.box.extent(0) > 0) out.y_forward.push_back(y);
  }
  for (const auto& y : out.y_forward) {
    BatchSpec b = y;
    b.kind = TransformKind::C2CBackward;
    out.y_backward.push_back(b);
  }

  // x: from the gather layout [x][ky][kz] (stride ky*kz between x values) to the spectral layout
  // [ky][kz][kx] and back: the transpose between them is done by the transform.
  const int eky = spec.box.extent(1), ekz = spec.box.extent(2);
  const long cols = static_cast<long>(eky) * ekz;
  BatchSpec x = c2c_spec(g.n[0], false, stream);
  x.istride = cols;
  x.idist = 1;
  x.ostride = 1;
  x.odist = g.n[0];
  if (!band) {
    x.howmany = static_cast<int>(cols);
    out.x_forward.push_back(x);
  } else {
    // The kept columns: kz in one run, ky in up to two; loops kz (inner) and ky (outer).
    const IndexRun kz = kept_runs(*band, g.n, 2, spec.box.lo[2], spec.box.hi[2])[0];
    for (const IndexRun& ky : kept_runs(*band, g.n, 1, spec.box.lo[1], spec.box.hi[1])) {
      if (ky.count == 0 || kz.count == 0) continue;
      if (few) {
        // every kz of the run's ky: one contiguous batch of columns
        BatchSpec p = x;
        p.howmany = ky.count * ekz;
        p.ioffset = static_cast<long>(ky.first) * ekz;
        p.ooffset = p.ioffset * g.n[0];
        out.x_forward.push_back(p);
        continue;
      }
      BatchSpec p = x;
      p.howmany = kz.count;
      p.howmany2 = ky.count;
      p.idist2 = ekz;
      p.odist2 = static_cast<long>(ekz) * g.n[0];
      p.ioffset = static_cast<long>(ky.first) * ekz + kz.first;
      p.ooffset = p.ioffset * g.n[0];
      out.x_forward.push_back(p);
    }
  }
  for (const auto& f : out.x_forward) out.x_backward.push_back(backward_of(f));
  return out;
}

// Zeroes, in the spectral block [ky][kz][kx] at `out`, the kx outside the band of the band's columns.
void zero_outside_band_kx(Complex* out, const Layout3& spec, const FftGeometry& g, const SpectralBand& band) {
  const int nx = g.n[0], kx = band.kmax[0];
  const int first = kx + 1, count = nx - 2 * kx - 1;  // kx + 1 .. nx - kx - 1
  if (count <= 0) return;
  const int ekz = spec.box.extent(2);
  const IndexRun kz = kept_runs(band, g.n, 2, spec.box.lo[2], spec.box.hi[2])[0];
  if (kz.count == 0) return;
  Unmanaged<Complex> v(out, spec.count());
  for (const IndexRun& ky : kept_runs(band, g.n, 1, spec.box.lo[1], spec.box.hi[1])) {
    if (ky.count == 0) continue;
    const int kzc = kz.count, kzf = kz.first, kyf = ky.first;
    Kokkos::parallel_for(
        "fft::zero_outside_band_kx", Policy(0, static_cast<std::int64_t>(ky.count) * kzc),
        KOKKOS_LAMBDA(std::int64_t r) {
          const int j = kyf + static_cast<int>(r / kzc), k = kzf + static_cast<int>(r % kzc);
          const std::size_t base = (static_cast<std::size_t>(j) * ekz + k) * nx + first;
          for (int i = 0; i < count; ++i) v(base + i) = Complex(0, 0);
        });
  }
}

// Zeroes, in a whole gather block [x][ky][kz] at `a` (one-rank slabs), the columns outside the band.
void zero_outside_band_columns(Complex* a, const FftGeometry& g, const SpectralBand& band) {
  const int ny = g.n[1], nzc = g.nc[2], ky = band.kmax[1], kzk = band.kmax[2];
  Unmanaged<Complex> v(a, static_cast<std::size_t>(g.n[0]) * ny * nzc);
  Kokkos::parallel_for(
      "fft::zero_outside_band_columns", Policy(0, static_cast<std::int64_t>(g.n[0]) * ny),
      KOKKOS_LAMBDA(std::int64_t r) {
        const int j = static_cast<int>(r % ny);
        const bool kept = j <= ky || j >= ny - ky;
        const std::size_t base = static_cast<std::size_t>(r) * nzc;
        for (int k = kept ? kzk + 1 : 0; k < nzc; ++k) v(base + k) = Complex(0, 0);
      });
}

}  // namespace impl

namespace impl {

// The batch `s` over `fields` fields at in_dist and out_dist elements apart (fields 1: `s` itself).
BatchSpec with_fields(BatchSpec s, int fields, std::size_t in_dist, std::size_t out_dist) {
  if (fields > 1) {
    s.fields = fields;
    s.ifield = static_cast<long>(in_dist);
    s.ofield = static_cast<long>(out_dist);
  }
  return s;
}

}  // namespace impl

std::vector<impl::BatchSpec> plan_specs(const FftGeometry& g, int rank, void* stream, const SpectralBand* band,
                                        int fields, PlanGrouping grouping) {
  const impl::StageSpecs s =
      impl::stage_specs(g, rank, stream, band, resolved(grouping) == PlanGrouping::FewLaunches);
  // Field distances as DistributedFft lays its work arrays out, the caller's rows padded the same way.
  const std::size_t real = padded_field(g.real[rank].count()), spec = padded_field(g.spectral[rank].count());
  const std::size_t a = padded_field(g.stage_a[rank].count());
  const std::size_t y = g.kind == Decomposition::Pencil ? padded_field(g.stage_b[rank].count()) : a;
  std::vector<impl::BatchSpec> specs{impl::with_fields(s.r2c, fields, real, a),
                                     impl::with_fields(s.c2r, fields, a, real)};
  for (const auto* v : {&s.y_forward, &s.y_backward})
    for (const auto& b : *v) specs.push_back(impl::with_fields(b, fields, y, y));
  for (const auto* v : {&s.x_forward, &s.x_backward})
    for (const auto& b : *v) specs.push_back(impl::with_fields(b, fields, spec, spec));
  return specs;
}

void DistributedFft::make_plans() {
  const auto& g = m_geometry;
  const int batch = m_one_by_one ? 1 : m_batching.max_batch;
  const std::size_t rd = m_batching.real_distance, cd = m_batching.complex_distance;
  // Arrays of the shape and alignment of the caller's (all max_batch fields where the caller gave their
  // distance), for planning only (FFTW_MEASURE overwrites them).
  auto extent = [batch](std::size_t count, std::size_t dist) {
    return dist ? static_cast<std::size_t>(batch - 1) * dist + count : count;
  };
  RealView real_tmp("fft::plan_real", extent(g.real[m_rank].count(), rd));
  ComplexView spec_tmp("fft::plan_spectral", extent(g.spectral[m_rank].count(), cd));
  // Every transform on the stream of the default execution space instance: ordered with the kernels.
  const impl::StageSpecs specs = impl::stage_specs(g, m_rank, comm::native_stream(ExecSpace()),
                                                   m_band ? &*m_band : nullptr,
                                                   m_grouping == PlanGrouping::FewLaunches);
  // The plans of one transform for 1 .. max_batch fields; several only where both sides have a distance.
  auto make_set = [&](const impl::BatchSpec& one, void* in, void* out, std::size_t in_dist, std::size_t out_dist) {
    PlanSet set;
    set.in_dist = in_dist;
    set.out_dist = out_dist;
    set.by_fields.resize(static_cast<std::size_t>(batch));
    set.launches.assign(static_cast<std::size_t>(batch), 0);
    for (int k = 1; k <= batch; ++k)
      if (k == 1 || (in_dist != 0 && out_dist != 0)) {
        const impl::BatchSpec spec = impl::with_fields(one, k, in_dist, out_dist);
        set.by_fields[k - 1] = m_backend->make_plan(spec, in, out);
        set.launches[k - 1] = impl::cufft_launches(spec);
      }
    return set;
  };
  m_r2c = make_set(specs.r2c, real_tmp.data(), m_wa.data(), rd, m_da);
  m_c2r = make_set(specs.c2r, m_wa.data(), real_tmp.data(), m_da, rd);
  // The y transforms run in place on stage B (pencils) or stage A (pruned slabs; one-rank slabs go
  // backward on m_wgb, which is m_wa there).
  const bool pencil = g.kind == Decomposition::Pencil;
  Complex* y_array = pencil ? m_wb.data() : m_wa.data();
  const std::size_t yd = pencil ? m_db : m_da;
  for (const auto& y : specs.y_forward) m_y_forward = make_set(y, y_array, y_array, yd, yd);
  for (const auto& y : specs.y_backward) m_y_backward = make_set(y, y_array, y_array, yd, yd);
  for (const auto& x : specs.x_forward) m_x_forward.push_back(make_set(x, m_wg.data(), spec_tmp.data(), m_dg, cd));
  for (const auto& x : specs.x_backward) m_x_backward.push_back(make_set(x, spec_tmp.data(), m_wgb.data(), cd, m_dg));
  // backward_gradient's plane by plane c2r (one-rank slabs): planes of ny nz doubles at a multiple of 16 bytes
  // apart keep the alignment of the array's first.
  const std::size_t plane_bytes = static_cast<std::size_t>(g.n[1]) * g.n[2] * sizeof(double);
  if (m_one_by_one && m_a_is_g && !m_band && plane_bytes % 16 == 0) {
    impl::BatchSpec plane = specs.c2r;
    plane.howmany = 1;
    m_plane = ComplexView("fft::gradient_plane", static_cast<std::size_t>(g.n[1]) * g.nc[2]);
    m_c2r_plane = m_backend->make_plan(plane, m_plane.data(), real_tmp.data());
  }
  m_backend->plans_made();
}

void DistributedFft::check_count(int count, const char* call) const {
  if (count < 1 || count > m_batching.max_batch)
    throw std::invalid_argument(std::string("DistributedFft::") + call + ": " + std::to_string(count) +
                                " fields; this transform takes 1 to " + std::to_string(m_batching.max_batch));
}

void DistributedFft::x_forward(int count, Complex* const out[]) {
  Timed t(m_times.local);
  if (m_zero_before_x)
    for (int f = 0; f < count; ++f) impl::zero_outside_band_columns(m_pg[f], m_geometry, *m_band);
  for (const auto& p : m_x_forward) run_plans(p, count, m_pg.data(), out, m_times.launches);
  if (m_band)
    for (int f = 0; f < count; ++f) impl::zero_outside_band_kx(out[f], spectral_layout(), m_geometry, *m_band);
}

void DistributedFft::x_backward(int count, const Complex* const in[]) {
  Timed t(m_times.local);
  if (m_band && m_a_is_g)
    for (int f = 0; f < count; ++f) impl::zero_outside_band_columns(m_pgb[f], m_geometry, *m_band);
  for (const auto& p : m_x_backward) run_plans(p, count, in, m_pgb.data(), m_times.launches);  // out of place: preserves in
}

void DistributedFft::y_transform(const PlanSet& plans, int count, Complex* const data[]) {
  if (plans.empty()) return;
  Timed t(m_times.local);
  run_plans(plans, count, data, data, m_times.launches);
}

void DistributedFft::reshape(Reshape<Complex>& r, int count, const Complex* const in[], Complex* const out[]) {
  Timed t(m_times.reshape);
  r.execute_many(count, in, out);
}

void DistributedFft::forward(const double* in, Complex* out) { forward_many(1, &in, &out); }

void DistributedFft::backward(const Complex* in, double* out) { backward_many(1, &in, &out); }

void DistributedFft::forward_many(int count, const double* const in[], Complex* const out[]) {
  check_count(count, "forward_many");
  m_times.transforms += count;
  if constexpr (k_host_accessible) Kokkos::fence();  // FFTW reads what the caller's kernels wrote
  if (m_one_by_one) {
    for (int f = 0; f < count; ++f) forward_fields(1, in + f, out + f);
  } else {
    forward_fields(count, in, out);
  }
}

void DistributedFft::backward_many(int count, const Complex* const in[], double* const out[]) {
  check_count(count, "backward_many");
  m_times.transforms += count;
  if constexpr (k_host_accessible) Kokkos::fence();  // FFTW reads what the caller's kernels wrote
  if (m_one_by_one) {
    for (int f = 0; f < count; ++f) backward_fields(1, in + f, out + f);
  } else {
    backward_fields(count, in, out);
  }
}

void DistributedFft::forward_fields(int count, const double* const in[], Complex* const out[]) {
  {
    Timed t(m_times.local);
    run_plans(m_r2c, count, in, m_pa.data(), m_times.launches);  // r2c preserves its input
  }
  if (m_geometry.kind == Decomposition::Pencil) {
    reshape(*m_a_to_b, count, m_pa.data(), m_pb.data());
    y_transform(m_y_forward, count, m_pb.data());
    reshape(*m_b_to_g, count, m_pb.data(), m_pg.data());
  } else {
    y_transform(m_y_forward, count, m_pa.data());  // pruned slab
    if (!m_a_is_g) reshape(*m_a_to_g, count, m_pa.data(), m_pg.data());
  }
  x_forward(count, out);
}

void DistributedFft::backward_fields(int count, const Complex* const in[], double* const out[]) {
  x_backward(count, in);
  if (m_geometry.kind == Decomposition::Pencil) {
    reshape(*m_g_to_b, count, m_pgb.data(), m_pb.data());
    y_transform(m_y_backward, count, m_pb.data());
    reshape(*m_b_to_a, count, m_pb.data(), m_pa.data());
  } else {
    if (!m_a_is_g) reshape(*m_g_to_a, count, m_pgb.data(), m_pa.data());
    y_transform(m_y_backward, count, m_pa.data());  // pruned slab
  }
  Timed t(m_times.local);
  run_plans(m_c2r, count, m_pa.data(), out, m_times.launches);  // destroys m_wa only
}

void DistributedFft::backward_gradient(const Complex* in, Complex* scratch, double* const out[3],
                                       const std::array<double, 3>& unit_k, const PlanesReady& ready) {
  if (m_band) throw std::invalid_argument("DistributedFft::backward_gradient: not for a pruned transform");
  if (!m_one_by_one && m_batching.max_batch < 3)
    throw std::invalid_argument("DistributedFft::backward_gradient: three fields go through the stages; this "
                                "transform takes at most " + std::to_string(m_batching.max_batch));
  if (in == scratch) throw std::invalid_argument("DistributedFft::backward_gradient: scratch is the input");
  m_times.transforms += 3;
  if constexpr (k_host_accessible) Kokkos::fence();  // FFTW reads what the caller's kernels wrote
  const auto& g = m_geometry;
  {
    Timed t(m_times.local);
    impl::times_ik(spectral_layout(), g.n, 0, unit_k[0], in, scratch);
  }
  if (m_one_by_one) {
    gradient_one_by_one(in, scratch, out, unit_k, ready);
    return;
  }
  // Field 0: i k_x in, field 1: in; after the transforms along x field 1 gives fields 1 and 2.
  const Complex* hats[2] = {scratch, in};
  x_backward(2, hats);
  if (g.kind == Decomposition::Pencil) {
    reshape(*m_g_to_b, 2, m_pgb.data(), m_pb.data());
    {
      Timed t(m_times.local);
      impl::times_ik_yz(g.stage_b[m_rank], g.n, unit_k, m_pb[1], m_pb[2]);
    }
    y_transform(m_y_backward, 3, m_pb.data());
    reshape(*m_b_to_a, 3, m_pb.data(), m_pa.data());
  } else {
    if (!m_a_is_g) reshape(*m_g_to_a, 2, m_pgb.data(), m_pa.data());
    Timed t(m_times.local);
    impl::times_ik_yz(g.stage_a[m_rank], g.n, unit_k, m_pa[1], m_pa[2]);
  }
  {
    Timed t(m_times.local);
    run_plans(m_c2r, 3, m_pa.data(), out, m_times.launches);
  }
  all_planes_ready(ready);
}

void DistributedFft::all_planes_ready(const PlanesReady& ready) const {
  if (!ready) return;
  if constexpr (k_host_accessible) Kokkos::fence();  // the caller's host code reads what the kernels wrote
  const Layout3& real = m_geometry.real[m_rank];
  ready(real.box.extent(real.order[0]));
}

void DistributedFft::gradient_one_by_one(const Complex* in, Complex* scratch, double* const out[3],
                                         const std::array<double, 3>& unit_k, const PlanesReady& ready) {
  const auto& g = m_geometry;
  const Complex* hat = scratch;
  if (!m_c2r_plane) {  // three transforms, each product through the scratch
    backward_fields(1, &hat, out);
    for (int d = 1; d < 3; ++d) {
      {
        Timed t(m_times.local);
        impl::times_ik(spectral_layout(), g.n, d, unit_k[static_cast<std::size_t>(d)], in, scratch);
      }
      backward_fields(1, &hat, out + d);
    }
    all_planes_ready(ready);
    return;
  }
  // One-rank slab: stage A is the gather layout [x][ky][kz] (m_pa[0] = m_pgb[0]). The x derivative's c2r
  // batched (faster than plane by plane where the planes come from memory).
  backward_fields(1, &hat, out);
  const std::size_t cols = static_cast<std::size_t>(g.n[1]) * g.nc[2];
  const std::size_t plane = static_cast<std::size_t>(g.n[1]) * g.n[2];
  const int planes = g.stage_a[m_rank].box.extent(0);
  x_backward(1, &in);
  if constexpr (k_host_accessible) Kokkos::fence();  // ready's code reads the x derivative
  for (int x = 0; x < planes; ++x) {
    {
      Timed t(m_times.local);
      for (int d = 1; d < 3; ++d) {
        impl::times_ik_plane(m_pa[0] + x * cols, g.n, g.nc[2], d, unit_k[static_cast<std::size_t>(d)], m_plane.data());
        m_c2r_plane->execute(m_plane.data(), out[d] + x * plane);
      }
    }
    if (ready) ready(x + 1);
  }
  m_times.launches += 2 * planes;
}

}  // namespace spotrun::fft
