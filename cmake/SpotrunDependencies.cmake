# Finds every external dependency of spotrun and exposes each as a target.
#
# Kokkos: a Kokkos >= 4 found by find_package(Kokkos 4 CONFIG) (OpenMP or CUDA builds, via
# CMAKE_PREFIX_PATH or Kokkos_ROOT); otherwise Debian's libtrilinos-kokkos-dev (Kokkos 3.4, Serial),
# whose exported CMake target points at a wrong include directory, so spotrun builds its own target.

find_package(MPI REQUIRED COMPONENTS C CXX)

find_package(Kokkos 4 CONFIG QUIET)
if(Kokkos_FOUND)
  message(STATUS "spotrun: Kokkos ${Kokkos_VERSION} (find_package), devices: ${Kokkos_DEVICES}")
  add_library(spotrun_kokkos INTERFACE)
  target_link_libraries(spotrun_kokkos INTERFACE Kokkos::kokkos)
  set(SPOTRUN_KOKKOS_SOURCE "Kokkos ${Kokkos_VERSION}")
else()
  find_path(SPOTRUN_TRILINOS_KOKKOS_INCLUDE Kokkos_Core.hpp PATHS /usr/include/trilinos NO_DEFAULT_PATH)
  find_library(SPOTRUN_TRILINOS_KOKKOSCORE trilinos_kokkoscore)
  find_library(SPOTRUN_TRILINOS_KOKKOSCONTAINERS trilinos_kokkoscontainers)
  if(NOT SPOTRUN_TRILINOS_KOKKOS_INCLUDE OR NOT SPOTRUN_TRILINOS_KOKKOSCORE OR NOT SPOTRUN_TRILINOS_KOKKOSCONTAINERS)
    message(FATAL_ERROR "spotrun: no Kokkos found. Either point CMAKE_PREFIX_PATH at a Kokkos >= 4 "
                        "installation or install Debian's libtrilinos-kokkos-dev.")
  endif()
  message(STATUS "spotrun: Kokkos from Trilinos (${SPOTRUN_TRILINOS_KOKKOSCORE}), headers in ${SPOTRUN_TRILINOS_KOKKOS_INCLUDE}")
  add_library(spotrun_kokkos INTERFACE)
  target_include_directories(spotrun_kokkos SYSTEM INTERFACE ${SPOTRUN_TRILINOS_KOKKOS_INCLUDE})
  target_link_libraries(spotrun_kokkos INTERFACE ${SPOTRUN_TRILINOS_KOKKOSCONTAINERS} ${SPOTRUN_TRILINOS_KOKKOSCORE} ${CMAKE_DL_LIBS})
  set(SPOTRUN_KOKKOS_SOURCE "Trilinos Kokkos")
endif()

set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "spotrun: HDF5 found at ${HDF5_INCLUDE_DIRS} is not parallel; install libhdf5-openmpi-dev")
endif()
add_library(spotrun_hdf5 INTERFACE)
target_include_directories(spotrun_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
target_link_libraries(spotrun_hdf5 INTERFACE ${HDF5_C_LIBRARIES} MPI::MPI_C)
target_compile_definitions(spotrun_hdf5 INTERFACE ${HDF5_DEFINITIONS})

find_package(CLI11 CONFIG REQUIRED)
find_package(toml11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
# libcurl: the spot notice watcher's HTTP to the metadata service (io/cloud/impl/http_curl.cpp).
find_package(CURL REQUIRED)

find_package(PkgConfig REQUIRED)
pkg_check_modules(FFTW3 REQUIRED IMPORTED_TARGET fftw3)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# hwloc: each rank's CPU cores near its GPU (comm/cpu_binding.cpp); Open MPI's own topology library.
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)

# GPU parts, each found on its own (none depends on another being there):
#   SPOTRUN_KOKKOS_CUDA  the Kokkos found has the Cuda backend (its Kokkos_DEVICES): kernels on the GPU
#   SPOTRUN_HAVE_CUFFT   cuFFT from CMake's CUDAToolkit (CUDA::cufft): the fluid solver's GPU FFTs
#   SPOTRUN_HAVE_CUBLAS  cuBLAS from CMake's CUDAToolkit (CUDA::cublas)
#   SPOTRUN_HAVE_NCCL    NCCL through cmake/FindNCCL.cmake: the nccl transport
# The host-API parts compile with the host compiler; kernels stay in Kokkos. SPOTRUN_ENABLE_CUDA_HOST=OFF
# leaves the toolkit's libraries out of a CPU build.
set(SPOTRUN_KOKKOS_CUDA OFF)
if(Kokkos_FOUND AND "CUDA" IN_LIST Kokkos_DEVICES)
  set(SPOTRUN_KOKKOS_CUDA ON)
endif()
set(SPOTRUN_HAVE_CUFFT OFF)
set(SPOTRUN_HAVE_CUBLAS OFF)
set(SPOTRUN_HAVE_NCCL OFF)
if(SPOTRUN_ENABLE_CUDA_HOST OR SPOTRUN_KOKKOS_CUDA)
  find_package(CUDAToolkit QUIET)
  if(TARGET CUDA::cufft)
    set(SPOTRUN_HAVE_CUFFT ON)
  endif()
  if(TARGET CUDA::cublas)
    set(SPOTRUN_HAVE_CUBLAS ON)
  endif()
  find_package(NCCL QUIET)
  if(NCCL_FOUND AND TARGET CUDA::cudart)  # the transport needs the CUDA runtime too
    set(SPOTRUN_HAVE_NCCL ON)
  endif()
endif()
if(SPOTRUN_KOKKOS_CUDA AND NOT SPOTRUN_HAVE_CUFFT)
  message(WARNING "spotrun: a CUDA Kokkos without cuFFT: the fluid solver cannot run on the GPU")
endif()
set(SPOTRUN_HAVE_CUDA_HOST ${SPOTRUN_HAVE_CUFFT})  # cuFFT compiled in: the CUDA host APIs are
message(STATUS "spotrun: GPU parts: Kokkos CUDA ${SPOTRUN_KOKKOS_CUDA}, cuFFT ${SPOTRUN_HAVE_CUFFT}, "
               "cuBLAS ${SPOTRUN_HAVE_CUBLAS}, NCCL ${SPOTRUN_HAVE_NCCL}"
               " (CUDA toolkit ${CUDAToolkit_VERSION}, NCCL ${NCCL_VERSION})")
# One CUDA runtime per process: nvcc links its static runtime (cudart_static) into whatever it links unless
# told otherwise, while Kokkos, cuFFT and the transports take the shared libcudart (CUDA::cudart), so a
# library without CUDA code of its own (cloud, report) would carry a second runtime. A CUDA build whose
# compiler driver is nvcc_wrapper links every target with the shared runtime (tools/cuda_runtimes.sh checks
# a build's programs; tools/make_bundle.sh refuses a program with two).
if(SPOTRUN_KOKKOS_CUDA AND CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper$")
  add_link_options("SHELL:-cudart shared")
endif()

# Warnings for spotrun's own code.
add_library(spotrun_warnings INTERFACE)
target_compile_options(spotrun_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers>)
# spotrun's shared libraries call their own functions directly, as a static build would (no interposition
# through the PLT).
target_compile_options(spotrun_warnings INTERFACE $<$<CXX_COMPILER_ID:GNU>:-fno-semantic-interposition>)
if(SPOTRUN_KOKKOS_CUDA)
  # nvcc's translation of host lambdas declares typedefs it does not use.
  target_compile_options(spotrun_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-unused-local-typedefs>)
endif()
