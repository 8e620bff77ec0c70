#pragma once
// The fluid solver's registration (solvers/registry.hpp): its [fluid] deck keys and its configuration
// reader.
#include "fluid_config.hpp"
#include "io/deck/deck.hpp"

namespace spotrun::fluid {

// The typed configuration from the [fluid] keys of a validated deck (values given or the defaults). The
// deck engine has checked every key's type, range and choices; this reads them.
FluidConfig config_from_deck(const io::Deck& deck);

}  // namespace spotrun::fluid
