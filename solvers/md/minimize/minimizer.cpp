// The energy minimiser (minimizer.hpp): LAMMPS's min_style cg with linestyle quadratic and min_style fire
// (FIRE 2.0 with LAMMPS's default min_modify settings), their stopping criteria, checkpoint scalars and
// end-of-run statistics.
#include "minimizer.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

#include "comm/errors.hpp"
#include "min_vectors.hpp"

namespace spotrun::md {

namespace mv = minimize;

namespace {
// LAMMPS's constants: the energy tolerance's normalisation floor; the quadratic line search's largest step,
// backtracking factor and slope, tolerance of the quadratic projection, machine accuracy of energy changes,
// and the floor of its gradients.
constexpr double k_eps_energy = 1e-8;
constexpr double k_alpha_max = 1.0, k_alpha_reduce = 0.5, k_backtrack_slope = 0.4, k_quadratic_tol = 0.1;
constexpr double k_emach = 1e-8, k_eps_quad = 1e-28;
// FIRE 2.0 (LAMMPS min_modify defaults): delaystep, dtgrow, dtshrink, alpha0, alphashrink, tmax, tmin,
// vdfmax; integrator eulerimplicit, halfstepback yes, initialdelay yes.
constexpr std::int64_t k_delaystep = 20, k_vdfmax = 2000;
constexpr double k_dtgrow = 1.1, k_dtshrink = 0.5, k_alpha0 = 0.25, k_alphashrink = 0.99, k_tmax = 10.0, k_tmin = 0.02;
}  // namespace

const char* min_stop_words(MinStop s) {
  switch (s) {
    case MinStop::None: return "not stopped";
    case MinStop::MaxIterations: return "max iterations";
    case MinStop::MaxEvaluations: return "max force evaluations";
    case MinStop::Etol: return "energy tolerance";
    case MinStop::Ftol: return "force tolerance";
    case MinStop::Downhill: return "search direction is not downhill";
    case MinStop::ZeroAlpha: return "linesearch alpha is zero";
    case MinStop::ZeroForce: return "forces are zero";
    case MinStop::ZeroQuad: return "quadratic factors are zero";
    case MinStop::MaxVdotf: return "max iterations with v.f negative";
  }
  return "?";
}

Minimizer::Minimizer(const MinimizeConfig& cfg, MinContext ctx) : m_cfg(cfg), m_ctx(std::move(ctx)) {}

int Minimizer::state_width() const {
  if (done()) return 0;
  return m_cfg.style == MinStyle::Cg ? mv::k_cg_width : mv::k_fire_width;
}

double Minimizer::fnorm2() const {
  return std::sqrt(m_ctx.comm->sum(mv::local_dot(*m_ctx.atoms, mv::k_force, mv::k_force)));
}
double Minimizer::fnorm_inf() const { return m_ctx.comm->max(mv::local_max_abs(*m_ctx.atoms, mv::k_force)); }

void Minimizer::start(double e0, std::int64_t step) {
  m_start_step = step;
  m_stats = MinStats{};
  m_ecurrent = m_eprevious = e0;
  m_stats.einitial = e0;
  m_stats.fnorm2_initial = fnorm2();
  m_stats.fnorminf_initial = fnorm_inf();
  const AtomStore& a = *m_ctx.atoms;
  if (m_cfg.style == MinStyle::Cg) {
    mv::copy_forces_to(a, mv::k_cg_h);
    mv::copy_forces_to(a, mv::k_cg_g);
    m_gg = m_ctx.comm->sum(mv::local_dot(a, mv::k_force, mv::k_force));
  } else {
    m_fire_dt = m_ctx.dt;
    m_fire_alpha = k_alpha0;
    m_last_negative = step;
    m_vdotf_negative = 0;
    m_flagv0 = true;
    mv::fire_zero(a);
  }
  if (m_cfg.max_iterations == 0) finish(MinStop::MaxIterations);
}

bool Minimizer::iterate(std::int64_t step) {
  if (done()) return true;
  ++m_stats.iterations;
  MinStop why = m_cfg.style == MinStyle::Cg ? iterate_cg(step) : iterate_fire(step);
  if (why == MinStop::None && m_stats.iterations >= m_cfg.max_iterations) why = MinStop::MaxIterations;
  if (why != MinStop::None) finish(why);
  return done();
}

void Minimizer::finish(MinStop why) {
  m_stats.stop = why;
  m_stats.enext_to_last = m_eprevious;
  m_stats.efinal = m_ecurrent;
  m_stats.fnorm2_final = fnorm2();
  m_stats.fnorminf_final = fnorm_inf();
}

// x = x0 + alpha h, then the energy and forces there (one force evaluation).
double Minimizer::alpha_step(double alpha) {
  const AtomStore& a = *m_ctx.atoms;
  const double maxsq = mv::move_along(a, alpha > 0 ? alpha : 0.0, mv::k_cg_x0, mv::k_cg_h);
  ++m_stats.evaluations;
  const double e = m_ctx.energy_force(maxsq);
  mv::rewrap(*m_ctx.atoms, mv::k_cg_x0, m_ctx.box);  // a neighbour build may have wrapped positions
  return e;
}

MinStop Minimizer::linemin_quadratic(double eoriginal, double& alpha) {
  const AtomStore& a = *m_ctx.atoms;
  const comm::Communicator& comm = *m_ctx.comm;
  // The projection of the search direction on the downhill gradient, normalised as the energy is (per atom in
  // lj units: LAMMPS's Min divides f.h by the atom count where thermo_modify norm is yes).
  const double n = m_ctx.per_atom ? static_cast<double>(m_ctx.natoms) : 1.0;
  const double fdoth = comm.sum(mv::local_dot(a, mv::k_force, mv::k_cg_h)) / n;
  if (fdoth <= 0.0) return MinStop::Downhill;
  // No coordinate moves more than dmax, nor alpha beyond ALPHA_MAX.
  const double hmax = comm.max(mv::local_max_abs(a, mv::k_cg_h));
  if (hmax == 0.0) return MinStop::ZeroForce;
  const double alphamax = std::min(k_alpha_max, m_cfg.dmax / hmax);
  mv::copy_positions_to(a, mv::k_cg_x0);
  alpha = alphamax;
  double fhprev = fdoth, engprev = eoriginal, alphaprev = 0.0;
  while (true) {
    m_ecurrent = alpha_step(alpha);
    double dots[2] = {mv::local_dot(a, mv::k_force, mv::k_force), mv::local_dot(a, mv::k_force, mv::k_cg_h)};
    comm.sum_in_place(dots, 2);
    const double fh = dots[1] / n, delfh = fh - fhprev;
    if (std::fabs(fh) < k_eps_quad || std::fabs(delfh) < k_eps_quad) {
      m_ecurrent = alpha_step(0.0);
      return MinStop::ZeroQuad;
    }
    // The quadratic projection (a secant step to f.h = 0) once the quadratic model holds.
    const double relerr = std::fabs(1.0 - (0.5 * (alpha - alphaprev) * (fh + fhprev) + m_ecurrent) / engprev);
    const double alpha0 = alpha - (alpha - alphaprev) * fh / delfh;
    if (relerr <= k_quadratic_tol && alpha0 > 0.0 && alpha0 < alphamax) {
      m_ecurrent = alpha_step(alpha0);
      if (m_ecurrent - eoriginal < k_emach) return MinStop::None;
    }
    // Backtracking: a decrease better than ideal ends it.
    const double de_ideal = -k_backtrack_slope * alpha * fdoth;
    if (m_ecurrent - eoriginal <= de_ideal) return MinStop::None;
    fhprev = fh;
    engprev = m_ecurrent;
    alphaprev = alpha;
    alpha *= k_alpha_reduce;
    if (alpha <= 0.0 || de_ideal >= -k_emach) {
      m_ecurrent = alpha_step(0.0);
      return MinStop::ZeroAlpha;
    }
  }
}

MinStop Minimizer::iterate_cg(std::int64_t) {
  const AtomStore& a = *m_ctx.atoms;
  const comm::Communicator& comm = *m_ctx.comm;
  m_eprevious = m_ecurrent;
  if (const MinStop fail = linemin_quadratic(m_ecurrent, m_stats.alpha_final); fail != MinStop::None) return fail;
  if (m_stats.evaluations >= m_cfg.max_evaluations) return MinStop::MaxEvaluations;
  if (std::fabs(m_ecurrent - m_eprevious) <
      m_cfg.etol * 0.5 * (std::fabs(m_ecurrent) + std::fabs(m_eprevious) + k_eps_energy))
    return MinStop::Etol;
  double dots[2] = {mv::local_dot(a, mv::k_force, mv::k_force), mv::local_dot(a, mv::k_force, mv::k_cg_g)};
  comm.sum_in_place(dots, 2);
  if (m_cfg.ftol > 0.0 && dots[0] < m_cfg.ftol * m_cfg.ftol) return MinStop::Ftol;
  // Polak-Ribiere, restarted every 3N iterations and whenever the new direction is not downhill.
  const double ndof = std::min(static_cast<double>(INT_MAX), 3.0 * static_cast<double>(m_ctx.natoms));
  double beta = std::max(0.0, (dots[0] - dots[1]) / m_gg);
  if (std::fmod(static_cast<double>(m_stats.iterations + 1), ndof) == 0.0) beta = 0.0;
  m_gg = dots[0];
  mv::cg_direction(a, beta);
  if (comm.sum(mv::local_dot(a, mv::k_cg_g, mv::k_cg_h)) <= 0.0) mv::cg_restart(a);
  return MinStop::None;
}

MinStop Minimizer::iterate_fire(std::int64_t step) {
  const AtomStore& a = *m_ctx.atoms;
  const comm::Communicator& comm = *m_ctx.comm;
  const double dtmax = k_tmax * m_ctx.dt, dtmin = k_tmin * m_ctx.dt;
  const double vdotf = comm.sum(mv::local_dot(a, mv::k_fire_v, mv::k_force));
  double scale1 = 1.0, scale2 = 0.0;
  if (vdotf > 0.0) {
    // v = (1 - alpha) v + alpha |v| f/|f| (in the move below); after delaystep steps downhill, a longer
    // step and less mixing.
    double dots[2] = {mv::local_dot(a, mv::k_fire_v, mv::k_fire_v), mv::local_dot(a, mv::k_force, mv::k_force)};
    comm.sum_in_place(dots, 2);
    m_vdotf_negative = 0;
    scale1 = 1.0 - m_fire_alpha;
    scale2 = dots[1] <= 1e-20 ? 0.0 : m_fire_alpha * std::sqrt(dots[0] / dots[1]);
    if (step - m_last_negative > k_delaystep) {
      m_fire_dt = std::min(m_fire_dt * k_dtgrow, dtmax);
      m_fire_alpha *= k_alphashrink;
    }
  } else {
    // Uphill: a shorter step, the mixing reset (not in the first delaystep steps), half a step back, at rest.
    m_last_negative = step;
    if (step - m_start_step >= k_delaystep) {
      m_fire_alpha = k_alpha0;
      if (m_fire_dt * k_dtshrink >= dtmin) m_fire_dt *= k_dtshrink;
    }
    if (++m_vdotf_negative > k_vdfmax) return MinStop::MaxVdotf;
    mv::fire_half_step_back(a, m_fire_dt);
    mv::fire_zero(a);
    m_flagv0 = true;
  }
  if (m_flagv0) {
    // The forces where the atoms now are, and the velocities of one step from rest, to limit the step.
    ++m_stats.evaluations;
    m_ctx.energy_force(mv::local_maxsq(a));
    mv::fire_kick(a, m_fire_dt * m_ctx.ftm2v);
  }
  // No atom moves further than dmax in one step.
  const double vmax = comm.max(mv::local_max_abs(a, mv::k_fire_v));
  const double dtv = vmax * m_fire_dt > m_cfg.dmax ? m_cfg.dmax / vmax : m_fire_dt;
  if (m_flagv0) mv::fire_zero(a);
  // Semi-implicit Euler: v += dtv f/m, mixed, then x += dtv v.
  const double maxsq = mv::fire_move(a, dtv * m_ctx.ftm2v, dtv, vdotf > 0.0, scale1, scale2);
  m_eprevious = m_ecurrent;
  ++m_stats.evaluations;
  m_ecurrent = m_ctx.energy_force(maxsq);
  m_flagv0 = false;
  if (m_cfg.etol > 0.0 && step - m_last_negative > k_delaystep &&
      std::fabs(m_ecurrent - m_eprevious) <
          m_cfg.etol * 0.5 * (std::fabs(m_ecurrent) + std::fabs(m_eprevious) + k_eps_energy))
    return MinStop::Etol;
  if (m_cfg.ftol > 0.0 && comm.sum(mv::local_dot(a, mv::k_force, mv::k_force)) < m_cfg.ftol * m_cfg.ftol)
    return MinStop::Ftol;
  if (m_stats.evaluations >= m_cfg.max_evaluations) return MinStop::MaxEvaluations;
  return MinStop::None;
}

std::vector<std::string> Minimizer::summary_lines() const {
  const MinStats& s = m_stats;
  char buf[512];
  std::vector<std::string> lines{"Minimization stats (" + std::string(m_cfg.style == MinStyle::Cg ? "cg" : "fire") + "):",
                                 std::string("  Stopping criterion = ") + min_stop_words(s.stop)};
  std::snprintf(buf, sizeof buf, "  Energy initial, next-to-last, final = %.15g %.15g %.15g", s.einitial,
                s.enext_to_last, s.efinal);
  lines.emplace_back(buf);
  std::snprintf(buf, sizeof buf, "  Force two-norm initial, final = %.8g %.8g", s.fnorm2_initial, s.fnorm2_final);
  lines.emplace_back(buf);
  std::snprintf(buf, sizeof buf, "  Force max component initial, final = %.8g %.8g", s.fnorminf_initial,
                s.fnorminf_final);
  lines.emplace_back(buf);
  std::snprintf(buf, sizeof buf, "  Final line search alpha, max atom move = %.8g %.8g", s.alpha_final,
                s.alpha_final * s.fnorminf_final);
  lines.emplace_back(buf);
  std::snprintf(buf, sizeof buf, "  Iterations, force evaluations = %lld %lld", static_cast<long long>(s.iterations),
                static_cast<long long>(s.evaluations));
  lines.emplace_back(buf);
  return lines;
}

void Minimizer::put_state(io::SolverState& st) const {
  const std::string p = "md.minimize.";
  st.integers[p + "stop"] = static_cast<std::int64_t>(m_stats.stop);
  st.integers[p + "iterations"] = m_stats.iterations;
  st.integers[p + "evaluations"] = m_stats.evaluations;
  st.integers[p + "start_step"] = m_start_step;
  st.integers[p + "last_negative"] = m_last_negative;
  st.integers[p + "vdotf_negative"] = m_vdotf_negative;
  st.integers[p + "flagv0"] = m_flagv0 ? 1 : 0;
  const std::pair<const char*, double> reals[] = {
      {"ecurrent", m_ecurrent},           {"eprevious", m_eprevious},
      {"gg", m_gg},                       {"fire_dt", m_fire_dt},
      {"fire_alpha", m_fire_alpha},       {"alpha_final", m_stats.alpha_final},
      {"einitial", m_stats.einitial},     {"enext_to_last", m_stats.enext_to_last},
      {"efinal", m_stats.efinal},         {"fnorm2_initial", m_stats.fnorm2_initial},
      {"fnorminf_initial", m_stats.fnorminf_initial}, {"fnorm2_final", m_stats.fnorm2_final},
      {"fnorminf_final", m_stats.fnorminf_final}};
  for (const auto& [k, v] : reals) st.reals[p + k] = v;
}

void Minimizer::restore_state(const io::SolverState& st) {
  const std::string p = "md.minimize.";
  auto real = [&](const char* k) {
    const auto it = st.reals.find(p + k);
    if (it == st.reals.end()) throw InputError("checkpoint has no attribute '" + p + k + "' ([md.minimize])");
    return it->second;
  };
  const std::int64_t stop = st.require_integer(p + "stop");
  if (stop < 0 || stop > static_cast<std::int64_t>(MinStop::MaxVdotf))
    throw InputError("checkpoint attribute '" + p + "stop' = " + std::to_string(stop) + " is not a stop condition");
  m_stats.stop = static_cast<MinStop>(stop);
  m_stats.iterations = st.require_integer(p + "iterations");
  m_stats.evaluations = st.require_integer(p + "evaluations");
  m_start_step = st.require_integer(p + "start_step");
  m_last_negative = st.require_integer(p + "last_negative");
  m_vdotf_negative = st.require_integer(p + "vdotf_negative");
  m_flagv0 = st.require_integer(p + "flagv0") != 0;
  m_ecurrent = real("ecurrent");
  m_eprevious = real("eprevious");
  m_gg = real("gg");
  m_fire_dt = real("fire_dt");
  m_fire_alpha = real("fire_alpha");
  m_stats.alpha_final = real("alpha_final");
  m_stats.einitial = real("einitial");
  m_stats.enext_to_last = real("enext_to_last");
  m_stats.efinal = real("efinal");
  m_stats.fnorm2_initial = real("fnorm2_initial");
  m_stats.fnorminf_initial = real("fnorminf_initial");
  m_stats.fnorm2_final = real("fnorm2_final");
  m_stats.fnorminf_final = real("fnorminf_final");
}

}  // namespace spotrun::md
