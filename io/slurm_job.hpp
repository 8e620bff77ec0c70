#pragma once
// What spotrun learns from Slurm about the job it runs in: the job's end time, read once at start so
// the run loop can stop with a checkpoint before the time limit (see docs/slurm.md). The job's id is the
// caller's (the launcher reads SLURM_JOB_ID, launcher/slurm/slurm_env.hpp); nothing here reads the
// environment.
#include <ctime>
#include <optional>
#include <string>

#include "comm/communicator.hpp"

namespace spotrun::io {

// Seconds from now until the end time of Slurm job `job_id`, or nullopt when there is no job ("": not
// under Slurm), when the job has no time limit, or when the end time cannot be read (then *note says why,
// for a warning; also for an id that is not a job id). Reads `squeue -h -j JOB_ID -o %e`, falling back to
// `scontrol show job JOB_ID` (EndTime=); each command gets a few seconds before it is given up. Not
// collective: call it on one rank and broadcast the result. May be negative (end time passed).
std::optional<double> slurm_seconds_left(const std::string& job_id, std::string* note = nullptr);

// Seconds kept free between spotrun's stop and the job's end time: exit, MPI_Finalize and the batch
// script's requeue happen in it (Slurm's SIGTERM may come right at the end time).
constexpr double k_slurm_exit_margin = 10;

// Collective. The time limit of a run in seconds after start_wtime (as run.time_limit counts): the deck's
// limit (0 = none) or, under Slurm job `job_id` ("": none), the time left until the job's end time less
// k_slurm_exit_margin, whichever comes first. The root rank asks Slurm once, prints what it found and
// broadcasts it.
double time_limit_with_slurm(const comm::Communicator& comm, double deck_limit, double start_wtime,
                             const std::string& job_id);

// A Slurm timestamp "YYYY-MM-DDTHH:MM:SS" (local time, as squeue and scontrol print it) as a time_t;
// nullopt for anything else ("N/A", "Unknown", "NONE", "INVALID", empty).
std::optional<std::time_t> parse_slurm_timestamp(const std::string& text);

// The EndTime= field of `scontrol show job` output (one or several lines); nullopt if absent or unset.
std::optional<std::time_t> parse_scontrol_end_time(const std::string& scontrol_output);

}  // namespace spotrun::io
