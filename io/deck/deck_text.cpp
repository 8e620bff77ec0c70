// The deck engine's text helpers for messages (deck_detail.hpp).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "deck_detail.hpp"

namespace spotrun::io::deck_detail {

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The offset of the first byte of s that is not part of a valid UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF included), or s.size().
std::size_t invalid_utf8_at(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return i;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size() || !is_utf8_continuation(s[i + k])) return i;
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n + 1;
  }
  return s.size();
}

// Characters (UTF-8 code points; a byte of invalid UTF-8 counts as one) of s.
std::size_t count_chars(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += is_utf8_continuation(c) ? 0 : 1;
  return n;
}

// The byte offset of character number n (from 0) of s; s.size() when s is shorter.
std::size_t char_offset(std::string_view s, std::size_t n) {
  std::size_t i = 0;
  for (; i < s.size(); ++i)
    if (!is_utf8_continuation(s[i]) && n-- == 0) return i;
  return s.size();
}

// Appends s with backslashes, the quote character q and control characters escaped as in a TOML basic string.
void append_escaped(std::string& out, std::string_view s, char q) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\' || (q != 0 && ch == q)) {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
}

// TOML text (a value, a key) for a message without quotes, shortened like quote_for_message.
std::string clip(std::string_view text) {
  const std::size_t n = count_chars(text);
  if (n <= k_message_quote_max) return std::string(text);
  const std::size_t tail = 20, head = k_message_quote_max - tail - 3;
  return std::string(text.substr(0, char_offset(text, head))) + "..." +
         std::string(text.substr(char_offset(text, n - tail))) + " (" + std::to_string(n) + " characters)";
}

// At most max characters of toml11's own words (a message or a hint), "..." marking a cut.
std::string cut(std::string_view text, std::size_t max) {
  if (count_chars(text) <= max) return std::string(text);
  return std::string(text.substr(0, char_offset(text, max - 3))) + "...";
}

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
    case KeyType::Float3: return "an array of 3 numbers";
    case KeyType::Duration: return std::string("a duration: ") + k_duration_forms;
    case KeyType::Strings: return "an array of strings";
    case KeyType::TableArray: return "an array of tables ([[...]] blocks)";
  }
  return "?";
}

// A string as a TOML basic string; a long one as a multi-line string of lines of about 100 characters,
// each ended by a backslash (which joins them), so that the text stays within k_deck_max_line.
std::string show_string(const std::string& str) {
  std::string out = "\"";
  append_escaped(out, str, '"');
  if (out.size() <= 1000) return out + '"';
  out = "\"\"\"\\\n";
  std::size_t line = 0;
  for (std::size_t i = 0; i < str.size(); ++i) {
    const std::size_t before = out.size();
    if (str[i] == ' ' && line == 0)
      out += "\\u0020";  // a backslash at the end of a line also eats the spaces that start the next one
    else
      append_escaped(out, std::string_view(str).substr(i, 1), '"');
    line += out.size() - before;
    // Break between characters only (after an escape, not inside a UTF-8 sequence).
    if (line >= 100 && (i + 1 == str.size() || !is_utf8_continuation(str[i + 1]))) {
      out += "\\\n";
      line = 0;
    }
  }
  return out + (line ? "\\\n" : "") + "\"\"\"";
}

// A value as TOML text (the resolved deck, physics()): complete, however long.
std::string show(const toml::value& v) {
  std::ostringstream s;
  if (v.is_string()) {
    s << show_string(v.as_string().str);
  } else if (v.is_floating()) {
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
  } else if (v.is_table()) {
    // An inline table, its keys sorted (the resolved deck and physics() do not depend on hash order).
    std::vector<std::string> names;
    for (const auto& kv : v.as_table()) names.push_back(kv.first);
    std::sort(names.begin(), names.end());
    s << '{';
    for (std::size_t i = 0; i < names.size(); ++i)
      s << (i ? ", " : "") << names[i] << " = " << show(v.as_table().at(names[i]));
    s << '}';
  }
  else
    s << "(a value)";
  return s.str();
}

// A value for an error message: at most about k_message_quote_max characters of it.
std::string show_short(const toml::value& v) {
  if (v.is_string()) return quote_for_message(v.as_string().str);
  return clip(show(v));
}

// A key for an error message, between single quotes: 'md.dt'.
std::string key_text(const std::string& key) { return quote_for_message(key, '\''); }

bool is_bare_key(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)  // ASCII only, whatever the locale
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

// "a.b.c" -> {"a", "b", "c"}; empty parts are kept ("a..b", "a.").
std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t dot = key.find('.', begin);
    parts.push_back(key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
    if (dot == std::string::npos) return parts;
    begin = dot + 1;
  }
}

std::string range_text(const KeySpec& s) {
  std::ostringstream r;
  if (!s.choices.empty()) {
    r << "one of";
    for (std::size_t i = 0; i < s.choices.size(); ++i) r << (i ? ", " : " ") << '"' << s.choices[i] << '"';
    return r.str();
  }
  // Integer keys' bounds in full (1000000000000000, not 1e+15): the upper bound is part of the answer.
  const auto bound = [&s](double x) {
    char text[64];
    if (s.type == KeyType::Int && std::fabs(x) < 1e19) std::snprintf(text, sizeof text, "%.0f", x);
    else std::snprintf(text, sizeof text, "%g", x);
    return std::string(text);
  };
  const bool has_min = s.min > -1e299, has_max = s.max < 1e299;
  if (has_min) r << (s.min_exclusive ? "> " : ">= ") << bound(s.min);
  if (has_max) r << (has_min ? " and <= " : "<= ") << bound(s.max);
  return r.str();
}

// The value of a --set assignment or a schema default as TOML; throws for text that is not exactly
// one TOML value (nothing after it: "1\nx = 2" is not the value 1).
toml::value parse_literal(const std::string& literal) {
  const std::string text = "v = " + literal;
  if (auto problem = check_text(text)) {
    if (problem->integer_out_of_range) throw IntegerOutOfRange(problem->what);
    throw std::invalid_argument(problem->what);
  }
  std::istringstream in(text);
  const toml::value root = toml::parse(in, "literal");
  if (root.as_table().size() != 1) throw std::invalid_argument("more than one key");
  return toml::find(root, "v");
}

// Digits only, at least one.
bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 20 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "S" or "S.F" (decimal seconds), or digits only when integer.
std::optional<double> duration_number(std::string_view s, bool integer) {
  const auto dot = s.find('.');
  if (dot == std::string_view::npos ? !all_digits(s)
                                    : (integer || !all_digits(s.substr(0, dot)) || !all_digits(s.substr(dot + 1))))
    return std::nullopt;
  const double v = std::strtod(std::string(s).c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}


}  // namespace spotrun::io::deck_detail
