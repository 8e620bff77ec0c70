#include "lammps_dump.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "comm/number_text.hpp"

namespace spotrun::io {

const std::vector<std::string> k_dump_columns = {"id", "type", "x",  "y",  "z",  "xu", "yu", "zu", "ix",
                                                 "iy", "iz",   "vx", "vy", "vz", "fx", "fy", "fz"};

namespace {

const std::string k_marker = "ITEM: TIMESTEP\n";

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// 10 significant digits (LAMMPS writes 6 by default): close enough to compare with the checkpoints.
void append_real(std::string& out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 10);
  out.append(buf, r.ptr);
}

// The counts and displacements of a gather of every rank's `mine` items to the root, in rank order, and
// their total, agreed by every rank. Throws `too_many_here` when this rank's items, or `too_many` when
// the total, exceed what MPI's int counts address.
struct GatherLayout {
  int mine = 0;
  std::vector<int> counts, displs;
  std::size_t total = 0;
};
GatherLayout gather_layout(const comm::Communicator& comm, std::size_t mine, const char* too_many_here,
                           const char* too_many) {
  if (mine > static_cast<std::size_t>(std::numeric_limits<int>::max())) throw std::runtime_error(too_many_here);
  GatherLayout g;
  g.mine = static_cast<int>(mine);
  g.counts.resize(comm.size());
  g.displs.resize(comm.size());
  MPI_Gather(&g.mine, 1, MPI_INT, g.counts.data(), 1, MPI_INT, 0, comm.mpi());
  long long total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    g.displs[r] = static_cast<int>(std::min<long long>(total, std::numeric_limits<int>::max()));
    total += g.counts[r];
  }
  long long agreed = comm.is_root() && total > std::numeric_limits<int>::max() ? -1 : total;
  MPI_Bcast(&agreed, 1, MPI_LONG_LONG, 0, comm.mpi());
  if (agreed < 0) throw std::runtime_error(too_many);
  g.total = comm.is_root() ? static_cast<std::size_t>(agreed) : 0;
  return g;
}

// Every rank's text on the root rank, in rank order (the root's own first); "" elsewhere.
std::string gather_text(const comm::Communicator& comm, const std::string& mine) {
  const GatherLayout g = gather_layout(comm, mine.size(), "a rank's part of the file exceeds 2 GiB",
                                       "a frame's text exceeds 2 GiB (use the H5MD trajectory)");
  std::string all(g.total, '\0');
  MPI_Gatherv(mine.data(), g.mine, MPI_CHAR, all.data(), g.counts.data(), g.displs.data(), MPI_CHAR, 0, comm.mpi());
  return all;
}

// Every rank's rows on the root rank, in rank order; empty elsewhere.
template <class T>
std::vector<T> gather_rows(const comm::Communicator& comm, const std::vector<T>& mine) {
  const MPI_Datatype type = std::is_integral_v<T> ? MPI_INT64_T : MPI_DOUBLE;
  static_assert(sizeof(T) == 8, "rows of 8-byte numbers");
  const GatherLayout g =
      gather_layout(comm, mine.size(), "a rank holds too many rows to gather", "too many rows to gather on one rank");
  std::vector<T> all(g.total);
  MPI_Gatherv(mine.data(), g.mine, type, all.data(), g.counts.data(), g.displs.data(), type, 0, comm.mpi());
  return all;
}

// Writes `text` to `path` (appending or replacing it), a regular file only; throws naming it.
void write_text(const std::string& path, const std::string& text, bool append) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string why = fd < 0 ? std::strerror(errno) : "not a regular file";
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot open '" + path + "' for writing: " + why);
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw std::runtime_error("writing '" + path + "' failed: " + why);
    }
    done += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0) throw std::runtime_error("writing '" + path + "' failed: " + std::strerror(errno));
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// Where the frames of steps after `step` begin in the dump `path` (its size when there are none), found
// from the end backwards; the frame before that point (step <= `step`) is checked: its atom count and
// columns those of this run, and complete. Throws std::runtime_error with the reason.
std::uint64_t cut_after(const std::string& path, std::int64_t step, std::uint64_t natoms, const std::string& columns) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open it");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  std::uint64_t cut = size, kept = size;  // kept: where the newest frame of a step <= `step` starts
  bool found_kept = false, any = false;
  std::uint64_t end = size;  // markers starting before `end` are still to be looked at
  const std::uint64_t chunk = 1 << 22;
  while (end > 0 && !found_kept) {
    const std::uint64_t begin = end > chunk ? end - chunk : 0;
    const std::uint64_t from = begin > 0 ? begin - 1 : 0;  // one byte before: the newline ahead of a marker
    const std::uint64_t to = std::min<std::uint64_t>(size, end + k_marker.size() + 24);
    std::string buf(to - from, '\0');
    in.seekg(static_cast<std::streamoff>(from));
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (!in) throw std::runtime_error("reading it failed");
    std::size_t pos = end - from - 1;
    while (true) {
      const std::size_t p = buf.rfind(k_marker, pos);
      if (p == std::string::npos || from + p < begin) break;
      if (from + p == 0 || buf[p - 1] == '\n') {
        any = true;
        // The step after the marker; a torn one (the file ends in it) counts as after `step`.
        std::int64_t s = std::numeric_limits<std::int64_t>::max();
        const std::size_t nl = buf.find('\n', p + k_marker.size());
        if (nl != std::string::npos) {
          const char* first = buf.data() + p + k_marker.size();
          const auto r = std::from_chars(first, buf.data() + nl, s);
          if (r.ec != std::errc() || r.ptr != buf.data() + nl) throw std::runtime_error("a TIMESTEP line does not hold a step");
        }
        if (s > step) {
          cut = from + p;
        } else {
          kept = from + p;
          found_kept = true;
          break;
        }
      }
      if (p == 0) break;
      pos = p - 1;
    }
    end = begin;
  }
  if (!any && size > 0) throw std::runtime_error("it holds no frame of a LAMMPS dump");
  if (!found_kept) return cut;  // every frame is of a later step
  // The kept frame: its header and rows, complete, and its end where the cut is.
  in.clear();
  in.seekg(static_cast<std::streamoff>(kept));
  std::string line, n_text, atoms_line;
  std::vector<std::string> head;
  for (int k = 0; k < 9 && std::getline(in, line); ++k) head.push_back(line);
  if (head.size() != 9 || head[2] != "ITEM: NUMBER OF ATOMS" || head[4].rfind("ITEM: BOX BOUNDS", 0) != 0 ||
      head[8].rfind("ITEM: ATOMS", 0) != 0)
    throw std::runtime_error("the header of its frame of step " + (head.size() > 1 ? head[1] : "?") +
                             " is not that of LAMMPS dump custom");
  if (head[3] != std::to_string(natoms))
    throw std::runtime_error("its frames hold " + head[3] + " atoms, this run " + std::to_string(natoms));
  if (head[8] != "ITEM: ATOMS " + columns)
    throw std::runtime_error("its frames have the columns '" + head[8].substr(std::min<std::size_t>(12, head[8].size())) +
                             "', md.dump.columns gives '" + columns + "'");
  std::uint64_t rows = 0;
  while (rows < natoms && std::getline(in, line) && !in.eof()) ++rows;
  if (rows < natoms)
    throw std::runtime_error("its frame of step " + head[1] + " is incomplete (" + std::to_string(rows) + " of " +
                             std::to_string(natoms) + " rows)");
  const auto frame_end = static_cast<std::uint64_t>(in.tellg());
  // Bytes after the kept frame that are not a later frame (a frame torn while its marker was written).
  return std::min(cut, frame_end);
}

}  // namespace

LammpsDump::LammpsDump(std::string path, std::vector<std::string> columns, std::uint64_t natoms)
    : m_path(std::move(path)), m_columns(std::move(columns)), m_natoms(natoms) {}

void LammpsDump::continue_after(const comm::Communicator& comm, std::int64_t step) {
  const bool exists = comm.broadcast(std::filesystem::exists(m_path) ? "1" : "0") == "1";
  m_exists = false;
  if (!exists || step < 0) return;  // a new file at the first frame (a fresh run replaces an old one)
  std::string error;
  if (comm.is_root()) try {
    const std::uint64_t cut = cut_after(m_path, step, m_natoms, joined(m_columns));
    if (::truncate(m_path.c_str(), static_cast<off_t>(cut)) != 0)
      throw std::runtime_error(std::string("cannot cut its frames after step ") + std::to_string(step) + ": " +
                               std::strerror(errno));
  } catch (const std::exception& e) {
    error = "cannot continue the dump '" + m_path + "': " + e.what() +
            ". Move it away (or give md.dump the columns it has) to continue this run";
  }
  comm.agree<std::runtime_error>(error.empty(), error);
  m_exists = true;
}

void LammpsDump::write(const comm::Communicator& comm, const DumpFrame& fr) {
  std::string error;
  std::string text;
  text.reserve(fr.rows * (m_columns.size() * 12 + 2));
  for (std::uint64_t r = 0; r < fr.rows; ++r) {
    for (std::size_t c = 0; c < m_columns.size(); ++c) {
      if (c > 0) text += ' ';
      const std::string& col = m_columns[c];
      const int k = col.size() == 2 ? col[1] - 'x' : col[0] - 'x';  // the component of a vector column
      if (col == "id") {
        append_int(text, fr.id[r]);
      } else if (col == "type") {
        append_int(text, fr.type[r]);
      } else if (col.size() == 1) {
        append_real(text, fr.x[3 * r + k]);
      } else if (col[1] == 'u') {  // xu yu zu: unwrapped through the image flags
        append_real(text, fr.x[3 * r + col[0] - 'x'] +
                              static_cast<double>(fr.image[3 * r + col[0] - 'x']) * (fr.hi[col[0] - 'x'] - fr.lo[col[0] - 'x']));
      } else if (col[0] == 'i') {
        append_int(text, fr.image[3 * r + k]);
      } else if (col[0] == 'v') {
        append_real(text, fr.v[3 * r + k]);
      } else {
        append_real(text, fr.f[3 * r + k]);
      }
    }
    text += '\n';
  }
  try {
    std::string all = gather_text(comm, text);
    text.clear();
    text.shrink_to_fit();
    if (comm.is_root()) {
      std::string head = "ITEM: TIMESTEP\n";
      append_int(head, fr.step);
      head += "\nITEM: NUMBER OF ATOMS\n";
      append_int(head, static_cast<std::int64_t>(m_natoms));
      head += "\nITEM: BOX BOUNDS pp pp pp\n";
      for (int d = 0; d < 3; ++d) head += exact(fr.lo[d]) + " " + exact(fr.hi[d]) + "\n";
      head += "ITEM: ATOMS " + joined(m_columns) + "\n";
      write_text(m_path, head + all, m_exists);
    }
  } catch (const std::exception& e) {
    error = "writing the dump frame of step " + std::to_string(fr.step) + " to '" + m_path + "' failed: " + e.what();
  }
  comm.agree<std::runtime_error>(error.empty(), error);
  m_exists = true;
}

void write_topology(const comm::Communicator& comm, const std::string& path, const LammpsData& header,
                    const std::vector<std::string>& type_names, const std::string& title, std::uint64_t rows,
                    const std::int64_t* id, const std::int64_t* type, const double* x, const std::int64_t* image,
                    const TopologyShare& molecules) {
  std::string error;
  try {
    const std::vector<std::int64_t> ids = gather_rows(comm, std::vector<std::int64_t>(id, id + rows));
    const std::vector<std::int64_t> types = gather_rows(comm, std::vector<std::int64_t>(type, type + rows));
    const std::vector<std::int64_t> images = gather_rows(comm, std::vector<std::int64_t>(image, image + 3 * rows));
    std::vector<double> xs = gather_rows(comm, std::vector<double>(x, x + 3 * rows));
    // Molecule ids where any rank has them (else none: molecule 0 in the file).
    const bool with_molecules = comm.any(molecules.molecule != nullptr);
    std::vector<std::int64_t> mols;
    if (with_molecules) {
      std::vector<std::int64_t> mine(rows, 0);
      if (molecules.molecule) mine.assign(molecules.molecule, molecules.molecule + rows);
      mols = gather_rows(comm, mine);
    }
    // Each kind's interactions of every rank, in rank order: the types, then the ids.
    const LammpsTopology* shares[3] = {&molecules.bonds, &molecules.angles, &molecules.dihedrals};
    LammpsTopology all[3] = {header.bonds, header.angles, header.dihedrals};
    for (int k = 0; k < 3; ++k) {
      const std::vector<std::int64_t> t = gather_rows(comm, std::vector<std::int64_t>(shares[k]->type.begin(),
                                                                                      shares[k]->type.end()));
      all[k].type.assign(t.begin(), t.end());
      all[k].atoms = gather_rows(comm, shares[k]->atoms);
    }
    if (comm.is_root()) {
      LammpsData d = header;
      d.has_velocities = false;
      d.id = ids;
      d.type.assign(types.begin(), types.end());
      d.image.assign(images.begin(), images.end());
      d.x = std::move(xs);
      d.molecule = std::move(mols);
      d.bonds = std::move(all[0]);
      d.angles = std::move(all[1]);
      d.dihedrals = std::move(all[2]);
      write_text(path, format_lammps_data(d, title, LammpsDataStyle::Molecular, type_names), false);
    }
  } catch (const std::exception& e) {
    error = "writing the topology '" + path + "' failed: " + e.what();
  }
  comm.agree<std::runtime_error>(error.empty(), error);
}

}  // namespace spotrun::io
