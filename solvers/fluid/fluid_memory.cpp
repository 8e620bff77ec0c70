// Memory estimate of the fluid solver: the sizes of the views fluid_solver.cpp, fluid_state.cpp and
// solvers/fft allocate, from the decomposition the solver will choose. Each term names the arrays it
// stands for; keep them in step with the code.
#include "fluid_memory.hpp"

#include <algorithm>
#include <vector>

#include "fluid_solver.hpp"
#include "solvers/fft/distributed_fft.hpp"
#include "solvers/fft/geometry.hpp"
#include "solvers/fft/reshape_plan.hpp"
#include "solvers/fft/types.hpp"

namespace spotrun::fluid {
namespace {

constexpr double k_real = sizeof(double);
constexpr double k_complex = sizeof(fft::Complex);

// Rows of the (3, n) fields are padded to 8 values (fluid_solver.cpp).
double padded(std::size_t n) { return static_cast<double>((n + 7) / 8 * 8); }

double largest(const std::vector<fft::Layout3>& layouts) {
  std::size_t n = 0;
  for (const auto& l : layouts) n = std::max(n, l.count());
  return static_cast<double>(n);
}

// Elements of the send and receive buffers of a Reshape from `in` to `out` (what a rank keeps moves
// through no buffer), for the first and the last rank (even splits give the first the largest blocks).
double reshape_elements(const std::vector<fft::Layout3>& in, const std::vector<fft::Layout3>& out) {
  double most = 0;
  for (int r : {0, static_cast<int>(in.size()) - 1}) {
    const fft::ReshapePlan p = fft::make_reshape_plan(in, out, r);
    most = std::max(most, static_cast<double>(p.send_total + p.recv_total));
  }
  return most;
}

}  // namespace

solvers::MemoryNeed estimated_memory(const FluidConfig& cfg, int nranks) {
  nranks = std::max(nranks, 1);
  constexpr bool device = !fft::k_host_accessible;
  fft::FftGeometry g;
  try {
    g = fft::make_fft_geometry(cfg.n, nranks, cfg.decomposition, cfg.process_grid);
  } catch (const std::exception&) {
    // No decomposition fits (the solver refuses the run): an even share of every field.
    const double points = static_cast<double>(cfg.n[0]) * cfg.n[1] * cfg.n[2] / nranks;
    const double modes = static_cast<double>(cfg.n[0]) * cfg.n[1] * (cfg.n[2] / 2 + 1) / nranks;
    const double share = 2 * 3 * points * k_real + 10 * 3 * modes * k_complex;
    return device ? solvers::MemoryNeed{0, share} : solvers::MemoryNeed{share, 0};
  }
  const bool pencil = g.kind == fft::Decomposition::Pencil;
  const double nr = largest(g.real), ns = largest(g.spectral);

  // Each figure is split by where it lives: `space`, the Kokkos memory space (the GPU's memory on a
  // device build, host memory otherwise), and `host`, host memory on any build.
  // --- held for the whole run ---
  // State and RK4 fields: uhat, accumulator, stage, work (complex); u, omega (real); 3 components each.
  double held = 4 * 3 * padded(static_cast<std::size_t>(ns)) * k_complex + 2 * 3 * padded(static_cast<std::size_t>(nr)) * k_real;
  // Per-direction tables: wavenumber, dealiasing mask, decay factors (+ the decay's host copy).
  held += 3 * k_real * (g.nc[0] + g.nc[1] + g.nc[2]);
  double held_host = device ? k_real * (g.nc[0] + g.nc[1] + g.nc[2]) : 0.0;
  // DistributedFft: work arrays of the stages (with the pruned transforms the solver makes, a second
  // gather array for backward transforms unless the slab is on one rank), and the transposes' send and
  // receive buffers; where fluid.fft_batch batches the solver's transforms
  // (fluid_batching), and each holds k_fluid_max_batch fields (the work arrays' fields padded to 8
  // elements; a one-rank host run holds one field, below this bound).
  const int max_batch = fluid_batching(cfg, g, 0).max_batch;
  const double batch = max_batch;
  const bool second_gather = pencil || nranks > 1;
  auto padded_largest = [](const std::vector<fft::Layout3>& ls) {
    return padded(static_cast<std::size_t>(largest(ls)));
  };
  held += batch * k_complex *
          (padded_largest(g.stage_a) + (pencil ? padded_largest(g.stage_b) : 0) +
           padded_largest(g.spectral) * (second_gather ? 2 : 1));
  double transposes = batch * (pencil ? reshape_elements(g.stage_a, g.stage_b) + reshape_elements(g.stage_b, g.spectral) +
                                            reshape_elements(g.spectral, g.stage_b) + reshape_elements(g.stage_b, g.stage_a)
                                      : reshape_elements(g.stage_a, g.spectral) + reshape_elements(g.spectral, g.stage_a));
  // Reshapes to and from x-plane blocks, made on first use and kept: the physical velocity (checkpoints,
  // field output), the spectral state (checkpoints) and back (restore).
  const auto planes = fft::x_block_layouts(g.n, nranks);
  const auto spectral_planes = fft::x_block_layouts(g.nc, nranks);
  const double planes_real = reshape_elements(g.real, planes);
  transposes += reshape_elements(g.spectral, spectral_planes) + reshape_elements(spectral_planes, g.spectral);
  held += k_complex * transposes + k_real * planes_real;
  if (device) held_host += k_complex * transposes + k_real * planes_real;  // host staging on devices
  // cuFFT (device builds): the plans of the transform share one work area, as large as the largest plan
  // needs (r2c, c2r, the y transforms both ways, the x transforms both ways in up to two pieces each; of
  // 1 to k_fluid_max_batch fields each, DistributedFft plans them all), sized by cuFFT for the rank with
  // the largest blocks. Where cuFFT cannot say (no usable GPU, not compiled in), twice the complex data
  // of the batch: an assumed bound (cuFFT's own figures, where it gives them, are below it for the sizes
  // of these grids).
  if (device) {
    double largest_rank_bytes = 0;
    const fft::SpectralBand band = kept_band(cfg);
    for (int r : {0, nranks - 1}) {
      for (int fields = 1; fields <= max_batch; ++fields) {
        for (const auto& spec : fft::plan_specs(g, r, nullptr, &band, fields)) {
          const double asked = fft::impl::cufft_work_area_bytes(spec);
          // One plan of the inner loop (a batch with two loops, or fields it cannot merge, runs it once
          // per outer iteration).
          const fft::impl::BatchSpec one = fft::impl::merged_loops(spec);
          const double points = static_cast<double>(one.n[0]) * (one.rank == 2 ? one.n[1] : 1) * one.howmany;
          largest_rank_bytes = std::max(largest_rank_bytes, asked >= 0 ? asked : 2 * k_complex * points);
        }
      }
    }
    held += largest_rank_bytes;
  }

  // The energy spectrum's shell lists, made on first use with fluid.spectrum_every > 0: one index per
  // kept mode (at most one per mode of the block) and two values per chunk of 512.
  if (cfg.spectrum_every > 0) held += 8.0 * ns * (1.0 + 2.0 / 512) + 16.0 * (g.n[0] + g.n[1] + g.n[2]);

  // --- transients (the largest counts, on each side) ---
  const double xr = largest(planes), xc = largest(spectral_planes);
  // state(): the velocity as x-planes (3 reals per point) and the spectral planes (6 reals per mode) on
  // the host, with one component's buffer (and its host copy on devices) at a time.
  const double component = std::max(k_real * xr, k_complex * xc);
  const double checkpoint_host = 3 * k_real * xr + 6 * k_real * xc + (device ? component : 0.0);
  // restore(): the SolverState block read by the launcher (both datasets) and one component's buffer;
  // from /fluid/u alone, a reshape of the physical planes as well.
  const double restore_host = 3 * k_real * xr + 6 * k_real * xc + (device ? component : 0.0);
  const double restore_space = component + k_real * planes_real;
  // Construction: the planning copies of the real and the spectral blocks of max_batch fields
  // (DistributedFft::make_plans, the fields at the solver's row distances).
  const double planning = batch * (k_real * padded(static_cast<std::size_t>(nr)) + k_complex * padded(static_cast<std::size_t>(ns)));
  // FFTW (host builds): the planner's tables and the plans' twiddles, measured at about 2.6 MiB for the
  // first plans of a process, and work buffers of up to two of the largest single transforms.
  double fftw = 0;
  if (!device) {
    const double transform = pencil ? std::max({g.n[0], g.n[1], g.nc[2]}) : static_cast<double>(g.n[1]) * g.nc[2];
    fftw = 4.0 * 1024 * 1024 + 2 * k_complex * std::max(transform, static_cast<double>(g.n[0]));
  }
  if (device) return {held_host + std::max(checkpoint_host, restore_host), held + std::max({component, restore_space, planning})};
  // One memory: the transients of a checkpoint and of a restore on both sides at once.
  return {held + fftw + std::max({checkpoint_host + component, restore_host + restore_space, planning}), 0};
}

double estimated_bytes_per_rank(const FluidConfig& cfg, int nranks) { return estimated_memory(cfg, nranks).host; }

}  // namespace spotrun::fluid
