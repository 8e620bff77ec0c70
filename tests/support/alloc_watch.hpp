#pragma once
// The largest single allocation made through operator new while an AllocWatch lives (any thread). Linking
// support/alloc_watch.cpp into a test program replaces the global operator new and delete of that program
// (its shared libraries included) with malloc-based ones that count: a check that memory is reused cannot
// be fooled by an allocator that hands the freed block straight back.
#include <cstddef>

namespace spotrun::test {

class AllocWatch {
 public:
  AllocWatch();
  ~AllocWatch();
  AllocWatch(const AllocWatch&) = delete;
  AllocWatch& operator=(const AllocWatch&) = delete;
  std::size_t largest() const;  // bytes; 0 when nothing was allocated
};

}  // namespace spotrun::test
