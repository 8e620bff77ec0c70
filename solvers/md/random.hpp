#pragma once
// Counter-based random numbers: a value is a pure function of (seed, atom id, step, component), so
// trajectories do not depend on the rank count or the order atoms are stored in.
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace spotrun::md {

KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t z) {
  // The splitmix64 finaliser (Steele, Lea, Flood 2014): a bijective avalanche mix.
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) keyed by four integers.
KOKKOS_INLINE_FUNCTION double keyed_uniform(std::uint64_t seed, std::uint64_t id, std::uint64_t step,
                                            std::uint64_t component) {
  std::uint64_t h = mix64(seed);
  h = mix64(h ^ id);
  h = mix64(h ^ step);
  h = mix64(h ^ component);
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

// Streams, so that different uses of the same seed never share numbers.
enum RandomStream : std::uint64_t { k_stream_velocity = 0x7665ull, k_stream_langevin = 0x6c616eull,
                               k_stream_type = 0x747970ull };

}  // namespace spotrun::md
