#pragma once
// Particle-particle particle-mesh k-space solver (Hockney and Eastwood; LAMMPS kspace_style pppm):
// charge assignment of order 2..7, the influence function optimal for ik differentiation (Hockney and
// Eastwood's, with LAMMPS's range of aliases), the field by ik differentiation (the gradient of the
// potential, DistributedFft::backward_gradient), energy and virial from the spectral sums, and the
// neutralising background of a net charge.
//
// One compute():
//   1. the density brick zeroed, then spread: each owned atom's charge over the order^3 points of its
//      stencil in this rank's brick of the mesh (rho = q W / h^3; atomic additions on a GPU, where the order
//      of the additions, and so the last bits of the density, varies from run to run; on the host the atoms
//      in plane order (PlaneOrder: the brick read plane after plane, each thread whole planes, plain additions
//      in a fixed order);
//   2. MeshHalo::reverse_sum: ghost cells added into their owners (comm::Transport);
//   3. the owned cells reshaped (fft::Reshape) into the FFT's real layout, read where they lie in the brick
//      (fft::within_arrays: no copy of the owned box of its own), one real-to-complex transform;
//   4. energy and virial: (V / 2 N^2) sum_k G(k) |rho(k)|^2 (delta_ab - 2 k_a k_b (1/k^2 + 1/(4 g^2)))
//      over the whole spectrum (the half the transform keeps, kz in (0, nz/2) counted twice);
//   5. E_d(k) = -i k_d G(k) rho(k) / N (k_d = 0 on the Nyquist plane of axis d, whose derivative a real
//      field cannot hold: what LAMMPS's complex transform keeps of it when it takes the real part): the
//      potential's spectrum -G rho / N in place of rho, then its gradient (DistributedFft::backward_gradient:
//      i k_x and the potential go through the transforms along x, i k_y and i k_z multiply the latter's
//      before the transforms along y and z; on one rank plane by plane) into the three fields;
//   6. the fields reshaped back, written straight into the bricks' owned cells (one batched reshape of the
//      three), MeshHalo::forward_fill for the ghosts;
//   7. interpolate: F_i = qqrd2e q_i sum_stencil W E (a gather per atom, no atomics; on the host in plane
//      order; on one rank inside step 5, the atoms of each plane as soon as the transform has made the planes
//      their stencils read, while those are in cache: DistributedFft::backward_gradient's `ready`).
// Energy: qqrd2e [(V / 2 N^2) sum G |rho|^2 - g / sqrt(pi) sum q^2 - pi Q^2 / (2 g^2 V)]; the virial adds
// the background's, the background energy on each diagonal component (LAMMPS leaves it out).
// Checked against LAMMPS's pppm (tests/test_kspace.cpp, Lammps.EnergyForcesAndVirial): the same to 2e-14
// once LAMMPS's 12.5663706 for 4 pi in its influence function is used (1.1e-9 apart without).
//
// The mesh is split over the ranks of the MD's rank grid (owned boxes: part c of the even split of each
// axis into P parts, fft::split_bounds, for a rank at grid coordinate c of P), each brick extended by the
// ghost cells its atoms' stencils reach when they are up to `margin` outside the sub-box. The FFT has its own decomposition (slabs
// or pencils, KspaceOptions::decomposition). Everything is made in the constructor; compute() allocates
// nothing.
//
// The bricks hold the whole mesh along an axis the rank grid does not split (unless the transport routes messages
// to the rank itself): a stencil point outside the mesh along it is its periodic image (BrickMap::period), so
// there are no ghost cells along it. Where every rank's block of the transform's real array is its owned box and
// a contiguous run of its brick (one rank; x slabs of a P x 1 x 1 rank grid), the transform reads the density
// from the brick and writes the fields into the bricks (no reshapes, steps 3 and 6); on one rank there is no
// halo either. The same sums in another order where ghosts are left out (a ghost's share is added into its
// image as the atoms come, not after them): the forces equal the ghosted bricks' to round-off
// (tests/test_kspace.cpp, Pppm.RankAndDecompositionIndependence, which runs both).
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"
#include "comm/transport.hpp"
#include "kspace_params.hpp"
#include "mesh_halo.hpp"
#include "plane_order.hpp"
#include "solvers/fft/distributed_fft.hpp"

namespace spotrun::md::kspace {

class Pppm {
 public:
  // Chooses the parameters (choose_pppm() for comm.size() ranks, its InputError), plans the bricks, their
  // halo, the reshapes and the FFT, and computes the influence function. charges: the totals of the whole
  // system (charge_totals()). Collective; throws InputError (agreed) when the mesh cannot be decomposed
  // (make_fft_geometry) or is too coarse for the ghost cells of its bricks.
  Pppm(const KspaceOptions& options, const comm::ProcessGrid& grid, const comm::Communicator& comm,
       comm::Transport& transport, const ChargeTotals& charges);
  ~Pppm();
  Pppm(const Pppm&) = delete;
  Pppm& operator=(const Pppm&) = delete;

  // Adds the k-space forces to f(i) of the owned atoms i < nlocal (positions x, charges q), each within
  // `margin` of the rank's sub-box; returns this rank's share of the energy and virial (zero without
  // energy_virial: the spectral sums are skipped). Throws RunError (agreed) when an atom's stencil leaves
  // its rank's brick (an atom further than margin outside its sub-box). Collective.
  KspaceResult compute(const Vec3View& x, const DoubleView& q, int nlocal, const Vec3View& f, bool energy_virial = true);

  // A box that changed (constant pressure, LAMMPS's kspace->setup() after the barostat's remap): the same
  // mesh, bricks and g_ewald over the new box, the influence function computed anew. Not collective. An atom
  // whose stencil then leaves its brick stops compute() with its RunError.
  void set_box(const comm::Box3& box);

  const PppmChoice& choice() const { return m_choice; }
  const std::vector<std::string>& warnings() const { return m_warnings; }
  const fft::FftGeometry& fft_geometry() const { return m_fft->geometry(); }
  // Whether the transform runs in place on the bricks (no reshapes; see the top).
  bool in_place() const { return m_in_place; }
  // The compute() calls whose interpolation followed the transform plane by plane (step 7).
  long long plane_interpolations() const { return m_plane_interpolations; }

 private:
  void compute_green();

  PppmChoice m_choice;
  KspaceOptions m_options;
  comm::Box3 m_box;
  const comm::Communicator& m_comm;
  ChargeTotals m_charges;
  std::vector<std::string> m_warnings;
  fft::Box3i m_owned;
  fft::Box3i m_reach;              // the cells this rank's stencils may reach (the brick's, where not periodic)
  int m_period[3] = {0, 0, 0};     // n[d] along the axes the bricks hold whole (periodic), else 0
  bool m_in_place = false;         // the transform reads and writes the bricks' owned cells
  bool m_halo_cells = false;       // some rank has ghost cells
  std::size_t m_owned_offset = 0;  // where the owned cells start in a brick (in place)
  std::unique_ptr<MeshHalo> m_halo;
  std::unique_ptr<fft::DistributedFft> m_fft;
  std::unique_ptr<fft::Reshape<double>> m_to_fft, m_from_fft;
  // Distances between the fields of the three-field views (padded: every field aligned as the first).
  std::size_t m_brick_stride = 0, m_real_stride = 0;
  fft::RealView m_density;   // brick
  fft::RealView m_field;     // three bricks (Ex, Ey, Ez)
  fft::RealView m_real;      // three FFT real arrays (none in place)
  fft::ComplexView m_rho_hat, m_scratch_hat;  // the density's (then the potential's) spectrum; scratch
  fft::RealView m_green;     // influence function on this rank's spectral box
  PlaneOrder m_planes;       // the host's order of the stencil kernels
  long long m_plane_interpolations = 0;
};

}  // namespace spotrun::md::kspace
