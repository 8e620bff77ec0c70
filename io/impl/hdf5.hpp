#pragma once
// HDF5 for spotrun's files (checkpoints, fields, spectra): every call checked and turned into an
// exception naming the call and the file, identifiers owned by RAII handles, MPI-IO property lists, and
// scalar attributes written and read back with their types checked.
#include <hdf5.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "comm/communicator.hpp"

namespace spotrun::io::impl {

// The innermost messages of HDF5's default error stack (where the error was detected, then the call
// around it), and clears it.
std::string hdf5_error_text();

// Throws std::runtime_error naming the call and the file when an HDF5 call returns a negative value.
template <class T>
T h5_check(T ret, const char* call, const std::string& file) {
  if (ret < 0) throw std::runtime_error(std::string(call) + " on '" + file + "' failed: " + hdf5_error_text());
  return ret;
}
#define SPOTRUN_H5_CALL(file, fn, ...) ::spotrun::io::impl::h5_check(fn(__VA_ARGS__), #fn, file)

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
inline H5Handle h5_open_checked(hid_t id, H5Handle::Closer closer, const char* call, const std::string& file) {
  return H5Handle(h5_check(id, call, file), closer);
}
#define SPOTRUN_H5_OPEN(file, closer, fn, ...) ::spotrun::io::impl::h5_open_checked(fn(__VA_ARGS__), closer, #fn, file)

// ---- property lists ---------------------------------------------------------------------------------

// A transfer property list for collective MPI-IO transfers.
H5Handle dxpl_collective(const std::string& file);
// A file access property list for MPI-IO on the ranks of `comm`.
H5Handle mpio_fapl(const comm::Communicator& comm, const std::string& file);
// A file access property list for reading a file on one rank by itself (POSIX reads, no MPI-IO, no file
// lock): each rank of a reader opens a checkpoint this way, its metadata is read independently anyway.
H5Handle posix_read_fapl(const std::string& file);

// ---- attributes -------------------------------------------------------------------------------------

// A variable-length UTF-8 string type (H5MD attributes; checkpoints of format 2). Its values live in the
// file's global heap, which HDF5 trusts when it reads them back.
H5Handle vlen_string_type(const std::string& file);
// A fixed-length, null-terminated UTF-8 string type of `size` bytes (at least 1): the value is stored in
// the attribute or dataset itself, no heap.
H5Handle fixed_string_type(std::size_t size, const std::string& file);

// Creates attribute `name` of `obj` holding one value (of file type `file_type`, given in `mem_type`).
void write_attribute(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type, const void* value,
                     const std::string& file);
// A variable-length string (vlen_string_type).
void write_string_attribute(hid_t obj, const std::string& name, const std::string& value, const std::string& file);
// A fixed-length string of value.size() + 1 bytes (fixed_string_type).
void write_fixed_string_attribute(hid_t obj, const std::string& name, const std::string& value, const std::string& file);
void write_i64_attribute(hid_t obj, const std::string& name, std::int64_t value, const std::string& file);
void write_u64_attribute(hid_t obj, const std::string& name, std::uint64_t value, const std::string& file);
void write_f64_attribute(hid_t obj, const std::string& name, double value, const std::string& file);

// "attribute 'step' of /" for messages.
std::string attribute_where(const std::string& name, const std::string& object);

// An attribute that must exist and hold one value; returns it open, with its type.
struct OpenAttribute {
  H5Handle attr;
  H5Handle type;
  H5T_class_t cls = H5T_NO_CLASS;
};
OpenAttribute open_scalar_attribute(hid_t obj, const std::string& name, const std::string& object,
                                    const std::string& file);

// Readers of one-value attributes of `obj` (named `object` in messages); each checks the stored type and
// throws std::runtime_error saying what is wrong (missing, several values, another type).
//
// Strings: a fixed-length string is read with its size taken from the datatype and checked against
// k_max_string_attribute bytes; the value ends at the first NUL or at that size, whichever comes first
// (no terminator is trusted). A variable-length string is read only when `strings` allows it
// (StringKinds::fixed_or_variable); HDF5 then follows the reference into the global heap, which it does
// not check: a crafted heap can crash it.
inline constexpr std::size_t k_max_string_attribute = std::size_t(1) << 20;
enum class StringKinds { fixed_only, fixed_or_variable };
std::string read_string_from_attribute(OpenAttribute& a, const std::string& where, const std::string& file,
                                       StringKinds strings);
std::string read_string_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file,
                                  StringKinds strings);
std::int64_t read_i64_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file);
double read_f64_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file);
std::uint64_t read_u64_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file);

}  // namespace spotrun::io::impl
