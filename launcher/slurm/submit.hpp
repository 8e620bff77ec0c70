#pragma once
// `spotrun submit DECK`: renders a Slurm batch script for a deck (the script of slurm/, with the deck,
// output directory and resources filled in) and submits it with sbatch, or prints it (--dry-run).
// The job checkpoints on SIGUSR1 (sent before the time limit and on preemption), requeues itself
// while SLURM_RESTART_COUNT < max_requeues, and resumes from OUTDIR's newest checkpoint when it
// starts again. See docs/slurm.md.
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace CLI {
class App;
}

namespace spotrun::launcher {

struct SubmitOptions {
  std::string deck_path;
  std::vector<std::string> sets;  // --set overrides, passed on to `spotrun run`
  std::string output_dir;         // empty: run.output_dir, else runs/<deck stem> (made absolute)
  int nodes = 1;
  int gpus_per_node = 0;          // > 0: GPU job, one rank per GPU; 0: CPU job
  int ntasks_per_node = 0;        // CPU job: ranks per node (0: 1); GPU job: must be 0 or gpus_per_node
  int cpus_per_task = 0;          // 0: not requested (the cluster's default)
  std::string time;               // Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]); empty: default
  std::string partition;
  std::string account;
  std::string job_name;           // empty: spotrun-<deck stem>
  int max_requeues = 20;          // the job requeues itself while SLURM_RESTART_COUNT is below this
  int signal_lead = 120;          // --signal=B:USR1@<this> seconds before the time limit; 0: no signal
  std::string spotrun;            // spotrun binary the job runs; empty: this executable
  bool dry_run = false;
};

// Adds the options of `spotrun submit` to a CLI11 subcommand, writing into `opt`.
void add_submit_options(CLI::App& sub, SubmitOptions& opt);

// Checks the options; returns "" or the reason they cannot be rendered safely (names must be plain
// Slurm names, paths must not contain control characters, numbers must be in range).
std::string check_submit_options(const SubmitOptions& opt);

// The batch script for options whose paths are final (render uses deck_path, output_dir and spotrun
// exactly as given: `submit` makes them absolute first). Every value from the deck or the command line
// is validated (InputError) and shell-quoted, so none can inject shell code.
std::string render_sbatch(const SubmitOptions& opt);

// The part of every spotrun batch script after its settings: signal forwarding, running the step,
// requeueing on exit code 75. slurm/*.sbatch carry the same text: all are made from slurm/spotrun.sbatch.in.
const std::string& sbatch_job_body();

// Shell word for any string: single-quoted, with ' written as '\''.
std::string shell_quote(const std::string& value);

// `spotrun submit`: loads and validates the deck, renders the script, then prints it (dry run) or writes
// it to OUTDIR/spotrun-job.sbatch and runs sbatch on it. Returns the exit code (0, 1 sbatch failed,
// 2 bad input). Work happens on the root rank; the verdict is agreed by all ranks.
int submit(const comm::Communicator& comm, const SubmitOptions& opt);

}  // namespace spotrun::launcher
