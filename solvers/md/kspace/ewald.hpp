#pragma once
// The Ewald k-space sum (LAMMPS kspace_style ewald): for small systems, and the reference of the PPPM tests.
//
//   E_k = qqrd2e (2 pi / V) sum_(k != 0) exp(-k^2 / (4 g^2)) / k^2 |S(k)|^2,   S(k) = sum_j q_j exp(i k.r_j)
//   F_i = qqrd2e q_i (4 pi / V) sum_(k != 0) exp(-k^2 / (4 g^2)) / k^2 k Im[exp(i k.r_i) S(k)*]
// over the k-vectors of EwaldChoice (half of them stored, k and -k counted once), with the self energy
// -qqrd2e g / sqrt(pi) sum q^2 and, for a net charge Q, the energy of a uniform neutralising background,
// -qqrd2e pi Q^2 / (2 g^2 V) (its virial, -dE/d(strain), is the same on each diagonal component).
//
// Distributed: each rank sums S over its owned atoms; one MPI sum (host memory, 2 doubles per k-vector)
// gives every rank the whole S; each rank then computes the forces of its owned atoms and its share of the
// energy and virial (sum over its atoms of q_i Re[exp(i k.r_i) S(k)*] per mode, the self and background
// terms of its charges). Kernels: over k-vectors (S, a fixed order of the atoms) and over atoms (forces);
// no atomics, so a run repeats itself bit for bit. The per-atom phase table (cos and sin of n k_1 x along
// each axis) grows in compute() when a rank holds more atoms than ever before, by a quarter more.
// Checked against LAMMPS's ewald (tests/test_kspace.cpp): the same g_ewald, kmax and k-vectors, energies,
// forces and virial to 1e-14.
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"
#include "kspace_params.hpp"

namespace spotrun::md::kspace {

class Ewald {
 public:
  // Chooses the parameters (choose_ewald(), its InputError) for the grid's global box. charges: the totals
  // of the whole system (charge_totals()). Collective only through the arguments (no communication).
  Ewald(const KspaceOptions& options, const comm::ProcessGrid& grid, const comm::Communicator& comm,
        const ChargeTotals& charges);

  // Adds the k-space forces to f(i) of the owned atoms i < nlocal (positions x, charges q); returns this
  // rank's share of the energy and virial. Collective.
  KspaceResult compute(const Vec3View& x, const DoubleView& q, int nlocal, const Vec3View& f);

  const EwaldChoice& choice() const { return m_choice; }
  // The neutrality warning, if any (neutrality_warning()); the caller prints it once.
  const std::vector<std::string>& warnings() const { return m_warnings; }

 private:
  EwaldChoice m_choice;
  KspaceOptions m_options;
  comm::Box3 m_box;
  const comm::Communicator& m_comm;
  ChargeTotals m_charges;
  std::vector<std::string> m_warnings;
  int m_columns = 0;  // of the phase table: cos and sin of n = 0..kmax_d, the three axes after each other
  Kokkos::View<int* [3], Kokkos::LayoutRight, MemSpace> m_index;  // (kx, ky, kz) of each k-vector
  Kokkos::View<double* [4], Kokkos::LayoutRight, MemSpace> m_kvec;  // k (1/distance) and exp(-k^2/4g^2)/k^2
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> m_phase;  // per atom
  Kokkos::View<double* [2], Kokkos::LayoutRight, MemSpace> m_local, m_total;  // S of the owned atoms; of all
  Kokkos::View<double* [2], Kokkos::LayoutRight, Kokkos::HostSpace> m_host;
};

}  // namespace spotrun::md::kspace
