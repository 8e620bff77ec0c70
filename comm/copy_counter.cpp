#include "copy_counter.hpp"

#include <Kokkos_Core.hpp>
#include <atomic>
#include <cstring>

namespace spotrun::comm {
namespace {

std::atomic<std::uint64_t> g_bytes{0};
std::atomic<std::uint64_t> g_copies{0};
std::atomic<std::uint64_t> g_scalars{0};
bool g_counting = false;

void on_deep_copy(Kokkos::Tools::SpaceHandle dst, const char*, const void*, Kokkos::Tools::SpaceHandle src, const char*,
                  const void*, std::uint64_t size) {
  if (std::strncmp(dst.name, src.name, sizeof dst.name) == 0) return;
  if (size <= k_scalar_bytes) {
    ++g_scalars;
    return;
  }
  g_bytes += size;
  ++g_copies;
}

}  // namespace

void start_counting_copies() {
  if (g_counting || Kokkos::Tools::profileLibraryLoaded()) return;
  Kokkos::Tools::Experimental::set_begin_deep_copy_callback(on_deep_copy);
  g_counting = true;
}

bool counting_copies() { return g_counting; }

CopyTally copies_between_spaces() { return {g_bytes.load(), g_copies.load(), g_scalars.load()}; }

}  // namespace spotrun::comm
