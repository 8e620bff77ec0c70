#pragma once
// The typed fluid configuration from a deck's [fluid] keys.
#include <vector>

#include "deck.hpp"
#include "solvers/fluid/fluid_config.hpp"

namespace spotrun::launcher {

// The [fluid] keys of the schema (launcher/deck_schema_fluid.cpp), with units, defaults and ranges.
const std::vector<KeySpec>& fluid_deck_schema();

// Reads every [fluid] key (the given value or the schema default) and checks its type and range
// against fluid_deck_schema(), so it is safe on a deck validated without the fluid keys. Throws
// InputError naming the deck and the key.
fluid::FluidConfig fluid_config_from_deck(const Deck& deck);

}  // namespace spotrun::launcher
