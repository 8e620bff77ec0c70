#include "distributed_fft.hpp"

#include "comm/exchange.hpp"

#include <chrono>
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

}  // namespace

DistributedFft::DistributedFft(const FftGeometry& geometry, const comm::Communicator& comm, comm::Transport& transport,
                               std::unique_ptr<impl::LocalBackend> backend)
    : m_geometry(geometry), m_comm(comm), m_rank(comm.rank()), m_backend(std::move(backend)) {
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
  m_wa = ComplexView("fft::work_a", g.stage_a[m_rank].count());
  if (pencil) m_wb = ComplexView("fft::work_b", g.stage_b[m_rank].count());
  m_a_is_g = !pencil && g.stage_a[m_rank] == gather[m_rank];  // one rank: the same box and order
  m_wg = m_a_is_g ? m_wa : ComplexView("fft::work_g", gather[m_rank].count());
  if (pencil) {
    m_a_to_b = std::make_unique<Reshape<Complex>>(make_reshape_plan(g.stage_a, g.stage_b, m_rank), transport,
                                                  "fft::reshape_zy");
    m_b_to_g = std::make_unique<Reshape<Complex>>(make_reshape_plan(g.stage_b, gather, m_rank), transport,
                                                  "fft::reshape_yx");
    m_g_to_b = std::make_unique<Reshape<Complex>>(make_reshape_plan(gather, g.stage_b, m_rank), transport,
                                                  "fft::reshape_xy");
    m_b_to_a = std::make_unique<Reshape<Complex>>(make_reshape_plan(g.stage_b, g.stage_a, m_rank), transport,
                                                  "fft::reshape_yz");
  } else if (!m_a_is_g) {
    m_a_to_g = std::make_unique<Reshape<Complex>>(make_reshape_plan(g.stage_a, gather, m_rank), transport,
                                                  "fft::reshape_slab");
    m_g_to_a = std::make_unique<Reshape<Complex>>(make_reshape_plan(gather, g.stage_a, m_rank), transport,
                                                  "fft::reshape_slab_back");
  }
  // A planning failure on one rank must not leave the others waiting in the first transpose.
  std::string error;
  try {
    make_plans();
  } catch (const std::exception& e) {
    error = std::string("FFT setup on rank ") + std::to_string(m_rank) + ": " + e.what();
  }
  m_comm.agree<RunError>(error.empty(), error);
}

DistributedFft::~DistributedFft() = default;

std::string DistributedFft::backend_name() const { return m_backend->name(); }

std::vector<impl::BatchSpec> plan_specs(const FftGeometry& g, int rank, void* stream) {
  using impl::BatchSpec;
  using impl::TransformKind;
  const Layout3& real = g.real[rank];
  const Layout3& spec = g.spectral[rank];
  std::vector<BatchSpec> specs;
  BatchSpec s;
  s.stream = stream;
  if (g.kind == Decomposition::Pencil) {
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
  specs.push_back(s);
  s.kind = TransformKind::C2R;
  specs.push_back(s);

  if (g.kind == Decomposition::Pencil) {
    const Layout3& b = g.stage_b[rank];
    BatchSpec y;
    y.stream = stream;
    y.rank = 1;
    y.n[0] = g.n[1];
    y.howmany = b.box.extent(0) * b.box.extent(2);
    y.in_place = true;
    y.kind = TransformKind::C2CForward;
    specs.push_back(y);
    y.kind = TransformKind::C2CBackward;
    specs.push_back(y);
  }

  // x: from the gather layout [x][ky][kz] (stride ky*kz between x values) to the spectral layout
  // [ky][kz][kx] and back: the transpose between them is done by the transform.
  const long cols = static_cast<long>(spec.box.extent(1)) * spec.box.extent(2);
  BatchSpec x;
  x.stream = stream;
  x.rank = 1;
  x.n[0] = g.n[0];
  x.howmany = static_cast<int>(cols);
  x.in_place = false;
  x.kind = TransformKind::C2CForward;
  x.istride = cols;
  x.idist = 1;
  x.ostride = 1;
  x.odist = g.n[0];
  specs.push_back(x);
  x.kind = TransformKind::C2CBackward;
  std::swap(x.istride, x.ostride);
  std::swap(x.idist, x.odist);
  specs.push_back(x);
  return specs;
}

void DistributedFft::make_plans() {
  const auto& g = m_geometry;
  // Arrays of the shape and alignment of the caller's, for planning only (FFTW_MEASURE overwrites them).
  RealView real_tmp("fft::plan_real", g.real[m_rank].count());
  ComplexView spec_tmp("fft::plan_spectral", g.spectral[m_rank].count());
  // Every transform on the stream of the default execution space instance: ordered with the kernels.
  const auto specs = plan_specs(g, m_rank, comm::native_stream(ExecSpace()));
  std::size_t k = 0;
  m_r2c = m_backend->make_plan(specs[k++], real_tmp.data(), m_wa.data());
  m_c2r = m_backend->make_plan(specs[k++], m_wa.data(), real_tmp.data());
  if (g.kind == Decomposition::Pencil) {
    m_y_forward = m_backend->make_plan(specs[k++], m_wb.data(), m_wb.data());
    m_y_backward = m_backend->make_plan(specs[k++], m_wb.data(), m_wb.data());
  }
  m_x_forward = m_backend->make_plan(specs[k++], m_wg.data(), spec_tmp.data());
  m_x_backward = m_backend->make_plan(specs[k++], spec_tmp.data(), m_wg.data());
}

void DistributedFft::forward(const double* in, Complex* out) {
  ++m_times.transforms;
  if constexpr (k_host_accessible) Kokkos::fence();  // FFTW reads what the caller's kernels wrote
  {
    Timed t(m_times.local);
    m_r2c->execute(const_cast<double*>(in), m_wa.data());  // r2c preserves its input
  }
  if (m_geometry.kind == Decomposition::Pencil) {
    {
      Timed t(m_times.reshape);
      m_a_to_b->execute(m_wa.data(), m_wb.data());
    }
    {
      Timed t(m_times.local);
      m_y_forward->execute(m_wb.data(), m_wb.data());
    }
    Timed t(m_times.reshape);
    m_b_to_g->execute(m_wb.data(), m_wg.data());
  } else if (!m_a_is_g) {
    Timed t(m_times.reshape);
    m_a_to_g->execute(m_wa.data(), m_wg.data());
  }
  Timed t(m_times.local);
  m_x_forward->execute(m_wg.data(), out);
}

void DistributedFft::backward(const Complex* in, double* out) {
  ++m_times.transforms;
  if constexpr (k_host_accessible) Kokkos::fence();  // FFTW reads what the caller's kernels wrote
  {
    Timed t(m_times.local);
    m_x_backward->execute(const_cast<Complex*>(in), m_wg.data());  // out of place: preserves its input
  }
  if (m_geometry.kind == Decomposition::Pencil) {
    {
      Timed t(m_times.reshape);
      m_g_to_b->execute(m_wg.data(), m_wb.data());
    }
    {
      Timed t(m_times.local);
      m_y_backward->execute(m_wb.data(), m_wb.data());
    }
    Timed t(m_times.reshape);
    m_b_to_a->execute(m_wb.data(), m_wa.data());
  } else if (!m_a_is_g) {
    Timed t(m_times.reshape);
    m_g_to_a->execute(m_wg.data(), m_wa.data());
  }
  Timed t(m_times.local);
  m_c2r->execute(m_wa.data(), out);  // destroys m_wa only
}

}  // namespace spotrun::fft
