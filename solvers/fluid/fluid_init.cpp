// Initial velocity fields: Taylor-Green (3D and 2D), and a random solenoidal field with a given spectrum
// whose every Fourier mode is a pure function of (seed, global wavenumber), so the field is the same on
// any rank count and decomposition.
#include <cmath>

#include "fluid_solver.hpp"

namespace spotrun::fluid {
namespace {

constexpr double k_two_pi = 6.283185307179586476925286766559;

// The splitmix64 finaliser: a bijective 64-bit mix (Steele, Lea, Flood 2014).
KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1], keyed by (seed, mode, draw).
KOKKOS_INLINE_FUNCTION double keyed_uniform(std::uint64_t seed, std::uint64_t mode, std::uint64_t draw) {
  std::uint64_t h = mix64(seed ^ 0x666c756964ull);  // "fluid": a stream of its own
  h = mix64(h ^ mode);
  h = mix64(h ^ draw);
  return (static_cast<double>(h >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

// One key per signed wavenumber triple (|k| < 2^20 in every direction).
KOKKOS_INLINE_FUNCTION std::uint64_t mode_key(int kx, int ky, int kz) {
  const std::uint64_t off = 1u << 20;
  return ((static_cast<std::uint64_t>(kx + static_cast<int>(off)) << 42) |
          (static_cast<std::uint64_t>(ky + static_cast<int>(off)) << 21) | static_cast<std::uint64_t>(kz + static_cast<int>(off)));
}

}  // namespace

void FluidSolver::init_fields() {
  switch (m_cfg.init) {
    case InitKind::TaylorGreen: init_taylor_green(true); break;
    case InitKind::TaylorGreen2d: init_taylor_green(false); break;
    case InitKind::Random: init_random(); break;
  }
}

void FluidSolver::init_taylor_green(bool three_d) {
  const BlockIndex bi(m_fft->real_layout());
  const double hx = k_two_pi / m_cfg.n[0], hy = k_two_pi / m_cfg.n[1], hz = k_two_pi / m_cfg.n[2];
  auto u = m_u;
  Kokkos::parallel_for(
      "fluid::init::taylor_green", fft::Policy(0, m_fft->real_size()), KOKKOS_LAMBDA(std::size_t p) {
        int g[3];
        bi.global(p, g);
        const double x = hx * g[0], y = hy * g[1], z = hz * g[2];
        const double cz = three_d ? ::cos(z) : 1.0;
        u(0, p) = ::sin(x) * ::cos(y) * cz;
        u(1, p) = -::cos(x) * ::sin(y) * cz;
        u(2, p) = 0.0;
      });
  to_spectral(m_u, m_uhat);
}

// Rogallo-style random field: every kept mode k gets a complex Gaussian vector projected normal to k,
// normalised, times sqrt(E(|k|) / (2 pi |k|^2)) with E(k) = k^4 exp(-2 (k / k_p)^2), so that a shell
// holds about E(k) (4 pi k^2 modes of energy |uhat|^2 / 2 each). On the plane kz = 0 a mode and its
// mirror -k are conjugates (the field is real): the mode with ky < 0 (or ky == 0, kx < 0) takes the
// conjugate of its mirror's value. Finally the field is scaled to the energy fluid.random_energy.
void FluidSolver::init_random() {
  const SpectralIndex si = spectral_index();
  const std::uint64_t seed = m_cfg.seed;
  const double kp = m_cfg.random_peak;
  auto v = m_uhat;
  Kokkos::parallel_for(
      "fluid::init::random", fft::Policy(0, m_fft->complex_size()), KOKKOS_LAMBDA(std::size_t m) {
        int g[3];
        double kd[3];
        si.wavenumbers(m, kd, g);
        for (int c = 0; c < 3; ++c) v(c, m) = fft::Complex(0, 0);
        int s[3] = {signed_wavenumber(g[0], si.n[0]), signed_wavenumber(g[1], si.n[1]), signed_wavenumber(g[2], si.n[2])};
        if (!si.kept(g) || (s[0] == 0 && s[1] == 0 && s[2] == 0)) return;
        bool mirror = false;
        if (s[2] == 0 && (s[1] < 0 || (s[1] == 0 && s[0] < 0))) {
          s[0] = -s[0];
          s[1] = -s[1];
          mirror = true;
        }
        const std::uint64_t key = mode_key(s[0], s[1], s[2]);
        fft::Complex a[3];
        for (int c = 0; c < 3; ++c) {
          const double u1 = keyed_uniform(seed, key, 2 * c), u2 = keyed_uniform(seed, key, 2 * c + 1);
          const double r = ::sqrt(-2.0 * ::log(u1)), th = k_two_pi * u2;
          a[c] = fft::Complex(r * ::cos(th), r * ::sin(th));
        }
        const double kk = static_cast<double>(s[0]) * s[0] + static_cast<double>(s[1]) * s[1] + static_cast<double>(s[2]) * s[2];
        const fft::Complex ka = (double(s[0]) * a[0] + double(s[1]) * a[1] + double(s[2]) * a[2]) * (1.0 / kk);
        double norm2 = 0;
        for (int c = 0; c < 3; ++c) {
          a[c] -= static_cast<double>(s[c]) * ka;
          norm2 += a[c].real() * a[c].real() + a[c].imag() * a[c].imag();
        }
        if (!(norm2 > 0)) return;
        const double k = ::sqrt(kk), q = k / kp;
        const double spectrum = k * k * k * k * ::exp(-2.0 * q * q);
        const double amp = ::sqrt(spectrum / (k_two_pi * kk) / norm2);
        for (int c = 0; c < 3; ++c) {
          const fft::Complex val = amp * a[c];
          v(c, m) = mirror ? Kokkos::conj(val) : val;
        }
      });
  const double e = diagnostics_energy();
  if (e > 0) {
    const double f = std::sqrt(m_cfg.random_energy / e);
    Kokkos::parallel_for(
        "fluid::init::scale", fft::Policy(0, m_fft->complex_size()), KOKKOS_LAMBDA(std::size_t m) {
          for (int c = 0; c < 3; ++c) v(c, m) *= f;
        });
  }
}

}  // namespace spotrun::fluid
