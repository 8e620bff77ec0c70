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

namespace spotrun::launcher {
namespace {

io::StateArray expected(const std::string& name, std::vector<std::uint64_t> inner, bool integer) {
  io::StateArray a;
  a.name = name;
  a.inner = std::move(inner);
  a.is_integer = integer;
  return a;
}

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
  if (meta.solver != "md")
    throw InputError("spotrun export: checkpoint '" + opt.checkpoint + "' was written by solver '" + meta.solver +
                     "'; only md checkpoints export to LAMMPS data and XYZ");
  const io::SolverState st = read({expected("/md/id", {}, true), expected("/md/x", {3}, false),
                                          expected("/md/v", {3}, false), expected("/md/image", {3}, true),
                                          expected("/md/type", {}, true)});
  io::LammpsData d;
  for (int k = 0; k < 3; ++k) {
    d.lo[k] = st.require_real(std::string("md.box.lo_") + char('x' + k));
    d.hi[k] = st.require_real(std::string("md.box.hi_") + char('x' + k));
  }
  d.ntypes = static_cast<int>(st.require_integer("md.ntypes"));
  for (int t = 1; t <= d.ntypes; ++t) d.masses.push_back(st.require_real("md.mass." + std::to_string(t)));
  const auto ids = gather_rows(comm, st.find("/md/id")->i64);
  const auto types = gather_rows(comm, st.find("/md/type")->i64);
  const auto images = gather_rows(comm, st.find("/md/image")->i64);
  d.x = gather_rows(comm, st.find("/md/x")->f64);
  d.v = gather_rows(comm, st.find("/md/v")->f64);
  std::string error;
  if (comm.is_root()) {
    try {
      d.id = ids;
      d.type.assign(types.begin(), types.end());
      d.image.assign(images.begin(), images.end());
      d.has_velocities = true;
      const std::string title = "LAMMPS data file written by spotrun export of " + opt.checkpoint + " (step " +
                                std::to_string(meta.step) + ", time " + std::to_string(meta.time) + ", units lj)";
      if (!opt.lammps_data.empty()) write_file(opt.lammps_data, io::format_lammps_data(d, title));
      if (!opt.xyz.empty()) {
        // Type names from the checkpoint's deck ([[md.types]]), else the type numbers.
        const Deck deck = Deck::parse(meta.deck, opt.checkpoint + " (its deck)");
        std::vector<std::string> names;
        for (std::size_t k = 0; k < deck.count("md.types"); ++k)
          names.push_back(deck.get_string("md.types." + std::to_string(k) + ".name"));
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
    } catch (const std::exception& e) {
      error = std::string("spotrun export: ") + e.what();
    }
  }
  comm.agree<InputError>(error.empty(), error);
  return 0;
}

}  // namespace spotrun::launcher
