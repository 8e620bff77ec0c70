# Incompressible Navier-Stokes, pseudo-spectral (see docs/fluid.md): target spotrun_fluid.
# io/field_output.cpp (HDF5 + XDMF fields, spectra) is built here as spotrun_field_output until io/
# registers it; it needs parallel HDF5 (spotrun_hdf5) and the checked HDF5 calls of io/impl/hdf5 (spotrun_io).
if(NOT TARGET spotrun_field_output)
  add_library(spotrun_field_output ${CMAKE_SOURCE_DIR}/io/field_output.cpp)
  target_include_directories(spotrun_field_output PUBLIC ${CMAKE_SOURCE_DIR})
  target_link_libraries(spotrun_field_output PUBLIC spotrun_comm PRIVATE spotrun_io spotrun_hdf5 spotrun_warnings)
endif()

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
