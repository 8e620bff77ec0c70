#pragma once
// Long-range electrostatics of the MD (k-space part), parameters: what the run gives (KspaceOptions), the
// charges' totals, and the choice of the Ewald splitting parameter g_ewald, the PPPM mesh and the Ewald
// k-vectors from a requested accuracy, by the error estimates LAMMPS uses (kspace_style pppm / ewald).
// Host code, no MPI but charge_totals().
//
// Accuracy: as LAMMPS's `kspace_style pppm <accuracy>`, a relative RMS force error; the absolute one (force
// units) is accuracy * two_charge_force, the force between two unit charges one distance unit apart (LAMMPS:
// qqr2e qelectron^2 / angstrom^2; 1 in lj units).
//
// Estimates (q2 = qqrd2e * sum q^2, N atoms, V volume, rc the real-space cutoff, h = L / n the mesh
// spacing along a side of length L):
//   real space (Kolafa and Perram):  2 q2 exp(-g^2 rc^2) / sqrt(N rc V)
//   PPPM, ik differentiation (Deserno and Holm, J. Chem. Phys. 109, 7694 (1998), their table of a_m):
//     per side  q2 (h g)^p sqrt(g L sqrt(2 pi) sum_m a_m(p) (h g)^(2m) / N) / L^2, and the three sides
//     combined as sqrt((ex^2 + ey^2 + ez^2) / 3)
//   Ewald, kmax along a side (Kolafa and Perram):  2 q2 g / L sqrt(1 / (pi kmax N)) exp(-pi^2 kmax^2 / (g L)^2)
// Choice (LAMMPS's PPPM::set_grid_global and Ewald::setup): g_ewald solves real space error = accuracy
// (the formula of LAMMPS, with its fallback for a loose accuracy); the mesh, side by side, as LAMMPS's loop
// takes it: from n = int(L g) + 1, one point above the smallest n whose estimate meets the accuracy (the
// loop tests the mesh before the one it has just grown to; n itself when the estimate at h = 1 / g already
// meets it), then raised to the next size with prime factors 2, 3 and 5 only; then g_ewald is moved so
// that the real-space and the k-space estimates are equal (LAMMPS's adjust_gewald). One difference from
// LAMMPS, checked against it (tests/test_kspace.cpp, Lammps.*): its Newton iteration on g_ewald stops at an
// absolute 1e-5, here the balance is solved to round-off by bisection.
// Ewald: kmax, side by side, the smallest whose estimate meets the accuracy (g_ewald is not moved); the
// k-vectors are those with |k_d| <= kmax_d inside the sphere |k| <= max_d 2 pi kmax_d / L_d.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"
#include "solvers/fft/geometry.hpp"
#include "solvers/md/types.hpp"

namespace spotrun::md::kspace {

// What one compute() adds up on this rank: summed over the ranks, the k-space energy (with the self energy
// and the neutralising background) and its virial W_ab = -dE/d(strain_ab), components xx yy zz xy xz yz.
struct KspaceResult {
  double energy = 0;
  double virial[6] = {0, 0, 0, 0, 0, 0};
};

// The charges of the whole system.
struct ChargeTotals {
  std::int64_t count = 0;  // atoms (charged or not)
  double sum = 0;          // sum q (the net charge)
  double sum_sq = 0;       // sum q^2
};
// The totals over the owned atoms [0, nlocal) of every rank. Collective.
ChargeTotals charge_totals(const DoubleView& q, int nlocal, const comm::Communicator& comm);

inline constexpr double k_pi = 3.14159265358979323846;
inline constexpr int k_min_order = 2;
inline constexpr int k_max_order = 7;
// The most mesh points along a side (LAMMPS's limit, 16384).
inline constexpr int k_max_mesh = 16384;
// Net charges below this are neutral (LAMMPS: 1e-5): no warning (the background term is still added).
inline constexpr double k_neutral_charge = 1e-5;

struct KspaceOptions {
  double accuracy = 1e-5;       // md.kspace.accuracy: relative RMS force accuracy (> 0)
  double cutoff = 0;            // the real-space Coulomb cutoff of the pair style (distance, > 0)
  double g_ewald = 0;           // md.kspace.g_ewald (1/distance); 0: chosen
  double qqrd2e = 1;            // Coulomb constant: E = qqrd2e q_i q_j / r (lj units: 1)
  double two_charge_force = 1;  // force of two unit charges at distance 1 (lj: 1; LAMMPS real: 332.06371)
  // PPPM
  std::array<int, 3> mesh{0, 0, 0};  // md.kspace.mesh; {0, 0, 0}: chosen
  int order = 5;                     // md.kspace.order: charge assignment order, 2..7
  fft::Decomposition decomposition = fft::Decomposition::Auto;  // of the mesh's FFT
  std::array<int, 2> fft_grid{0, 0};                             // pencils: p1 x p2; {0, 0}: chosen
  // How far outside its sub-box an owned atom may be when compute() is called (distance, >= 0): half the
  // neighbour skin, the most an atom moves between two re-neighbourings. Ghost cells are added for it.
  double margin = 0;
  // The most bytes of mesh arrays one rank may hold (grid_bytes of PppmChoice); 0: no limit.
  double max_grid_bytes = 0;
  // Whether a rank whose bricks are its whole block of the transform (one rank) interpolates the field plane by
  // plane as the transform makes it (Pppm::compute, step 7); false: after the whole transform (tests).
  bool plane_interpolation = true;
  // Ewald
  std::array<int, 3> kmax{0, 0, 0};  // md.kspace.kmax; {0, 0, 0}: chosen
};

// --- LAMMPS's error estimates (the formulas at the top); q2 = qqrd2e * sum q^2 --------------------------
double real_space_error(double g_ewald, double cutoff, double q2, double natoms, double volume);
// g_ewald whose real-space estimate is `accuracy` (absolute), LAMMPS's first guess.
double initial_g_ewald(double accuracy, double cutoff, double q2, double natoms, double volume);
// The estimate of one side of length L with mesh spacing h (order 1..7).
double ik_error(double h, double length, double g_ewald, int order, double q2, double natoms);
// The PPPM k-space estimate of a mesh: sqrt((ex^2 + ey^2 + ez^2) / 3).
double pppm_kspace_error(const std::array<int, 3>& mesh, const comm::Box3& box, double g_ewald, int order, double q2,
                         double natoms);
// The Ewald estimate of one side.
double ewald_side_error(int kmax, double length, double g_ewald, double q2, double natoms);
// Whether n > 0 has no prime factors but 2, 3 and 5.
bool factorable(int n);
// The coefficients b_0 .. b_{order-1} of sum_m sinc^(2 order)(k h / 2 + pi m) = sum_l b_l s^(2l),
// s = sin(k h / 2): the alias sum of the squared charge assignment function of `order` (order 1..7).
std::vector<double> alias_sum_coefficients(int order);

// --- the choices ------------------------------------------------------------------------------------------
struct PppmChoice {
  double g_ewald = 0;
  std::array<int, 3> mesh{0, 0, 0};
  int order = 5;
  double accuracy = 0;            // requested, absolute (force units)
  double estimated_accuracy = 0;  // sqrt(kspace_error^2 + real_space_error^2), absolute
  double kspace_error = 0, real_space_error = 0;
  double grid_bytes = 0;          // estimated bytes of mesh arrays on the rank with the most (grid_bytes())
  double two_charge_force = 1;
  // "PPPM: g_ewald 1.367, mesh 36 x 36 x 36, order 5, estimated RMS force accuracy 9.7e-06 (relative
  // 9.7e-06; k-space 6.9e-06, real space 6.9e-06), mesh arrays 5.1 MiB per rank"
  std::string describe() const;
};

struct EwaldChoice {
  double g_ewald = 0;
  std::array<int, 3> kmax{0, 0, 0};
  double k_squared_max = 0;  // the cut of the k-vectors (1/distance^2)
  long long vectors = 0;     // k-vectors kept, half of them (k and -k counted once)
  double accuracy = 0;
  double estimated_accuracy = 0;
  double kspace_error = 0, real_space_error = 0;
  double two_charge_force = 1;
  std::string describe() const;
};

// The PPPM parameters of a run of `nranks` ranks in `box` with these charges. Throws InputError naming the
// key: md.kspace.accuracy (not finite and > 0; unreachable with a mesh of at most k_max_mesh a side),
// md.kspace.order (outside 2..7), md.kspace.mesh (a given mesh with a size below 2 or above k_max_mesh, or
// whose k-space estimate misses the accuracy; mesh arrays above options.max_grid_bytes, the bytes given),
// md.kspace.g_ewald (negative; none given for a system without charges), md.kspace (a cutoff not > 0).
PppmChoice choose_pppm(const KspaceOptions& options, const comm::Box3& box, const ChargeTotals& charges, int nranks);
// The Ewald parameters (InputError as above; md.kspace.kmax for a given kmax below 1).
EwaldChoice choose_ewald(const KspaceOptions& options, const comm::Box3& box, const ChargeTotals& charges);

// Estimated bytes of PPPM mesh arrays on the rank with the most: the bricks (charge density and the three
// field components, with ghost cells of order / 2 + margin), the reshapes' buffers between the bricks'
// owned cells and the FFT (at most four owned boxes: the density's sends, the fields' receives), the
// FFT's real and spectral arrays (four spectral fields and the influence function) and its work arrays
// and transpose buffers (three fields), for the rank grid comm::choose_grid() gives `nranks`.
double grid_bytes(const std::array<int, 3>& mesh, int order, double margin, const comm::Box3& box, int nranks);

// The warning of a system that is not neutral (|net charge| > k_neutral_charge), else "".
std::string neutrality_warning(const ChargeTotals& charges);

}  // namespace spotrun::md::kspace
