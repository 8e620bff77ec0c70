#pragma once
// The precision of the pair forces (md.precision), as a tag the force kernels are compiled for:
//  - Double: every number in double (the default).
//  - Mixed: each pair's separation is taken in double (x_i - x_j, exact for atoms far from the origin of a
//    large box) and then rounded to float; the distance, the evaluator's force factor and energy of the pair
//    are float (8 lanes of an AVX2 register, twice double's); the force components (double separation times
//    the factor), the sums over pairs (the force on an atom, the reactions, the energy and the virial) are
//    double, as are positions, velocities and the integration
//    (LAMMPS GPU and INTEL "mixed", GROMACS's default build).
// A pair style is an evaluator template over the real type of its pair arithmetic (pair_lj_cut.hpp); a
// precision picks the instance.
#include <string>

namespace spotrun::md {

enum class Precision { Double, Mixed };

struct DoublePrecision {
  using pair_real = double;  // separations, distances, pair forces and energies
  static constexpr Precision value = Precision::Double;
};

struct MixedPrecision {
  using pair_real = float;
  static constexpr Precision value = Precision::Mixed;
};

inline const char* precision_name(Precision p) { return p == Precision::Mixed ? "mixed" : "double"; }
inline const char* k_precisions = "\"double\", \"mixed\"";

}  // namespace spotrun::md
