#pragma once
// The environment variables spotrun reads, each read here and only here: once, where a command starts
// (launcher::command_line_main, launcher/cli.cpp), and passed down as options and parameters. No library
// below the launcher reads the environment for a setting (docs/layout.md, "The environment"). An unset
// variable is "" (as is an empty one) unless said; what a value means and how a bad one is reported is the code's that
// uses it. Header only: the test programs' main (tests/support/test_main.cpp) reads the device's part the
// same way.
#include <cstdlib>
#include <optional>
#include <string>

#include "comm/device.hpp"

namespace spotrun::launcher {

struct Environment {
  // SPOTRUN_LAUNCH_ATTEMPT: the attempt of `spotrun launch` this rank belongs to (launch sets it in the
  // environment of an attempt's ranks): status.json's "attempt", heartbeats, write fencing
  // (launcher/run/fence.hpp), the run report's "launch_attempt". Unset: nullopt, not under launch
  // (status.json's "attempt" is null; set but empty, it is "").
  std::optional<std::string> launch_attempt;
  // SPOTRUN_STALL_TIMEOUT: seconds without a step before a rank's watchdog ends the run
  // (launcher/run/heartbeat.hpp), 0 off; unset: nullopt, the default (set but empty: a warning).
  std::optional<std::string> stall_timeout;
  // SLURM_JOB_ID: the Slurm job this process runs in, whose end time is a time limit of the run
  // (io/slurm_job.hpp).
  std::string slurm_job_id;
  // SPOTRUN_NCCL_TIMEOUT: seconds an NCCL exchange may wait for its peers (comm::TransportOptions, 300 when
  // unset; the doctor's all-reduce: 60).
  std::string nccl_timeout;
  // The rank's place and device (comm::DeviceEnvironment, comm/device.hpp): SLURM_LOCALID,
  // OMPI_COMM_WORLD_LOCAL_RANK, CUDA_VISIBLE_DEVICES, SPOTRUN_CPU_BIND and whether KOKKOS_DEVICE_ID,
  // KOKKOS_MAP_DEVICE_ID_BY or KOKKOS_NUM_DEVICES is set.
  comm::DeviceEnvironment device;
  // spotrun doctor (launcher/doctor/doctor.hpp): SPOTRUN_DOCTOR_QUICK (set and not "0": as --quick) and
  // SPOTRUN_OPENBLAS_LIBRARY (the OpenBLAS to load, comm/probes/probes.hpp).
  std::string doctor_quick;
  std::string openblas_library;
  // SPOTRUN_RCLONE: the rclone program of the durable tier (a path or a name on PATH; "": "rclone"), for
  // checkpoint.durable (launcher::CheckpointSettings::rclone, io::DurableSettings::rclone, io/checkpoint_durable.hpp).
  std::string rclone;
  // USER: who runs spotrun, the author an output file names (the MD trajectory's /h5md/author,
  // solvers::SolverContext::user); "": "unknown" there.
  std::string user;

  // This process's environment now.
  static Environment read() {
    auto text = [](const char* name) {
      const char* v = std::getenv(name);
      return std::string(v ? v : "");
    };
    Environment e;
    if (const char* v = std::getenv("SPOTRUN_LAUNCH_ATTEMPT")) e.launch_attempt = v;
    if (const char* v = std::getenv("SPOTRUN_STALL_TIMEOUT")) e.stall_timeout = v;
    e.slurm_job_id = text("SLURM_JOB_ID");
    e.nccl_timeout = text("SPOTRUN_NCCL_TIMEOUT");
    e.device.slurm_localid = text("SLURM_LOCALID");
    e.device.ompi_local_rank = text("OMPI_COMM_WORLD_LOCAL_RANK");
    e.device.cuda_visible_devices = text("CUDA_VISIBLE_DEVICES");
    e.device.cpu_bind = text("SPOTRUN_CPU_BIND");
    e.device.kokkos_device_chosen = std::getenv("KOKKOS_DEVICE_ID") || std::getenv("KOKKOS_MAP_DEVICE_ID_BY") ||
                                    std::getenv("KOKKOS_NUM_DEVICES");
    e.doctor_quick = text("SPOTRUN_DOCTOR_QUICK");
    e.openblas_library = text("SPOTRUN_OPENBLAS_LIBRARY");
    e.rclone = text("SPOTRUN_RCLONE");
    e.user = text("USER");
    return e;
  }
};

}  // namespace spotrun::launcher
