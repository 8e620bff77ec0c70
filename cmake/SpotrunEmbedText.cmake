# A text file of the tree (a shell script, a Python script) as a C++ string constant, made at build time so
# that the file stays the one source and the program needs nothing beside it at run time.
#
#   include(SpotrunEmbedText) then spotrun_embed_text(TARGET INPUT FILE NAME k_name HEADER name.hpp)
#     adds to TARGET the generated header generated/spotrun/name.hpp, which defines
#     `inline constexpr const char* spotrun::embedded::k_name` holding FILE's text; an edit of FILE rebuilds
#     what includes "spotrun/name.hpp".
#   cmake -DINPUT=FILE -DOUTPUT=HEADER -DNAME=k_name -P cmake/SpotrunEmbedText.cmake   (the build step)
if(CMAKE_SCRIPT_MODE_FILE)
  foreach(v INPUT OUTPUT NAME)
    if(NOT ${v})
      message(FATAL_ERROR "SpotrunEmbedText.cmake needs -D${v}=...")
    endif()
  endforeach()
  file(READ "${INPUT}" _text)
  if(_text MATCHES "\\)EMBEDDED\"")
    message(FATAL_ERROR "${INPUT} contains ')EMBEDDED\"', which ends the C++ raw string it becomes")
  endif()
  get_filename_component(_file "${INPUT}" NAME)
  string(CONCAT _header "#pragma once\n// Generated at build time from ${_file} by cmake/SpotrunEmbedText.cmake: edit that file, not this one.\n"
              "namespace spotrun::embedded {\n\ninline constexpr const char* ${NAME} = R\"EMBEDDED(${_text})EMBEDDED\";\n\n"
              "}  // namespace spotrun::embedded\n")
  set(_old "")
  if(EXISTS "${OUTPUT}")
    file(READ "${OUTPUT}" _old)
  endif()
  if(NOT _old STREQUAL _header)
    file(WRITE "${OUTPUT}" "${_header}")
  endif()
  file(TOUCH_NOCREATE "${OUTPUT}")  # newer than its input, also when the text did not change
  return()
endif()

set(_spotrun_embed_script "${CMAKE_CURRENT_LIST_FILE}")
function(spotrun_embed_text target)
  cmake_parse_arguments(E "" "INPUT;NAME;HEADER" "" ${ARGN})
  get_filename_component(_input "${E_INPUT}" ABSOLUTE)
  set(_out "${CMAKE_BINARY_DIR}/generated/spotrun/${E_HEADER}")
  file(RELATIVE_PATH _shown "${PROJECT_SOURCE_DIR}" "${_input}")
  add_custom_command(OUTPUT "${_out}"
                     COMMAND ${CMAKE_COMMAND} -DINPUT=${_input} -DOUTPUT=${_out} -DNAME=${E_NAME}
                             -P ${_spotrun_embed_script}
                     DEPENDS "${_input}" "${_spotrun_embed_script}"
                     COMMENT "Embedding ${_shown} as ${E_HEADER}" VERBATIM)
  target_sources(${target} PRIVATE "${_out}")
  target_include_directories(${target} PRIVATE "${CMAKE_BINARY_DIR}/generated")
endfunction()
