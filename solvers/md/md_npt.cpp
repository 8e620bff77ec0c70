// The MD solver, constant pressure (md.ensemble = "npt" / "nph", LAMMPS fix npt / fix nph): the barostat's
// set-up, the two half-steps of FixNH::initial_integrate and final_integrate around the forces, the box that
// changes with every step (the rank grid's sub-boxes, the ghosts' image shifts, the neighbour bins at the next
// build) and the stop before the box gets thinner than the rank grid allows.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "md_impl.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

using impl::PhaseTimer;

namespace {

// The degrees of freedom of LAMMPS compute temp: 3N - 3.
double temperature_dof(std::int64_t natoms) { return 3.0 * static_cast<double>(natoms) - 3.0; }

}  // namespace

double MdSolver::local_virial() const {
  const bool bonded = m_bonded.active(m_atoms);
  double w = m_tally.virial;
  if (bonded) w += m_special_tally.virial + m_bonded_energy.virial;
  if (m_pppm || m_ewald) w += m_kspace.virial[0] + m_kspace.virial[1] + m_kspace.virial[2];
  return w;
}

std::array<double, 3> MdSolver::local_virial_diagonal() const {
  // Under Newton the force call left the diagonal (x . f after the loop); otherwise a pass of its own.
  std::array<double, 3> w = m_fdotr_valid ? m_fdotr_diagonal
                                          : std::visit([&](const auto& pair) { return pair_virial_diagonal(m_atoms, m_neighbor, pair); }, m_pair);
  if (m_bonded.active(m_atoms))
    for (int c = 0; c < 3; ++c) w[c] += m_bonded_energy.virial_diagonal[c];
  if (m_pppm || m_ewald)
    for (int c = 0; c < 3; ++c) w[c] += m_kspace.virial[c];
  return w;
}

std::array<double, 4> MdSolver::local_kinetic_sums() const {
  auto v = m_atoms.v;
  auto type = m_atoms.type;
  auto mass = m_atoms.mass_by_type;
  double k[4] = {0, 0, 0, 0};
  Kokkos::parallel_reduce(
      "md::npt::kinetic_tensor", Policy(0, m_atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& kx, double& ky, double& kz, double& mv2) {
        const double m = mass(type(i));
        kx += m * v(i, 0) * v(i, 0);
        ky += m * v(i, 1) * v(i, 1);
        kz += m * v(i, 2) * v(i, 2);
        mv2 += m * (v(i, 0) * v(i, 0) + v(i, 1) * v(i, 1) + v(i, 2) * v(i, 2));  // local_mv2()'s sum
      },
      k[0], k[1], k[2], k[3]);
  return {k[0], k[1], k[2], k[3]};
}

std::array<double, 3> MdSolver::kinetic_diagonal() {
  // LAMMPS compute temp's vector: mvv2e sum m v_a^2 (a = x, y, z), summed over the ranks.
  const std::array<double, 4> local = local_kinetic_sums();
  double k[3] = {local[0], local[1], local[2]};
  m_comm.sum_in_place(k, 3);
  const double mvv2e = m_cfg.unit().mvv2e;
  return {k[0] * mvv2e, k[1] * mvv2e, k[2] * mvv2e};
}

std::array<double, 3> MdSolver::pressure_now(double t, const std::array<double, 3>& ke) const {
  const UnitConstants& u = m_cfg.unit();
  const double inv_volume = 1.0 / m_box.volume();
  if (m_baro.aniso()) {
    // LAMMPS compute pressure (vector): (ke_a + W_aa) / V nktv2p.
    std::array<double, 3> p;
    for (int c = 0; c < 3; ++c) p[c] = (ke[c] + m_virial_diagonal[c]) * inv_volume * u.nktv2p;
    return p;
  }
  // LAMMPS compute pressure (scalar): (dof boltz T + W) / 3 / V nktv2p, the virial W of the last force call.
  const double p = (temperature_dof(m_natoms) * u.boltz * t + m_virial_sum) / 3.0 * inv_volume * u.nktv2p;
  return {p, p, p};
}

void MdSolver::sum_virial() {
  if (m_baro.aniso()) {
    const std::array<double, 3> w = local_virial_diagonal();
    double s[3] = {w[0], w[1], w[2]};
    m_comm.sum_in_place(s, 3);
    for (int c = 0; c < 3; ++c) m_virial_diagonal[c] = s[c];
  } else {
    m_virial_sum = m_comm.sum(local_virial());
  }
}

MtkBarostat::Settings MdSolver::barostat_settings() const {
  const UnitConstants& u = m_cfg.unit();
  MtkBarostat::Settings s;
  s.pressure = m_cfg.pressure;
  s.pdamp = m_cfg.pressure_damp;
  s.pchain = m_cfg.pchain;
  s.aniso = m_cfg.barostat == Barostat::Aniso;
  s.dt = m_cfg.dt;
  s.boltz = u.boltz;
  s.nktv2p = u.nktv2p;
  s.natoms = static_cast<double>(m_natoms);
  return s;
}

void MdSolver::setup_barostat() {
  if (!barostatted(m_cfg.ensemble)) return;
  const MtkBarostat::Settings s = barostat_settings();
  m_baro = MtkBarostat(s);
  m_baro.set_reference(m_box);
  // FixNH::setup: the thermostat's target, or without one (nph) t0, the temperature now (lj: 1 if it is 0;
  // other units 300).
  m_t_current = current_temperature();
  double t_target = m_cfg.temperature;
  if (!thermostatted(m_cfg.ensemble)) {
    t_target = m_t_current;
    if (t_target == 0.0) t_target = m_cfg.units == UnitStyle::Lj ? 1.0 : 300.0;
  }
  m_baro.setup(t_target);
  // aniso: the pressure tensor's diagonal from the pair styles and the bonded terms; special pairs scaled by a
  // factor other than 0 or 1 tally a scalar virial only.
  m_comm.agree<InputError>(!s.aniso || !m_bonded.scaled_specials(),
                           "md.barostat = \"aniso\" needs md.special_bonds factors of 0 or 1 (the pressure tensor of "
                           "scaled special pairs is not tallied); use md.barostat = \"iso\"");
  sum_virial();
}

void MdSolver::npt_initial_integrate() {
  PhaseTimer timer(m_phase_time[k_integrate]);
  // FixNH::initial_integrate: the barostat's chain, the thermostat's, the pressure with the temperature of the
  // scaled velocities, the strain rates; then the velocities' half-kick, the box by half a step, the drift and
  // the box's other half step.
  m_baro.chain_half_step();
  if (thermostatted(m_cfg.ensemble)) m_nhc.half_step([this](double f) { scale_velocities(f); });
  const UnitConstants& u = m_cfg.unit();
  if (m_baro.aniso()) {
    // The kinetic tensor of the scaled velocities drives both the pressure and the MTK term.
    const std::array<double, 3> ke = kinetic_diagonal();
    m_baro.omega_dot_half_step(pressure_now(0.0, ke), m_box.volume(), ke[0] + ke[1] + ke[2]);
  } else {
    const double t = current_temperature();
    const double t_mtk = thermostatted(m_cfg.ensemble) ? m_nhc.t_current() : m_t_current;
    m_baro.omega_dot_half_step(pressure_now(t, {}), m_box.volume(), temperature_dof(m_natoms) * u.boltz * t_mtk);
  }
  const std::array<double, 3> fac = m_baro.velocity_factors();
  const comm::Box3 box0 = m_box;
  const comm::Box3 box1 = m_baro.remap(box0);
  const comm::Box3 box2 = m_baro.remap(box1);
  npt_move_atoms(fac, box0, box1, box2);
  set_box(box2);
}

void MdSolver::npt_move_atoms(const std::array<double, 3>& fac, const comm::Box3& box0, const comm::Box3& box1,
                              const comm::Box3& box2) {
  auto x = m_atoms.x, v = m_atoms.v, f = m_atoms.f, xb = m_atoms.x_build;
  auto type = m_atoms.type;
  auto mass = m_atoms.mass_by_type;
  const double dt = m_cfg.dt, dtf = 0.5 * m_cfg.dt * m_cfg.unit().ftm2v;
  // The maps of LAMMPS Domain::x2lamda and lamda2x (orthogonal box): lamda = (x - lo) / L, x = L lamda + lo.
  const double f0 = fac[0], f1 = fac[1], f2 = fac[2];
  const double lo0[3] = {box0.lo[0], box0.lo[1], box0.lo[2]}, lo1[3] = {box1.lo[0], box1.lo[1], box1.lo[2]},
               lo2[3] = {box2.lo[0], box2.lo[1], box2.lo[2]};
  const double inv0[3] = {1.0 / box0.length(0), 1.0 / box0.length(1), 1.0 / box0.length(2)};
  const double inv1[3] = {1.0 / box1.length(0), 1.0 / box1.length(1), 1.0 / box1.length(2)};
  const double len1[3] = {box1.length(0), box1.length(1), box1.length(2)};
  const double len2[3] = {box2.length(0), box2.length(1), box2.length(2)};
  Kokkos::parallel_reduce(
      "md::npt::initial", Policy(0, m_atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& m) {
        const double h = dtf / mass(type(i));
        double d2 = 0;
        for (int c = 0; c < 3; ++c) {
          const double fc = c == 0 ? f0 : (c == 1 ? f1 : f2);
          double vc = v(i, c);
          vc *= fc;  // FixNH::nh_v_press
          vc *= fc;
          vc += h * f(i, c);  // nve_v
          v(i, c) = vc;
          double xc = x(i, c);
          xc = len1[c] * (inv0[c] * (xc - lo0[c])) + lo1[c];  // remap
          xc += dt * vc;                                      // nve_x
          xc = len2[c] * (inv1[c] * (xc - lo1[c])) + lo2[c];  // remap
          x(i, c) = xc;
          const double dx = xc - xb(i, c);
          d2 += dx * dx;
        }
        if (d2 > m) m = d2;
      },
      Kokkos::Max<double, MemSpace>(m_maxsq));
}

void MdSolver::npt_final_integrate() {
  PhaseTimer timer(m_phase_time[k_integrate]);
  // FixNH::final_integrate: the half-kick, the barostat's velocity scaling, the temperature and pressure of
  // the new velocities and forces, the strain rates, the thermostat's chain, the barostat's chain.
  // One sum over the ranks: the virial of the force call (iso: its trace; aniso: its diagonal) and the kinetic
  // sums of the kicked and scaled velocities (sum m v^2; aniso: its diagonal too).
  const bool aniso = m_baro.aniso();
  double s[7] = {0, 0, 0, 0, 0, 0, 0};  // iso: W, m v^2; aniso: W_xx, W_yy, W_zz, m v_x^2, m v_y^2, m v_z^2, m v^2
  if (aniso) {
    const std::array<double, 3> w = local_virial_diagonal();
    for (int c = 0; c < 3; ++c) s[c] = w[c];
  } else {
    s[0] = local_virial();
  }
  npt_kick_and_scale(m_baro.velocity_factors());
  if (aniso) {
    const std::array<double, 4> k = local_kinetic_sums();
    for (int c = 0; c < 4; ++c) s[3 + c] = k[c];
  } else {
    s[1] = local_mv2();
  }
  m_comm.sum_in_place(s, aniso ? 7 : 2);
  const double t = temperature_of(aniso ? s[6] : s[1]);
  m_t_current = t;
  const UnitConstants& u = m_cfg.unit();
  if (aniso) {
    for (int c = 0; c < 3; ++c) m_virial_diagonal[c] = s[c];
    const std::array<double, 3> ke{s[3] * u.mvv2e, s[4] * u.mvv2e, s[5] * u.mvv2e};
    m_baro.omega_dot_half_step(pressure_now(t, ke), m_box.volume(), ke[0] + ke[1] + ke[2]);
  } else {
    m_virial_sum = s[0];
    m_baro.omega_dot_half_step(pressure_now(t, {}), m_box.volume(), temperature_dof(m_natoms) * u.boltz * t);
  }
  if (thermostatted(m_cfg.ensemble)) {
    m_nhc.set_temperature(t);
    m_nhc.half_step([this](double factor) { scale_velocities(factor); });
  }
  m_baro.chain_half_step();
}

void MdSolver::npt_kick_and_scale(const std::array<double, 3>& fac) {
  auto v = m_atoms.v, f = m_atoms.f;
  auto type = m_atoms.type;
  auto mass = m_atoms.mass_by_type;
  const double dtf = 0.5 * m_cfg.dt * m_cfg.unit().ftm2v;
  const double f0 = fac[0], f1 = fac[1], f2 = fac[2];
  Kokkos::parallel_for(
      "md::npt::final", Policy(0, m_atoms.nlocal), KOKKOS_LAMBDA(int i) {
        const double h = dtf / mass(type(i));
        for (int c = 0; c < 3; ++c) {
          const double fc = c == 0 ? f0 : (c == 1 ? f1 : f2);
          double vc = v(i, c);
          vc += h * f(i, c);
          vc *= fc;
          vc *= fc;
          v(i, c) = vc;
        }
      });
}

void MdSolver::set_box(const comm::Box3& box) {
  m_box = box;
  m_grid->set_box(box);
  m_halo->box_changed();
  if (m_pppm) m_pppm->set_box(box);
}

double MdSolver::rebuild_trigger_sq() const {
  if (!barostatted(m_cfg.ensemble)) return 0.25 * m_cfg.skin * m_cfg.skin;
  // LAMMPS Neighbor::check_distance with a changing box: the corners' movement since the last build comes off
  // the skin, so that no pair of an atom and a ghost image comes within the cutoff unlisted.
  double lo2 = 0, hi2 = 0;
  for (int d = 0; d < 3; ++d) {
    const double dl = m_box.lo[d] - m_build_box.lo[d], dh = m_box.hi[d] - m_build_box.hi[d];
    lo2 += dl * dl;
    hi2 += dh * dh;
  }
  double delta = 0.5 * (m_cfg.skin - (std::sqrt(lo2) + std::sqrt(hi2)));
  if (delta < 0.0) delta = 0.0;
  return delta * delta;
}

void MdSolver::box_for_rebuild() {
  // The bins of the neighbour lists (and of the atom sort) cover the sub-box and its ghosts: made anew for a box
  // that changed since they were (under npt and nph, or in the first build of a stage after them); a sub-box
  // thinner than the ghosts reach cannot be built.
  bool same = true;
  for (int d = 0; d < 3; ++d) same = same && m_box.lo[d] == m_neighbor_box.lo[d] && m_box.hi[d] == m_neighbor_box.hi[d];
  if (same) return;
  const double thinnest = m_grid->min_sub_thickness();
  if (thinnest < m_ghost_cutoff) {
    std::ostringstream msg;
    msg << "at step " << m_step << " the box (" << significant(m_box.length(0), 8) << " x " << significant(m_box.length(1), 8)
        << " x " << significant(m_box.length(2), 8) << ") is too small for the rank grid: its thinnest sub-box is "
        << significant(thinnest, 6) << " thick, less than the ghost reach " << significant(m_ghost_cutoff, 6)
        << " (cutoff + skin); resume from the last checkpoint on fewer ranks";
    throw RunError(msg.str());
  }
  m_neighbor.setup(m_grid->sub_box(), m_cutneigh, full_neighbor_list(), m_cfg.neighbor_list != NeighborListKind::HalfNoNewton,
                   static_cast<double>(m_natoms) / m_box.volume());
  m_neighbor_box = m_box;
}

std::string MdSolver::stop_request() const {
  if (!barostatted(m_cfg.ensemble) || m_step == m_stop_checked) return {};
  // The box shrinks smoothly: a stop (with its checkpoint) once two more steps at the rate of the last one
  // would take the thinnest sub-box below the ghost reach. Every rank sees the same box.
  const double now = m_grid->min_sub_thickness();
  const double rate = m_last_thickness > 0 ? now / m_last_thickness : 1.0;
  m_stop_checked = m_step;
  m_last_thickness = now;
  if (now * std::min(1.0, rate * rate) >= m_ghost_cutoff) return {};
  m_shrink_stop = now;  // the checkpoint records it: a resume needs a grid of thicker sub-boxes
  std::ostringstream msg;
  msg << "the box shrank to " << significant(m_box.length(0), 8) << " x " << significant(m_box.length(1), 8) << " x "
      << significant(m_box.length(2), 8) << ": its thinnest sub-box (" << significant(now, 6)
      << ") is about to get thinner than the ghost reach " << significant(m_ghost_cutoff, 6)
      << " that the rank grid needs; resume on fewer ranks";
  return msg.str();
}

}  // namespace spotrun::md
