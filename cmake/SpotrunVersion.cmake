# Generates spotrun/version.hpp with the version, git hash and build type.
find_package(Git QUIET)
set(SPOTRUN_GIT_HASH "unknown")
if(GIT_FOUND AND EXISTS ${CMAKE_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE _hash OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _hash)
    set(SPOTRUN_GIT_HASH ${_hash})
    execute_process(COMMAND ${GIT_EXECUTABLE} status --porcelain --untracked-files=no
                    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE _dirty ERROR_QUIET)
    if(_dirty)
      set(SPOTRUN_GIT_HASH "${SPOTRUN_GIT_HASH}-dirty")
    endif()
  endif()
endif()
# The GPU parts compiled in, as C++ bools (spotrun info and the run header print them).
foreach(_part KOKKOS_CUDA HAVE_CUFFT HAVE_CUBLAS HAVE_NCCL HAVE_CUDA_HOST)
  if(SPOTRUN_${_part})
    set(SPOTRUN_${_part}_BOOL true)
  else()
    set(SPOTRUN_${_part}_BOOL false)
  endif()
endforeach()
configure_file(${CMAKE_SOURCE_DIR}/cmake/version.hpp.in ${CMAKE_BINARY_DIR}/generated/spotrun/version.hpp @ONLY)
add_library(spotrun_version INTERFACE)
target_include_directories(spotrun_version INTERFACE ${CMAKE_BINARY_DIR}/generated)
