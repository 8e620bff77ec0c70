#pragma once
// What spotrun reads from Slurm's environment: the job it runs in (SLURM_JOB_ID, read with the rest of the
// environment: launcher/environment.hpp), whose end time (io/slurm_job.hpp) is a time limit of a run
// (docs/slurm.md). Also names io's Slurm and command functions for spotrun submit.
#include <optional>
#include <string>

#include "io/child_process.hpp"
#include "io/slurm_job.hpp"

namespace spotrun::launcher {

using io::k_slurm_exit_margin;
using io::parse_scontrol_end_time;
using io::parse_slurm_timestamp;
using io::run_command;

// io::slurm_seconds_left of the job this process runs in (SLURM_JOB_ID of its environment now).
std::optional<double> slurm_seconds_left(std::string* note = nullptr);

}  // namespace spotrun::launcher
