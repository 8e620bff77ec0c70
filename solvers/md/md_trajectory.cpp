// The MD solver, trajectories: frames of OUTDIR/trajectory.h5 (H5MD, io/h5md_trajectory.hpp) from the
// id-sorted blocks of state(), so that the file does not depend on the rank count.
#include <filesystem>

#include "md_solver.hpp"

namespace spotrun::md {

bool MdSolver::writes_outputs_at(std::int64_t step) const {
  // The first call opens (and may cut) the file; after that only the frames' steps write.
  return m_cfg.trajectory_every > 0 && (!m_trajectory || step % m_cfg.trajectory_every == 0);
}

void MdSolver::write_outputs(const std::string& outdir, std::int64_t step) {
  if (m_cfg.trajectory_every <= 0) return;
  if (!m_trajectory) {
    // The first call: a fresh run (step 0) starts the file anew; a resumed run drops the frames written
    // after the step it resumed from (the first call comes one step after it).
    m_trajectory = std::make_unique<io::H5mdTrajectory>(
        (std::filesystem::path(outdir) / "trajectory.h5").string(), m_cfg.trajectory_fields,
        static_cast<std::uint64_t>(m_natoms));
    m_trajectory->continue_after(m_comm, m_restored ? step - 1 : -1);
  }
  if (step % m_cfg.trajectory_every != 0) return;
  const io::SolverState st = state();  // id, x, v, f, image, x_build, type: this rank's block, by id
  io::H5mdFrame fr;
  fr.step = step;
  fr.time = m_time;
  for (int d = 0; d < 3; ++d) fr.box_edges[d] = m_box.length(d);
  fr.first_row = st.arrays[0].first_row;
  fr.rows = st.arrays[0].rows;
  fr.position = st.arrays[1].f64.data();
  fr.velocity = st.arrays[2].f64.data();
  fr.force = st.arrays[3].f64.data();
  fr.image = st.arrays[4].i64.data();
  fr.species = st.arrays[6].i64.data();
  m_trajectory->write(m_comm, fr);
}

}  // namespace spotrun::md
