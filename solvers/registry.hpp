#pragma once
// The solver registry: everything the launcher (and the deck schema it assembles for the deck engine,
// launcher/deck/deck_schema.cpp) needs to know about a solver, given by the solver itself, so that the launcher
// names none (docs/solvers.md). A solver registers, in its own folder (solvers/<name>/<name>_registration.cpp,
// compiled into its target by solvers/<name>/CMakeLists.txt):
//   its name (run.solver), the unit system its checkpoints name, its deck keys, which of them apply,
//   the rules between them, its typed configuration reader, its memory estimate, the checkpoint bytes per
//   unit of its work, the inputs it reads before it is made, and its factory.
// The solvers built into spotrun are listed once, in SPOTRUN_SOLVERS (solvers/CMakeLists.txt), which
// generates the list registered_solvers() starts with. A listed solver without a registration fails the
// link; a folder with a registration that is not listed fails tests/test_registry.cpp.
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/transport.hpp"
#include "io/deck/deck.hpp"
#include "io/lammps_data.hpp"
#include "io/solver_state.hpp"
#include "solvers/memory_need.hpp"
#include "solvers/solver.hpp"

namespace spotrun::solvers {

// What `spotrun export` writes of a checkpoint of a particle solver: its particles as a LAMMPS data system, and
// the name of each type (for XYZ; empty: the type numbers).
struct ExportedSystem {
  io::LammpsData data;
  std::vector<std::string> type_names;
  // The LAMMPS commands the data file needs before read_data besides its atom_style ("bond_style fene", the
  // styles of its Coeffs sections, and "special_bonds lj 0 1 1 coul 0 0 0"); none for atoms alone.
  std::vector<std::string> lammps_commands;
};

// `spotrun export` of a solver's checkpoints (optional; a solver without it does not export): the arrays it
// reads (their layouts, as Solver::state_layout() gives them), and the system they hold, made from a state whose
// arrays hold every row (gathered on one rank) and its scalars, and from the deck the checkpoint recorded
// (nullptr when no type names are wanted). Throws InputError for a state it cannot export.
struct SolverExport {
  std::function<std::vector<io::StateArray>()> arrays;
  std::function<ExportedSystem(const io::SolverState& all_rows, const io::Deck* deck)> system;
};

// What a factory gets. Collective: every rank makes its solver with the same deck.
struct SolverContext {
  const comm::Communicator& comm;
  comm::Transport& transport;
  const io::Deck& deck;  // validated
  std::string deck_path;       // paths in the deck are relative to the directory of this file
  // Refuses (InputError on every rank) bytes_per_rank that the nodes' memory cannot hold; `what`
  // names them. For what a solver allocates besides its system, e.g. the text of an input file.
  std::function<void(double bytes_per_rank, const std::string& what)> check_memory;
  // The user who runs the solver (USER, as the launcher read it: launcher::Environment::user), for the files
  // that name their author (MD: the H5MD trajectory's /h5md/author); "" when not known.
  std::string user;
};

// What a fresh run reads from files before its solver is made (MD: the atoms of a LAMMPS data file).
struct SolverInputs {
  double work_units = -1;           // the size of the system they hold (atoms); < 0: the deck's
  std::shared_ptr<const void> data;  // the solver's own type, handed to its factory
};

// Bytes one rank will allocate, and the system they are for ("the MD system of 4000 atoms"):
// bytes_per_rank in host memory, device_bytes_per_rank in the memory of its GPU (0 on a host build).
struct MemoryEstimate {
  double bytes_per_rank = 0;
  std::string what;
  double device_bytes_per_rank = 0;

  // A solver's need at its peak (solvers/memory_need.hpp), for the system `what`.
  static MemoryEstimate of(const MemoryNeed& need, std::string what) {
    return {need.host, std::move(what), need.device};
  }
};

// The registration of one solver, as the registry keeps it: every function reads the solver's
// configuration from a validated deck. Make one with make_registration().
struct SolverRegistration {
  std::string name;   // run.solver; /solver of its checkpoints; the first part of each of its keys
  std::string units;  // unit system its checkpoints name (/units): "lj", "nondimensional"
  // The unit system of a deck's run (/units of its checkpoints, md.units): `units` unless the solver's deck
  // chooses it.
  std::function<std::string(const io::Deck&)> units_of;
  std::vector<io::KeySpec> keys;  // its deck keys "<name>.*", in documentation order
  // The keys of its own that a stage of the run ([[run.stage]], [run.stage.<name>]) may set for that stage, with
  // their checks (a stage's choices may be fewer than the key's); every other key of the solver defines the
  // system and is refused in a stage. Empty: the solver runs no stages.
  std::vector<io::KeySpec> stage_keys;
  // Whether one of its keys applies to the deck (resolved deck, physics()).
  std::function<bool(const io::Deck&, const std::string& key)> key_active;
  // The rules between its keys, checked by Deck::validate after every key passed its own checks, when
  // run.solver names it. Throws InputError.
  std::function<void(const io::Deck&)> check_rules;
  // Its memory per rank on nranks for a system of work_units (< 0: the system the deck sets up; a
  // solver whose deck fixes the size ignores it).
  std::function<MemoryEstimate(const io::Deck&, double work_units, int nranks)> memory;
  // Bytes its state() writes into a checkpoint per unit of work (Solver::work_per_step()).
  std::function<double(const io::Deck&)> checkpoint_bytes_per_work_unit;
  // The size of the system the deck sets up, in units of work (atoms, grid points), from the deck alone;
  // < 0 when only its inputs say (a data file: read_inputs() gives it). `spotrun doctor` sizes the
  // checkpoint with it. Optional: empty, or -1 from make_registration(), when the solver does not say.
  std::function<double(const io::Deck&)> deck_work_units;
  // Reads the inputs of a fresh run (collective); returns no data and work_units < 0 when there are none.
  std::function<SolverInputs(const SolverContext&)> read_inputs;
  // The checks make() makes of a fresh run on ctx.comm.size() ranks before it allocates the system (MD: the
  // pair coefficients name known types once, the box is thick enough for the rank grid), with the inputs
  // read_inputs() gave; throws InputError (the same verdict on every rank). `spotrun validate` runs them
  // without making the solver.
  std::function<void(const SolverContext&, const SolverInputs&)> check_fresh;
  // Makes the solver: fresh from inputs, or, with inputs == nullptr, empty for restore() to fill.
  std::function<std::unique_ptr<Solver>(const SolverContext&, const SolverInputs* inputs)> make;
  // Optional: `spotrun export` of its checkpoints (empty functions: they do not export).
  SolverExport exporter;
};

// What a solver defines, with its configuration type: make_registration() turns it into the
// registration, reading the configuration from the deck for every other function.
// The unit system of the deck's run under registration r: r.units_of's, else r.units.
inline std::string units_of(const SolverRegistration& r, const io::Deck& deck) {
  return r.units_of ? r.units_of(deck) : r.units;
}

template <class Config>
struct SolverDefinition {
  std::string name;
  std::string units;
  // Optional: the unit system of a configuration (default: units).
  std::function<std::string(const Config&)> units_of;
  std::vector<io::KeySpec> keys;
  // Optional: the keys a stage may set (SolverRegistration::stage_keys).
  std::vector<io::KeySpec> stage_keys;
  // The typed configuration from a validated deck: types, ranges and choices are the deck engine's
  // checks and are not repeated here.
  std::function<Config(const io::Deck&)> read_config;
  // Optional: default, every key of the solver applies exactly when run.solver names it.
  std::function<bool(const io::Deck&, const std::string& key)> key_active;
  // Optional: rules between keys (InputError naming the deck and the keys).
  std::function<void(const io::Deck&, const Config&)> check_rules;
  std::function<MemoryEstimate(const Config&, double work_units, int nranks)> memory;
  std::function<double(const Config&)> checkpoint_bytes_per_work_unit;
  // Optional: the size of the system from the configuration alone (default: -1, not known before the
  // inputs are read).
  std::function<double(const Config&)> deck_work_units;
  // Optional: default, no inputs besides the deck.
  std::function<SolverInputs(const Config&, const SolverContext&)> read_inputs;
  // Optional: default, none. The checks make() makes before it allocates, called by make() itself too.
  std::function<void(const Config&, const SolverContext&, const SolverInputs&)> check_fresh;
  std::function<std::unique_ptr<Solver>(const Config&, const SolverContext&, const SolverInputs* inputs)> make;
  // Optional: `spotrun export` of its checkpoints (reads no configuration).
  SolverExport exporter;
};

template <class Config>
SolverRegistration make_registration(SolverDefinition<Config> def) {
  auto d = std::make_shared<const SolverDefinition<Config>>(std::move(def));
  SolverRegistration r;
  r.name = d->name;
  r.units = d->units;
  r.units_of = [d](const io::Deck& deck) { return d->units_of ? d->units_of(d->read_config(deck)) : d->units; };
  r.keys = d->keys;
  r.stage_keys = d->stage_keys;
  const std::string name = d->name;
  if (d->key_active)
    r.key_active = d->key_active;
  else
    r.key_active = [name](const io::Deck& deck, const std::string&) {
      return deck.get_string("run.solver") == name;
    };
  r.check_rules = [d](const io::Deck& deck) {
    if (d->check_rules) d->check_rules(deck, d->read_config(deck));
  };
  r.memory = [d](const io::Deck& deck, double work_units, int nranks) {
    return d->memory(d->read_config(deck), work_units, nranks);
  };
  r.checkpoint_bytes_per_work_unit = [d](const io::Deck& deck) {
    return d->checkpoint_bytes_per_work_unit(d->read_config(deck));
  };
  r.deck_work_units = [d](const io::Deck& deck) {
    return d->deck_work_units ? d->deck_work_units(d->read_config(deck)) : -1.0;
  };
  r.read_inputs = [d](const SolverContext& ctx) {
    return d->read_inputs ? d->read_inputs(d->read_config(ctx.deck), ctx) : SolverInputs{};
  };
  r.check_fresh = [d](const SolverContext& ctx, const SolverInputs& inputs) {
    if (d->check_fresh) d->check_fresh(d->read_config(ctx.deck), ctx, inputs);
  };
  r.make = [d](const SolverContext& ctx, const SolverInputs* inputs) {
    return d->make(d->read_config(ctx.deck), ctx, inputs);
  };
  r.exporter = d->exporter;
  return r;
}

namespace impl {

// Whether Definition has the member that Member<Definition> names.
template <template <class> class Member, class Definition, class = void>
struct Defines : std::false_type {};
template <template <class> class Member, class Definition>
struct Defines<Member, Definition, std::void_t<Member<Definition>>> : std::true_type {};

template <class D>
using KeyActiveOf = decltype(&D::key_active);
template <class D>
using CheckRulesOf = decltype(&D::check_rules);
template <class D>
using DeckWorkUnitsOf = decltype(&D::deck_work_units);
template <class D>
using ReadInputsOf = decltype(&D::read_inputs);
template <class D>
using CheckFreshOf = decltype(&D::check_fresh);
template <class D>
using ExportSystemOf = decltype(&D::export_system);
template <class D>
using UnitsOf = decltype(&D::units_of);
template <class D>
using StageKeysOf = decltype(&D::stage_keys);

}  // namespace impl

// The registration of a solver defined as a struct of static members, the form of the built-in solvers
// (solvers/md/md_registration.cpp, solvers/fluid/fluid_registration.cpp): `using Config`, `name`, `units`,
// `keys()`, `read_config`, `memory`, `checkpoint_bytes_per_work_unit` and `make`, as in SolverDefinition;
// `key_active`, `check_rules`, `deck_work_units`, `read_inputs`, `check_fresh`, `units_of` and `stage_keys` when the
// solver has them, and
// `export_arrays` with `export_system` (SolverExport) when its checkpoints export.
// A solver's registration function is then one line: `return make_registration<Definition>();`.
template <class Definition>
SolverRegistration make_registration() {
  using D = Definition;
  SolverDefinition<typename D::Config> d;
  d.name = D::name;
  d.units = D::units;
  d.keys = D::keys();
  d.read_config = &D::read_config;
  d.memory = &D::memory;
  d.checkpoint_bytes_per_work_unit = &D::checkpoint_bytes_per_work_unit;
  d.make = &D::make;
  if constexpr (impl::Defines<impl::KeyActiveOf, D>::value) d.key_active = &D::key_active;
  if constexpr (impl::Defines<impl::CheckRulesOf, D>::value) d.check_rules = &D::check_rules;
  if constexpr (impl::Defines<impl::DeckWorkUnitsOf, D>::value) d.deck_work_units = &D::deck_work_units;
  if constexpr (impl::Defines<impl::ReadInputsOf, D>::value) d.read_inputs = &D::read_inputs;
  if constexpr (impl::Defines<impl::CheckFreshOf, D>::value) d.check_fresh = &D::check_fresh;
  if constexpr (impl::Defines<impl::ExportSystemOf, D>::value) d.exporter = {&D::export_arrays, &D::export_system};
  if constexpr (impl::Defines<impl::UnitsOf, D>::value) d.units_of = &D::units_of;
  if constexpr (impl::Defines<impl::StageKeysOf, D>::value) d.stage_keys = D::stage_keys();
  return make_registration(std::move(d));
}

// Every registered solver: the built-in ones in the order of SPOTRUN_SOLVERS (the first is run.solver's
// default), then those added by register_solver(). Checked on first use: std::logic_error for a
// registration that is incomplete, names a solver twice, or has a key outside "<name>.".
const std::deque<SolverRegistration>& registered_solvers();
// The solver of that name, or nullptr.
const SolverRegistration* find_solver(const std::string& name);
// The solver of that name; InputError naming `where` (the deck) and every registered solver otherwise.
const SolverRegistration& solver_named(const std::string& name, const std::string& where);
// The registered solver whose key this is ("md.pair.epsilon": md), or nullptr (a key of the launcher).
const SolverRegistration* solver_of_key(const std::string& key);
// The names of the registered solvers, in order.
std::vector<std::string> solver_names();
// Adds a solver that is not built in (a test's own solver). Call it before any deck is read: the
// deck schema is rebuilt with its keys. std::logic_error as for the built-in ones.
void register_solver(SolverRegistration registration);

}  // namespace spotrun::solvers
