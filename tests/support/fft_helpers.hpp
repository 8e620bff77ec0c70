#pragma once
// Helpers of the FFT tests.
#include <array>
#include <optional>

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

}  // namespace spotrun::test
