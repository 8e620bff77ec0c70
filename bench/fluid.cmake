# bench_fluid: time per fluid step against the distributed-FFT floor, and a deck driver for
# bench/tgv_validation.sh. Plain MPI program (not Google Benchmark): run it under mpirun.
set(SPOTRUN_BENCH_FLUID_SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_fluid.cpp)
get_target_property(_spotrun_launcher_sources spotrun_launcher SOURCES)
if(NOT _spotrun_launcher_sources MATCHES "fluid_config\\.cpp")
  list(APPEND SPOTRUN_BENCH_FLUID_SOURCES ${PROJECT_SOURCE_DIR}/launcher/fluid_config.cpp)
endif()
if(NOT _spotrun_launcher_sources MATCHES "deck_schema_fluid\\.cpp")
  list(APPEND SPOTRUN_BENCH_FLUID_SOURCES ${PROJECT_SOURCE_DIR}/launcher/deck_schema_fluid.cpp)
endif()
add_executable(bench_fluid ${SPOTRUN_BENCH_FLUID_SOURCES})
target_link_libraries(bench_fluid PRIVATE spotrun_fluid spotrun_launcher spotrun_io spotrun_warnings)
