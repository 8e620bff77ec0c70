// The MD solver's registration: its deck keys ([md], [md.pair], [md.lattice], [md.initial]; docs/decks.md
// documents the same keys), its configuration reader, the rules between its sections, its memory and
// checkpoint sizes, the LAMMPS data file it may start from, and its factory.
#include "md_registration.hpp"

#include <filesystem>
#include <sstream>

#include "comm/errors.hpp"
#include "io/input_file.hpp"
#include "io/lammps_data.hpp"
#include "md_memory.hpp"
#include "md_solver.hpp"
#include "solvers/registry.hpp"

namespace spotrun::md {

using launcher::Deck;
using launcher::KeySpec;
using launcher::KeyType;

MdConfig config_from_deck(const Deck& d) {
  MdConfig c;
  c.dt = d.get_float("md.dt");
  c.cutoff = d.get_float("md.cutoff");
  c.skin = d.get_float("md.skin");
  c.neighbor_every = static_cast<int>(d.get_int("md.neighbor_every"));
  c.neighbor_check = d.get_bool("md.neighbor_check");
  c.ensemble = d.get_string("md.ensemble") == "langevin" ? Ensemble::Langevin : Ensemble::Nve;
  c.temperature = d.get_float("md.temperature");
  c.damp = d.get_float("md.damp");
  c.seed = static_cast<std::uint64_t>(d.get_int("md.seed"));
  c.pair_style = d.get_string("md.pair.style");
  c.epsilon = d.get_float("md.pair.epsilon");
  c.sigma = d.get_float("md.pair.sigma");
  c.shift = d.get_bool("md.pair.shift");
  c.from_lattice = !d.has("md.initial.lammps_data");
  c.lattice_type = d.get_string("md.lattice.type");
  c.density = d.get_float("md.lattice.density");
  c.cells = d.get_int3("md.lattice.cells");
  c.lattice_temperature = d.get_float("md.lattice.temperature");
  c.lattice_seed = static_cast<std::uint64_t>(d.get_int("md.lattice.seed"));
  return c;
}

namespace {

// resumable: keys that may change between a checkpoint and its resume (neighbour list tuning); every
// other key defines the physics and must not change.
std::vector<KeySpec> md_keys() {
  return {
      // [md]
      {"md.dt", KeyType::Float, "0.005", "tau", "Time step", 0, 1e3, true},
      {"md.cutoff", KeyType::Float, "2.5", "sigma", "Pair cutoff radius", 0, 1e3, true},
      {"md.skin", KeyType::Float, "0.3", "sigma", "Neighbour list skin (LAMMPS neighbor SKIN bin)", 0, 1e3, false, {},
       true},
      {"md.neighbor_every", KeyType::Int, "1", "steps", "Consider a neighbour list rebuild every this many steps", 1, 1e9,
       false, {}, true},
      {"md.neighbor_check", KeyType::Bool, "true", "-",
       "Rebuild only if an atom moved more than skin/2 since the last build (LAMMPS neigh_modify check yes)", -1e300,
       1e300, false, {}, true},
      {"md.ensemble", KeyType::String, "\"nve\"", "-", "Integrator: velocity Verlet (nve) or with a Langevin thermostat",
       -1e300, 1e300, false, {"nve", "langevin"}},
      {"md.temperature", KeyType::Float, "1.0", "epsilon/k_B", "Langevin target temperature", 0, 1e9},
      {"md.damp", KeyType::Float, "1.0", "tau", "Langevin damping time", 0, 1e9, true},
      {"md.seed", KeyType::Int, "12345", "-", "Seed of the Langevin random forces", 1, 9.2e18},
      // [md.pair]
      {"md.pair.style", KeyType::String, "\"lj/cut\"", "-", "Pair potential", -1e300, 1e300, false, {"lj/cut"}},
      {"md.pair.epsilon", KeyType::Float, "1.0", "epsilon", "LJ well depth", 0, 1e9, true},
      {"md.pair.sigma", KeyType::Float, "1.0", "sigma", "LJ zero-crossing distance", 0, 1e9, true},
      {"md.pair.shift", KeyType::Bool, "false", "-", "Shift the pair energy to zero at the cutoff (pair_modify shift yes)"},
      // [md.lattice]
      {"md.lattice.type", KeyType::String, "\"fcc\"", "-", "Lattice type", -1e300, 1e300, false, {"fcc"}},
      {"md.lattice.density", KeyType::Float, "0.8442", "sigma^-3", "Reduced number density (LAMMPS lattice fcc RHO)", 0,
       1e3, true},
      {"md.lattice.cells", KeyType::Int3, "[10, 10, 10]", "unit cells", "Unit cells [nx, ny, nz] (4 atoms each)", 1, 1e5},
      {"md.lattice.temperature", KeyType::Float, "1.0", "epsilon/k_B", "Initial temperature of the velocities", 0, 1e9},
      {"md.lattice.seed", KeyType::Int, "87287", "-", "Seed of the initial velocities", 1, 9.2e18},
      // [md.initial]
      {"md.initial.lammps_data", KeyType::String, "", "path",
       "LAMMPS data file to start from (relative paths: to the deck's directory)"},
  };
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The atoms come from [md.lattice] unless [md.initial] names a data file, and then its keys apply
// instead. Compatibility: before solvers registered, the deck engine applied these two sections to every
// deck, so fluid decks resolve them too (the [md.lattice] defaults, or [md.initial] when given) and fluid
// checkpoints hold them in their physics lines, which a resume compares. They stay active for fluid
// decks; decks of solvers registered since do not get them.
bool key_active(const Deck& d, const std::string& key) {
  const std::string solver = d.get_string("run.solver");
  const bool source_keys = solver == "md" || solver == "fluid";
  const bool from_data = d.has("md.initial.lammps_data");
  if (starts_with(key, "md.lattice.")) return source_keys && !from_data;
  if (starts_with(key, "md.initial.")) return source_keys && from_data;
  return solver == "md";
}

void check_rules(const Deck& d, const MdConfig&) {
  if (d.has("md.initial") && d.has("md.lattice"))
    throw InputError(d.name() + ": give either [md.lattice] or [md.initial], not both");
  if (d.has("md.initial") && !d.has("md.initial.lammps_data"))
    throw InputError(d.name() + ": [md.initial] needs key 'lammps_data'");
}

solvers::MemoryEstimate memory(const MdConfig& cfg, double natoms, int nranks) {
  const double n = natoms >= 0 ? natoms : lattice_atoms(cfg);
  std::ostringstream what;
  what << "the MD system of " << n << " atoms";
  return {estimated_bytes_per_rank(cfg, n, nranks), what.str()};
}

// state() writes, per atom: id, x (3), v (3), f (3), image (3), x_build (3) and type, 8 bytes each.
double checkpoint_bytes_per_atom(const MdConfig&) { return 17 * 8; }

// The lattice's atoms; a data file's are known once it is read.
double deck_atoms(const MdConfig& cfg) { return cfg.from_lattice ? lattice_atoms(cfg) : -1.0; }

// A fresh run from [md.initial] reads the LAMMPS data file. Every rank holds its text and parses it:
// twice its size per rank, checked before it is read.
solvers::SolverInputs read_inputs(const MdConfig& cfg, const solvers::SolverContext& ctx) {
  if (cfg.from_lattice) return {};
  std::filesystem::path p = ctx.deck.get_string("md.initial.lammps_data");
  if (p.is_relative()) p = std::filesystem::path(ctx.deck_path).parent_path() / p;
  const std::uint64_t bytes = io::input_file_size(ctx.comm, p.string(), "LAMMPS data file");
  ctx.check_memory(2.0 * static_cast<double>(bytes), "reading LAMMPS data file '" + p.string() + "'");
  std::string text = io::read_input_file(ctx.comm, p.string(), "LAMMPS data file", bytes);
  auto data = std::make_shared<const io::LammpsData>(io::parse_lammps_data(text, p.string()));
  text.clear();
  solvers::SolverInputs in;
  in.work_units = static_cast<double>(data->natoms());
  in.data = data;
  return in;
}

std::unique_ptr<Solver> make(const MdConfig& cfg, const solvers::SolverContext& ctx,
                             const solvers::SolverInputs* inputs) {
  const auto* data = inputs ? static_cast<const io::LammpsData*>(inputs->data.get()) : nullptr;
  return std::make_unique<MdSolver>(cfg, ctx.comm, ctx.transport, data, inputs == nullptr);
}

}  // namespace
}  // namespace spotrun::md

namespace spotrun::solvers {

SolverRegistration registration_md() {
  SolverDefinition<md::MdConfig> d;
  d.name = "md";
  d.units = "lj";
  d.keys = md::md_keys();
  d.read_config = md::config_from_deck;
  d.key_active = md::key_active;
  d.check_rules = md::check_rules;
  d.memory = md::memory;
  d.checkpoint_bytes_per_work_unit = md::checkpoint_bytes_per_atom;
  d.deck_work_units = md::deck_atoms;
  d.read_inputs = md::read_inputs;
  d.make = md::make;
  return make_registration(std::move(d));
}

}  // namespace spotrun::solvers
