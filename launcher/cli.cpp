// spotrun: the command line (main.cpp calls it; so does the test program spotrun-test).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "comm/communicator.hpp"
#include "comm/device.hpp"
#include "comm/errors.hpp"
#include "io/input_file.hpp"
#include "launcher/deck/deck.hpp"
#include "launcher/environment.hpp"
#include "launcher/launch/launch.hpp"  // --- spotrun launch ---
#include "launcher/doctor/doctor.hpp"  // --- spotrun doctor ---
#include "launcher/run/export.hpp"
#include "launcher/report/command.hpp"  // --- spotrun report ---
#include "launcher/run/run.hpp"
#include "launcher/run/stop.hpp"
#include "spotrun/version.hpp"
#include "launcher/slurm/submit.hpp"  // --- Slurm (spotrun submit) ---

using namespace spotrun;

namespace {

// Starts Kokkos (on a GPU build: its device backend) for the commands that compute. Collective: when it
// fails on any rank (no usable GPU, no driver), each failing rank says why and every rank exits 2.
void start_kokkos(std::vector<char*>& kokkos_argv, int world_rank) {
  std::string error;
  try {
    int kokkos_argc = static_cast<int>(kokkos_argv.size()) - 1;  // the list ends with nullptr
    Kokkos::initialize(kokkos_argc, kokkos_argv.data());
  } catch (const std::exception& e) {
    error = std::string("cannot start Kokkos' ") + Kokkos::DefaultExecutionSpace::name() + " backend on rank " +
            std::to_string(world_rank) + ": " + e.what() +
            (k_kokkos_cuda ? " (this CUDA build needs a usable GPU and an NVIDIA driver at least as new as its CUDA "
                             "runtime: see docs/gpu.md; `spotrun info` works without one)"
                           : " (check the --kokkos-* options)");
  }
  int failed = error.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!error.empty()) std::fprintf(stderr, "ERROR: %s\n", error.c_str());
  if (any) throw CollectiveError("Kokkos did not start on every rank (see above)", k_exit_bad_input);
}

int dispatch(int argc, char** argv, int world_rank, double start_wtime, const launcher::Environment& env,
             std::vector<char*>& kokkos_argv) {
  CLI::App app{"spotrun: distributed MD and pseudo-spectral fluid runs that survive preemption"};
  app.set_version_flag("--version", std::string("spotrun ") + k_version + " (git " + k_git_hash + ")");
  app.require_subcommand(1);

  launcher::RunOptions run_opt;
  run_opt.start_wtime = start_wtime;
  run_opt.environment = env;
  auto* run = app.add_subcommand("run", "Run a deck");
  run->add_option("deck", run_opt.deck_path, "Deck file (TOML)")->required();
  run->add_option("--set", run_opt.sets, "Override a deck key: section.key=value (repeatable)");
  auto* output_dir = run->add_option("--output-dir", run_opt.output_dir,
                                     "Output directory (default: run.output_dir or runs/<deck stem>)");
  run->add_option("--resume", run_opt.resume,
                  "auto: resume from the newest valid checkpoint in the output directory (default); never: start "
                  "fresh; or a checkpoint FILE")
      ->default_str("auto");
  // What the terminal shows (launcher/run/console.hpp); OUTDIR/spotrun.log has every line either way.
  bool run_verbose = false, run_quiet = false;
  auto* verbose_flag = run->add_flag("--verbose", run_verbose,
                                     "Also print the resolved deck, timings, memory traffic and advice (all in OUTDIR/spotrun.log)");
  run->add_flag("--quiet", run_quiet, "Print only errors and the final status line")->excludes(verbose_flag);
  run->callback([&] {
    run_opt.verbosity = run_verbose ? launcher::Verbosity::verbose
                        : run_quiet ? launcher::Verbosity::quiet
                                    : launcher::Verbosity::normal;
  });

  std::vector<std::string> inspect_paths;
  auto* inspect = app.add_subcommand(
      "inspect", "Verify checkpoints (every byte, every checksum, the state restores) and print their metadata");
  inspect->add_option("file", inspect_paths, "Checkpoint files (.h5)")->required();

  launcher::ExportOptions export_opt;
  auto* export_cmd = app.add_subcommand(
      "export", "Write the atoms of an MD checkpoint as a LAMMPS data file (read_data continues it) or extended XYZ");
  export_cmd->add_option("checkpoint", export_opt.checkpoint, "Checkpoint file (.h5, e.g. OUTDIR/final.h5)")->required();
  export_cmd->add_option("--lammps-data", export_opt.lammps_data, "LAMMPS data file to write (atom_style atomic)");
  export_cmd->add_option("--xyz", export_opt.xyz, "Extended XYZ file to write");

  std::string validate_path;
  std::vector<std::string> validate_sets;
  auto* validate = app.add_subcommand("validate", "Check a deck and print it resolved, without running");
  validate->add_option("deck", validate_path, "Deck file (TOML)")->required();
  validate->add_option("--set", validate_sets, "Override a deck key: section.key=value (repeatable)");

  auto* info = app.add_subcommand("info", "Print version, build and backend information");

  // --- Slurm: spotrun submit (launcher/slurm/submit.hpp) ---
  launcher::SubmitOptions submit_opt;
  auto* submit = app.add_subcommand(
      "submit", "Submit a deck as a Slurm batch job that checkpoints, requeues itself and resumes (or print it)");
  launcher::add_submit_options(*submit, submit_opt);
  // --- end Slurm ---

  // --- spotrun launch: handled in main() before MPI_Init (launcher/launch/launch.hpp); listed here for --help ---
  app.add_subcommand("launch", "Run a deck under mpirun on ad hoc nodes, relaunching from the newest checkpoint "
                               "when ranks or hosts fail (spotrun launch --help)")->allow_extras();

  doctor::DoctorOptions doctor_opt;  // --- spotrun doctor (launcher/doctor/doctor.hpp) ---
  doctor_opt.environment = env;
  auto* doctor_cmd = app.add_subcommand("doctor", "Measure CPUs, GPUs, MPI and the checkpoint directory of every rank before a run");
  doctor::add_doctor_options(*doctor_cmd, doctor_opt);

  // --- spotrun report (launcher/report/command.hpp, docs/report.md) ---
  std::string report_dir, report_png;
  bool report_json = false;
  auto* report_cmd = app.add_subcommand("report", "Print the run report of an output directory (every attempt: time, "
                                                  "GPU-hours, cost, work redone, checkpoint advice)");
  report_cmd->add_option("outdir", report_dir, "Output directory of spotrun run")->required();
  report_cmd->add_flag("--json", report_json, "Print report.json instead of the summary");
  report_cmd->add_option("--png", report_png, "Draw the timeline of the attempts and the thermo (energies, temperature, pressure against step) into this PNG file (python3-matplotlib)");

  // An unknown command ("spotrun runn"): CLI11 would say "A subcommand is required"; name the nearest one.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      commands.push_back(sub->get_name());
    if (std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
      std::string list;
      for (const auto& c : commands) list += (list.empty() ? "" : ", ") + c;
      const std::string near = io::closest_name(argv[1], commands);
      if (world_rank == 0)
        std::fprintf(stderr, "ERROR: unknown command %s; %s (spotrun --help)\n",
                     io::quote_for_message(argv[1], '\'').c_str(),
                     (near.empty() ? "the commands are " + list : "did you mean '" + near + "'?").c_str());
      return k_exit_bad_input;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = world_rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
    return code == 0 ? 0 : k_exit_bad_input;
  }

  if (*run && output_dir->count() > 0 && run_opt.output_dir.empty()) {
    if (world_rank == 0) std::fprintf(stderr, "ERROR: --output-dir: the directory must not be empty\n");
    return k_exit_bad_input;
  }
  // --help and --version are answered above, info, submit and report need no Kokkos: none of them
  // starts a device backend, so they work on a machine without a GPU or driver.
  if (!*info && !*submit && !*report_cmd) start_kokkos(kokkos_argv, world_rank);
  comm::Communicator comm(MPI_COMM_WORLD);
  if (*run) return launcher::run(comm, run_opt);
  // The other commands: a stop signal since start-up ends them now (128 + the signal), a later one at once.
  if (const int code = launcher::end_start_up(comm, "start-up")) return code;
  if (*inspect) return launcher::inspect(comm, inspect_paths, env.nccl_timeout);
  if (*export_cmd) return launcher::export_checkpoint(comm, export_opt);
  if (*submit) return launcher::submit(comm, submit_opt);  // --- Slurm ---
  if (*doctor_cmd) return doctor::run_doctor(comm, doctor_opt);  // --- spotrun doctor ---
  if (*report_cmd) return report::report_command(comm, report_dir, report_json, report_png);  // --- spotrun report ---
  if (*validate) return launcher::validate(comm, validate_path, validate_sets, env.nccl_timeout);
  if (*info) {
    launcher::print_header(comm);
    return 0;
  }
  return 0;
}

// Whether `spotrun run` writes level sets in the background (checkpoint.local_dir and checkpoint.async in the
// deck with its --set overrides): its writer thread makes MPI calls beside the time loop's, which needs
// MPI_THREAD_MULTIPLE. Read before MPI starts, as the run reads it (io::read_regular_file: a regular file of at
// most the deck size limit; a FIFO, a device or a huge file could block or exhaust memory here, before any
// error can be reported collectively); a deck that cannot be read here is reported by the run itself.
bool wants_thread_multiple(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "run") return false;
  std::string path;
  std::vector<std::string> sets;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--set" || a == "--output-dir" || a == "--resume") && i + 1 < argc) {
      if (a == "--set") sets.emplace_back(argv[i + 1]);
      ++i;
    } else if (a.rfind("--set=", 0) == 0) {
      sets.push_back(a.substr(6));
    } else if (!a.empty() && a[0] != '-' && path.empty()) {
      path = a;
    }
  }
  if (path.empty()) return false;
  try {
    const std::string text = io::read_regular_file(path, "deck", launcher::k_deck_max_bytes);
    launcher::Deck deck = launcher::Deck::parse(text, path);
    for (const auto& s : sets) deck.apply_set(s);
    return !deck.get_string("checkpoint.local_dir").empty() && deck.get_bool("checkpoint.async");
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int launcher::command_line_main(int argc, char** argv) {
  // --- spotrun launch: a supervisor without MPI (a singleton MPI_Init would start an orted) ---
  if (argc > 1 && std::string(argv[1]) == "launch") return launcher::launch_main(argc, argv);
  // FUNNELED: the helper threads (the spot notice watcher, the NCCL watchdog) make no MPI call.
  // Before MPI starts (MPI_Init can take a second): a stop signal from here on is kept, and the run acts
  // on it once it knows its output directory (launcher/run/stop.hpp).
  launcher::install_stop_handlers();
  launcher::set_signal_mode(launcher::SignalMode::start_up, "start-up");
#ifdef OPEN_MPI
  // Open MPI 4's MPI-IO (OMPIO) queries its sharedfp/lockedfile component at every file open, which copies
  // the file's path into a 256-byte buffer and aborts the process on a longer path (fixed in later Open
  // MPI). spotrun uses no shared file pointers: leave that component out unless the user chose.
  ::setenv("OMPI_MCA_sharedfp", "^lockedfile", 0);
#endif
  int thread_level = 0;
  // checkpoint.async with checkpoint.local_dir: MPI_THREAD_MULTIPLE for the background writer of level sets
  // (launcher/run/checkpoint_levels.hpp checks what MPI provided and writes synchronously without it).
  MPI_Init_thread(&argc, &argv, wants_thread_multiple(argc, argv) ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED,
                  &thread_level);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  const double start = MPI_Wtime();
  // The environment variables spotrun reads, once (launcher/environment.hpp): passed down from here.
  const launcher::Environment env = launcher::Environment::read();
  // Kokkos sees only its own --kokkos-* options (so `spotrun --help` is spotrun's help); CLI11 the rest.
  std::vector<char*> kokkos_argv{argv[0]}, app_argv{argv[0]};
  std::vector<std::string> kokkos_args;
  for (int i = 1; i < argc; ++i) {
    const bool for_kokkos = std::string(argv[i]).rfind("--kokkos-", 0) == 0;
    (for_kokkos ? kokkos_argv : app_argv).push_back(argv[i]);
    if (for_kokkos) kokkos_args.emplace_back(argv[i]);
  }
  // The GPU of this rank, chosen before Kokkos starts its CUDA backend (comm/device.hpp, docs/gpu.md):
  // node-local rank modulo the visible devices, passed as --kokkos-device-id unless the user chose one.
  // Nothing on a CPU build.
  std::string device_option;
  try {
    device_option = comm::kokkos_device_option(comm::bind_device(MPI_COMM_WORLD, env.device), kokkos_args);
  } catch (const CollectiveError& e) {
    // Every rank got it (a bad SPOTRUN_CPU_BIND): one message, a clean exit.
    if (rank == 0) std::fprintf(stderr, "ERROR: %s\n", e.what());
    MPI_Finalize();
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR on rank %d: choosing the GPU: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, k_exit_failure);
  }
  if (!device_option.empty()) kokkos_argv.push_back(device_option.data());
  kokkos_argv.push_back(nullptr);
  try {
    code = dispatch(static_cast<int>(app_argv.size()), app_argv.data(), rank, start, env, kokkos_argv);
  } catch (const CollectiveError& e) {
    // Every rank reached this verdict together: report once and exit cleanly with its code.
    if (rank == 0) std::fprintf(stderr, "ERROR: %s\n", e.what());
    code = e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR on rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, k_exit_failure);
  }
  if (Kokkos::is_initialized()) Kokkos::finalize();
  MPI_Finalize();
  return code;
}
