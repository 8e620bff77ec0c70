# `cmake --build BUILD --target bundle`: tools/make_bundle.sh packs spotrun, the test programs and the
# benchmarks of this build, with the libraries they need, into BUILD/spotrun-bundle and
# BUILD/spotrun-bundle.tar.gz (see docs/gpu.md, "A bundle for bare GPU nodes"). It builds them first. The
# folder has no size limit (--max-mib 0): the .tar.gz is what is carried, and stays within 64 MiB.
set(_spotrun_bundle_programs spotrun)
foreach(_dir IN ITEMS tests bench)
  string(TOUPPER "SPOTRUN_BUILD_${_dir}" _option)
  if(NOT ${_option})
    continue()
  endif()
  get_property(_targets DIRECTORY ${_dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_type ${_target} TYPE)
    if(_type STREQUAL "EXECUTABLE")
      list(APPEND _spotrun_bundle_programs ${_target})
    endif()
  endforeach()
endforeach()
add_custom_target(bundle
  COMMAND bash ${PROJECT_SOURCE_DIR}/tools/make_bundle.sh --build-dir ${PROJECT_BINARY_DIR} --tar --max-mib 0
  COMMENT "Making the relocatable bundle ${PROJECT_BINARY_DIR}/spotrun-bundle"
  VERBATIM USES_TERMINAL)
add_dependencies(bundle ${_spotrun_bundle_programs})
