# Checkpoint tests (io/checkpoint_write.cpp, io/checkpoint_read.cpp), included from tests/CMakeLists.txt:
# write, read back bitwise at the same and other rank counts, damaged and crafted files, failed writes.
# The test crafts damaged files with the HDF5 C API, hence spotrun_hdf5.
spotrun_add_test_executable(test_checkpoint test_checkpoint.cpp LIBS spotrun_io spotrun_hdf5)
spotrun_add_mpi_test(checkpoint test_checkpoint NPROCS 1 2 3 4 LABELS io)
