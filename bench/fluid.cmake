# bench_fluid: time per fluid step against the distributed-FFT floor, and a deck driver for
# bench/tgv_validation.sh. Plain MPI program (not Google Benchmark): run it under mpirun.
add_executable(bench_fluid ${CMAKE_CURRENT_LIST_DIR}/bench_fluid.cpp)
target_link_libraries(bench_fluid PRIVATE spotrun_fluid spotrun_launcher spotrun_io spotrun_warnings)
