#pragma once
// The whole-file manifest of a checkpoint: a short text in the HDF5 user block (the bytes HDF5 reserves
// ahead of its own data and never reads) that lists a hash of every block of the file behind it. Every
// byte of a checkpoint is verified against it before the HDF5 library parses any of them, so a damaged
// file is refused with a message instead of reaching HDF5's parser (which may crash or loop on damaged
// metadata). Format: docs/checkpoint-format.md, "Whole-file manifest".
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace spotrun::io {

struct FileManifest {
  std::uint64_t userblock = 0;   // bytes before the HDF5 superblock: the manifest, then zeros
  std::uint64_t file_size = 0;   // bytes of the whole file
  std::uint64_t block_size = 0;  // bytes per hashed block (the last one may be shorter)
  std::string solver;            // informative copies of the checkpoint's root attributes
  std::int64_t step = 0;
  std::vector<std::uint64_t> hashes;  // XXH3-64 of block b = bytes [userblock + b * block_size, ...), seed b

  // The text stored at the start of the file (without the zero padding).
  std::string encode() const;
  // Parses and checks the text at the start of a file (the bytes up to the first NUL); throws
  // std::runtime_error describing what is wrong.
  static FileManifest decode(const std::string& text);
  std::uint64_t block_count() const;
};

// The id a level set's index records for a node file (io/checkpoint_levels.hpp): XXH3-64 of the manifest's
// text, 16 hex digits.
std::string manifest_id(const FileManifest& manifest);

// Checks the bytes of a file against its manifest as they stream past in order (a partner copy as it
// arrives, io/checkpoint_levels_partner.cpp): each block hashed as the manifest's are (XXH3-64, seed = the
// block's index), with no second read of the copy. `manifest` must outlive the check.
class BlockStreamCheck {
 public:
  explicit BlockStreamCheck(const FileManifest& manifest);
  ~BlockStreamCheck();
  BlockStreamCheck(const BlockStreamCheck&) = delete;
  BlockStreamCheck& operator=(const BlockStreamCheck&) = delete;
  // Bytes [at, at + n) of the file, after those before them. Returns "" or the block that does not match,
  // "bytes A..B (block b)"; a manifest without blocks (block_size 0) checks nothing.
  std::string feed(const char* data, std::uint64_t at, std::uint64_t n);

 private:
  struct State;
  const FileManifest& m_manifest;
  std::unique_ptr<State> m_state;
};

// The user block size for a checkpoint of about `expected_bytes`: 4 KiB, or 1 MiB for files of 64 MiB
// and more (then datasets are aligned to 1 MiB, which HDF5 requires the user block to cover).
std::uint64_t manifest_userblock_bytes(std::uint64_t expected_bytes);

// Seals a closed HDF5 file that was created with a user block of `userblock` bytes (collective): hashes
// every block (each rank a share), then rank 0 writes the manifest into the user block. Throws
// std::runtime_error on the failing rank (the caller agrees on the verdict).
void seal_file(const comm::Communicator& comm, const std::string& path, std::uint64_t userblock,
               const std::string& solver, std::int64_t step);

// Verifies every byte of `path` against its manifest (collective; each rank hashes a share of the
// blocks): a regular file, the manifest intact, its zero padding, the size, every block hash. Throws
// InputError naming the file and the problem on every rank; returns the manifest.
FileManifest verify_file(const comm::Communicator& comm, const std::string& path);

// Reads the manifest only, without verifying the blocks (collective; rank 0 reads): for ordering
// checkpoints by step before any is opened. Throws InputError on every rank when it is unreadable.
FileManifest peek_manifest(const comm::Communicator& comm, const std::string& path);

}  // namespace spotrun::io
