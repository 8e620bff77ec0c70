# Distributed 3D FFT (slabs and pencils over comm::Transport; FFTW3 on the host, cuFFT when the CUDA
# toolkit is found): target spotrun_fft, used by the fluid solver and later by long-range MD.
set(SPOTRUN_FFT_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/fft/geometry.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fft/reshape_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fft/reshape.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fft/derivative.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fft/distributed_fft.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fft/impl/backend_fftw.cpp)
if(SPOTRUN_HAVE_CUFFT)
  list(APPEND SPOTRUN_FFT_SOURCES ${CMAKE_CURRENT_LIST_DIR}/fft/impl/backend_cufft.cpp)
else()
  list(APPEND SPOTRUN_FFT_SOURCES ${CMAKE_CURRENT_LIST_DIR}/fft/impl/backend_cufft_stub.cpp)
endif()
add_library(spotrun_fft ${SPOTRUN_FFT_SOURCES})
target_include_directories(spotrun_fft PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(spotrun_fft PUBLIC spotrun_comm spotrun_kokkos PRIVATE PkgConfig::FFTW3 spotrun_warnings)
if(SPOTRUN_HAVE_CUFFT)
  target_link_libraries(spotrun_fft PRIVATE CUDA::cufft CUDA::cudart)
  target_compile_definitions(spotrun_fft PUBLIC SPOTRUN_HAVE_CUFFT=1)
endif()
