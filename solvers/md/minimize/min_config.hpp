#pragma once
// [md.minimize]: an energy minimisation before the dynamics (LAMMPS `minimize etol ftol maxiter maxeval` with
// min_style cg or fire and min_modify dmax). LAMMPS's command has no defaults; spotrun's are below
// (docs/decks.md, docs/md.md#minimisation).
#include <cstdint>

namespace spotrun::md {

enum class MinStyle { Cg, Fire };

struct MinimizeConfig {
  bool enabled = false;           // the deck has [md.minimize]
  MinStyle style = MinStyle::Cg;  // md.minimize.style: "cg" (Polak-Ribiere, quadratic line search) or "fire"
  double etol = 1e-8;             // relative energy change that stops it (0: never)
  double ftol = 1e-10;            // 2-norm of the global force vector that stops it (epsilon/sigma; 0: never)
  std::int64_t max_iterations = 1000;
  std::int64_t max_evaluations = 10000;
  double dmax = 0.1;  // sigma: the largest move of any coordinate in one line search (or one FIRE step)
};

}  // namespace spotrun::md
