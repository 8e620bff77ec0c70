# The run report (io/report/, launcher/report/, docs/report.md), included from tests/CMakeLists.txt.
# Unit: the model's figures on made-up attempts, the ledger, the GPU sampler without NVML.
spotrun_add_test_executable(test_report test_report.cpp LIBS spotrun_report)
spotrun_add_unit_test(report.unit test_report)
set_tests_properties(report.unit PROPERTIES LABELS "unit;report")
# End to end (tests/report/report_test.sh): a run stopped by SIGTERM twice and resumed, at 1, 2 and 3 ranks.
foreach(np 1 2 3)
  add_test(NAME report.sigterm_twice.np${np}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report/report_test.sh $<TARGET_FILE:spotrun> ${MPIEXEC_EXECUTABLE}
                   ${np} ${CMAKE_CURRENT_BINARY_DIR}/cli-work/report.np${np})
  set_tests_properties(report.sigterm_twice.np${np} PROPERTIES TIMEOUT 600 PROCESSORS ${np} LABELS "cli;mpi;report"
                       PASS_REGULAR_EXPRESSION "PASS: report at np ${np}")
endforeach()
# --png (tests/report/png_test.sh): a PNG path that cannot be written is refused (exit 2, one line naming it);
# the PNG of a resumed run has the thermo panels. Skipped (77) without matplotlib for /usr/bin/python3.
add_test(NAME report.png COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report/png_test.sh $<TARGET_FILE:spotrun>)
set_tests_properties(report.png PROPERTIES TIMEOUT 300 LABELS "cli;report" SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "PASS: report png")
