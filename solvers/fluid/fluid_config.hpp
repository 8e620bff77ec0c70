#pragma once
// Typed configuration of the incompressible Navier-Stokes solver in the periodic box [0, 2 pi)^3.
// Units: lengths in units of the box (the box is 2 pi long), time in the units of the initial fields
// (the Taylor-Green fields have velocity scale 1 and length scale 1, so time is L/V0); viscosity in
// length^2 / time (for Taylor-Green, nu = 1 / Re).
#include <array>
#include <cstdint>
#include <string>

#include "solvers/fft/backend.hpp"
#include "solvers/fft/geometry.hpp"

namespace spotrun::fluid {

enum class InitKind { TaylorGreen, TaylorGreen2d, Random };
enum class Forcing { None, Linear };
enum class Dealias { TwoThirds, None };

enum class FftBatch { Auto, Fields, None };

struct FluidConfig {
  std::array<int, 3> n{32, 32, 32};      // grid points nx, ny, nz
  double viscosity = 0.01;               // length^2 / time
  double dt = 0.01;                      // time: fixed step, or the largest step when cfl > 0
  double cfl = 0;                        // > 0: adaptive step dt = cfl / max(|u|/dx + |v|/dy + |w|/dz)
  double cfl_limit = 1.0;                // fixed step: a CFL number above this is an error
  double time_end = 0;                   // time; > 0: the run ends at this time (last step shortened)
  InitKind init = InitKind::TaylorGreen;
  fft::Decomposition decomposition = fft::Decomposition::Auto;
  std::array<int, 2> process_grid{0, 0};  // pencil grid p1 x p2; {0, 0}: chosen (not a deck key)
  fft::PlanRigor fft_plan = fft::PlanRigor::Estimate;
  // fluid.fft_batch: Fields, the components of a field (and the velocity with its vorticity) in one
  // batched distributed transform; None, one field per transform; Auto, Fields on device builds and
  // None on host builds (where batching measured slower, docs/fluid.md).
  FftBatch fft_batch = FftBatch::Auto;
  std::uint64_t seed = 20240601;         // random initial field
  double random_peak = 4.0;              // 1 / length: wavenumber of the spectrum peak
  double random_energy = 0.5;            // length^2 / time^2: kinetic energy 1/2 <u.u> of the field
  Forcing forcing = Forcing::None;
  double forcing_rate = 0.1;             // 1 / time: A in f = A u (linear forcing)
  double forcing_kmax = 2.5;             // 1 / length: forced modes have |k| <= forcing_kmax
  Dealias dealias = Dealias::TwoThirds;
  std::int64_t spectrum_every = 0;       // steps; 0: no spectrum output
  std::int64_t field_every = 0;          // steps; 0: no field output
  double blowup_factor = 100.0;          // energy above this many times the initial energy: blow-up
  // Pruned transforms (skip the rows the dealiasing zeroes); false transforms every row, for the tests
  // that compare the two (not a deck key).
  bool prune_transforms = true;
};

InitKind parse_init(const std::string& name);          // throws InputError
FftBatch parse_fft_batch(const std::string& name);     // "auto" | "fields" | "none"; throws InputError
Forcing parse_forcing(const std::string& name);        // throws InputError
Dealias parse_dealias(const std::string& name);        // throws InputError
std::string to_string(InitKind k);
std::string to_string(Forcing f);
std::string to_string(Dealias d);

}  // namespace spotrun::fluid
