#pragma once
// How many bytes Kokkos copies between memory spaces: a deep_copy whose source and destination are in
// different spaces (a device array to the host and back is what a solver whose data stays on the device
// must not do in its time loop). Counted through the Kokkos Tools deep-copy callback; the run summary
// reports the figures per step, and tests assert that a step copies nothing between spaces.
#include <cstdint>

namespace spotrun::comm {

// Copies of at most k_scalar_bytes are scalars (a reduction result, a count): a step may read a few of
// those (a rebuild decision, thermo); arrays are the rest.
inline constexpr std::uint64_t k_scalar_bytes = 64;
struct CopyTally {
  std::uint64_t bytes = 0;    // of arrays copied between different memory spaces
  std::uint64_t copies = 0;   // array copies between spaces
  std::uint64_t scalars = 0;  // scalar copies between spaces
};

// Installs the callback (idempotent). Does nothing, and counting() stays false, when a Kokkos Tools
// library is loaded (it owns the callbacks); call after Kokkos::initialize.
void start_counting_copies();
bool counting_copies();
// The copies between memory spaces since start_counting_copies().
CopyTally copies_between_spaces();

}  // namespace spotrun::comm
