#pragma once
// [[run.stage]] of an MD run (md_stage.cpp; docs/md.md, "Stages"): which keys of [md] a stage may set, the
// configuration of every stage read from the deck, and the steps and time across stages.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/deck/deck.hpp"
#include "io/solver_state.hpp"
#include "md_config.hpp"

namespace spotrun::md {

// The ensembles a stage may choose: the choices of md.ensemble in [run.stage.md]. A new integrator that can
// take over at a stage boundary is one entry here (and its keys in stage_key_names()).
const std::vector<std::string>& stage_ensembles();
// The keys of [md] that a stage may set: md.ensemble, md.temperature, md.damp, md.tchain, md.dt, md.seed, and the
// [md.minimize] keys of a stage that minimises (those apply to their own stage only). Every other key defines the
// system (pair style and coefficients, cutoff, units, types, bonded, kspace, ...).
const std::vector<std::string>& stage_key_names();
// Those keys as md's keys declare them (`keys`: every key of md), md.ensemble with the choices of
// stage_ensembles() (SolverRegistration::stage_keys).
std::vector<io::KeySpec> stage_keys(const std::vector<io::KeySpec>& keys);
// Sets in `into` what a stage's configuration sets: the fields of stage_key_names().
void apply_stage(MdConfig& into, const MdConfig& stage);

// The stages of a validated deck, in order: stage k's configuration is `read` from the deck with the keys of
// stages 0..k set over its [md] keys (a stage keeps what the stages before it set), and its own [md.minimize]
// keys (a stage with [run.stage.md.minimize] minimises; its steps are the minimiser's iterations). With
// `decks`, the deck of each stage too (its rules are checked on it). Empty without [[run.stage]].
std::vector<MdStage> read_stages(const io::Deck& d, const std::function<MdConfig(const io::Deck&)>& read,
                                 std::vector<io::Deck>* decks = nullptr);
// The time of a checkpoint's step as the run kept it: step x md.dt without stages; with stages, the time at the
// step where md.dt last changed (md.clock_time, md.clock_step) plus the steps since then times md.dt (LAMMPS's
// atime and atimestep). InputError (io::SolverState::require_*) when the checkpoint lacks them.
double checkpoint_time(const MdConfig& cfg, const io::SolverState& st, std::int64_t step);

}  // namespace spotrun::md
