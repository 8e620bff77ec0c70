# Slurm tests, included from tests/CMakeLists.txt. Label "slurm".
#  - slurm_submit: unit test of the rendered batch script and of the job's end time (launcher/slurm/submit.cpp,
#    launcher/slurm/slurm_env.cpp, io/slurm_job.cpp, io/child_process.cpp's run_command), with stand-ins for
#    squeue and scontrol.
#  - slurm_sbatch_generated: slurm/spotrun-cpu.sbatch and slurm/spotrun-gpu.sbatch are what
#    cmake/SpotrunSbatch.cmake makes from slurm/spotrun.sbatch.in, the one source of both scripts and of the
#    job body `spotrun submit` writes (a diff where they differ; `cmake -P cmake/SpotrunSbatch.cmake` from
#    the repository root writes them). No Slurm needed.
#  - slurm.<scenario>: tests/slurm/slurm_test.sh. `scripts` needs no Slurm; `complete`, `preempt` and
#    `time_limit` start a private one-node Slurm (Debian packages slurm-wlm and munge, as root) and skip
#    (exit 77) where that is impossible; with SPOTRUN_REQUIRE_SLURM=1 in the environment a skip fails.
#    They run serially (a real cluster, timing-sensitive) and take about 4 minutes together.
#    Run only these: ctest --test-dir <build> -L slurm --output-on-failure
spotrun_add_test_executable(test_submit test_submit.cpp LIBS spotrun_submit)
add_test(NAME slurm_submit COMMAND $<TARGET_FILE:test_submit>)
set_tests_properties(slurm_submit PROPERTIES TIMEOUT 60 LABELS "unit;slurm")
add_test(NAME slurm_sbatch_generated
         COMMAND ${CMAKE_COMMAND} -DMODE=check -P ${PROJECT_SOURCE_DIR}/cmake/SpotrunSbatch.cmake)
set_tests_properties(slurm_sbatch_generated PROPERTIES TIMEOUT 30 LABELS "unit;slurm")

set(SPOTRUN_SLURM_SCENARIOS scripts complete preempt time_limit)
set(SPOTRUN_SLURM_TIMEOUT_scripts 300)
set(SPOTRUN_SLURM_TIMEOUT_complete 300)
set(SPOTRUN_SLURM_TIMEOUT_preempt 480)
set(SPOTRUN_SLURM_TIMEOUT_time_limit 600)
foreach(scenario IN LISTS SPOTRUN_SLURM_SCENARIOS)
  add_test(NAME slurm.${scenario}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/slurm/slurm_test.sh $<TARGET_FILE:spotrun> ${PROJECT_SOURCE_DIR}
                   ${scenario})
  set_tests_properties(slurm.${scenario} PROPERTIES LABELS slurm RUN_SERIAL TRUE SKIP_RETURN_CODE 77
                       TIMEOUT ${SPOTRUN_SLURM_TIMEOUT_${scenario}})
endforeach()
