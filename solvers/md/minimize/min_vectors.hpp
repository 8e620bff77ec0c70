#pragma once
// The minimiser's vector operations on this rank's owned atoms, as kernels on the solver's execution space
// (solvers/md/types.hpp): dot products and largest components (this rank's part: the minimiser sums them
// through the communicator), moves along a search direction, FIRE's velocity updates. The minimiser's
// per-atom vectors are columns of the atom field min_state (atom_fields.hpp), 64-bit rows holding each
// double by its bit pattern: a column c names the three components c, c + 1, c + 2.
#include <array>
#include <cstring>

#include "solvers/md/atoms.hpp"

namespace spotrun::md::minimize {

// The columns of min_state: CG's search direction h, previous gradient g and line-search start x0; FIRE's
// velocities.
inline constexpr int k_cg_h = 0, k_cg_g = 3, k_cg_x0 = 6, k_cg_width = 9;
inline constexpr int k_fire_v = 0, k_fire_width = 3;
// The force array instead of a column.
inline constexpr int k_force = -1;

KOKKOS_INLINE_FUNCTION double get(const IdRowsView& s, int i, int c) {
  double d;
  memcpy(&d, &s(i, c), sizeof d);
  return d;
}
KOKKOS_INLINE_FUNCTION void put(const IdRowsView& s, int i, int c, double v) { memcpy(&s(i, c), &v, sizeof v); }

// sum_i a_i . b_i, a and b a column or k_force.
double local_dot(const AtomStore& atoms, int a, int b);
// The largest |component| of a column or of the forces.
double local_max_abs(const AtomStore& atoms, int col);
// Column `to` = the forces (k_force) or the positions (from_x).
void copy_forces_to(const AtomStore& atoms, int to);
void copy_positions_to(const AtomStore& atoms, int to);
// x = x0 + alpha h; returns this rank's largest squared move since the last neighbour build.
double move_along(const AtomStore& atoms, double alpha, int x0, int h);
// The largest squared move since the last neighbour build.
double local_maxsq(const AtomStore& atoms);
// After a neighbour build wrapped positions into the box: x0 = x + the minimum image of x0 - x.
void rewrap(const AtomStore& atoms, int x0, const std::array<double, 3>& box);
// CG's new direction: g = f, h = g + beta h; and h = g.
void cg_direction(const AtomStore& atoms, double beta);
void cg_restart(const AtomStore& atoms);
// FIRE: v = 0; x -= 0.5 dt v (returns the largest squared move); v = dtf f / m; the explicit step
// v += dtf f / m, then mixed (v = scale1 v + scale2 f) when mix, x += dtv v (returns the largest squared move).
void fire_zero(const AtomStore& atoms);
double fire_half_step_back(const AtomStore& atoms, double dt);
void fire_kick(const AtomStore& atoms, double dtf);
double fire_move(const AtomStore& atoms, double dtf, double dtv, bool mix, double scale1, double scale2);

}  // namespace spotrun::md::minimize
