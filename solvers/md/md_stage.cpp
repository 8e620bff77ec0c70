// The MD solver, [[run.stage]]: the keys a stage may set and the stages' configurations (read through the
// deck, so that a stage's values pass the same checks as [md]'s), the stage and time of a step, and the
// start of a stage in the time loop, as LAMMPS starts a `run` after `unfix` and `fix`.
#include "md_stage.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "comm/errors.hpp"
#include "integrate.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

const std::vector<std::string>& stage_ensembles() {
  static const std::vector<std::string> names{"nve", "langevin", "nvt"};
  return names;
}

const std::vector<std::string>& stage_key_names() {
  static const std::vector<std::string> names{"md.ensemble", "md.temperature", "md.damp",
                                              "md.tchain",   "md.dt",          "md.seed"};
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
  const io::KeySpec* specs[16] = {};
  const auto& names = stage_key_names();
  for (std::size_t i = 0; i < names.size(); ++i) specs[i] = d.schema().find(names[i]);
  io::Deck deck = d;
  std::int64_t end = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::string at = "run.stage." + std::to_string(k) + ".";
    for (std::size_t i = 0; i < names.size(); ++i)
      if (specs[i] && d.has(at + names[i])) deck.apply_set(names[i] + "=" + value_text(d, at + names[i], specs[i]->type));
    MdStage s;
    s.steps = d.get_int(at + "steps");
    end += s.steps;
    s.end_step = end;
    s.config = read(deck);
    out.push_back(std::move(s));
    if (decks) decks->push_back(deck);
  }
  return out;
}

std::size_t stage_of(const MdConfig& cfg, std::int64_t step) {
  for (std::size_t k = 0; k < cfg.stages.size(); ++k)
    if (step <= cfg.stages[k].end_step) return k;
  return cfg.stages.empty() ? 0 : cfg.stages.size() - 1;
}

double stage_time(const MdConfig& cfg, std::int64_t step) {
  if (cfg.stages.empty()) return static_cast<double>(step) * cfg.dt;
  double dt = cfg.stages.front().config.dt, t0 = 0;
  std::int64_t s0 = 0, start = 0;
  for (const auto& s : cfg.stages) {
    if (start > 0 && step <= start) break;
    if (s.config.dt != dt) {  // LAMMPS's timestep command: atime += (ntimestep - atimestep) dt
      t0 += static_cast<double>(start - s0) * dt;
      s0 = start;
      dt = s.config.dt;
    }
    start = s.end_step;
  }
  return t0 + static_cast<double>(step - s0) * dt;
}

void MdSolver::enter_stage(std::size_t k) {
  m_stage = k;
  if (k < m_cfg.stages.size()) apply_stage(m_cfg, m_cfg.stages[k].config);
}

void MdSolver::begin_stage_if_due() {
  if (m_stage + 1 >= m_cfg.stages.size() || m_step < m_cfg.stages[m_stage].end_step) return;
  enter_stage(m_stage + 1);
  // LAMMPS's setup of a run: neighbour lists and forces anew, Langevin's forces for the first half-kick, the
  // Nose-Hoover chain set up afresh (a new fix nvt).
  recompute_forces();
  if (m_cfg.ensemble == Ensemble::Langevin)
    langevin_forces(m_atoms, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.seed, m_step, langevin_units(m_cfg.unit()));
  setup_thermostat();
}

void MdSolver::restore_stage(const io::SolverState& st) {
  if (m_cfg.stages.empty()) return;
  const auto step = st.integers.find("step");
  if (step == st.integers.end()) return;  // read_scalars() names what is missing
  const std::size_t k = stage_of(m_cfg, step->second);
  const auto recorded = st.integers.find("md.stage");
  std::string bad;
  if (recorded == st.integers.end())
    bad = "checkpoint has no md.stage: it was written by a run without [[run.stage]], and the deck has stages";
  else if (recorded->second != static_cast<std::int64_t>(k))
    bad = "checkpoint md.stage = " + std::to_string(recorded->second) + " at step " + std::to_string(step->second) +
          ", but the deck's stages put that step in stage " + std::to_string(k);
  m_comm.agree<InputError>(bad.empty(), bad);
  enter_stage(k);
}

void MdSolver::put_stage_state(io::SolverState& st) const {
  if (!m_cfg.stages.empty()) st.integers["md.stage"] = static_cast<std::int64_t>(m_stage);
}

std::vector<std::string> MdSolver::describe_stages() const {
  std::vector<std::string> lines;
  std::int64_t start = 0;
  for (std::size_t k = 0; k < m_cfg.stages.size(); ++k) {
    const MdStage& s = m_cfg.stages[k];
    const MdConfig& c = s.config;
    std::string what = c.ensemble == Ensemble::Nve ? "nve" : c.ensemble == Ensemble::Langevin ? "langevin" : "nvt";
    char buf[256];
    if (c.ensemble != Ensemble::Nve) {
      std::snprintf(buf, sizeof buf, " temperature %.10g damp %.10g", c.temperature, c.damp);
      what += buf;
    }
    if (c.ensemble == Ensemble::Nvt) what += " tchain " + std::to_string(c.tchain);
    if (c.ensemble == Ensemble::Langevin) what += " seed " + std::to_string(c.seed);
    std::snprintf(buf, sizeof buf, "; dt %.10g", c.dt);
    what += buf;
    const bool now = k == m_stage;
    lines.push_back("stage " + std::to_string(k + 1) + " of " + std::to_string(m_cfg.stages.size()) + ": steps " +
                    std::to_string(start + 1) + "-" + std::to_string(s.end_step) + ", " + what +
                    (now ? " (current: step " + std::to_string(m_step) + ")" : ""));
    start = s.end_step;
  }
  return lines;
}

}  // namespace spotrun::md
