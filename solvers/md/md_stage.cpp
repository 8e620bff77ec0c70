// The MD solver, [[run.stage]]: the keys a stage may set and the stages' configurations (read through the
// deck, so that a stage's values pass the same checks as [md]'s), the stage and time of a step, and the
// start of a stage in the time loop, as LAMMPS starts a `run` after `unfix` and `fix`.
#include "md_stage.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "comm/errors.hpp"
#include "integrate.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

const std::vector<std::string>& stage_ensembles() {
  static const std::vector<std::string> names{"nve", "langevin", "nvt", "npt", "nph"};
  return names;
}

const std::vector<std::string>& stage_key_names() {
  static const std::vector<std::string> names{"md.ensemble",         "md.temperature",
                                              "md.damp",             "md.tchain",
                                              "md.dt",               "md.seed",
                                              "md.pressure",         "md.pressure_damp",
                                              "md.pchain",           "md.barostat",
                                              "md.minimize.style",   "md.minimize.etol",
                                              "md.minimize.ftol",    "md.minimize.max_iterations",
                                              "md.minimize.max_evaluations", "md.minimize.dmax"};
  return names;
}

std::vector<io::KeySpec> stage_keys(const std::vector<io::KeySpec>& keys) {
  std::vector<io::KeySpec> out;
  for (const auto& name : stage_key_names()) {
    const auto k = std::find_if(keys.begin(), keys.end(), [&](const io::KeySpec& s) { return s.key == name; });
    if (k == keys.end()) throw std::logic_error("md stage key '" + name + "' is not a key of md");
    out.push_back(*k);
    if (name == "md.ensemble") out.back().choices = stage_ensembles();
  }
  return out;
}

void apply_stage(MdConfig& into, const MdConfig& stage) {
  into.ensemble = stage.ensemble;
  into.temperature = stage.temperature;
  into.damp = stage.damp;
  into.tchain = stage.tchain;
  into.dt = stage.dt;
  into.seed = stage.seed;
  into.pressure = stage.pressure;
  into.pressure_damp = stage.pressure_damp;
  into.pchain = stage.pchain;
  into.barostat = stage.barostat;
  into.minimize = stage.minimize;
}

namespace {

// The TOML text of a stage key's value, for Deck::apply_set (floats with 17 digits: the same double back).
std::string value_text(const io::Deck& d, const std::string& key, io::KeyType type) {
  char buf[64];
  switch (type) {
    case io::KeyType::Float:
      std::snprintf(buf, sizeof buf, "%.17g", d.get_float(key));
      return buf;
    case io::KeyType::Int:
      return std::to_string(d.get_int(key));
    case io::KeyType::String:
      return "\"" + d.get_string(key) + "\"";  // one of the key's choices
    default:
      throw std::logic_error("md stage key '" + key + "' of a type a stage cannot set");
  }
}

}  // namespace

std::vector<MdStage> read_stages(const io::Deck& d, const std::function<MdConfig(const io::Deck&)>& read,
                                 std::vector<io::Deck>* decks) {
  std::vector<MdStage> out;
  const std::size_t n = d.count("run.stage");
  if (n == 0) return out;
  const auto& names = stage_key_names();
  std::vector<const io::KeySpec*> specs;
  for (const auto& name : names) specs.push_back(d.schema().find(name));
  auto minimise_key = [](const std::string& name) { return name.rfind("md.minimize.", 0) == 0; };
  io::Deck deck = d;  // the keys the stages set so far
  for (std::size_t k = 0; k < n; ++k) {
    const std::string at = "run.stage." + std::to_string(k) + ".";
    for (std::size_t i = 0; i < names.size(); ++i)
      if (specs[i] && !minimise_key(names[i]) && d.has(at + names[i]))
        deck.apply_set(names[i] + "=" + value_text(d, at + names[i], specs[i]->type));
    // A minimisation: this stage's [md.minimize], every key given or md's default.
    io::Deck own = deck;
    if (d.has(at + "md.minimize"))
      for (std::size_t i = 0; i < names.size(); ++i)
        if (specs[i] && minimise_key(names[i]))
          own.apply_set(names[i] + "=" + (d.has(at + names[i]) ? value_text(d, at + names[i], specs[i]->type)
                                                                 : specs[i]->default_value));
    MdStage s;
    s.steps = d.has(at + "steps") ? d.get_int(at + "steps") : 0;
    s.config = read(own);
    out.push_back(std::move(s));
    if (decks) decks->push_back(own);
  }
  return out;
}

double checkpoint_time(const MdConfig& cfg, const io::SolverState& st, std::int64_t step) {
  if (cfg.stages.empty()) return static_cast<double>(step) * cfg.dt;
  return st.require_real("md.clock_time") + static_cast<double>(step - st.require_integer("md.clock_step")) * cfg.dt;
}

void MdSolver::enter_stage(std::size_t k) {
  m_stage = k;
  if (k < m_cfg.stages.size()) apply_stage(m_cfg, m_cfg.stages[k].config);
}

double MdSolver::clock_time() const { return m_clock_time + static_cast<double>(m_step - m_clock_step) * m_cfg.dt; }

bool MdSolver::stage_done() const {
  const MdStage& s = m_cfg.stages[m_stage];
  return s.minimises() ? m_min && m_min->done() : m_step >= m_stage_start + s.steps;
}

void MdSolver::begin_stage_if_due() {
  while (m_stage + 1 < m_cfg.stages.size() && stage_done()) {
    if (m_cfg.stages[m_stage].minimises()) m_min.reset();
    const double dt = m_cfg.dt;
    enter_stage(m_stage + 1);
    m_stage_start = m_step;
    if (m_cfg.dt != dt) {  // LAMMPS's timestep command: atime += (ntimestep - atimestep) dt
      m_clock_time = m_time;
      m_clock_step = m_step;
    }
    // LAMMPS's setup of a run (or of a minimize): neighbour lists and forces anew; for the dynamics Langevin's
    // forces and a new Nose-Hoover chain; for a minimisation the minimiser from these forces. A minimisation
    // that has nothing to do ends here, and the next stage begins.
    recompute_forces();
    if (m_cfg.minimize.enabled) {
      start_minimizer();
      continue;
    }
    if (m_cfg.ensemble == Ensemble::Langevin)
      langevin_forces(m_atoms, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.seed, m_step, langevin_units(m_cfg.unit()));
    setup_thermostat();
  }
}

std::int64_t MdSolver::stages_preamble_end() const {
  // The minimisations' iterations so far: the steps since step 0 that the dynamics stages before this one did
  // not take, and this stage's.
  std::int64_t dynamics = 0;
  for (std::size_t k = 0; k < m_stage; ++k) dynamics += m_cfg.stages[k].steps;
  const std::int64_t before = m_stage_start - dynamics;
  if (!m_cfg.stages[m_stage].minimises()) {
    // A minimisation next, at this stage's end: it runs before the run ends.
    const bool next_minimises = m_stage + 1 < m_cfg.stages.size() && m_cfg.stages[m_stage + 1].minimises();
    return next_minimises && stage_done() ? -1 : before;
  }
  if (!m_min || !m_min->done()) return -1;
  return before + m_min->stats().iterations;
}

void MdSolver::restore_stage(const io::SolverState& st) {
  if (m_cfg.stages.empty()) return;
  std::string bad;
  std::int64_t k = 0, start = 0, clock_step = 0, step = 0;
  double clock = 0;
  try {
    step = st.require_integer("step");
    k = st.require_integer("md.stage");
    start = st.require_integer("md.stage_start");
    clock_step = st.require_integer("md.clock_step");
    clock = st.require_real("md.clock_time");
  } catch (const InputError& e) {
    bad = std::string(e.what()) + " (a checkpoint of a run with [[run.stage]] holds md.stage, md.stage_start, "
          "md.clock_step and md.clock_time)";
  }
  const auto n = static_cast<std::int64_t>(m_cfg.stages.size());
  std::int64_t dynamics = 0;
  for (std::int64_t j = 0; j < k && j < n; ++j) dynamics += m_cfg.stages[j].steps;
  if (bad.empty() && (k < 0 || k >= n))
    bad = "checkpoint md.stage = " + std::to_string(k) + ", but the deck has " + std::to_string(n) + " stages";
  else if (bad.empty() && (start < dynamics || start > step))
    bad = "checkpoint md.stage_start = " + std::to_string(start) + " at step " + std::to_string(step) +
          ": stage " + std::to_string(k + 1) + " of the deck starts after the " + std::to_string(dynamics) +
          " steps of the stages before it, and not after the checkpoint's step";
  bool minimised_before = false;
  for (std::int64_t j = 0; j < k && j < n; ++j) minimised_before = minimised_before || m_cfg.stages[j].minimises();
  if (bad.empty() && !minimised_before && start != dynamics)
    bad = "checkpoint md.stage = " + std::to_string(k) + " and md.stage_start = " + std::to_string(start) + " at step " +
          std::to_string(step) + ", but stage " + std::to_string(k + 1) + " of the deck begins at step " +
          std::to_string(dynamics);
  else if (bad.empty() && !m_cfg.stages[k].minimises() && step - start > m_cfg.stages[k].steps)
    bad = "checkpoint md.stage = " + std::to_string(k) + " at step " + std::to_string(step) + " (the stage began at " +
          "step " + std::to_string(start) + "), but stage " + std::to_string(k + 1) + " of the deck has " +
          std::to_string(m_cfg.stages[k].steps) + " steps";
  else if (bad.empty() && (clock_step < 0 || clock_step > step || !std::isfinite(clock)))
    bad = "checkpoint md.clock_step = " + std::to_string(clock_step) + ", md.clock_time not finite or after step " +
          std::to_string(step);
  m_comm.agree<InputError>(bad.empty(), bad);
  enter_stage(static_cast<std::size_t>(k));
  m_stage_start = start;
  m_clock_step = clock_step;
  m_clock_time = clock;
}

void MdSolver::put_stage_state(io::SolverState& st) const {
  if (m_cfg.stages.empty()) return;
  st.integers["md.stage"] = static_cast<std::int64_t>(m_stage);
  st.integers["md.stage_start"] = m_stage_start;
  st.integers["md.clock_step"] = m_clock_step;
  st.reals["md.clock_time"] = m_clock_time;
}

std::vector<std::string> MdSolver::describe_stages() const {
  std::vector<std::string> lines;
  for (std::size_t k = 0; k < m_cfg.stages.size(); ++k) {
    const MdStage& s = m_cfg.stages[k];
    const MdConfig& c = s.config;
    char buf[256];
    std::string what;
    if (s.minimises()) {
      std::snprintf(buf, sizeof buf, "minimise %s, etol %.6g, ftol %.6g, at most %lld iterations",
                    c.minimize.style == MinStyle::Cg ? "cg" : "fire", c.minimize.etol, c.minimize.ftol,
                    static_cast<long long>(c.minimize.max_iterations));
      what = buf;
    } else {
      what = std::to_string(s.steps) + " steps, " +
             (c.ensemble == Ensemble::Nve ? "nve" : c.ensemble == Ensemble::Langevin ? "langevin" : "nvt");
      if (c.ensemble != Ensemble::Nve) {
        std::snprintf(buf, sizeof buf, " temperature %.10g damp %.10g", c.temperature, c.damp);
        what += buf;
      }
      if (c.ensemble == Ensemble::Nvt) what += " tchain " + std::to_string(c.tchain);
      if (c.ensemble == Ensemble::Langevin) what += " seed " + std::to_string(c.seed);
      std::snprintf(buf, sizeof buf, "; dt %.10g", c.dt);
      what += buf;
    }
    std::string state;
    if (k < m_stage) state = " (done)";
    if (k == m_stage)
      state = " (current: began at step " + std::to_string(m_stage_start) + ", now step " + std::to_string(m_step) + ")";
    lines.push_back("stage " + std::to_string(k + 1) + " of " + std::to_string(m_cfg.stages.size()) + ": " + what +
                    state);
  }
  return lines;
}

}  // namespace spotrun::md
