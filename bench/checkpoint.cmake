# Checkpoint throughput (bench/bench_checkpoint.cpp), included from bench/CMakeLists.txt. A plain MPI
# program, not a ctest and not Google Benchmark: run it by hand, e.g.
#   mpirun -np 2 build/bench/bench_checkpoint /scratch/dir 5 32000 256000 2048000
add_executable(bench_checkpoint ${CMAKE_CURRENT_LIST_DIR}/bench_checkpoint.cpp)
target_link_libraries(bench_checkpoint PRIVATE spotrun_io spotrun_warnings)
