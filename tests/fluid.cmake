# Distributed FFT and fluid solver tests, each at 1, 2, 3 and 4 ranks.
spotrun_add_test_executable(test_fft test_fft.cpp LIBS spotrun_fft PkgConfig::FFTW3)
spotrun_add_mpi_test(fft test_fft NPROCS 1 2 3 4 TIMEOUT 180)
spotrun_add_test_executable(test_fft_batch test_fft_batch.cpp LIBS spotrun_fft)
spotrun_add_mpi_test(fft_batch test_fft_batch NPROCS 1 2 3 4 TIMEOUT 240)
spotrun_add_test_executable(test_fft_gradient test_fft_gradient.cpp LIBS spotrun_fft)
spotrun_add_mpi_test(fft_gradient test_fft_gradient NPROCS 1 2 3 4 TIMEOUT 120)
spotrun_add_test_executable(test_fft_grouping test_fft_grouping.cpp LIBS spotrun_fft)
spotrun_add_mpi_test(fft_grouping test_fft_grouping NPROCS 1 2 4 TIMEOUT 120)

spotrun_add_test_executable(test_fluid test_fluid.cpp
                            LIBS spotrun_fluid spotrun_run spotrun_field_output spotrun_hdf5)
spotrun_add_mpi_test(fluid test_fluid NPROCS 1 2 3 4 TIMEOUT 300)

# spotrun_add_fluid_script_test(NAME SCRIPT TIMEOUT NP...): the test fluid.NAME.npNP of tests/cli/SCRIPT
# (arguments NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR SOURCE_DIR; exit 77: skipped) for each NP.
function(spotrun_add_fluid_script_test name script timeout)
  foreach(np ${ARGN})
    add_test(NAME fluid.${name}.np${np}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/${script} ${np} $<TARGET_FILE:spotrun>
                     ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${CMAKE_CURRENT_BINARY_DIR}/cli-work/fluid.${name}.np${np}
                     ${PROJECT_SOURCE_DIR})
    set_tests_properties(fluid.${name}.np${np} PROPERTIES TIMEOUT ${timeout} PROCESSORS ${np} SKIP_RETURN_CODE 77
                         LABELS "cli;mpi;fluid")
  endforeach()
endfunction()

# The fluid solver against the NumPy/SciPy implementation of its method (bench/fluid_scipy.py, the
# peer of the fluid benchmark): the same energies to 1e-12 at 1 and 2 ranks.
spotrun_add_fluid_script_test(scipy_peer fluid_scipy_test.sh 180 1 2)

# The energy spectrum: bitwise equal in two runs and equal to NumPy's from the final state, at 1-4 ranks.
spotrun_add_fluid_script_test(spectrum fluid_spectrum_test.sh 240 1 2 3 4)
