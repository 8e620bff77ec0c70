// CPU figures of one rank: OpenBLAS DGEMM on one thread, and a STREAM triad on the host.
//
// OpenBLAS is loaded when the doctor first needs it (comm::SharedLibrary, a dlopen), not linked: the
// spotrun binary, and the relocatable bundle made from it (tools/make_bundle.sh, at most 64 MiB), do not
// carry its 36 MB. The header (cblas.h of libopenblas-dev) gives the types; the functions are looked up in
// the library.
#include <cblas.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/number_text.hpp"
#include "comm/probes/probes.hpp"
#include "comm/shared_library.hpp"

namespace spotrun::probes {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The test hook: stretch a timed call of `seconds` to slow_down times as long.
void stretch(double seconds, double slow_down) {
  if (slow_down > 1) std::this_thread::sleep_for(std::chrono::duration<double>(seconds * (slow_down - 1)));
}

struct OpenBlas {
  decltype(&cblas_dgemm) dgemm = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  decltype(&openblas_get_config) get_config = nullptr;
  std::string library;  // the file it came from
  std::string error;    // why it could not be loaded
};

// `library` when given (that file only), else the library of the OpenBLAS spotrun was built against, else
// the loader's search for libopenblas.so.0 and libopenblas.so. Loaded once (the first call's `library`
// counts), never unloaded.
const OpenBlas& openblas(const std::string& library) {
  static const OpenBlas blas = [&library] {
    OpenBlas b;
    std::vector<std::string> candidates;
    if (!library.empty()) {
      candidates.push_back(library);
    } else {
#if defined(SPOTRUN_OPENBLAS_LIBRARY_DIR)
      candidates.push_back(std::string(SPOTRUN_OPENBLAS_LIBRARY_DIR) + "/libopenblas.so.0");
#endif
      candidates.emplace_back("libopenblas.so.0");
      candidates.emplace_back("libopenblas.so");
    }
    for (const auto& name : candidates) {
      comm::SharedLibrary lib = comm::SharedLibrary::open(name);
      if (!lib.loaded()) {
        b.error += (b.error.empty() ? "" : "; ") + lib.error();
        continue;
      }
      b.dgemm = lib.find<decltype(&cblas_dgemm)>("cblas_dgemm");
      b.set_num_threads = lib.find<decltype(&openblas_set_num_threads)>("openblas_set_num_threads");
      b.get_config = lib.find<decltype(&openblas_get_config)>("openblas_get_config");
      if (b.dgemm && b.set_num_threads) {
        lib.keep();
        b.library = name;
        b.error.clear();
        return b;
      }
      b.error += (b.error.empty() ? "" : "; ") + name + " lacks cblas_dgemm or openblas_set_num_threads";
      b.dgemm = nullptr;
      b.set_num_threads = nullptr;
      b.get_config = nullptr;
    }
    b.error = "OpenBLAS not found (" + b.error + "); install libopenblas0 or set SPOTRUN_OPENBLAS_LIBRARY";
    return b;
  }();
  return blas;
}

}  // namespace

std::string blas_config(const std::string& library) {
  const OpenBlas& b = openblas(library);
  if (!b.dgemm) return "";
  const char* config = b.get_config ? b.get_config() : nullptr;
  return (config ? std::string(config) : std::string("OpenBLAS")) + " (" + b.library + ")";
}

std::string blas_missing(const std::string& library) { return openblas(library).error; }

double cpu_dgemm_gflops(int n, double min_seconds, double slow_down, const std::string& library) {
  const OpenBlas& blas = openblas(library);
  if (!blas.dgemm) throw std::runtime_error(blas.error);
  blas.set_num_threads(1);
  const std::size_t nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<double> a(nn), b(nn), c(nn, 0.0);
  for (std::size_t i = 0; i < nn; ++i) {
    a[i] = 1.0 / static_cast<double>(1 + i % 7);
    b[i] = 0.5 + static_cast<double>(i % 5) * 0.25;
  }
  auto gemm = [&] {
    blas.dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
  };
  gemm();  // warm-up: pages touched, OpenBLAS' buffers made
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int calls = 0; calls < 3 || (total < min_seconds && calls < 100); ++calls) {
    const auto t0 = Clock::now();
    gemm();
    stretch(seconds_since(t0), slow_down);
    const double t = seconds_since(t0);
    best = std::min(best, t);
    total += t;
  }
  // Its own result: C(i, j) for a few entries against the sum written out.
  for (int i : {0, n / 2, n - 1}) {
    const int j = (i * 7 + 3) % n;
    double want = 0;
    for (int k = 0; k < n; ++k)
      want += a[static_cast<std::size_t>(i) * n + k] * b[static_cast<std::size_t>(k) * n + j];
    const double got = c[static_cast<std::size_t>(i) * n + j];
    if (!(std::abs(got - want) <= 1e-10 * std::abs(want) * n))
      throw std::runtime_error("cblas_dgemm gave C(" + std::to_string(i) + ", " + std::to_string(j) + ") = " +
                               significant(got, 4) + ", the sum is " + significant(want, 4));
  }
  return 2.0 * static_cast<double>(n) * n * n / best / 1e9;
}

double cpu_triad_gbs(std::size_t bytes_per_array, int passes, double slow_down) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  using View = Kokkos::View<double*, Kokkos::HostSpace>;
  const std::size_t n = std::max<std::size_t>(bytes_per_array / sizeof(double), 1);
  View a(Kokkos::view_alloc(Kokkos::WithoutInitializing, "doctor::triad_a"), n);
  View b(Kokkos::view_alloc(Kokkos::WithoutInitializing, "doctor::triad_b"), n);
  View c(Kokkos::view_alloc(Kokkos::WithoutInitializing, "doctor::triad_c"), n);
  const Kokkos::RangePolicy<Space> range(0, n);
  // First touch by the threads that use the arrays.
  Kokkos::parallel_for("doctor::triad_init", range, [=](std::size_t i) {
    a(i) = 0.0;
    b(i) = 1.0;
    c(i) = 2.0;
  });
  Space().fence();
  const double s = 3.0;
  double best = std::numeric_limits<double>::infinity();
  for (int pass = -1; pass < passes; ++pass) {  // pass -1: warm-up
    const auto t0 = Clock::now();
    Kokkos::parallel_for("doctor::triad", range, [=](std::size_t i) { a(i) = b(i) + s * c(i); });
    Space().fence();
    stretch(seconds_since(t0), slow_down);
    if (pass >= 0) best = std::min(best, seconds_since(t0));
  }
  for (std::size_t i : {std::size_t{0}, n / 2, n - 1})
    if (a(i) != 7.0) throw std::runtime_error("the triad gave a(" + std::to_string(i) + ") = " + significant(a(i), 4) + ", not 7");
  return 3.0 * sizeof(double) * static_cast<double>(n) / best / 1e9;
}

}  // namespace spotrun::probes
