#include "fluid_solver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "comm/timing.hpp"

namespace spotrun::fluid {
namespace {

// cuFFT on a CUDA build, FFTW on a host build (fft::backend::Default).
using DefaultBackend = fft::backend::Default;

constexpr double k_two_pi = 6.283185307179586476925286766559;

// Rows of the (3, n) fields are padded to 8 values so that every row is aligned like the first (64 bytes
// for doubles): FFTW executes its plans only on arrays aligned like those it planned for. The distances
// the batched transforms are planned for (fluid_batching).
std::size_t padded(std::size_t n) { return fft::padded_field(n); }

int largest_prime_factor(int n) {
  int largest = 1;
  for (int p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      largest = p;
      n /= p;
    }
  return n > 1 ? std::max(largest, n) : largest;
}

std::string size_text(const std::array<int, 3>& n) {
  return "[" + std::to_string(n[0]) + ", " + std::to_string(n[1]) + ", " + std::to_string(n[2]) + "]";
}

void validate(const FluidConfig& c) {
  for (int d = 0; d < 3; ++d)
    if (c.n[d] < 4)
      throw InputError("fluid.n = " + size_text(c.n) +
                       ": every size must be at least 4 (the 2/3 rule keeps |k| <= (n - 1) / 3, so smaller grids "
                       "cannot hold wavenumber 1)");
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw InputError(what);
  };
  need(std::isfinite(c.viscosity) && c.viscosity >= 0, "fluid.viscosity = " + significant(c.viscosity, 6) + ": must be >= 0");
  need(std::isfinite(c.dt) && c.dt > 0, "fluid.dt = " + significant(c.dt, 6) + ": must be > 0");
  need(std::isfinite(c.cfl) && c.cfl >= 0, "fluid.cfl = " + significant(c.cfl, 6) + ": must be >= 0 (0: fixed dt)");
  need(std::isfinite(c.cfl_limit) && c.cfl_limit > 0, "fluid.cfl_limit = " + significant(c.cfl_limit, 6) + ": must be > 0");
  need(c.cfl <= c.cfl_limit, "fluid.cfl = " + significant(c.cfl, 6) + " exceeds fluid.cfl_limit = " + significant(c.cfl_limit, 6));
  need(std::isfinite(c.time_end) && c.time_end >= 0, "fluid.time_end = " + significant(c.time_end, 6) + ": must be >= 0");
  need(c.random_peak > 0, "fluid.random_peak must be > 0");
  need(c.random_energy > 0, "fluid.random_energy must be > 0");
  need(c.forcing_rate >= 0, "fluid.forcing_rate must be >= 0");
  need(c.forcing_kmax > 0, "fluid.forcing_kmax must be > 0");
  need(c.spectrum_every >= 0 && c.field_every >= 0, "fluid.spectrum_every and fluid.field_every must be >= 0");
  need(c.blowup_factor > 1, "fluid.blowup_factor must be > 1");
}

fft::FftGeometry make_geometry(const FluidConfig& c, int nranks) {
  try {
    return fft::make_fft_geometry(c.n, nranks, c.decomposition, c.process_grid);
  } catch (const InputError& e) {
    throw InputError(std::string("fluid.n / fluid.decomposition: ") + e.what());
  }
}

}  // namespace

fft::SpectralBand kept_band(const FluidConfig& c) {
  fft::SpectralBand band;
  for (int d = 0; d < 3; ++d) band.kmax[d] = c.dealias == Dealias::TwoThirds ? (c.n[d] - 1) / 3 : (c.n[d] - 1) / 2;
  return band;
}

fft::FftBatching fluid_batching(const FluidConfig& config, const fft::FftGeometry& geometry, int rank) {
  fft::FftBatching b;
  const bool batch = config.fft_batch == FftBatch::Fields || (config.fft_batch == FftBatch::Auto && !fft::k_host_accessible);
  if (!batch) return b;
  b.max_batch = k_fluid_max_batch;
  b.real_distance = padded(geometry.real[rank].count());
  b.complex_distance = padded(geometry.spectral[rank].count());
  return b;
}

std::unique_ptr<fft::DistributedFft> make_fluid_fft(const FluidConfig& config, const fft::FftGeometry& geometry,
                                                    const comm::Communicator& comm, comm::Transport& transport,
                                                    bool pruned, const fft::FftBatching& batching) {
  std::optional<fft::SpectralBand> band;
  if (pruned) band = kept_band(config);
  return std::make_unique<fft::DistributedFft>(geometry, comm, transport, DefaultBackend{}, config.fft_plan, band,
                                               batching);
}

void check_fresh_start(const FluidConfig& config, int nranks) {
  validate(config);
  make_geometry(config, nranks);
}

FluidSolver::FluidSolver(const FluidConfig& config, const comm::Communicator& comm, comm::Transport& transport,
                         bool restoring)
    : SolverBase("fluid", "point-steps"), m_cfg(config), m_comm(comm), m_transport(transport) {
  validate(m_cfg);
  const fft::FftGeometry geometry = make_geometry(m_cfg, comm.size());
  for (int d = 0; d < 3; ++d) {
    const int p = largest_prime_factor(m_cfg.n[d]);
    if (p > 7)
      m_warnings.push_back("fluid.n[" + std::to_string(d) + "] = " + std::to_string(m_cfg.n[d]) +
                           " has the prime factor " + std::to_string(p) +
                           ": FFTs of this size are exact but slow; sizes of the form 2^a 3^b 5^c 7^d are fast");
  }
  // Pruned transforms: the rows the dealiasing zeroes are not transformed (docs/fluid.md, "Pruned
  // transforms"); with fluid.dealias = "none" the band drops the Nyquist modes only.
  // Batched: the components of a field (and velocity with vorticity) in one transform (docs/fluid.md).
  m_fft = make_fluid_fft(m_cfg, geometry, comm, transport, m_cfg.prune_transforms,
                         fluid_batching(m_cfg, geometry, comm.rank()));

  const std::size_t nr = padded(m_fft->real_size()), ns = padded(m_fft->complex_size());
  m_uhat = SpectralField3("fluid::uhat", 3, ns);
  m_acc = SpectralField3("fluid::rk_accumulator", 3, ns);
  m_stage = SpectralField3("fluid::rk_stage", 3, ns);
  m_work = SpectralField3("fluid::work_hat", 3, ns);
  m_u = Field3("fluid::u", 3, nr);
  m_w = Field3("fluid::omega", 3, nr);
  const auto& nc = m_fft->geometry().nc;
  const SpectralIndex si = spectral_index();
  for (int d = 0; d < 3; ++d) {
    m_decay[d] = Kokkos::View<double*, fft::MemSpace>("fluid::decay", nc[d]);
    m_k[d] = Kokkos::View<double*, fft::MemSpace>("fluid::wavenumber", nc[d]);
    m_keep[d] = Kokkos::View<double*, fft::MemSpace>("fluid::keep", nc[d]);
    auto hk = Kokkos::create_mirror_view(m_k[d]);
    auto hkeep = Kokkos::create_mirror_view(m_keep[d]);
    for (int i = 0; i < nc[d]; ++i) {
      hk(i) = derivative_wavenumber(i, m_cfg.n[d]);
      const int s = signed_wavenumber(i, m_cfg.n[d]);
      hkeep(i) = (2 * i != m_cfg.n[d] && std::abs(s) <= si.kmax[d]) ? 1.0 : 0.0;
    }
    Kokkos::deep_copy(m_k[d], hk);
    Kokkos::deep_copy(m_keep[d], hkeep);
  }
  m_dt = m_cfg.dt;
  if (!restoring) init_fields();
}

FluidSolver::~FluidSolver() = default;

SpectralIndex FluidSolver::spectral_index() const {
  SpectralIndex s;
  s.block = BlockIndex(m_fft->spectral_layout());
  for (int d = 0; d < 3; ++d) {
    s.n[d] = m_cfg.n[d];
    s.kmax[d] = m_cfg.dealias == Dealias::TwoThirds ? (m_cfg.n[d] - 1) / 3 : m_cfg.n[d];
  }
  return s;
}

void FluidSolver::forward_fields(int count, const double* const in[], fft::Complex* const out[]) {
  const int most = m_fft->max_batch();
  for (int f = 0; f < count; f += most) m_fft->forward_many(std::min(most, count - f), in + f, out + f);
}

void FluidSolver::backward_fields(int count, const fft::Complex* const in[], double* const out[]) {
  const int most = m_fft->max_batch();
  for (int f = 0; f < count; f += most) m_fft->backward_many(std::min(most, count - f), in + f, out + f);
}

void FluidSolver::forward3(const Field3& in, const SpectralField3& out) {
  const double* ins[3] = {row(in, 0), row(in, 1), row(in, 2)};
  fft::Complex* outs[3] = {row(out, 0), row(out, 1), row(out, 2)};
  forward_fields(3, ins, outs);
}

void FluidSolver::backward3(const SpectralField3& in, const Field3& out) {
  const fft::Complex* ins[3] = {row(in, 0), row(in, 1), row(in, 2)};
  double* outs[3] = {row(out, 0), row(out, 1), row(out, 2)};
  backward_fields(3, ins, outs);
}

void FluidSolver::to_spectral(const Field3& u, SpectralField3& uhat) {
  forward3(u, uhat);
  const SpectralIndex si = spectral_index();
  const double scale = m_fft->scale();
  auto v = uhat;
  Kokkos::parallel_for(
      "fluid::project", fft::Policy(0, m_fft->complex_size()), KOKKOS_LAMBDA(std::size_t m) {
        int g[3];
        double k[3];
        si.wavenumbers(m, k, g);
        const double kk = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        fft::Complex a[3] = {v(0, m) * scale, v(1, m) * scale, v(2, m) * scale};
        const fft::Complex ka = k[0] * a[0] + k[1] * a[1] + k[2] * a[2];
        const bool keep = si.kept(g);
        for (int c = 0; c < 3; ++c) v(c, m) = keep ? (kk > 0 ? a[c] - (k[c] / kk) * ka : a[c]) : fft::Complex(0, 0);
      });
}

void FluidSolver::zero_dropped_modes(SpectralField3& uhat) {
  auto mx = m_keep[0], my = m_keep[1], mz = m_keep[2];
  auto v = uhat;
  for_each_in_block("fluid::zero_dropped", BlockIndex(m_fft->spectral_layout()),
                    KOKKOS_LAMBDA(std::size_t m, const int* g) {
                      if (mx(g[0]) * my(g[1]) * mz(g[2]) == 0)
                        for (int c = 0; c < 3; ++c) v(c, m) = fft::Complex(0, 0);
                    });
}

double FluidSolver::velocity_max(const SpectralField3& uhat) {
  backward3(uhat, m_u);
  const double inv_dx[3] = {m_cfg.n[0] / k_two_pi, m_cfg.n[1] / k_two_pi, m_cfg.n[2] / k_two_pi};
  const double ix = inv_dx[0], iy = inv_dx[1], iz = inv_dx[2];
  auto u = m_u;
  const double inf = std::numeric_limits<double>::infinity();
  double local = 0;
  Kokkos::parallel_reduce(
      "fluid::velocity_max", fft::Policy(0, m_fft->real_size()),
      KOKKOS_LAMBDA(std::size_t p, double& mx) {
        double s = ::fabs(u(0, p)) * ix + ::fabs(u(1, p)) * iy + ::fabs(u(2, p)) * iz;
        if (!(s < inf)) s = inf;  // NaN or inf: report infinity
        if (s > mx) mx = s;
      },
      Kokkos::Max<double>(local));
  return m_comm.max(local);
}

KeptBlock FluidSolver::kept_block() const {
  return KeptBlock(m_fft->spectral_layout(), kept_band(m_cfg), m_cfg.n);
}

void FluidSolver::vorticity(const SpectralField3& uhat) {
  auto kx = m_k[0], ky = m_k[1], kz = m_k[2];
  auto us = uhat;
  auto w = m_work;
  // The kept modes only: outside them uhat is zero and so is m_work (the pruned forward transforms
  // write zeros there or leave the zeros there).
  for_each_kept_in_block("fluid::vorticity", kept_block(), KOKKOS_LAMBDA(std::size_t m, const int* g) {
    const double k0 = kx(g[0]), k1 = ky(g[1]), k2 = kz(g[2]);
    const fft::Complex i(0, 1);
    const fft::Complex a0 = us(0, m), a1 = us(1, m), a2 = us(2, m);
    w(0, m) = i * (k1 * a2 - k2 * a1);
    w(1, m) = i * (k2 * a0 - k0 * a2);
    w(2, m) = i * (k0 * a1 - k1 * a0);
  });
}

double FluidSolver::lamb_vector(const SpectralField3& uhat_s, bool want_umax) {
  // Velocity and vorticity in one batch of 6: one transpose per stage for both (the components of each
  // lie at a uniform distance, so the local transforms at the ends run 3 fields per execution).
  {
    const fft::Complex* ins[6] = {row(uhat_s, 0), row(uhat_s, 1), row(uhat_s, 2),
                                  row(m_work, 0), row(m_work, 1), row(m_work, 2)};
    double* outs[6] = {row(m_u, 0), row(m_u, 1), row(m_u, 2), row(m_w, 0), row(m_w, 1), row(m_w, 2)};
    backward_fields(6, ins, outs);
  }

  auto u = m_u;
  auto om = m_w;
  double umax = 0;
  const double inf = std::numeric_limits<double>::infinity();
  const std::size_t np = m_fft->real_size();
  if (want_umax) {
    const double ix = m_cfg.n[0] / k_two_pi, iy = m_cfg.n[1] / k_two_pi, iz = m_cfg.n[2] / k_two_pi;
    Kokkos::parallel_reduce(
        "fluid::lamb_vector_cfl", fft::Policy(0, np),
        KOKKOS_LAMBDA(std::size_t p, double& mx) {
          const double u0 = u(0, p), u1 = u(1, p), u2 = u(2, p);
          const double w0 = om(0, p), w1 = om(1, p), w2 = om(2, p);
          om(0, p) = u1 * w2 - u2 * w1;
          om(1, p) = u2 * w0 - u0 * w2;
          om(2, p) = u0 * w1 - u1 * w0;
          double s = ::fabs(u0) * ix + ::fabs(u1) * iy + ::fabs(u2) * iz;
          if (!(s < inf)) s = inf;
          if (s > mx) mx = s;
        },
        Kokkos::Max<double>(umax));
  } else {
    Kokkos::parallel_for(
        "fluid::lamb_vector", fft::Policy(0, np), KOKKOS_LAMBDA(std::size_t p) {
          const double u0 = u(0, p), u1 = u(1, p), u2 = u(2, p);
          const double w0 = om(0, p), w1 = om(1, p), w2 = om(2, p);
          om(0, p) = u1 * w2 - u2 * w1;
          om(1, p) = u2 * w0 - u0 * w2;
          om(2, p) = u0 * w1 - u1 * w0;
        });
  }
  forward3(m_w, m_work);
  // Unpruned transforms write the aliases outside the kept modes, where the kernels that follow do not
  // look and the next vorticity must find zeros.
  if (!m_fft->band()) zero_dropped_modes(m_work);
  return umax;
}

namespace impl {
// exp(-nu k^2 h / 2) for every wavenumber k of one direction. A free function with external linkage:
// CUDA extended lambdas may not live in private member functions.
void fill_decay(const Kokkos::View<double*, fft::MemSpace>& k, const Kokkos::View<double*, fft::MemSpace>& decay,
                double nu, double h) {
  Kokkos::parallel_for(
      "fluid::decay", fft::Policy(0, decay.extent(0)),
      KOKKOS_LAMBDA(std::size_t i) { decay(i) = ::exp(-nu * k(i) * k(i) * 0.5 * h); });
}
}  // namespace impl

void FluidSolver::update_decay(double h) {
  if (h == m_decay_h) return;
  // On the device (with an adaptive step this runs every step: no host round trip).
  for (int d = 0; d < 3; ++d) impl::fill_decay(m_k[d], m_decay[d], m_cfg.viscosity, h);
  m_decay_h = h;
}

// One stage of RK4 with the integrating factor exp(-nu k^2 t) (E_h over h/2, E over h):
//   N1 = N(u_n):  acc = E (u_n + h/6 N1),   stage = E_h (u_n + h/2 N1)
//   N2:           acc += h/3 E_h N2,        stage = E_h u_n + h/2 N2
//   N3:           acc += h/3 E_h N3,        stage = E u_n + h E_h N3
//   N4:           u_n+1 = acc + h/6 N4
// where N = P[FFT(u x omega)] on the kept modes (+ A u_stage on the forced band |k| <= k_f). After
// stages 1-3 the vorticity of the new stage field is written over FFT(u x omega) (read first).
template <int Stage>
void FluidSolver::rk_stage(double h, const SpectralField3& uhat_s) {
  const double scale = m_fft->scale();
  const bool forced = m_cfg.forcing == Forcing::Linear;
  const double rate = m_cfg.forcing_rate, kf2 = m_cfg.forcing_kmax * m_cfg.forcing_kmax;
  auto kx = m_k[0], ky = m_k[1], kz = m_k[2];
  auto dx = m_decay[0], dy = m_decay[1], dz = m_decay[2];
  auto l = m_work, un = m_uhat, acc = m_acc, st = m_stage, us = uhat_s;
  // The kept modes only. A mode the dealiasing drops (or a Nyquist mode) is zero in the state, the
  // accumulator and the stage field from the start (to_spectral, init and restore make it so, and no
  // stage writes it), and in FFT(u x omega), where the next vorticity goes: the pruned forward
  // transform writes zeros there or leaves the zeros of the earlier vorticity.
  for_each_kept_in_block("fluid::rk4_stage", kept_block(), KOKKOS_LAMBDA(std::size_t m, const int* g) {
    const double k[3] = {kx(g[0]), ky(g[1]), kz(g[2])};
    const double kk = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
    // Non-mean modes: project; the mean mode gets no nonlinear term.
    const double keep = kk > 0 ? 1.0 : 0.0;
    const double s = keep * scale;
    fft::Complex nl[3] = {l(0, m) * s, l(1, m) * s, l(2, m) * s};
    const fft::Complex kl = (k[0] * nl[0] + k[1] * nl[1] + k[2] * nl[2]) * (kk > 0 ? 1.0 / kk : 0.0);
    for (int c = 0; c < 3; ++c) nl[c] -= k[c] * kl;
    if (forced && kk <= kf2 && keep > 0)
      for (int c = 0; c < 3; ++c) nl[c] += rate * us(c, m);
    const double eh = dx(g[0]) * dy(g[1]) * dz(g[2]);
    const double e = eh * eh;
    fft::Complex next[3];
    for (int c = 0; c < 3; ++c) {
      const fft::Complex u0 = un(c, m);
      if (Stage == 1) {
        acc(c, m) = e * (u0 + (h / 6) * nl[c]);
        next[c] = eh * (u0 + (h / 2) * nl[c]);
      } else if (Stage == 2) {
        acc(c, m) += (h / 3) * eh * nl[c];
        next[c] = eh * u0 + (h / 2) * nl[c];
      } else if (Stage == 3) {
        acc(c, m) += (h / 3) * eh * nl[c];
        next[c] = e * u0 + (h * eh) * nl[c];
      } else {
        un(c, m) = acc(c, m) + (h / 6) * nl[c];
      }
    }
    if (Stage < 4) {
      const fft::Complex i(0, 1);
      for (int c = 0; c < 3; ++c) st(c, m) = next[c];
      l(0, m) = i * (k[1] * next[2] - k[2] * next[1]);
      l(1, m) = i * (k[2] * next[0] - k[0] * next[2]);
      l(2, m) = i * (k[0] * next[1] - k[1] * next[0]);
    }
  });
}

void FluidSolver::check_cfl(double umax, bool at_setup) const {
  if (m_cfg.cfl > 0) return;
  const double cfl = m_cfg.dt * umax;
  if (cfl <= m_cfg.cfl_limit) return;
  std::ostringstream msg;
  msg << "fluid.dt = " << significant(m_cfg.dt, 6) << " violates the CFL limit at step " << m_step << " (t = " << significant(m_time, 6)
      << "): CFL = dt * max(|u|/dx + |v|/dy + |w|/dz) = " << significant(cfl, 6) << " > fluid.cfl_limit = " << significant(m_cfg.cfl_limit, 6)
      << ". Reduce fluid.dt below " << significant(m_cfg.cfl_limit / umax, 6) << " or set fluid.cfl for an adaptive step.";
  // umax is a global maximum: every rank reaches this verdict together.
  if (at_setup) throw InputError(msg.str());
  throw RunError(msg.str());
}

void FluidSolver::setup() {
  if (m_setup_done) return;
  const Diagnostics d = diagnostics();
  if (!std::isfinite(d.energy) || !std::isfinite(d.umax))
    throw InputError("fluid: the initial velocity field is not finite");
  if (!m_restored) m_energy_ref = d.energy;
  if (m_cfg.cfl > 0) {
    if (!m_restored) m_dt = d.umax > 0 ? std::min(m_cfg.dt, m_cfg.cfl / d.umax) : m_cfg.dt;
  } else {
    check_cfl(d.umax, true);
  }
  m_setup_done = true;
}

std::string FluidSolver::instability_hint() const {
  const std::string grid = "the grid fluid.n = " + size_text(m_cfg.n) + " under-resolves the flow (refine it)";
  if (m_cfg.cfl > 0)
    return "the CFL number fluid.cfl = " + significant(m_cfg.cfl, 6) + " (steps of at most fluid.dt = " + significant(m_cfg.dt, 6) +
           ") is too large, or " + grid;
  return "the time step fluid.dt = " + significant(m_cfg.dt, 6) +
         " is too large for the CFL condition (lower it, or set fluid.cfl for an adaptive step), or " + grid;
}

bool FluidSolver::finished() const {
  return m_cfg.time_end > 0 && m_cfg.time_end - m_time <= 1e-9 * m_cfg.dt;
}

double FluidSolver::progress_fraction() const {
  if (m_cfg.time_end <= 0) return 0;
  return finished() ? 1.0 : std::min(1.0, std::max(0.0, m_time / m_cfg.time_end));
}

std::string FluidSolver::progress_measure() const {
  if (m_cfg.time_end <= 0) return "";
  return "time " + significant(m_time, 4) + " of " + significant(m_cfg.time_end, 6);
}

void FluidSolver::step(bool /*want_thermo*/) {
  if (!m_setup_done) throw std::logic_error("FluidSolver::step before setup()");
  const auto t0 = std::chrono::steady_clock::now();
  const double fft0 = m_fft->times().local + m_fft->times().reshape;
  // Stage 1 evaluates u at t_n in physical space anyway: its maximum gives the CFL number, the adaptive
  // step and the blow-up check with one global reduction.
  vorticity(m_uhat);
  const double umax = m_comm.max(lamb_vector(m_uhat, true));
  if (!std::isfinite(umax)) {
    std::ostringstream msg;
    msg << "fluid: blow-up at step " << m_step << " (t = " << significant(m_time, 6)
        << "): the velocity is not finite. Reduce fluid.dt (or fluid.cfl) or refine fluid.n.";
    throw RunError(msg.str());
  }
  double h = m_cfg.dt;
  if (m_cfg.cfl > 0) {
    if (umax > 0) h = std::min(m_cfg.dt, m_cfg.cfl / umax);
    if (h < 1e-12 * m_cfg.dt) {
      std::ostringstream msg;
      msg << "fluid: blow-up at step " << m_step << " (t = " << significant(m_time, 6) << "): the adaptive time step collapsed to "
          << significant(h, 6) << " (max |u|/dx = " << significant(umax, 6) << ")";
      throw RunError(msg.str());
    }
  } else {
    check_cfl(umax, false);
  }
  if (m_cfg.time_end > 0 && !finished()) {
    const double remaining = m_cfg.time_end - m_time;
    if (remaining < h * (1 + 1e-9)) h = remaining;
  }
  update_decay(h);
  rk_stage<1>(h, m_uhat);
  lamb_vector(m_stage, false);
  rk_stage<2>(h, m_stage);
  lamb_vector(m_stage, false);
  rk_stage<3>(h, m_stage);
  lamb_vector(m_stage, false);
  rk_stage<4>(h, m_stage);
  // The step's time is complete on a host build; on a device the fence makes the step timer hold the
  // step's kernels and transforms rather than the time to queue them (docs/gpu.md, "Timings").
  if constexpr (fft::k_host_accessible) Kokkos::fence();
  comm::fence_for_timing();
  m_time += h;
  m_dt = h;
  ++m_step;
  m_step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m_step_fft_seconds += m_fft->times().local + m_fft->times().reshape - fft0;
}

}  // namespace spotrun::fluid
