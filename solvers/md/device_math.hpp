#pragma once
// The math functions of device code at the pair arithmetic's own type (float or double) on every Kokkos
// spotrun builds with: Kokkos 4 has them in namespace Kokkos, Kokkos 3 (Debian's 3.4) in Kokkos::Experimental.
#include <Kokkos_Core.hpp>

namespace spotrun::md::math {

#if KOKKOS_VERSION >= 40000
using Kokkos::exp;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::sqrt;
#endif

}  // namespace spotrun::md::math
