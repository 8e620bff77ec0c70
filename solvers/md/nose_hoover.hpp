#pragma once
// The Nose-Hoover chain thermostat of LAMMPS fix nvt (FixNH with tstat only): a chain of tchain thermostat
// variables eta, integrated in two half-step updates per step (one before the first half-kick, one after
// the second), each scaling every velocity by one factor. tloop 1 and drag 0 (LAMMPS defaults), the target
// temperature constant (fix nvt temp T T Tdamp). The operations and their order are those of
// FixNH::setup and FixNH::nhc_temp_integrate, so that a run matches LAMMPS to rounding.
#include <cmath>
#include <vector>

namespace spotrun::md {

class NoseHooverChain {
 public:
  NoseHooverChain() = default;
  // tchain thermostats coupled to T with damping time tdamp, time step dt; boltz: the Boltzmann constant of
  // the units (kT = boltz T; 1 in lj units).
  NoseHooverChain(int tchain, double temperature, double tdamp, double dt, double boltz = 1.0)
      : m_t_target(temperature), m_t_freq(1.0 / tdamp), m_dt(dt), m_boltz(boltz),
        m_eta(tchain, 0.0), m_eta_dot(tchain + 1, 0.0), m_eta_dotdot(tchain, 0.0), m_eta_mass(tchain, 0.0) {}

  // At the start of a run: the current temperature and degrees of freedom; the chain's masses and the
  // forces on its upper members (FixNH::setup).
  void setup(double t_current, double tdof) {
    m_t_current = t_current;
    m_tdof = tdof;
    update_masses();
    for (int ich = 1; ich < chain(); ++ich)
      m_eta_dotdot[ich] =
          (m_eta_mass[ich - 1] * m_eta_dot[ich - 1] * m_eta_dot[ich - 1] - m_boltz * m_t_target) / m_eta_mass[ich];
  }

  // One half-step update of the chain (FixNH::nhc_temp_integrate, nc_tchain = 1). scale_velocities(f)
  // multiplies every velocity by f; the temperature follows as t_current f^2.
  template <class Scale>
  void half_step(const Scale& scale_velocities) {
    const int n = chain();
    const double dthalf = 0.5 * m_dt, dt4 = 0.25 * m_dt, dt8 = 0.125 * m_dt;
    const double ke_target = m_tdof * m_boltz * m_t_target;
    double kecurrent = m_tdof * m_boltz * m_t_current;
    update_masses();
    m_eta_dotdot[0] = m_eta_mass[0] > 0.0 ? (kecurrent - ke_target) / m_eta_mass[0] : 0.0;
    const double ncfac = 1.0;  // 1 / tloop
    double expfac;
    for (int ich = n - 1; ich > 0; --ich) {
      expfac = std::exp(-ncfac * dt8 * m_eta_dot[ich + 1]);
      m_eta_dot[ich] *= expfac;
      m_eta_dot[ich] += m_eta_dotdot[ich] * ncfac * dt4;
      m_eta_dot[ich] *= expfac;
    }
    expfac = std::exp(-ncfac * dt8 * m_eta_dot[1]);
    m_eta_dot[0] *= expfac;
    m_eta_dot[0] += m_eta_dotdot[0] * ncfac * dt4;
    m_eta_dot[0] *= expfac;

    const double factor_eta = std::exp(-ncfac * dthalf * m_eta_dot[0]);
    scale_velocities(factor_eta);
    m_t_current *= factor_eta * factor_eta;
    kecurrent = m_tdof * m_boltz * m_t_current;
    m_eta_dotdot[0] = m_eta_mass[0] > 0.0 ? (kecurrent - ke_target) / m_eta_mass[0] : 0.0;
    for (int ich = 0; ich < n; ++ich) m_eta[ich] += ncfac * dthalf * m_eta_dot[ich];

    m_eta_dot[0] *= expfac;
    m_eta_dot[0] += m_eta_dotdot[0] * ncfac * dt4;
    m_eta_dot[0] *= expfac;
    for (int ich = 1; ich < n; ++ich) {
      expfac = std::exp(-ncfac * dt8 * m_eta_dot[ich + 1]);
      m_eta_dot[ich] *= expfac;
      m_eta_dotdot[ich] =
          (m_eta_mass[ich - 1] * m_eta_dot[ich - 1] * m_eta_dot[ich - 1] - m_boltz * m_t_target) / m_eta_mass[ich];
      m_eta_dot[ich] += m_eta_dotdot[ich] * ncfac * dt4;
      m_eta_dot[ich] *= expfac;
    }
  }

  // The temperature measured after the second half-kick (FixNH::final_integrate).
  void set_temperature(double t_current) { m_t_current = t_current; }

  int chain() const { return static_cast<int>(m_eta.size()); }
  double t_current() const { return m_t_current; }
  double tdof() const { return m_tdof; }
  // The chain's state, for checkpoints: eta, eta_dot (without the always-zero last entry) and eta_dotdot.
  std::vector<double>& eta() { return m_eta; }
  std::vector<double>& eta_dot() { return m_eta_dot; }
  std::vector<double>& eta_dotdot() { return m_eta_dotdot; }
  void restore(double t_current, double tdof) {
    m_t_current = t_current;
    m_tdof = tdof;
    update_masses();
  }
  // The energy of the thermostat (LAMMPS fix nvt's compute_scalar, in energy units): with the kinetic and
  // potential energy, a conserved quantity of the extended system.
  double energy() const {
    double e = 0.5 * m_eta_dot[0] * m_eta_dot[0] * m_eta_mass[0] + m_tdof * m_boltz * m_t_target * m_eta[0];
    for (int ich = 1; ich < chain(); ++ich)
      e += 0.5 * m_eta_dot[ich] * m_eta_dot[ich] * m_eta_mass[ich] + m_boltz * m_t_target * m_eta[ich];
    return e;
  }

 private:
  // eta_mass_flag = 1: the masses follow the target temperature (constant here).
  void update_masses() {
    m_eta_mass[0] = m_tdof * m_boltz * m_t_target / (m_t_freq * m_t_freq);
    for (int ich = 1; ich < chain(); ++ich) m_eta_mass[ich] = m_boltz * m_t_target / (m_t_freq * m_t_freq);
  }

  double m_t_target = 1.0, m_t_freq = 1.0, m_dt = 0.005, m_boltz = 1.0;
  double m_t_current = 0.0, m_tdof = 0.0;
  std::vector<double> m_eta, m_eta_dot, m_eta_dotdot, m_eta_mass;
};

}  // namespace spotrun::md
