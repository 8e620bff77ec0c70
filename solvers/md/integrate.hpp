#pragma once
// Velocity Verlet (LAMMPS fix nve) and the Langevin thermostat (LAMMPS fix langevin, uniform noise)
// as Kokkos kernels over owned atoms.
#include "atoms.hpp"
#include "random.hpp"
#include "units.hpp"

#include <cmath>

namespace spotrun::md {

// Units (units.hpp): ftm2v converts force / mass * time to velocity (1 in lj units), as LAMMPS's fix nve
// dtf = dt/2 ftm2v; boltz, mvv2e the Langevin noise's kT and its conversion to force.

// v += dt/2 ftm2v f/m; x += dt v. Leaves the largest squared displacement since the last neighbour build in
// maxsq, where the kernels run (a device scalar on a GPU: the host reads it only when it needs it).
inline void initial_integrate(AtomStore& a, double dt, double ftm2v, const Kokkos::View<double, MemSpace>& maxsq) {
  auto x = a.x, v = a.v, f = a.f, xb = a.x_build;
  auto type = a.type;
  auto mass = a.mass_by_type;
  const double dtf = 0.5 * dt * ftm2v;
  Kokkos::parallel_reduce(
      "md::integrate::initial", Policy(0, a.nlocal),
      KOKKOS_LAMBDA(int i, double& m) {
        const double h = dtf / mass(type(i));
        double d2 = 0;
        for (int c = 0; c < 3; ++c) {
          v(i, c) += h * f(i, c);
          x(i, c) += dt * v(i, c);
          const double dx = x(i, c) - xb(i, c);
          d2 += dx * dx;
        }
        if (d2 > m) m = d2;
      },
      Kokkos::Max<double, MemSpace>(maxsq));
}

// far = far || maxsq > limit, on the device.
inline void note_far(const Kokkos::View<double, MemSpace>& maxsq, const Kokkos::View<int, MemSpace>& far, double limit) {
  Kokkos::parallel_for(
      "md::integrate::note_far", Policy(0, 1), KOKKOS_LAMBDA(int) {
        if (maxsq() > limit) far() = 1;
      });
}

// v += dt/2 ftm2v f/m
inline void final_integrate(AtomStore& a, double dt, double ftm2v) {
  auto v = a.v, f = a.f;
  auto type = a.type;
  auto mass = a.mass_by_type;
  const double dtf = 0.5 * dt * ftm2v;
  Kokkos::parallel_for(
      "md::integrate::final", Policy(0, a.nlocal), KOKKOS_LAMBDA(int i) {
        const double h = dtf / mass(type(i));
        for (int c = 0; c < 3; ++c) v(i, c) += h * f(i, c);
      });
}

// The units of the Langevin thermostat's forces.
struct LangevinUnits {
  double boltz = 1, mvv2e = 1, ftm2v = 1;
};
inline LangevinUnits langevin_units(const UnitConstants& u) { return {u.boltz, u.mvv2e, u.ftm2v}; }

// f += -m/(damp ftm2v) v + sqrt(24 boltz T m / (damp dt mvv2e)) / ftm2v (u - 1/2), u uniform keyed by
// (seed, id, step, c) (LAMMPS fix langevin's gamma1 and gamma2).
inline void langevin_forces(AtomStore& a, double temperature, double damp, double dt, std::uint64_t seed,
                            std::int64_t step, const LangevinUnits& u = {}) {
  auto v = a.v, f = a.f;
  auto type = a.type;
  auto id = a.id;
  auto mass = a.mass_by_type;
  const double g2 = std::sqrt(24.0 * u.boltz * temperature / (damp * dt * u.mvv2e)) / u.ftm2v;
  const double ftm2v = u.ftm2v;
  const std::uint64_t key = seed ^ (static_cast<std::uint64_t>(k_stream_langevin) << 40);
  Kokkos::parallel_for(
      "md::langevin::force", Policy(0, a.nlocal), KOKKOS_LAMBDA(int i) {
        const double m = mass(type(i));
        const double gamma1 = -m / damp / ftm2v;
        const double gamma2 = ::sqrt(m) * g2;
        for (int c = 0; c < 3; ++c) {
          const double u = keyed_uniform(key, static_cast<std::uint64_t>(id(i)), static_cast<std::uint64_t>(step), c);
          f(i, c) += gamma1 * v(i, c) + gamma2 * (u - 0.5);
        }
      });
}

}  // namespace spotrun::md
