#pragma once
// Checked CUDA runtime calls: check_cuda(cudaSetDevice(d), "cudaSetDevice") throws std::runtime_error
// naming the call and CUDA's reason. Only for code compiled where CUDA's runtime header is found (a CUDA
// build of Kokkos, or NCCL's host-API code); it needs no library of its own beyond CUDA::cudart.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace spotrun::comm {

inline void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(e));
}

}  // namespace spotrun::comm
