# End-to-end checkpoint/resume tests of the spotrun binary (tests/resume/resume_test.sh).
find_program(SPOTRUN_H5DIFF h5diff)
if(NOT SPOTRUN_H5DIFF)
  message(WARNING "spotrun: h5diff not found (Debian: hdf5-tools); the resume tests are not registered")
  return()
endif()
function(spotrun_add_resume_test scenario)
  foreach(np ${ARGN})
    add_test(NAME resume.${scenario}.np${np}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume/resume_test.sh $<TARGET_FILE:spotrun> ${scenario} ${np})
    set_tests_properties(resume.${scenario}.np${np} PROPERTIES TIMEOUT 600 PROCESSORS ${np} LABELS "resume;mpi"
                         PASS_REGULAR_EXPRESSION "PASS: ${scenario} at np ${np}")
  endforeach()
endfunction()
spotrun_add_resume_test(bitwise 1 2 3 4)
spotrun_add_resume_test(ranks 2 4)
spotrun_add_resume_test(kill 1 3)
spotrun_add_resume_test(damaged 2)
spotrun_add_resume_test(physics 3)
