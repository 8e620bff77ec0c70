# Distributed FFT and fluid solver tests, each at 1, 2, 3 and 4 ranks.
spotrun_add_test_executable(test_fft test_fft.cpp LIBS spotrun_fft PkgConfig::FFTW3)
spotrun_add_mpi_test(fft test_fft NPROCS 1 2 3 4 TIMEOUT 180)

# launcher/fluid_config.cpp and deck_schema_fluid.cpp are compiled into the test until the launcher
# target lists them.
set(SPOTRUN_FLUID_TEST_SOURCES test_fluid.cpp)
get_target_property(_spotrun_launcher_sources spotrun_launcher SOURCES)
if(NOT _spotrun_launcher_sources MATCHES "fluid_config\\.cpp")
  list(APPEND SPOTRUN_FLUID_TEST_SOURCES ${PROJECT_SOURCE_DIR}/launcher/fluid_config.cpp)
endif()
if(NOT _spotrun_launcher_sources MATCHES "deck_schema_fluid\\.cpp")
  list(APPEND SPOTRUN_FLUID_TEST_SOURCES ${PROJECT_SOURCE_DIR}/launcher/deck_schema_fluid.cpp)
endif()
spotrun_add_test_executable(test_fluid ${SPOTRUN_FLUID_TEST_SOURCES}
                            LIBS spotrun_fluid spotrun_launcher spotrun_field_output spotrun_hdf5)
spotrun_add_mpi_test(fluid test_fluid NPROCS 1 2 3 4 TIMEOUT 300)
