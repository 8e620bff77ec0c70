// Checkpoint files with parallel HDF5: layout, checksums and commit protocol in docs/checkpoint-format.md.
//
// Collective safety. Every step that may fail on some ranks only (a local check, an allocation, one
// HDF5 call with I/O) runs inside agreed_step(): its verdict is agreed by all ranks before the next
// collective, so either every rank goes on or every rank throws the same error. Metadata reads are
// independent (no collective metadata reads): every rank reads the same bytes with the same code, so a
// damaged file fails on every rank at the same call. Raw data moves with collective transfers, in
// rounds of at most k_round_bytes per rank; a rank with no rows (or done early) joins every round with
// an empty selection.
#include "checkpoint.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

// xxHash inlined: the per-row hashes of short rows are dominated by call overhead otherwise.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "comm/errors.hpp"
#include "file_manifest.hpp"
#include "spotrun/version.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint checksums hash the little-endian bytes of each row; add a byte swap for this host");

namespace spotrun::io {
namespace {

constexpr const char* k_format = "spotrun-checkpoint";
constexpr std::int64_t k_format_version = 2;
// Checksums include the dataset's name, so that datasets swapped in the file (with their checksums)
// fail: XXH64(name) + sum of the row hashes (arrays) or + XXH64(text) (texts), modulo 2^64.
constexpr const char* k_rowsum_algorithm = "xxh64-named-rowsum";
constexpr const char* k_text_algorithm = "xxh64-named";
// Bytes of one dataset one rank moves in one collective transfer (keeps every MPI count far below 2^31
// and bounds the memory verify_checkpoint uses).
constexpr std::uint64_t k_round_bytes = std::uint64_t(256) << 20;
// Scratch bytes per rank for reading a new checkpoint back before it is committed.
constexpr std::uint64_t k_verify_bytes = std::uint64_t(4) << 20;
// Longest fixed-length string attribute read back (the deck and physics texts are datasets).
constexpr std::uint64_t k_max_string_attribute = std::uint64_t(1) << 20;
// Depth and object count bounds for walking the groups of a (possibly crafted) file.
constexpr int k_max_group_depth = 16;
constexpr std::size_t k_max_objects = 100000;

// ---- HDF5 errors ------------------------------------------------------------------------------------

// The innermost messages of HDF5's default error stack (where the error was detected, then the call
// around it), and clears it.
herr_t collect_error(unsigned n, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (n < 2 && err && err->desc && *err->desc) out->emplace_back(err->desc);
  return 0;
}

std::string hdf5_error_text() {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (messages.empty()) return "no HDF5 error message";
  std::string text = messages[0];
  if (messages.size() > 1 && messages[1] != messages[0]) text += " (" + messages[1] + ")";
  return text;
}

// Throws std::runtime_error naming the call and the file when an HDF5 call returns a negative value.
template <class T>
T h5_check(T ret, const char* call, const std::string& file) {
  if (ret < 0) throw std::runtime_error(std::string(call) + " on '" + file + "' failed: " + hdf5_error_text());
  return ret;
}
#define SPOTRUN_H5_CALL(file, fn, ...) h5_check(fn(__VA_ARGS__), #fn, file)

// Silences HDF5's automatic error printing for the lifetime of the object (errors become exceptions).
class QuietHdf5Errors {
 public:
  QuietHdf5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &m_func, &m_data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, m_func, m_data); }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;

 private:
  H5E_auto2_t m_func = nullptr;
  void* m_data = nullptr;
};

// An HDF5 identifier closed by its destructor (errors ignored there: it also runs while unwinding);
// close() closes it with the error checked. Non-copyable, movable.
class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : m_id(id), m_closer(closer) {}
  ~H5Handle() { reset(); }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept : m_id(std::exchange(o.m_id, -1)), m_closer(o.m_closer) {}
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      reset();
      m_id = std::exchange(o.m_id, -1);
      m_closer = o.m_closer;
    }
    return *this;
  }
  hid_t get() const { return m_id; }
  operator hid_t() const { return m_id; }
  void reset() noexcept {
    if (m_id >= 0 && m_closer) {
      m_closer(m_id);
      H5Eclear2(H5E_DEFAULT);
    }
    m_id = -1;
  }
  void close(const char* call, const std::string& file) {
    const hid_t id = std::exchange(m_id, -1);
    if (id >= 0) h5_check(m_closer(id), call, file);
  }

 private:
  hid_t m_id = -1;
  Closer m_closer = nullptr;
};

// Wraps a new identifier; throws (naming the call and file) when the call failed.
H5Handle checked(hid_t id, H5Handle::Closer closer, const char* call, const std::string& file) {
  return H5Handle(h5_check(id, call, file), closer);
}
#define SPOTRUN_H5_OPEN(file, closer, fn, ...) checked(fn(__VA_ARGS__), closer, #fn, file)

// ---- collective verdicts ----------------------------------------------------------------------------

// Runs f on every rank; returns "" when it succeeded on every rank, else the message of the lowest rank
// that failed (the same text on every rank).
std::string agreed_failure(const comm::Communicator& comm, const std::function<void()>& f) {
  bool ok = true;
  std::string message;
  try {
    f();
  } catch (const std::bad_alloc&) {
    ok = false;
    message = "out of memory";
  } catch (const std::exception& e) {
    ok = false;
    message = e.what();
  }
  try {
    comm.agree<std::runtime_error>(ok, message);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return {};
}

// Runs f on every rank; if it failed on any rank, every rank throws ErrorT(prefix + message).
template <class ErrorT>
void agreed_step(const comm::Communicator& comm, const std::string& prefix, const std::function<void()>& f) {
  const std::string failure = agreed_failure(comm, f);
  if (!failure.empty()) throw ErrorT(prefix + failure);
}

// ---- small helpers ----------------------------------------------------------------------------------

std::string errno_text(int err) { return std::strerror(err); }

std::uint64_t bits_of(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::string hex64(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, v);
  return text;
}

std::string shape_text(std::uint64_t rows, const std::vector<std::uint64_t>& inner, bool rows_known = true) {
  std::string s = "(" + (rows_known ? std::to_string(rows) : std::string("*"));
  for (auto d : inner) s += ", " + std::to_string(d);
  return s + (inner.empty() ? ",)" : ")");
}

// a * b, or false when it overflows 64 bits.
bool mul_ok(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
  out = a * b;
  return true;
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

// XXH64 of a dataset's name: the part of its checksum that ties the data to the name.
std::uint64_t name_hash(const std::string& name) { return XXH64(name.data(), name.size(), 0); }

std::uint64_t text_checksum(const std::string& name, const std::string& text) {
  return name_hash(name) + XXH64(text.data(), text.size(), 0);
}

struct RowHasher {
  // Sum modulo 2^64 of XXH64(row bytes, seed = global row index) over `rows` rows starting at `first`.
  static std::uint64_t rowsum(const void* data, std::uint64_t rows, std::uint64_t row_bytes, std::uint64_t first) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < rows; ++i) sum += XXH64(p + i * row_bytes, row_bytes, first + i);
    return sum;
  }
};

// ---- attributes and strings ---------------------------------------------------------------------------

H5Handle vlen_string_type(const std::string& file) {
  H5Handle t = SPOTRUN_H5_OPEN(file, H5Tclose, H5Tcopy, H5T_C_S1);
  SPOTRUN_H5_CALL(file, H5Tset_size, t, H5T_VARIABLE);
  SPOTRUN_H5_CALL(file, H5Tset_cset, t, H5T_CSET_UTF8);
  return t;
}

void write_attribute(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type, const void* value,
                     const std::string& file) {
  H5Handle space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Screate, H5S_SCALAR);
  H5Handle attr = SPOTRUN_H5_OPEN(file, H5Aclose, H5Acreate2, obj, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  SPOTRUN_H5_CALL(file, H5Awrite, attr, mem_type, value);
  attr.close("H5Aclose", file);
}

void write_string_attribute(hid_t obj, const std::string& name, const std::string& value, const std::string& file) {
  H5Handle type = vlen_string_type(file);
  const char* p = value.c_str();
  write_attribute(obj, name, type, type, &p, file);
}
void write_i64_attribute(hid_t obj, const std::string& name, std::int64_t value, const std::string& file) {
  write_attribute(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, file);
}
void write_u64_attribute(hid_t obj, const std::string& name, std::uint64_t value, const std::string& file) {
  write_attribute(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value, file);
}
void write_f64_attribute(hid_t obj, const std::string& name, double value, const std::string& file) {
  write_attribute(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, file);
}

// "attribute 'step' of /" for messages.
std::string attribute_where(const std::string& name, const std::string& object) {
  return "attribute '" + name + "' of " + object;
}

// An attribute that must exist and hold one value; returns it open, with its type.
struct OpenAttribute {
  H5Handle attr;
  H5Handle type;
  H5T_class_t cls = H5T_NO_CLASS;
};

OpenAttribute open_scalar_attribute(hid_t obj, const std::string& name, const std::string& object,
                                    const std::string& file) {
  const htri_t exists = SPOTRUN_H5_CALL(file, H5Aexists, obj, name.c_str());
  if (!exists) throw std::runtime_error(attribute_where(name, object) + " is missing");
  OpenAttribute a;
  a.attr = SPOTRUN_H5_OPEN(file, H5Aclose, H5Aopen, obj, name.c_str(), H5P_DEFAULT);
  H5Handle space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Aget_space, a.attr);
  const hssize_t n = SPOTRUN_H5_CALL(file, H5Sget_simple_extent_npoints, space);
  if (n != 1) throw std::runtime_error(attribute_where(name, object) + " holds " + std::to_string(n) + " values, expected 1");
  a.type = SPOTRUN_H5_OPEN(file, H5Tclose, H5Aget_type, a.attr);
  a.cls = H5Tget_class(a.type);
  return a;
}

std::string read_string_from_attribute(OpenAttribute& a, const std::string& where, const std::string& file) {
  if (a.cls != H5T_STRING) throw std::runtime_error(where + " is not a string");
  const htri_t is_vlen = SPOTRUN_H5_CALL(file, H5Tis_variable_str, a.type);
  if (is_vlen) {
    H5Handle mem = vlen_string_type(file);
    SPOTRUN_H5_CALL(file, H5Tset_cset, mem, H5Tget_cset(a.type));
    char* p = nullptr;
    SPOTRUN_H5_CALL(file, H5Aread, a.attr, mem, &p);
    std::string value = p ? std::string(p) : std::string();
    if (p) H5free_memory(p);
    return value;
  }
  const std::size_t size = H5Tget_size(a.type);
  if (size == 0 || size > k_max_string_attribute) throw std::runtime_error(where + " has an implausible string size");
  H5Handle mem = SPOTRUN_H5_OPEN(file, H5Tclose, H5Tcopy, a.type);
  std::string buffer(size + 1, '\0');
  SPOTRUN_H5_CALL(file, H5Aread, a.attr, mem, buffer.data());
  return std::string(buffer.c_str(), strnlen(buffer.c_str(), size));
}

std::string read_string_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file) {
  auto a = open_scalar_attribute(obj, name, object, file);
  return read_string_from_attribute(a, attribute_where(name, object), file);
}

std::int64_t read_i64_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file) {
  auto a = open_scalar_attribute(obj, name, object, file);
  if (a.cls != H5T_INTEGER || H5Tget_size(a.type) > 8 ||
      (H5Tget_size(a.type) == 8 && H5Tget_sign(a.type) == H5T_SGN_NONE))
    throw std::runtime_error(attribute_where(name, object) + " is not a signed integer of at most 64 bits");
  std::int64_t v = 0;
  SPOTRUN_H5_CALL(file, H5Aread, a.attr, H5T_NATIVE_INT64, &v);
  return v;
}

double read_f64_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file) {
  auto a = open_scalar_attribute(obj, name, object, file);
  if (a.cls != H5T_FLOAT) throw std::runtime_error(attribute_where(name, object) + " is not a floating-point number");
  double v = 0;
  SPOTRUN_H5_CALL(file, H5Aread, a.attr, H5T_NATIVE_DOUBLE, &v);
  return v;
}

std::uint64_t read_checksum_attribute(hid_t obj, const std::string& object, const std::string& file) {
  auto a = open_scalar_attribute(obj, "checksum", object, file);
  if (a.cls != H5T_INTEGER || H5Tget_size(a.type) != 8 || H5Tget_sign(a.type) != H5T_SGN_NONE)
    throw std::runtime_error(attribute_where("checksum", object) + " is not an unsigned 64-bit integer");
  std::uint64_t v = 0;
  SPOTRUN_H5_CALL(file, H5Aread, a.attr, H5T_NATIVE_UINT64, &v);
  return v;
}

// ---- the file ---------------------------------------------------------------------------------------

H5Handle dxpl_collective(const std::string& file) {
  H5Handle dxpl = SPOTRUN_H5_OPEN(file, H5Pclose, H5Pcreate, H5P_DATASET_XFER);
  SPOTRUN_H5_CALL(file, H5Pset_dxpl_mpio, dxpl, H5FD_MPIO_COLLECTIVE);
  return dxpl;
}

// userblock: 0 when reading; when writing, the bytes reserved for the whole-file manifest. HDF5 wants the
// user block at least as large as the alignment, so only files with a 1 MiB user block are aligned.
H5Handle mpio_fapl(const comm::Communicator& comm, const std::string& file, std::uint64_t userblock) {
  H5Handle fapl = SPOTRUN_H5_OPEN(file, H5Pclose, H5Pcreate, H5P_FILE_ACCESS);
  SPOTRUN_H5_CALL(file, H5Pset_fapl_mpio, fapl, comm.mpi(), MPI_INFO_NULL);
  if (userblock > 0) {
    // Metadata is written collectively at flush; files stay readable by HDF5 1.8 and later.
    SPOTRUN_H5_CALL(file, H5Pset_coll_metadata_write, fapl, 1);
    SPOTRUN_H5_CALL(file, H5Pset_libver_bounds, fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
    // Large datasets start on 1 MiB boundaries (file system stripes).
    constexpr hsize_t k_align = hsize_t(1) << 20;
    if (userblock >= k_align) SPOTRUN_H5_CALL(file, H5Pset_alignment, fapl, k_align, k_align);
  }
  return fapl;
}

// Collective read or write of rows [first, first + count) of `dataset` in rounds of at most
// k_round_bytes. `rounds` is the same on every rank; ranks with fewer rows select nothing in the rest.
// Each transfer's verdict is agreed before the next one.
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
    agreed_step<ErrorT>(comm, prefix, [&] {
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
}

// Hash of everything that must be the same on every rank: metadata, array layout and scalars.
std::uint64_t shared_fingerprint(const CheckpointMeta& meta, const SolverState& state) {
  std::ostringstream s;
  s << meta.solver << '\0' << meta.step << '\0' << hex64(bits_of(meta.time)) << '\0'
    << meta.deck << '\0' << meta.physics << '\0' << meta.units << '\0' << meta.version << '\0' << meta.git_hash << '\0'
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
  write_string_attribute(t.dset, "checksum_algorithm", k_text_algorithm, file);
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

// Reads every item back with POSIX reads and compares it bitwise; throws naming the first that differs.
void read_back(const std::string& file, const std::vector<ReadBack>& items) {
  if (items.empty()) return;
  const int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open '" + file + "' to read it back: " + errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  std::uint64_t largest = 0;
  for (const auto& it : items) largest = std::max(largest, it.bytes);
  std::vector<unsigned char> scratch(std::min(largest, k_verify_bytes));
  for (const auto& it : items) {
    for (std::uint64_t done = 0; done < it.bytes;) {
      const std::uint64_t want = std::min<std::uint64_t>(scratch.size(), it.bytes - done);
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
    H5Handle fapl = mpio_fapl(comm, tmp, userblock);
    H5Handle fcpl = SPOTRUN_H5_OPEN(tmp, H5Pclose, H5Pcreate, H5P_FILE_CREATE);
    SPOTRUN_H5_CALL(tmp, H5Pset_userblock, fcpl, userblock);
    file = SPOTRUN_H5_OPEN(tmp, H5Fclose, H5Fcreate, tmp.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  });
  // Metadata: the same calls with the same values on every rank.
  TextDataset deck, physics;
  std::vector<H5Handle> datasets(state.arrays.size());
  agreed_step<std::runtime_error>(comm, prefix, [&] {
    write_string_attribute(file, "format", k_format, tmp);
    write_i64_attribute(file, "format_version", k_format_version, tmp);
    write_string_attribute(file, "solver", meta.solver, tmp);
    write_i64_attribute(file, "step", meta.step, tmp);
    write_f64_attribute(file, "time", meta.time, tmp);
    write_string_attribute(file, "units", meta.units, tmp);
    write_string_attribute(file, "spotrun_version", meta.version.empty() ? std::string(k_version) : meta.version, tmp);
    write_string_attribute(file, "git_hash", meta.git_hash.empty() ? std::string(k_git_hash) : meta.git_hash, tmp);
    write_i64_attribute(file, "nranks", comm.size(), tmp);
    H5Handle st = SPOTRUN_H5_OPEN(tmp, H5Gclose, H5Gcreate2, file, "/state", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (const auto& kv : state.reals) write_f64_attribute(st, kv.first, kv.second, tmp);
    for (const auto& kv : state.integers) write_i64_attribute(st, kv.first, kv.second, tmp);
    for (const auto& kv : state.strings) write_string_attribute(st, kv.first, kv.second, tmp);
    st.close("H5Gclose", tmp);
    H5Handle mg = SPOTRUN_H5_OPEN(tmp, H5Gclose, H5Gcreate2, file, "/meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    deck = create_text_dataset(mg, "deck", meta.deck, tmp);
    physics = create_text_dataset(mg, "physics", meta.physics, tmp);
    mg.close("H5Gclose", tmp);
    // Every array dataset, allocated now (contiguous, no fill), with its checksum.
    H5Handle lcpl = SPOTRUN_H5_OPEN(tmp, H5Pclose, H5Pcreate, H5P_LINK_CREATE);
    SPOTRUN_H5_CALL(tmp, H5Pset_create_intermediate_group, lcpl, 1);
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
                                    a.is_integer ? H5T_STD_I64LE : H5T_IEEE_F64LE, space, lcpl, dcpl, H5P_DEFAULT);
      write_u64_attribute(datasets[i], "checksum", checksums[i], tmp);
      write_string_attribute(datasets[i], "checksum_algorithm", k_rowsum_algorithm, tmp);
    }
  });
  agreed_step<std::runtime_error>(comm, prefix, [&] { SPOTRUN_H5_CALL(tmp, H5Fflush, file, H5F_SCOPE_GLOBAL); });
  // Bulk data.
  write_text(comm, deck, tmp, prefix);
  write_text(comm, physics, tmp, prefix);
  for (std::size_t i = 0; i < state.arrays.size(); ++i) {
    const StateArray& a = state.arrays[i];
    const void* data = a.is_integer ? static_cast<const void*>(a.i64.data()) : static_cast<const void*>(a.f64.data());
    transfer_rows<std::runtime_error>(comm, prefix, tmp, datasets[i], a.is_integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE,
                                      true, const_cast<void*>(data), a.first_row, a.rows, a.inner, a.row_size(), 8);
  }
  // MPI_File_sync on every rank (HDF5 syncs on flush, not on close).
  agreed_step<std::runtime_error>(comm, prefix, [&] { SPOTRUN_H5_CALL(tmp, H5Fflush, file, H5F_SCOPE_GLOBAL); });
  // Read back what was written before trusting it: some MPI-IO layers report success for collective
  // writes that failed (Open MPI 4.1's OMPIO on a full file system), which would commit a file with
  // holes. Each rank reads its own rows with pread (after the MPI_File_sync above) and compares them.
  std::vector<ReadBack> items;
  agreed_step<std::runtime_error>(comm, prefix, [&] {
    if (comm.is_root())
      for (TextDataset* t : {&deck, &physics})
        items.push_back({"/meta/" + std::string(t == &deck ? "deck" : "physics"), dataset_offset(t->dset, tmp),
                         t->text->c_str(), t->text->size() + 1});
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
    for (auto& d : datasets) d.close("H5Dclose", tmp);
  });
  agreed_step<std::runtime_error>(comm, prefix, [&] { file.close("H5Fclose", tmp); });
}

// Bytes the checkpoint will take on disk, roughly: data, texts, room for the metadata, and the user block
// of the manifest.
std::uint64_t expected_file_bytes(const CheckpointMeta& meta, const SolverState& state) {
  std::uint64_t bytes = (std::uint64_t(64) << 10) + meta.deck.size() + meta.physics.size();
  for (const auto& a : state.arrays) bytes += a.global_rows * a.row_size() * 8 + 4096;
  return bytes + manifest_userblock_bytes(bytes);
}

// Free bytes for unprivileged writers on the file system of `dir`, or -1 when it does not say.
std::int64_t free_bytes(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0 || fs.f_blocks == 0) return -1;
  return static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
}

void fsync_path(const std::string& p, bool directory) {
  const int fd = ::open(p.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw std::runtime_error("cannot open '" + p + "' to sync it: " + errno_text(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync of '" + p + "' failed: " + errno_text(err));
}

// ---- reading ------------------------------------------------------------------------------------------

struct OpenedFile {
  H5Handle file;
  std::uint64_t size = 0;  // bytes of the file
  FileManifest manifest;
};

// Opens `path` for reading on every rank, or throws InputError on every rank. Every byte is verified
// against the whole-file manifest before HDF5 is handed the file.
OpenedFile open_for_read(const comm::Communicator& comm, const std::string& path) {
  const std::string prefix = "checkpoint '" + path + "': ";
  OpenedFile f;
  f.manifest = verify_file(comm, path);
  f.size = f.manifest.file_size;
  agreed_step<InputError>(comm, prefix, [&] {
    H5Handle fapl = mpio_fapl(comm, path, 0);
    try {
      f.file = SPOTRUN_H5_OPEN(path, H5Fclose, H5Fopen, path.c_str(), H5F_ACC_RDONLY, fapl);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("damaged or truncated HDF5 file: ") + e.what());
    }
  });
  return f;
}

CheckpointMeta read_meta_attributes(hid_t file, const std::string& path) {
  const std::string root = "/";
  const htri_t has_format = SPOTRUN_H5_CALL(path, H5Aexists, file, "format");
  if (!has_format) throw std::runtime_error("not a spotrun checkpoint (the root group has no 'format' attribute)");
  const std::string format = read_string_attribute(file, "format", root, path);
  if (format != k_format)
    throw std::runtime_error("not a spotrun checkpoint (format is '" + format + "', expected '" + k_format + "')");
  const std::int64_t version = read_i64_attribute(file, "format_version", root, path);
  if (version != k_format_version)
    throw std::runtime_error("format version " + std::to_string(version) + " is not supported (this build reads version " +
                             std::to_string(k_format_version) + ")");
  CheckpointMeta m;
  m.solver = read_string_attribute(file, "solver", root, path);
  m.step = read_i64_attribute(file, "step", root, path);
  m.time = read_f64_attribute(file, "time", root, path);
  m.units = read_string_attribute(file, "units", root, path);
  m.version = read_string_attribute(file, "spotrun_version", root, path);
  m.git_hash = read_string_attribute(file, "git_hash", root, path);
  const std::int64_t nranks = read_i64_attribute(file, "nranks", root, path);
  if (nranks < 1 || nranks > std::numeric_limits<int>::max())
    throw std::runtime_error(attribute_where("nranks", root) + " is " + std::to_string(nranks) + ", not a rank count");
  m.nranks = static_cast<int>(nranks);
  return m;
}

// Reads a text dataset of /meta on rank 0 (checksum verified), broadcasts it.
std::string read_text_dataset(const comm::Communicator& comm, hid_t file, const std::string& name, std::uint64_t file_size,
                              const std::string& path) {
  std::string text;
  agreed_step<InputError>(comm, "checkpoint '" + path + "': ", [&] {
    if (!comm.is_root()) return;
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
    text.assign(buffer.c_str(), strnlen(buffer.c_str(), size));
    const std::uint64_t stored = read_checksum_attribute(dset, name, path);
    const std::string algorithm = read_string_attribute(dset, "checksum_algorithm", name, path);
    if (algorithm != k_text_algorithm)
      throw std::runtime_error("dataset '" + name + "' uses checksum algorithm '" + algorithm + "', expected '" +
                               k_text_algorithm + "'");
    const std::uint64_t computed = text_checksum(name, text);
    if (stored != computed)
      throw std::runtime_error("checksum mismatch in dataset '" + name + "' (stored " + hex64(stored) + ", computed " +
                               hex64(computed) + "): the file is damaged");
  });
  return comm.broadcast(text);
}

// Names of the attributes of an object (any order HDF5 gives; sorted by name).
herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

void read_state_scalars(hid_t file, const std::string& path, SolverState& s) {
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
      s.strings[n] = read_string_from_attribute(a, where, path);
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
};

// Opens dataset `name` and checks it; `expected` (may be null) adds type, inner shape and row checks.
// Throws std::runtime_error describing the problem.
DatasetPlan plan_dataset(hid_t file, const std::string& path, std::uint64_t file_size, const std::string& name,
                         const StateArray* expected) {
  DatasetPlan p;
  p.name = name;
  // Every component of the path must exist as a link before H5Dopen is asked.
  for (std::size_t pos = name.find('/', 1);; pos = name.find('/', pos + 1)) {
    const std::string part = pos == std::string::npos ? name : name.substr(0, pos);
    if (!SPOTRUN_H5_CALL(path, H5Lexists, file, part.c_str(), H5P_DEFAULT))
      throw std::runtime_error("dataset '" + name + "' is missing");
    if (pos == std::string::npos) break;
  }
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
    if (p.inner != expected->inner || (rows_fixed && p.global_rows != expected->global_rows))
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
  }
  p.stored_checksum = read_checksum_attribute(p.dset, "dataset '" + name + "'", path);
  const std::string algorithm = read_string_attribute(p.dset, "checksum_algorithm", "dataset '" + name + "'", path);
  if (algorithm != k_rowsum_algorithm)
    throw std::runtime_error("dataset '" + name + "' uses checksum algorithm '" + algorithm + "', this build knows '" +
                             k_rowsum_algorithm + "'");
  return p;
}

// Reads the even block of rows of every rank into `out` (values) and returns the global checksum
// (collective). Failures of the transfer are InputError on every rank.
std::uint64_t read_block(const comm::Communicator& comm, const std::string& path, DatasetPlan& p, std::uint64_t first,
                         std::uint64_t count, void* out) {
  transfer_rows<InputError>(comm, "checkpoint '" + path + "': dataset '" + p.name + "': ", path, p.dset,
                            p.is_integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, false, out, first, count, p.inner,
                            p.row_size, 8);
  std::uint64_t local = RowHasher::rowsum(out, count, p.row_size * 8, first), global = 0;
  SPOTRUN_MPI_CHECK(MPI_Allreduce(&local, &global, 1, MPI_UINT64_T, MPI_SUM, comm.mpi()));
  return global;  // the row sum of this block; the caller adds name_hash() once per dataset
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

namespace impl {
// Test hook: the free-space check before a write (on by default). Tests that fill a file system in the
// middle of a write turn it off; nothing else should.
bool g_check_free_space = true;
}  // namespace impl

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
      const std::int64_t have = free_bytes(dir);
      if (impl::g_check_free_space && have >= 0 && static_cast<std::uint64_t>(have) < need)
        throw std::runtime_error("not enough space on the file system of '" + dir + "': the checkpoint needs about " +
                                 std::to_string(need) + " bytes, " + std::to_string(have) + " are free");
    });
    writing = true;
    const std::uint64_t userblock = manifest_userblock_bytes(expected_file_bytes(meta, state));
    write_file(comm, tmp, meta, state, global, userblock, "");
    // Every byte of the closed file hashed into the manifest in its user block.
    seal_file(comm, tmp, userblock, meta.solver, meta.step);
    writing = false;

    // Commit: the data is on disk before the name points at it, and the name before we return.
    agreed_step<std::runtime_error>(comm, "", [&] {
      if (!comm.is_root()) return;
      fsync_path(tmp, false);
      fsync_path(dir, true);
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

// ---- reading: one verified, open file --------------------------------------------------------------------

struct CheckpointReader::Impl {
  const comm::Communicator& comm;
  std::string path;
  std::string prefix;
  OpenedFile f;
  CheckpointMeta meta;
};

CheckpointReader::CheckpointReader(const comm::Communicator& comm, const std::string& path)
    : m_impl(std::make_unique<Impl>(Impl{comm, path, "checkpoint '" + path + "': ", {}, {}})) {
  QuietHdf5Errors quiet;
  Impl& r = *m_impl;
  r.f = open_for_read(comm, path);
  agreed_step<InputError>(comm, r.prefix, [&] {
    r.meta = read_meta_attributes(r.f.file, path);
    // The manifest repeats two attributes (to order files without parsing them); they must agree.
    if (r.meta.solver != r.f.manifest.solver || r.meta.step != r.f.manifest.step)
      throw std::runtime_error("the manifest says solver '" + r.f.manifest.solver + "' step " +
                               std::to_string(r.f.manifest.step) + ", the attributes solver '" + r.meta.solver + "' step " +
                               std::to_string(r.meta.step) + ": the file is damaged or crafted");
    if (r.meta.step < 0) throw std::runtime_error("attribute 'step' of / is " + std::to_string(r.meta.step) + ", below 0");
    if (!std::isfinite(r.meta.time)) throw std::runtime_error("attribute 'time' of / is not finite");
  });
  r.meta.deck = read_text_dataset(comm, r.f.file, "/meta/deck", r.f.size, path);
  r.meta.physics = read_text_dataset(comm, r.f.file, "/meta/physics", r.f.size, path);
}

CheckpointReader::~CheckpointReader() {
  if (!m_impl) return;
  QuietHdf5Errors quiet;
  m_impl->f.file.reset();
}

const CheckpointMeta& CheckpointReader::meta() const { return m_impl->meta; }
const std::string& CheckpointReader::path() const { return m_impl->path; }

SolverState CheckpointReader::read(const std::vector<StateArray>& expected) {
  QuietHdf5Errors quiet;
  Impl& r = *m_impl;
  const comm::Communicator& comm = r.comm;
  const std::string& path = r.path;
  const std::string& prefix = r.prefix;
  {
    std::set<std::string> names;
    for (const auto& e : expected)
      if (!names.insert(e.name).second) throw std::invalid_argument("read_checkpoint: '" + e.name + "' expected twice");
  }
  SolverState state;
  std::vector<DatasetPlan> plans;
  agreed_step<InputError>(comm, prefix, [&] {
    state.solver = r.meta.solver;
    read_state_scalars(r.f.file, path, state);
    for (const auto& e : expected) plans.push_back(plan_dataset(r.f.file, path, r.f.size, e.name, &e));
  });
  agreed_step<InputError>(comm, prefix, [&] {
    for (std::size_t i = 0; i < expected.size(); ++i) {
      StateArray a;
      a.name = expected[i].name;
      a.inner = plans[i].inner;
      a.is_integer = plans[i].is_integer;
      a.global_rows = plans[i].global_rows;
      block_of(a.global_rows, comm.size(), comm.rank(), a.first_row, a.rows);
      if (a.is_integer)
        a.i64.resize(a.rows * plans[i].row_size);
      else
        a.f64.resize(a.rows * plans[i].row_size);
      state.arrays.push_back(std::move(a));
    }
  });
  for (std::size_t i = 0; i < expected.size(); ++i) {
    StateArray& a = state.arrays[i];
    void* out = a.is_integer ? static_cast<void*>(a.i64.data()) : static_cast<void*>(a.f64.data());
    const std::uint64_t computed = read_block(comm, path, plans[i], a.first_row, a.rows, out) + name_hash(a.name);
    if (computed != plans[i].stored_checksum)
      throw InputError(prefix + "checksum mismatch in dataset '" + a.name + "' (stored " + hex64(plans[i].stored_checksum) +
                       ", computed " + hex64(computed) + "): the file is damaged");
    agreed_step<InputError>(comm, prefix, [&] { plans[i].dset.close("H5Dclose", path); });
  }
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
  report.lines.push_back("format: " + std::string(k_format) + " version " + std::to_string(k_format_version));
  char time_text[32];
  std::snprintf(time_text, sizeof time_text, "%.17g", r.meta.time);
  report.lines.push_back("meta: solver=" + r.meta.solver + " step=" + std::to_string(r.meta.step) + " time=" + time_text +
                         " units=" + r.meta.units + " nranks=" + std::to_string(r.meta.nranks) +
                         " spotrun_version=" + r.meta.version + " git_hash=" + r.meta.git_hash);
  report.lines.push_back("/meta/deck: " + std::to_string(r.meta.deck.size()) + " bytes, checksum ok");
  report.lines.push_back("/meta/physics: " + std::to_string(r.meta.physics.size()) + " bytes, checksum ok");
  SolverState scalars;
  std::string failure = agreed_failure(comm, [&] { read_state_scalars(f.file, path, scalars); });
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
    failure = agreed_failure(comm, [&] { p = plan_dataset(f.file, path, f.size, name, nullptr); });
    if (!failure.empty()) {
      bad(name + ": BAD: " + failure);
      continue;
    }
    const std::string head = name + ": " + (p.is_integer ? "int64 " : "float64 ") + shape_text(p.global_rows, p.inner);
    std::uint64_t first = 0, count = 0;
    block_of(p.global_rows, comm.size(), comm.rank(), first, count);
    // Verify in slices of at most k_round_bytes per rank.
    const std::uint64_t row_bytes = p.row_size * 8;
    const std::uint64_t slice = std::max<std::uint64_t>(1, row_bytes ? k_round_bytes / row_bytes : count + 1);
    std::uint64_t computed = name_hash(name);
    try {
      agreed_step<InputError>(comm, "", [&] { buffer.resize(std::min(slice, count) * row_bytes); });
      std::uint64_t my_slices = (count + slice - 1) / slice, slices = 0;
      SPOTRUN_MPI_CHECK(MPI_Allreduce(&my_slices, &slices, 1, MPI_UINT64_T, MPI_MAX, comm.mpi()));
      for (std::uint64_t s = 0; s < std::max<std::uint64_t>(slices, 1); ++s) {
        const std::uint64_t done = s * slice;
        const std::uint64_t n = done < count ? std::min(slice, count - done) : 0;
        computed += read_block(comm, path, p, first + done, n, buffer.data());
      }
    } catch (const InputError& e) {
      bad(head + ": BAD: " + e.what());
      continue;
    }
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
