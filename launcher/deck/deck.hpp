#pragma once
// spotrun's decks: the deck engine (io/deck/deck.hpp) with spotrun's schema, which launcher/deck/deck_schema.cpp
// assembles from the launcher's keys ([run], [checkpoint], [comm], [cloud], [report]) and those of every
// registered solver (solvers/registry.hpp).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/deck/deck.hpp"

namespace spotrun::launcher {

using io::DeckSchema;
using io::k_deck_max_bytes;
using io::k_deck_max_elements;
using io::k_deck_max_items;
using io::k_deck_max_key_parts;
using io::k_deck_max_line;
using io::k_deck_max_nesting;
using io::k_deck_max_path;
using io::k_duration_forms;
using io::k_message_quote_max;
using io::KeySpec;
using io::KeyType;
using io::parse_duration;
using io::quote_for_message;

// spotrun's schema: every deck key spotrun knows, in documentation order (the launcher's, then those of
// each registered solver), which of them apply to a deck (a solver's as it registered) and the rules
// between them (those of the solver run.solver names). Built on first use, and again after
// solvers::register_solver() added a solver.
std::shared_ptr<const DeckSchema> spotrun_deck_schema();
const std::vector<KeySpec>& deck_schema();
const KeySpec* find_key(const std::string& key);
// The schema key closest to an unknown key (edit distance), for "did you mean".
std::string closest_key(const std::string& key);

// [[run.stage]]: the sum of the stages' steps (0 without stages; a stage that minimises has none).
std::int64_t stage_steps(const io::Deck& deck);

// A deck read against spotrun's schema; solvers see it as the io::Deck it is.
class Deck : public io::Deck {
 public:
  Deck() = default;
  // A deck read against spotrun_deck_schema().
  explicit Deck(io::Deck deck) : io::Deck(std::move(deck)) {}
  // Deck::parse of the engine (limits, TOML errors, key names) with spotrun's schema.
  static Deck parse(const std::string& text, const std::string& name) {
    return Deck(io::Deck::parse(text, name, spotrun_deck_schema()));
  }
};

// A validated deck with [[run.stage]] and no run.steps: run.steps set to the stages' sum (the resolved deck and the
// run then say it).
void derive_run_steps(Deck& deck);

}  // namespace spotrun::launcher
