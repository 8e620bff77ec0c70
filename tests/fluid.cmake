# Distributed FFT and fluid solver tests, each at 1, 2, 3 and 4 ranks.
spotrun_add_test_executable(test_fft test_fft.cpp LIBS spotrun_fft PkgConfig::FFTW3)
spotrun_add_mpi_test(fft test_fft NPROCS 1 2 3 4 TIMEOUT 180)

spotrun_add_test_executable(test_fluid test_fluid.cpp
                            LIBS spotrun_fluid spotrun_launcher spotrun_field_output spotrun_hdf5)
spotrun_add_mpi_test(fluid test_fluid NPROCS 1 2 3 4 TIMEOUT 300)
