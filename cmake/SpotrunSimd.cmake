# The CPU instruction set of spotrun's own code, as GROMACS's GMX_SIMD: chosen when spotrun is configured.
#   SPOTRUN_SIMD=AUTO (default): the widest of AVX2, AVX, NONE that the configuring machine runs (a build
#                  is for the machines it is configured on, as a cluster's software stack is per partition);
#   AVX2, AVX:     that set, whatever the configuring machine runs (for a bundle built for other machines);
#   NONE:          the compiler's default (x86-64: SSE2), for any x86-64 machine.
# The MD force loop (solvers/md/force.hpp) is the code that gains: 4 doubles per instruction instead of 2.
# The set changes no result: floating-point contraction stays off (ISO C++ mode), so no FMA is formed.
set(SPOTRUN_SIMD "AUTO" CACHE STRING "CPU instruction set of spotrun's code: AUTO, AVX2, AVX or NONE")
set_property(CACHE SPOTRUN_SIMD PROPERTY STRINGS AUTO AVX2 AVX NONE)

set(_simd "${SPOTRUN_SIMD}")
if(NOT _simd MATCHES "^(AUTO|AVX2|AVX|NONE)$")
  message(FATAL_ERROR "SPOTRUN_SIMD = '${SPOTRUN_SIMD}' is not known; allowed: AUTO, AVX2, AVX, NONE")
endif()
if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" OR NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  if(NOT _simd STREQUAL "NONE" AND NOT _simd STREQUAL "AUTO")
    message(FATAL_ERROR "SPOTRUN_SIMD = ${_simd} needs an x86-64 GCC or Clang build; use AUTO or NONE")
  endif()
  set(_simd "NONE")
elseif(_simd STREQUAL "AUTO")
  # What the configuring machine runs: its CPU as the compiler's runtime sees it (cpuid and the OS's
  # support for the wide registers).
  set(_probe "${CMAKE_BINARY_DIR}/CMakeFiles/spotrun_simd_probe.cpp")
  file(WRITE "${_probe}" [=[
#include <cstdio>
int main() {
  __builtin_cpu_init();
  std::puts(__builtin_cpu_supports("avx2") ? "AVX2" : __builtin_cpu_supports("avx") ? "AVX" : "NONE");
  return 0;
}
]=])
  try_run(_run_rc _compile_ok "${CMAKE_BINARY_DIR}/spotrun_simd_probe" "${_probe}" RUN_OUTPUT_VARIABLE _detected)
  string(STRIP "${_detected}" _detected)
  if(_compile_ok AND _run_rc EQUAL 0 AND _detected MATCHES "^(AVX2|AVX|NONE)$")
    set(_simd "${_detected}")
  else()
    set(_simd "NONE")
  endif()
endif()

if(_simd STREQUAL "AVX2")
  set(_simd_flags -mavx2)
elseif(_simd STREQUAL "AVX")
  set(_simd_flags -mavx)
else()
  set(_simd_flags "")
endif()
if(_simd_flags)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_simd_flags}>")
endif()
set(SPOTRUN_SIMD_USED "${_simd}")
message(STATUS "spotrun SIMD: ${SPOTRUN_SIMD_USED} (SPOTRUN_SIMD = ${SPOTRUN_SIMD})")
