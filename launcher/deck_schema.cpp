// The schema of every deck key. docs/decks.md documents the same keys (a test checks that it does).
#include "deck.hpp"
#include "fluid_config.hpp"

namespace spotrun::launcher {

const std::vector<KeySpec>& deck_schema() {
  // resumable: keys that may change between a checkpoint and its resume (run length, output, checkpoint
  // settings, neighbour list tuning); every other key defines the physics and must not change.
  static const std::vector<KeySpec> schema = [] {
    std::vector<KeySpec> s = {
      // [run]
      {"run.solver", KeyType::String, "\"md\"", "-", "Solver to run", -1e300, 1e300, false, {"md", "fluid"}},
      {"run.steps", KeyType::Int, "1000", "steps", "Number of time steps of the run (total, counted from step 0)", 0,
       1e15, false, {}, true},
      {"run.thermo_every", KeyType::Int, "100", "steps", "Thermo output interval (stdout and OUTDIR/thermo.csv)", 1, 1e15,
       false, {}, true},
      {"run.output_dir", KeyType::String, "", "path",
       "Output directory (default: runs/<deck file stem>; --output-dir overrides)", -1e300, 1e300, false, {}, true},
      {"run.time_limit", KeyType::Duration, "0", "s or HH:MM:SS",
       "Wall-clock limit of this run: stop with a checkpoint (exit 75) before it; 0 = none", 0, 1e300, false, {}, true},
      // [checkpoint]
      {"checkpoint.every_steps", KeyType::Int, "0", "steps", "Checkpoint every this many steps; 0 = off", 0, 1e15,
       false, {}, true},
      {"checkpoint.every_seconds", KeyType::Float, "900", "s",
       "Checkpoint when this much wall-clock time passed since the last one; 0 = off", 0, 1e12, false, {}, true},
      {"checkpoint.interval", KeyType::String, "\"fixed\"", "-",
       "\"fixed\": every_steps/every_seconds as given; \"auto\": the Young/Daly interval sqrt(2 C mtbf) from the "
       "measured checkpoint cost C replaces every_seconds",
       -1e300, 1e300, false, {"fixed", "auto"}, true},
      {"checkpoint.mtbf", KeyType::Float, "7200", "s",
       "Mean time between failures (preemptions) assumed by interval = \"auto\"", 0, 1e12, true, {}, true},
      {"checkpoint.keep", KeyType::Int, "2", "files", "Number of newest checkpoints kept in OUTDIR/checkpoints", 1, 1e6,
       false, {}, true},
      {"checkpoint.on_error", KeyType::String, "\"warn\"", "-",
       "When writing a checkpoint fails: warn and retry at the next interval, or abort the run (exit 1)", -1e300,
       1e300, false, {"warn", "abort"}, true},
      {"checkpoint.safety_factor", KeyType::Float, "2.0", "-",
       "Time-limit reserve: this factor times the measured checkpoint time, plus two steps", 1, 1e3, false, {}, true},
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
    const auto& fluid = fluid_deck_schema();
    s.insert(s.end(), fluid.begin(), fluid.end());
    return s;
  }();
  return schema;
}

}  // namespace spotrun::launcher
