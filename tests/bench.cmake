# The benchmark suite's own tests (bench/suite.py; tests/bench/). None judges a timing. Each runs alone
# (RUN_SERIAL: the regression test compares timings of two runs, the others start several ranks); all
# together take about 3 minutes on 2 cores. Run only these: ctest --test-dir <build> -L bench
find_program(SPOTRUN_SYSTEM_PYTHON /usr/bin/python3 NO_DEFAULT_PATH)
if(NOT SPOTRUN_BUILD_BENCH OR NOT SPOTRUN_SYSTEM_PYTHON)
  message(STATUS "spotrun: the benchmark suite tests need SPOTRUN_BUILD_BENCH and /usr/bin/python3; not registered")
  return()
endif()
set(_bench_work ${CMAKE_CURRENT_BINARY_DIR}/bench-work)
# Records, decks, comparison and usage, no benchmark run.
add_test(NAME bench.suite_records COMMAND ${SPOTRUN_SYSTEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bench/test_suite_records.py)
set_tests_properties(bench.suite_records PROPERTIES TIMEOUT 60 LABELS bench)
# Every suite deck at 3 ranks (an odd count, oversubscribed here) in tiny mode; outputs checked.
add_test(NAME bench.suite_smoke.np3
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench/suite_smoke_test.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
                 ${_bench_work}/smoke 3)
# The planted slowdown (SPOTRUN_TEST_FORCE_SLOWDOWN, a test hook of tests/spotrun-test, which it measures) caught
# by --compare, an unchanged build not flagged.
add_test(NAME bench.suite_regression.np1
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench/suite_regression_test.sh ${PROJECT_SOURCE_DIR}
                 ${PROJECT_BINARY_DIR} ${_bench_work}/regression 1)
# bench/jube/spotrun.xml through JUBE (tag smoke: every deck at 1 and 2 ranks).
add_test(NAME bench.jube_smoke
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench/jube_test.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
                 ${_bench_work}/jube)
set_tests_properties(bench.suite_smoke.np3 bench.suite_regression.np1 bench.jube_smoke PROPERTIES
                     TIMEOUT 400 PROCESSORS 2 RUN_SERIAL TRUE LABELS "bench;mpi")
