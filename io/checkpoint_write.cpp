// Writing checkpoints (write_checkpoint): local and collective checks of the state, the HDF5 file with
// its checksums, read-back of every byte written, the manifest, and the atomic commit. The collective
// safety rules and the format shared with the reader: io/impl/checkpoint_format.hpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "checkpoint.hpp"
#include "comm/agreed_step.hpp"
#include "comm/errors.hpp"
#include "comm/test_hooks.hpp"
#include "file_manifest.hpp"
#include "impl/checkpoint_format.hpp"
#include "spotrun/version.hpp"

namespace spotrun::io {

using namespace impl;
using comm::agreed_step;

namespace {

// Scratch bytes per rank for reading a new checkpoint back before it is committed.
constexpr std::uint64_t k_verify_bytes = std::uint64_t(4) << 20;

// ---- small helpers ----------------------------------------------------------------------------------

std::string errno_text(int err) { return std::strerror(err); }

std::uint64_t bits_of(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool is_name_char(char c, const char* extra) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || std::strchr(extra, c);
}

// "/md/x": absolute, components of [A-Za-z0-9_.-], not "." or "..", not under /meta or /state.
std::string dataset_name_problem(const std::string& name) {
  if (name.size() < 2 || name[0] != '/') return "must start with '/' and name a dataset";
  std::size_t start = 1;
  bool first = true;
  while (start <= name.size()) {
    auto end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return "has an empty, '.' or '..' component";
    for (char c : part)
      if (!is_name_char(c, "_.-")) return "may only use the characters A-Z a-z 0-9 _ . - and /";
    if (first && (part == "meta" || part == "state")) return "lies under /" + part + ", which is reserved";
    first = false;
    start = end + 1;
  }
  return {};
}

// Names of scalars of /state: [A-Za-z0-9_.] and '/' (e.g. "box/lo_x"); stored as attribute names.
std::string scalar_name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  for (char c : name)
    if (!is_name_char(c, "_./")) return "may only use the characters A-Z a-z 0-9 _ . /";
  return {};
}

// A file access property list for writing a checkpoint with a user block of `userblock` bytes, reserved
// for the whole-file manifest. HDF5 wants the user block at least as large as the alignment, so only
// files with a 1 MiB user block are aligned.
H5Handle write_fapl(const comm::Communicator& comm, const std::string& file, std::uint64_t userblock) {
  H5Handle fapl = mpio_fapl(comm, file);
  // Metadata is written collectively at flush; files stay readable by HDF5 1.8 and later.
  SPOTRUN_H5_CALL(file, H5Pset_coll_metadata_write, fapl, 1);
  SPOTRUN_H5_CALL(file, H5Pset_libver_bounds, fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
  // Large datasets start on 1 MiB boundaries (file system stripes).
  constexpr hsize_t k_align = hsize_t(1) << 20;
  if (userblock >= k_align) SPOTRUN_H5_CALL(file, H5Pset_alignment, fapl, k_align, k_align);
  return fapl;
}

// Every group of a checkpoint keeps its links and attributes in its object header (compact storage),
// whatever their number. HDF5's default turns a group of more than 8 links or attributes into "dense"
// storage (a fractal heap and a B-tree); HDF5 1.10 frees garbage when it lists a dense group whose heap
// was altered (a crafted file, tests/cli/hostile_test.sh crafted_checkpoints), whereas an object header
// of these files (libver V18) carries a checksum that HDF5 checks before it reads a link. `plist` is a
// group or file creation property list (the file's sets the root group).
void keep_groups_compact(hid_t plist, const std::string& file) {
  constexpr unsigned k_max_compact = 65535;  // HDF5's largest value for both settings
  SPOTRUN_H5_CALL(file, H5Pset_link_phase_change, plist, k_max_compact, k_max_compact);
  SPOTRUN_H5_CALL(file, H5Pset_attr_phase_change, plist, k_max_compact, k_max_compact);
}

// Creates the groups that hold the arrays (parents first), compact like the others.
void create_array_groups(hid_t file, const SolverState& state, hid_t gcpl, const std::string& tmp) {
  std::set<std::string> made;
  for (const auto& a : state.arrays)
    for (auto slash = a.name.find('/', 1); slash != std::string::npos; slash = a.name.find('/', slash + 1)) {
      const std::string group = a.name.substr(0, slash);
      if (made.insert(group).second)
        SPOTRUN_H5_OPEN(tmp, H5Gclose, H5Gcreate2, file, group.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT)
            .close("H5Gclose", tmp);
    }
}

// ---- writing ------------------------------------------------------------------------------------------

// Local checks of one rank's state; throws std::runtime_error describing the first problem.
void check_state_locally(const CheckpointMeta& meta, const SolverState& state) {
  if (meta.solver.empty()) throw std::runtime_error("CheckpointMeta::solver is empty");
  if (!state.solver.empty() && state.solver != meta.solver)
    throw std::runtime_error("state of solver '" + state.solver + "' but metadata of solver '" + meta.solver + "'");
  std::set<std::string> names;
  for (const auto& a : state.arrays) {
    const std::string problem = dataset_name_problem(a.name);
    if (!problem.empty()) throw std::runtime_error("array name '" + a.name + "' " + problem);
    if (!names.insert(a.name).second) throw std::runtime_error("array '" + a.name + "' appears twice");
    std::uint64_t bytes = 0, values = 0;
    const std::uint64_t row_size = a.row_size();
    if (!mul_ok(row_size, 8, bytes) || !mul_ok(a.global_rows, bytes, bytes) || a.first_row > a.global_rows ||
        a.rows > a.global_rows - a.first_row)
      throw std::runtime_error("array '" + a.name + "': block [" + std::to_string(a.first_row) + ", +" +
                               std::to_string(a.rows) + ") does not fit its shape " + shape_text(a.global_rows, a.inner));
    mul_ok(a.rows, row_size, values);
    const std::size_t have = a.is_integer ? a.i64.size() : a.f64.size();
    if (have != values)
      throw std::runtime_error("array '" + a.name + "' holds " + std::to_string(have) + (a.is_integer ? " int64" : " float64") +
                               " values, its block of " + std::to_string(a.rows) + " rows needs " + std::to_string(values));
  }
  for (const auto& n : names)
    for (const auto& m : names)
      if (m.size() > n.size() && m.compare(0, n.size(), n) == 0 && m[n.size()] == '/')
        throw std::runtime_error("array '" + n + "' is also a group of array '" + m + "'");
  std::set<std::string> scalars;
  auto check_scalar = [&](const std::string& n) {
    const std::string problem = scalar_name_problem(n);
    if (!problem.empty()) throw std::runtime_error("scalar name '" + n + "' " + problem);
    if (!scalars.insert(n).second) throw std::runtime_error("scalar '" + n + "' is both real, integer or string");
  };
  for (const auto& kv : state.reals) check_scalar(kv.first);
  for (const auto& kv : state.integers) check_scalar(kv.first);
  for (const auto& kv : state.strings) check_scalar(kv.first);
  // Strings are stored as fixed-length, null-terminated strings, which readers take up to
  // k_max_string_attribute bytes long.
  auto check_string = [](const std::string& what, const std::string& value) {
    if (value.size() >= k_max_string_attribute)
      throw std::runtime_error(what + " holds " + std::to_string(value.size()) + " bytes, a checkpoint stores at most " +
                               std::to_string(k_max_string_attribute - 1));
    if (value.find('\0') != std::string::npos) throw std::runtime_error(what + " contains a NUL byte");
  };
  for (const auto& kv : state.strings) check_string("string scalar '" + kv.first + "'", kv.second);
  check_string("CheckpointMeta::solver", meta.solver);
  check_string("CheckpointMeta::units", meta.units);
  check_string("CheckpointMeta::version", meta.version);
  check_string("CheckpointMeta::git_hash", meta.git_hash);
}

// Hash of everything that must be the same on every rank: metadata, array layout and scalars.
std::uint64_t shared_fingerprint(const CheckpointMeta& meta, const SolverState& state) {
  std::ostringstream s;
  s << meta.solver << '\0' << meta.step << '\0' << hex64(bits_of(meta.time)) << '\0'
    << meta.deck << '\0' << meta.physics << '\0' << meta.level << '\0' << meta.units << '\0' << meta.version << '\0' << meta.git_hash << '\0'
    << state.solver << '\0';
  for (const auto& a : state.arrays) {
    s << a.name << '\0' << a.is_integer << ' ' << a.global_rows;
    for (auto d : a.inner) s << ' ' << d;
    s << '\0';
  }
  for (const auto& kv : state.reals) s << kv.first << '\0' << hex64(bits_of(kv.second)) << '\0';
  for (const auto& kv : state.integers) s << kv.first << '\0' << kv.second << '\0';
  for (const auto& kv : state.strings) s << kv.first << '\0' << kv.second << '\0';
  const std::string text = s.str();
  return XXH64(text.data(), text.size(), 0);
}

// Checks that the blocks of all ranks tile each array (collective, after the local checks passed).
std::string tiling_problem(const comm::Communicator& comm, const SolverState& state) {
  const std::size_t na = state.arrays.size();
  std::vector<std::uint64_t> mine(2 * na), all(2 * na * comm.size());
  for (std::size_t i = 0; i < na; ++i) {
    mine[2 * i] = state.arrays[i].first_row;
    mine[2 * i + 1] = state.arrays[i].rows;
  }
  if (na > 0)
    SPOTRUN_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(2 * na), MPI_UINT64_T, all.data(), static_cast<int>(2 * na),
                                    MPI_UINT64_T, comm.mpi()));
  for (std::size_t i = 0; i < na; ++i) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks;
    for (int r = 0; r < comm.size(); ++r) {
      const auto first = all[2 * na * r + 2 * i], rows = all[2 * na * r + 2 * i + 1];
      if (rows > 0) blocks.emplace_back(first, rows);
    }
    std::sort(blocks.begin(), blocks.end());
    std::uint64_t next = 0;
    for (const auto& b : blocks) {
      if (b.first != next)
        return "array '" + state.arrays[i].name + "': the ranks' blocks do not tile its " +
               std::to_string(state.arrays[i].global_rows) + " rows (" + (b.first < next ? "overlap" : "gap") + " at row " +
               std::to_string(std::min(b.first, next)) + ")";
      next = b.first + b.second;
    }
    if (next != state.arrays[i].global_rows)
      return "array '" + state.arrays[i].name + "': the ranks' blocks cover " + std::to_string(next) + " of its " +
             std::to_string(state.arrays[i].global_rows) + " rows";
  }
  return {};
}

// A scalar fixed-length string dataset (created with the metadata, written later by write_text).
struct TextDataset {
  H5Handle type;
  H5Handle dset;
  const std::string* text = nullptr;
};

TextDataset create_text_dataset(hid_t group, const std::string& name, const std::string& text, const std::string& file) {
  TextDataset t;
  t.text = &text;
  t.type = SPOTRUN_H5_OPEN(file, H5Tclose, H5Tcopy, H5T_C_S1);
  SPOTRUN_H5_CALL(file, H5Tset_size, t.type, text.size() + 1);
  SPOTRUN_H5_CALL(file, H5Tset_strpad, t.type, H5T_STR_NULLTERM);
  SPOTRUN_H5_CALL(file, H5Tset_cset, t.type, H5T_CSET_UTF8);
  H5Handle space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Screate, H5S_SCALAR);
  H5Handle dcpl = SPOTRUN_H5_OPEN(file, H5Pclose, H5Pcreate, H5P_DATASET_CREATE);
  SPOTRUN_H5_CALL(file, H5Pset_fill_time, dcpl, H5D_FILL_TIME_NEVER);
  SPOTRUN_H5_CALL(file, H5Pset_alloc_time, dcpl, H5D_ALLOC_TIME_EARLY);
  t.dset = SPOTRUN_H5_OPEN(file, H5Dclose, H5Dcreate2, group, name.c_str(), t.type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  write_u64_attribute(t.dset, "checksum", text_checksum("/meta/" + name, text), file);
  write_fixed_string_attribute(t.dset, "checksum_algorithm", k_text_algorithm, file);
  return t;
}

// Rank 0 writes the text, the others take part in the collective transfer with empty selections.
void write_text(const comm::Communicator& comm, TextDataset& t, const std::string& file, const std::string& prefix) {
  agreed_step<std::runtime_error>(comm, prefix, [&] {
    H5Handle mem = SPOTRUN_H5_OPEN(file, H5Sclose, H5Screate, H5S_SCALAR);
    H5Handle file_space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Dget_space, t.dset);
    if (!comm.is_root()) {
      SPOTRUN_H5_CALL(file, H5Sselect_none, mem);
      SPOTRUN_H5_CALL(file, H5Sselect_none, file_space);
    }
    H5Handle dxpl = dxpl_collective(file);
    SPOTRUN_H5_CALL(file, H5Dwrite, t.dset, t.type, mem, file_space, dxpl, t.text->c_str());
  });
}

// Bytes a rank wrote at `offset` of the file, to be read back before the file is committed.
struct ReadBack {
  std::string name;
  std::uint64_t offset;
  const void* data;
  std::uint64_t bytes;
};

std::uint64_t dataset_offset(hid_t dset, const std::string& file) {
  const haddr_t offset = H5Dget_offset(dset);
  if (offset == HADDR_UNDEF) throw std::runtime_error("H5Dget_offset on '" + file + "' failed: " + hdf5_error_text());
  return offset;
}

// What the read-back compares of a rank's region of a dataset: all of it up to k_check_whole bytes;
// of a larger one its first and last k_check_ends bytes and one k_check_page page at the start of every
// k_check_stride bytes. The read-back exists for writes that an MPI-IO layer reported as done but that
// never reached the file (OMPIO on a full file system): such a write loses whole transfers (collective
// buffer cycles of megabytes, or everything after the point where the file system filled up, the tail
// included), which these samples find; a second full pass through the page cache would find nothing
// more and costs as much as the write's own memory traffic. The whole-file manifest then hashes every
// byte of the file as it is.
constexpr std::uint64_t k_check_whole = std::uint64_t(1) << 20;
constexpr std::uint64_t k_check_ends = std::uint64_t(64) << 10;
constexpr std::uint64_t k_check_page = std::uint64_t(4) << 10;
constexpr std::uint64_t k_check_stride = std::uint64_t(1) << 20;

// The [begin, end) ranges of an item of `bytes` bytes that the read-back compares (sorted, disjoint).
std::vector<std::pair<std::uint64_t, std::uint64_t>> check_ranges(std::uint64_t bytes) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> r;
  if (bytes <= k_check_whole) {
    r.emplace_back(0, bytes);
    return r;
  }
  r.emplace_back(0, k_check_ends);
  for (std::uint64_t at = k_check_stride; at + k_check_page <= bytes - k_check_ends; at += k_check_stride)
    r.emplace_back(at, at + k_check_page);
  r.emplace_back(bytes - k_check_ends, bytes);
  return r;
}

// Reads the sampled ranges of every item back with POSIX reads and compares them bitwise; throws naming
// the first that differs.
void read_back(const std::string& file, const std::vector<ReadBack>& items) {
  if (items.empty()) return;
  const int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open '" + file + "' to read it back: " + errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  std::vector<unsigned char> scratch(std::min(k_check_whole, k_verify_bytes));
  for (const auto& it : items) {
    for (const auto& range : check_ranges(it.bytes)) {
      for (std::uint64_t done = range.first; done < range.second;) {
        const std::uint64_t want = std::min<std::uint64_t>(scratch.size(), range.second - done);
        std::uint64_t got = 0;
        while (got < want) {
          const ssize_t n = ::pread(fd, scratch.data() + got, want - got, static_cast<off_t>(it.offset + done + got));
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) throw std::runtime_error("reading '" + file + "' back failed: " + errno_text(errno));
          if (n == 0) break;
          got += static_cast<std::uint64_t>(n);
        }
        if (got < want || std::memcmp(scratch.data(), static_cast<const unsigned char*>(it.data) + done, want) != 0)
          throw std::runtime_error("'" + it.name +
                                   "': the data read back differs from the data written (lost writes: is the file system full?)");
        done += want;
      }
    }
  }
}

// fsync of a directory; fdatasync of a file (its size and blocks were synced with its data by
// MPI_File_sync; what is left is the manifest written into its user block).
void fsync_path(const std::string& p, bool directory) {
  const int fd = ::open(p.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw std::runtime_error("cannot open '" + p + "' to sync it: " + errno_text(errno));
  const int rc = directory ? ::fsync(fd) : ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync of '" + p + "' failed: " + errno_text(err));
}

// Creates and fills `tmp` (collective). Every failure is agreed, so every rank throws together.
//
// Order matters when the file system fills up. HDF5 1.10 cannot close a file whose metadata it failed
// to flush (the identifier stays behind and crashes the library at MPI_Finalize), and a metadata flush
// that fails on rank 0 only hangs in HDF5's own MPI_File_sync. So every object and attribute is created
// and flushed first (the file then has its final size, sparse; the free-space check of
// write_checkpoint makes this small flush fail only in a race with another writer), and only then is
// the bulk data written: a failed data write leaves no dirty metadata and the file closes cleanly.
void write_file(const comm::Communicator& comm, const std::string& tmp, const CheckpointMeta& meta,
                const SolverState& state, const std::vector<std::uint64_t>& checksums, std::uint64_t userblock,
                const std::string& prefix) {
  H5Handle file;
  agreed_step<std::runtime_error>(comm, prefix, [&] {
    H5Handle fapl = write_fapl(comm, tmp, userblock);
    H5Handle fcpl = SPOTRUN_H5_OPEN(tmp, H5Pclose, H5Pcreate, H5P_FILE_CREATE);
    SPOTRUN_H5_CALL(tmp, H5Pset_userblock, fcpl, userblock);
    keep_groups_compact(fcpl, tmp);
    file = SPOTRUN_H5_OPEN(tmp, H5Fclose, H5Fcreate, tmp.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  });
  // Metadata: the same calls with the same values on every rank.
  TextDataset deck, physics, level;
  std::vector<H5Handle> datasets(state.arrays.size());
  agreed_step<std::runtime_error>(comm, prefix, [&] {
    write_fixed_string_attribute(file, "format", k_format, tmp);
    write_i64_attribute(file, "format_version", k_format_version, tmp);
    write_fixed_string_attribute(file, "solver", meta.solver, tmp);
    write_i64_attribute(file, "step", meta.step, tmp);
    write_f64_attribute(file, "time", meta.time, tmp);
    write_fixed_string_attribute(file, "units", meta.units, tmp);
    write_fixed_string_attribute(file, "spotrun_version", meta.version.empty() ? std::string(k_version) : meta.version, tmp);
    write_fixed_string_attribute(file, "git_hash", meta.git_hash.empty() ? std::string(k_git_hash) : meta.git_hash, tmp);
    write_i64_attribute(file, "nranks", comm.size(), tmp);
    H5Handle gcpl = SPOTRUN_H5_OPEN(tmp, H5Pclose, H5Pcreate, H5P_GROUP_CREATE);
    keep_groups_compact(gcpl, tmp);
    H5Handle st = SPOTRUN_H5_OPEN(tmp, H5Gclose, H5Gcreate2, file, "/state", H5P_DEFAULT, gcpl, H5P_DEFAULT);
    for (const auto& kv : state.reals) write_f64_attribute(st, kv.first, kv.second, tmp);
    for (const auto& kv : state.integers) write_i64_attribute(st, kv.first, kv.second, tmp);
    for (const auto& kv : state.strings) write_fixed_string_attribute(st, kv.first, kv.second, tmp);
    st.close("H5Gclose", tmp);
    H5Handle mg = SPOTRUN_H5_OPEN(tmp, H5Gclose, H5Gcreate2, file, "/meta", H5P_DEFAULT, gcpl, H5P_DEFAULT);
    deck = create_text_dataset(mg, "deck", meta.deck, tmp);
    physics = create_text_dataset(mg, "physics", meta.physics, tmp);
    if (!meta.level.empty()) level = create_text_dataset(mg, "level", meta.level, tmp);
    mg.close("H5Gclose", tmp);
    // Every array dataset, allocated now (contiguous, no fill), with its checksum.
    create_array_groups(file, state, gcpl, tmp);
    H5Handle dcpl = SPOTRUN_H5_OPEN(tmp, H5Pclose, H5Pcreate, H5P_DATASET_CREATE);
    SPOTRUN_H5_CALL(tmp, H5Pset_layout, dcpl, H5D_CONTIGUOUS);
    SPOTRUN_H5_CALL(tmp, H5Pset_fill_time, dcpl, H5D_FILL_TIME_NEVER);
    SPOTRUN_H5_CALL(tmp, H5Pset_alloc_time, dcpl, H5D_ALLOC_TIME_EARLY);
    for (std::size_t i = 0; i < state.arrays.size(); ++i) {
      const StateArray& a = state.arrays[i];
      std::vector<hsize_t> dims{a.global_rows};
      for (auto d : a.inner) dims.push_back(d);
      H5Handle space = SPOTRUN_H5_OPEN(tmp, H5Sclose, H5Screate_simple, static_cast<int>(dims.size()), dims.data(), nullptr);
      datasets[i] = SPOTRUN_H5_OPEN(tmp, H5Dclose, H5Dcreate2, file, a.name.c_str(),
                                    a.is_integer ? H5T_STD_I64LE : H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      write_u64_attribute(datasets[i], "checksum", checksums[i], tmp);
      write_fixed_string_attribute(datasets[i], "checksum_algorithm", k_rowsum_algorithm, tmp);
    }
  });
  agreed_step<std::runtime_error>(comm, prefix, [&] { SPOTRUN_H5_CALL(tmp, H5Fflush, file, H5F_SCOPE_GLOBAL); });
  // Test hook: the temporary file half written (comm/test_hooks.hpp; tests/cli/launch_test.sh: a node
  // lost during a checkpoint write).
  if (const auto& hook = comm::test_hooks().checkpoint_half_written) hook(meta.step, tmp);
  // Bulk data.
  write_text(comm, deck, tmp, prefix);
  write_text(comm, physics, tmp, prefix);
  if (!meta.level.empty()) write_text(comm, level, tmp, prefix);
  for (std::size_t i = 0; i < state.arrays.size(); ++i) {
    const StateArray& a = state.arrays[i];
    const void* data = a.is_integer ? static_cast<const void*>(a.i64.data()) : static_cast<const void*>(a.f64.data());
    transfer_rows<std::runtime_error>(comm, prefix, tmp, datasets[i], a.is_integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE,
                                      true, const_cast<void*>(data), a.first_row, a.rows, a.inner, a.row_size(), 8);
  }
  // The data on disk: every rank fsyncs the file (its node's share of the writes). Not H5Fflush: its
  // MPI_File_sync returns at once on a rank where Open MPI's OMPIO kept a failed write pending (a full
  // file system at 4 ranks), while the other ranks wait for it in the barrier inside MPI_File_sync
  // forever. The metadata went to disk with the flush above; nothing dirtied it since.
  agreed_step<std::runtime_error>(comm, prefix, [&] { fsync_path(tmp, false); });
  // Read back what was written before trusting it: some MPI-IO layers report success for collective
  // writes that failed (Open MPI 4.1's OMPIO on a full file system), which would commit a file with
  // holes. Each rank reads samples of its own rows with pread (after the MPI_File_sync above) and
  // compares them (check_ranges).
  std::vector<ReadBack> items;
  agreed_step<std::runtime_error>(comm, prefix, [&] {
    if (comm.is_root())
      for (TextDataset* t : {&deck, &physics, &level})
        if (t->text)
          items.push_back({"/meta/" + std::string(t == &deck ? "deck" : t == &physics ? "physics" : "level"),
                           dataset_offset(t->dset, tmp), t->text->c_str(), t->text->size() + 1});
    for (std::size_t i = 0; i < state.arrays.size(); ++i) {
      const StateArray& a = state.arrays[i];
      const std::uint64_t row_bytes = a.row_size() * 8;
      if (a.rows * row_bytes == 0) continue;
      const void* data = a.is_integer ? static_cast<const void*>(a.i64.data()) : static_cast<const void*>(a.f64.data());
      items.push_back({a.name, dataset_offset(datasets[i], tmp) + a.first_row * row_bytes, data, a.rows * row_bytes});
    }
    read_back(tmp, items);
  });
  agreed_step<std::runtime_error>(comm, prefix, [&] {
    deck.dset.close("H5Dclose", tmp);
    physics.dset.close("H5Dclose", tmp);
    if (level.text) level.dset.close("H5Dclose", tmp);
    for (auto& d : datasets) d.close("H5Dclose", tmp);
  });
  agreed_step<std::runtime_error>(comm, prefix, [&] { file.close("H5Fclose", tmp); });
}

// Bytes the checkpoint will take on disk, roughly: data, texts, room for the metadata, and the user block
// of the manifest.
std::uint64_t expected_file_bytes(const CheckpointMeta& meta, const SolverState& state) {
  std::uint64_t bytes = (std::uint64_t(64) << 10) + meta.deck.size() + meta.physics.size() + meta.level.size();
  for (const auto& a : state.arrays) bytes += a.global_rows * a.row_size() * 8 + 4096;
  return bytes + manifest_userblock_bytes(bytes);
}

// Free bytes for unprivileged writers on the file system of `dir`, or -1 when it does not say.
std::int64_t free_bytes(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0 || fs.f_blocks == 0) return -1;
  return static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
}

}  // namespace

// ---- public interface -------------------------------------------------------------------------------------

void write_checkpoint(const comm::Communicator& comm, const std::string& path, const CheckpointMeta& meta,
                      const SolverState& state) {
  QuietHdf5Errors quiet;
  const std::string tmp = path + ".tmp";
  const std::string dir = directory_of(path);
  const std::string prefix = "checkpoint write to '" + path + "' failed: ";
  bool tmp_may_exist = false;
  bool writing = false;
  try {
    agreed_step<std::runtime_error>(comm, "", [&] { check_state_locally(meta, state); });
    const std::uint64_t mine = shared_fingerprint(meta, state);
    std::uint64_t root = mine;
    SPOTRUN_MPI_CHECK(MPI_Bcast(&root, 1, MPI_UINT64_T, 0, comm.mpi()));
    agreed_step<std::runtime_error>(comm, "", [&] {
      if (mine != root)
        throw std::runtime_error("rank " + std::to_string(comm.rank()) +
                                 " has other metadata, array layout or scalars than rank 0 (they must be the same on every rank)");
    });
    const std::string tiling = tiling_problem(comm, state);
    if (!tiling.empty()) throw std::runtime_error(tiling);

    // Checksums of every array, one allreduce.
    std::vector<std::uint64_t> local(state.arrays.size()), global(state.arrays.size());
    for (std::size_t i = 0; i < state.arrays.size(); ++i) {
      const auto& a = state.arrays[i];
      const void* data = a.is_integer ? static_cast<const void*>(a.i64.data()) : static_cast<const void*>(a.f64.data());
      local[i] = RowHasher::rowsum(data, a.rows, a.row_size() * 8, a.first_row);
    }
    if (!local.empty())
      SPOTRUN_MPI_CHECK(MPI_Allreduce(local.data(), global.data(), static_cast<int>(local.size()), MPI_UINT64_T, MPI_SUM,
                                      comm.mpi()));
    for (std::size_t i = 0; i < state.arrays.size(); ++i) global[i] += name_hash(state.arrays[i].name);

    // Rank 0 checks that the target can be written before any rank touches HDF5.
    tmp_may_exist = true;
    agreed_step<std::runtime_error>(comm, "", [&] {
      if (!comm.is_root()) return;
      struct stat st {};
      if (::stat(dir.c_str(), &st) != 0) throw std::runtime_error("directory '" + dir + "': " + errno_text(errno));
      if (!S_ISDIR(st.st_mode)) throw std::runtime_error("'" + dir + "' is not a directory");
      if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw std::runtime_error("'" + path + "' is a directory");
      const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) throw std::runtime_error("cannot create '" + tmp + "': " + errno_text(errno));
      ::close(fd);
      const std::uint64_t need = expected_file_bytes(meta, state);
      // Test hook: another figure, or none (comm/test_hooks.hpp).
      const auto& hook = comm::test_hooks().checkpoint_free_bytes;
      const std::int64_t have = hook ? static_cast<std::int64_t>(hook(dir)) : free_bytes(dir);
      if (have >= 0 && static_cast<std::uint64_t>(have) < need)
        throw std::runtime_error("not enough space on the file system of '" + dir + "': the checkpoint needs about " +
                                 std::to_string(need) + " bytes, " + std::to_string(have) + " are free");
    });
    writing = true;
    const std::uint64_t userblock = manifest_userblock_bytes(expected_file_bytes(meta, state));
    write_file(comm, tmp, meta, state, global, userblock, "");
    // Every byte of the closed file hashed into the manifest in its user block.
    seal_file(comm, tmp, userblock, meta.solver, meta.step);
    writing = false;

    // Commit: the data is on disk before the name points at it, and the name before we return. (The
    // directory needs no sync before the rename: until the sync after it, a crash leaves the old name.)
    agreed_step<std::runtime_error>(comm, "", [&] {
      if (!comm.is_root()) return;
      fsync_path(tmp, false);
      if (::rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "': " + errno_text(errno));
      fsync_path(dir, true);
    });
  } catch (const std::exception& e) {
    // Every rank is here, at the same step (each failure above was agreed). Remove the partial file;
    // `path` is untouched. MPI-IO seldom says why a write failed: add what the file system says.
    std::string hint;
    if (comm.is_root()) {
      const std::int64_t have = writing ? free_bytes(dir) : -1;
      if (have >= 0) hint = " (the file system of '" + dir + "' has " + std::to_string(have) + " bytes free)";
      if (tmp_may_exist) ::unlink(tmp.c_str());
    }
    hint = comm.broadcast(hint);
    throw CollectiveError(prefix + e.what() + hint, k_exit_failure);
  }
}

}  // namespace spotrun::io
