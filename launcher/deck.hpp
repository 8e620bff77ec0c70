#pragma once
// Decks: TOML files validated against a schema of typed keys with units, defaults and ranges.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <toml.hpp>

namespace spotrun::launcher {

enum class KeyType { Int, Float, Bool, String, Int3, Duration };

struct KeySpec {
  std::string key;                    // full dotted key, e.g. "md.pair.epsilon"
  KeyType type;
  std::string default_value;          // TOML literal; empty: no default (required where needed)
  std::string unit;                   // e.g. "tau", "sigma", "steps", "-"
  std::string help;
  double min = -1e300, max = 1e300;   // allowed range of numbers (and of Int3 components)
  bool min_exclusive = false;
  std::vector<std::string> choices;   // allowed strings
  bool resumable = false;             // may change between a checkpoint and its resume (not physics)
};

// Every deck key spotrun knows, in documentation order.
const std::vector<KeySpec>& deck_schema();
const KeySpec* find_key(const std::string& key);
// The schema key closest to an unknown key (edit distance), for "did you mean".
std::string closest_key(const std::string& key);

class Deck {
 public:
  // Parses TOML text; name (the file path) is used in error messages. Throws InputError.
  static Deck parse(const std::string& text, const std::string& name);
  // Applies "section.key=value" overrides (value parsed as TOML, else taken as a string).
  void apply_set(const std::string& assignment);
  // Checks every key against the schema and the rules between keys. Throws InputError.
  void validate() const;

  bool has(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::array<int, 3> get_int3(const std::string& key) const;
  // Duration keys accept seconds (number) or "HH:MM:SS" / "MM:SS" strings; returns seconds.
  double get_seconds(const std::string& key) const;
  // The resolved deck: every applicable key with its value (given or default), as TOML.
  std::string resolved() const;
  // "key = value" lines of the applicable keys that define the physics (not resumable), sorted.
  std::string physics() const;
  const std::string& name() const { return m_name; }

 private:
  const toml::value* lookup(const std::string& key) const;
  toml::value value_or_default(const std::string& key) const;
  bool section_active(const std::string& key) const;
  std::string m_name;
  toml::value m_root;
};

// "HH:MM:SS", "MM:SS" or plain seconds; nullopt if malformed.
std::optional<double> parse_duration(const std::string& text);

}  // namespace spotrun::launcher
