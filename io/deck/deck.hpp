#pragma once
// The deck engine: TOML files validated against a schema of typed keys with units, defaults and ranges.
// The engine knows no key of its own: whoever reads a deck passes the schema in (spotrun's is assembled by
// the launcher, launcher/deck/deck_schema.cpp, from its own keys and those each solver registers).
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <toml.hpp>

namespace spotrun::io {

// Limits of a deck's text, checked by Deck::parse before the TOML parser sees it (docs/decks.md, "Limits").
// They keep a broken or hostile file from crashing the parser (it recurses once per nesting level) or from
// making it slow (its time grows with the number of values on a line times the length of that line, and
// with the number of keys and tables). spotrun's own keys need one level of nesting, arrays of 3 and
// fewer than 200 names.
inline constexpr std::size_t k_deck_max_bytes = 1048576;  // the whole text (1 MiB)
inline constexpr std::size_t k_deck_max_line = 8192;      // one line, in bytes
inline constexpr std::size_t k_deck_max_nesting = 8;      // arrays and inline tables inside each other
inline constexpr std::size_t k_deck_max_elements = 1024;  // elements of one array, entries of one inline table
inline constexpr std::size_t k_deck_max_items = 4096;     // names (each part of a dotted key or table name, each
                                                          // inline-table entry) and array elements in all
inline constexpr std::size_t k_deck_max_key_parts = 8;    // dotted parts of one key or table name
inline constexpr std::size_t k_deck_max_path = 4096;      // bytes of a path value (Linux PATH_MAX)
// Error messages quote at most this many characters of a value, a key or a source line.
inline constexpr std::size_t k_message_quote_max = 80;

// text between quote characters q (no quotes when q is 0) for an error message: control characters,
// backslashes and q escaped as in a TOML basic string; beyond k_message_quote_max characters only the
// start and the end, then the total length: "aaaa...aaa" (1048000 characters).
std::string quote_for_message(const std::string& text, char q = '"');

// Int3, Float3: an array of 3 integers or 3 numbers, each component in the key's range. Strings: an array of
// strings, min..max of them. TableArray: an array of tables ([[md.pair.coeff]] blocks),
// at most max of them; the fields of its tables are the schema keys one level below it ("md.pair.coeff.epsilon"),
// each checked like a key of its own, and a field without a default is required in every table.
enum class KeyType { Int, Float, Bool, String, Int3, Float3, Duration, Strings, TableArray };

struct KeySpec {
  std::string key;                    // full dotted key, e.g. "md.pair.epsilon"
  KeyType type;
  std::string default_value;          // TOML literal; empty: no default (required where needed)
  std::string unit;                   // e.g. "tau", "sigma", "steps", "-"
  std::string help;
  double min = -1e300, max = 1e300;   // allowed range of numbers (and of Int3, Float3 components)
  bool min_exclusive = false;
  std::vector<std::string> choices;   // allowed strings
  bool resumable = false;             // may change between a checkpoint and its resume (not physics)
  // String keys: a check of the value beyond the rules above; returns "" when it is fine, else why not.
  std::function<std::string(const std::string&)> check;
  // A field of a TableArray's tables without a default that may still be left out (its reader knows what
  // that means, e.g. md.pair.coeff.cutoff: md.cutoff); other fields without a default are required.
  bool optional = false;
  // TableArray keys: the message for a field its tables may not hold (its name relative to a table,
  // "md.cutoff"), "" for the engine's own ("unknown key ...; allowed: ..."). Its tables may hold tables of
  // their own ([run.stage.md] under [[run.stage]]) when the schema has keys below them.
  std::function<std::string(const std::string& field)> unknown_field;
};

class Deck;

// What a deck may hold: its keys, in documentation order, and the two things about them that only the
// parts that registered them know.
struct DeckSchema {
  std::vector<KeySpec> keys;
  // Whether a key applies to a deck (resolved(), physics()); empty: every key does.
  std::function<bool(const Deck&, const std::string& key)> key_active;
  // The rules between keys, checked by Deck::validate() once every key passed its own checks; throws
  // InputError. Empty: none.
  std::function<void(const Deck&)> check_rules;

  // The key of that name, or nullptr.
  const KeySpec* find(const std::string& key) const;
  // The key closest to an unknown key, for "did you mean"; "" when none is close. Close: an edit distance
  // of at most a third of the length of what is compared (at least 1). First a key of the same section
  // whose last name is close to the key's last name, then one of another section with such a last name
  // ("run.dt": md.dt), then a key close as a whole. Fields of [[...]] tables are not keys of their own.
  std::string closest(const std::string& key) const;
  // The same for an unknown section ([mdd]: md): the closest section of the schema, or "".
  std::string closest_section(const std::string& section) const;
  // The sections of the schema that hold keys or sections: "" (the top), "md", "md.pair", ...
  std::vector<std::string> section_names() const;
  // The names directly in a section (keys and sections): "md" -> dt, cutoff, ..., pair, lattice, ...
  std::vector<std::string> names_in(const std::string& section) const;
};

class Deck {
 public:
  // An empty deck of an empty schema (to be assigned a parsed one).
  Deck();
  // Parses TOML text against schema; name (the file path) is used in error messages. Throws InputError:
  // for text beyond the limits above (or with a NUL byte), malformed TOML (name:line:column), and key or
  // table names other than bare TOML names ([A-Za-z0-9_-]): a quoted "md.dt" is one name, not the key md.dt.
  // Tables and arrays of tables may come in any order TOML allows ([md.pair] after [[md.pair.coeff]],
  // [md] after [[md.types]]); every message keeps the line numbers of the text.
  static Deck parse(const std::string& text, const std::string& name, std::shared_ptr<const DeckSchema> schema);
  // Applies "section.key=value" overrides (value parsed as TOML, else taken as a string). Throws
  // InputError for a key that is not a dotted path of bare names.
  void apply_set(const std::string& assignment);
  // Checks every key against the schema (type, range, choices), then the schema's rules between keys
  // (spotrun's: those of the solver run.solver names). Throws InputError.
  void validate() const;

  bool has(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::array<int, 3> get_int3(const std::string& key) const;
  std::array<double, 3> get_float3(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;
  // Tables of a TableArray key (0 when the deck has none). Their fields are read with the index as a key
  // part: get_float("md.pair.coeff.0.epsilon"); a field not given reads as its schema default.
  std::size_t count(const std::string& key) const;
  // Duration keys: seconds as a number, a TOML time of day (an unquoted 02:00:00) or a string that
  // parse_duration() accepts; returns seconds. InputError for a string it does not accept.
  double get_seconds(const std::string& key) const;
  // Where a key's value comes from, to start a message about it: "deck.toml:12" (its line in the file),
  // "deck.toml: --set 'md.dt=0'" (the last --set of it or of a table it is in), or "deck.toml" (not given).
  // Keys of the tables of a TableArray key are written with an index, "md.pair.coeff.1.epsilon".
  std::string where(const std::string& key) const;
  // The resolved deck: every applicable key with its value (given or default), as TOML.
  std::string resolved() const;
  // "key = value" lines of the applicable keys that define the physics (not resumable), sorted.
  std::string physics() const;
  const std::string& name() const { return m_name; }
  const DeckSchema& schema() const { return *m_schema; }

 private:
  const toml::value* lookup(const std::string& key) const;
  // where() of a key (as messages show it: "md.pair.coeff[1].epsilon") whose value is v.
  std::string where(const std::string& key, const toml::value* v) const;
  // The line of the file of a line of the text toml11 read (they differ when order_tables moved tables).
  std::size_t original_line(std::size_t line) const;
  // Checks one value against its key's schema entry; key as messages show it. Throws InputError.
  void check_value(const KeySpec& spec, const std::string& key, const toml::value& v) const;
  toml::value value_or_default(const std::string& key) const;
  // Whether a schema key applies to this deck, as the schema says.
  bool section_active(const std::string& key) const;
  std::string m_name;
  toml::value m_root;
  std::shared_ptr<const DeckSchema> m_schema;
  std::vector<std::size_t> m_lines;                          // original_line(): empty when the same
  std::vector<std::pair<std::string, std::string>> m_sets;  // key and assignment of each --set, in order
};

// The name of `names` closest to `name` by the rule of DeckSchema::closest (at most a third of the letters
// of name differ, at least one, and not all of them), the first of those with the fewest edits; "" when none
// is close. For "did you mean" outside decks (spotrun's commands).
std::string closest_name(const std::string& name, const std::vector<std::string>& names);

// A duration in seconds from "S", "MM:SS", "HH:MM:SS" or Slurm's "D-HH", "D-HH:MM", "D-HH:MM:SS": every
// component digits (the seconds may have a decimal fraction "S.F"), minutes and seconds < 60 and hours < 24
// when a larger unit precedes them; nullopt for anything else (signs, spaces, units, empty components).
std::optional<double> parse_duration(const std::string& text);
// The forms parse_duration() accepts, for error messages.
extern const char* const k_duration_forms;

}  // namespace spotrun::io
