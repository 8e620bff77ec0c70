#include "field_output.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "comm/errors.hpp"

namespace fs = std::filesystem;

namespace spotrun::io {
namespace {

// Turns HDF5's automatic error printing off for a scope (our checks report the failing call instead).
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &m_func, &m_data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, m_func, m_data); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t m_func = nullptr;
  void* m_data = nullptr;
};

// An HDF5 identifier owned by one object, closed once with its close function.
class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Closer close, const std::string& call) : m_id(id), m_close(close) {
    if (id < 0) throw std::runtime_error(call + " failed");
  }
  ~H5Id() { reset(); }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  H5Id(H5Id&& o) noexcept : m_id(o.m_id), m_close(o.m_close) { o.m_id = -1; }
  H5Id& operator=(H5Id&& o) noexcept {
    if (this != &o) {
      reset();
      m_id = o.m_id;
      m_close = o.m_close;
      o.m_id = -1;
    }
    return *this;
  }
  hid_t get() const { return m_id; }
  // Closes now and checks the result (closing a file flushes it: its failure matters).
  void close(const std::string& call) {
    if (m_id < 0) return;
    const herr_t rc = m_close(m_id);
    m_id = -1;
    if (rc < 0) throw std::runtime_error(call + " failed");
  }

 private:
  void reset() {
    if (m_id >= 0) m_close(m_id);
    m_id = -1;
  }
  hid_t m_id = -1;
  Closer m_close = nullptr;
};

void check(herr_t rc, const std::string& call) {
  if (rc < 0) throw std::runtime_error(call + " failed");
}

void write_scalar_attribute(hid_t obj, const char* name, hid_t type, const void* value) {
  H5Id space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
  H5Id attr(H5Acreate2(obj, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
            std::string("H5Acreate2(") + name + ")");
  check(H5Awrite(attr.get(), type, value), std::string("H5Awrite(") + name + ")");
  attr.close(std::string("H5Aclose(") + name + ")");
}

std::string step_text(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%09lld", static_cast<long long>(step));
  return buf;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Writes text to path through path.tmp and a rename (readers never see a partial file).
void write_text_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + tmp.string() + "'");
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write '" + tmp.string() + "'");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw std::runtime_error("cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message());
}

const char* k_xdmf_head = "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"2.0\">\n <Domain>\n";
const char* k_xdmf_tail = " </Domain>\n</Xdmf>\n";

}  // namespace

std::string xdmf_grid(const std::string& name, double time, const std::array<std::uint64_t, 3>& n,
                      const std::array<double, 3>& lengths, int components, const std::string& h5_ref) {
  // XDMF lists dimensions slowest first (z y x, x fastest) and the origin and spacing in the same order.
  std::ostringstream s;
  const std::string dims = std::to_string(n[2]) + " " + std::to_string(n[1]) + " " + std::to_string(n[0]);
  s << "  <Grid Name=\"" << name << "\" GridType=\"Uniform\">\n"
    << "   <Time Value=\"" << number(time) << "\"/>\n"
    << "   <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << dims << "\"/>\n"
    << "   <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
    << "    <DataItem Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">0 0 0</DataItem>\n"
    << "    <DataItem Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">"
    << number(lengths[2] / static_cast<double>(n[2])) << " " << number(lengths[1] / static_cast<double>(n[1])) << " "
    << number(lengths[0] / static_cast<double>(n[0])) << "</DataItem>\n"
    << "   </Geometry>\n"
    << "   <Attribute Name=\"" << name << "\" AttributeType=\"" << (components == 1 ? "Scalar" : "Vector")
    << "\" Center=\"Node\">\n"
    << "    <DataItem Dimensions=\"" << dims << (components == 1 ? "" : " " + std::to_string(components))
    << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5_ref << "</DataItem>\n"
    << "   </Attribute>\n"
    << "  </Grid>\n";
  return s.str();
}

void write_field(const comm::Communicator& comm, const std::string& outdir, const std::string& name,
                 std::int64_t step, double time, const std::array<double, 3>& lengths, const FieldPlanes& f) {
  const fs::path dir = fs::path(outdir) / "fields";
  const std::string stem = name + "_" + step_text(step);
  const fs::path h5 = dir / (stem + ".h5");
  const fs::path tmp = dir / (stem + ".h5.tmp");
  std::string error;
  if (comm.is_root()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) error = "cannot create directory '" + dir.string() + "': " + ec.message();
  }
  comm.agree<RunError>(error.empty(), error);

  const std::uint64_t nx = f.n[0], ny = f.n[1], nz = f.n[2];
  const auto nc = static_cast<std::uint64_t>(f.components);
  const int rank = f.components == 1 ? 3 : 4;
  // This rank's planes as (nz, ny, rows, components): x fastest among the grid axes.
  std::vector<double> local(static_cast<std::size_t>(f.rows * ny * nz * nc));
  for (std::uint64_t x = 0; x < f.rows; ++x)
    for (std::uint64_t y = 0; y < ny; ++y)
      for (std::uint64_t z = 0; z < nz; ++z)
        for (std::uint64_t c = 0; c < nc; ++c)
          local[((z * ny + y) * f.rows + x) * nc + c] = f.values[((x * ny + y) * nz + z) * nc + c];

  // Each phase ends in a collective verdict, so a rank that failed does not leave others in HDF5.
  QuietHdf5 quiet;
  H5Id fapl, file;
  try {
    fapl = H5Id(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate(file access)");
    check(H5Pset_fapl_mpio(fapl.get(), comm.mpi(), MPI_INFO_NULL), "H5Pset_fapl_mpio");
    file = H5Id(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose,
                "H5Fcreate('" + tmp.string() + "')");
  } catch (const std::exception& e) {
    error = e.what();
  }
  comm.agree<RunError>(error.empty(), "writing field " + h5.string() + ": " + error);
  try {
    const hsize_t dims[4] = {nz, ny, nx, nc};
    H5Id fspace(H5Screate_simple(rank, dims, nullptr), H5Sclose, "H5Screate_simple");
    H5Id dset(H5Dcreate2(file.get(), ("/" + name).c_str(), H5T_NATIVE_DOUBLE, fspace.get(), H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT),
              H5Dclose, "H5Dcreate2(/" + name + ")");
    const hsize_t start[4] = {0, 0, f.first_row, 0};
    const hsize_t count[4] = {nz, ny, f.rows, nc};
    H5Id mspace;
    if (f.rows > 0) {
      check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr), "H5Sselect_hyperslab");
      mspace = H5Id(H5Screate_simple(rank, count, nullptr), H5Sclose, "H5Screate_simple(memory)");
    } else {
      check(H5Sselect_none(fspace.get()), "H5Sselect_none");
      const hsize_t one = 1;
      mspace = H5Id(H5Screate_simple(1, &one, nullptr), H5Sclose, "H5Screate_simple(memory)");
      check(H5Sselect_none(mspace.get()), "H5Sselect_none(memory)");
    }
    H5Id dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate(transfer)");
    check(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    static const double nothing = 0;  // HDF5 wants a buffer even for an empty selection
    check(H5Dwrite(dset.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), dxpl.get(),
                   local.empty() ? &nothing : local.data()),
          "H5Dwrite(/" + name + ")");
    write_scalar_attribute(dset.get(), "time", H5T_NATIVE_DOUBLE, &time);
    const long long s = step;
    write_scalar_attribute(dset.get(), "step", H5T_NATIVE_LLONG, &s);
    dset.close("H5Dclose");
    file.close("H5Fclose('" + tmp.string() + "')");
  } catch (const std::exception& e) {
    error = e.what();
  }
  comm.agree<RunError>(error.empty(), "writing field " + h5.string() + ": " + error);

  // The root renames the finished file and updates the XDMF descriptions.
  if (comm.is_root()) {
    try {
      std::error_code ec;
      fs::rename(tmp, h5, ec);
      if (ec) throw std::runtime_error("cannot rename '" + tmp.string() + "': " + ec.message());
      const std::array<std::uint64_t, 3> n{nx, ny, nz};
      write_text_atomically(dir / (stem + ".xmf"), std::string(k_xdmf_head) +
                                                       xdmf_grid(name, time, n, lengths, f.components,
                                                                 stem + ".h5:/" + name) +
                                                       k_xdmf_tail);
      // The series: steps written so far (an earlier, interrupted run may have left later ones).
      const fs::path series = dir / (name + ".series");
      std::map<long long, double> steps;
      {
        std::ifstream in(series);
        long long st = 0;
        double t = 0;
        while (in >> st >> t)
          if (st < step) steps[st] = t;
      }
      steps[step] = time;
      std::ostringstream list, grids;
      for (const auto& [st, t] : steps) {
        list << st << " " << number(t) << "\n";
        const std::string other = name + "_" + step_text(st);
        grids << xdmf_grid(name, t, n, lengths, f.components, "fields/" + other + ".h5:/" + name);
      }
      write_text_atomically(series, list.str());
      write_text_atomically(fs::path(outdir) / (name + ".xmf"),
                            std::string(k_xdmf_head) + "  <Grid Name=\"" + name +
                                "_series\" GridType=\"Collection\" CollectionType=\"Temporal\">\n" + grids.str() +
                                "  </Grid>\n" + k_xdmf_tail);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  comm.agree<RunError>(error.empty(), "writing field " + h5.string() + ": " + error);
}

void write_spectrum(const comm::Communicator& comm, const std::string& path, std::int64_t step, double time,
                    const std::vector<double>& k, const std::vector<double>& energy) {
  std::string error;
  if (comm.is_root()) {
    QuietHdf5 quiet;
    try {
      if (k.size() != energy.size()) throw std::invalid_argument("k and E differ in length");
      std::error_code ec;
      const fs::path parent = fs::path(path).parent_path();
      if (!parent.empty()) fs::create_directories(parent, ec);
      if (ec) throw std::runtime_error("cannot create directory '" + parent.string() + "': " + ec.message());
      H5Id file;
      if (fs::exists(path, ec))
        file = H5Id(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose, "H5Fopen('" + path + "')");
      else
        file = H5Id(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose,
                    "H5Fcreate('" + path + "')");
      const std::string group = "step_" + step_text(step);
      const htri_t exists = H5Lexists(file.get(), group.c_str(), H5P_DEFAULT);
      if (exists < 0) throw std::runtime_error("H5Lexists(" + group + ") failed");
      if (exists > 0) check(H5Ldelete(file.get(), group.c_str(), H5P_DEFAULT), "H5Ldelete(" + group + ")");
      H5Id g(H5Gcreate2(file.get(), group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
             "H5Gcreate2(" + group + ")");
      const hsize_t n = k.size();
      const std::pair<const char*, const std::vector<double>*> sets[2] = {{"k", &k}, {"E", &energy}};
      for (const auto& [dname, data] : sets) {
        H5Id space(H5Screate_simple(1, &n, nullptr), H5Sclose, "H5Screate_simple");
        H5Id d(H5Dcreate2(g.get(), dname, H5T_NATIVE_DOUBLE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               H5Dclose, std::string("H5Dcreate2(") + dname + ")");
        check(H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data->data()),
              std::string("H5Dwrite(") + dname + ")");
        d.close("H5Dclose");
      }
      write_scalar_attribute(g.get(), "time", H5T_NATIVE_DOUBLE, &time);
      const long long s = step;
      write_scalar_attribute(g.get(), "step", H5T_NATIVE_LLONG, &s);
      g.close("H5Gclose");
      file.close("H5Fclose('" + path + "')");
    } catch (const std::exception& e) {
      error = "writing spectrum " + path + ": " + e.what();
    }
  }
  comm.agree<RunError>(error.empty(), error);
}

}  // namespace spotrun::io
