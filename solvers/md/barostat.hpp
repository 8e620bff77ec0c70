#pragma once
// The barostat of LAMMPS fix npt / fix nph (FixNH with pstat; Martyna, Tobias, Klein, J. Chem. Phys. 101,
// 4177 (1994); Martyna, Tuckerman, Tobias, Klein, Mol. Phys. 87, 1117 (1996)): the box strain rates
// omega_dot (one for iso, one per length for aniso) with their masses W = (N + 1) kT / p_freq^2, driven by the
// difference between the current and the target pressure and by the MTK kinetic terms, and a Nose-Hoover chain
// of pchain members on them. Orthogonal boxes, every length barostatted, the box scaled about its centre
// (LAMMPS's defaults: couple xyz for iso, none for aniso; dilate all; drag 0; tloop = ploop = 1; mtk yes;
// constant targets). The operations and their order are those of FixNH::setup, nhc_press_integrate,
// nh_omega_dot, nh_v_press and remap, so that a run matches LAMMPS to rounding. Host scalars only: the
// per-atom parts (velocity scaling, remap of positions) are the caller's kernels.
#include <array>
#include <cmath>
#include <vector>

#include "comm/process_grid.hpp"

namespace spotrun::md {

class MtkBarostat {
 public:
  struct Settings {
    double pressure = 1.0;  // target, in pressure units
    double pdamp = 1.0;     // Pdamp, in time units
    int pchain = 3;         // 0: no chain on the barostat
    bool aniso = false;
    double dt = 0.005;
    double boltz = 1.0, nktv2p = 1.0;  // the units' constants
    double natoms = 0;
  };

  MtkBarostat() = default;
  explicit MtkBarostat(const Settings& s)
      : m_s(s), m_p_freq(1.0 / s.pdamp), m_etap(s.pchain, 0.0), m_etap_dot(s.pchain + 1, 0.0),
        m_etap_dotdot(s.pchain, 0.0), m_etap_mass(s.pchain, 0.0) {}

  // FixNH::init on the first run: the reference volume and the centre the box scales about.
  void set_reference(const comm::Box3& box) {
    m_vol0 = box.volume();
    for (int d = 0; d < 3; ++d) m_fixedpoint[d] = 0.5 * (box.lo[d] + box.hi[d]);
  }
  // FixNH::setup: the barostat's masses at temperature t_target (the thermostat's target, or t0 without one)
  // and the forces on the upper members of its chain.
  void setup(double t_target) {
    m_t_target = t_target;
    update_masses();
    for (int ich = 1; ich < chain(); ++ich)
      m_etap_dotdot[ich] = (m_etap_mass[ich - 1] * m_etap_dot[ich - 1] * m_etap_dot[ich - 1] - kt()) / m_etap_mass[ich];
  }

  // One half-step of the barostat's chain (FixNH::nhc_press_integrate): scales every omega_dot.
  void chain_half_step() {
    if (chain() == 0) return;
    const double dthalf = 0.5 * m_s.dt, dt4 = 0.25 * m_s.dt, dt8 = 0.125 * m_s.dt;
    const int n = chain();
    // LAMMPS: kT for iso, pdof kT for aniso.
    const double lkt_press = m_s.aniso ? 3.0 * kt() : kt();
    double kecurrent = omega_ke();
    m_etap_dotdot[0] = (kecurrent - lkt_press) / m_etap_mass[0];
    double expfac;
    for (int ich = n - 1; ich > 0; --ich) {
      expfac = std::exp(-dt8 * m_etap_dot[ich + 1]);
      m_etap_dot[ich] *= expfac;
      m_etap_dot[ich] += m_etap_dotdot[ich] * dt4;
      m_etap_dot[ich] *= expfac;
    }
    expfac = std::exp(-dt8 * m_etap_dot[1]);
    m_etap_dot[0] *= expfac;
    m_etap_dot[0] += m_etap_dotdot[0] * dt4;
    m_etap_dot[0] *= expfac;
    for (int ich = 0; ich < n; ++ich) m_etap[ich] += dthalf * m_etap_dot[ich];
    const double factor_etap = std::exp(-dthalf * m_etap_dot[0]);
    for (double& od : m_omega_dot) od *= factor_etap;
    kecurrent = omega_ke();
    m_etap_dotdot[0] = (kecurrent - lkt_press) / m_etap_mass[0];
    m_etap_dot[0] *= expfac;
    m_etap_dot[0] += m_etap_dotdot[0] * dt4;
    m_etap_dot[0] *= expfac;
    for (int ich = 1; ich < n; ++ich) {
      expfac = std::exp(-dt8 * m_etap_dot[ich + 1]);
      m_etap_dot[ich] *= expfac;
      m_etap_dotdot[ich] = (m_etap_mass[ich - 1] * m_etap_dot[ich - 1] * m_etap_dot[ich - 1] - kt()) / m_etap_mass[ich];
      m_etap_dot[ich] += m_etap_dotdot[ich] * dt4;
      m_etap_dot[ich] *= expfac;
    }
  }

  // A half-step of the strain rates (FixNH::nh_omega_dot). p_current: the pressure of each length (iso: the
  // scalar pressure three times); volume: the current box's; ke_mtk: the MTK kinetic term's numerator (iso:
  // tdof boltz T_current; aniso: the sum of the kinetic tensor's diagonal, mvv2e sum m v_d^2).
  void omega_dot_half_step(const std::array<double, 3>& p_current, double volume, double ke_mtk) {
    const double dthalf = 0.5 * m_s.dt;
    const double pdim = 3.0;
    const double mtk_term1 = ke_mtk / (pdim * m_s.natoms);
    for (int i = 0; i < 3; ++i) {
      const double f_omega =
          (p_current[i] - m_s.pressure) * volume / (m_omega_mass[i] * m_s.nktv2p) + mtk_term1 / m_omega_mass[i];
      m_omega_dot[i] += f_omega * dthalf;
    }
    m_mtk_term2 = 0.0;
    for (int i = 0; i < 3; ++i) m_mtk_term2 += m_omega_dot[i];
    m_mtk_term2 /= pdim * m_s.natoms;
  }

  // The factor every velocity component d is multiplied by, twice, in a half-step (FixNH::nh_v_press).
  std::array<double, 3> velocity_factors() const {
    const double dt4 = 0.25 * m_s.dt;
    return {std::exp(-dt4 * (m_omega_dot[0] + m_mtk_term2)), std::exp(-dt4 * (m_omega_dot[1] + m_mtk_term2)),
            std::exp(-dt4 * (m_omega_dot[2] + m_mtk_term2))};
  }

  // Half a step of the box (FixNH::remap, dto = dt/2): omega advances; returns the box scaled about the fixed
  // point. The caller maps the positions from the old box to the new one (fractional coordinates).
  comm::Box3 remap(const comm::Box3& box) {
    const double dto = 0.5 * m_s.dt;
    for (int i = 0; i < 3; ++i) m_omega[i] += dto * m_omega_dot[i];
    comm::Box3 out = box;
    for (int d = 0; d < 3; ++d) {
      const double expfac = std::exp(dto * m_omega_dot[d]);
      out.lo[d] = (box.lo[d] - m_fixedpoint[d]) * expfac + m_fixedpoint[d];
      out.hi[d] = (box.hi[d] - m_fixedpoint[d]) * expfac + m_fixedpoint[d];
    }
    return out;
  }

  // The barostat's energy (its part of LAMMPS FixNH::compute_scalar), for the conserved quantity.
  double energy(double volume) const {
    const double pdim = 3.0;
    double e = 0;
    for (int i = 0; i < 3; ++i)
      e += 0.5 * m_omega_dot[i] * m_omega_dot[i] * m_omega_mass[i] + m_s.pressure * (volume - m_vol0) / (pdim * m_s.nktv2p);
    const double lkt_press = 3.0 * kt();  // LAMMPS: kT per barostatted length (the chain's force takes kT for iso)
    if (chain() > 0) {
      e += lkt_press * m_etap[0] + 0.5 * m_etap_mass[0] * m_etap_dot[0] * m_etap_dot[0];
      for (int ich = 1; ich < chain(); ++ich) e += kt() * m_etap[ich] + 0.5 * m_etap_mass[ich] * m_etap_dot[ich] * m_etap_dot[ich];
    }
    return e;
  }

  int chain() const { return static_cast<int>(m_etap.size()); }
  bool aniso() const { return m_s.aniso; }
  double t_target() const { return m_t_target; }
  // The state a checkpoint holds, so that a resume continues it bitwise.
  std::array<double, 3>& omega() { return m_omega; }
  std::array<double, 3>& omega_dot() { return m_omega_dot; }
  std::array<double, 3>& fixedpoint() { return m_fixedpoint; }
  double& vol0() { return m_vol0; }
  double& mtk_term2() { return m_mtk_term2; }
  std::vector<double>& etap() { return m_etap; }
  std::vector<double>& etap_dot() { return m_etap_dot; }
  std::vector<double>& etap_dotdot() { return m_etap_dotdot; }
  const std::array<double, 3>& omega_dot() const { return m_omega_dot; }
  // After the state is restored: the masses at the target temperature (no forces recomputed).
  void restore(double t_target) {
    m_t_target = t_target;
    update_masses();
  }

 private:
  double kt() const { return m_s.boltz * m_t_target; }
  double omega_ke() const {
    double ke = 0;
    for (int i = 0; i < 3; ++i) ke += m_omega_mass[i] * m_omega_dot[i] * m_omega_dot[i];
    return ke;
  }
  void update_masses() {
    const double nkt = (m_s.natoms + 1) * kt();  // LAMMPS: (N + 1) kT
    for (double& w : m_omega_mass) w = nkt / (m_p_freq * m_p_freq);
    for (double& q : m_etap_mass) q = kt() / (m_p_freq * m_p_freq);
  }

  Settings m_s;
  double m_p_freq = 1.0, m_t_target = 1.0, m_vol0 = 0, m_mtk_term2 = 0;
  std::array<double, 3> m_omega{0, 0, 0}, m_omega_dot{0, 0, 0}, m_omega_mass{0, 0, 0}, m_fixedpoint{0, 0, 0};
  std::vector<double> m_etap, m_etap_dot, m_etap_dotdot, m_etap_mass;
};

}  // namespace spotrun::md
