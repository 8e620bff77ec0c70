// The [fluid] deck keys (incompressible Navier-Stokes, docs/fluid.md documents the same keys). Units:
// lengths in box units (the periodic box is 2 pi long), time in the units of the initial velocity
// (Taylor-Green: velocity scale 1, length scale 1); "-" marks names, switches, seeds and ratios.
// Resumable (may change on resume, not physics): time_end, cfl_limit, decomposition, fft_plan, output
// intervals, blowup_factor.
#include "deck.hpp"

namespace spotrun::launcher {

const std::vector<KeySpec>& fluid_deck_schema() {
  static const std::vector<KeySpec> schema = {
      {"fluid.n", KeyType::Int3, "[32, 32, 32]", "grid points", "Grid points [nx, ny, nz] of the periodic box [0, 2 pi)^3",
       4, 1e5},
      {"fluid.viscosity", KeyType::Float, "0.01", "length^2/time",
       "Kinematic viscosity nu (Taylor-Green: 1 / Reynolds number)", 0, 1e9},
      {"fluid.dt", KeyType::Float, "0.01", "time", "Time step; with fluid.cfl > 0 the largest step", 0, 1e9, true},
      {"fluid.cfl", KeyType::Float, "0.0", "-",
       "Target CFL number dt * max(|u|/dx + |v|/dy + |w|/dz) of an adaptive step; 0: fixed fluid.dt", 0, 10},
      {"fluid.cfl_limit", KeyType::Float, "1.0", "-",
       "With a fixed step, a CFL number above this stops the run (exit 2 at the start, 1 later)", 0, 10, true, {},
       true},
      {"fluid.time_end", KeyType::Float, "0.0", "time",
       "End time: the run stops there (last step shortened to land on it); 0: run.steps only", 0, 1e15, false, {},
       true},
      {"fluid.init", KeyType::String, "\"taylor-green\"", "-", "Initial velocity field", -1e300, 1e300, false,
       {"taylor-green", "taylor-green-2d", "random"}},
      {"fluid.decomposition", KeyType::String, "\"auto\"", "-",
       "Distributed FFT decomposition: slabs when every rank gets an x- and a y-plane (auto), or pencils", -1e300,
       1e300, false, {"auto", "slab", "pencil"}, true},
      {"fluid.fft_plan", KeyType::String, "\"estimate\"", "-",
       "FFTW planning: estimate (same plan, same bits every run) or measure (faster, not bitwise reproducible)",
       -1e300, 1e300, false, {"estimate", "measure"}, true},
      {"fluid.dealias", KeyType::String, "\"two-thirds\"", "-",
       "Dealiasing of the nonlinear term: the 2/3 rule (keep |k_d| <= (n_d - 1) / 3) or none", -1e300, 1e300, false,
       {"two-thirds", "none"}},
      {"fluid.seed", KeyType::Int, "20240601", "-", "Seed of the random initial field", 0, 9.2e18},
      {"fluid.random_peak", KeyType::Float, "4.0", "1/length",
       "Random field: wavenumber k_p of the spectrum peak, E(k) ~ k^4 exp(-2 (k/k_p)^2)", 0, 1e6, true},
      {"fluid.random_energy", KeyType::Float, "0.5", "length^2/time^2", "Random field: kinetic energy 1/2 <u.u>", 0,
       1e15, true},
      {"fluid.forcing", KeyType::String, "\"none\"", "-",
       "Forcing: none, or linear (f = A u on the modes |k| <= fluid.forcing_kmax)", -1e300, 1e300, false,
       {"none", "linear"}},
      {"fluid.forcing_rate", KeyType::Float, "0.1", "1/time", "Linear forcing: rate A", 0, 1e9},
      {"fluid.forcing_kmax", KeyType::Float, "2.5", "1/length", "Linear forcing: largest forced |k|", 0, 1e6, true},
      {"fluid.spectrum_every", KeyType::Int, "0", "steps",
       "Energy spectrum E(k) to OUTDIR/spectrum.h5 every this many steps; 0: never", 0, 1e15, false, {}, true},
      {"fluid.field_every", KeyType::Int, "0", "steps",
       "Velocity field to OUTDIR/fields/ (HDF5) and OUTDIR/velocity.xmf every this many steps; 0: never", 0, 1e15,
       false, {}, true},
      {"fluid.blowup_factor", KeyType::Float, "100.0", "-",
       "Blow-up: stop when the energy exceeds this many times the initial energy", 1, 1e300, true, {}, true},
  };
  return schema;
}

}  // namespace spotrun::launcher
