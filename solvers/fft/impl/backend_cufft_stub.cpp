// Builds without the CUDA toolkit: the cuFFT backend is not compiled in.
#include "comm/errors.hpp"
#include "solvers/fft/backend.hpp"

namespace spotrun::fft {

bool cufft_compiled() { return false; }

namespace impl {

double cufft_work_area_bytes(const BatchSpec&) { return -1; }

std::unique_ptr<LocalBackend> make_backend(backend::Cufft, PlanRigor) {
  throw InputError("the cuFFT backend is not compiled into this spotrun (CUDA toolkit not found at configure time)");
}

}  // namespace impl
}  // namespace spotrun::fft
