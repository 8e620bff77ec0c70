#pragma once
// The N -> M resume of the MD tests: a state written as one checkpoint at this run's rank count N, restored at
// M = 1, N-1 and N ranks (the first M ranks, a sub-communicator each) into a new solver of the same deck.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/transport.hpp"
#include "io/checkpoint.hpp"
#include "mpi_test.hpp"
#include "solvers/md/md_solver.hpp"

namespace spotrun::test {

// One restore at `ranks` ranks: what on_restored measured on rank 0 (every rank has it), or the error of a
// restoring rank.
struct RestoreCheck {
  int ranks = 0;
  std::string error;
  std::vector<double> values;
};

// Whether a resume of a PPPM run at the same rank count is expected bit for bit: one thread (Kokkos::Serial).
// On a device PPPM spreads charges with atomics, whose order varies from run to run, and the resume agrees to
// rounding (docs/md.md, "Long-range Coulomb"); host threads spread in a fixed order, but the test asks no more
// of them than of a device.
inline bool pppm_bitwise() {
#if defined(KOKKOS_ENABLE_SERIAL)
  return std::is_same_v<md::ExecSpace, Kokkos::Serial>;
#else
  return false;
#endif
}

// The rank counts a state written at N ranks is restored at: 1, N - 1 (N > 2) and N (N > 1).
inline std::vector<int> restore_rank_counts() {
  std::vector<int> counts{1};
  if (nranks() > 2) counts.push_back(nranks() - 1);
  if (nranks() > 1) counts.push_back(nranks());
  return counts;
}

// Writes st (at `step`, `time`) into a fresh directory as one checkpoint of every rank, then for each count M of
// restore_rank_counts() restores it into a solver of cfg on the first M ranks and calls on_restored(solver,
// comm) there: what it returns on rank 0 is broadcast. Collective over the world.
inline std::vector<RestoreCheck> restore_at_rank_counts(
    const md::MdConfig& cfg, const io::SolverState& st, std::int64_t step, double time,
    const std::function<std::vector<double>(md::MdSolver&, const comm::Communicator&)>& on_restored) {
  const std::string dir = world().broadcast(
      is_root() ? (std::filesystem::temp_directory_path() / ("spotrun_resume_" + std::to_string(getpid()))).string()
                : std::string());
  if (is_root()) std::filesystem::create_directories(dir);
  world().barrier();
  const std::string path = dir + "/ckpt.h5";
  io::CheckpointMeta meta;
  meta.solver = "md";
  meta.step = step;
  meta.time = time;
  meta.units = "lj";
  meta.nranks = nranks();
  io::write_checkpoint(world(), path, meta, st);

  std::vector<RestoreCheck> out;
  for (const int M : restore_rank_counts()) {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank() < M ? 0 : MPI_UNDEFINED, rank(), &sub);
    RestoreCheck r;
    r.ranks = M;
    if (rank() < M) {
      try {
        comm::Communicator c(sub);
        auto transport = comm::make_transport("auto", c);
        md::MdSolver restored(cfg, c, *transport, nullptr, true);
        io::CheckpointReader reader(c, path);
        restored.restore(reader.read(restored.state_layout()));
        r.values = on_restored(restored, c);
      } catch (const std::exception& e) {
        r.error = e.what();
      }
      MPI_Comm_free(&sub);
    }
    r.error = world().broadcast(r.error);
    int n = static_cast<int>(r.values.size());
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    r.values.resize(static_cast<std::size_t>(n));
    if (n > 0) MPI_Bcast(r.values.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    out.push_back(r);
  }
  world().barrier();
  if (is_root()) std::filesystem::remove_all(dir);
  return out;
}

}  // namespace spotrun::test
