#pragma once
// Trajectories in H5MD 1.1 (https://www.nongnu.org/h5md/), read by MDAnalysis, OVITO and VMD's plugin:
// OUTDIR/trajectory.h5md with /h5md (version, author, creator), /particles/all/box (periodic, edges per
// frame) and one time-dependent group per field (step, time, value) under /particles/all; species (the
// atom types) is time-independent. Rows are atoms in id order, each rank writing its block collectively
// (parallel HDF5), so the file does not depend on the rank count. The file is opened and closed around
// every frame, so that it is complete whenever no frame is being written. The ids of the atoms
// (/particles/all/id) and the connectivity (/connectivity: bonds, angles, dihedrals as tuples of atom
// ids, H5MD 1.1) are time-independent, written with the first frame of a new file.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace spotrun::io {

// The fields a trajectory may hold, in file order; "species" is the per-atom type.
extern const std::vector<std::string> k_h5md_fields;

struct H5mdFrame {
  std::int64_t step = 0;
  double time = 0;
  std::array<double, 3> box_edges{};
  // This rank's block of rows [first_row, first_row + rows) of the atoms sorted by id; each array that its
  // field needs: position, velocity, force (3 doubles a row), image (3 ints), species (1 int); id (1 int):
  // the atoms' ids, /particles/all/id of a new file where given (connectivity needs it).
  std::uint64_t first_row = 0, rows = 0;
  const double* position = nullptr;
  const double* velocity = nullptr;
  const double* force = nullptr;
  const std::int64_t* image = nullptr;
  const std::int64_t* species = nullptr;
  const std::int64_t* id = nullptr;
};

// The units of a trajectory's numbers (LAMMPS units, the MD solver's md.units): /parameters names them, and each
// series group's attribute "lj_unit" (lj: reduced units, no units of H5MD's list) or "unit" (real, metal).
struct H5mdUnits {
  std::string style = "lj";
  std::string length = "sigma", time = "tau", energy = "epsilon", mass = "mass";
  std::string time_definition = "tau = sigma sqrt(mass / epsilon)";  // /parameters/unit_time
};

class H5mdTrajectory {
 public:
  // fields: a subset of k_h5md_fields; units: the unit of each quantity ("length", "time", "velocity",
  // "force") as H5MD unit strings; natoms: rows of every frame.
  H5mdTrajectory(std::string path, std::vector<std::string> fields, std::uint64_t natoms);

  // Opens the file of an earlier run for continuing at step `step` (collective): frames of steps after
  // `step` are dropped (a resumed run's trajectory then equals an uninterrupted one's). A missing file
  // starts a new one at the next frame; one with other fields or another atom count is an error naming
  // the file (std::runtime_error on every rank).
  void continue_after(const comm::Communicator& comm, std::int64_t step);
  // Appends one frame (collective). The first frame of a new file creates it, with the connectivity given
  // before; it then needs frame.id (the connectivity's atom ids refer to /particles/all/id).
  void write(const comm::Communicator& comm, const H5mdFrame& frame);

  // Time-independent connectivity of the atoms, H5MD 1.1: dataset /connectivity/<name>, int64 [n][width],
  // a row of `width` atom ids per interaction ("bonds": width 2, "angles": 3, "dihedrals": 4), with the
  // attribute particles_group, an object reference to /particles/all (whose id element gives the rows the
  // ids are). Collective: each rank passes its share of the rows (ids: whole rows, in order), the dataset
  // holds rank 0's rows, then rank 1's, and so on; the MD solver passes each interaction once, on the rank
  // whose block of rows holds its first atom, so the list does not depend on the rank count. None on any
  // rank: no dataset. A new file gets it with its first frame; call before that frame. A continued file
  // (continue_after() found it) keeps the connectivity it has, written by the run that began it, and the
  // call does nothing. Errors (a name that is no H5MD name, ids not whole rows, a call after this run's
  // first frame): std::runtime_error on every rank.
  void write_connectivity(const comm::Communicator& comm, const std::string& name, int width,
                          const std::vector<std::int64_t>& ids);
  const std::string& path() const { return m_path; }
  // The units a new file names (default: lj's); call before the first frame.
  void set_units(H5mdUnits units) { m_units = std::move(units); }
  // The author a new file names (/h5md/author's "name"; "" and the default: "unknown"): the user who runs
  // spotrun, as its launcher read it (USER, launcher/environment.hpp). Call before the first frame.
  void set_author(std::string name) { m_author = std::move(name); }

 private:
  // A connectivity dataset to write with the first frame: this rank's rows from global row `first_row`
  // of `total_rows`.
  struct Connectivity {
    std::string name;
    int width = 2;
    std::vector<std::int64_t> ids;
    std::uint64_t first_row = 0, total_rows = 0;
  };

  std::string m_path;
  std::vector<std::string> m_fields;
  std::uint64_t m_natoms;
  H5mdUnits m_units;
  std::string m_author;
  bool m_exists = false;     // the file holds this run's frames (created or continued)
  bool m_continued = false;  // continue_after() found the file (its connectivity is the run's that began it)
  std::vector<Connectivity> m_connectivity;  // written with the first frame of a new file
  // /connectivity of a new file (file: its HDF5 id), from m_connectivity; fr: the first frame (its atom ids).
  void write_connectivity_group(long long file, const H5mdFrame& fr) const;
};

}  // namespace spotrun::io
