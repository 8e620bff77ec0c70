// The minimiser's vector operations as kernels (min_vectors.hpp). Device lambdas read views and scalars
// from locals only.
#include "min_vectors.hpp"

namespace spotrun::md::minimize {

namespace {
// Component c of column col (or of the forces).
KOKKOS_INLINE_FUNCTION double comp(const Vec3View& f, const IdRowsView& s, int col, int i, int c) {
  return col == k_force ? f(i, c) : get(s, i, col + c);
}
}  // namespace

double local_dot(const AtomStore& atoms, int a, int b) {
  const auto f = atoms.f;
  const auto s = atoms.min_state;
  double sum = 0;
  Kokkos::parallel_reduce(
      "md::minimize::dot", Policy(0, atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& acc) {
        for (int c = 0; c < 3; ++c) acc += comp(f, s, a, i, c) * comp(f, s, b, i, c);
      },
      sum);
  return sum;
}

double local_max_abs(const AtomStore& atoms, int col) {
  const auto f = atoms.f;
  const auto s = atoms.min_state;
  double m = 0;
  Kokkos::parallel_reduce(
      "md::minimize::max_abs", Policy(0, atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& acc) {
        for (int c = 0; c < 3; ++c) {
          const double w = comp(f, s, col, i, c), v = w < 0 ? -w : w;
          if (v > acc) acc = v;
        }
      },
      Kokkos::Max<double>(m));
  return atoms.nlocal > 0 ? m : 0.0;
}

void copy_forces_to(const AtomStore& atoms, int to) {
  const auto f = atoms.f;
  const auto s = atoms.min_state;
  Kokkos::parallel_for(
      "md::minimize::copy_forces", Policy(0, atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) put(s, i, to + c, f(i, c));
      });
}

void copy_positions_to(const AtomStore& atoms, int to) {
  const auto x = atoms.x;
  const auto s = atoms.min_state;
  Kokkos::parallel_for(
      "md::minimize::copy_positions", Policy(0, atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) put(s, i, to + c, x(i, c));
      });
}

double move_along(const AtomStore& atoms, double alpha, int x0, int h) {
  const auto x = atoms.x;
  const auto xb = atoms.x_build;
  const auto s = atoms.min_state;
  double m = 0;
  Kokkos::parallel_reduce(
      "md::minimize::move_along", Policy(0, atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& acc) {
        double d2 = 0;
        for (int c = 0; c < 3; ++c) {
          x(i, c) = get(s, i, x0 + c) + alpha * get(s, i, h + c);
          const double d = x(i, c) - xb(i, c);
          d2 += d * d;
        }
        if (d2 > acc) acc = d2;
      },
      Kokkos::Max<double>(m));
  return atoms.nlocal > 0 ? m : 0.0;
}

double local_maxsq(const AtomStore& atoms) {
  const auto x = atoms.x;
  const auto xb = atoms.x_build;
  double m = 0;
  Kokkos::parallel_reduce(
      "md::minimize::maxsq", Policy(0, atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& acc) {
        double d2 = 0;
        for (int c = 0; c < 3; ++c) d2 += (x(i, c) - xb(i, c)) * (x(i, c) - xb(i, c));
        if (d2 > acc) acc = d2;
      },
      Kokkos::Max<double>(m));
  return atoms.nlocal > 0 ? m : 0.0;
}

void rewrap(const AtomStore& atoms, int x0, const std::array<double, 3>& box) {
  const auto x = atoms.x;
  const auto s = atoms.min_state;
  const double lx = box[0], ly = box[1], lz = box[2];
  Kokkos::parallel_for(
      "md::minimize::rewrap", Policy(0, atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) {
          const double l = c == 0 ? lx : c == 1 ? ly : lz;
          double d = get(s, i, x0 + c) - x(i, c);
          if (d > 0.5 * l) d -= l;  // a wrap moves a position by one box length
          else if (d < -0.5 * l) d += l;
          put(s, i, x0 + c, x(i, c) + d);
        }
      });
}

void cg_direction(const AtomStore& atoms, double beta) {
  const auto f = atoms.f;
  const auto s = atoms.min_state;
  Kokkos::parallel_for(
      "md::minimize::cg_direction", Policy(0, atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) {
          put(s, i, k_cg_g + c, f(i, c));
          put(s, i, k_cg_h + c, f(i, c) + beta * get(s, i, k_cg_h + c));
        }
      });
}

void cg_restart(const AtomStore& atoms) {
  const auto s = atoms.min_state;
  Kokkos::parallel_for(
      "md::minimize::cg_restart", Policy(0, atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) put(s, i, k_cg_h + c, get(s, i, k_cg_g + c));
      });
}

void fire_zero(const AtomStore& atoms) {
  const auto s = atoms.min_state;
  Kokkos::parallel_for(
      "md::minimize::fire_zero", Policy(0, atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) put(s, i, k_fire_v + c, 0.0);
      });
}

double fire_half_step_back(const AtomStore& atoms, double dt) {
  const auto x = atoms.x;
  const auto s = atoms.min_state;
  Kokkos::parallel_for(
      "md::minimize::fire_half_step_back", Policy(0, atoms.nlocal), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < 3; ++c) x(i, c) -= 0.5 * dt * get(s, i, k_fire_v + c);
      });
  return local_maxsq(atoms);
}

void fire_kick(const AtomStore& atoms, double dtf) {
  const auto f = atoms.f;
  const auto s = atoms.min_state;
  const auto type = atoms.type;
  const auto mass = atoms.mass_by_type;
  Kokkos::parallel_for(
      "md::minimize::fire_kick", Policy(0, atoms.nlocal), KOKKOS_LAMBDA(int i) {
        const double dtfm = dtf / mass(type(i));
        for (int c = 0; c < 3; ++c) put(s, i, k_fire_v + c, dtfm * f(i, c));
      });
}

double fire_move(const AtomStore& atoms, double dtf, double dtv, bool mix, double scale1, double scale2) {
  const auto x = atoms.x;
  const auto xb = atoms.x_build;
  const auto f = atoms.f;
  const auto s = atoms.min_state;
  const auto type = atoms.type;
  const auto mass = atoms.mass_by_type;
  double m = 0;
  Kokkos::parallel_reduce(
      "md::minimize::fire_move", Policy(0, atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& acc) {
        const double dtfm = dtf / mass(type(i));
        double d2 = 0;
        for (int c = 0; c < 3; ++c) {
          double v = get(s, i, k_fire_v + c) + dtfm * f(i, c);
          if (mix) v = scale1 * v + scale2 * f(i, c);
          put(s, i, k_fire_v + c, v);
          x(i, c) += dtv * v;
          const double d = x(i, c) - xb(i, c);
          d2 += d * d;
        }
        if (d2 > acc) acc = d2;
      },
      Kokkos::Max<double>(m));
  return atoms.nlocal > 0 ? m : 0.0;
}

}  // namespace spotrun::md::minimize
