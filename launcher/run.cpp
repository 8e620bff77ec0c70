#include "run.hpp"

#include <spdlog/spdlog.h>

#include <Kokkos_Core.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comm/transport.hpp"
#include "io/lammps_data.hpp"
#include "io/thermo_writer.hpp"
#include "solvers/md/md_solver.hpp"
#include "spotrun/version.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {
namespace {

// Reads a whole file on the root rank and broadcasts it; InputError on every rank if it fails.
std::string read_on_root(const comm::Communicator& comm, const std::string& path, const std::string& what) {
  std::string text, error;
  if (comm.is_root()) {
    std::error_code ec;
    if (!fs::exists(path, ec))
      error = what + " '" + path + "' does not exist";
    else if (fs::is_directory(path, ec))
      error = what + " '" + path + "' is a directory";
    else {
      std::ifstream in(path, std::ios::binary);
      if (!in) {
        error = "cannot read " + what + " '" + path + "'";
      } else {
        std::ostringstream s;
        s << in.rdbuf();
        text = s.str();
      }
    }
  }
  comm.agree<InputError>(error.empty(), error);
  return comm.broadcast(text);
}

}  // namespace

Deck load_deck(const comm::Communicator& comm, const std::string& path, const std::vector<std::string>& sets) {
  Deck deck = Deck::parse(read_on_root(comm, path, "deck"), path);
  for (const auto& s : sets) deck.apply_set(s);
  deck.validate();
  return deck;
}

md::MdConfig md_config_from_deck(const Deck& d) {
  md::MdConfig c;
  c.dt = d.get_float("md.dt");
  c.cutoff = d.get_float("md.cutoff");
  c.skin = d.get_float("md.skin");
  c.neighbor_every = static_cast<int>(d.get_int("md.neighbor_every"));
  c.neighbor_check = d.get_bool("md.neighbor_check");
  c.ensemble = d.get_string("md.ensemble") == "langevin" ? md::Ensemble::Langevin : md::Ensemble::Nve;
  c.temperature = d.get_float("md.temperature");
  c.damp = d.get_float("md.damp");
  c.seed = static_cast<std::uint64_t>(d.get_int("md.seed"));
  c.pair_style = d.get_string("md.pair.style");
  c.epsilon = d.get_float("md.pair.epsilon");
  c.sigma = d.get_float("md.pair.sigma");
  c.shift = d.get_bool("md.pair.shift");
  c.from_lattice = !d.has("md.initial.lammps_data");
  c.lattice_type = d.get_string("md.lattice.type");
  c.density = d.get_float("md.lattice.density");
  c.cells = d.get_int3("md.lattice.cells");
  c.lattice_temperature = d.get_float("md.lattice.temperature");
  c.lattice_seed = static_cast<std::uint64_t>(d.get_int("md.lattice.seed"));
  return c;
}

void print_header(const comm::Communicator& comm) {
  if (!comm.is_root()) return;
  std::printf("spotrun %s (git %s, %s build)\n", k_version, k_git_hash, k_build_type);
  std::printf("Kokkos %d.%d.%d, execution space %s (%s)\n", KOKKOS_VERSION / 10000, (KOKKOS_VERSION / 100) % 100,
              KOKKOS_VERSION % 100, Kokkos::DefaultExecutionSpace::name(), k_kokkos_source);
  std::printf("MPI ranks: %d on %d node(s)%s\n", comm.size(), comm.node_count(),
              k_have_cuda_host ? ", CUDA host APIs compiled in" : "");
}

int run(const comm::Communicator& comm, const RunOptions& opt) {
  Deck deck = load_deck(comm, opt.deck_path, opt.sets);
  std::string outdir = opt.output_dir;
  if (outdir.empty()) outdir = deck.get_string("run.output_dir");
  if (outdir.empty()) outdir = (fs::path("runs") / fs::path(opt.deck_path).stem()).string();

  print_header(comm);
  if (comm.is_root()) std::printf("Deck: %s\nOutput directory: %s\n--- resolved deck ---\n%s---\n", opt.deck_path.c_str(),
                                  outdir.c_str(), deck.resolved().c_str());
  std::fflush(stdout);
  std::string error;
  if (comm.is_root()) {
    std::error_code ec;
    fs::create_directories(outdir, ec);
    if (ec) error = "cannot create output directory '" + outdir + "': " + ec.message();
  }
  comm.agree<InputError>(error.empty(), error);

  auto transport = comm::make_transport("mpi", comm);
  const std::int64_t steps = deck.get_int("run.steps");
  const std::int64_t thermo_every = deck.get_int("run.thermo_every");

  std::unique_ptr<Solver> solver;
  const std::string solver_name = deck.get_string("run.solver");
  if (solver_name == "md") {
    md::MdConfig cfg = md_config_from_deck(deck);
    std::unique_ptr<io::LammpsData> data;
    if (!cfg.from_lattice) {
      fs::path p = deck.get_string("md.initial.lammps_data");
      if (p.is_relative()) p = fs::path(opt.deck_path).parent_path() / p;
      std::string text = read_on_root(comm, p.string(), "LAMMPS data file");
      data = std::make_unique<io::LammpsData>(io::parse_lammps_data(text, p.string()));
    }
    solver = std::make_unique<md::MdSolver>(cfg, comm, *transport, data.get());
  } else {
    throw InputError(deck.name() + ": run.solver '" + solver_name + "' is not compiled into this spotrun");
  }

  io::ThermoWriter thermo(comm.is_root(), (fs::path(outdir) / "thermo.csv").string(), solver->thermo_columns());
  solver->setup();
  thermo.write(solver->step_index(), solver->thermo());

  comm.barrier();
  auto t0 = std::chrono::steady_clock::now();
  const std::int64_t first = solver->step_index();
  while (solver->step_index() < steps) {
    const std::int64_t next = solver->step_index() + 1;
    const bool want_thermo = next % thermo_every == 0 || next == steps;
    solver->step(want_thermo);
    if (want_thermo) thermo.write(solver->step_index(), solver->thermo());
  }
  Kokkos::fence();
  comm.barrier();
  const double loop = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::int64_t done = solver->step_index() - first;
  auto lines = solver->summary();
  if (comm.is_root()) {
    std::printf("Loop time: %.6g s on %d ranks for %lld steps\n", loop, comm.size(), static_cast<long long>(done));
    if (loop > 0 && done > 0)
      std::printf("Performance: %.6g %s/s\n", solver->work_per_step() * static_cast<double>(done) / loop,
                  solver->work_unit().c_str());
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
    std::fflush(stdout);
  }
  return k_exit_finished;
}

}  // namespace spotrun::launcher
