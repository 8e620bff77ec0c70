#pragma once
// The energy and virial one k-space reduction adds up (a Kokkos reduction value), and the virial factor of a
// wavevector: W_ab = sum_k E_k (delta_ab - 2 k_a k_b (1 / k^2 + 1 / (4 g^2))), where E_k is the energy of
// mode k: -dE/d(strain_ab) at fixed g_ewald, as k scales with the inverse box and the prefactor with 1/V.
#include <Kokkos_Core.hpp>

#include "kspace_params.hpp"

namespace spotrun::md::kspace::impl {

struct Tally {
  double energy = 0;
  double virial[6] = {0, 0, 0, 0, 0, 0};  // xx yy zz xy xz yz

  KOKKOS_INLINE_FUNCTION void operator+=(const Tally& o) {
    energy += o.energy;
    for (int c = 0; c < 6; ++c) virial[c] += o.virial[c];
  }
  // Kokkos 3's reductions join volatile values.
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile Tally& o) volatile {
    energy += o.energy;
    for (int c = 0; c < 6; ++c) virial[c] += o.virial[c];
  }
  // Adds the energy e of wavevector k (|k|^2 = ksq > 0) and its virial; inv_4g2 = 1 / (4 g^2). The
  // off-diagonal components take their wavenumbers from kp: k, except on a mesh's Nyquist plane, where the
  // mode and its conjugate (which the half spectrum counts by doubling e) have the same k_d = -n/2 and
  // their off-diagonal terms cancel (kp_d = 0, as the sum over the whole spectrum gives them).
  KOKKOS_INLINE_FUNCTION void add_mode(double e, const double k[3], const double kp[3], double ksq, double inv_4g2) {
    energy += e;
    const double c = -2.0 * (1.0 / ksq + inv_4g2);
    virial[0] += e * (1.0 + c * k[0] * k[0]);
    virial[1] += e * (1.0 + c * k[1] * k[1]);
    virial[2] += e * (1.0 + c * k[2] * k[2]);
    virial[3] += e * c * kp[0] * kp[1];
    virial[4] += e * c * kp[0] * kp[2];
    virial[5] += e * c * kp[1] * kp[2];
  }
  KOKKOS_INLINE_FUNCTION void add_mode(double e, const double k[3], double ksq, double inv_4g2) {
    add_mode(e, k, k, ksq, inv_4g2);
  }
};

// sum q and sum q^2 of the owned atoms i < nlocal.
void owned_charge_sums(const DoubleView& q, int nlocal, double& sum, double& sum_sq);
// Adds to r the self energy of the owned charges, -qqrd2e g / sqrt(pi) sum q^2, and their share of the
// neutralising background of the net charge Q, -qqrd2e pi Q sum q / (2 g^2 V) (energy, and the same on each
// diagonal component of the virial: the background energy goes as 1 / V).
void add_self_and_background(KspaceResult& r, double sum, double sum_sq, double net_charge, double g, double volume,
                             double qqrd2e);

}  // namespace spotrun::md::kspace::impl

namespace Kokkos {
template <>
struct reduction_identity<spotrun::md::kspace::impl::Tally> {
  KOKKOS_FORCEINLINE_FUNCTION static spotrun::md::kspace::impl::Tally sum() { return {}; }
};
}  // namespace Kokkos
