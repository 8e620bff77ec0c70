#include "ewald.hpp"

#include <cmath>

#include "comm/errors.hpp"
#include "tally.hpp"

namespace spotrun::md::kspace {

namespace impl {

using IndexView = Kokkos::View<int* [3], Kokkos::LayoutRight, MemSpace>;
using KvecView = Kokkos::View<double* [4], Kokkos::LayoutRight, MemSpace>;
using PhaseView = Kokkos::View<double**, Kokkos::LayoutRight, MemSpace>;
using PairView = Kokkos::View<double* [2], Kokkos::LayoutRight, MemSpace>;

// Where the phases of each axis start in a row of the phase table.
struct PhaseColumns {
  int first[3] = {0, 0, 0};

  // exp(i k.r) of atom i for the k-vector of integer components n: the product of the axes' phases, a
  // negative component taking the conjugate.
  KOKKOS_INLINE_FUNCTION void phase(const PhaseView& p, int i, const int n[3], double& c, double& s) const {
    c = 1.0;
    s = 0.0;
    for (int d = 0; d < 3; ++d) {
      const int m = n[d] < 0 ? -n[d] : n[d];
      const double pc = p(i, 2 * (first[d] + m));
      const double ps = n[d] < 0 ? -p(i, 2 * (first[d] + m) + 1) : p(i, 2 * (first[d] + m) + 1);
      const double t = c * pc - s * ps;
      s = c * ps + s * pc;
      c = t;
    }
  }
};

// Not in the unnamed namespace: CUDA extended lambdas need an enclosing function with external linkage.
void ewald_phases(const Vec3View& x, int nlocal, const comm::Box3& box, const int kmax[3], const PhaseColumns& cols,
                  const PhaseView& phase) {
  const double lo[3] = {box.lo[0], box.lo[1], box.lo[2]};
  const double w[3] = {2.0 * k_pi / box.length(0), 2.0 * k_pi / box.length(1), 2.0 * k_pi / box.length(2)};
  const int km[3] = {kmax[0], kmax[1], kmax[2]};
  const PhaseColumns c = cols;
  Kokkos::parallel_for(
      "md::kspace::ewald_phases", Policy(0, nlocal), KOKKOS_LAMBDA(const int i) {
        for (int d = 0; d < 3; ++d) {
          const double theta = (x(i, d) - lo[d]) * w[d];
          for (int n = 0; n <= km[d]; ++n) {
            phase(i, 2 * (c.first[d] + n)) = ::cos(n * theta);
            phase(i, 2 * (c.first[d] + n) + 1) = ::sin(n * theta);
          }
        }
      });
}

// S(k) of the owned atoms, each k-vector summing its atoms in index order.
void ewald_structure(const IndexView& index, const PhaseView& phase, const PhaseColumns& cols, const DoubleView& q,
                     int nlocal, const PairView& out) {
  const PhaseColumns c = cols;
  Kokkos::parallel_for(
      "md::kspace::ewald_structure", Policy(0, static_cast<int>(index.extent(0))), KOKKOS_LAMBDA(const int k) {
        const int n[3] = {index(k, 0), index(k, 1), index(k, 2)};
        double re = 0, im = 0;
        for (int i = 0; i < nlocal; ++i) {
          double pc, ps;
          c.phase(phase, i, n, pc, ps);
          re += q(i) * pc;
          im += q(i) * ps;
        }
        out(k, 0) = re;
        out(k, 1) = im;
      });
}

// This rank's share of the energy and virial: per mode (4 pi / V) A(k) Re[S_local S*] (k and -k together).
Tally ewald_tally(const KvecView& kvec, const PairView& local, const PairView& total, double prefactor, double inv_4g2) {
  Tally t;
  Kokkos::parallel_reduce(
      "md::kspace::ewald_energy", Policy(0, static_cast<int>(kvec.extent(0))),
      KOKKOS_LAMBDA(const int k, Tally& s) {
        const double kv[3] = {kvec(k, 0), kvec(k, 1), kvec(k, 2)};
        const double ksq = kv[0] * kv[0] + kv[1] * kv[1] + kv[2] * kv[2];
        const double e = prefactor * kvec(k, 3) * (local(k, 0) * total(k, 0) + local(k, 1) * total(k, 1));
        s.add_mode(e, kv, ksq, inv_4g2);
      },
      Kokkos::Sum<Tally>(t));
  return t;
}

// F_i += scale q_i sum_k A(k) k Im[exp(i k.r_i) S*] (scale: qqrd2e 8 pi / V for half of the k-vectors).
void ewald_forces(const IndexView& index, const KvecView& kvec, const PhaseView& phase, const PhaseColumns& cols,
                  const PairView& total, const DoubleView& q, int nlocal, double scale, const Vec3View& f) {
  const PhaseColumns c = cols;
  const int nk = static_cast<int>(index.extent(0));
  Kokkos::parallel_for(
      "md::kspace::ewald_forces", Policy(0, nlocal), KOKKOS_LAMBDA(const int i) {
        double fx = 0, fy = 0, fz = 0;
        for (int k = 0; k < nk; ++k) {
          const int n[3] = {index(k, 0), index(k, 1), index(k, 2)};
          double pc, ps;
          c.phase(phase, i, n, pc, ps);
          const double im = ps * total(k, 0) - pc * total(k, 1);  // Im[(pc + i ps)(S_re - i S_im)]
          const double a = kvec(k, 3) * im;
          fx += a * kvec(k, 0);
          fy += a * kvec(k, 1);
          fz += a * kvec(k, 2);
        }
        const double s = scale * q(i);
        f(i, 0) += s * fx;
        f(i, 1) += s * fy;
        f(i, 2) += s * fz;
      });
}

}  // namespace impl

Ewald::Ewald(const KspaceOptions& options, const comm::ProcessGrid& grid, const comm::Communicator& comm,
             const ChargeTotals& charges)
    : m_choice(choose_ewald(options, grid.global_box(), charges)),
      m_options(options),
      m_box(grid.global_box()),
      m_comm(comm),
      m_charges(charges) {
  const std::string w = neutrality_warning(charges);
  if (!w.empty()) m_warnings.push_back(w);
  const double u[3] = {2.0 * k_pi / m_box.length(0), 2.0 * k_pi / m_box.length(1), 2.0 * k_pi / m_box.length(2)};
  const double g = m_choice.g_ewald;
  std::vector<std::array<int, 3>> idx;
  const auto& km = m_choice.kmax;
  for (int kx = 0; kx <= km[0]; ++kx)
    for (int ky = -km[1]; ky <= km[1]; ++ky)
      for (int kz = -km[2]; kz <= km[2]; ++kz) {
        if (kx == 0 && (ky < 0 || (ky == 0 && kz <= 0))) continue;
        const double k2 = u[0] * u[0] * kx * kx + u[1] * u[1] * ky * ky + u[2] * u[2] * kz * kz;
        if (k2 <= m_choice.k_squared_max) idx.push_back({kx, ky, kz});
      }
  const int nk = static_cast<int>(idx.size());
  m_index = decltype(m_index)("md::kspace::ewald_index", nk);
  m_kvec = decltype(m_kvec)("md::kspace::ewald_kvec", nk);
  m_local = decltype(m_local)("md::kspace::ewald_local", nk);
  m_total = decltype(m_total)("md::kspace::ewald_total", nk);
  m_host = decltype(m_host)("md::kspace::ewald_host", nk);
  auto hi = Kokkos::create_mirror_view(m_index);
  auto hk = Kokkos::create_mirror_view(m_kvec);
  for (int k = 0; k < nk; ++k) {
    double ksq = 0;
    for (int d = 0; d < 3; ++d) {
      hi(k, d) = idx[static_cast<std::size_t>(k)][d];
      hk(k, d) = u[d] * idx[static_cast<std::size_t>(k)][d];
      ksq += hk(k, d) * hk(k, d);
    }
    hk(k, 3) = std::exp(-0.25 * ksq / (g * g)) / ksq;
  }
  Kokkos::deep_copy(m_index, hi);
  Kokkos::deep_copy(m_kvec, hk);
  m_columns = km[0] + km[1] + km[2] + 3;
}

KspaceResult Ewald::compute(const Vec3View& x, const DoubleView& q, int nlocal, const Vec3View& f) {
  if (nlocal < 0 || static_cast<std::size_t>(nlocal) > x.extent(0) || static_cast<std::size_t>(nlocal) > q.extent(0) ||
      static_cast<std::size_t>(nlocal) > f.extent(0))
    throw std::invalid_argument("md::kspace::Ewald::compute: nlocal beyond the arrays");
  if (m_phase.extent(0) < static_cast<std::size_t>(nlocal))
    m_phase = impl::PhaseView("md::kspace::ewald_phase", static_cast<std::size_t>(nlocal) + nlocal / 4 + 1,
                              static_cast<std::size_t>(2 * m_columns));
  impl::PhaseColumns cols;
  cols.first[1] = m_choice.kmax[0] + 1;
  cols.first[2] = cols.first[1] + m_choice.kmax[1] + 1;
  const int kmax[3] = {m_choice.kmax[0], m_choice.kmax[1], m_choice.kmax[2]};
  impl::ewald_phases(x, nlocal, m_box, kmax, cols, m_phase);
  impl::ewald_structure(m_index, m_phase, cols, q, nlocal, m_local);
  Kokkos::deep_copy(m_host, m_local);
  if (m_host.extent(0) > 0) m_comm.sum_in_place(m_host.data(), static_cast<int>(2 * m_host.extent(0)));
  Kokkos::deep_copy(m_total, m_host);

  const double volume = m_box.volume();
  const double g = m_choice.g_ewald;
  const impl::Tally t = impl::ewald_tally(m_kvec, m_local, m_total, 4.0 * k_pi / volume, 0.25 / (g * g));
  KspaceResult r;
  r.energy = m_options.qqrd2e * t.energy;
  for (int c = 0; c < 6; ++c) r.virial[c] = m_options.qqrd2e * t.virial[c];
  double sum = 0, sum_sq = 0;
  impl::owned_charge_sums(q, nlocal, sum, sum_sq);
  impl::add_self_and_background(r, sum, sum_sq, m_charges.sum, g, volume, m_options.qqrd2e);
  impl::ewald_forces(m_index, m_kvec, m_phase, cols, m_total, q, nlocal, m_options.qqrd2e * 8.0 * k_pi / volume, f);
  Kokkos::fence();
  return r;
}

}  // namespace spotrun::md::kspace
