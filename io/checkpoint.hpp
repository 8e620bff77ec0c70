#pragma once
// Checkpoint files: one HDF5 file per checkpoint, written collectively with parallel HDF5, independent
// of the decomposition (see docs/checkpoint-format.md). Commit is atomic: write NAME.tmp, close, fsync
// the file and its directory, rename. Every dataset carries a checksum that any rank count can verify.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "solver_state.hpp"

namespace spotrun::io {

struct CheckpointMeta {
  std::string solver;        // "md" | "fluid"
  std::int64_t step = 0;
  double time = 0;
  std::string deck;          // the resolved deck text
  std::string physics;       // canonical "key = value" lines of the physics keys (for resume checks)
  std::string units;         // "lj" for MD
  std::string version;       // spotrun version
  std::string git_hash;
  int nranks = 0;            // rank count that wrote it
};

// Writes state + meta to `path` atomically (collective). Throws std::runtime_error naming the path and
// the failing call on every rank if writing fails (the previous file of that name, if any, is intact).
void write_checkpoint(const comm::Communicator& comm, const std::string& path, const CheckpointMeta& meta,
                      const SolverState& state);

// Reads the metadata only (any rank count; collective). Throws InputError naming the file and problem.
CheckpointMeta read_checkpoint_meta(const comm::Communicator& comm, const std::string& path);

// Reads every dataset of the solver, each rank its even block of rows (block_of), verifying checksums
// and shapes (collective). `expected` lists the datasets the solver needs, with their inner shapes;
// global_rows of each expected array must be set (0 = take from the file). Throws InputError.
SolverState read_checkpoint(const comm::Communicator& comm, const std::string& path,
                            const std::vector<StateArray>& expected);

struct VerifyReport {
  bool ok = true;
  std::vector<std::string> lines;  // one per dataset: name, shape, checksum status
};
// Verifies every checksum and the metadata (collective; used by `spotrun inspect` and resume).
VerifyReport verify_checkpoint(const comm::Communicator& comm, const std::string& path);

}  // namespace spotrun::io
