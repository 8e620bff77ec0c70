#pragma once
// [[run.stage]] of an MD run (md_stage.cpp; docs/md.md, "Stages"): which keys of [md] a stage may set, the
// configuration of every stage read from the deck, and the steps and time across stages.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/deck/deck.hpp"
#include "md_config.hpp"

namespace spotrun::md {

// The ensembles a stage may choose: the choices of md.ensemble in [run.stage.md]. A new integrator that can
// take over at a stage boundary is one entry here (and its keys in stage_key_names()).
const std::vector<std::string>& stage_ensembles();
// The keys of [md] that a stage may set: md.ensemble, md.temperature, md.damp, md.tchain, md.dt, md.seed. Every
// other key defines the system (pair style and coefficients, cutoff, units, types, bonded, kspace, ...).
const std::vector<std::string>& stage_key_names();
// Those keys as md's keys declare them (`keys`: every key of md), md.ensemble with the choices of
// stage_ensembles() (SolverRegistration::stage_keys).
std::vector<io::KeySpec> stage_keys(const std::vector<io::KeySpec>& keys);
// Sets in `into` what a stage's configuration sets: the fields of stage_key_names().
void apply_stage(MdConfig& into, const MdConfig& stage);

// The stages of a validated deck, in order: stage k's configuration is `read` from the deck with the keys of
// stages 0..k set over its [md] keys (a stage keeps what the stages before it set). With `decks`, the deck of
// each stage too (its rules are checked on it). Empty without [[run.stage]].
std::vector<MdStage> read_stages(const io::Deck& d, const std::function<MdConfig(const io::Deck&)>& read,
                                 std::vector<io::Deck>* decks = nullptr);
// The stage whose steps include `step` (a stage of steps first+1..end; step 0: the first stage; past the last
// stage's end: the last). 0 without stages.
std::size_t stage_of(const MdConfig& cfg, std::int64_t step);
// The time at `step`: step x md.dt, or with stages that change md.dt, the time at the step where md.dt last
// changed plus the steps since then times the new md.dt (LAMMPS's atime and atimestep). Without a change of
// md.dt it is step x md.dt exactly.
double stage_time(const MdConfig& cfg, std::int64_t step);

}  // namespace spotrun::md
