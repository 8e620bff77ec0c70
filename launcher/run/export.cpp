#include "launcher/run/export.hpp"

#include <mpi.h>

#include <cstdio>
#include <fstream>
#include <type_traits>

#include "comm/errors.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_store.hpp"
#include "io/lammps_data.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/registry.hpp"

namespace spotrun::launcher {
namespace {

// Every rank's block of rows of `a`, in rank order, on rank 0 (the blocks tile the dataset in row order).
template <class T>
std::vector<T> gather_rows(const comm::Communicator& comm, const std::vector<T>& mine) {
  const MPI_Datatype type = sizeof(T) == 8 && std::is_integral_v<T> ? MPI_INT64_T : MPI_DOUBLE;
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(comm.size()), displs(comm.size());
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm.mpi());
  int total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<T> all(comm.is_root() ? total : 0);
  MPI_Gatherv(mine.data(), n, type, all.data(), counts.data(), displs.data(), type, 0, comm.mpi());
  return all;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

// The solvers whose checkpoints export, for messages ("md").
std::string exporting_solvers() {
  std::string names;
  for (const auto& r : solvers::registered_solvers())
    if (r.exporter.system) names += (names.empty() ? "" : ", ") + r.name;
  return names;
}

// Every row of the arrays of `st` on rank 0 (elsewhere none), with its scalars.
io::SolverState gather_state(const comm::Communicator& comm, const io::SolverState& st) {
  io::SolverState all;
  all.solver = st.solver;
  all.reals = st.reals;
  all.integers = st.integers;
  all.strings = st.strings;
  for (const auto& a : st.arrays) {
    io::StateArray g = io::StateArray::layout(a.name, a.inner, a.is_integer, a.global_rows);
    if (a.is_integer)
      g.i64 = gather_rows(comm, a.i64);
    else
      g.f64 = gather_rows(comm, a.f64);
    g.rows = comm.is_root() ? a.global_rows : 0;
    all.arrays.push_back(std::move(g));
  }
  return all;
}

}  // namespace

int export_checkpoint(const comm::Communicator& comm, const ExportOptions& opt) {
  if (opt.lammps_data.empty() && opt.xyz.empty())
    throw InputError("spotrun export: give --lammps-data FILE and/or --xyz FILE");
  // A shared file, or a level set's index that reads the node files the ranks reach (io/checkpoint_store.hpp).
  const auto source = io::open_checkpoint(comm, opt.checkpoint);
  if (!source->meta().level.empty())
    throw InputError("spotrun export: '" + opt.checkpoint + "' is a node file of a level set (its node's atoms only); "
                     "export the set's index, OUTDIR/checkpoints/<set>.levels");
  const io::CheckpointMeta& meta = source->meta();
  auto read = [&](const std::vector<io::StateArray>& e) { return source->read(e); };
  // The solver that wrote it says which arrays hold its particles and what they are.
  const solvers::SolverRegistration* solver = solvers::find_solver(meta.solver);
  if (!solver || !solver->exporter.system)
    throw InputError("spotrun export: checkpoint '" + opt.checkpoint + "' was written by solver '" + meta.solver +
                     "'; only " + exporting_solvers() + " checkpoints export to LAMMPS data and XYZ");
  const io::SolverState all = gather_state(comm, read(solver->exporter.arrays()));
  std::string error;
  if (comm.is_root()) {
    try {
      // Type names (XYZ) from the checkpoint's deck, where the solver finds them; else the type numbers.
      std::unique_ptr<Deck> deck;
      if (!opt.xyz.empty()) deck = std::make_unique<Deck>(Deck::parse(meta.deck, opt.checkpoint + " (its deck)"));
      solvers::ExportedSystem sys = solver->exporter.system(all, deck.get());
      const io::LammpsData& d = sys.data;
      // The run's units (md.units): the file holds its numbers in them.
      const std::string units = meta.units.empty() ? solver->units : meta.units;
      std::string title = "LAMMPS data file written by spotrun export of " + opt.checkpoint + " (step " +
                          std::to_string(meta.step) + ", time " + std::to_string(meta.time) + ", units " + units +
                          ")";
      // Units other than LAMMPS's default lj and molecules: the commands that LAMMPS reads the file after, in its
      // title and said (atoms alone in lj units: none).
      std::string commands;
      if (units == "real" || units == "metal") commands = "units " + units;
      const io::AtomStyle style = io::atom_style_to_write(d);
      if (style != io::AtomStyle::Atomic || !sys.lammps_commands.empty()) {
        commands += (commands.empty() ? "" : "; ") + std::string("atom_style ") + io::atom_style_name(style);
        for (const auto& c : sys.lammps_commands) commands += "; " + c;
      }
      if (!commands.empty()) title += "; LAMMPS input before read_data: " + commands;
      if (!opt.lammps_data.empty()) write_file(opt.lammps_data, io::format_lammps_data(d, title));
      if (!opt.xyz.empty()) {
        std::vector<std::string>& names = sys.type_names;
        if (static_cast<int>(names.size()) != d.ntypes) {
          names.clear();
          for (int t = 1; t <= d.ntypes; ++t) names.push_back(std::to_string(t));
        }
        write_file(opt.xyz, io::format_xyz(d, names, "Step=" + std::to_string(meta.step) + " Time=" +
                                                         std::to_string(meta.time)));
      }
      std::string to;
      if (!opt.lammps_data.empty()) to += " to LAMMPS data " + opt.lammps_data;
      if (!opt.xyz.empty()) to += (to.empty() ? " to XYZ " : " and XYZ ") + opt.xyz;
      std::printf("Exported %zu atoms of %s (step %lld)%s\n", d.natoms(), opt.checkpoint.c_str(),
                  static_cast<long long>(meta.step), to.c_str());
      if (!commands.empty() && !opt.lammps_data.empty())
        std::printf("LAMMPS reads %s after: %s\n", opt.lammps_data.c_str(), commands.c_str());
    } catch (const std::exception& e) {
      error = std::string("spotrun export: ") + e.what();
    }
  }
  comm.agree<InputError>(error.empty(), error);
  return 0;
}

}  // namespace spotrun::launcher
