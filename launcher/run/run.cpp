#include "launcher/run/run.hpp"

#include <spdlog/spdlog.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <limits>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <type_traits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "launcher/run/checkpointing.hpp"
#include "launcher/run/console.hpp"
#include "launcher/run/memory_check.hpp"
#include "launcher/run/output_lock.hpp"
#include "launcher/run/run_status.hpp"
#include "io/slurm_job.hpp"  // --- Slurm: the job's end time as a time limit ---
#include "launcher/run/spot_notices.hpp"  // --- spot notices: a watcher thread on each node ---
#include "launcher/run/heartbeat.hpp"  // --- stalls: heartbeat files and the in-rank watchdog ---
#include "launcher/run/fence.hpp"  // --- fencing: no write from an attempt that is no longer current ---
#include "io/report/recorder.hpp"  // --- run report (docs/report.md) ---
#include "comm/copy_counter.hpp"
#include "io/checkpoint_store.hpp"  // inspect: a checkpoint of either kind
#include "comm/device.hpp"
#include "comm/nccl_library.hpp"
#include "comm/transport.hpp"
#include "launcher/run/step_observers.hpp"
#include "launcher/run/stop.hpp"
#include "launcher/run/thermo_file.hpp"
#include "io/input_file.hpp"
#include "io/thermo_writer.hpp"
#include "solvers/registry.hpp"
#include "launcher/run/progress.hpp"
#include "spotrun/version.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {

Deck load_deck(const comm::Communicator& comm, const std::string& path, const std::vector<std::string>& sets) {
  // A deck is a short text; a larger file is refused before it is read (Deck::parse checks it again).
  Deck deck = Deck::parse(io::read_input_file(comm, path, "deck", k_deck_max_bytes), path);
  for (const auto& s : sets) deck.apply_set(s);
  deck.validate();
  derive_run_steps(deck);
  return deck;
}

void print_header(const comm::Communicator& comm, const comm::Transport* transport) {
  // Every rank's device, gathered (collective), then printed by rank 0 with the warnings about them. In a
  // run (a transport given) the lines that say nothing on this build are left out (the GPU parts of a
  // build without a device backend), and the build and transport details are log lines (console.hpp).
  const auto devices = comm::gather_devices(comm);
  if (!comm.is_root()) return;
  char buf[512];
  std::snprintf(buf, sizeof buf, "spotrun %s (git %s, %s build, SIMD %s)", k_version, k_git_hash, k_build_type, k_simd);
  say(Show::normal, buf);
  std::snprintf(buf, sizeof buf, "Kokkos %d.%d.%d, execution space %s (%s)", KOKKOS_VERSION / 10000,
                (KOKKOS_VERSION / 100) % 100, KOKKOS_VERSION % 100, Kokkos::DefaultExecutionSpace::name(),
                k_kokkos_source);
  say(Show::detail, buf);
  say(Show::normal, "MPI ranks: " + std::to_string(comm.size()) + " on " + std::to_string(comm.node_count()) + " node(s)");
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  if (!transport || k_kokkos_cuda) {
    std::snprintf(buf, sizeof buf, "GPU parts compiled in: Kokkos CUDA %s, cuFFT %s, cuBLAS %s, NCCL %s",
                  yes(k_kokkos_cuda), yes(k_have_cufft), yes(k_have_cublas), yes(k_have_nccl));
    say(Show::detail, buf);
  }
  // One line per rank: on the terminal up to 4 ranks, in the log always.
  const auto lines = comm::device_lines(devices);
  const Show device_level = lines.size() <= 4 ? Show::normal : Show::detail;
  if (device_level == Show::detail)
    say(Show::normal, "Devices: " + std::to_string(lines.size()) + " ranks, one line each in the log (docs/gpu.md)");
  say(device_level, "Devices (GPU binding, docs/gpu.md):");
  for (const auto& line : lines) say(device_level, "  " + line);
  for (const auto& warning : comm::analyse_devices(devices).warnings) say(Show::normal, warning);
  if (transport) say(Show::detail, "Transport: " + transport->name() + " (" + transport->description() + ")");
  // spotrun info: whether NCCL, loaded at run time, is there (a run says so in its transport line).
  if (!transport && k_have_nccl) {
    const comm::NcclLibrary& nccl = comm::nccl_library();
    say(Show::detail, "NCCL library: " + (nccl.loaded ? std::string(comm::k_nccl_library) + ", NCCL " + nccl.version
                                                       : "not loaded: " + nccl.error));
  }
}

namespace {

// The longest path spotrun writes below an output directory is about 80 bytes longer than it
// ("previous-<UTC time>-<k>/checkpoints/ckpt-<step>.h5.tmp"); 128 keeps every one within PATH_MAX.
constexpr std::size_t k_output_dir_max = 4096 - 1 - 128;

// "" when the absolute path of `outdir` leaves room for every file spotrun writes in it, else the error.
std::string check_output_dir_length(const std::string& outdir) {
  std::error_code ec;
  const std::string absolute = fs::absolute(outdir, ec).lexically_normal().string();
  if (ec || absolute.size() <= k_output_dir_max) return "";
  return "output directory '" + outdir + "': its absolute path is " + std::to_string(absolute.size()) +
         " bytes long; allowed: at most " + std::to_string(k_output_dir_max) +
         " bytes (PATH_MAX 4096 less 128 for the names of the files spotrun writes in it)";
}

// Refuses (exit 2 on every rank) a system whose memory cannot fit on the nodes or on their GPUs, before it
// is allocated.
// work_units: the size of the system when an input or a checkpoint fixes it, else < 0 (the deck's).
void check_solver_memory(const comm::Communicator& comm, const solvers::SolverRegistration& solver,
                         const io::Deck& deck, double work_units) {
  const solvers::MemoryEstimate m = solver.memory(deck, work_units, comm.size());
  check_memory_fits(comm, m.bytes_per_rank, m.what);
  check_device_memory_fits(comm, m.device_bytes_per_rank, m.what);
}

// The checks of a fresh start before its system is allocated, in the order a run makes them (collective):
// the solver's inputs read and parsed (the files the deck names), the memory estimate of the system on this
// many ranks, and the solver's own checks on this many ranks (SolverRegistration::check_fresh). Returns the
// inputs; InputError on every rank.
solvers::SolverInputs check_fresh_start(const solvers::SolverRegistration& solver, const solvers::SolverContext& ctx) {
  solvers::SolverInputs inputs = solver.read_inputs(ctx);
  check_solver_memory(ctx.comm, solver, ctx.deck, inputs.work_units);
  if (solver.check_fresh) solver.check_fresh(ctx, inputs);
  return inputs;
}

solvers::SolverContext context(const comm::Communicator& comm, comm::Transport& transport, const Deck& deck,
                               const std::string& deck_path, const std::string& user = "") {
  return {comm, transport, deck, deck_path,
          [&comm](double bytes, const std::string& what) { check_memory_fits(comm, bytes, what); }, user};
}

}  // namespace

std::unique_ptr<Solver> make_solver(const comm::Communicator& comm, comm::Transport& transport, const Deck& deck,
                                    const std::string& deck_path, bool restoring, const std::string& user) {
  const solvers::SolverRegistration& solver = solvers::solver_named(deck.get_string("run.solver"), deck.name());
  const solvers::SolverContext ctx = context(comm, transport, deck, deck_path, user);
  if (restoring) return solver.make(ctx, nullptr);
  const solvers::SolverInputs inputs = check_fresh_start(solver, ctx);
  return solver.make(ctx, &inputs);
}

int validate(const comm::Communicator& comm, const std::string& deck_path, const std::vector<std::string>& sets,
             const std::string& nccl_timeout) {
  set_signal_mode(SignalMode::exit_now, "reading the deck");
  const Deck deck = load_deck(comm, deck_path, sets);
  set_signal_mode(SignalMode::exit_now, "checking the deck's inputs");
  auto transport = comm::make_transport(deck.get_string("comm.transport"), comm, nccl_timeout);
  const solvers::SolverRegistration& solver = solvers::solver_named(deck.get_string("run.solver"), deck.name());
  check_fresh_start(solver, context(comm, *transport, deck, deck_path));
  if (comm.is_root()) std::printf("%s: valid on %d rank(s)\n%s", deck_path.c_str(), comm.size(), deck.resolved().c_str());
  return k_exit_finished;
}

Deck checkpoint_deck(const io::CheckpointSource& reader) { return checkpoint_deck(reader.meta(), reader.path()); }

Deck checkpoint_deck(const io::CheckpointMeta& meta, const std::string& path) {
  Deck deck = [&] {
    try {
      Deck d = Deck::parse(meta.deck, path + ":/meta/deck");
      d.validate();
      return d;
    } catch (const InputError& e) {
      throw InputError(std::string("its deck (/meta/deck) is not a valid deck: ") + e.what());
    }
  }();
  const std::string differ = physics_changes(meta.physics, deck.physics());
  if (!differ.empty())
    throw InputError("its deck (/meta/deck) does not describe the physics it records (/meta/physics):" + differ);
  return deck;
}

namespace {

// Reads a checkpoint into a new solver of the deck, as a resume does (collective): the file verified,
// its solver the deck's, its own deck sound and the physics of both the same, the system's memory
// checked, every dataset read and the state validated by the solver. Throws InputError naming the
// problem; CollectiveError (exit 2) when the deck's physics is not the checkpoint's. user: as make_solver's.
std::unique_ptr<Solver> restore_solver(const comm::Communicator& comm, comm::Transport& transport, const Deck& deck,
                                       const std::string& deck_path, io::CheckpointSource& source,
                                       const std::string& user = "") {
  const std::string solver_name = deck.get_string("run.solver");
  const io::CheckpointMeta& meta = source.meta();
  if (meta.solver != solver_name)
    throw InputError("it holds solver '" + meta.solver + "', the deck runs '" + solver_name + "'");
  checkpoint_deck(meta, source.path());
  // The units define every number of the state (md.units): the physics lines differ too, but say it first.
  const std::string units = solvers::units_of(solvers::solver_named(solver_name, deck.name()), deck);
  if (!meta.units.empty() && meta.units != units)
    throw CollectiveError(deck.name() + ": checkpoint " + source.path() + " holds a system in units " + meta.units +
                              ", the deck runs units " + units + " (md.units); the units may not change on resume. "
                              "Use --resume=never (or another --output-dir) to start a new run.",
                          k_exit_bad_input);
  const std::string changes = physics_changes(meta.physics, deck.physics());
  if (!changes.empty())
    throw CollectiveError(deck.name() + ": the physics changed since checkpoint " + source.path() + ":" + changes +
                              "\nOnly run length, output, thermo, checkpoint and neighbour-list settings may change "
                              "on resume; use --resume=never (or another --output-dir) to start a new run.",
                          k_exit_bad_input);
  // A checkpoint holds at least the solver's bytes per unit of work: its size bounds the system it can
  // restore (the atoms of MD; a solver whose deck fixes the size ignores the bound).
  const solvers::SolverRegistration& registration = solvers::solver_named(solver_name, deck.name());
  check_solver_memory(comm, registration, deck,
                      static_cast<double>(source.bytes()) / registration.checkpoint_bytes_per_work_unit(deck));
  auto solver = make_solver(comm, transport, deck, deck_path, true, user);
  io::SolverState state = source.read(solver->state_layout());
  solver->restore(state);
  return solver;
}

}  // namespace

int inspect(const comm::Communicator& comm, const std::vector<std::string>& paths, const std::string& nccl_timeout) {
  set_signal_mode(SignalMode::exit_now, "inspect");
  bool all_ok = true;
  for (const auto& path : paths) {
    io::VerifyReport report;
    io::CheckpointMeta meta;
    std::string damaged;
    bool restorable = true;
    std::vector<std::string> described;  // what the restored solver simulates (Solver::describe())
    // What a resume would do with it: restore it into the solver of the deck it holds.
    auto check_restore = [&](io::CheckpointSource& reader) {
      std::string restore;
      try {
        const Deck deck = checkpoint_deck(reader.meta(), path);
        auto transport = comm::make_transport(deck.get_string("comm.transport"), comm, nccl_timeout);
        described = restore_solver(comm, *transport, deck, path, reader)->describe();
      } catch (const InputError& e) {
        restore = e.what();
      }
      if (restore.empty()) {
        report.lines.push_back("restore: the state restores into the " + meta.solver + " solver of its deck, as a resume does");
      } else if (report.ok) {
        report.ok = restorable = false;
        report.lines.push_back("restore: BAD: " + restore);
      }
    };
    try {
      // A shared file or a level set's index (io/checkpoint_store.hpp).
      const auto reader = io::open_checkpoint(comm, path);
      meta = reader->meta();
      report = reader->verify();
      if (meta.level.empty()) {
        check_restore(*reader);
      } else {  // a node file of a level set holds some rows only: its set's index restores
        std::istringstream level(meta.level);
        for (std::string line; std::getline(level, line);)
          if (line.rfind("block ", 0) != 0) report.lines.push_back("level: " + line);
        report.lines.push_back("restore: a node file holds its node's rows only; inspect the set's index "
                               "(OUTDIR/checkpoints/<set>.levels) to restore the whole state");
      }
    } catch (const InputError& e) {
      damaged = e.what();
    }
    if (comm.is_root()) {
      std::printf("%s\n", path.c_str());
      if (damaged.empty()) {
        std::printf("  solver: %s\n  step: %lld\n  time: %.17g\n  units: %s\n  written by: spotrun %s (git %s) on %d ranks\n",
                    meta.solver.c_str(), static_cast<long long>(meta.step), meta.time, meta.units.c_str(),
                    meta.version.c_str(), meta.git_hash.c_str(), meta.nranks);
        for (const auto& l : described) std::printf("  %s\n", l.c_str());
        for (const auto& l : report.lines) std::printf("  %s\n", l.c_str());
        std::printf("%s\n", report.ok ? (meta.level.empty() ? "OK: every byte and checksum verified, the state restores"
                                                             : "OK: every byte and checksum of the node file verified")
                      : restorable ? "DAMAGED: see above (a resume skips this file)"
                                   : "REFUSED: a resume of its deck on this many ranks would refuse it (see above)");
      } else {
        std::printf("  %s\nDAMAGED: a resume skips this file\n", damaged.c_str());
      }
      std::fflush(stdout);
    }
    all_ok = all_ok && damaged.empty() && report.ok;
  }
  return all_ok ? k_exit_finished : k_exit_bad_input;
}

namespace {

// The heading of an attempt in OUTDIR/spotrun.log.
std::string attempt_heading(const RunOptions& opt, int ranks) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string command = "spotrun run " + opt.deck_path;
  for (const auto& set : opt.sets) command += " --set " + set;
  if (!opt.output_dir.empty()) command += " --output-dir " + opt.output_dir;
  if (opt.resume != "auto") command += " --resume " + opt.resume;
  return "===== attempt started " + std::string(when) + " on " + std::to_string(ranks) + " rank(s), spotrun " +
         k_version + " (git " + k_git_hash + "): " + command + " =====";
}

// "Performance: 5.78e+06 atom-steps/s, 1446 timesteps/s, 6.245e+05 tau/day": the solver's work, the steps
// and the simulated time (time0: at the loop's start) per wall-clock time; the time in tau (lj), fs (real) or
// ps (metal).
std::string performance_line(const Solver& solver, const std::string& units, std::int64_t done, double loop,
                             double time0) {
  const double steps_per_second = static_cast<double>(done) / loop;
  const double time_per_day = (solver.time() - time0) / loop * 86400.0;
  char buf[256];
  std::snprintf(buf, sizeof buf, "Performance: %.6g %s/s, %.6g timesteps/s, %.6g %s/day",
                solver.work_per_step() * steps_per_second, solver.work_unit().c_str(), steps_per_second, time_per_day,
                units == "lj" ? "tau" : units == "real" ? "fs" : units == "metal" ? "ps" : "time units");
  return buf;
}

// Everything one run holds, made in this order by its phases (below) and unmade in reverse: an error once the
// solver exists aborts the transport before the solver's device memory is freed; the heartbeat thread stops
// before the run report ends.
struct Run {
  const comm::Communicator& comm;
  const RunOptions& opt;
  RunStatus& status;
  Deck deck;
  std::string outdir;
  const solvers::SolverRegistration* registration = nullptr;
  std::unique_ptr<report::TimedTransport> transport;  // --- run report: exchanges and fences timed ---
  std::optional<SpotNotices> notices;
  std::int64_t steps = 0, thermo_every = 1;
  double time_limit = 0;
  std::optional<CheckpointManager> checkpoints;
  std::unique_ptr<Solver> solver;
  std::optional<comm::AbortOnUnwind> abort_transport_first;
  std::vector<CheckpointFile> candidates;
  std::string resumed_from;
  std::optional<report::RunRecorder> run_report;
  bool thermo_warned = false;
  std::unique_ptr<io::ThermoWriter> thermo;
  std::optional<Heartbeat> heartbeat;
  std::optional<StopAgreement> agreement;
  std::optional<ProgressReporter> progress;
  // The time loop's figures.
  comm::CopyTally copies0{};
  std::size_t staged0 = 0;
  double t0 = 0, time0 = 0, loop = 0;
  std::int64_t first = 0;
  double copied = 0, scalars = 0, staged = 0;  // bytes and reads that left the solver's memory space in the loop
  const char* stop_reason = nullptr;
  // How it ends.
  int code = k_exit_finished;
  std::string notice;                      // the spot notice that stopped the run, described
  std::vector<std::string> noticed_hosts;  // and the nodes that saw it
};

// The run report's settings (io/report/recorder.hpp): the deck's report.* and checkpoint.* keys, and the
// attempt of `spotrun launch` this run is, if any.
report::RecorderSettings recorder_settings(const Deck& deck, const Environment& env) {
  report::RecorderSettings s;
  s.sample_seconds = deck.get_float("report.sample_seconds");
  s.price_per_gpu_hour = deck.get_float("report.price_per_gpu_hour");
  s.on_demand_price_per_gpu_hour = deck.get_float("report.on_demand_price_per_gpu_hour");
  s.min_gpu_utilisation = deck.get_float("report.min_gpu_utilisation");
  s.every_steps = deck.get_int("checkpoint.every_steps");
  s.every_seconds = deck.get_float("checkpoint.every_seconds");
  s.auto_interval = deck.get_string("checkpoint.interval") == "auto";
  s.mtbf = deck.get_float("checkpoint.mtbf");
  s.launch_attempt = env.launch_attempt.value_or("");
  return s;
}

// Start-up: the transport, spot notices, the header, the output directory taken (its lock, status.json), the
// limits, the checkpoint manager and the candidates of a resume. Returns an exit code when a stop signal of the
// start-up ends the run here, else 0.
int start_up(Run& r, std::optional<OutputDirectoryLock>& lock) {
  const comm::Communicator& comm = r.comm;
  r.outdir = r.opt.output_dir;
  if (r.outdir.empty()) r.outdir = r.deck.get_string("run.output_dir");
  if (r.outdir.empty()) r.outdir = (fs::path("runs") / fs::path(r.opt.deck_path).stem()).string();
  const std::string solver_name = r.deck.get_string("run.solver");
  r.registration = &solvers::solver_named(solver_name, r.deck.name());
  r.transport =
      report::timed(comm::make_transport(r.deck.get_string("comm.transport"), comm, r.opt.environment.nccl_timeout));
  // --- spot notices: polled from here on (a notice in the start-up stops the run at its first agreed step) ---
  r.notices.emplace(comm, r.deck);
  print_header(comm, r.transport.get());
  if (comm.is_root()) {
    say(Show::normal, "Deck: " + r.opt.deck_path);
    say(Show::normal, "Output directory: " + r.outdir + " (everything printed here and more: spotrun.log)");
    say(Show::detail, "--- resolved deck ---\n" + r.deck.resolved() + "---");
    say(Show::detail, r.notices->header());  // --- spot notices ---
  }
  std::fflush(stdout);
  set_signal_mode(SignalMode::start_up, "preparing the output directory");
  std::string error = check_output_dir_length(r.outdir);
  comm.agree<InputError>(error.empty(), error);
  if (comm.is_root()) {
    std::error_code ec;
    fs::create_directories(r.outdir, ec);
    if (ec) error = "cannot create output directory '" + r.outdir + "': " + ec.message();
  }
  comm.agree<InputError>(error.empty(), error);
  // The directory is this run's from here on; nothing in it is touched before.
  lock.emplace(comm, r.outdir, r.opt.environment.launch_attempt.value_or(""));
  r.status.begin(r.outdir, r.opt.deck_path);
  r.steps = r.deck.get_int("run.steps");
  r.thermo_every = r.deck.get_int("run.thermo_every");
  // --- Slurm: under Slurm the job's end time (less a margin) is a time limit too (io/slurm_job.hpp) ---
  r.time_limit = io::time_limit_with_slurm(comm, r.deck.get_seconds("run.time_limit"), r.opt.start_wtime,
                                           r.opt.environment.slurm_job_id);
  io::CheckpointMeta base;
  base.solver = solver_name;
  base.deck = r.deck.resolved();
  base.physics = r.deck.physics();
  base.units = solvers::units_of(*r.registration, r.deck);
  base.version = k_version;
  base.git_hash = k_git_hash;
  CheckpointSettings checkpointing = CheckpointSettings::from_deck(r.deck);
  checkpointing.rclone = r.opt.environment.rclone;  // SPOTRUN_RCLONE
  r.checkpoints.emplace(comm, r.outdir, std::move(checkpointing), base);
  r.checkpoints->remove_stale_temporaries();
  // An error from here on stops the transport (NCCL) before the solver's device memory is freed.
  r.abort_transport_first.emplace(*r.transport);
  if (r.opt.resume == "auto") {
    r.candidates = r.checkpoints->candidates();
  } else if (r.opt.resume != "never") {
    r.candidates.push_back({r.opt.resume, -1});
  }
  // Until the time loop, a stop signal ends the run: with exit 75 when there is a checkpoint to resume
  // from (nothing has been computed yet). One that came during the start-up is acted on here, before
  // anything in the output directory changes; from here on one ends the process at once.
  set_resumable_on_signal(!r.candidates.empty());
  return end_start_up(comm, "preparing the output directory");
}

// Resume: the newest candidate that restores (InputError when none of several does), or none; returns where
// each node file was read (a level set). Sets r.solver and r.resumed_from.
std::vector<std::string> resume(Run& r) {
  std::vector<std::string> level_sources;
  for (const auto& c : r.candidates) {
    set_signal_mode(SignalMode::exit_now, "reading a checkpoint");
    try {
      // Either kind, from its best surviving copy (launcher/run/checkpoint_store.hpp).
      const auto source = r.checkpoints->open(c);
      r.solver = restore_solver(r.comm, *r.transport, r.deck, r.opt.deck_path, *source, r.opt.environment.user);
      level_sources = source->sources();
      for (const auto& line : source->skipped())
        if (r.comm.is_root()) say_error("WARNING: checkpoint " + c.path + ": " + line);
      r.resumed_from = c.path;
      break;
    } catch (const InputError& e) {
      if (r.opt.resume != "auto") throw InputError("cannot resume from " + c.path + ": " + e.what());
      if (r.comm.is_root()) say_error("WARNING: skipping checkpoint " + c.path + ": " + e.what());
    }
  }
  if (!r.solver && !r.candidates.empty())
    throw InputError("no valid checkpoint in " + r.outdir + " (all " + std::to_string(r.candidates.size()) +
                     " damaged, see above); nothing was changed. Use --resume=never to start a new run there.");
  return level_sources;
}

// The solver ready for its first step: resumed (thermo.csv kept up to its step) or made fresh (its first row and
// frames written); thermo.csv open.
void set_up(Run& r, bool fresh_said, const std::vector<std::string>& level_sources) {
  const comm::Communicator& comm = r.comm;
  set_signal_mode(SignalMode::exit_now, "setting up the run");
  const std::string csv = (fs::path(r.outdir) / "thermo.csv").string();
  const bool resumed = r.solver != nullptr;
  if (resumed) {
    if (comm.is_root())
      say(Show::normal, "Resuming from " + r.resumed_from + " at step " + std::to_string(r.solver->step_index()));
    for (const auto& line : level_sources)
      if (comm.is_root()) say(Show::detail, "  node file " + line);  // --- checkpoint.local_dir ---
    truncate_thermo(comm, csv, r.solver->step_index(), r.solver->thermo_columns());
  } else {
    if (comm.is_root() && !fresh_said)
      say(Show::normal, r.opt.resume == "never" ? "Starting fresh (--resume never)"
                                                : "Starting fresh: no checkpoint to resume from in " + r.outdir);
    r.solver = make_solver(comm, *r.transport, r.deck, r.opt.deck_path, false, r.opt.environment.user);
  }
  // What the solver simulates (Solver::describe(): for MD the atoms, box, pair style and the k-space solver's
  // choice of g_ewald and mesh): spotrun.log, and the terminal with --verbose.
  const std::vector<std::string> described = r.solver->describe();
  if (comm.is_root())
    for (const auto& line : described) say(Show::detail, "Solver: " + line);
  r.thermo = std::make_unique<io::ThermoWriter>(comm.is_root(), csv, r.solver->thermo_columns(), resumed && fs::exists(csv));
  r.thermo->set_printer([](const std::string& line) { say(Show::normal, line); });
  comm.agree<InputError>(r.thermo->open_error().empty(), r.thermo->open_error());
  r.solver->setup();
  if (!resumed) {
    write_thermo(comm, *r.thermo, *r.solver, r.checkpoints->settings().abort_on_error, r.thermo_warned);
    r.solver->write_outputs(r.outdir, r.solver->step_index());
  }
}

// The step the run ends at: run.steps after the solver's preamble (an energy minimisation), none while that
// goes on (Solver::preamble_end()).
std::int64_t end_step(const Run& r) {
  const std::int64_t preamble = r.solver->preamble_end();
  return preamble < 0 ? std::numeric_limits<std::int64_t>::max() : preamble + r.steps;
}

// The time loop: the solver's steps, each watched by the step's observers (launcher/run/step_observers.hpp),
// until the last step, the solver's own end, or an agreed stop (r.stop_reason).
void run_loop(Run& r) {
  const comm::Communicator& comm = r.comm;
  Solver& solver = *r.solver;
  r.status.running(solver.step_index(), r.resumed_from);
  comm.barrier();
  // --- stalls: OUTDIR/heartbeats/ and the watchdog (docs/cloud.md), once the run report (every rank past the
  // barrier) has read the heartbeats a lost attempt left ---
  r.heartbeat.emplace(comm, r.outdir, r.opt.environment.launch_attempt.value_or(""),
                      r.opt.environment.stall_timeout);
  set_signal_mode(SignalMode::record, "the time loop");
  r.copies0 = comm::copies_between_spaces();
  r.staged0 = r.transport->staged_bytes();
  r.t0 = MPI_Wtime();
  r.checkpoints->mark_started(r.t0);
  r.first = solver.step_index();
  r.time0 = solver.time();
  r.run_report->loop_started(r.t0, r.first, r.resumed_from);  // --- run report: set-up ends here ---
  r.heartbeat->loop_started(r.first);  // --- stalls: the watchdog arms ---
  r.agreement.emplace(comm.mpi());
  double max_step_time = 0;
  const double state_bytes = solver.work_per_step() * r.registration->checkpoint_bytes_per_work_unit(r.deck);
  r.progress.emplace(comm.is_root(), r.outdir, r.deck.get_float("run.progress_seconds"), r.first, r.steps, r.t0,
                     solver.work_unit(), solver.progress_fraction());
  // Progress lines on stderr (stdout keeps the thermo) and in the log; with --quiet in the log only.
  r.progress->set_printer([quiet = r.opt.verbosity == Verbosity::quiet](const std::string& line) {
    if (quiet) log_only(line); else say_error(line);
  });
  const auto observers = make_step_observers({comm, *r.transport, *r.thermo, r.thermo_warned, *r.checkpoints,
                                              *r.run_report, *r.heartbeat, *r.progress, r.status, r.outdir});
  while (solver.step_index() < end_step(r) && !solver.finished()) {
    StepEvent e{solver};
    e.started = MPI_Wtime();
    for (const auto& o : observers) o->step_begins();
    const std::int64_t next = solver.step_index() + 1;
    const bool in_preamble = solver.preamble_end() < 0;
    e.thermo_step = next % r.thermo_every == 0 || next == end_step(r);
    solver.step(e.thermo_step);
    // The last step of a minimisation has its row (its steps have their energies), as LAMMPS's minimize.
    if (in_preamble && solver.preamble_end() >= 0) e.thermo_step = true;
    for (const auto& o : observers) o->step_done(e);
    e.now = MPI_Wtime();
    max_step_time = std::max(max_step_time, e.now - e.started);
    for (const auto& o : observers) o->step_timed(e);
    const double now = e.now;
    int local[k_nflags] = {received_signal() != 0, r.checkpoints->due_by_time(now),
                           r.time_limit > 0 && (now - r.opt.start_wtime) + r.checkpoints->reserve_seconds(state_bytes) +
                                                       2 * max_step_time >= r.time_limit,
                           r.notices->noticed()};
    int agreed[k_nflags];
    const double ta = MPI_Wtime();
    r.agreement->exchange(local, agreed);
    r.run_report->add_communication(MPI_Wtime() - ta);  // --- run report ---
    if (solver.step_index() >= end_step(r) || solver.finished()) break;
    if (const std::string why = solver.stop_request(); !why.empty()) {
      if (comm.is_root()) say_error("spotrun: " + why);
      r.stop_reason = "the solver's stop";
      break;
    }
    if (agreed[k_flag_signal] || agreed[k_flag_time_limit] || agreed[k_flag_spot_notice]) {
      r.stop_reason = agreed[k_flag_signal] ? "signal" : agreed[k_flag_spot_notice] ? "spot notice" : "time limit";
      break;
    }
    e.interval_due = agreed[k_flag_checkpoint] != 0;
    for (const auto& o : observers) o->between_steps(e);
  }
}

// The stop checkpoint of an agreed stop (sets r.code: 75, or 1 without any checkpoint to resume from), with the
// durable tier given the time left.
void write_stop_checkpoint(Run& r) {
  const comm::Communicator& comm = r.comm;
  CheckpointManager& checkpoints = *r.checkpoints;
  Solver& solver = *r.solver;
  set_signal_mode(SignalMode::stopping, "writing the stop checkpoint");
  const int sig = received_signal();
  // --- spot notices: which notice, and its deadline (collective: every rank agreed on this reason) ---
  const bool spot = std::string(r.stop_reason) == "spot notice";
  r.notice = spot ? r.notices->describe(comm) : "";
  r.noticed_hosts = spot ? r.notices->noticed_hosts(comm) : std::vector<std::string>{};
  if (comm.is_root() && !r.notice.empty())
    say(Show::normal, "Stopping at step " + std::to_string(solver.step_index()) + ": spot notice (" + r.notice + ")");
  else if (comm.is_root())
    say(Show::normal, "Stopping at step " + std::to_string(solver.step_index()) + ": " + r.stop_reason +
                          (sig ? std::string(" ") + signal_name(sig) : std::string()));
  // A checkpoint of this very step may just have been written.
  const bool ok = checkpoints.last_step() == solver.step_index() ||
                  r.run_report->checkpoint(solver.step_index(), r.stop_reason, [&] {
                    return checkpoints.write(solver, MPI_Wtime(), r.stop_reason, true);
                  });
  r.code = ok || checkpoints.written() > 0 || !r.resumed_from.empty() ? k_exit_resume_me : k_exit_failure;
  // --- checkpoint.durable: the stop checkpoint to the durable tier with the time left (a notice's deadline,
  // the time limit, else checkpoint.durable_wait) ---
  if (checkpoints.durable()) {
    double left = checkpoints.settings().durable_wait;
    const double notice_left = r.notice.empty() ? -1 : r.notices->seconds_left(comm);
    if (notice_left >= 0) left = std::max(0.0, notice_left - 5);
    if (r.time_limit > 0) left = std::min(left, std::max(0.0, r.time_limit - (MPI_Wtime() - r.opt.start_wtime) - 2));
    checkpoints.flush_durable_now(left);
    record_levels(checkpoints, *r.run_report, r.status);
  }
  if (!ok && comm.is_root())
    say_error(std::string("ERROR: the stop checkpoint failed: ") +
              (r.code == k_exit_resume_me ? "the run resumes from its previous checkpoint (the steps since it are lost)"
                                          : "there is no earlier checkpoint, the steps of this run are lost"));
}

// Stop: the set in flight committed, the loop's time, then the stop checkpoint or the final state, and
// status.json's end record.
void stop(Run& r) {
  CheckpointManager& checkpoints = *r.checkpoints;
  Solver& solver = *r.solver;
  r.heartbeat->write_begins();  // --- stalls: from here on the stop checkpoint or final.h5 is written ---
  // --- checkpoint.async: the set in flight is committed before the stop checkpoint or the final state ---
  checkpoints.wait_background(r.stop_reason ? "the run stops, its stop checkpoint follows" : "the run ends");
  record_levels(checkpoints, *r.run_report, r.status);
  r.transport->fence();  // first: it gives up on a stuck exchange, where Kokkos::fence would wait forever
  Kokkos::fence();
  r.loop = MPI_Wtime() - r.t0;
  r.progress->at_end(solver.step_index(), MPI_Wtime(), solver.work_per_step(),
                     solver.step_index() >= end_step(r) || solver.finished(), solver.progress_fraction(),
                     solver.progress_measure());
  // Data that left the solver's memory space in the loop (the slowest rank's): copies between memory
  // spaces, and exchanges staged through host memory.
  const comm::CopyTally copies1 = comm::copies_between_spaces();
  r.copied = r.comm.max(static_cast<double>(copies1.bytes - r.copies0.bytes));
  r.scalars = r.comm.max(static_cast<double>(copies1.scalars - r.copies0.scalars));
  r.staged = r.comm.max(static_cast<double>(r.transport->staged_bytes() - r.staged0));
  if (r.stop_reason) {
    write_stop_checkpoint(r);
  } else {
    set_signal_mode(SignalMode::stopping, "writing the final state");
    r.run_report->checkpoint(solver.step_index(), "final", [&] {
      checkpoints.write_final(solver);
      return true;
    });
    if (checkpoints.durable()) {  // --- checkpoint.durable: the final state too, waiting at most durable_wait ---
      checkpoints.flush_durable_now(checkpoints.settings().durable_wait);
    }
    record_levels(checkpoints, *r.run_report, r.status);
  }
  // OUTDIR/status.json: how the run ended (launcher/run/run_status.hpp).
  if (r.code == k_exit_finished) {
    r.status.finished(solver.step_index(), checkpoints.final_path());
  } else if (r.code == k_exit_resume_me) {
    const int sig = received_signal();
    const std::int64_t at = checkpoints.last_step() >= 0 ? checkpoints.last_step() : r.first;
    const std::string from = checkpoints.last_step() >= 0 ? checkpoints.checkpoint_path(at) : r.resumed_from;
    // A spot notice names its nodes, which a supervisor does not use again (spotrun launch).
    r.status.stopped(solver.step_index(), from, at,
                     r.notice.empty() ? std::string(r.stop_reason) + (sig ? " " : "") + (sig ? signal_name(sig) : "")
                                      : "spot notice (" + r.notice + ")",
                     r.noticed_hosts);
  } else {
    r.status.failed(r.code, "the stop checkpoint failed and there is no earlier checkpoint");
  }
}

// Summary (console.hpp): on the terminal the loop's time and speed, the checkpoints and the final status line;
// the solver's statistics and the memory traffic in the log (and with --verbose); the run report's end.
void summary(Run& r) {
  const comm::Communicator& comm = r.comm;
  Solver& solver = *r.solver;
  const std::int64_t done = solver.step_index() - r.first;
  auto lines = solver.summary();
  // The stop step's thermo row, printed once (LAMMPS ends every run with its last step's row) on the
  // terminal and in spotrun.log: a stop between thermo steps computes it from the state just checkpointed
  // (Solver::prepare_thermo: the step ran without energies). thermo.csv keeps the thermo steps only, so that a run
  // stopped and resumed has the thermo.csv of one that ran through.
  if (r.code == k_exit_resume_me && r.thermo->last_step() != solver.step_index() &&
      r.checkpoints->last_step() == solver.step_index()) {
    solver.prepare_thermo();
    r.thermo->print_row(solver.step_index(), solver.thermo());
  }
  if (comm.is_root()) {
    char buf[1024];
    std::snprintf(buf, sizeof buf, "Loop time: %.6g s on %d ranks for %lld steps", r.loop, comm.size(),
                  static_cast<long long>(done));
    say(Show::normal, buf);
    if (r.loop > 0 && done > 0) say(Show::normal, performance_line(solver, solvers::units_of(*r.registration, r.deck), done, r.loop, r.time0));
    for (const auto& l : lines) say(Show::detail, l);
    // Memory traffic between memory spaces: only where the solver's memory is not the host's.
    if (done > 0 && !std::is_same<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>::value) {
      std::snprintf(buf, sizeof buf,
                    "Memory traffic per step: %.6g bytes of arrays between memory spaces (%.3g scalar reads), "
                    "%.6g bytes staged through host memory by the transport (slowest rank)%s",
                    r.copied / static_cast<double>(done), r.scalars / static_cast<double>(done),
                    r.staged / static_cast<double>(done),
                    comm::counting_copies() ? "" : " (copies not counted: a Kokkos tool owns the callbacks)");
      say(Show::detail, buf);
    }
    const double wall = MPI_Wtime() - r.opt.start_wtime;
    std::snprintf(buf, sizeof buf, "Checkpoints: %d written, %d failed, %.3g s in total (%.2g%% of %.3g s)",
                  r.checkpoints->written(), r.checkpoints->failed(), r.checkpoints->total_seconds(),
                  100.0 * r.checkpoints->total_seconds() / wall, wall);
    say(Show::normal, buf);
    if (r.code == k_exit_resume_me)
      say(Show::always, "Exit 75: stopped early with a valid checkpoint; run the same command to resume");
    else if (r.code == k_exit_finished)
      say(Show::always, "Finished at step " + std::to_string(solver.step_index()) + ": everything in " + r.outdir +
                            " (this output and more in spotrun.log)");
    else
      say(Show::always, "Failed: the stop checkpoint failed and there is no earlier checkpoint");
    std::fflush(stdout);
  }
  // --- run report: how this attempt ended; the summary of every attempt ---
  const int stop_signal = received_signal();
  std::string cause = r.code == k_exit_finished ? "finished" : r.stop_reason ? r.stop_reason : "failed";
  if (r.stop_reason && stop_signal) cause += std::string(" ") + signal_name(stop_signal);
  if (r.stop_reason && r.code == k_exit_failure) cause += " (stop checkpoint failed)";
  r.run_report->finish(r.code, cause, solver.step_index());
}

// The run, in its phases; `lock` and `status` belong to run() (below), so that a failure is recorded in
// OUTDIR/status.json while the lock is still held.
int run_locked(const comm::Communicator& comm, const RunOptions& opt, std::optional<OutputDirectoryLock>& lock,
               RunStatus& status) {
  install_stop_handlers();  // main() installed them before MPI_Init; a signal since then is kept
  comm::start_counting_copies();
  set_signal_mode(SignalMode::start_up, "reading the deck");
  Run r{comm, opt, status, load_deck(comm, opt.deck_path, opt.sets)};
  if (const int code = start_up(r, lock)) return code;
  bool fresh_said = false;  // the header says what resumes (or that nothing does) once
  if (opt.resume == "never") {
    const std::string moved = r.checkpoints->archive_previous_run();
    fresh_said = !moved.empty();
    if (comm.is_root() && !moved.empty())
      say(Show::normal, "Starting fresh: the earlier run's checkpoints, final.h5, thermo.csv and run report moved to " + moved);
  }
  // OUTDIR/spotrun.log: this attempt's lines after those of the attempts before it (console.hpp).
  if (comm.is_root()) open_run_log((fs::path(r.outdir) / "spotrun.log").string(), attempt_heading(opt, comm.size()));
  const std::vector<std::string> level_sources = resume(r);
  // --- run report: this attempt in OUTDIR/attempts.jsonl and report.json (io/report/recorder.hpp) ---
  r.run_report.emplace(comm, recorder_settings(r.deck, r.opt.environment), r.outdir, opt.start_wtime, *r.transport);
  if (comm.is_root()) say(Show::detail, r.run_report->header());
  set_up(r, fresh_said, level_sources);
  run_loop(r);
  stop(r);
  summary(r);
  return r.code;
}

}  // namespace

int run(const comm::Communicator& comm, const RunOptions& opt) {
  // The terminal and OUTDIR/spotrun.log (console.hpp); the error that ends a run goes to the log here and
  // to stderr from main().
  Console console(comm.is_root(), opt.verbosity);
  std::optional<OutputDirectoryLock> lock;
  RunStatus status(comm, opt.environment.launch_attempt);
  try {
    return run_locked(comm, opt, lock, status);
  } catch (const CollectiveError& e) {
    if (comm.is_root()) log_only(std::string("ERROR: ") + e.what());
    status.failed(e.exit_code(), e.what());
    throw;
  } catch (const std::exception& e) {
    if (comm.is_root()) log_only(std::string("ERROR: ") + e.what());
    status.failed(k_exit_failure, e.what());  // on rank 0, before the job is aborted
    throw;
  }
}

}  // namespace spotrun::launcher
