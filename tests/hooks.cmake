# Test hooks out of what ships (docs/layout.md, "Test hooks"), included from tests/CMakeLists.txt.
# hooks.none_in_spotrun: spotrun and every spotrun library it loads hold no "SPOTRUN_TEST_" string (no
# test hook reads the environment); it builds nothing, it reads the files of this build.
# hooks.check_detects: the same check on spotrun-test, which installs its hooks from SPOTRUN_TEST_*
# variables, must fail naming it: the check can fail.
# hooks.units: the hooks installed directly (test_hooks.cpp) act where spotrun asks for them.
add_test(NAME hooks.none_in_spotrun
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/hooks/check_no_test_hooks.sh $<TARGET_FILE:spotrun>)
set_tests_properties(hooks.none_in_spotrun PROPERTIES LABELS unit TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "check_no_test_hooks: [0-9]+ files .*libspotrun_comm.so.*: no SPOTRUN_TEST_ string")
add_test(NAME hooks.check_detects
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/hooks/check_no_test_hooks.sh $<TARGET_FILE:spotrun-test>)
set_tests_properties(hooks.check_detects PROPERTIES LABELS unit TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "spotrun-test: holds .*SPOTRUN_TEST_PAUSE.*check_no_test_hooks: FAILED: 1 of")
spotrun_add_test_executable(test_hooks test_hooks.cpp LIBS spotrun_run spotrun_md spotrun_io)
spotrun_add_mpi_test(hooks.units test_hooks NPROCS 1 2 TIMEOUT 180)
