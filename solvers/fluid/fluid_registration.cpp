// The fluid solver's registration: its deck keys ([fluid]; docs/fluid.md and docs/decks.md document the
// same keys), its configuration reader, the rule between fluid.cfl and fluid.cfl_limit, its memory and
// checkpoint sizes, and its factory.
#include "fluid_registration.hpp"

#include <cstdio>

#include "comm/errors.hpp"
#include "fluid_memory.hpp"
#include "fluid_solver.hpp"
#include "solvers/registry.hpp"

namespace spotrun::fluid {

using io::Deck;
using io::KeySpec;
using io::KeyType;

FluidConfig config_from_deck(const Deck& d) {
  FluidConfig c;
  c.n = d.get_int3("fluid.n");
  c.viscosity = d.get_float("fluid.viscosity");
  c.dt = d.get_float("fluid.dt");
  c.cfl = d.get_float("fluid.cfl");
  c.cfl_limit = d.get_float("fluid.cfl_limit");
  c.time_end = d.get_float("fluid.time_end");
  c.init = parse_init(d.get_string("fluid.init"));
  c.decomposition = fft::parse_decomposition(d.get_string("fluid.decomposition"));
  c.fft_plan = fft::parse_plan_rigor(d.get_string("fluid.fft_plan"));
  c.fft_batch = parse_fft_batch(d.get_string("fluid.fft_batch"));
  c.dealias = parse_dealias(d.get_string("fluid.dealias"));
  c.seed = static_cast<std::uint64_t>(d.get_int("fluid.seed"));
  c.random_peak = d.get_float("fluid.random_peak");
  c.random_energy = d.get_float("fluid.random_energy");
  c.forcing = parse_forcing(d.get_string("fluid.forcing"));
  c.forcing_rate = d.get_float("fluid.forcing_rate");
  c.forcing_kmax = d.get_float("fluid.forcing_kmax");
  c.spectrum_every = d.get_int("fluid.spectrum_every");
  c.field_every = d.get_int("fluid.field_every");
  c.blowup_factor = d.get_float("fluid.blowup_factor");
  return c;
}

namespace {

// Units: lengths in box units (the periodic box is 2 pi long), time in the units of the initial velocity
// (Taylor-Green: velocity scale 1, length scale 1); "-" marks names, switches, seeds and ratios.
// Resumable (may change on resume, not physics): time_end, cfl_limit, decomposition, fft_plan,
// fft_batch, output intervals, blowup_factor.
std::vector<KeySpec> fluid_keys() {
  return {
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
      {"fluid.fft_batch", KeyType::String, "\"auto\"", "-",
       "Distributed FFTs: fields (the components, and velocity with vorticity, in one transform: one "
       "exchange per transpose for all), none (one transform per component), or auto (fields on GPU "
       "builds, none on CPU builds)",
       -1e300, 1e300, false, {"auto", "fields", "none"}, true},
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
}

// The fluid solver as the registry reads it (solvers/registry.hpp: make_registration<Definition>()).
struct FluidDefinition {
  using Config = FluidConfig;
  static constexpr const char* name = "fluid";
  static constexpr const char* units = "nondimensional";
  static std::vector<KeySpec> keys() { return fluid_keys(); }
  static FluidConfig read_config(const Deck& d) { return config_from_deck(d); }

  static void check_rules(const Deck& d, const FluidConfig& c) {
    if (c.cfl > c.cfl_limit)
      throw InputError(d.where("fluid.cfl") + ": fluid.cfl = " + std::to_string(c.cfl) + " exceeds fluid.cfl_limit = " +
                       std::to_string(c.cfl_limit));
  }

  static solvers::MemoryEstimate memory(const FluidConfig& cfg, double, int nranks) {
    return solvers::MemoryEstimate::of(estimated_memory(cfg, nranks),
                                       "the fluid grid of " + std::to_string(cfg.n[0]) + " x " +
                                           std::to_string(cfg.n[1]) + " x " + std::to_string(cfg.n[2]) + " points");
  }

  // state() writes the velocity u (3 doubles per grid point) and its half spectrum uhat (nx x ny x
  // (nz/2 + 1) modes of 3 complex numbers): 8 (3 + 6 (nz/2 + 1) / nz) bytes per grid point.
  static double checkpoint_bytes_per_work_unit(const FluidConfig& cfg) {
    const double nz = cfg.n[2];
    return 8.0 * (3.0 + 6.0 * static_cast<double>(cfg.n[2] / 2 + 1) / nz);
  }

  static double deck_work_units(const FluidConfig& cfg) {
    return static_cast<double>(cfg.n[0]) * static_cast<double>(cfg.n[1]) * static_cast<double>(cfg.n[2]);
  }

  static void check_fresh(const FluidConfig& cfg, const solvers::SolverContext& ctx, const solvers::SolverInputs&) {
    check_fresh_start(cfg, ctx.comm.size());
  }

  static std::unique_ptr<Solver> make(const FluidConfig& cfg, const solvers::SolverContext& ctx,
                                      const solvers::SolverInputs* inputs) {
    auto solver = std::make_unique<FluidSolver>(cfg, ctx.comm, ctx.transport, inputs == nullptr);
    if (ctx.comm.is_root())
      for (const auto& w : solver->warnings()) std::fprintf(stderr, "WARNING: %s\n", w.c_str());
    return solver;
  }
};

}  // namespace
}  // namespace spotrun::fluid

namespace spotrun::solvers {

SolverRegistration registration_fluid() { return make_registration<fluid::FluidDefinition>(); }

}  // namespace spotrun::solvers
