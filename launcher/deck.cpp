#include "deck.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <set>
#include <sstream>

#include "comm/errors.hpp"

namespace spotrun::launcher {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string type_name(KeyType t) {
  switch (t) {
    case KeyType::Int: return "an integer";
    case KeyType::Float: return "a number";
    case KeyType::Bool: return "true or false";
    case KeyType::String: return "a string";
    case KeyType::Int3: return "an array of 3 integers";
    case KeyType::Duration: return "seconds or \"HH:MM:SS\"";
  }
  return "?";
}

std::string show(const toml::value& v) {
  std::ostringstream s;
  if (v.is_string()) {
    // A TOML basic string: escape quotes, backslashes and control characters.
    s << '"';
    for (unsigned char c : v.as_string().str) {
      if (c == '"' || c == '\\')
        s << '\\' << c;
      else if (c == '\n')
        s << "\\n";
      else if (c == '\t')
        s << "\\t";
      else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        s << buf;
      } else
        s << c;
    }
    s << '"';
  }
  else if (v.is_floating()) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v.as_floating());
    std::string t(buf, r.ptr);
    if (t.find_first_of(".eEn") == std::string::npos) t += ".0";
    s << t;
  } else if (v.is_integer())
    s << v.as_integer();
  else if (v.is_boolean())
    s << (v.as_boolean() ? "true" : "false");
  else if (v.is_array()) {
    s << '[';
    bool first = true;
    for (const auto& e : v.as_array()) {
      s << (first ? "" : ", ") << show(e);
      first = false;
    }
    s << ']';
  } else if (v.is_local_time()) {
    const auto& t = v.as_local_time();
    char buf[32];
    std::snprintf(buf, sizeof buf, "\"%02d:%02d:%02d\"", t.hour, t.minute, t.second);
    s << buf;
  } else if (v.is_table())
    s << "(a table)";
  else
    s << "(a value)";
  return s.str();
}

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(key);
  while (std::getline(in, part, '.')) parts.push_back(part);
  return parts;
}

std::string range_text(const KeySpec& s) {
  std::ostringstream r;
  if (!s.choices.empty()) {
    r << "one of";
    for (std::size_t i = 0; i < s.choices.size(); ++i) r << (i ? ", " : " ") << '"' << s.choices[i] << '"';
    return r.str();
  }
  bool has_min = s.min > -1e299, has_max = s.max < 1e299;
  if (has_min && has_max && s.max < 1e14)
    r << (s.min_exclusive ? "> " : ">= ") << s.min << " and <= " << s.max;
  else if (has_min)
    r << (s.min_exclusive ? "> " : ">= ") << s.min;
  return r.str();
}

toml::value parse_literal(const std::string& literal) {
  std::istringstream in("v = " + literal);
  return toml::find(toml::parse(in, "literal"), "v");
}

}  // namespace

const KeySpec* find_key(const std::string& key) {
  for (const auto& s : deck_schema())
    if (s.key == key) return &s;
  return nullptr;
}

std::string closest_key(const std::string& key) {
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const auto& s : deck_schema()) {
    // Compare the last component too, so that "md.dtt" and "run.dt" both find "md.dt".
    std::size_t d = edit_distance(key, s.key);
    auto last = s.key.substr(s.key.rfind('.') + 1);
    auto klast = key.substr(key.rfind('.') + 1);
    d = std::min(d, edit_distance(klast, last) + 1);
    if (d < best_d) {
      best_d = d;
      best = s.key;
    }
  }
  return best;
}

std::optional<double> parse_duration(const std::string& text) {
  std::vector<double> parts;
  std::string p;
  std::istringstream in(text);
  while (std::getline(in, p, ':')) {
    if (p.empty() || p.find_first_not_of("0123456789.") != std::string::npos) return std::nullopt;
    try {
      parts.push_back(std::stod(p));
    } catch (...) {
      return std::nullopt;
    }
  }
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  double s = 0;
  for (double v : parts) s = s * 60 + v;
  return s;
}

Deck Deck::parse(const std::string& text, const std::string& name) {
  Deck d;
  d.m_name = name;
  std::istringstream in(text);
  try {
    d.m_root = toml::parse(in, name);
  } catch (const toml::syntax_error& e) {
    const auto& loc = e.location();
    // toml11 reports the start of the region; its message marks the exact column with a caret
    // under the quoted source line ("  4 | dt = = 0.1" / "    |      ^--- ...").
    std::size_t column = loc.column();
    std::istringstream lines(e.what());
    std::string prev, line;
    while (std::getline(lines, line)) {
      const auto caret = line.find('^');
      const auto bar = line.find("| ");
      if (caret != std::string::npos && bar != std::string::npos && caret > bar && prev.find("| ") == bar) {
        column = caret - (bar + 2) + 1;
        break;
      }
      prev = line;
    }
    throw InputError(name + ":" + std::to_string(loc.line()) + ":" + std::to_string(column) +
                     ": malformed TOML:\n" + e.what());
  } catch (const std::exception& e) {
    throw InputError(name + ": malformed TOML: " + e.what());
  }
  return d;
}

void Deck::apply_set(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set '" + assignment + "': expected section.key=value");
  std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  toml::value value;
  try {
    value = parse_literal(text);
  } catch (const std::exception&) {
    value = toml::value(text);  // bare words are strings: --set md.ensemble=langevin
  }
  auto parts = split_key(key);
  if (!m_root.is_table()) m_root = toml::table{};
  toml::value* t = &m_root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    auto& tab = t->as_table();
    auto it = tab.find(parts[i]);
    if (it == tab.end()) it = tab.emplace(parts[i], toml::table{}).first;
    if (!it->second.is_table()) throw InputError("--set '" + assignment + "': '" + parts[i] + "' is not a table");
    t = &it->second;
  }
  t->as_table()[parts.back()] = value;
}

const toml::value* Deck::lookup(const std::string& key) const {
  const toml::value* t = &m_root;
  for (const auto& p : split_key(key)) {
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
  const KeySpec* s = find_key(key);
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
  if (!has(key) && find_key(key) && find_key(key)->default_value.empty()) return {};
  return value_or_default(key).as_string().str;
}
std::array<int, 3> Deck::get_int3(const std::string& key) const {
  auto v = value_or_default(key);
  const auto& a = v.as_array();
  return {static_cast<int>(a[0].as_integer()), static_cast<int>(a[1].as_integer()), static_cast<int>(a[2].as_integer())};
}
double Deck::get_seconds(const std::string& key) const {
  auto v = value_or_default(key);
  if (v.is_string()) return *parse_duration(v.as_string().str);
  if (v.is_local_time()) {  // an unquoted 02:00:00 reads as a TOML time of day
    const auto& t = v.as_local_time();
    return t.hour * 3600.0 + t.minute * 60.0 + t.second + t.millisecond * 1e-3;
  }
  return v.is_integer() ? static_cast<double>(v.as_integer()) : v.as_floating();
}

bool Deck::section_active(const std::string& key) const {
  // Keys of [md.lattice] apply unless the atoms come from [md.initial], and vice versa.
  bool from_data = has("md.initial.lammps_data");
  if (key.rfind("md.lattice.", 0) == 0) return !from_data;
  if (key.rfind("md.initial.", 0) == 0) return from_data;
  if (key.rfind("md.", 0) == 0) return get_string("run.solver") == "md";
  if (key.rfind("fluid.", 0) == 0) return get_string("run.solver") == "fluid";
  return true;
}

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
      const KeySpec* s = find_key(key);
      if (!s) {
        bool is_section = false;
        for (const auto& spec : deck_schema())
          if (spec.key.rfind(key + ".", 0) == 0) is_section = true;
        if (is_section && v.is_table()) {
          stack.push_back({key, &v});
          continue;
        }
        throw InputError(m_name + ": unknown key '" + key + "'; did you mean '" + closest_key(key) + "'?");
      }
      auto bad = [&](const std::string& why) {
        throw InputError(m_name + ": key '" + key + "' = " + show(v) + ": " + why);
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
          if (!v.is_string()) bad("expected " + type_name(s->type));
          if (!s->choices.empty() &&
              std::find(s->choices.begin(), s->choices.end(), v.as_string().str) == s->choices.end())
            bad("allowed: " + range_text(*s));
          if (s->choices.empty() && v.as_string().str.empty()) bad("must not be empty");
          break;
        case KeyType::Int3: {
          if (!v.is_array() || v.as_array().size() != 3) bad("expected " + type_name(s->type));
          for (const auto& e : v.as_array()) {
            if (!e.is_integer()) bad("expected " + type_name(s->type));
            if (e.as_integer() < s->min || e.as_integer() > s->max)
              bad("each component must be " + range_text(*s));
          }
          break;
        }
        case KeyType::Duration:
          if (v.is_local_time()) {
            // HH:MM:SS without quotes: TOML reads it as a time of day, which is fine as a duration < 24 h.
          } else if (v.is_string()) {
            if (!parse_duration(v.as_string().str)) bad("expected " + type_name(s->type));
          } else if (v.is_integer() || v.is_floating()) {
            double x = v.is_integer() ? static_cast<double>(v.as_integer()) : v.as_floating();
            if (!(x >= 0)) bad("must be >= 0 seconds");
          } else {
            bad("expected " + type_name(s->type));
          }
          break;
      }
    }
  }
  // 2. Rules between keys.
  if (get_string("run.solver") == "md") {
    if (has("md.initial") && has("md.lattice"))
      throw InputError(m_name + ": give either [md.lattice] or [md.initial], not both");
    if (has("md.initial") && !has("md.initial.lammps_data"))
      throw InputError(m_name + ": [md.initial] needs key 'lammps_data'");
  }
}

std::string Deck::physics() const {
  std::vector<std::string> lines;
  for (const auto& s : deck_schema()) {
    if (s.resumable || !section_active(s.key)) continue;
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
  for (const auto& s : deck_schema()) {
    if (!section_active(s.key)) continue;
    auto dot = s.key.rfind('.');
    std::string sec = s.key.substr(0, dot), name = s.key.substr(dot + 1);
    if (!has(s.key) && s.default_value.empty()) continue;
    if (sec != section) {
      out << (section.empty() ? "" : "\n") << "[" << sec << "]\n";
      section = sec;
    }
    out << name << " = " << show(value_or_default(s.key)) << "\n";
  }
  return out.str();
}

}  // namespace spotrun::launcher
