#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/transport.hpp"
#include "launcher/deck/deck.hpp"
#include "launcher/environment.hpp"
#include "launcher/run/console.hpp"
#include "io/checkpoint.hpp"
#include "solvers/solver.hpp"

namespace spotrun::launcher {

struct RunOptions {
  std::string deck_path;
  std::vector<std::string> sets;
  std::string output_dir;  // empty: from the deck or runs/<stem>
  std::string resume = "auto";  // "auto" (newest valid checkpoint), "never", or a checkpoint file
  double start_wtime = 0;       // MPI_Wtime() at program start (time limits count from it)
  Verbosity verbosity = Verbosity::normal;  // --quiet, --verbose: what the terminal shows (console.hpp)
  Environment environment;  // the process's, read where the command started (launcher/environment.hpp)
};

// Reads the deck on the root rank, broadcasts it, applies --set overrides and validates it on every
// rank (so every rank reaches the same verdict). Throws InputError.
Deck load_deck(const comm::Communicator& comm, const std::string& path, const std::vector<std::string>& sets);
// Makes the solver run.solver names, from its registration (solvers/registry.hpp); collective. Fresh:
// reads the solver's inputs (a data file) and refuses, on every rank, a system whose memory cannot fit.
// restoring: no initial state and no memory check (a resume checks against the checkpoint's size);
// restore() follows. user: who runs it (USER of the environment, launcher::Environment::user), for the files
// that name their author (solvers::SolverContext::user).
std::unique_ptr<Solver> make_solver(const comm::Communicator& comm, comm::Transport& transport, const Deck& deck,
                                    const std::string& deck_path, bool restoring, const std::string& user = "");
// `spotrun validate DECK`: every check a fresh run makes before it allocates its system, on as many ranks
// as this process group has: the deck (load_deck), its transport, the files it names read and parsed as a
// run reads them, the memory estimate on this many ranks and the solver's own checks
// (SolverRegistration::check_fresh: MD pair coefficients, box against cutoff + skin for the rank grid).
// Prints the resolved deck; returns 0, or throws InputError on every rank with the message a run gives.
// nccl_timeout: SPOTRUN_NCCL_TIMEOUT of the environment, for the transport (comm::TransportOptions).
int validate(const comm::Communicator& comm, const std::string& deck_path, const std::vector<std::string>& sets,
             const std::string& nccl_timeout = "");
// The deck a checkpoint holds (/meta/deck), parsed and validated; InputError when it is not a valid deck
// or its physics is not the checkpoint's /meta/physics. A resume (of any deck) and `spotrun inspect` both
// refuse such a checkpoint.
Deck checkpoint_deck(const io::CheckpointSource& reader);
Deck checkpoint_deck(const io::CheckpointMeta& meta, const std::string& path);
// Runs a deck to completion; returns the exit code.
int run(const comm::Communicator& comm, const RunOptions& options);
// Prints the run header (version, build, Kokkos, ranks, nodes, every rank's device with warnings about
// shared or unused GPUs, and the transport when given; without a transport, as `spotrun info`, whether
// the NCCL library loads where NCCL is compiled in: "NCCL library: libnccl.so.2, NCCL 2.28.9" or "NCCL
// library: not loaded: ...") on the root rank. Collective: it gathers the
// devices.
void print_header(const comm::Communicator& comm, const comm::Transport* transport = nullptr);
// `spotrun inspect FILE...`: for each checkpoint, verifies every byte and checksum and restores its state
// into the solver of the deck it holds through the function a resume uses (checkpoint_deck(), the memory
// estimate of that deck on this many ranks, the solver's restore()); prints a report. Returns 0 when every file is
// fine, else 2. nccl_timeout: as validate()'s.
int inspect(const comm::Communicator& comm, const std::vector<std::string>& paths, const std::string& nccl_timeout = "");

}  // namespace spotrun::launcher
