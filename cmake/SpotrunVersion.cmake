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
if(SPOTRUN_HAVE_CUDA_HOST)
  set(SPOTRUN_HAVE_CUDA_HOST_BOOL true)
else()
  set(SPOTRUN_HAVE_CUDA_HOST_BOOL false)
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/version.hpp.in ${CMAKE_BINARY_DIR}/generated/spotrun/version.hpp @ONLY)
add_library(spotrun_version INTERFACE)
target_include_directories(spotrun_version INTERFACE ${CMAKE_BINARY_DIR}/generated)
