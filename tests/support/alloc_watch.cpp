// Counting replacements of the global operator new and delete (alloc_watch.hpp).
#include "alloc_watch.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

// nvcc (a CUDA build compiles every .cpp as CUDA) declares the global operator new __host__ __device__ and
// warns that these call host functions; they are only ever called on the host.
#if defined(__NVCC__)
#pragma nv_diag_suppress 20011
#endif

namespace {

std::atomic<int> g_watching{0};
std::atomic<std::size_t> g_largest{0};

void note(std::size_t n) {
  if (g_watching.load(std::memory_order_relaxed) == 0) return;
  std::size_t now = g_largest.load(std::memory_order_relaxed);
  while (n > now && !g_largest.compare_exchange_weak(now, n, std::memory_order_relaxed)) {
  }
}

void* allocate(std::size_t n) {
  note(n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

void* allocate_aligned(std::size_t n, std::align_val_t a) {
  note(n);
  std::size_t align = static_cast<std::size_t>(a);
  if (align < sizeof(void*)) align = sizeof(void*);
  void* p = nullptr;
  if (::posix_memalign(&p, align, n ? n : 1) != 0) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace spotrun::test {

AllocWatch::AllocWatch() {
  g_largest.store(0);
  g_watching.fetch_add(1);
}
AllocWatch::~AllocWatch() { g_watching.fetch_sub(1); }
std::size_t AllocWatch::largest() const { return g_largest.load(); }

}  // namespace spotrun::test

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  note(n);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  note(n);
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return allocate_aligned(n, a);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept { return operator new(n, a, t); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
