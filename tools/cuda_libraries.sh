# Sourced by tools/make_bundle.sh and tools/cuda_runtimes.sh: the one list of NVIDIA's libraries.
# is_cuda SONAME: the NVIDIA driver's or the CUDA toolkit's (runtime, math libraries, NCCL, ...): the bundle
# takes them from the node (but for the runtime, which it packs), and their private CUDA runtimes are
# hidden by design (cuda_runtimes.sh does not count them).
is_cuda() {
    [[ "$1" =~ ^lib(cuda|cudart|cufft|cufftw|cublas|cublasLt|curand|cusolver|cusolverMg|cusparse|cusparseLt|cufile|nccl|nvshmem_host|nvrtc|nvrtc-builtins|nvJitLink|nvToolsExt|nvtx3interop|nvjpeg|npp[a-z]*|nvblas|cupti|cudnn[a-z_]*|nvidia-[a-z0-9-]+|nvperf_[a-z]+)\.so ]]
}
