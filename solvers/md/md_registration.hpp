#pragma once
// The MD solver's registration (solvers/registry.hpp): its [md] deck keys and its configuration reader.
#include "io/deck/deck.hpp"
#include "md_config.hpp"

namespace spotrun::md {

// The typed configuration from the [md] keys of a validated deck (values given or the defaults).
MdConfig config_from_deck(const io::Deck& deck);
// The configuration of a run (what the registration reads): config_from_deck(), and with [[run.stage]] the first
// stage's settings and every stage's configuration (md_stage.hpp).
MdConfig run_config_from_deck(const io::Deck& deck);

}  // namespace spotrun::md
