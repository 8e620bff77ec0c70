#include "field_output.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "comm/agreed_step.hpp"
#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "io/impl/hdf5.hpp"

namespace fs = std::filesystem;

namespace spotrun::io {

using comm::agreed_step;
using impl::H5Handle;
using impl::QuietHdf5Errors;

namespace {

std::string step_text(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%09lld", static_cast<long long>(step));
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
    << "   <Time Value=\"" << exact(time) << "\"/>\n"
    << "   <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << dims << "\"/>\n"
    << "   <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
    << "    <DataItem Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">0 0 0</DataItem>\n"
    << "    <DataItem Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">"
    << exact(lengths[2] / static_cast<double>(n[2])) << " " << exact(lengths[1] / static_cast<double>(n[1])) << " "
    << exact(lengths[0] / static_cast<double>(n[0])) << "</DataItem>\n"
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
  agreed_step<RunError>(comm, "", [&] {
    if (!comm.is_root()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create directory '" + dir.string() + "': " + ec.message());
  });

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
  QuietHdf5Errors quiet;
  const std::string prefix = "writing field " + h5.string() + ": ";
  const std::string file_name = tmp.string();
  H5Handle file;
  agreed_step<RunError>(comm, prefix, [&] {
    H5Handle fapl = impl::mpio_fapl(comm, file_name);
    file = SPOTRUN_H5_OPEN(file_name, H5Fclose, H5Fcreate, file_name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  });
  agreed_step<RunError>(comm, prefix, [&] {
    const hsize_t dims[4] = {nz, ny, nx, nc};
    H5Handle fspace = SPOTRUN_H5_OPEN(file_name, H5Sclose, H5Screate_simple, rank, dims, nullptr);
    H5Handle dset = SPOTRUN_H5_OPEN(file_name, H5Dclose, H5Dcreate2, file, ("/" + name).c_str(), H5T_NATIVE_DOUBLE,
                                    fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t start[4] = {0, 0, f.first_row, 0};
    const hsize_t count[4] = {nz, ny, f.rows, nc};
    H5Handle mspace;
    if (f.rows > 0) {
      SPOTRUN_H5_CALL(file_name, H5Sselect_hyperslab, fspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
      mspace = SPOTRUN_H5_OPEN(file_name, H5Sclose, H5Screate_simple, rank, count, nullptr);
    } else {
      SPOTRUN_H5_CALL(file_name, H5Sselect_none, fspace);
      const hsize_t one = 1;
      mspace = SPOTRUN_H5_OPEN(file_name, H5Sclose, H5Screate_simple, 1, &one, nullptr);
      SPOTRUN_H5_CALL(file_name, H5Sselect_none, mspace);
    }
    H5Handle dxpl = impl::dxpl_collective(file_name);
    static const double nothing = 0;  // HDF5 wants a buffer even for an empty selection
    const double* values = local.empty() ? &nothing : local.data();
    SPOTRUN_H5_CALL(file_name, H5Dwrite, dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, values);
    impl::write_attribute(dset, "time", H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, &time, file_name);
    const long long s = step;
    impl::write_attribute(dset, "step", H5T_NATIVE_LLONG, H5T_NATIVE_LLONG, &s, file_name);
    dset.close("H5Dclose", file_name);
    file.close("H5Fclose", file_name);
  });

  // The root renames the finished file and updates the XDMF descriptions.
  agreed_step<RunError>(comm, prefix, [&] {
    if (!comm.is_root()) return;
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
      list << st << " " << exact(t) << "\n";
      const std::string other = name + "_" + step_text(st);
      grids << xdmf_grid(name, t, n, lengths, f.components, "fields/" + other + ".h5:/" + name);
    }
    write_text_atomically(series, list.str());
    write_text_atomically(fs::path(outdir) / (name + ".xmf"),
                          std::string(k_xdmf_head) + "  <Grid Name=\"" + name +
                              "_series\" GridType=\"Collection\" CollectionType=\"Temporal\">\n" + grids.str() +
                              "  </Grid>\n" + k_xdmf_tail);
  });
}

void write_spectrum(const comm::Communicator& comm, const std::string& path, std::int64_t step, double time,
                    const std::vector<double>& k, const std::vector<double>& energy) {
  agreed_step<RunError>(comm, "writing spectrum " + path + ": ", [&] {
    if (!comm.is_root()) return;
    QuietHdf5Errors quiet;
    if (k.size() != energy.size()) throw std::invalid_argument("k and E differ in length");
    std::error_code ec;
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) throw std::runtime_error("cannot create directory '" + parent.string() + "': " + ec.message());
    H5Handle file;
    if (fs::exists(path, ec))
      file = SPOTRUN_H5_OPEN(path, H5Fclose, H5Fopen, path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    else
      file = SPOTRUN_H5_OPEN(path, H5Fclose, H5Fcreate, path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    const std::string group = "step_" + step_text(step);
    if (SPOTRUN_H5_CALL(path, H5Lexists, file, group.c_str(), H5P_DEFAULT) > 0)
      SPOTRUN_H5_CALL(path, H5Ldelete, file, group.c_str(), H5P_DEFAULT);
    H5Handle g = SPOTRUN_H5_OPEN(path, H5Gclose, H5Gcreate2, file, group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t n = k.size();
    const std::pair<const char*, const std::vector<double>*> sets[2] = {{"k", &k}, {"E", &energy}};
    for (const auto& [dname, data] : sets) {
      H5Handle space = SPOTRUN_H5_OPEN(path, H5Sclose, H5Screate_simple, 1, &n, nullptr);
      H5Handle d = SPOTRUN_H5_OPEN(path, H5Dclose, H5Dcreate2, g, dname, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT,
                                   H5P_DEFAULT, H5P_DEFAULT);
      SPOTRUN_H5_CALL(path, H5Dwrite, d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data->data());
      d.close("H5Dclose", path);
    }
    impl::write_attribute(g, "time", H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, &time, path);
    const long long s = step;
    impl::write_attribute(g, "step", H5T_NATIVE_LLONG, H5T_NATIVE_LLONG, &s, path);
    g.close("H5Gclose", path);
    file.close("H5Fclose", path);
  });
}

}  // namespace spotrun::io
