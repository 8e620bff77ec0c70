# Spot notices (io/cloud/, launcher/run/spot_notices.cpp, docs/cloud.md), included from tests/CMakeLists.txt. Every
# server they talk to is a test server on a loopback address (tests/support/http_server.hpp).
# Unit tests: the metadata endpoint check, the provider from DMI, deadlines, each provider's notice format,
# hostile servers (huge, endless, silent, malformed, redirecting) and the watcher thread.
spotrun_add_test_executable(test_cloud test_cloud.cpp LIBS spotrun_cloud spotrun_run)
spotrun_add_unit_test(cloud test_cloud TIMEOUT 120)
set_tests_properties(cloud PROPERTIES LABELS "unit;cloud")

# The test server as a program, for tests/cli/cloud_test.sh: serves the files of a folder.
add_executable(spotrun_test_http_server support/http_server_main.cpp)
target_include_directories(spotrun_test_http_server PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
find_package(Threads REQUIRED)
target_link_libraries(spotrun_test_http_server PRIVATE Threads::Threads spotrun_warnings)

# End to end (tests/cli/cloud_test.sh CASE NP): cloud.<case>.np<N>, through spotrun-test (its DMI folder hook).
set(SPOTRUN_CLOUD_CASES notice_stops_the_run hung_service_undisturbed refused_urls)
foreach(np 1 3)
  foreach(case IN LISTS SPOTRUN_CLOUD_CASES)
    add_test(NAME cloud.${case}.np${np}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cloud_test.sh ${case} ${np}
                     $<TARGET_FILE:spotrun-test> ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG}
                     ${CMAKE_CURRENT_BINARY_DIR}/cli-work/cloud.${case}.np${np} $<TARGET_FILE:spotrun_test_http_server>)
    set_tests_properties(cloud.${case}.np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np} LABELS "cli;mpi;cloud")
  endforeach()
endforeach()
