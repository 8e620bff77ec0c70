// Diagnostics (thermo columns, energy spectrum), output hook and summary of the fluid solver.
#include <cmath>
#include <limits>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "fluid_solver.hpp"
#include "io/field_output.hpp"

namespace spotrun::fluid {
namespace {

constexpr double k_two_pi = 6.283185307179586476925286766559;


}  // namespace

// Sums over the half spectrum with weights w (2 for modes whose conjugate is not stored):
//   energy      = 1/2 sum w |uhat|^2                      = 1/2 <u.u>
//   dissipation = nu sum w (k^2 |uhat|^2 + |k.uhat|^2)    = 2 nu <S:S>
//   enstrophy   = 1/2 sum w (k^2 |uhat|^2 - |k.uhat|^2)   = 1/2 <omega.omega>
// Exact for the band-limited fields of the grid (Parseval).
void FluidSolver::spectral_sums(double& energy, double& dissipation, double& enstrophy) {
  const SpectralIndex si = spectral_index();
  auto v = m_uhat;
  double s[3] = {0, 0, 0};
  Kokkos::parallel_reduce(
      "fluid::diagnostics::spectral", fft::Policy(0, m_fft->complex_size()),
      KOKKOS_LAMBDA(std::size_t m, double& e, double& k2u2, double& ku2) {
        int g[3];
        double k[3];
        si.wavenumbers(m, k, g);
        const double w = si.weight(g);
        const double kk = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        double u2 = 0;
        fft::Complex ku(0, 0);
        for (int c = 0; c < 3; ++c) {
          const fft::Complex a = v(c, m);
          u2 += a.real() * a.real() + a.imag() * a.imag();
          ku += k[c] * a;
        }
        e += w * u2;
        k2u2 += w * kk * u2;
        ku2 += w * (ku.real() * ku.real() + ku.imag() * ku.imag());
      },
      s[0], s[1], s[2]);
  m_comm.sum_in_place(s, 3);
  energy = 0.5 * s[0];
  dissipation = m_cfg.viscosity * (s[1] + s[2]);
  enstrophy = 0.5 * (s[1] - s[2]);
}

double FluidSolver::diagnostics_energy() {
  double e = 0, d = 0, z = 0;
  spectral_sums(e, d, z);
  return e;
}

Diagnostics FluidSolver::diagnostics() {
  Diagnostics out;
  spectral_sums(out.energy, out.dissipation, out.enstrophy);
  // div u = i k.uhat in physical space (round-off for a projected field).
  const SpectralIndex si = spectral_index();
  auto v = m_uhat;
  auto w = m_work;
  Kokkos::parallel_for(
      "fluid::diagnostics::divergence", fft::Policy(0, m_fft->complex_size()), KOKKOS_LAMBDA(std::size_t m) {
        int g[3];
        double k[3];
        si.wavenumbers(m, k, g);
        w(0, m) = fft::Complex(0, 1) * (k[0] * v(0, m) + k[1] * v(1, m) + k[2] * v(2, m));
      });
  m_fft->backward(row(m_work, 0), row(m_w, 0));
  auto div = m_w;
  double local = 0;
  Kokkos::parallel_reduce(
      "fluid::diagnostics::divmax", fft::Policy(0, m_fft->real_size()),
      KOKKOS_LAMBDA(std::size_t p, double& mx) {
        const double a = ::fabs(div(0, p));
        if (!(a <= mx)) mx = a;  // a NaN wins
      },
      Kokkos::Max<double>(local));
  out.divmax = m_comm.max(local);
  out.umax = velocity_max(m_uhat);
  out.cfl = m_dt * out.umax;
  return out;
}

std::vector<std::string> FluidSolver::thermo_columns() const {
  return {"time", "energy", "dissipation", "enstrophy", "divmax", "cfl"};
}

std::vector<double> FluidSolver::thermo() {
  const Diagnostics d = diagnostics();
  // Every value is a global reduction: every rank reaches the same verdict.
  if (!std::isfinite(d.energy) || (m_energy_ref > 0 && d.energy > m_cfg.blowup_factor * m_energy_ref)) {
    std::ostringstream msg;
    msg << "fluid: blow-up at step " << m_step << " (t = " << significant(m_time, 6) << "): the energy " << significant(d.energy, 6)
        << " exceeds fluid.blowup_factor = " << significant(m_cfg.blowup_factor, 6) << " times the initial energy "
        << significant(m_energy_ref, 6) << " (or is not finite)"
        << ". Reduce fluid.dt (or fluid.cfl) or refine fluid.n.";
    throw RunError(msg.str());
  }
  return {m_time, d.energy, d.dissipation, d.enstrophy, d.divmax, d.cfl};
}

int FluidSolver::spectrum_bins() const {
  double kmax = 0;
  for (int d = 0; d < 3; ++d) kmax += 0.25 * m_cfg.n[d] * m_cfg.n[d];
  return static_cast<int>(std::floor(std::sqrt(kmax) + 0.5)) + 1;
}

// The shells of this rank's kept modes, once: a counting sort of the kept modes by shell (storage order
// within a shell), cut into chunks of at most k_spectrum_chunk modes that never span two shells.
void FluidSolver::make_spectrum_shells() {
  const int nbins = spectrum_bins();
  const SpectralIndex si = spectral_index();
  const KeptBlock kb = kept_block();
  const BlockIndex& bi = kb.block;
  std::vector<int> bin_of;  // per kept mode, in storage order
  std::vector<std::size_t> offset_of;
  std::vector<std::size_t> count(nbins, 0);
  const int o0 = bi.ord[0], o1 = bi.ord[1], o2 = bi.ord[2];
  for (int a = 0; a < kb.total(o0); ++a)
    for (int b = 0; b < kb.total(o1); ++b)
      for (int c = 0; c < kb.total(o2); ++c) {
        int g[3];
        const std::size_t m = bi.at(kb.local(o0, a), kb.local(o1, b), kb.local(o2, c), g);
        int bin = static_cast<int>(std::floor(si.magnitude(g) + 0.5));
        if (bin >= nbins) bin = nbins - 1;
        bin_of.push_back(bin);
        offset_of.push_back(m);
        ++count[bin];
      }
  std::vector<std::size_t> start(nbins + 1, 0);
  for (int b = 0; b < nbins; ++b) start[b + 1] = start[b] + count[b];
  std::vector<std::size_t> fill(start.begin(), start.end() - 1);
  auto modes = Kokkos::View<std::size_t*, fft::MemSpace>("fluid::spectrum_modes", offset_of.size());
  auto hmodes = Kokkos::create_mirror_view(modes);
  for (std::size_t i = 0; i < offset_of.size(); ++i) hmodes(fill[bin_of[i]]++) = offset_of[i];
  // Chunks: shell by shell, each shell cut into pieces of at most k_spectrum_chunk modes.
  std::vector<std::size_t> chunk_begin;
  std::vector<int> first_chunk(nbins + 1, 0);
  for (int b = 0; b < nbins; ++b) {
    first_chunk[b] = static_cast<int>(chunk_begin.size());
    for (std::size_t i = start[b]; i < start[b + 1]; i += k_spectrum_chunk) chunk_begin.push_back(i);
  }
  first_chunk[nbins] = static_cast<int>(chunk_begin.size());
  chunk_begin.push_back(start[nbins]);  // the end of the last chunk
  auto chunks = Kokkos::View<std::size_t*, fft::MemSpace>("fluid::spectrum_chunks", chunk_begin.size());
  auto hchunks = Kokkos::create_mirror_view(chunks);
  for (std::size_t i = 0; i < chunk_begin.size(); ++i) hchunks(i) = chunk_begin[i];
  auto shells = Kokkos::View<int*, fft::MemSpace>("fluid::spectrum_shells", nbins + 1);
  auto hshells = Kokkos::create_mirror_view(shells);
  for (int b = 0; b <= nbins; ++b) hshells(b) = first_chunk[b];
  Kokkos::deep_copy(modes, hmodes);
  Kokkos::deep_copy(chunks, hchunks);
  Kokkos::deep_copy(shells, hshells);
  m_spectrum_modes = modes;
  m_spectrum_chunks = chunks;
  m_spectrum_shells = shells;
  m_spectrum_partial = Kokkos::View<double*, fft::MemSpace>("fluid::spectrum_partial", chunk_begin.size() - 1);
  m_spectrum_bins = Kokkos::View<double*, fft::MemSpace>("fluid::spectrum", nbins);
}

// E(k) by a segmented reduction in a fixed order, without atomics: every chunk of a shell's mode list is
// summed in list order, then every shell's chunk sums in chunk order; the ranks' shells are summed by one
// MPI reduction. The same rank count gives the same bits in every run, on the host and on a device.
std::vector<double> FluidSolver::energy_spectrum() {
  if (m_spectrum_bins.extent(0) == 0) make_spectrum_shells();
  const int nbins = static_cast<int>(m_spectrum_bins.extent(0));
  const SpectralIndex si = spectral_index();
  auto v = m_uhat;
  auto modes = m_spectrum_modes;
  auto chunks = m_spectrum_chunks;
  auto shells = m_spectrum_shells;
  auto partial = m_spectrum_partial;
  auto bins = m_spectrum_bins;
  Kokkos::parallel_for(
      "fluid::diagnostics::spectrum_chunks", fft::Policy(0, partial.extent(0)), KOKKOS_LAMBDA(std::size_t c) {
        double sum = 0;
        for (std::size_t i = chunks(c); i < chunks(c + 1); ++i) {
          const std::size_t m = modes(i);
          int g[3];
          si.block.global(m, g);
          double u2 = 0;
          for (int d = 0; d < 3; ++d) u2 += v(d, m).real() * v(d, m).real() + v(d, m).imag() * v(d, m).imag();
          sum += 0.5 * si.weight(g) * u2;
        }
        partial(c) = sum;
      });
  Kokkos::parallel_for(
      "fluid::diagnostics::spectrum_shells", fft::Policy(0, nbins), KOKKOS_LAMBDA(std::size_t b) {
        double sum = 0;
        for (int c = shells(b); c < shells(b + 1); ++c) sum += partial(c);
        bins(b) = sum;
      });
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), bins);
  std::vector<double> e(host.data(), host.data() + nbins);
  m_comm.sum_in_place(e.data(), nbins);
  return e;
}

std::array<std::vector<double>, 3> FluidSolver::velocity() {
  std::array<std::vector<double>, 3> out;
  const std::size_t n = m_fft->real_size();
  backward3(m_uhat, m_u);
  for (int c = 0; c < 3; ++c) {
    auto rowv = Kokkos::subview(m_u, c, std::make_pair(std::size_t(0), n));
    Kokkos::View<double*, Kokkos::HostSpace> host("fluid::velocity_host", n);
    Kokkos::deep_copy(host, rowv);
    out[c].assign(host.data(), host.data() + n);
  }
  return out;
}

bool FluidSolver::writes_outputs_at(std::int64_t step) const {
  return (m_cfg.spectrum_every > 0 && step % m_cfg.spectrum_every == 0) ||
         (m_cfg.field_every > 0 && step % m_cfg.field_every == 0);
}

void FluidSolver::write_outputs(const std::string& outdir, std::int64_t step) {
  const auto& c = m_cfg;
  if (c.spectrum_every > 0 && step % c.spectrum_every == 0) {
    const std::vector<double> e = energy_spectrum();
    std::vector<double> k(e.size());
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<double>(i);
    io::write_spectrum(m_comm, outdir + "/spectrum.h5", step, m_time, k, e);
  }
  if (c.field_every > 0 && step % c.field_every == 0) {
    const PlaneBlock planes = velocity_planes();
    io::FieldPlanes f;
    f.n = {static_cast<std::uint64_t>(c.n[0]), static_cast<std::uint64_t>(c.n[1]), static_cast<std::uint64_t>(c.n[2])};
    f.first_row = planes.first_row;
    f.rows = planes.rows;
    f.components = 3;
    f.values = planes.values.data();
    io::write_field(m_comm, outdir, "velocity", step, m_time, {k_two_pi, k_two_pi, k_two_pi}, f);
  }
}

std::vector<std::string> FluidSolver::summary() {
  std::vector<std::string> lines;
  const auto& g = m_fft->geometry();
  lines.push_back("Fluid grid " + std::to_string(g.n[0]) + " x " + std::to_string(g.n[1]) + " x " +
                  std::to_string(g.n[2]) + ", " + g.describe() + ", FFT backend " + m_fft->backend_name() + " (" +
                  fft::to_string(m_cfg.fft_plan) + " plans), dealiasing " + to_string(m_cfg.dealias));
  lines.push_back("Fluid time " + significant(m_time, 10) + " after " + std::to_string(m_step) + " steps, last dt " + significant(m_dt, 6));
  const auto& t = m_fft->times();
  const double step_time = m_comm.max(m_step_seconds);
  const double step_fft = m_comm.max(m_step_fft_seconds);
  const double local = m_comm.max(t.local), reshape = m_comm.max(t.reshape);
  if (step_time > 0)
    lines.push_back("Fluid time in steps " + significant(step_time, 6) + " s, of which distributed FFTs " + significant(step_fft, 6) +
                    " s (" + significant(100.0 * step_fft / step_time, 3) + "%); all " + std::to_string(t.transforms) +
                    " transforms (with diagnostics and output): local " + significant(local, 6) + " s, transposes " +
                    significant(reshape, 6) + " s");
  for (const auto& w : m_warnings) lines.push_back("Warning: " + w);
  return lines;
}

}  // namespace spotrun::fluid
