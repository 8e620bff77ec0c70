#include "deck.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "comm/errors.hpp"
#include "deck_detail.hpp"

namespace spotrun::io {

const char* const k_duration_forms =
    "seconds as a number (90, 90.5) or a string \"S\", \"MM:SS\", \"HH:MM:SS\", \"D-HH\", \"D-HH:MM\" or "
    "\"D-HH:MM:SS\" (digits; the seconds may have a fraction; minutes and seconds < 60 and hours < 24 after a "
    "larger unit)";

using namespace deck_detail;


std::string quote_for_message(const std::string& text, char q) {
  const std::size_t n = count_chars(text);
  std::string out;
  if (q) out += q;
  if (n <= k_message_quote_max) {
    append_escaped(out, text, q);
    if (q) out += q;
    return out;
  }
  const std::size_t tail = 20, head = k_message_quote_max - tail - 3;
  const std::string_view t(text);
  append_escaped(out, t.substr(0, char_offset(t, head)), q);
  out += "...";
  append_escaped(out, t.substr(char_offset(t, n - tail)), q);
  if (q) out += q;
  return out + " (" + std::to_string(n) + " characters)";
}

const KeySpec* DeckSchema::find(const std::string& key) const {
  for (const auto& s : keys)
    if (s.key == key) return &s;
  return nullptr;
}

namespace {

// The most edits for two names to count as close: a third of the length of the name the user wrote.
std::size_t close_enough(const std::string& name) { return std::max<std::size_t>(1, name.size() / 3); }

std::string section_of(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot);
}
std::string last_name(const std::string& key) { return key.substr(key.rfind('.') + 1); }

}  // namespace

std::string DeckSchema::closest(const std::string& key) const {
  // Schema keys are short: comparing the first 64 characters finds the same key in far less time than a
  // megabyte-long key would take.
  const std::string k = key.substr(0, 64), section = section_of(key), last = last_name(key).substr(0, 64);
  std::string best;
  std::size_t best_rank = static_cast<std::size_t>(-1);
  for (const auto& s : keys) {
    bool field = false;  // a field of [[...]] tables, or of a table in them
    for (std::string sec = section_of(s.key); !sec.empty() && !field; sec = section_of(sec))
      if (const KeySpec* parent = find(sec)) field = parent->type == KeyType::TableArray;
    if (field) continue;
    const std::size_t d_last = edit_distance(last, last_name(s.key));
    const std::size_t d_key = edit_distance(k, s.key);
    // Ranks: the same section first, then the same last name elsewhere, then the whole key; within each,
    // the fewest edits.
    std::size_t rank = static_cast<std::size_t>(-1);
    const bool close_last = d_last <= close_enough(last) && d_last < last.size();
    if (section_of(s.key) == section && close_last) rank = d_last;
    else if (close_last) rank = 1000 + d_last;
    else if (d_key <= close_enough(k)) rank = 2000 + d_key;
    if (rank < best_rank) {
      best_rank = rank;
      best = s.key;
    }
  }
  return best;
}

std::string closest_name(const std::string& name, const std::vector<std::string>& names) {
  const std::string k = name.substr(0, 64);
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const auto& n : names) {
    const std::size_t d = edit_distance(k, n);
    if (d <= close_enough(k) && d < k.size() && d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

std::vector<std::string> DeckSchema::section_names() const {
  std::vector<std::string> out{""};
  for (const auto& s : keys) {
    for (std::string sec = section_of(s.key); !sec.empty(); sec = section_of(sec)) {
      const KeySpec* parent = find(section_of(sec));
      if (find(sec) || (parent && parent->type == KeyType::TableArray)) break;  // a TableArray's fields
      if (std::find(out.begin(), out.end(), sec) == out.end()) out.push_back(sec);
    }
  }
  return out;
}

std::vector<std::string> DeckSchema::names_in(const std::string& section) const {
  std::vector<std::string> out;
  const std::string prefix = section.empty() ? std::string() : section + ".";
  for (const auto& s : keys) {
    if (s.key.rfind(prefix, 0) != 0) continue;
    const std::string rest = s.key.substr(prefix.size());
    const std::string name = rest.substr(0, rest.find('.'));
    if (name.size() < rest.size() && find(prefix + name) && find(prefix + name)->type == KeyType::TableArray)
      continue;  // md.pair.coeff's fields
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

std::string DeckSchema::closest_section(const std::string& section) const {
  const std::string k = section.substr(0, 64);
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const auto& s : section_names()) {
    if (s.empty()) continue;
    const std::size_t d = edit_distance(k, s);
    if (d <= close_enough(k) && d < best_d) {
      best_d = d;
      best = s;
    }
  }
  return best;
}

std::optional<double> parse_duration(const std::string& text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  std::string_view rest(text);
  std::optional<double> days;
  if (const auto dash = rest.find('-'); dash != std::string_view::npos) {  // Slurm: D-HH[:MM[:SS]]
    days = duration_number(rest.substr(0, dash), true);
    if (!days) return std::nullopt;
    rest = rest.substr(dash + 1);
  }
  std::vector<std::string_view> parts;
  for (;;) {
    const auto colon = rest.find(':');
    parts.push_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest = rest.substr(colon + 1);
  }
  if (parts.size() > 3) return std::nullopt;
  // The unit of each part, largest first: with days, hours come first; otherwise the last part is seconds.
  static const double k_units[] = {3600, 60, 1};
  const std::size_t first_unit = days ? 0 : 3 - parts.size();
  double seconds = days ? *days * 86400 : 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const double unit = k_units[first_unit + i];
    const auto v = duration_number(parts[i], unit != 1);
    if (!v) return std::nullopt;
    const bool leading = i == 0 && !days;
    if (!leading && *v >= (unit == 3600 ? 24 : 60)) return std::nullopt;
    seconds += *v * unit;
  }
  return seconds;
}

Deck::Deck() {
  static const auto empty = std::make_shared<const DeckSchema>();
  m_schema = empty;
}

Deck Deck::parse(const std::string& text, const std::string& name, std::shared_ptr<const DeckSchema> schema) {
  if (!schema) throw std::logic_error("Deck::parse: no schema");
  const ScannedText scanned = scan_text(text);
  if (scanned.problem) throw InputError(located(name, *scanned.problem));
  Deck d;
  d.m_name = name;
  d.m_schema = std::move(schema);
  TableOrder ordered = order_tables(text, scanned.headers);
  d.m_lines = std::move(ordered.lines);
  const auto original_line = [&d](std::size_t line) { return d.original_line(line); };
  std::istringstream in(d.m_lines.empty() ? text : ordered.text);
  try {
    d.m_root = toml::parse(in, name);
  } catch (const toml::exception& e) {
    throw InputError(toml_error_message(e, name, original_line));
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw InputError(name + ": malformed TOML: " + cut(what.substr(0, what.find('\n')), 2 * k_message_quote_max));
  }
  check_key_names(d.m_root, "", name, *d.m_schema, original_line);
  return d;
}

void Deck::apply_set(const std::string& assignment) {
  const std::string shown = "--set " + quote_for_message(assignment, '\'');
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(shown + ": expected section.key=value");
  std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  auto parts = split_key(key);
  if (parts.size() > k_deck_max_key_parts)
    throw InputError(shown + ": a key of more than " + std::to_string(k_deck_max_key_parts) + " dotted parts");
  for (const auto& p : parts)
    if (!is_bare_key(p))
      throw InputError(shown + ": " + quote_for_message(p) +
                       " is not a key name: keys are dotted paths of names made of letters, digits, _ and -");
  toml::value value;
  try {
    value = parse_literal(text);
  } catch (const IntegerOutOfRange& e) {
    throw InputError(shown + ": " + e.what());
  } catch (const std::exception&) {
    value = toml::value(text);  // bare words are strings: --set md.ensemble=langevin
  }
  if (!m_root.is_table()) m_root = toml::table{};
  toml::value* t = &m_root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    auto& tab = t->as_table();
    auto it = tab.find(parts[i]);
    if (it == tab.end()) it = tab.emplace(parts[i], toml::table{}).first;
    if (!it->second.is_table()) throw InputError(shown + ": " + key_text(parts[i]) + " is not a table");
    t = &it->second;
  }
  t->as_table()[parts.back()] = value;
  m_sets.emplace_back(key, assignment);
}

std::size_t Deck::original_line(std::size_t line) const {
  if (m_lines.empty() || line == 0) return line;
  if (line <= m_lines.size()) return m_lines[line - 1];
  return m_lines.size() + (line - m_lines.size());  // past the last line (the end of the text)
}

std::string Deck::where(const std::string& key, const toml::value* v) const {
  // The last --set of the key or of a table it lies in.
  for (auto it = m_sets.rbegin(); it != m_sets.rend(); ++it) {
    const std::string& k = it->first;
    if (key == k || key.rfind(k + ".", 0) == 0 || key.rfind(k + "[", 0) == 0)
      return m_name + ": --set " + quote_for_message(it->second, '\'');
  }
  if (v) {
    const toml::source_location loc = v->location();
    if (loc.file_name() == m_name && loc.line() > 0) return m_name + ":" + std::to_string(original_line(loc.line()));
  }
  return m_name;
}

std::string Deck::where(const std::string& key) const {
  // "md.pair.coeff.1.epsilon" as messages show it: "md.pair.coeff[1].epsilon".
  std::string shown;
  for (const auto& p : split_key(key)) shown += all_digits(p) ? "[" + p + "]" : (shown.empty() ? "" : ".") + p;
  return where(shown, lookup(key));
}

// The schema key of a key that may index tables of a TableArray: "md.pair.coeff.0.epsilon" ->
// "md.pair.coeff.epsilon".
static std::string schema_key(const std::string& key) {
  std::string out;
  for (const auto& p : split_key(key)) {
    if (all_digits(p)) continue;
    out += (out.empty() ? "" : ".") + p;
  }
  return out;
}

const toml::value* Deck::lookup(const std::string& key) const {
  const toml::value* t = &m_root;
  for (const auto& p : split_key(key)) {
    if (t->is_array() && all_digits(p)) {  // a table of a TableArray
      const auto& a = t->as_array();
      const auto i = std::stoull(p);
      if (i >= a.size()) return nullptr;
      t = &a[i];
      continue;
    }
    if (!t->is_table()) return nullptr;
    const auto& tab = t->as_table();
    auto it = tab.find(p);
    if (it == tab.end()) return nullptr;
    t = &it->second;
  }
  return t;
}

bool Deck::has(const std::string& key) const { return lookup(key) != nullptr; }

toml::value Deck::value_or_default(const std::string& key) const {
  if (const auto* v = lookup(key)) return *v;
  const KeySpec* s = m_schema->find(schema_key(key));
  if (!s) throw std::logic_error("deck key '" + key + "' is not in the schema");
  if (s->default_value.empty()) throw InputError(m_name + ": key '" + key + "' is required (" + s->help + ")");
  return parse_literal(s->default_value);
}

std::int64_t Deck::get_int(const std::string& key) const { return value_or_default(key).as_integer(); }
double Deck::get_float(const std::string& key) const {
  auto v = value_or_default(key);
  return v.is_integer() ? static_cast<double>(v.as_integer()) : v.as_floating();
}
bool Deck::get_bool(const std::string& key) const { return value_or_default(key).as_boolean(); }
std::string Deck::get_string(const std::string& key) const {
  if (!has(key)) {
    const KeySpec* s = m_schema->find(key);
    if (s && s->default_value.empty()) return {};
  }
  return value_or_default(key).as_string().str;
}
std::array<int, 3> Deck::get_int3(const std::string& key) const {
  auto v = value_or_default(key);
  const auto& a = v.as_array();
  return {static_cast<int>(a[0].as_integer()), static_cast<int>(a[1].as_integer()),
          static_cast<int>(a[2].as_integer())};
}
std::array<double, 3> Deck::get_float3(const std::string& key) const {
  const toml::value v = value_or_default(key);
  std::array<double, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    const toml::value& e = v.as_array()[i];
    out[i] = e.is_integer() ? static_cast<double>(e.as_integer()) : e.as_floating();
  }
  return out;
}
std::vector<std::string> Deck::get_strings(const std::string& key) const {
  const toml::value v = value_or_default(key);
  std::vector<std::string> out;
  for (const auto& e : v.as_array()) out.push_back(e.as_string().str);
  return out;
}
std::size_t Deck::count(const std::string& key) const {
  const toml::value* v = lookup(key);
  return v && v->is_array() ? v->as_array().size() : 0;
}
double Deck::get_seconds(const std::string& key) const {
  auto v = value_or_default(key);
  if (v.is_string()) {
    if (auto s = parse_duration(v.as_string().str)) return *s;
    throw InputError(where(key) + ": key " + key_text(key) + " = " + show_short(v) + ": expected " +
                     type_name(KeyType::Duration));
  }
  if (v.is_local_time()) {  // an unquoted 02:00:00 reads as a TOML time of day
    const auto& t = v.as_local_time();
    return t.hour * 3600.0 + t.minute * 60.0 + t.second + t.millisecond * 1e-3 + t.microsecond * 1e-6 +
           t.nanosecond * 1e-9;
  }
  return v.is_integer() ? static_cast<double>(v.as_integer()) : v.as_floating();
}

bool Deck::section_active(const std::string& key) const {
  // spotrun's: the launcher's keys always, a solver's as its registration says.
  return !m_schema->key_active || m_schema->key_active(*this, key);
}

// Checks one value against its key's schema entry (type, range, choices); key is the key as the message
// shows it ("md.pair.coeff[1].epsilon"). Throws InputError.
namespace {
// What is wrong with the value of an Int3 or Float3 key (three integers, or three numbers: integers count as
// numbers, as for Float keys: [0, 0, 0.5]), or "".
std::string triple_problem(const KeySpec& s, const toml::value& v) {
  if (!v.is_array() || v.as_array().size() != 3) return "expected " + type_name(s.type);
  for (const auto& e : v.as_array()) {
    const bool number = s.type == KeyType::Int3 ? e.is_integer() : e.is_integer() || e.is_floating();
    if (!number) return "expected " + type_name(s.type);
    const double x = e.is_integer() ? static_cast<double>(e.as_integer()) : e.as_floating();
    if (!std::isfinite(x) || x < s.min || x > s.max || (s.min_exclusive && x == s.min))
      return "each component must be " + range_text(s) + (s.type == KeyType::Float3 ? " (" + s.unit + ")" : "");
  }
  return {};
}
// What is wrong with a path's characters (control characters, invalid UTF-8, its length), or "".
std::string path_problem(const std::string& str) {
  // A path goes to the file system as a C string: a NUL would cut it, other control
  // characters make names no one can type.
  const auto c = std::find_if(str.begin(), str.end(), [](char ch) {
    return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
  });
  if (c != str.end()) {
    char code[8];
    std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(static_cast<unsigned char>(*c)));
    return std::string("contains the control character ") + code + " at character " +
           std::to_string(count_chars(std::string_view(str).substr(0, c - str.begin())) + 1) +
           "; a path must not contain control characters (U+0000 to U+001F, U+007F)";
  }
  if (const std::size_t at = invalid_utf8_at(str); at < str.size())
    return "not valid UTF-8 (byte " + std::to_string(at + 1) + "): a deck is TOML, and TOML strings are UTF-8";
  if (str.size() > k_deck_max_path)
    return "a path of " + std::to_string(str.size()) + " bytes; the longest a file system takes is " +
           std::to_string(k_deck_max_path) + " (PATH_MAX)";
  return {};
}
// What is wrong with the value of a String key (type, choices, empty, a path's characters, the key's own
// check), or "".
std::string string_problem(const KeySpec& s, const toml::value& v) {
  if (!v.is_string()) return "expected " + type_name(s.type);
  const std::string& str = v.as_string().str;
  if (!s.choices.empty() && std::find(s.choices.begin(), s.choices.end(), str) == s.choices.end())
    return "allowed: " + range_text(s);
  // An empty string is refused unless it is the key's default (cloud.metadata_url: the provider's).
  if (s.choices.empty() && str.empty() && s.default_value != "\"\"") return "must not be empty";
  if (s.unit == "path" || s.choices.empty())
    if (std::string why = path_problem(str); !why.empty()) return why;
  if (s.check) return s.check(str);
  return {};
}
// What is wrong with the value of a Duration key, or "".
std::string duration_problem(const KeySpec& s, const toml::value& v) {
  if (v.is_local_time()) {
    // HH:MM:SS without quotes: TOML reads it as a time of day, which is fine as a duration < 24 h.
  } else if (v.is_string()) {
    if (!parse_duration(v.as_string().str)) return "expected " + type_name(s.type);
  } else if (v.is_integer() || v.is_floating()) {
    double x = v.is_integer() ? static_cast<double>(v.as_integer()) : v.as_floating();
    if (!(x >= 0) || !std::isfinite(x)) return "must be a finite number >= 0 seconds";
  } else {
    return "expected " + type_name(s.type);
  }
  return {};
}
// What is wrong with the value of a Strings key (count, empty strings, choices, a choice named twice), or "".
std::string strings_problem(const KeySpec& s, const toml::value& v) {
  if (!v.is_array()) return "expected " + type_name(s.type);
  if (v.as_array().size() < s.min || v.as_array().size() > s.max) return "expected " + range_text(s) + " strings";
  for (std::size_t i = 0; i < v.as_array().size(); ++i) {
    const auto& e = v.as_array()[i];
    if (!e.is_string() || e.as_string().str.empty()) return "expected an array of non-empty strings";
    const std::string& str = e.as_string().str;
    if (!s.choices.empty() && std::find(s.choices.begin(), s.choices.end(), str) == s.choices.end())
      return "\"" + str + "\" is not allowed; allowed: " + range_text(s);
    for (std::size_t j = 0; j < i && !s.choices.empty(); ++j)  // a set of choices names each once
      if (v.as_array()[j].as_string().str == str) return "\"" + str + "\" appears twice";
  }
  return {};
}
}  // namespace

void Deck::check_value(const KeySpec& spec, const std::string& key, const toml::value& v) const {
  const DeckSchema& schema = *m_schema;
  const KeySpec* s = &spec;
  auto bad = [&](const std::string& why) {
    throw InputError(where(key, &v) + ": key " + key_text(key) + " = " + show_short(v) + ": " + why);
  };
  switch (s->type) {
    case KeyType::Int:
      if (!v.is_integer()) bad("expected " + type_name(s->type));
      if (v.as_integer() < s->min || v.as_integer() > s->max) bad("out of range; allowed: " + range_text(*s));
      break;
    case KeyType::Float: {
      if (!v.is_integer() && !v.is_floating()) bad("expected " + type_name(s->type));
      double x = v.is_integer() ? static_cast<double>(v.as_integer()) : v.as_floating();
      if (!std::isfinite(x) || x < s->min || x > s->max || (s->min_exclusive && x == s->min))
        bad("out of range; allowed: " + range_text(*s) + " (" + s->unit + ")");
      break;
    }
    case KeyType::Bool:
      if (!v.is_boolean()) bad("expected " + type_name(s->type));
      break;
    case KeyType::String:
      if (const std::string why = string_problem(*s, v); !why.empty()) bad(why);
      break;
    case KeyType::Int3:
    case KeyType::Float3:
      if (const std::string why = triple_problem(*s, v); !why.empty()) bad(why);
      break;
    case KeyType::Duration:
      if (const std::string why = duration_problem(*s, v); !why.empty()) bad(why);
      break;
    case KeyType::Strings:
      if (const std::string why = strings_problem(*s, v); !why.empty()) bad(why);
      break;
  case KeyType::TableArray: {
    if (!v.is_array()) bad("expected " + type_name(s->type) + ": write each as a [[" + key + "]] block");
    if (v.as_array().size() > s->max) bad("at most " + std::to_string(static_cast<long long>(s->max)) + " tables");
    const std::string prefix = spec.key + ".";
    for (std::size_t i = 0; i < v.as_array().size(); ++i) {
      const toml::value& e = v.as_array()[i];
      const std::string at = key + "[" + std::to_string(i) + "]";
      if (!e.is_table()) throw InputError(where(at, &e) + ": " + key_text(at) + ": expected a table ([[" + key + "]] block)");
      // The fields of the table, and those of the tables in it that the schema has keys below ([run.stage.md]).
      std::function<void(const toml::value&, const std::string&)> check_fields = [&](const toml::value& t,
                                                                                      const std::string& rel) {
        std::vector<std::string> names;
        for (const auto& kv : t.as_table()) names.push_back(kv.first);
        std::sort(names.begin(), names.end());
        for (const auto& name : names) {
          const toml::value& fv = t.as_table().at(name);
          const std::string field_name = rel + name;
          const KeySpec* field = is_bare_key(name) ? schema.find(prefix + field_name) : nullptr;
          if (!field && is_bare_key(name) && fv.is_table() &&
              std::any_of(schema.keys.begin(), schema.keys.end(), [&](const KeySpec& f) {
                return f.key.rfind(prefix + field_name + ".", 0) == 0;
              })) {
            check_fields(fv, field_name + ".");
            continue;
          }
          if (!field) {
            const std::string why = spec.unknown_field ? spec.unknown_field(field_name) : std::string();
            if (!why.empty()) throw InputError(where(at + "." + field_name, &fv) + ": " + key_text(at + "." + field_name) + ": " + why);
            std::string fields;
            for (const auto& f : schema.keys)
              if (f.key.rfind(prefix, 0) == 0) fields += (fields.empty() ? "" : ", ") + f.key.substr(prefix.size());
            throw InputError(where(at + "." + field_name, &fv) + ": unknown key " + key_text(at + "." + field_name) +
                             " in a [[" + key + "]] table; allowed: " + fields);
          }
          check_value(*field, at + "." + field_name, fv);
        }
      };
      check_fields(e, "");
      for (const auto& f : schema.keys)
        if (f.key.rfind(prefix, 0) == 0 && f.default_value.empty() && !f.optional &&
            !e.as_table().count(f.key.substr(prefix.size())))
          throw InputError(where(at, &e) + ": " + key_text(at) + " has no key '" + f.key.substr(prefix.size()) +
                           "' (" + f.help + ")");
    }
    break;
  }
  }
}

namespace {

// "unknown key 'md.dtt'; did you mean 'md.dt'?" for the unknown name `name` in section `section` ("" at the
// top); a table that is not a section of the schema is an unknown section. Without a close match: the
// names that section has.
std::string unknown_key_message(const DeckSchema& schema, const std::string& section, const std::string& name,
                                bool table) {
  const std::string key = section.empty() ? name : section + "." + name;
  // What the section has: its keys, then its sections.
  std::string keys, sections;
  for (const auto& n : schema.names_in(section)) {
    const std::string full = section.empty() ? n : section + "." + n;
    if (schema.find(full)) keys += (keys.empty() ? "" : ", ") + n;
    else sections += (sections.empty() ? "" : ", ") + ("[" + full + "]");
  }
  const std::string list = (section.empty() ? std::string("a deck has ") : "[" + section + "] has ") +
                           (keys.empty() ? "" : "the keys " + keys) + (!keys.empty() && !sections.empty() ? " and " : "") +
                           (sections.empty() ? "" : "the sections " + sections);
  if (table) {
    const std::string near = schema.closest_section(key);
    // A section: [mdd]; a table under a known section ([md.latice]) may also be a key written as one.
    if (!near.empty()) return "unknown section [" + clip(key) + "]; did you mean [" + near + "]?";
  }
  const std::string near = schema.closest(key);
  const std::string what = (table ? "unknown section [" + clip(key) + "]" : "unknown key " + key_text(key));
  if (!near.empty()) return what + "; did you mean " + key_text(near) + "?";
  return what + "; " + list;
}

}  // namespace

void Deck::validate() const {
  if (!m_root.is_table()) throw InputError(m_name + ": the deck is not a TOML table");
  // 1. Every key known, of the right type, in range.
  std::vector<std::pair<std::string, const toml::value*>> stack{{"", &m_root}};
  while (!stack.empty()) {
    auto [prefix, node] = stack.back();
    stack.pop_back();
    std::vector<std::string> names;
    for (const auto& kv : node->as_table()) names.push_back(kv.first);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const toml::value& v = node->as_table().at(name);
      std::string key = prefix.empty() ? name : prefix + "." + name;
      const KeySpec* s = is_bare_key(name) ? m_schema->find(key) : nullptr;
      if (!s) {
        bool is_section = false;
        for (const auto& spec : m_schema->keys)
          if (is_bare_key(name) && spec.key.rfind(key + ".", 0) == 0) is_section = true;
        if (is_section && v.is_table()) {
          stack.push_back({key, &v});
          continue;
        }
        throw InputError(where(key, &v) + ": " + unknown_key_message(*m_schema, prefix, name, v.is_table()));
      }
      check_value(*s, key, v);
    }
  }
  // 2. Rules between keys, as the schema has them (spotrun's: the solver's own; run.solver is one of the
  // registered solvers by now).
  if (m_schema->check_rules) m_schema->check_rules(*this);
}

// A field of the tables of a TableArray key: physics() and resolved() show it with its table.
static bool is_table_field(const DeckSchema& schema, const KeySpec& s) {
  // Its parent, or a section above it (the fields of [run.stage.md] under [[run.stage]]).
  for (auto dot = s.key.rfind('.'); dot != std::string::npos && dot > 0; dot = s.key.rfind('.', dot - 1)) {
    const KeySpec* parent = schema.find(s.key.substr(0, dot));
    if (parent) return parent->type == KeyType::TableArray;
  }
  return false;
}

std::string Deck::physics() const {
  std::vector<std::string> lines;
  for (const auto& s : m_schema->keys) {
    if (s.resumable || is_table_field(*m_schema, s) || !section_active(s.key)) continue;
    if (!has(s.key) && s.default_value.empty()) continue;
    lines.push_back(s.key + " = " + show(value_or_default(s.key)));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string Deck::resolved() const {
  std::ostringstream out;
  std::string section;
  for (const auto& s : m_schema->keys) {
    if (is_table_field(*m_schema, s) || !section_active(s.key)) continue;
    auto dot = s.key.rfind('.');
    std::string sec = s.key.substr(0, dot), name = s.key.substr(dot + 1);
    if (!has(s.key) && s.default_value.empty()) continue;
    if (sec != section) {
      out << (section.empty() ? "" : "\n") << "[" << sec << "]\n";
      section = sec;
    }
    if (s.type == KeyType::TableArray) {  // one table a line: within k_deck_max_line however many
      out << name << " = [\n";
      const toml::value tables = value_or_default(s.key);
      for (const auto& e : tables.as_array()) out << "  " << show(e) << ",\n";
      out << "]\n";
      continue;
    }
    out << name << " = " << show(value_or_default(s.key)) << "\n";
  }
  return out.str();
}

}  // namespace spotrun::io
