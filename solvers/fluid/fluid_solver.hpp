#pragma once
// Incompressible Navier-Stokes in the periodic box [0, 2 pi)^3, pseudo-spectral:
//   du/dt = P[u x omega] + nu lap u (+ A u on |k| <= k_f),  div u = 0,
// with the nonlinear term in rotational form evaluated in physical space and dealiased by the 2/3 rule,
// pressure by projection P = I - k k^T / |k|^2 in Fourier space, and RK4 with the viscous term
// integrated exactly (integrating factor exp(-nu k^2 t)). See docs/fluid.md.
//
// The state is the velocity's Fourier coefficients uhat = FFT(u) / (nx ny nz) on this rank's block of
// the half spectrum (DistributedFft::spectral_layout()); physical fields are made from it when needed.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/transport.hpp"
#include "fluid_config.hpp"
#include "solvers/fft/distributed_fft.hpp"
#include "solvers/solver.hpp"
#include "spectral.hpp"

namespace spotrun::fluid {

using Field3 = Kokkos::View<double**, Kokkos::LayoutRight, fft::MemSpace>;            // (3, points)
using SpectralField3 = Kokkos::View<fft::Complex**, Kokkos::LayoutRight, fft::MemSpace>;  // (3, modes)

struct Diagnostics {
  double energy = 0;       // 1/2 <u.u>
  double dissipation = 0;  // 2 nu <S:S>
  double enstrophy = 0;    // 1/2 <omega.omega>
  double divmax = 0;       // max |div u| on the grid
  double umax = 0;         // max (|u|/dx + |v|/dy + |w|/dz) on the grid
  double cfl = 0;          // dt * umax
};

// A velocity field redistributed to x-plane blocks (io::block_of of nx over the ranks): rows x-planes
// from first_row, values [x][y][z][component] (physical) or [kx][ky][kz][component][re, im] (spectral).
struct PlaneBlock {
  std::uint64_t first_row = 0;
  std::uint64_t rows = 0;
  std::vector<double> values;
};

// What the constructor checks before it allocates the fields, on nranks ranks: the values of the
// configuration and the FFT decomposition of fluid.n. `spotrun validate` (and run, before it makes the
// solver) call it. InputError.
void check_fresh_start(const FluidConfig& config, int nranks);

// The modes the solver keeps, as the band of its pruned transforms: |k_d| <= (n_d - 1) / 3 with the 2/3
// rule, else every mode but the Nyquist modes ((n_d - 1) / 2).
fft::SpectralBand kept_band(const FluidConfig& config);

// The most fields one of the solver's transforms takes: the velocity and the vorticity go backward
// together (6), the three components of a vector forward together (3). docs/fluid.md.
constexpr int k_fluid_max_batch = 6;

// The batching of the solver's transforms on `geometry` at `rank`: batched (config.fft_batch Fields, or
// Auto on a device build) k_fluid_max_batch fields, the components the rows of the (3, n) fields,
// fft::padded_field apart; otherwise one field per transform.
fft::FftBatching fluid_batching(const FluidConfig& config, const fft::FftGeometry& geometry, int rank);

// A distributed FFT of `geometry` as the solver makes it (its backend, config.fft_plan), pruned to
// kept_band(config) or not (the unpruned transform is the floor the fluid benchmark measures against),
// batched as `batching` says (the solver: fluid_batching; default: one field per call).
std::unique_ptr<fft::DistributedFft> make_fluid_fft(const FluidConfig& config, const fft::FftGeometry& geometry,
                                                    const comm::Communicator& comm, comm::Transport& transport,
                                                    bool pruned, const fft::FftBatching& batching = {});

class FluidSolver final : public SolverBase {
 public:
  // restoring: make no initial field; restore() follows. Throws InputError for a bad configuration
  // (sizes, rank count, parameters), on every rank.
  FluidSolver(const FluidConfig& config, const comm::Communicator& comm, comm::Transport& transport,
              bool restoring = false);
  ~FluidSolver() override;

  // name() "fluid", work_unit() "point-steps" (SolverBase).
  SPOTRUN_SOLVER_OVERRIDES;
  io::SolverState state_reusing(io::SolverState&& spare) override;
  double work_per_step() const override { return static_cast<double>(m_fft->geometry().total_real()); }

  // Output hook for the launcher, called after setup() and after every step with the step index: writes
  // the energy spectrum to OUTDIR/spectrum.h5 when step % fluid.spectrum_every == 0 and the velocity to
  // OUTDIR/fields/ (HDF5 + XDMF) when step % fluid.field_every == 0; otherwise does nothing. Files are
  // written by io/field_output. Collective.
  void write_outputs(const std::string& outdir, std::int64_t step) override;
  bool writes_outputs_at(std::int64_t step) const override;
  // True once fluid.time_end (> 0) is reached: the launcher stops the run there.
  bool finished() const override;
  // grid and box, viscosity, forcing, time step and end (fluid_describe.cpp).
  std::vector<std::string> describe() const override;
  // With fluid.time_end > 0: the simulated time over it ("time 2.5 of 10"); else 0 (run.steps measures).
  double progress_fraction() const override;
  std::string progress_measure() const override;
  // Notes about the configuration worth printing once (e.g. sizes FFTW transforms slowly).
  const std::vector<std::string>& warnings() const { return m_warnings; }

  // For tests, benchmarks and diagnostics (collective unless noted).
  Diagnostics diagnostics();
  double dt() const { return m_dt; }  // step size of the last step (before the first: of the first)
  // The velocity on this rank's block of the physical grid (fft().real_layout()), host copies.
  std::array<std::vector<double>, 3> velocity();
  // The energy spectrum E(k), k = 0, 1, ... (shells |k| in [k - 1/2, k + 1/2)), on every rank; bitwise
  // the same in every run on the same rank count (a segmented reduction in a fixed order, no atomics).
  std::vector<double> energy_spectrum();
  // The planes' values go into `memory` (its allocation kept where it is large enough; every value written).
  PlaneBlock velocity_planes(std::vector<double> memory = {});
  PlaneBlock spectral_planes(std::vector<double> memory = {});
  const fft::DistributedFft& fft() const { return *m_fft; }
  fft::DistributedFft& fft() { return *m_fft; }
  const FluidConfig& config() const { return m_cfg; }
  // Seconds spent in step(): total, and in its distributed FFTs (this rank).
  double step_seconds() const { return m_step_seconds; }
  double step_fft_seconds() const { return m_step_fft_seconds; }

  // Kernels. Public only because CUDA extended lambdas may not live in private member functions;
  // not part of the solver's interface.
  void init_taylor_green(bool three_d);
  void init_random();
  void to_spectral(const Field3& u, SpectralField3& uhat);  // forward, scaled, masked, projected
  // Sets the modes the dealiasing drops (and Nyquist modes) to zero: the state never holds them, and
  // rk_stage() relies on it (it skips them).
  void zero_dropped_modes(SpectralField3& uhat);
  double velocity_max(const SpectralField3& uhat);           // max (|u|/dx + ...), global
  // Global energy, 2 nu <S:S> and 1/2 <omega.omega> from the spectral state (one reduction).
  void spectral_sums(double& energy, double& dissipation, double& enstrophy);
  double diagnostics_energy();
  // m_work = vorticity i k x uhat.
  void vorticity(const SpectralField3& uhat);
  // From uhat_s and its vorticity in m_work: m_work = FFT(u x omega) (unscaled); returns the local
  // max (|u|/dx + |v|/dy + |w|/dz) when want_umax.
  double lamb_vector(const SpectralField3& uhat_s, bool want_umax);
  // One RK4 stage (1-4) from m_work and uhat_s; stages 1-3 also leave the vorticity of the new stage
  // field in m_work.
  template <int Stage>
  void rk_stage(double h, const SpectralField3& uhat_s);

 private:
  void init_fields();
  void update_decay(double h);
  void check_cfl(double umax, bool at_setup) const;
  SpectralIndex spectral_index() const;
  KeptBlock kept_block() const;  // the kept modes of this rank's spectral block
  int spectrum_bins() const;
  void make_spectrum_shells();
  // Component c of a (3, n) field: a pointer computed from data(), never an element access on the host
  // (the view may live on a device).
  template <class View>
  static auto* row(const View& v, int c) {
    return v.data() + static_cast<std::size_t>(c) * v.stride(0);
  }
  // Transforms of `count` fields in as few calls as the transform's max_batch allows.
  void forward_fields(int count, const double* const in[], fft::Complex* const out[]);
  void backward_fields(int count, const fft::Complex* const in[], double* const out[]);
  // The three components of `in` into those of `out`.
  void forward3(const Field3& in, const SpectralField3& out);
  void backward3(const SpectralField3& in, const Field3& out);

  FluidConfig m_cfg;
  const comm::Communicator& m_comm;
  comm::Transport& m_transport;
  std::unique_ptr<fft::DistributedFft> m_fft;
  std::vector<std::string> m_warnings;

  SpectralField3 m_uhat;   // state
  SpectralField3 m_acc;    // RK4 accumulator
  SpectralField3 m_stage;  // stage field
  SpectralField3 m_work;   // vorticity, then FFT(u x omega)
  Field3 m_u, m_w;         // physical velocity; vorticity, then u x omega
  // Per direction and global index: wavenumber for derivatives, 1/0 kept by dealiasing, and
  // exp(-nu k_d^2 h / 2) for the step size m_decay_h (the integrating factor is their product).
  Kokkos::View<double*, fft::MemSpace> m_k[3], m_keep[3];
  Kokkos::View<double*, fft::MemSpace> m_decay[3];
  double m_decay_h = -1;

  // The energy spectrum's shells, made on its first use: this rank's kept modes (flat offsets) sorted
  // by shell; the chunks of that list (begin of each, and the end of the last); the first chunk of each
  // shell (and the end); a sum per chunk and per shell.
  static constexpr std::size_t k_spectrum_chunk = 512;
  Kokkos::View<std::size_t*, fft::MemSpace> m_spectrum_modes, m_spectrum_chunks;
  Kokkos::View<int*, fft::MemSpace> m_spectrum_shells;
  Kokkos::View<double*, fft::MemSpace> m_spectrum_partial, m_spectrum_bins;

  // Redistribution to and from x-plane blocks (checkpoints, field output): made on first use.
  std::unique_ptr<fft::Reshape<double>> m_real_to_planes;
  std::unique_ptr<fft::Reshape<fft::Complex>> m_spectral_to_planes, m_planes_to_spectral;

  double m_dt = 0;  // m_step, m_time: SolverBase
  double m_energy_ref = 0;  // initial energy: reference of the blow-up check
  bool m_setup_done = false;
  bool m_restored = false;
  double m_step_seconds = 0;
  double m_step_fft_seconds = 0;
};

}  // namespace spotrun::fluid
