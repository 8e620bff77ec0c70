#include "checkpoint_format.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <stdexcept>

// xxHash inlined: the per-row hashes of short rows are dominated by call overhead otherwise.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "comm/agreed_step.hpp"
#include "comm/errors.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint checksums hash the little-endian bytes of each row; add a byte swap for this host");

namespace spotrun::io::impl {

// ---- small helpers ----------------------------------------------------------------------------------

std::string hex64(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, v);
  return text;
}

std::string shape_text(std::uint64_t rows, const std::vector<std::uint64_t>& inner, bool rows_known) {
  std::string s = "(" + (rows_known ? std::to_string(rows) : std::string("*"));
  for (auto d : inner) s += ", " + std::to_string(d);
  return s + (inner.empty() ? ",)" : ")");
}

bool mul_ok(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
  out = a * b;
  return true;
}

// ---- checksums --------------------------------------------------------------------------------------

std::uint64_t name_hash(const std::string& name) { return XXH64(name.data(), name.size(), 0); }

std::uint64_t text_checksum(const std::string& name, const std::string& text) {
  return name_hash(name) + XXH64(text.data(), text.size(), 0);
}

bool RowHasher::parse(const std::string& algorithm, Hash& hash) {
  if (algorithm == k_rowsum_algorithm) {
    hash = Hash::xxh3;
    return true;
  }
  if (algorithm == k_rowsum_algorithm_xxh64) {
    hash = Hash::xxh64;
    return true;
  }
  return false;
}

std::uint64_t RowHasher::rowsum(const void* data, std::uint64_t rows, std::uint64_t row_bytes, std::uint64_t first,
                                Hash hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t sum = 0;
  if (hash == Hash::xxh3)
    for (std::uint64_t i = 0; i < rows; ++i) sum += XXH3_64bits_withSeed(p + i * row_bytes, row_bytes, first + i);
  else
    for (std::uint64_t i = 0; i < rows; ++i) sum += XXH64(p + i * row_bytes, row_bytes, first + i);
  return sum;
}

// ---- collective transfers ---------------------------------------------------------------------------

template <class ErrorT>
void transfer_rows(const comm::Communicator& comm, const std::string& prefix, const std::string& file, hid_t dataset,
                   hid_t mem_type, bool writing, void* data, std::uint64_t first, std::uint64_t count,
                   const std::vector<std::uint64_t>& inner, std::uint64_t row_size, std::uint64_t element_bytes) {
  const std::uint64_t row_bytes = row_size * element_bytes;
  // Datasets without data have no storage in the file: rows of 0 bytes return here, and with 0 global
  // rows every rank has 0 rounds. Both are the same on every rank.
  if (row_bytes == 0) return;
  const std::uint64_t rows_per_round = std::max<std::uint64_t>(1, k_round_bytes / row_bytes);
  std::uint64_t my_rounds = (count + rows_per_round - 1) / rows_per_round;
  std::uint64_t rounds = 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&my_rounds, &rounds, 1, MPI_UINT64_T, MPI_MAX, comm.mpi()));
  H5Handle dxpl = dxpl_collective(file);
  H5Handle file_space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Dget_space, dataset);
  const int rank = static_cast<int>(inner.size()) + 1;
  char dummy = 0;
  for (std::uint64_t r = 0; r < rounds; ++r) {
    comm::agreed_step<ErrorT>(comm, prefix, [&] {
      const std::uint64_t done = r * rows_per_round;
      const std::uint64_t n = done < count ? std::min(rows_per_round, count - done) : 0;
      const std::uint64_t elements = n * row_size;
      H5Handle mem_space;
      void* buffer = &dummy;
      if (elements == 0) {
        hsize_t one = 1;
        mem_space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Screate_simple, 1, &one, nullptr);
        SPOTRUN_H5_CALL(file, H5Sselect_none, mem_space);
        SPOTRUN_H5_CALL(file, H5Sselect_none, file_space);
      } else {
        hsize_t e = elements;
        mem_space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Screate_simple, 1, &e, nullptr);
        std::vector<hsize_t> start(rank, 0), cnt(rank);
        start[0] = first + done;
        cnt[0] = n;
        for (int d = 1; d < rank; ++d) cnt[d] = inner[d - 1];
        SPOTRUN_H5_CALL(file, H5Sselect_hyperslab, file_space, H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr);
        buffer = static_cast<unsigned char*>(data) + done * row_bytes;
      }
      if (writing)
        SPOTRUN_H5_CALL(file, H5Dwrite, dataset, mem_type, mem_space, file_space, dxpl, buffer);
      else
        SPOTRUN_H5_CALL(file, H5Dread, dataset, mem_type, mem_space, file_space, dxpl, buffer);
    });
  }
}

template void transfer_rows<std::runtime_error>(const comm::Communicator&, const std::string&, const std::string&, hid_t,
                                                hid_t, bool, void*, std::uint64_t, std::uint64_t,
                                                const std::vector<std::uint64_t>&, std::uint64_t, std::uint64_t);
template void transfer_rows<InputError>(const comm::Communicator&, const std::string&, const std::string&, hid_t, hid_t,
                                        bool, void*, std::uint64_t, std::uint64_t, const std::vector<std::uint64_t>&,
                                        std::uint64_t, std::uint64_t);

}  // namespace spotrun::io::impl
