// What a run reads from Slurm's environment (slurm_env.hpp).
#include "launcher/slurm/slurm_env.hpp"

#include <cstdlib>

namespace spotrun::launcher {

std::string slurm_job_id() {
  // SLURM_JOB_ID: set by Slurm in a job's environment (sbatch, salloc, srun); its end time is read with
  // squeue or scontrol (io/slurm_job.hpp).
  const char* job = std::getenv("SLURM_JOB_ID");
  return job ? job : "";
}

std::optional<double> slurm_seconds_left(std::string* note) { return io::slurm_seconds_left(slurm_job_id(), note); }

double time_limit_with_slurm(const comm::Communicator& comm, double deck_limit, double start_wtime) {
  return io::time_limit_with_slurm(comm, deck_limit, start_wtime, slurm_job_id());
}

}  // namespace spotrun::launcher
