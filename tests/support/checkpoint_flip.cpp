// checkpoint_flip SRC DSTDIR COUNT SEED: crafted copies of checkpoint SRC for the hostile-input tests.
// Each copy, DSTDIR/flip-<k>-at-<offset>-x<mask>.h5, is SRC with one byte behind the manifest XORed with
// a non-zero mask, and its manifest then computed anew (io/file_manifest.hpp, seal_file), as a writer bug
// or a hand-made file would present it: the manifest matches, so the damage reaches the HDF5 library.
// Copies with an even k change a byte anywhere behind the manifest; those with an odd k change a byte of
// the HDF5 metadata (a byte outside the data of every dataset: superblock, object headers, attributes,
// heaps, B-trees, free space). Offsets and masks come from SEED (the same SEED gives the same copies).
// Prints one line per copy: its name. Runs on one rank (MPI singleton).
#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "io/file_manifest.hpp"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

// The [offset, offset + size) ranges of the raw data of every dataset of the (intact) file.
herr_t collect_data(hid_t obj, const char* name, const H5O_info_t* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  const hid_t d = H5Dopen2(obj, name, H5P_DEFAULT);
  if (d < 0) return -1;
  const haddr_t offset = H5Dget_offset(d);
  const hsize_t size = H5Dget_storage_size(d);
  if (offset != HADDR_UNDEF && size > 0)
    static_cast<std::vector<std::pair<std::uint64_t, std::uint64_t>>*>(data)->emplace_back(offset, offset + size);
  H5Dclose(d);
  return 0;
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int flip_copies(const std::string& src, const std::string& dir, int count, std::uint64_t seed) {
  const spotrun::comm::Communicator comm(MPI_COMM_WORLD);
  const std::string bytes = read_all(src);
  const auto manifest = spotrun::io::FileManifest::decode(bytes.substr(0, bytes.find('\0')));
  const std::uint64_t begin = manifest.userblock, end = bytes.size();
  if (begin >= end) throw std::runtime_error("'" + src + "' has nothing behind its manifest");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> data;
  const hid_t file = H5Fopen(src.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0 || H5Ovisit(file, H5_INDEX_NAME, H5_ITER_INC, collect_data, &data) < 0)
    throw std::runtime_error("cannot list the datasets of '" + src + "'");
  H5Fclose(file);
  std::vector<std::uint64_t> metadata;  // offsets of the bytes outside every dataset's data
  for (std::uint64_t at = begin; at < end; ++at)
    if (std::none_of(data.begin(), data.end(), [&](const auto& r) { return at >= r.first && at < r.second; }))
      metadata.push_back(at);
  if (metadata.empty()) throw std::runtime_error("'" + src + "' has no metadata bytes");
  std::uint64_t state = seed;
  for (int k = 0; k < count; ++k) {
    const std::uint64_t r = splitmix64(state);
    const std::uint64_t offset = k % 2 == 0 ? begin + r % (end - begin) : metadata[r % metadata.size()];
    const unsigned mask = 1 + static_cast<unsigned>(splitmix64(state) % 255);
    std::string copy = bytes;
    copy[offset] = static_cast<char>(static_cast<unsigned char>(copy[offset]) ^ mask);
    const std::string name = dir + "/flip-" + std::to_string(k) + "-at-" + std::to_string(offset) + "-x" +
                             std::to_string(mask) + ".h5";
    write_all(name, copy);
    spotrun::io::seal_file(comm, name, manifest.userblock, manifest.solver, manifest.step);
    std::printf("%s\n", name.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    if (argc != 5) throw std::runtime_error("usage: checkpoint_flip SRC DSTDIR COUNT SEED");
    rc = flip_copies(argv[1], argv[2], std::stoi(argv[3]), std::stoull(argv[4]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint_flip: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
