# Distributed FFT and fluid solver tests, each at 1, 2, 3 and 4 ranks.
spotrun_add_test_executable(test_fft test_fft.cpp LIBS spotrun_fft PkgConfig::FFTW3)
spotrun_add_mpi_test(fft test_fft NPROCS 1 2 3 4 TIMEOUT 180)

spotrun_add_test_executable(test_fluid test_fluid.cpp
                            LIBS spotrun_fluid spotrun_launcher spotrun_field_output spotrun_hdf5)
spotrun_add_mpi_test(fluid test_fluid NPROCS 1 2 3 4 TIMEOUT 300)

# The fluid solver against the NumPy/SciPy implementation of its method (bench/fluid_scipy.py, the
# peer of the fluid benchmark): the same energies to 1e-12 at 1 and 2 ranks.
foreach(np 1 2)
  add_test(NAME fluid.scipy_peer.np${np}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/fluid_scipy_test.sh ${np} $<TARGET_FILE:spotrun>
                   ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${CMAKE_CURRENT_BINARY_DIR}/cli-work/fluid.scipy_peer.np${np}
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties(fluid.scipy_peer.np${np} PROPERTIES TIMEOUT 180 PROCESSORS ${np} SKIP_RETURN_CODE 77
                       LABELS "cli;mpi;fluid")
endforeach()

# The energy spectrum: bitwise equal in two runs and equal to NumPy's from the final state, at 1-4 ranks.
foreach(np 1 2 3 4)
  add_test(NAME fluid.spectrum.np${np}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/fluid_spectrum_test.sh ${np} $<TARGET_FILE:spotrun>
                   ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${CMAKE_CURRENT_BINARY_DIR}/cli-work/fluid.spectrum.np${np}
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties(fluid.spectrum.np${np} PROPERTIES TIMEOUT 240 PROCESSORS ${np} SKIP_RETURN_CODE 77
                       LABELS "cli;mpi;fluid")
endforeach()
