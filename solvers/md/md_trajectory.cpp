// The MD solver, outputs for viewers, from the id-sorted blocks of state() (the files do not depend on the
// rank count): frames of OUTDIR/trajectory.h5md (H5MD, io/h5md_trajectory.hpp; a resumed run that began
// before the name continues its OUTDIR/trajectory.h5) and of OUTDIR/dump.lammpstrj (LAMMPS dump custom,
// io/lammps_dump.hpp), and OUTDIR/topology.data (a LAMMPS data file of the system, the topology MDAnalysis
// reads the trajectory with) at the first call. A system of molecules (the per-atom datasets /md/molecule,
// /md/bond, /md/angle, /md/dihedral of state()) gives topology.data its molecule ids and interactions and a
// new trajectory its /connectivity.
#include <filesystem>
#include <stdexcept>

#include "md_export.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

namespace fs = std::filesystem;

namespace {

// The units trajectory.h5md names in real and metal units (H5MD-style unit strings).
io::H5mdUnits h5md_units(const UnitConstants& u) {
  io::H5mdUnits h;
  h.style = u.name;
  h.length = "Angstrom";
  h.time = u.time;
  h.energy = std::string(u.name) == "real" ? "kcal mol-1" : "eV";
  h.mass = "g mol-1";
  h.time_definition = u.time;
  return h;
}

// This rank's block of the exported fields of the per-atom field table (atom_fields.hpp) in a state() (rows by
// id): what the topology and the frames read.
struct ExportedColumns {
  const io::SolverState& st;
  const io::StateArray& of(AtomFieldId f) const {
    if (!atom_field(f).has(k_exported)) throw std::logic_error(std::string("md: field ") + atom_field(f).name + " is not exported");
    return st.arrays[checkpoint_index(f)];
  }
  const double* f64(AtomFieldId f) const { return of(f).f64.data(); }
  const std::int64_t* i64(AtomFieldId f) const { return of(f).i64.data(); }
};

// This rank's share of the molecules in a state() (rows by id, ids: theirs): the molecule ids of its rows
// (/md/molecule) and the interactions whose first atom is in its rows (/md/bond, /md/angle, /md/dihedral;
// md_export.hpp), none where the state has no such dataset. ntypes: each kind's number of types, the
// run's (md.bond.ntypes) or else the largest type of any rank (collective).
io::TopologyShare molecules_of(const comm::Communicator& comm, const io::SolverState& st, const std::int64_t* ids,
                               std::int64_t ntypes[3]) {
  io::TopologyShare share;
  if (const io::StateArray* m = st.find("/md/molecule")) share.molecule = m->i64.data();
  io::LammpsTopology* kinds[3] = {&share.bonds, &share.angles, &share.dihedrals};
  for (int k = 0; k < 3; ++k) {
    const TopologyKind& kind = k_topology_kinds[k];
    if (const io::StateArray* a = st.find(std::string("/md/") + kind.name))
      *kinds[k] = interactions_of(*a, ids, kind.width);
    const auto n = st.integers.find(std::string("md.") + kind.name + ".ntypes");
    ntypes[k] = n != st.integers.end() ? n->second : kinds[k]->ntypes;
  }
  for (int k = 0; k < 3; ++k) ntypes[k] = comm.max(ntypes[k]);
  return share;
}

}  // namespace

bool MdSolver::writes_outputs_at(std::int64_t step) const {
  // The first call opens (and may cut) the files; after that only the frames' steps write.
  const bool trajectory = m_cfg.trajectory_every > 0 && (!m_trajectory || step % m_cfg.trajectory_every == 0);
  const bool dump = m_cfg.dump_every > 0 && (!m_dump || step % m_cfg.dump_every == 0);
  return trajectory || dump;
}

void MdSolver::write_outputs(const std::string& outdir, std::int64_t step) {
  const bool first = (m_cfg.trajectory_every > 0 && !m_trajectory) || (m_cfg.dump_every > 0 && !m_dump);
  const bool trajectory_frame = m_cfg.trajectory_every > 0 && step % m_cfg.trajectory_every == 0;
  const bool dump_frame = m_cfg.dump_every > 0 && step % m_cfg.dump_every == 0;
  if (!first && !trajectory_frame && !dump_frame) return;
  // The first call: a fresh run (step 0) starts the files anew; a resumed run drops the frames written
  // after the step it resumed from (the first call comes one step after it).
  const std::int64_t continue_after = m_restored ? step - 1 : -1;
  const fs::path out(outdir);
  bool trajectory_opened = false;  // opened by this call: the connectivity goes to it (a new file keeps it)
  if (m_cfg.trajectory_every > 0 && !m_trajectory) {
    fs::path path = out / "trajectory.h5md";
    const bool older = m_restored && m_comm.broadcast(!fs::exists(path) && fs::exists(out / "trajectory.h5") ? "1" : "0") == "1";
    if (older) path = out / "trajectory.h5";
    m_trajectory = std::make_unique<io::H5mdTrajectory>(path.string(), m_cfg.trajectory_fields,
                                                         static_cast<std::uint64_t>(m_natoms));
    if (m_cfg.units != UnitStyle::Lj) m_trajectory->set_units(h5md_units(m_cfg.unit()));
    m_trajectory->set_author(m_cfg.trajectory_author);
    m_trajectory->continue_after(m_comm, continue_after);
    trajectory_opened = true;
  }
  if (m_cfg.dump_every > 0 && !m_dump) {
    m_dump = std::make_unique<io::LammpsDump>((out / "dump.lammpstrj").string(), m_cfg.dump_columns,
                                              static_cast<std::uint64_t>(m_natoms));
    m_dump->continue_after(m_comm, continue_after);
  }
  const io::SolverState st = state();  // the checkpointed fields of the table: this rank's block, by id
  const ExportedColumns atoms{st};
  using F = AtomFieldId;
  const std::uint64_t first_row = atoms.of(F::id).first_row, rows = atoms.of(F::id).rows;
  // The molecules of this rank's rows, where the system has them (io::TopologyShare): for topology.data and
  // the connectivity of the trajectory, at the first call.
  io::TopologyShare molecules;
  std::int64_t ntypes[3] = {0, 0, 0};
  if (first) molecules = molecules_of(m_comm, st, atoms.i64(F::id), ntypes);
  if (trajectory_opened) {
    // Each interaction once, on the rank whose rows hold its first atom: the same list at any rank count.
    const char* names[3] = {"bonds", "angles", "dihedrals"};
    const io::LammpsTopology* kinds[3] = {&molecules.bonds, &molecules.angles, &molecules.dihedrals};
    for (int k = 0; k < 3; ++k)
      m_trajectory->write_connectivity(m_comm, names[k], kinds[k]->width, kinds[k]->atoms);
  }
  if (first) {
    // topology.data: written by a fresh run (the atoms of its first frame), and by a resumed one that has
    // none (a run begun before it existed).
    const fs::path topology = out / "topology.data";
    if (!m_restored || m_comm.broadcast(fs::exists(topology) ? "1" : "0") == "0") {
      io::LammpsData header;
      for (int d = 0; d < 3; ++d) {
        header.lo[d] = m_box.lo[d];
        header.hi[d] = m_box.hi[d];
      }
      header.ntypes = static_cast<int>(m_masses.size());
      header.masses = m_masses;
      header.bonds.ntypes = static_cast<int>(ntypes[0]);
      header.angles.ntypes = static_cast<int>(ntypes[1]);
      header.dihedrals.ntypes = static_cast<int>(ntypes[2]);
      std::vector<std::string> names;
      for (const auto& t : m_cfg.types) names.push_back(t.name);
      io::write_topology(m_comm, topology.string(), header, names,
                         "LAMMPS data file written by spotrun run: the system at step " + std::to_string(step) +
                             " (units " + m_cfg.unit().name + "), the topology of trajectory.h5md and dump.lammpstrj",
                         rows, atoms.i64(F::id), atoms.i64(F::type), atoms.f64(F::x), atoms.i64(F::image),
                         molecules);
    }
  }
  if (trajectory_frame) {
    io::H5mdFrame fr;
    fr.step = step;
    fr.time = m_time;
    for (int d = 0; d < 3; ++d) fr.box_edges[d] = m_box.length(d);
    fr.first_row = first_row;
    fr.rows = rows;
    fr.position = atoms.f64(F::x);
    fr.velocity = atoms.f64(F::v);
    fr.force = atoms.f64(F::f);
    fr.image = atoms.i64(F::image);
    fr.species = atoms.i64(F::type);
    fr.id = atoms.i64(F::id);
    m_trajectory->write(m_comm, fr);
  }
  if (dump_frame) {
    io::DumpFrame fr;
    fr.step = step;
    for (int d = 0; d < 3; ++d) {
      fr.lo[d] = m_box.lo[d];
      fr.hi[d] = m_box.hi[d];
    }
    fr.first_row = first_row;
    fr.rows = rows;
    fr.id = atoms.i64(F::id);
    fr.x = atoms.f64(F::x);
    fr.v = atoms.f64(F::v);
    fr.f = atoms.f64(F::f);
    fr.image = atoms.i64(F::image);
    fr.type = atoms.i64(F::type);
    m_dump->write(m_comm, fr);
  }
}

}  // namespace spotrun::md
