# Incompressible Navier-Stokes, pseudo-spectral (see docs/fluid.md): target spotrun_fluid. Its fields and
# spectra are written by spotrun_field_output (io/CMakeLists.txt).

add_library(spotrun_fluid
  ${CMAKE_CURRENT_LIST_DIR}/fluid/fluid_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fluid/fluid_solver.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fluid/fluid_init.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fluid/fluid_diagnostics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fluid/fluid_state.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fluid/fluid_memory.cpp)
target_include_directories(spotrun_fluid PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(spotrun_fluid PUBLIC spotrun_fft spotrun_comm spotrun_io spotrun_kokkos
                      PRIVATE spotrun_field_output spotrun_warnings)
