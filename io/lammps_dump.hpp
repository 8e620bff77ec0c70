#pragma once
// Text outputs of an MD run for viewers (OVITO, VMD, MDAnalysis), written by the root rank from every
// rank's block of rows (atoms in id order, so the files do not depend on the rank count):
// - LammpsDump: OUTDIR/dump.lammpstrj in the format of LAMMPS `dump custom` (with `dump_modify sort id`):
//   per frame "ITEM: TIMESTEP", "ITEM: NUMBER OF ATOMS", "ITEM: BOX BOUNDS pp pp pp" and "ITEM: ATOMS"
//   with the chosen columns. A resumed run continues it after the step it resumed from, as
//   H5mdTrajectory does: no frame twice, none missing.
// - write_topology(): OUTDIR/topology.data, a LAMMPS data file of the system (box, types and masses, the
//   atoms of one frame with their molecule ids, the bonds, angles and dihedrals) in the molecular layout
//   that MDAnalysis reads as the topology of the H5MD trajectory.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/lammps_data.hpp"

namespace spotrun::io {

// The columns a dump may have (LAMMPS dump custom names): id type x y z xu yu zu ix iy iz vx vy vz fx fy fz.
extern const std::vector<std::string> k_dump_columns;

// One frame: this rank's block of rows [first_row, first_row + rows) of the atoms sorted by id; each array
// its columns need (x, v, f: 3 doubles a row; image: 3 integers; id, type: 1).
struct DumpFrame {
  std::int64_t step = 0;
  std::array<double, 3> lo{}, hi{};
  std::uint64_t first_row = 0, rows = 0;
  const std::int64_t* id = nullptr;
  const std::int64_t* type = nullptr;
  const double* x = nullptr;
  const double* v = nullptr;
  const double* f = nullptr;
  const std::int64_t* image = nullptr;
};

class LammpsDump {
 public:
  // columns: a subset of k_dump_columns, in the order the file gets them; natoms: rows of every frame.
  LammpsDump(std::string path, std::vector<std::string> columns, std::uint64_t natoms);

  // Continues the file of an earlier run at step `step` (collective): the frames of steps after it are
  // cut off. step < 0 or no file: a new file at the next frame. A file whose frames have other columns or
  // another atom count, or that is not a dump, is an error naming it (std::runtime_error on every rank).
  void continue_after(const comm::Communicator& comm, std::int64_t step);
  // Appends one frame (collective).
  void write(const comm::Communicator& comm, const DumpFrame& frame);
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  std::vector<std::string> m_columns;
  std::uint64_t m_natoms;
  bool m_exists = false;  // the file holds this run's frames (created or continued)
};

// This rank's share of the molecules of a system for write_topology(): its rows' molecule ids (null: in
// none), and the interactions it lists (type and ids of each; every interaction on one rank only), which
// the file holds in rank order.
struct TopologyShare {
  const std::int64_t* molecule = nullptr;
  LammpsTopology bonds{0, 2, {}, {}}, angles{0, 3, {}, {}}, dihedrals{0, 4, {}, {}};
};

// Writes `path` (collective; the root rank writes): `header` gives the box, ntypes and masses, and the number
// of types of each kind of topology (header.bonds.ntypes, ...); each rank gives its block of rows in id order
// (id, type, x: 3 a row, image: 3 a row) and its share of the molecules. type_names: comments of the Masses
// lines. Errors: std::runtime_error naming the file, on every rank.
void write_topology(const comm::Communicator& comm, const std::string& path, const LammpsData& header,
                    const std::vector<std::string>& type_names, const std::string& title, std::uint64_t rows,
                    const std::int64_t* id, const std::int64_t* type, const double* x, const std::int64_t* image,
                    const TopologyShare& molecules = {});

}  // namespace spotrun::io
