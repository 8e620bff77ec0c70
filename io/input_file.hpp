#pragma once
// Input files (decks, LAMMPS data files) read on the root rank and broadcast to every rank.
#include <cstdint>
#include <string>

#include "comm/communicator.hpp"

namespace spotrun::io {

// Reads the whole file `path` on the root rank and broadcasts it (collective). It must be a regular
// file (a FIFO, device or directory is refused without being waited on or read) of at most
// `max_bytes`. Throws InputError on every rank naming `what` ("deck"), the path and the problem.
std::string read_input_file(const comm::Communicator& comm, const std::string& path, const std::string& what,
                            std::uint64_t max_bytes);

// The root rank's half of read_input_file, without MPI (also usable before MPI starts): the whole regular
// file `path` of at most `max_bytes`, a FIFO never waited on. Throws std::runtime_error naming `what`, the
// path and the problem.
std::string read_regular_file(const std::string& path, const std::string& what, std::uint64_t max_bytes);

// The size of a regular file `path` on the root rank, broadcast; InputError on every rank when it is
// missing or not a regular file.
std::uint64_t input_file_size(const comm::Communicator& comm, const std::string& path, const std::string& what);

}  // namespace spotrun::io
