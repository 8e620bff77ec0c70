#include "run.hpp"

#include <spdlog/spdlog.h>

#include <Kokkos_Core.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpointing.hpp"
#include "slurm_env.hpp"  // --- Slurm: the job's end time as a time limit ---
#include "comm/transport.hpp"
#include "stop.hpp"
#include "io/lammps_data.hpp"
#include "io/thermo_writer.hpp"
#include "solvers/fluid/fluid_solver.hpp"
#include "solvers/md/md_solver.hpp"
#include "fluid_config.hpp"
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

namespace {

// Makes the solver named by the deck. restoring: no initial state (restore() follows).
std::unique_ptr<Solver> make_solver(const comm::Communicator& comm, comm::Transport& transport, const Deck& deck,
                                    const std::string& deck_path, bool restoring) {
  const std::string name = deck.get_string("run.solver");
  if (name == "md") {
    md::MdConfig cfg = md_config_from_deck(deck);
    std::unique_ptr<io::LammpsData> data;
    if (!cfg.from_lattice && !restoring) {
      fs::path p = deck.get_string("md.initial.lammps_data");
      if (p.is_relative()) p = fs::path(deck_path).parent_path() / p;
      std::string text = read_on_root(comm, p.string(), "LAMMPS data file");
      data = std::make_unique<io::LammpsData>(io::parse_lammps_data(text, p.string()));
    }
    return std::make_unique<md::MdSolver>(cfg, comm, transport, data.get(), restoring);
  }
  if (name == "fluid") {
    auto solver = std::make_unique<fluid::FluidSolver>(fluid_config_from_deck(deck), comm, transport, restoring);
    if (comm.is_root())
      for (const auto& w : solver->warnings()) std::fprintf(stderr, "WARNING: %s\n", w.c_str());
    return solver;
  }
  throw InputError(deck.name() + ": run.solver '" + name + "' is not compiled into this spotrun");
}

// Keeps the thermo rows up to `step` (a resumed run continues the file from there).
void truncate_thermo(const comm::Communicator& comm, const std::string& path, std::int64_t step) {
  if (!comm.is_root()) return;
  std::ifstream in(path);
  if (!in) return;
  std::string line, out;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      out += line + "\n";
      header = false;
      continue;
    }
    try {
      if (std::stoll(line.substr(0, line.find(','))) <= step) out += line + "\n";
    } catch (...) {
    }
  }
  in.close();
  std::ofstream(path, std::ios::trunc) << out;
}

std::string units_of(const std::string& solver) { return solver == "md" ? "lj" : "nondimensional"; }

}  // namespace

int inspect(const comm::Communicator& comm, const std::string& path) {
  io::CheckpointMeta meta = io::read_checkpoint_meta(comm, path);
  io::VerifyReport report = io::verify_checkpoint(comm, path);
  if (comm.is_root()) {
    std::printf("%s\n  solver: %s\n  step: %lld\n  time: %.17g\n  units: %s\n  written by: spotrun %s (git %s) on %d "
                "ranks\n",
                path.c_str(), meta.solver.c_str(), static_cast<long long>(meta.step), meta.time, meta.units.c_str(),
                meta.version.c_str(), meta.git_hash.c_str(), meta.nranks);
    for (const auto& l : report.lines) std::printf("  %s\n", l.c_str());
    std::printf("%s\n", report.ok ? "OK: every checksum verified" : "DAMAGED: see above");
  }
  return report.ok ? k_exit_finished : k_exit_bad_input;
}

int run(const comm::Communicator& comm, const RunOptions& opt) {
  install_stop_handlers();
  Deck deck = load_deck(comm, opt.deck_path, opt.sets);
  std::string outdir = opt.output_dir;
  if (outdir.empty()) outdir = deck.get_string("run.output_dir");
  if (outdir.empty()) outdir = (fs::path("runs") / fs::path(opt.deck_path).stem()).string();
  const std::string solver_name = deck.get_string("run.solver");

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
  // --- Slurm: under Slurm the job's end time (less a margin) is a time limit too (launcher/slurm_env.hpp) ---
  const double time_limit = time_limit_with_slurm(comm, deck.get_seconds("run.time_limit"), opt.start_wtime);

  io::CheckpointMeta base;
  base.solver = solver_name;
  base.deck = deck.resolved();
  base.physics = deck.physics();
  base.units = units_of(solver_name);
  base.version = k_version;
  base.git_hash = k_git_hash;
  CheckpointManager checkpoints(comm, outdir, CheckpointSettings::from_deck(deck), base);
  checkpoints.remove_stale_temporaries();

  // Resume from the newest valid checkpoint, or start fresh.
  std::unique_ptr<Solver> solver;
  std::vector<CheckpointFile> candidates;
  if (opt.resume == "auto") {
    candidates = checkpoints.candidates();
  } else if (opt.resume == "never") {
    const std::string moved = checkpoints.archive_previous_run();
    if (comm.is_root() && !moved.empty())
      std::printf("Starting fresh: the earlier run's checkpoints, final.h5 and thermo.csv moved to %s\n", moved.c_str());
  } else {
    candidates.push_back({opt.resume, -1});
  }
  std::string resumed_from;
  for (const auto& c : candidates) {
    try {
      io::CheckpointMeta meta = io::read_checkpoint_meta(comm, c.path);
      if (meta.solver != solver_name)
        throw InputError("it holds solver '" + meta.solver + "', the deck runs '" + solver_name + "'");
      std::string changes = physics_changes(meta.physics, base.physics);
      if (!changes.empty())
        throw CollectiveError(deck.name() + ": the physics changed since checkpoint " + c.path + ":" + changes +
                                  "\nOnly run length, output, thermo, checkpoint and neighbour-list settings may change "
                                  "on resume; use --resume=never (or another --output-dir) to start a new run.",
                              k_exit_bad_input);
      auto candidate = make_solver(comm, *transport, deck, opt.deck_path, true);
      io::SolverState state = io::read_checkpoint(comm, c.path, candidate->state_layout());
      candidate->restore(state);
      solver = std::move(candidate);
      resumed_from = c.path;
      break;
    } catch (const InputError& e) {
      if (opt.resume != "auto") throw InputError("cannot resume from " + c.path + ": " + e.what());
      if (comm.is_root())
        std::fprintf(stderr, "WARNING: skipping checkpoint %s: %s\n", c.path.c_str(), e.what());
    }
  }
  if (!solver && !candidates.empty())
    throw InputError("no valid checkpoint in " + outdir + " (all " + std::to_string(candidates.size()) +
                     " damaged, see above); nothing was changed. Use --resume=never to start a new run there.");

  const std::string csv = (fs::path(outdir) / "thermo.csv").string();
  std::unique_ptr<io::ThermoWriter> thermo;
  if (solver) {
    if (comm.is_root()) std::printf("Resuming from %s at step %lld\n", resumed_from.c_str(),
                                    static_cast<long long>(solver->step_index()));
    truncate_thermo(comm, csv, solver->step_index());
    thermo = std::make_unique<io::ThermoWriter>(comm.is_root(), csv, solver->thermo_columns(), fs::exists(csv));
    solver->setup();
  } else {
    solver = make_solver(comm, *transport, deck, opt.deck_path, false);
    thermo = std::make_unique<io::ThermoWriter>(comm.is_root(), csv, solver->thermo_columns());
    solver->setup();
    thermo->write(solver->step_index(), solver->thermo());
    solver->write_outputs(outdir, solver->step_index());
  }

  comm.barrier();
  const double t0 = MPI_Wtime();
  checkpoints.mark_started(t0);
  const std::int64_t first = solver->step_index();
  StopAgreement agreement(comm.mpi());
  double max_step_time = 0;
  const double state_bytes = solver->work_per_step() * 17 * 8;
  const char* stop_reason = nullptr;
  while (solver->step_index() < steps && !solver->finished()) {
    const double ts = MPI_Wtime();
    const std::int64_t next = solver->step_index() + 1;
    const bool want_thermo = next % thermo_every == 0 || next == steps;
    solver->step(want_thermo);
    // A solver that reached its own end (fluid.time_end) prints its last row too.
    if (want_thermo || solver->finished()) thermo->write(solver->step_index(), solver->thermo());
    solver->write_outputs(outdir, solver->step_index());
    const double now = MPI_Wtime();
    max_step_time = std::max(max_step_time, now - ts);
    int local[k_nflags] = {received_signal() != 0, checkpoints.due_by_time(now),
                           time_limit > 0 && (now - opt.start_wtime) + checkpoints.reserve_seconds(state_bytes) +
                                                     2 * max_step_time >= time_limit};
    int agreed[k_nflags];
    agreement.exchange(local, agreed);
    if (solver->step_index() >= steps || solver->finished()) break;
    if (agreed[k_flag_signal] || agreed[k_flag_time_limit]) {
      stop_reason = agreed[k_flag_signal] ? "signal" : "time limit";
      break;
    }
    if (checkpoints.due_by_steps(solver->step_index()) || agreed[k_flag_checkpoint])
      checkpoints.write(*solver, now, agreed[k_flag_checkpoint] ? "interval" : "every_steps");
  }
  Kokkos::fence();
  const double loop = MPI_Wtime() - t0;
  const std::int64_t done = solver->step_index() - first;
  int code = k_exit_finished;
  if (stop_reason) {
    int sig = received_signal();
    if (comm.is_root())
      std::printf("Stopping at step %lld: %s%s%s\n", static_cast<long long>(solver->step_index()), stop_reason,
                  sig ? " " : "", sig ? signal_name(sig) : "");
    const bool ok = checkpoints.write(*solver, MPI_Wtime(), stop_reason);
    code = ok || checkpoints.written() > 0 || !resumed_from.empty() ? k_exit_resume_me : k_exit_failure;
  } else {
    checkpoints.write_final(*solver);
  }
  auto lines = solver->summary();
  if (comm.is_root()) {
    std::printf("Loop time: %.6g s on %d ranks for %lld steps\n", loop, comm.size(), static_cast<long long>(done));
    if (loop > 0 && done > 0)
      std::printf("Performance: %.6g %s/s\n", solver->work_per_step() * static_cast<double>(done) / loop,
                  solver->work_unit().c_str());
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
    const double wall = MPI_Wtime() - opt.start_wtime;
    std::printf("Checkpoints: %d written, %d failed, %.3g s in total (%.2g%% of %.3g s)\n", checkpoints.written(),
                checkpoints.failed(), checkpoints.total_seconds(), 100.0 * checkpoints.total_seconds() / wall, wall);
    if (code == k_exit_resume_me) std::printf("Exit 75: stopped early with a valid checkpoint; run the same command to resume\n");
    std::fflush(stdout);
  }
  return code;
}

}  // namespace spotrun::launcher
