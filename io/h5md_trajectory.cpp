#include "h5md_trajectory.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "io/impl/hdf5.hpp"
#include "spotrun/version.hpp"

namespace spotrun::io {

using impl::H5Handle;
using impl::QuietHdf5Errors;

const std::vector<std::string> k_h5md_fields = {"position", "image", "velocity", "force", "species"};

namespace {

// Per-frame groups: the box edges and each time-dependent field; their value rows are atoms (but edges).
struct Series {
  std::string group;  // "/particles/all/position"
  int row_size;       // values per atom (per frame for the edges)
  bool integer;
  std::string unit;   // unit of the values in the run's units
  bool per_atom;
};

std::vector<Series> series_of(const std::vector<std::string>& fields, const H5mdUnits& u) {
  std::vector<Series> s{{"/particles/all/box/edges", 3, false, u.length, false}};
  for (const auto& f : fields) {
    if (f == "position") s.push_back({"/particles/all/position", 3, false, u.length, true});
    if (f == "image") s.push_back({"/particles/all/image", 3, true, "1", true});
    if (f == "velocity") s.push_back({"/particles/all/velocity", 3, false, u.length + " " + u.time + "-1", true});
    if (f == "force") s.push_back({"/particles/all/force", 3, false, u.energy + " " + u.length + "-1", true});
  }
  return s;
}

H5Handle make_group(hid_t parent, const std::string& name, const std::string& file) {
  return SPOTRUN_H5_OPEN(file, H5Gclose, H5Gcreate2, parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

// A dataset of frames: [0, unlimited) x inner, chunked by one frame.
void make_series_dataset(hid_t group, const char* name, hid_t type, const std::vector<hsize_t>& inner,
                         const std::string& file) {
  std::vector<hsize_t> dims{0}, max{H5S_UNLIMITED}, chunk{inner.empty() ? hsize_t{256} : hsize_t{1}};
  for (auto d : inner) {
    dims.push_back(d);
    max.push_back(d);
    chunk.push_back(std::max<hsize_t>(1, d));
  }
  H5Handle space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Screate_simple, static_cast<int>(dims.size()), dims.data(), max.data());
  H5Handle dcpl = SPOTRUN_H5_OPEN(file, H5Pclose, H5Pcreate, H5P_DATASET_CREATE);
  SPOTRUN_H5_CALL(file, H5Pset_chunk, dcpl, static_cast<int>(chunk.size()), chunk.data());
  H5Handle d = SPOTRUN_H5_OPEN(file, H5Dclose, H5Dcreate2, group, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
}

void string_array_attribute(hid_t obj, const char* name, const std::vector<std::string>& values, const std::string& file) {
  std::size_t len = 1;
  for (const auto& v : values) len = std::max(len, v.size());
  std::string buf(len * values.size(), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) std::copy(values[i].begin(), values[i].end(), buf.begin() + i * len);
  H5Handle type = SPOTRUN_H5_OPEN(file, H5Tclose, H5Tcopy, H5T_C_S1);
  SPOTRUN_H5_CALL(file, H5Tset_size, type, len);
  SPOTRUN_H5_CALL(file, H5Tset_strpad, type, H5T_STR_NULLPAD);
  const hsize_t n = values.size();
  H5Handle space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Screate_simple, 1, &n, nullptr);
  H5Handle a = SPOTRUN_H5_OPEN(file, H5Aclose, H5Acreate2, obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  SPOTRUN_H5_CALL(file, H5Awrite, a, type, buf.data());
}

void int_array_attribute(hid_t obj, const char* name, const std::vector<int>& values, const std::string& file) {
  const hsize_t n = values.size();
  H5Handle space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Screate_simple, 1, &n, nullptr);
  H5Handle a = SPOTRUN_H5_OPEN(file, H5Aclose, H5Acreate2, obj, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
  SPOTRUN_H5_CALL(file, H5Awrite, a, H5T_NATIVE_INT, values.data());
}

// A time-independent dataset `name` of `parent`, [global_rows] or [global_rows][width] of file type `type`,
// each rank writing its rows [first_row, first_row + rows) of int64 values (collective).
void write_block_dataset(hid_t parent, const char* name, hid_t type, std::uint64_t global_rows, int width,
                         std::uint64_t first_row, std::uint64_t rows, const std::int64_t* data, const std::string& f) {
  const int rank = width > 1 ? 2 : 1;
  const hsize_t dims[2] = {global_rows, static_cast<hsize_t>(width)};
  const hsize_t start[2] = {first_row, 0}, count[2] = {rows, static_cast<hsize_t>(width)};
  H5Handle space = SPOTRUN_H5_OPEN(f, H5Sclose, H5Screate_simple, rank, dims, nullptr);
  H5Handle d =
      SPOTRUN_H5_OPEN(f, H5Dclose, H5Dcreate2, parent, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Handle fs = SPOTRUN_H5_OPEN(f, H5Sclose, H5Dget_space, d);
  H5Handle ms = SPOTRUN_H5_OPEN(f, H5Sclose, H5Screate_simple, rank, count, nullptr);
  if (rows > 0) {
    SPOTRUN_H5_CALL(f, H5Sselect_hyperslab, fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
  } else {
    SPOTRUN_H5_CALL(f, H5Sselect_none, fs);
    SPOTRUN_H5_CALL(f, H5Sselect_none, ms);
  }
  H5Handle dxpl = impl::dxpl_collective(f);
  SPOTRUN_H5_CALL(f, H5Dwrite, d, H5T_NATIVE_INT64, ms, fs, dxpl, data);
}

// Number of frames in a series (the extent of its step dataset).
hsize_t frames_of(hid_t file_id, const Series& s, const std::string& file) {
  H5Handle d = SPOTRUN_H5_OPEN(file, H5Dclose, H5Dopen2, file_id, (s.group + "/step").c_str(), H5P_DEFAULT);
  H5Handle space = SPOTRUN_H5_OPEN(file, H5Sclose, H5Dget_space, d);
  hsize_t n = 0;
  SPOTRUN_H5_CALL(file, H5Sget_simple_extent_dims, space, &n, nullptr);
  return n;
}

// Sets the frame count of every dataset of a series (rank 0, serial driver).
void set_frames(hid_t file_id, const Series& s, hsize_t frames, std::uint64_t natoms, const std::string& file) {
  for (const char* name : {"step", "time", "value"}) {
    H5Handle d = SPOTRUN_H5_OPEN(file, H5Dclose, H5Dopen2, file_id, (s.group + "/" + name).c_str(), H5P_DEFAULT);
    std::vector<hsize_t> dims{frames};
    if (std::string(name) == "value") {
      dims.push_back(s.per_atom ? natoms : 3);  // the edges: a 3 x 3 matrix (rows: the edge vectors)
      dims.push_back(static_cast<hsize_t>(s.row_size));
    }
    SPOTRUN_H5_CALL(file, H5Dset_extent, d, dims.data());
  }
}

}  // namespace

H5mdTrajectory::H5mdTrajectory(std::string path, std::vector<std::string> fields, std::uint64_t natoms)
    : m_path(std::move(path)), m_fields(std::move(fields)), m_natoms(natoms) {}

void H5mdTrajectory::continue_after(const comm::Communicator& comm, std::int64_t step) {
  const bool exists = comm.broadcast(std::filesystem::exists(m_path) ? "1" : "0") == "1";
  m_exists = false;
  m_continued = false;
  if (!exists || step < 0) return;  // a new file at the first frame (a fresh run replaces an old one)
  // Rank 0 alone checks and shortens the file, with the serial driver: a few metadata operations, and
  // none of parallel HDF5's collective metadata rules (independent reads left the ranks' metadata caches
  // in different states, and a collective H5Dset_extent then waited for ranks that had closed the file).
  std::string error;
  if (comm.is_root()) try {
    QuietHdf5Errors quiet;
    H5Handle file = SPOTRUN_H5_OPEN(m_path, H5Fclose, H5Fopen, m_path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    // The same fields as this run's: each per-atom series present with this many atoms, no other.
    for (const auto& f : k_h5md_fields) {
      const std::string g = "/particles/all/" + f;
      const bool in_file = H5Lexists(file, g.c_str(), H5P_DEFAULT) > 0;
      const bool wanted = std::find(m_fields.begin(), m_fields.end(), f) != m_fields.end();
      if (in_file != wanted)
        throw std::runtime_error("it " + std::string(in_file ? "has" : "lacks") + " the field '" + f +
                                 "', but md.trajectory.fields " + (wanted ? "names" : "does not name") + " it");
    }
    const auto series = series_of(m_fields, m_units);
    // The frames to keep: those of steps up to `step` (steps increase from frame to frame).
    H5Handle d = SPOTRUN_H5_OPEN(m_path, H5Dclose, H5Dopen2, file, (series[0].group + "/step").c_str(), H5P_DEFAULT);
    const hsize_t n = frames_of(file, series[0], m_path);
    std::vector<std::int64_t> steps(n);
    if (n > 0) SPOTRUN_H5_CALL(m_path, H5Dread, d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps.data());
    const auto keep = static_cast<hsize_t>(std::upper_bound(steps.begin(), steps.end(), step) - steps.begin());
    for (const auto& s : series) {
      if (frames_of(file, s, m_path) != n)
        throw std::runtime_error(s.group + " has " + std::to_string(frames_of(file, s, m_path)) + " frames, " +
                                 series[0].group + " " + std::to_string(n));
      if (s.per_atom) {
        H5Handle v = SPOTRUN_H5_OPEN(m_path, H5Dclose, H5Dopen2, file, (s.group + "/value").c_str(), H5P_DEFAULT);
        H5Handle space = SPOTRUN_H5_OPEN(m_path, H5Sclose, H5Dget_space, v);
        hsize_t dims[3] = {0, 0, 0};
        SPOTRUN_H5_CALL(m_path, H5Sget_simple_extent_dims, space, dims, nullptr);
        if (dims[1] != m_natoms)
          throw std::runtime_error(s.group + " holds " + std::to_string(dims[1]) + " atoms, this run " +
                                   std::to_string(m_natoms));
      }
      set_frames(file, s, keep, m_natoms, m_path);
    }
    d.close("H5Dclose", m_path);
    file.close("H5Fclose", m_path);
  } catch (const std::exception& e) {
    error = "cannot continue the trajectory '" + m_path + "': " + e.what() +
            ". Move it away (or give md.trajectory the fields it has) to continue this run";
  }
  comm.agree<std::runtime_error>(error.empty(), error);
  m_exists = true;
  m_continued = true;
}

void H5mdTrajectory::write_connectivity_group(long long file_id, const H5mdFrame& fr) const {
  const hid_t file = static_cast<hid_t>(file_id);
  const std::string& f = m_path;
  bool any_connectivity = false;
  for (const auto& c : m_connectivity) any_connectivity = any_connectivity || c.total_rows > 0;
  if (!any_connectivity) return;
  if (!fr.id) throw std::runtime_error("the connectivity holds atom ids, but the frame gives none (H5mdFrame::id)");
  H5Handle connectivity = make_group(file, "connectivity", f);
  hobj_ref_t particles_all;
  SPOTRUN_H5_CALL(f, H5Rcreate, &particles_all, file, "/particles/all", H5R_OBJECT, -1);
  for (const auto& c : m_connectivity) {
    if (c.total_rows == 0) continue;
    const std::uint64_t rows = c.ids.size() / static_cast<std::size_t>(c.width);
    write_block_dataset(connectivity, c.name.c_str(), H5T_STD_I64LE, c.total_rows, c.width, c.first_row, rows,
                        c.ids.data(), f);
    H5Handle d = SPOTRUN_H5_OPEN(f, H5Dclose, H5Dopen2, connectivity, c.name.c_str(), H5P_DEFAULT);
    impl::write_attribute(d, "particles_group", H5T_STD_REF_OBJ, H5T_STD_REF_OBJ, &particles_all, f);
  }
}

void H5mdTrajectory::write(const comm::Communicator& comm, const H5mdFrame& fr) {
  std::string error;
  try {
    QuietHdf5Errors quiet;
    H5Handle fapl = impl::mpio_fapl(comm, m_path);
    const auto series = series_of(m_fields, m_units);
    const std::string& f = m_path;
    H5Handle file;
    if (!m_exists) {
      file = SPOTRUN_H5_OPEN(f, H5Fclose, H5Fcreate, f.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
      H5Handle h5md = make_group(file, "h5md", f);
      int_array_attribute(h5md, "version", {1, 1}, f);
      H5Handle author = make_group(h5md, "author", f);
      impl::write_string_attribute(author, "name", m_author.empty() ? "unknown" : m_author, f);
      H5Handle creator = make_group(h5md, "creator", f);
      impl::write_string_attribute(creator, "name", "spotrun", f);
      impl::write_string_attribute(creator, "version", k_version, f);
      H5Handle particles = make_group(file, "particles", f);
      H5Handle all = make_group(particles, "all", f);
      H5Handle box = make_group(all, "box", f);
      int_array_attribute(box, "dimension", {3}, f);
      string_array_attribute(box, "boundary", {"periodic", "periodic", "periodic"}, f);
      for (const auto& s : series) {
        H5Handle g = make_group(file, s.group.substr(1), f);
        make_series_dataset(g, "step", H5T_STD_I64LE, {}, f);
        make_series_dataset(g, "time", H5T_IEEE_F64LE, {}, f);
        std::vector<hsize_t> inner{s.per_atom ? m_natoms : 3, static_cast<hsize_t>(s.row_size)};
        make_series_dataset(g, "value", s.integer ? H5T_STD_I32LE : H5T_IEEE_F64LE, inner, f);
        // The unit of the values (and "tau" of the times) as an attribute of the group, not H5MD's "unit"
        // attribute of the datasets: reduced LJ units are no units of H5MD's list, and readers refuse
        // unknown ones (MDAnalysis raises at "sigma").
        // Real and metal units: "unit" (Angstrom, fs or ps, kcal mol-1 or eV).
        impl::write_string_attribute(g, m_units.style == "lj" ? "lj_unit" : "unit", s.unit.c_str(), f);
      }
      // The units of the run: LAMMPS units (parameters: H5MD's group for the simulation's own data).
      H5Handle parameters = make_group(file, "parameters", f);
      impl::write_string_attribute(parameters, "units", m_units.style.c_str(), f);
      impl::write_string_attribute(parameters, "unit_length", m_units.length.c_str(), f);
      impl::write_string_attribute(parameters, "unit_energy", m_units.energy.c_str(), f);
      impl::write_string_attribute(parameters, "unit_mass", m_units.mass.c_str(), f);
      impl::write_string_attribute(parameters, "unit_time", m_units.time_definition.c_str(), f);
      // Time-independent: the types of the atoms, in id order.
      if (std::find(m_fields.begin(), m_fields.end(), "species") != m_fields.end())
        write_block_dataset(all, "species", H5T_STD_I32LE, m_natoms, 1, fr.first_row, fr.rows, fr.species, f);
      // The ids of the atoms (H5MD: a particle's identity, what the connectivity's values refer to).
      if (fr.id) write_block_dataset(all, "id", H5T_STD_I64LE, m_natoms, 1, fr.first_row, fr.rows, fr.id, f);
      // The connectivity given before this first frame: tuples of ids of the atoms of /particles/all.
      write_connectivity_group(file, fr);
    } else {
      file = SPOTRUN_H5_OPEN(f, H5Fclose, H5Fopen, f.c_str(), H5F_ACC_RDWR, fapl);
    }
    H5Handle dxpl = impl::dxpl_collective(f);
    for (const auto& s : series) {
      const hsize_t frame = frames_of(file, s, f);
      set_frames(file, s, frame + 1, m_natoms, f);
      // step and time: rank 0 writes the new element, the others select none (a collective write).
      const bool root = comm.is_root();
      auto write_scalar = [&](const char* name, hid_t mem_type, const void* value) {
        H5Handle d = SPOTRUN_H5_OPEN(f, H5Dclose, H5Dopen2, file, (s.group + "/" + name).c_str(), H5P_DEFAULT);
        H5Handle fs = SPOTRUN_H5_OPEN(f, H5Sclose, H5Dget_space, d);
        const hsize_t one = 1;
        H5Handle ms = SPOTRUN_H5_OPEN(f, H5Sclose, H5Screate_simple, 1, &one, nullptr);
        if (root) {
          SPOTRUN_H5_CALL(f, H5Sselect_hyperslab, fs, H5S_SELECT_SET, &frame, nullptr, &one, nullptr);
        } else {
          SPOTRUN_H5_CALL(f, H5Sselect_none, fs);
          SPOTRUN_H5_CALL(f, H5Sselect_none, ms);
        }
        SPOTRUN_H5_CALL(f, H5Dwrite, d, mem_type, ms, fs, dxpl, value);
      };
      write_scalar("step", H5T_NATIVE_INT64, &fr.step);
      write_scalar("time", H5T_NATIVE_DOUBLE, &fr.time);
      H5Handle d = SPOTRUN_H5_OPEN(f, H5Dclose, H5Dopen2, file, (s.group + "/value").c_str(), H5P_DEFAULT);
      H5Handle fs = SPOTRUN_H5_OPEN(f, H5Sclose, H5Dget_space, d);
      if (!s.per_atom) {  // the box edges, a diagonal matrix (H5MD: edge vectors as rows): rank 0
        const hsize_t start[3] = {frame, 0, 0}, count[3] = {1, 3, 3};
        const double edges[9] = {fr.box_edges[0], 0, 0, 0, fr.box_edges[1], 0, 0, 0, fr.box_edges[2]};
        H5Handle ms = SPOTRUN_H5_OPEN(f, H5Sclose, H5Screate_simple, 3, count, nullptr);
        if (root) {
          SPOTRUN_H5_CALL(f, H5Sselect_hyperslab, fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
        } else {
          SPOTRUN_H5_CALL(f, H5Sselect_none, fs);
          SPOTRUN_H5_CALL(f, H5Sselect_none, ms);
        }
        SPOTRUN_H5_CALL(f, H5Dwrite, d, H5T_NATIVE_DOUBLE, ms, fs, dxpl, edges);
        continue;
      }
      const hsize_t start[3] = {frame, fr.first_row, 0}, count[3] = {1, fr.rows, 3};
      H5Handle ms = SPOTRUN_H5_OPEN(f, H5Sclose, H5Screate_simple, 3, count, nullptr);
      if (fr.rows > 0) {
        SPOTRUN_H5_CALL(f, H5Sselect_hyperslab, fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
      } else {
        SPOTRUN_H5_CALL(f, H5Sselect_none, fs);
        SPOTRUN_H5_CALL(f, H5Sselect_none, ms);
      }
      const void* data = s.group == "/particles/all/position"   ? static_cast<const void*>(fr.position)
                         : s.group == "/particles/all/velocity" ? static_cast<const void*>(fr.velocity)
                         : s.group == "/particles/all/force"    ? static_cast<const void*>(fr.force)
                                                                : static_cast<const void*>(fr.image);
      SPOTRUN_H5_CALL(f, H5Dwrite, d, s.integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, ms, fs, dxpl, data);
    }
    file.close("H5Fclose", f);
  } catch (const std::exception& e) {
    error = "writing trajectory frame of step " + std::to_string(fr.step) + " to '" + m_path + "' failed: " + e.what();
  }
  comm.agree<std::runtime_error>(error.empty(), error);
  m_exists = true;
  m_connectivity.clear();
}

void H5mdTrajectory::write_connectivity(const comm::Communicator& comm, const std::string& name, int width,
                                        const std::vector<std::int64_t>& ids) {
  std::string error;
  const bool name_ok = !name.empty() && name.find_first_of("/.") == std::string::npos;
  if (!name_ok)
    error = "connectivity name '" + name + "' is not a dataset name of /connectivity (no '/' or '.'; e.g. \"bonds\")";
  else if (width < 2)
    error = "connectivity '" + name + "': width " + std::to_string(width) + "; tuples have 2 atoms or more";
  else if (ids.size() % static_cast<std::size_t>(width) != 0)
    error = "connectivity '" + name + "': " + std::to_string(ids.size()) + " ids are not whole rows of " +
            std::to_string(width);
  else if (m_exists && !m_continued)
    error = "connectivity '" + name + "' given after this run's first frame (give it before)";
  for (const auto& c : m_connectivity)
    if (error.empty() && c.name == name) error = "connectivity '" + name + "' given twice";
  comm.agree<std::runtime_error>(error.empty(), "trajectory '" + m_path + "': " + error);
  // Each rank's first row: the rows of the ranks before it (the same on every rank, whatever it passed).
  const std::size_t mine = ids.size() / static_cast<std::size_t>(width);
  const auto rows = comm.all_gather(std::vector<std::int64_t>{static_cast<std::int64_t>(mine)});
  if (m_continued) return;  // the file's connectivity is the run's that began it
  Connectivity c;
  c.name = name;
  c.width = width;
  c.ids = ids;
  for (int r = 0; r < comm.size(); ++r) {
    if (r < comm.rank()) c.first_row += static_cast<std::uint64_t>(rows[r]);
    c.total_rows += static_cast<std::uint64_t>(rows[r]);
  }
  m_connectivity.push_back(std::move(c));
}

}  // namespace spotrun::io
