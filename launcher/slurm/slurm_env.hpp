#pragma once
// What a run reads from Slurm's environment: the job it runs in (SLURM_JOB_ID), whose end time
// (io/slurm_job.hpp) is a time limit of the run (docs/slurm.md).
#include <optional>
#include <string>

#include "comm/communicator.hpp"
#include "io/child_process.hpp"
#include "io/slurm_job.hpp"

namespace spotrun::launcher {

using io::k_slurm_exit_margin;
using io::parse_scontrol_end_time;
using io::parse_slurm_timestamp;
using io::run_command;

// SLURM_JOB_ID of this process's environment: the Slurm job it runs in, "" when not under Slurm.
std::string slurm_job_id();

// io::slurm_seconds_left of the job this process runs in (slurm_job_id()).
std::optional<double> slurm_seconds_left(std::string* note = nullptr);

// Collective: io::time_limit_with_slurm of the job this process runs in (slurm_job_id()).
double time_limit_with_slurm(const comm::Communicator& comm, double deck_limit, double start_wtime);

}  // namespace spotrun::launcher
