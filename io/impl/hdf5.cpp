#include "hdf5.hpp"

#include <cstring>
#include <vector>

namespace spotrun::io::impl {
namespace {

herr_t collect_error(unsigned n, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (n < 2 && err && err->desc && *err->desc) out->emplace_back(err->desc);
  return 0;
}

}  // namespace

std::string hdf5_error_text() {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (messages.empty()) return "no HDF5 error message";
  std::string text = messages[0];
  if (messages.size() > 1 && messages[1] != messages[0]) text += " (" + messages[1] + ")";
  return text;
}

// ---- property lists ---------------------------------------------------------------------------------

H5Handle dxpl_collective(const std::string& file) {
  H5Handle dxpl = SPOTRUN_H5_OPEN(file, H5Pclose, H5Pcreate, H5P_DATASET_XFER);
  SPOTRUN_H5_CALL(file, H5Pset_dxpl_mpio, dxpl, H5FD_MPIO_COLLECTIVE);
  return dxpl;
}

H5Handle mpio_fapl(const comm::Communicator& comm, const std::string& file) {
  H5Handle fapl = SPOTRUN_H5_OPEN(file, H5Pclose, H5Pcreate, H5P_FILE_ACCESS);
  SPOTRUN_H5_CALL(file, H5Pset_fapl_mpio, fapl, comm.mpi(), MPI_INFO_NULL);
  return fapl;
}

H5Handle posix_read_fapl(const std::string& file) {
  H5Handle fapl = SPOTRUN_H5_OPEN(file, H5Pclose, H5Pcreate, H5P_FILE_ACCESS);
  SPOTRUN_H5_CALL(file, H5Pset_fapl_sec2, fapl);
  // A committed checkpoint is never written again: no lock to take (parallel file systems often have none).
  SPOTRUN_H5_CALL(file, H5Pset_file_locking, fapl, false, true);
  return fapl;
}

// ---- attributes -------------------------------------------------------------------------------------

H5Handle vlen_string_type(const std::string& file) {
  H5Handle t = SPOTRUN_H5_OPEN(file, H5Tclose, H5Tcopy, H5T_C_S1);
  SPOTRUN_H5_CALL(file, H5Tset_size, t, H5T_VARIABLE);
  SPOTRUN_H5_CALL(file, H5Tset_cset, t, H5T_CSET_UTF8);
  return t;
}

H5Handle fixed_string_type(std::size_t size, const std::string& file) {
  H5Handle t = SPOTRUN_H5_OPEN(file, H5Tclose, H5Tcopy, H5T_C_S1);
  SPOTRUN_H5_CALL(file, H5Tset_size, t, size);
  SPOTRUN_H5_CALL(file, H5Tset_strpad, t, H5T_STR_NULLTERM);
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
void write_fixed_string_attribute(hid_t obj, const std::string& name, const std::string& value,
                                  const std::string& file) {
  H5Handle type = fixed_string_type(value.size() + 1, file);
  write_attribute(obj, name, type, type, value.c_str(), file);
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

std::string attribute_where(const std::string& name, const std::string& object) {
  return "attribute '" + name + "' of " + object;
}

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

std::string read_string_from_attribute(OpenAttribute& a, const std::string& where, const std::string& file,
                                       StringKinds strings) {
  if (a.cls != H5T_STRING) throw std::runtime_error(where + " is not a string");
  const htri_t is_vlen = SPOTRUN_H5_CALL(file, H5Tis_variable_str, a.type);
  if (is_vlen) {
    if (strings != StringKinds::fixed_or_variable)
      throw std::runtime_error(where + " is a variable-length string, where this format stores fixed-length strings only");
    H5Handle mem = vlen_string_type(file);
    SPOTRUN_H5_CALL(file, H5Tset_cset, mem, H5Tget_cset(a.type));
    char* p = nullptr;
    SPOTRUN_H5_CALL(file, H5Aread, a.attr, mem, &p);
    std::string value = p ? std::string(p) : std::string();
    if (p) H5free_memory(p);
    return value;
  }
  const std::size_t size = H5Tget_size(a.type);
  if (size == 0 || size > k_max_string_attribute)
    throw std::runtime_error(where + " claims a string of " + std::to_string(size) + " bytes (at most " +
                             std::to_string(k_max_string_attribute) + " are read)");
  // Read as a null-padded string of the same size: the value comes back whatever padding the file
  // declares, and the buffer has one more byte than HDF5 may write.
  H5Handle mem = fixed_string_type(size, file);
  SPOTRUN_H5_CALL(file, H5Tset_strpad, mem, H5T_STR_NULLPAD);
  SPOTRUN_H5_CALL(file, H5Tset_cset, mem, H5Tget_cset(a.type));
  std::string buffer(size + 1, '\0');
  SPOTRUN_H5_CALL(file, H5Aread, a.attr, mem, buffer.data());
  return std::string(buffer.data(), strnlen(buffer.data(), size));
}

std::string read_string_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file,
                                  StringKinds strings) {
  auto a = open_scalar_attribute(obj, name, object, file);
  return read_string_from_attribute(a, attribute_where(name, object), file, strings);
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

std::uint64_t read_u64_attribute(hid_t obj, const std::string& name, const std::string& object, const std::string& file) {
  auto a = open_scalar_attribute(obj, name, object, file);
  if (a.cls != H5T_INTEGER || H5Tget_size(a.type) != 8 || H5Tget_sign(a.type) != H5T_SGN_NONE)
    throw std::runtime_error(attribute_where(name, object) + " is not an unsigned 64-bit integer");
  std::uint64_t v = 0;
  SPOTRUN_H5_CALL(file, H5Aread, a.attr, H5T_NATIVE_UINT64, &v);
  return v;
}

}  // namespace spotrun::io::impl
