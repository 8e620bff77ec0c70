#pragma once
// `spotrun export CHECKPOINT --lammps-data FILE --xyz FILE`: the atoms of an MD checkpoint as a LAMMPS data
// file (read_data continues it: same thermo at step 0) and as extended XYZ.
#include <string>

#include "comm/communicator.hpp"

namespace spotrun::launcher {

struct ExportOptions {
  std::string checkpoint;
  std::string lammps_data;  // "" = not written
  std::string xyz;          // "" = not written
};

// Verifies and reads the checkpoint (collective), writes the files on rank 0; 0, or 2 for bad input.
int export_checkpoint(const comm::Communicator& comm, const ExportOptions& opt);

}  // namespace spotrun::launcher
