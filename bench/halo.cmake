# bench_halo (bench/bench_halo.cpp): the MD solver's halo update alone, its integrate step, and their
# memory-bandwidth floors at the run's rank count. A plain MPI program, run by bench/suite.py or by hand:
#   mpirun -np 2 build/bench/bench_halo --cells 20,20,20
add_executable(bench_halo ${CMAKE_CURRENT_LIST_DIR}/bench_halo.cpp)
target_link_libraries(bench_halo PRIVATE spotrun_md spotrun_warnings)
