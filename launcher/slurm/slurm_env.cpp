// What spotrun reads from Slurm's environment (slurm_env.hpp).
#include "launcher/slurm/slurm_env.hpp"

#include "launcher/environment.hpp"

namespace spotrun::launcher {

std::optional<double> slurm_seconds_left(std::string* note) {
  return io::slurm_seconds_left(Environment::read().slurm_job_id, note);
}

}  // namespace spotrun::launcher
