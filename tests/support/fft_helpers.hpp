#pragma once
// Helpers of the FFT tests.
#include <array>
#include <optional>
#include <vector>

#include "comm/errors.hpp"
#include "solvers/fft/geometry.hpp"

namespace spotrun::test {

// The decomposition of grid n over nranks ranks, or none where the grid is too small for it (the
// refusal itself is tested on its own).
inline std::optional<fft::FftGeometry> geometry_if_fits(const std::array<int, 3>& n, int nranks,
                                                        fft::Decomposition kind,
                                                        const std::array<int, 2>& grid = {0, 0}) {
  try {
    return fft::make_fft_geometry(n, nranks, kind, grid);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// Calls f(geometry) for every size of `sizes` decomposed in slabs and in pencils over nranks ranks, where it
// fits; returns how many it called.
template <class F>
int for_each_geometry(const std::vector<std::array<int, 3>>& sizes, int nranks, F&& f) {
  int calls = 0;
  for (const auto& n : sizes)
    for (auto kind : {fft::Decomposition::Slab, fft::Decomposition::Pencil}) {
      const auto fits = geometry_if_fits(n, nranks, kind);
      if (!fits) continue;
      f(*fits);
      ++calls;
    }
  return calls;
}

}  // namespace spotrun::test
