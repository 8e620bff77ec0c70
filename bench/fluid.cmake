# bench_fluid: time per fluid step against the distributed-FFT floor, the distributed FFT alone against raw
# FFTW (--fft-only), and a deck driver for bench/tgv_validation.sh. Plain MPI program (not Google
# Benchmark): run it under mpirun.
add_executable(bench_fluid ${CMAKE_CURRENT_LIST_DIR}/bench_fluid.cpp)
target_link_libraries(bench_fluid PRIVATE spotrun_fluid spotrun_run spotrun_io spotrun_warnings)
# Raw FFTW for --fft-only: FFTW's MPI library (Debian: libfftw3-mpi-dev, no pkg-config file); without it
# --fft-only prints n/a for raw FFTW.
find_library(SPOTRUN_FFTW3_MPI_LIBRARY fftw3_mpi)
find_path(SPOTRUN_FFTW3_MPI_INCLUDE fftw3-mpi.h)
if(SPOTRUN_FFTW3_MPI_LIBRARY AND SPOTRUN_FFTW3_MPI_INCLUDE)
  target_include_directories(bench_fluid PRIVATE ${SPOTRUN_FFTW3_MPI_INCLUDE})
  target_link_libraries(bench_fluid PRIVATE ${SPOTRUN_FFTW3_MPI_LIBRARY} PkgConfig::FFTW3)
  target_compile_definitions(bench_fluid PRIVATE SPOTRUN_HAVE_FFTW_MPI=1)
else()
  message(STATUS "spotrun: FFTW's MPI library not found, bench_fluid --fft-only runs without raw FFTW (install libfftw3-mpi-dev)")
endif()
