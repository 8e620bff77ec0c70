// `spotrun launch DECK` (launch.hpp): its command line, the deck and output directory it checks, then the
// supervisor (supervisor.hpp).
#include "launcher/launch/launch.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "launcher/launch/signals.hpp"
#include "launcher/launch/supervisor.hpp"
#include "launcher/launch/this_machine.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {

using namespace impl;

namespace {

void add_options(CLI::App& app, LaunchOptions& opt) {
  app.add_option("deck", opt.deck_path, "Deck file (TOML)")->required();
  app.add_option("--np", opt.np, "Ranks (-np N): at most this many, fewer when the hosts left have fewer slots "
                                 "(default: every slot of the hostfile; without a hostfile: this machine's cores)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--hostfile", opt.hostfile, "Open MPI hostfile, read again before every attempt (default: this machine)");
  app.add_option("--ranks-per-node", opt.ranks_per_node, "Ranks on each host (default: its slots, else its cores)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--max-restarts", opt.max_restarts, "Relaunches at most (default 10)")->check(CLI::Range(0, 1000000));
  app.add_option("--min-ranks", opt.min_ranks, "Give up rather than run on fewer ranks (default 1)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--output-dir", opt.output_dir, "Output directory (default: run.output_dir or runs/<deck stem>)");
  app.add_option("--set", opt.sets, "Override a deck key: section.key=value (repeatable), passed on to spotrun run");
  app.add_option("--mpirun", opt.mpirun, "mpirun to use (default: the one next to spotrun, else the first on PATH)");
  app.add_option("--probe-timeout", opt.probe_timeout, "Seconds a host has to answer its probe (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--stall-timeout", opt.stall_timeout,
                 "Seconds without step progress, or without a host's heartbeat, after which the attempt is declared "
                 "stalled, ended and relaunched (default: without step progress, the larger of 60 s and 10 times the "
                 "longest time between two steps, checkpoint writes included; without a host's heartbeat, 60 s)")
      ->check(CLI::Range(6.0, 1e7));
  app.add_option("--hosts-command", opt.hosts_command,
                 "Shell command that prints the hosts, one per line as in a hostfile (HOST [slots=N]); run before "
                 "every attempt and, with --grow, at every checkpoint (instead of --hostfile)");
  app.add_flag("--grow", opt.grow,
               "When hosts come back (the hostfile or --hosts-command names more that answer), stop at the next "
               "checkpoint and relaunch on more ranks if the measured cost of a relaunch is below the time it saves");
  app.add_flag("--doctor", opt.doctor, "Run spotrun doctor on the hosts before each attempt and leave out those it names");
  app.add_option("--doctor-expect", opt.doctor_expect, "Expected values for spotrun doctor (its --expect FILE)")
      ->check(CLI::ExistingFile);
  app.add_option("--doctor-slow-factor", opt.doctor_slow_factor, "spotrun doctor's --slow-factor (implies --doctor)")
      ->check(CLI::Range(0.01, 0.99));
  app.footer("Arguments after -- go to mpirun. Exit codes: 0 finished, 75 stopped on request (SIGINT, SIGTERM) or by the "
             "run's time limit with a checkpoint, 1 gave up, 2 bad usage or input.");
}

// The options that go together; false (the error printed) when they do not.
bool usage_ok(const LaunchOptions& opt) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK")) {
    std::fprintf(stderr, "ERROR: spotrun launch starts mpirun itself: run it on its own, not under mpirun or srun\n");
    return false;
  }
  if (!opt.hostfile.empty() && !opt.hosts_command.empty()) {
    std::fprintf(stderr, "ERROR: --hostfile and --hosts-command both name the hosts: give one of them\n");
    return false;
  }
  if (opt.grow && opt.hostfile.empty() && opt.hosts_command.empty()) {
    std::fprintf(stderr, "ERROR: --grow needs --hostfile or --hosts-command (where the hosts to grow onto are named)\n");
    return false;
  }
  if (opt.np > 0 && opt.min_ranks > opt.np) {
    std::fprintf(stderr, "ERROR: --min-ranks %d is more than -np %d\n", opt.min_ranks, opt.np);
    return false;
  }
  return true;
}

// The deck, read as spotrun run reads it, and the hosts it will run on: the output directory and run.steps;
// false (the error printed) when either is refused.
bool read_deck(const LaunchOptions& opt, std::string& outdir, long long& total_steps) {
  try {
    Deck deck = Deck::parse(read_regular_file(opt.deck_path, "deck", k_deck_max_bytes), opt.deck_path);
    for (const auto& s : opt.sets) deck.apply_set(s);
    deck.validate();
    derive_run_steps(deck);
    outdir = opt.output_dir.empty() ? deck.get_string("run.output_dir") : opt.output_dir;
    if (outdir.empty()) outdir = (fs::path("runs") / fs::path(opt.deck_path).stem()).string();
    if (!opt.hostfile.empty()) parse_hostfile(read_regular_file(opt.hostfile, "hostfile", 1 << 20), opt.hostfile);
    if (!opt.hosts_command.empty()) hosts_from_command(opt.hosts_command, std::max(30.0, opt.probe_timeout));
    total_steps = deck.get_int("run.steps");
  } catch (const InputError& e) {
    std::fprintf(stderr, "ERROR: %s\n", e.what());
    return false;
  }
  return true;
}

}  // namespace

int launch_main(int argc, char** argv) {
  // "-np N" as mpirun spells it; everything after "--" goes to mpirun.
  std::vector<std::string> args;
  LaunchOptions opt;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      opt.mpirun_args.assign(argv + i + 1, argv + argc);
      break;
    }
    args.push_back(a == "-np" ? "--np" : a.rfind("-np=", 0) == 0 ? "--np=" + a.substr(4) : a);
  }
  CLI::App app{"spotrun launch: run a deck under mpirun on ad hoc nodes, relaunching from the newest checkpoint on "
               "the hosts left when ranks or hosts fail (docs/cloud.md)",
               "spotrun launch"};
  add_options(app, opt);
  std::vector<char*> cargv{argv[0]};
  std::vector<std::string> storage = args;
  for (auto& s : storage) cargv.push_back(s.data());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : k_exit_bad_input;
  }
  if (!usage_ok(opt)) return k_exit_bad_input;
  // The deck first, exactly as spotrun run reads it (without MPI: launch has none).
  std::string outdir;
  long long total_steps = 0;
  if (!read_deck(opt, outdir, total_steps)) return k_exit_bad_input;
  const std::string mpirun = find_mpirun(opt.mpirun);
  if (mpirun.empty()) {
    std::fprintf(stderr, "ERROR: %s not found (give its path with --mpirun)\n",
                 opt.mpirun.empty() ? "mpirun (next to spotrun or on PATH)" : ("--mpirun " + opt.mpirun).c_str());
    return k_exit_bad_input;
  }
  // The ranks run this spotrun; from a bundle, its wrapper (bin/spotrun sets the bundle's environment).
  std::string spotrun = self_executable();
  if (const char* bundle = std::getenv("SPOTRUN_BUNDLE"))
    if (executable((fs::path(bundle) / "bin" / "spotrun").string())) spotrun = (fs::path(bundle) / "bin" / "spotrun").string();
  if (spotrun.empty()) {
    std::fprintf(stderr, "ERROR: cannot tell where this spotrun is (/proc/self/exe)\n");
    return k_exit_failure;
  }
  std::error_code ec;
  outdir = fs::absolute(outdir, ec).lexically_normal().string();
  while (outdir.size() > 1 && outdir.back() == '/') outdir.pop_back();
  fs::create_directories(outdir, ec);
  if (ec) {
    std::fprintf(stderr, "ERROR: cannot create output directory '%s': %s\n", outdir.c_str(), ec.message().c_str());
    return k_exit_bad_input;
  }
  std::string error;
  const int lock = take_launch_lock(outdir, error);
  if (lock < 0) {
    std::fprintf(stderr, "ERROR: %s\n", error.c_str());
    return k_exit_bad_input;
  }
  if (!opt.hostfile.empty()) opt.hostfile = fs::absolute(opt.hostfile, ec).string();
  if (opt.doctor_slow_factor > 0) opt.doctor = true;
  if (!opt.doctor_expect.empty()) {
    opt.doctor_expect = fs::absolute(opt.doctor_expect, ec).string();
    opt.doctor = true;
  }
  const std::string deck = fs::absolute(opt.deck_path, ec).lexically_normal().string();
  install_launch_signals();
  Launcher launcher(opt, outdir, deck, mpirun, spotrun, total_steps);
  const int code = launcher.run();
  (void)!::ftruncate(lock, 0);
  ::close(lock);
  return code;
}

}  // namespace spotrun::launcher
