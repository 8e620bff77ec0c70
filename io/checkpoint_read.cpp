// Reading checkpoints (CheckpointReader): every byte verified against the manifest before HDF5 opens
// the file, then the metadata, the texts, the scalars and each dataset checked against what the solver
// expects, with their checksums. The collective safety rules and the format shared with the writer:
// io/impl/checkpoint_format.hpp. Unlike the writer, the reader needs no MPI-IO: every rank opens the file
// with POSIX reads, HDF5 parses its metadata, and the rows of contiguous native datasets come straight
// from the file (one pread per chunk, the row checksums taken while the chunk is in the cache).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include "checkpoint.hpp"
#include "comm/agreed_step.hpp"
#include "comm/errors.hpp"
#include "file_manifest.hpp"
#include "impl/checkpoint_format.hpp"
#include "input_file.hpp"

namespace spotrun::io {

using namespace impl;
using comm::agreed_failure;
using comm::agreed_step;

namespace {

// Depth and object count bounds for walking the groups of a (possibly crafted) file.
constexpr int k_max_group_depth = 16;
constexpr std::size_t k_max_objects = 100000;

// Bytes of rows one rank reads and checksums at a time: small enough to stay in the cache between the
// read, the row checksums and the caller's next use, large enough that a read call costs nothing.
constexpr std::uint64_t k_read_chunk = std::uint64_t(512) << 10;

// A file descriptor closed on destruction.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  ~FileDescriptor() { reset(); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  FileDescriptor(FileDescriptor&& o) noexcept : m_fd(std::exchange(o.m_fd, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& o) noexcept {
    if (this != &o) {
      reset();
      m_fd = std::exchange(o.m_fd, -1);
    }
    return *this;
  }
  void reset(int fd = -1) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = fd;
  }
  int get() const { return m_fd; }

 private:
  int m_fd = -1;
};

struct OpenedFile {
  H5Handle file;
  std::uint64_t size = 0;  // bytes of the file
  FileManifest manifest;
  FileDescriptor fd;       // the same file, for reading rows directly
};

// Opens `path` for reading on every rank, or throws InputError on every rank. Every byte is verified
// against the whole-file manifest before HDF5 is handed the file.
OpenedFile open_for_read(const comm::Communicator& comm, const std::string& path) {
  const std::string prefix = "checkpoint '" + path + "': ";
  OpenedFile f;
  f.manifest = verify_file(comm, path);
  f.size = f.manifest.file_size;
  agreed_step<InputError>(comm, prefix, [&] {
    f.fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (f.fd.get() < 0) throw std::runtime_error("cannot open it: " + std::string(std::strerror(errno)));
    struct stat st {};
    if (::fstat(f.fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != f.size)
      throw std::runtime_error("the file changed after it was verified");
    H5Handle fapl = posix_read_fapl(path);
    try {
      f.file = SPOTRUN_H5_OPEN(path, H5Fclose, H5Fopen, path.c_str(), H5F_ACC_RDONLY, fapl);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("damaged or truncated HDF5 file: ") + e.what());
    }
  });
  return f;
}

// The kinds of strings a file of format `version` may hold: fixed-length only since version 3, so that
// HDF5 never follows a reference into a global heap of a current checkpoint.
StringKinds string_kinds(std::int64_t version) {
  return version == k_format_version_vlen_strings ? StringKinds::fixed_or_variable : StringKinds::fixed_only;
}

// The root attributes; `version` receives format_version. The version is read (an integer) before any
// string, so that the strings of a current file are read as fixed-length strings only.
CheckpointMeta read_meta_attributes(hid_t file, const std::string& path, std::int64_t& version) {
  const std::string root = "/";
  const htri_t has_format = SPOTRUN_H5_CALL(path, H5Aexists, file, "format");
  if (!has_format) throw std::runtime_error("not a spotrun checkpoint (the root group has no 'format' attribute)");
  version = read_i64_attribute(file, "format_version", root, path);
  if (version != k_format_version && version != k_format_version_vlen_strings)
    throw std::runtime_error("format version " + std::to_string(version) + " is not supported (this build reads versions " +
                             std::to_string(k_format_version_vlen_strings) + " and " + std::to_string(k_format_version) +
                             ")");
  const StringKinds strings = string_kinds(version);
  const std::string format = read_string_attribute(file, "format", root, path, strings);
  if (format != k_format)
    throw std::runtime_error("not a spotrun checkpoint (format is '" + format + "', expected '" + k_format + "')");
  CheckpointMeta m;
  m.solver = read_string_attribute(file, "solver", root, path, strings);
  m.step = read_i64_attribute(file, "step", root, path);
  m.time = read_f64_attribute(file, "time", root, path);
  m.units = read_string_attribute(file, "units", root, path, strings);
  m.version = read_string_attribute(file, "spotrun_version", root, path, strings);
  m.git_hash = read_string_attribute(file, "git_hash", root, path, strings);
  const std::int64_t nranks = read_i64_attribute(file, "nranks", root, path);
  if (nranks < 1 || nranks > std::numeric_limits<int>::max())
    throw std::runtime_error(attribute_where("nranks", root) + " is " + std::to_string(nranks) + ", not a rank count");
  m.nranks = static_cast<int>(nranks);
  return m;
}

// Reads a text dataset of /meta (checksum verified); throws std::runtime_error.
std::string read_text_dataset(hid_t file, const std::string& name, std::uint64_t file_size, const std::string& path,
                              StringKinds strings) {
  const htri_t exists = SPOTRUN_H5_CALL(path, H5Lexists, file, "/meta", H5P_DEFAULT);
  if (!exists || !SPOTRUN_H5_CALL(path, H5Lexists, file, name.c_str(), H5P_DEFAULT))
    throw std::runtime_error("dataset '" + name + "' is missing");
  H5Handle dset = SPOTRUN_H5_OPEN(path, H5Dclose, H5Dopen2, file, name.c_str(), H5P_DEFAULT);
  H5Handle type = SPOTRUN_H5_OPEN(path, H5Tclose, H5Dget_type, dset);
  if (H5Tget_class(type) != H5T_STRING || SPOTRUN_H5_CALL(path, H5Tis_variable_str, type))
    throw std::runtime_error("dataset '" + name + "' is not a fixed-length string");
  H5Handle space = SPOTRUN_H5_OPEN(path, H5Sclose, H5Dget_space, dset);
  if (SPOTRUN_H5_CALL(path, H5Sget_simple_extent_npoints, space) != 1)
    throw std::runtime_error("dataset '" + name + "' does not hold one string");
  const std::size_t size = H5Tget_size(type);
  if (size == 0 || size > file_size) throw std::runtime_error("dataset '" + name + "' claims a string longer than the file");
  std::string buffer(size + 1, '\0');
  SPOTRUN_H5_CALL(path, H5Dread, dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data());
  std::string text(buffer.c_str(), strnlen(buffer.c_str(), size));
  const std::uint64_t stored = read_u64_attribute(dset, "checksum", name, path);
  const std::string algorithm = read_string_attribute(dset, "checksum_algorithm", name, path, strings);
  if (algorithm != k_text_algorithm)
    throw std::runtime_error("dataset '" + name + "' uses checksum algorithm '" + algorithm + "', expected '" +
                             k_text_algorithm + "'");
  const std::uint64_t computed = text_checksum(name, text);
  if (stored != computed)
    throw std::runtime_error("checksum mismatch in dataset '" + name + "' (stored " + hex64(stored) + ", computed " +
                             hex64(computed) + "): the file is damaged");
  return text;
}

// Names of the attributes of an object (any order HDF5 gives; sorted by name).
herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

void read_state_scalars(hid_t file, const std::string& path, StringKinds strings, SolverState& s) {
  const htri_t exists = SPOTRUN_H5_CALL(path, H5Lexists, file, "/state", H5P_DEFAULT);
  if (!exists) throw std::runtime_error("group '/state' is missing");
  H5Handle g = SPOTRUN_H5_OPEN(path, H5Gclose, H5Gopen2, file, "/state", H5P_DEFAULT);
  std::vector<std::string> names;
  hsize_t idx = 0;
  SPOTRUN_H5_CALL(path, H5Aiterate2, g, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attribute_name, &names);
  for (const auto& n : names) {
    auto a = open_scalar_attribute(g, n, "/state", path);
    const std::string where = attribute_where(n, "/state");
    if (a.cls == H5T_FLOAT) {
      double v = 0;
      SPOTRUN_H5_CALL(path, H5Aread, a.attr, H5T_NATIVE_DOUBLE, &v);
      s.reals[n] = v;
    } else if (a.cls == H5T_INTEGER) {
      if (H5Tget_size(a.type) > 8 || (H5Tget_size(a.type) == 8 && H5Tget_sign(a.type) == H5T_SGN_NONE))
        throw std::runtime_error(where + " is not a signed integer of at most 64 bits");
      std::int64_t v = 0;
      SPOTRUN_H5_CALL(path, H5Aread, a.attr, H5T_NATIVE_INT64, &v);
      s.integers[n] = v;
    } else if (a.cls == H5T_STRING) {
      s.strings[n] = read_string_from_attribute(a, where, path, strings);
    } else {
      throw std::runtime_error(where + " is neither a real, an integer nor a string");
    }
  }
}

const char* type_name(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) return size == 8 ? "float64" : size == 4 ? "float32" : "float";
  if (cls == H5T_INTEGER) {
    const bool sign = H5Tget_sign(type) != H5T_SGN_NONE;
    switch (size) {
      case 1: return sign ? "int8" : "uint8";
      case 2: return sign ? "int16" : "uint16";
      case 4: return sign ? "int32" : "uint32";
      case 8: return sign ? "int64" : "uint64";
      default: return "integer";
    }
  }
  if (cls == H5T_STRING) return "string";
  if (cls == H5T_COMPOUND) return "compound";
  return "an unsupported type";
}

// An array dataset checked against the file: open, with its shape and stored checksum.
struct DatasetPlan {
  std::string name;
  H5Handle dset;
  bool is_integer = false;
  std::vector<std::uint64_t> inner;
  std::uint64_t global_rows = 0;
  std::uint64_t row_size = 0;
  std::uint64_t stored_checksum = 0;
  RowHasher::Hash hash = RowHasher::Hash::xxh3;
  // Contiguous and stored in the native type: rows are read from the file at `offset` directly;
  // otherwise through H5Dread (which converts the byte order, or walks the chunks).
  bool direct = false;
  std::uint64_t offset = 0;
};

// Whether every component of the path `name` exists as a link.
bool link_exists(hid_t file, const std::string& path, const std::string& name) {
  for (std::size_t pos = name.find('/', 1);; pos = name.find('/', pos + 1)) {
    const std::string part = pos == std::string::npos ? name : name.substr(0, pos);
    if (!SPOTRUN_H5_CALL(path, H5Lexists, file, part.c_str(), H5P_DEFAULT)) return false;
    if (pos == std::string::npos) return true;
  }
}

// Opens dataset `name` and checks it; `expected` (may be null) adds type, inner shape and row checks.
// Throws std::runtime_error describing the problem.
DatasetPlan plan_dataset(hid_t file, const std::string& path, std::uint64_t file_size, StringKinds strings,
                         const std::string& name, const StateArray* expected) {
  DatasetPlan p;
  p.name = name;
  // Every component of the path must exist as a link before H5Dopen is asked.
  if (!link_exists(file, path, name)) throw std::runtime_error("dataset '" + name + "' is missing");
  H5Handle obj = SPOTRUN_H5_OPEN(path, H5Oclose, H5Oopen, file, name.c_str(), H5P_DEFAULT);
  if (H5Iget_type(obj) != H5I_DATASET) throw std::runtime_error("'" + name + "' is not a dataset");
  obj.reset();
  p.dset = SPOTRUN_H5_OPEN(path, H5Dclose, H5Dopen2, file, name.c_str(), H5P_DEFAULT);
  H5Handle type = SPOTRUN_H5_OPEN(path, H5Tclose, H5Dget_type, p.dset);
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t tsize = H5Tget_size(type);
  const bool is_f64 = cls == H5T_FLOAT && tsize == 8;
  const bool is_i64 = cls == H5T_INTEGER && tsize == 8 && H5Tget_sign(type) == H5T_SGN_2;
  if (expected && expected->is_integer && !is_i64)
    throw std::runtime_error("dataset '" + name + "' has type " + type_name(type) + ", expected int64");
  if (expected && !expected->is_integer && !is_f64)
    throw std::runtime_error("dataset '" + name + "' has type " + type_name(type) + ", expected float64");
  if (!is_f64 && !is_i64)
    throw std::runtime_error("dataset '" + name + "' has type " + type_name(type) + ", expected float64 or int64");
  p.is_integer = is_i64;
  H5Handle space = SPOTRUN_H5_OPEN(path, H5Sclose, H5Dget_space, p.dset);
  const int ndims = SPOTRUN_H5_CALL(path, H5Sget_simple_extent_ndims, space);
  if (ndims < 1 || H5Sget_simple_extent_type(space) != H5S_SIMPLE)
    throw std::runtime_error("dataset '" + name + "' is not an array of rows (rank " + std::to_string(ndims) + ")");
  std::vector<hsize_t> dims(ndims);
  SPOTRUN_H5_CALL(path, H5Sget_simple_extent_dims, space, dims.data(), nullptr);
  p.global_rows = dims[0];
  p.inner.assign(dims.begin() + 1, dims.end());
  if (expected) {
    const bool rows_fixed = expected->global_rows != 0;
    if (!expected->accepts_inner(p.inner) || (rows_fixed && p.global_rows != expected->global_rows))
      throw std::runtime_error("dataset '" + name + "' has shape " + shape_text(p.global_rows, p.inner) + ", expected " +
                               shape_text(expected->global_rows, expected->inner, rows_fixed));
  }
  std::uint64_t bytes = 8;
  bool fits = true;
  p.row_size = 1;
  for (auto d : p.inner) fits = fits && mul_ok(p.row_size, d, p.row_size);
  fits = fits && mul_ok(bytes, p.row_size, bytes) && mul_ok(bytes, p.global_rows, bytes);
  if (!fits || bytes > file_size)
    throw std::runtime_error("dataset '" + name + "' claims shape " + shape_text(p.global_rows, p.inner) +
                             (fits ? " = " + std::to_string(bytes) + " bytes" : std::string(" (over 2^64 bytes)")) +
                             ", more than the whole file (" + std::to_string(file_size) +
                             " bytes): the file is damaged or crafted");
  H5Handle dcpl = SPOTRUN_H5_OPEN(path, H5Pclose, H5Dget_create_plist, p.dset);
  if (bytes > 0 && H5Pget_layout(dcpl) == H5D_CONTIGUOUS) {
    const haddr_t offset = H5Dget_offset(p.dset);
    H5Eclear2(H5E_DEFAULT);
    const hsize_t stored = H5Dget_storage_size(p.dset);
    if (offset == HADDR_UNDEF || stored < bytes || offset > file_size || stored > file_size - offset)
      throw std::runtime_error("dataset '" + name + "' of shape " + shape_text(p.global_rows, p.inner) +
                               " has no complete data in the file (truncated or damaged)");
    p.offset = offset;
    p.direct = SPOTRUN_H5_CALL(path, H5Tequal, type, p.is_integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE) > 0;
  }
  p.stored_checksum = read_u64_attribute(p.dset, "checksum", "dataset '" + name + "'", path);
  const std::string algorithm = read_string_attribute(p.dset, "checksum_algorithm", "dataset '" + name + "'", path, strings);
  if (!RowHasher::parse(algorithm, p.hash))
    throw std::runtime_error("dataset '" + name + "' uses checksum algorithm '" + algorithm + "', this build knows '" +
                             k_rowsum_algorithm + "' and '" + k_rowsum_algorithm_xxh64 + "'");
  return p;
}

// Reads rows [first, first + count) of dataset `p` (this rank alone) a chunk of at most k_read_chunk
// bytes at a time into `dest(done, n)` (where rows first + done .. + n go) and returns their row sum
// (RowHasher::rowsum), taken while each chunk is in the cache. Throws std::runtime_error.
template <class Dest>
std::uint64_t read_rows(const OpenedFile& f, const std::string& path, const DatasetPlan& p, std::uint64_t first,
                        std::uint64_t count, Dest&& dest) {
  const std::uint64_t row_bytes = p.row_size * 8;
  if (row_bytes == 0 || count == 0) return 0;
  const std::uint64_t rows_per_chunk = std::max<std::uint64_t>(1, k_read_chunk / row_bytes);
  H5Handle file_space, mem_space;
  if (!p.direct) file_space = SPOTRUN_H5_OPEN(path, H5Sclose, H5Dget_space, p.dset);
  std::vector<hsize_t> start(p.inner.size() + 1, 0), block(p.inner.size() + 1);
  for (std::size_t d = 0; d < p.inner.size(); ++d) block[d + 1] = p.inner[d];
  std::uint64_t sum = 0;
  for (std::uint64_t done = 0; done < count;) {
    const std::uint64_t n = std::min(rows_per_chunk, count - done);
    unsigned char* out = dest(done, n);
    if (p.direct) {
      const std::uint64_t at = p.offset + (first + done) * row_bytes, bytes = n * row_bytes;
      for (std::uint64_t got = 0; got < bytes;) {
        const ssize_t r = ::pread(f.fd.get(), out + got, bytes - got, static_cast<off_t>(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw std::runtime_error("reading bytes " + std::to_string(at + got) + ".. failed: " + std::strerror(errno));
        if (r == 0) throw std::runtime_error("the file ended at byte " + std::to_string(at + got) + " while being read");
        got += static_cast<std::uint64_t>(r);
      }
    } else {
      hsize_t elements = n * p.row_size;
      mem_space = SPOTRUN_H5_OPEN(path, H5Sclose, H5Screate_simple, 1, &elements, nullptr);
      start[0] = first + done;
      block[0] = n;
      SPOTRUN_H5_CALL(path, H5Sselect_hyperslab, file_space, H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr);
      SPOTRUN_H5_CALL(path, H5Dread, p.dset, p.is_integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, mem_space, file_space,
                      H5P_DEFAULT, out);
    }
    sum += RowHasher::rowsum(out, n, row_bytes, first + done, p.hash);
    done += n;
  }
  return sum;
}

// Walks the groups of the file (bounded depth and count), collecting the names of datasets outside /meta.
void collect_datasets(hid_t file, const std::string& path, const std::string& group, int depth,
                      std::vector<std::string>& out, std::size_t& visited) {
  if (depth > k_max_group_depth) throw std::runtime_error("groups nest deeper than " + std::to_string(k_max_group_depth));
  H5Handle g = SPOTRUN_H5_OPEN(path, H5Gclose, H5Gopen2, file, group.c_str(), H5P_DEFAULT);
  H5G_info_t info{};
  SPOTRUN_H5_CALL(path, H5Gget_info, g, &info);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    if (++visited > k_max_objects) throw std::runtime_error("more than " + std::to_string(k_max_objects) + " objects");
    const ssize_t len = SPOTRUN_H5_CALL(path, H5Lget_name_by_idx, g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    SPOTRUN_H5_CALL(path, H5Lget_name_by_idx, g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(len));
    const std::string full = (group == "/" ? "/" : group + "/") + name;
    if (full == "/meta") continue;
    H5Handle obj = SPOTRUN_H5_OPEN(path, H5Oclose, H5Oopen, file, full.c_str(), H5P_DEFAULT);
    const H5I_type_t t = H5Iget_type(obj);
    obj.reset();
    if (t == H5I_DATASET)
      out.push_back(full);
    else if (t == H5I_GROUP && full != "/state")
      collect_datasets(file, path, full, depth + 1, out, visited);
  }
}

}  // namespace

// ---- reading: one verified, open file --------------------------------------------------------------------

struct CheckpointReader::Impl {
  const comm::Communicator& comm;
  std::string path;
  std::string prefix;
  OpenedFile f;
  CheckpointMeta meta;
  std::int64_t version = 0;  // format_version of the file
  StringKinds strings = StringKinds::fixed_only;
};

CheckpointReader::CheckpointReader(const comm::Communicator& comm, const std::string& path)
    : m_impl(std::make_unique<Impl>(Impl{comm, path, "checkpoint '" + path + "': ", {}, {}, 0, StringKinds::fixed_only})) {
  QuietHdf5Errors quiet;
  Impl& r = *m_impl;
  r.f = open_for_read(comm, path);
  agreed_step<InputError>(comm, r.prefix, [&] {
    r.meta = read_meta_attributes(r.f.file, path, r.version);
    r.strings = string_kinds(r.version);
    // The manifest repeats two attributes (to order files without parsing them); they must agree.
    if (r.meta.solver != r.f.manifest.solver || r.meta.step != r.f.manifest.step)
      throw std::runtime_error("the manifest says solver '" + r.f.manifest.solver + "' step " +
                               std::to_string(r.f.manifest.step) + ", the attributes solver '" + r.meta.solver + "' step " +
                               std::to_string(r.meta.step) + ": the file is damaged or crafted");
    if (r.meta.step < 0) throw std::runtime_error("attribute 'step' of / is " + std::to_string(r.meta.step) + ", below 0");
    if (!std::isfinite(r.meta.time)) throw std::runtime_error("attribute 'time' of / is not finite");
  });
  // The texts: rank 0 reads them (the deck, the physics and, in a node file of a multilevel checkpoint
  // (io/checkpoint_levels.hpp), which rows it holds), one broadcast hands them to every rank.
  std::string texts;
  agreed_step<InputError>(comm, r.prefix, [&] {
    if (!comm.is_root()) return;
    const std::string deck = read_text_dataset(r.f.file, "/meta/deck", r.f.size, path, r.strings);
    const std::string physics = read_text_dataset(r.f.file, "/meta/physics", r.f.size, path, r.strings);
    const bool has_level = SPOTRUN_H5_CALL(path, H5Lexists, r.f.file, "/meta/level", H5P_DEFAULT) > 0;
    const std::string level = has_level ? read_text_dataset(r.f.file, "/meta/level", r.f.size, path, r.strings) : "";
    // A text ends at its first NUL (strnlen above): NUL separates them.
    texts = deck + '\0' + physics + '\0' + level;
  });
  texts = comm.broadcast(texts);
  const std::size_t end_deck = texts.find('\0'), end_physics = texts.find('\0', end_deck + 1);
  r.meta.deck = texts.substr(0, end_deck);
  r.meta.physics = texts.substr(end_deck + 1, end_physics - end_deck - 1);
  r.meta.level = texts.substr(end_physics + 1);
}

CheckpointReader::~CheckpointReader() {
  if (!m_impl) return;
  QuietHdf5Errors quiet;
  m_impl->f.file.reset();
}

const CheckpointMeta& CheckpointReader::meta() const { return m_impl->meta; }
const std::string& CheckpointReader::path() const { return m_impl->path; }
std::uint64_t CheckpointReader::bytes() const { return input_file_size(m_impl->comm, m_impl->path, "checkpoint"); }
const std::vector<std::string>& CheckpointReader::sources() const {
  static const std::vector<std::string> none;
  return none;
}
const std::vector<std::string>& CheckpointReader::skipped() const { return sources(); }

SolverState CheckpointReader::read(const std::vector<StateArray>& wanted) {
  QuietHdf5Errors quiet;
  Impl& r = *m_impl;
  const comm::Communicator& comm = r.comm;
  const std::string& path = r.path;
  const std::string& prefix = r.prefix;
  {
    std::set<std::string> names;
    for (const auto& e : wanted)
      if (!names.insert(e.name).second) throw std::invalid_argument("read_checkpoint: '" + e.name + "' expected twice");
  }
  SolverState state;
  std::vector<DatasetPlan> plans;
  std::vector<StateArray> expected;  // the wanted datasets the file has (an optional one may be absent)
  agreed_step<InputError>(comm, prefix, [&] {
    state.solver = r.meta.solver;
    read_state_scalars(r.f.file, path, r.strings, state);
    for (const auto& e : wanted) {
      if (e.optional && !link_exists(r.f.file, path, e.name)) continue;
      plans.push_back(plan_dataset(r.f.file, path, r.f.size, r.strings, e.name, &e));
      expected.push_back(StateArray::layout(e.name, e.inner, e.is_integer, e.global_rows));
    }
  });
  // Each rank reads its even block of every dataset, dataset by dataset, and stops at its first
  // failure. Then one allreduce agrees on the first dataset that failed anywhere and one sums the row
  // checksums: a checksum mismatch of a dataset read everywhere before it is reported first, as if the
  // datasets had been read and checked one after the other.
  const std::size_t n = expected.size();
  std::uint64_t my_failed = n;
  std::string my_failure;
  std::vector<std::uint64_t> local(n, 0), global(n, 0);
  std::size_t i = 0;
  try {
    for (; i < n; ++i) {
      StateArray a;
      a.name = expected[i].name;
      a.inner = plans[i].inner;
      a.is_integer = plans[i].is_integer;
      a.global_rows = plans[i].global_rows;
      block_of(a.global_rows, comm.size(), comm.rank(), a.first_row, a.rows);
      state.arrays.push_back(std::move(a));
      StateArray& b = state.arrays.back();
      const std::uint64_t row_size = plans[i].row_size, row_bytes = row_size * 8;
      try {
        // The array grows chunk by chunk, so that its zero fill, the read and the row checksums all find
        // the chunk in the cache.
        if (b.is_integer)
          b.i64.reserve(b.rows * row_size);
        else
          b.f64.reserve(b.rows * row_size);
        local[i] = read_rows(r.f, path, plans[i], b.first_row, b.rows, [&](std::uint64_t done, std::uint64_t rows) {
          const std::uint64_t values = (done + rows) * row_size;
          if (b.is_integer) {
            b.i64.resize(values);
            return reinterpret_cast<unsigned char*>(b.i64.data()) + done * row_bytes;
          }
          b.f64.resize(values);
          return reinterpret_cast<unsigned char*>(b.f64.data()) + done * row_bytes;
        });
        plans[i].dset.close("H5Dclose", path);
      } catch (const std::bad_alloc&) {
        throw std::runtime_error("dataset '" + b.name + "': out of memory");
      } catch (const std::exception& e) {
        throw std::runtime_error("dataset '" + b.name + "': " + e.what());
      }
    }
  } catch (const std::bad_alloc&) {
    my_failed = i;
    my_failure = "out of memory";
  } catch (const std::exception& e) {
    my_failed = i;
    my_failure = e.what();
  }
  std::uint64_t failed = n;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&my_failed, &failed, 1, MPI_UINT64_T, MPI_MIN, comm.mpi()));
  if (failed > 0)
    SPOTRUN_MPI_CHECK(MPI_Allreduce(local.data(), global.data(), static_cast<int>(failed), MPI_UINT64_T, MPI_SUM, comm.mpi()));
  for (std::size_t k = 0; k < failed; ++k) {
    const std::uint64_t computed = global[k] + name_hash(expected[k].name);
    if (computed != plans[k].stored_checksum)
      throw InputError(prefix + "checksum mismatch in dataset '" + expected[k].name + "' (stored " +
                       hex64(plans[k].stored_checksum) + ", computed " + hex64(computed) + "): the file is damaged");
  }
  if (failed < n)
    agreed_step<InputError>(comm, prefix, [&] {
      if (my_failed == failed) throw std::runtime_error(my_failure);
    });
  return state;
}

VerifyReport CheckpointReader::verify() {
  QuietHdf5Errors quiet;
  Impl& r = *m_impl;
  const comm::Communicator& comm = r.comm;
  const std::string& path = r.path;
  OpenedFile& f = r.f;
  VerifyReport report;
  auto bad = [&](const std::string& line) {
    report.ok = false;
    report.lines.push_back(line);
  };
  const FileManifest& m = f.manifest;
  report.lines.push_back("file: " + std::to_string(m.file_size) + " bytes, " + std::to_string(m.hashes.size()) +
                         " block(s) of " + std::to_string(m.block_size) + " bytes after a " + std::to_string(m.userblock) +
                         "-byte manifest: every byte matches the manifest (xxh3-64)");
  report.lines.push_back("format: " + std::string(k_format) + " version " + std::to_string(r.version));
  char time_text[32];
  std::snprintf(time_text, sizeof time_text, "%.17g", r.meta.time);
  report.lines.push_back("meta: solver=" + r.meta.solver + " step=" + std::to_string(r.meta.step) + " time=" + time_text +
                         " units=" + r.meta.units + " nranks=" + std::to_string(r.meta.nranks) +
                         " spotrun_version=" + r.meta.version + " git_hash=" + r.meta.git_hash);
  report.lines.push_back("/meta/deck: " + std::to_string(r.meta.deck.size()) + " bytes, checksum ok");
  report.lines.push_back("/meta/physics: " + std::to_string(r.meta.physics.size()) + " bytes, checksum ok");
  if (!r.meta.level.empty())
    report.lines.push_back("/meta/level: " + std::to_string(r.meta.level.size()) + " bytes, checksum ok");
  SolverState scalars;
  std::string failure = agreed_failure(comm, [&] { read_state_scalars(f.file, path, r.strings, scalars); });
  if (failure.empty())
    report.lines.push_back("/state: " + std::to_string(scalars.reals.size()) + " reals, " +
                           std::to_string(scalars.integers.size()) + " integers, " + std::to_string(scalars.strings.size()) +
                           " strings");
  else
    bad("/state: BAD: " + failure);

  // Rank 0 lists the datasets; every rank then checks each one together.
  std::vector<std::string> names;
  std::string listing;
  failure = agreed_failure(comm, [&] {
    if (!comm.is_root()) return;
    std::size_t visited = 0;
    collect_datasets(f.file, path, "/", 0, names, visited);
    for (const auto& n : names) listing += n + '\n';
  });
  if (!failure.empty()) bad("datasets: BAD: cannot list them: " + failure);
  listing = comm.broadcast(listing);
  names.clear();
  for (std::size_t start = 0; start < listing.size();) {
    const auto end = listing.find('\n', start);
    names.push_back(listing.substr(start, end - start));
    start = end + 1;
  }
  for (const auto& name : names) {
    DatasetPlan p;
    std::vector<unsigned char> buffer;
    failure = agreed_failure(comm, [&] { p = plan_dataset(f.file, path, f.size, r.strings, name, nullptr); });
    if (!failure.empty()) {
      bad(name + ": BAD: " + failure);
      continue;
    }
    const std::string head = name + ": " + (p.is_integer ? "int64 " : "float64 ") + shape_text(p.global_rows, p.inner);
    std::uint64_t first = 0, count = 0;
    block_of(p.global_rows, comm.size(), comm.rank(), first, count);
    // Each rank checksums its rows a chunk at a time (k_read_chunk bytes of memory), then one allreduce.
    std::uint64_t local = 0, computed = 0;
    failure = agreed_failure(comm, [&] {
      local = read_rows(f, path, p, first, count, [&](std::uint64_t, std::uint64_t rows) {
        buffer.resize(rows * p.row_size * 8);
        return buffer.data();
      });
    });
    if (!failure.empty()) {
      bad(head + ": BAD: " + failure);
      continue;
    }
    SPOTRUN_MPI_CHECK(MPI_Allreduce(&local, &computed, 1, MPI_UINT64_T, MPI_SUM, comm.mpi()));
    computed += name_hash(name);
    if (computed == p.stored_checksum)
      report.lines.push_back(head + ": checksum ok (" + hex64(computed) + ")");
    else
      bad(head + ": checksum BAD (stored " + hex64(p.stored_checksum) + ", computed " + hex64(computed) + ")");
  }
  return report;
}

CheckpointMeta read_checkpoint_meta(const comm::Communicator& comm, const std::string& path) {
  return CheckpointReader(comm, path).meta();
}

SolverState read_checkpoint(const comm::Communicator& comm, const std::string& path, const std::vector<StateArray>& expected) {
  return CheckpointReader(comm, path).read(expected);
}

VerifyReport verify_checkpoint(const comm::Communicator& comm, const std::string& path) {
  return CheckpointReader(comm, path).verify();
}

CheckpointSummary peek_checkpoint(const comm::Communicator& comm, const std::string& path) {
  const FileManifest m = peek_manifest(comm, path);
  return {m.solver, m.step};
}

}  // namespace spotrun::io
