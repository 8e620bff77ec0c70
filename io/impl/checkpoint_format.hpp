#pragma once
// What the checkpoint writer (io/checkpoint_write.cpp) and reader (io/checkpoint_read.cpp) share: the
// format's names and version, the checksums, and collective row transfers. Layout, checksums and commit
// protocol in docs/checkpoint-format.md.
//
// Collective safety. Every step that may fail on some ranks only (a local check, an allocation, one
// HDF5 call with I/O) runs inside agreed_step(): its verdict is agreed by all ranks before the next
// collective, so either every rank goes on or every rank throws the same error. Metadata reads are
// independent (no collective metadata reads): every rank reads the same bytes with the same code, so a
// damaged file fails on every rank at the same call. The writer moves raw data with collective
// transfers, in rounds of at most k_round_bytes per rank; a rank with no rows (or done early) joins every
// round with an empty selection. The reader reads each rank's rows by itself (io/checkpoint_read.cpp) and
// agrees on the outcome once for all datasets.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/impl/hdf5.hpp"

namespace spotrun::io::impl {

inline constexpr const char* k_format = "spotrun-checkpoint";
// Version 3 stores every string as a fixed-length string (no variable-length data, so no global heap
// that HDF5 would follow unchecked); version 2 files, with variable-length string attributes, still read.
inline constexpr std::int64_t k_format_version = 3;
inline constexpr std::int64_t k_format_version_vlen_strings = 2;
// Checksums include the dataset's name, so that datasets swapped in the file (with their checksums)
// fail: XXH64(name) + sum of the row hashes (arrays) or + XXH64(text) (texts), modulo 2^64.
// Rows are hashed with XXH3 (64-bit) since spotrun 0.3; files with the XXH64 row sum of earlier
// versions stay readable.
inline constexpr const char* k_rowsum_algorithm = "xxh3-named-rowsum";
inline constexpr const char* k_rowsum_algorithm_xxh64 = "xxh64-named-rowsum";
inline constexpr const char* k_text_algorithm = "xxh64-named";
// Bytes of one dataset one rank moves in one collective transfer (keeps every MPI count far below 2^31
// and bounds the memory verify_checkpoint uses).
inline constexpr std::uint64_t k_round_bytes = std::uint64_t(256) << 20;

// ---- small helpers ----------------------------------------------------------------------------------

std::string hex64(std::uint64_t v);
// "(rows, inner...)", or "(*, inner...)" when the row count is not known.
std::string shape_text(std::uint64_t rows, const std::vector<std::uint64_t>& inner, bool rows_known = true);
// a * b, or false when it overflows 64 bits.
bool mul_ok(std::uint64_t a, std::uint64_t b, std::uint64_t& out);

// ---- checksums --------------------------------------------------------------------------------------

// XXH64 of a dataset's name: the part of its checksum that ties the data to the name.
std::uint64_t name_hash(const std::string& name);
std::uint64_t text_checksum(const std::string& name, const std::string& text);

struct RowHasher {
  enum class Hash { xxh3, xxh64 };
  // The hash of a checksum_algorithm attribute's value; false when it is not one of the two.
  static bool parse(const std::string& algorithm, Hash& hash);
  // Sum modulo 2^64 of H(row bytes, seed = global row index) over `rows` rows starting at `first`, H
  // XXH3_64bits_withSeed (xxh3) or XXH64 (xxh64).
  static std::uint64_t rowsum(const void* data, std::uint64_t rows, std::uint64_t row_bytes, std::uint64_t first,
                              Hash hash = Hash::xxh3);
};

// ---- collective transfers ---------------------------------------------------------------------------

// Collective read or write of rows [first, first + count) of `dataset` in rounds of at most
// k_round_bytes. `rounds` is the same on every rank; ranks with fewer rows select nothing in the rest.
// Each transfer's verdict is agreed before the next one (ErrorT(prefix + message) on every rank);
// instantiated for std::runtime_error (writing) and InputError (reading).
template <class ErrorT>
void transfer_rows(const comm::Communicator& comm, const std::string& prefix, const std::string& file, hid_t dataset,
                   hid_t mem_type, bool writing, void* data, std::uint64_t first, std::uint64_t count,
                   const std::vector<std::uint64_t>& inner, std::uint64_t row_size, std::uint64_t element_bytes);

}  // namespace spotrun::io::impl
