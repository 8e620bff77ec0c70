#pragma once
// Checkpoint files: one HDF5 file per checkpoint, written collectively with parallel HDF5, independent
// of the decomposition (see docs/checkpoint-format.md). Commit is atomic: write NAME.tmp, close, seal
// (a manifest of hashes of every byte, in the HDF5 user block), fsync the file and its directory,
// rename. Every dataset carries a checksum tied to its name that any rank count can verify.
#include <cstdint>
#include <memory>
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
  std::string level;         // a node file of a multilevel checkpoint: which rows of the run it holds
                             // (io/checkpoint_levels.hpp); "" for a whole checkpoint. Stored as /meta/level.
};

// Writes state + meta to `path` atomically (collective). Throws std::runtime_error naming the path and
// the failing call on every rank if writing fails (the previous file of that name, if any, is intact).
void write_checkpoint(const comm::Communicator& comm, const std::string& path, const CheckpointMeta& meta,
                      const SolverState& state);

struct VerifyReport {
  bool ok = true;
  std::vector<std::string> lines;  // one per item: the file, the metadata, each dataset with its checksum status
};

// A checkpoint of either kind opened for reading (io/checkpoint_store.hpp opens one by its name): one shared
// file (CheckpointReader, below) or a level set (LevelSetReader, io/checkpoint_levels.hpp). Every method
// that reads is collective.
class CheckpointSource {
 public:
  virtual ~CheckpointSource() = default;
  virtual const CheckpointMeta& meta() const = 0;
  virtual const std::string& path() const = 0;  // the file, or the set's index
  // Bytes of the file, or of all node files of the set (collective).
  virtual std::uint64_t bytes() const = 0;
  // One line per file read and where (a level set's node files); none for one shared file.
  virtual const std::vector<std::string>& sources() const = 0;
  // One line per copy refused where another copy of its file is read; none for one shared file.
  virtual const std::vector<std::string>& skipped() const = 0;
  // Every rank its block_of() rows of every expected array (collective); InputError. An optional array the
  // checkpoint lacks is left out; a row extent of StateArray::k_any_extent is the file's.
  virtual SolverState read(const std::vector<StateArray>& expected) = 0;
  // Every dataset and checksum (collective); never throws for a bad item, it reports it.
  virtual VerifyReport verify() = 0;
};

// A checkpoint opened for reading (collective, any rank count). The constructor verifies every byte of
// the file against its whole-file manifest (file_manifest.hpp) before HDF5 parses any of it, then
// reads the metadata and both texts, checking their checksums; a damaged, truncated, crafted or
// unreadable file throws InputError naming the file and the problem, on every rank.
class CheckpointReader : public CheckpointSource {
 public:
  CheckpointReader(const comm::Communicator& comm, const std::string& path);
  ~CheckpointReader() override;
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const CheckpointMeta& meta() const override;
  const std::string& path() const override;
  std::uint64_t bytes() const override;  // of the file (collective: rank 0 looks)
  const std::vector<std::string>& sources() const override;  // none
  const std::vector<std::string>& skipped() const override;  // none
  // Reads every dataset of the solver, each rank its even block of rows (block_of), verifying checksums
  // and shapes (collective). `expected` lists the datasets the solver needs, with their inner shapes;
  // global_rows of each expected array must be set (0 = take from the file). Throws InputError.
  SolverState read(const std::vector<StateArray>& expected) override;
  // Checks every dataset of the file and its checksum, and the scalars (collective); never throws for
  // a bad item, it reports it (ok = false).
  VerifyReport verify() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// One-call forms of the reader (each verifies the whole file once).
CheckpointMeta read_checkpoint_meta(const comm::Communicator& comm, const std::string& path);
SolverState read_checkpoint(const comm::Communicator& comm, const std::string& path,
                            const std::vector<StateArray>& expected);
VerifyReport verify_checkpoint(const comm::Communicator& comm, const std::string& path);

// The solver and step a checkpoint's manifest states, read without verifying the file (collective): for
// ordering the candidates of a resume by step. Throws InputError when the file has no readable manifest.
struct CheckpointSummary {
  std::string solver;
  std::int64_t step = 0;
};
CheckpointSummary peek_checkpoint(const comm::Communicator& comm, const std::string& path);

}  // namespace spotrun::io
