#include "deck.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "comm/errors.hpp"

namespace spotrun::io {

const char* const k_duration_forms =
    "seconds as a number (90, 90.5) or a string \"S\", \"MM:SS\", \"HH:MM:SS\", \"D-HH\", \"D-HH:MM\" or "
    "\"D-HH:MM:SS\" (digits; the seconds may have a fraction; minutes and seconds < 60 and hours < 24 after a "
    "larger unit)";

namespace {

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

// --- The limits of the text, checked before toml11 parses it -------------------------------------------

struct TextProblem {
  std::size_t line = 0, column = 0;  // 0: the whole text
  std::string what;
  bool integer_out_of_range = false;  // a literal that only a 64-bit overflow keeps from being an integer
};

// parse_literal's error for an integer literal out of TOML's 64-bit range (never taken for a bare word).
struct IntegerOutOfRange : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A single pass over TOML text that knows comments, the four kinds of strings, table headers, keys and
// values, and counts what the limits bound. It does not check the syntax (toml11 does); on malformed text
// it only has to stay within the text and terminate.
class TextScanner {
 public:
  explicit TextScanner(std::string_view text) : m_text(text) {}
  // The offsets of the '[' that opens each table header ([table] or [[array]]), in order: known once
  // run() found no problem.
  const std::vector<std::size_t>& headers() const { return m_headers; }

  std::optional<TextProblem> run() {
    if (m_text.size() > k_deck_max_bytes)
      return TextProblem{0, 0, "the text is " + std::to_string(m_text.size()) + " bytes; the largest deck is " +
                                   std::to_string(k_deck_max_bytes) + " bytes (1 MiB)"};
    if (auto p = check_lines()) return p;
    try {
      scan();
    } catch (const TextProblem& p) {
      return p;
    }
    return std::nullopt;
  }

 private:
  struct Frame {
    char open;  // '[' array, '{' inline table
    std::size_t entries = 0;
    bool expect_value = true;  // arrays: the next significant character starts an element
    std::size_t line, column;
  };

  // NUL bytes and the length of every line.
  std::optional<TextProblem> check_lines() const {
    std::size_t line = 1, begin = 0;
    for (std::size_t i = 0; i <= m_text.size(); ++i) {
      if (i == m_text.size() || m_text[i] == '\n') {
        if (i - begin > k_deck_max_line)
          return TextProblem{line, 0, "the line is " + std::to_string(i - begin) + " bytes long; the longest is " +
                                          std::to_string(k_deck_max_line) +
                                          " (a longer string can be a multi-line string, \"\"\"...\"\"\")"};
        ++line;
        begin = i + 1;
      } else if (m_text[i] == '\0') {
        return TextProblem{line, i - begin + 1, "the text contains a NUL byte (is it a binary file?)"};
      }
    }
    return std::nullopt;
  }

  [[noreturn]] void fail(const std::string& what) const { throw TextProblem{m_line, m_pos - m_line_begin + 1, what}; }

  char at(std::size_t i) const { return i < m_text.size() ? m_text[i] : '\0'; }

  void advance() {
    if (m_text[m_pos] == '\n') {
      ++m_line;
      m_line_begin = m_pos + 1;
    }
    ++m_pos;
  }

  void count_item() {
    if (++m_items > k_deck_max_items)
      fail("more than " + std::to_string(k_deck_max_items) +
           " names and array elements in all (every key, table header, part of a dotted name and array element "
           "counts; a spotrun deck needs fewer than 200)");
  }

  // Skips a string that starts at m_pos (a quote character), to after its closing quote, or to the end
  // of the line when a single-line string is not closed.
  void skip_string() {
    const char q = m_text[m_pos];
    const bool multi = at(m_pos + 1) == q && at(m_pos + 2) == q;
    if (!multi && at(m_pos + 1) == q) {  // "" or ''
      m_pos += 2;
      return;
    }
    m_pos += multi ? 3 : 1;
    while (m_pos < m_text.size()) {
      const char c = m_text[m_pos];
      if (c == '\n' && !multi) return;
      if (c == '\\' && q == '"') {  // an escape in a basic string: the next character is not a quote
        advance();
        if (m_pos < m_text.size()) advance();
        continue;
      }
      if (c == q && (!multi || (at(m_pos + 1) == q && at(m_pos + 2) == q))) {
        m_pos += multi ? 3 : 1;
        // """a"""" is the string a": up to two more quotes belong to a multi-line string.
        for (int k = 0; multi && k < 2 && at(m_pos) == q; ++k) ++m_pos;
        return;
      }
      advance();
    }
  }

  // A number, date or time at m_pos: skipped, after checking that an integer literal fits TOML's 64-bit
  // integers (toml11 saturates 9223372036854775808 to 9223372036854775807 without a word).
  void check_number() {
    const std::size_t begin = m_pos;
    while (m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) ||
                                     std::strchr("_+-.:", m_text[m_pos]) != nullptr) && m_text[m_pos] != '\0')
      ++m_pos;
    const std::string_view token = m_text.substr(begin, m_pos - begin);
    std::size_t i = 0;
    const bool negative = token[0] == '-';
    if (token[0] == '+' || token[0] == '-') ++i;
    int base = 10;
    if (token.size() > i + 1 && token[i] == '0' && std::strchr("xob", token[i + 1]) != nullptr) {
      base = token[i + 1] == 'x' ? 16 : token[i + 1] == 'o' ? 8 : 2;
      i += 2;
    }
    std::string digits = negative ? "-" : "";
    for (; i < token.size(); ++i) {
      const char d = token[i];
      if (d == '_') continue;
      const bool ok = base == 16 ? std::isxdigit(static_cast<unsigned char>(d)) != 0
                                 : (d >= '0' && d < static_cast<char>('0' + base));
      if (!ok) return;  // a float, a date or a time (or a syntax error toml11 reports)
      digits += d;
    }
    if (digits.empty() || digits == "-") return;
    std::int64_t value = 0;
    const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (err == std::errc::result_out_of_range) {
      m_pos = begin;
      TextProblem p{m_line, m_pos - m_line_begin + 1,
                    "the integer " + std::string(token) +
                        " is out of range: TOML integers are 64-bit, -9223372036854775808 to 9223372036854775807",
                    true};
      throw p;
    }
  }

  void start_key() {
    m_in_key = true;
    m_key_parts = 1;
  }

  void scan() {
    bool line_start = true;
    while (m_pos < m_text.size()) {
      const char c = m_text[m_pos];
      if (c == '\n') {
        advance();
        if (m_stack.empty()) {
          line_start = true;
          m_in_key = m_in_header = false;
        }
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++m_pos;
        continue;
      }
      if (c == '#') {
        while (m_pos < m_text.size() && m_text[m_pos] != '\n') ++m_pos;
        continue;
      }
      if (!m_stack.empty() && m_stack.back().open == '[' && m_stack.back().expect_value && c != ']' && c != ',') {
        Frame& f = m_stack.back();
        f.expect_value = false;
        if (++f.entries > k_deck_max_elements)
          fail("an array of more than " + std::to_string(k_deck_max_elements) + " elements (it starts at line " +
               std::to_string(f.line) + ", column " + std::to_string(f.column) + ")");
        count_item();
      }
      if (line_start) {  // a line of the document itself: a table header or a key
        line_start = false;
        count_item();
        start_key();
        if (c == '[') {
          m_headers.push_back(m_pos);
          m_in_header = true;
          ++m_pos;
          if (at(m_pos) == '[') ++m_pos;
          continue;
        }
      }
      if (c == '"' || c == '\'') {
        skip_string();
        continue;
      }
      if (m_in_key) {
        if (c == '.') {
          if (++m_key_parts > k_deck_max_key_parts)
            fail("a key or table name of more than " + std::to_string(k_deck_max_key_parts) + " dotted parts");
          count_item();  // every part of a dotted name costs the parser about as much as a key
        }
        if (c == '=' && !m_in_header) {
          m_in_key = false;
          if (!m_stack.empty() && m_stack.back().open == '{' && ++m_stack.back().entries > k_deck_max_elements)
            fail("an inline table of more than " + std::to_string(k_deck_max_elements) +
                 " entries (it starts at line " + std::to_string(m_stack.back().line) + ", column " +
                 std::to_string(m_stack.back().column) + ")");
        } else if (c == ']' && m_in_header) {
          m_in_key = m_in_header = false;
        } else if (c == '}' && !m_stack.empty() && m_stack.back().open == '{') {
          m_in_key = false;
          m_stack.pop_back();
        }
        ++m_pos;
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          ((c == '+' || c == '-') && std::isdigit(static_cast<unsigned char>(at(m_pos + 1))))) {
        check_number();
        continue;
      }
      if (c == '[' || c == '{') {
        if (m_stack.size() >= k_deck_max_nesting)
          fail("arrays and inline tables nested more than " + std::to_string(k_deck_max_nesting) +
               " deep (a spotrun deck needs 1)");
        m_stack.push_back(Frame{c, 0, true, m_line, m_pos - m_line_begin + 1});
        if (c == '{') {
          start_key();
          count_item();
        }
      } else if ((c == ']' || c == '}') && !m_stack.empty() && m_stack.back().open == (c == ']' ? '[' : '{')) {
        m_stack.pop_back();
      } else if (c == ',' && !m_stack.empty()) {
        if (m_stack.back().open == '[') {
          m_stack.back().expect_value = true;
        } else {
          start_key();
          count_item();
        }
      }
      ++m_pos;
    }
  }

  std::string_view m_text;
  std::size_t m_pos = 0, m_line = 1, m_line_begin = 0;
  std::vector<Frame> m_stack;
  std::size_t m_items = 0, m_key_parts = 0;
  bool m_in_key = false, m_in_header = false;
  std::vector<std::size_t> m_headers;
};

std::optional<TextProblem> check_text(std::string_view text) { return TextScanner(text).run(); }

// --- The order of tables -----------------------------------------------------------------------------
//
// TOML lets a table be defined after its sub-tables: [md.pair] after [[md.pair.coeff]], [md] after
// [[md.types]]. toml11 3.7 refuses exactly the case where the table was first made (implicitly) by an
// array-of-tables header ("table ("md.pair") already exists"). Before toml11 sees the text, each such
// [table] block (its header and the lines up to the next header) is moved to just before the first block
// below it in its scope, which gives the same document in an order toml11 takes. Lines keep their
// original numbers in every message through a map from the lines of the text toml11 reads to those of the
// file.

struct Header {
  std::vector<std::string> path;  // the names of the table, unquoted
  bool array = false;             // [[...]]
};

// The table header that starts at text[pos] ('['); nullopt for anything the scanner above would not
// tell apart from a malformed header (toml11 then reports it where it is).
std::optional<Header> parse_header(std::string_view text, std::size_t pos) {
  Header h;
  auto at = [&](std::size_t i) { return i < text.size() ? text[i] : '\0'; };
  auto skip_blank = [&] {
    while (at(pos) == ' ' || at(pos) == '\t') ++pos;
  };
  ++pos;
  if (at(pos) == '[') {
    h.array = true;
    ++pos;
  }
  for (;;) {
    skip_blank();
    std::string name;
    const char c = at(pos);
    if (c == '"' || c == '\'') {
      const std::size_t end = text.find(c, pos + 1);
      if (end == std::string_view::npos) return std::nullopt;
      name = std::string(text.substr(pos + 1, end - pos - 1));
      // An escape (basic strings) would need decoding; a newline means the name is not closed on its line.
      if (name.find_first_of(c == '"' ? "\\\n" : "\n") != std::string::npos) return std::nullopt;
      pos = end + 1;
    } else {
      const std::size_t begin = pos;
      while (is_bare_key(text.substr(pos, 1))) ++pos;
      if (pos == begin) return std::nullopt;
      name = std::string(text.substr(begin, pos - begin));
    }
    h.path.push_back(std::move(name));
    skip_blank();
    if (at(pos) != '.') break;
    ++pos;
  }
  if (at(pos) != ']' || (h.array && at(pos + 1) != ']')) return std::nullopt;
  return h;
}

// Whether a is a strict prefix of b (a table above b).
bool is_above(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// TOML text in an order toml11 reads (see above) and, when it had to change the order, the number in the
// original text of each of its lines (index: line - 1).
struct TableOrder {
  std::string text;
  std::vector<std::size_t> lines;  // empty: the text is the original
};

TableOrder order_tables(const std::string& text, const std::vector<std::size_t>& header_offsets) {
  TableOrder out;
  // Blocks: 0 is the text before the first header; block i > 0 starts at the line of header i.
  std::vector<std::size_t> begin{0};
  std::vector<Header> headers{Header{}};
  for (const std::size_t off : header_offsets) {
    auto h = parse_header(text, off);
    if (!h) return out;
    const std::size_t nl = text.rfind('\n', off);
    begin.push_back(nl == std::string::npos ? 0 : nl + 1);
    headers.push_back(std::move(*h));
  }
  const std::size_t n = begin.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  bool moved = false;
  for (std::size_t i = 1; i < n; ++i) {
    const Header& t = headers[i];
    if (t.array) continue;
    const std::size_t pos = static_cast<std::size_t>(std::find(order.begin(), order.end(), i) - order.begin());
    // Its scope: after the last array-of-tables header above it (its tables belong to that array's last one).
    std::size_t scope = 0;
    for (std::size_t p = 1; p < pos; ++p)
      if (headers[order[p]].array && is_above(headers[order[p]].path, t.path)) scope = p;
    for (std::size_t p = scope + 1; p < pos; ++p) {
      if (!is_above(t.path, headers[order[p]].path)) continue;
      // The first block below it made the table; only an array-of-tables header does that in a way
      // toml11 does not reopen.
      if (headers[order[p]].array) {
        order.erase(order.begin() + static_cast<std::ptrdiff_t>(pos));
        order.insert(order.begin() + static_cast<std::ptrdiff_t>(p), i);
        moved = true;
      }
      break;
    }
  }
  if (!moved) return out;
  std::vector<std::size_t> first_line(n, 1);
  for (std::size_t i = 1; i < n; ++i)
    first_line[i] = first_line[i - 1] + static_cast<std::size_t>(std::count(
                                            text.begin() + static_cast<std::ptrdiff_t>(begin[i - 1]),
                                            text.begin() + static_cast<std::ptrdiff_t>(begin[i]), '\n'));
  out.text.reserve(text.size() + n);
  for (const std::size_t b : order) {
    const std::size_t end = b + 1 < n ? begin[b + 1] : text.size();
    std::string_view block(text.data() + begin[b], end - begin[b]);
    out.text.append(block);
    std::size_t lines = static_cast<std::size_t>(std::count(block.begin(), block.end(), '\n'));
    if (!block.empty() && block.back() != '\n') {  // the last line of the file, without its newline
      out.text += '\n';
      ++lines;
    }
    for (std::size_t k = 0; k < lines; ++k) out.lines.push_back(first_line[b] + k);
  }
  return out;
}

std::string located(const std::string& name, const TextProblem& p) {
  std::string at = name;
  if (p.line > 0) at += ":" + std::to_string(p.line);
  if (p.column > 0) at += ":" + std::to_string(p.column);
  return at + ": " + p.what;
}

// --- toml11's syntax errors, shortened -----------------------------------------------------------------

// One location that a toml11 message quotes: " 4 | dt = = 0.1" and under it "   |      ^--- here".
struct QuotedSource {
  std::size_t line = 0, column = 0;
  std::string source, hint;
};

// Parses " 4 | text" into (4, text); false for other lines.
bool parse_source_line(const std::string& l, std::size_t& line, std::string& text) {
  std::size_t i = 0;
  while (i < l.size() && l[i] == ' ') ++i;
  const std::size_t digits = i;
  while (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i]))) ++i;
  if (i == digits || i - digits > 9 || l.compare(i, 2, " |") != 0) return false;
  line = std::stoul(l.substr(digits, i - digits));
  text = i + 3 <= l.size() ? l.substr(i + 3) : std::string();
  return true;
}

// Parses "   |      ^--- here" (or "~~~ here") into (column, hint); false for other lines.
bool parse_marker_line(const std::string& l, std::size_t& column, std::string& hint) {
  const std::size_t bar = l.find("| ");
  if (bar == std::string::npos || l.find_first_not_of(' ') != bar) return false;
  const std::size_t mark = l.find_first_of("^~", bar + 2);
  if (mark == std::string::npos || l.find_first_not_of(' ', bar + 2) != mark) return false;
  column = mark - (bar + 2) + 1;
  const std::size_t h = l.find_first_not_of("^~- ", mark);
  hint = h == std::string::npos ? std::string() : l.substr(h);
  return true;
}

// At most about k_message_quote_max characters of a source line around column (1-based), control characters
// shown as '?'; column is moved to the same character in the result.
std::string source_window(std::string src, std::size_t& column) {
  for (char& c : src)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = c == '\t' ? ' ' : '?';
  const std::size_t max = k_message_quote_max;
  if (src.size() <= max) return src;
  const std::size_t c = std::min(column > 0 ? column - 1 : 0, src.size());
  std::size_t begin = c > max / 2 ? c - max / 2 : 0;
  std::size_t end = std::min(src.size(), begin + max);
  if (end - begin < max) begin = end - max;
  while (begin > 0 && is_utf8_continuation(src[begin])) --begin;
  while (end < src.size() && is_utf8_continuation(src[end])) ++end;
  std::string out = (begin > 0 ? "..." : "") + src.substr(begin, end - begin) + (end < src.size() ? "..." : "");
  column = c - begin + 1 + (begin > 0 ? 3 : 0);
  return out;
}

// toml11's message for e, shortened: name:line:column, the first line of the message and the last two
// quoted locations, each line of source cut to about k_message_quote_max characters around the marker.
std::string toml_error_message(const toml::exception& e, const std::string& name,
                               const std::function<std::size_t(std::size_t)>& original_line) {
  std::vector<std::string> lines;
  {
    std::istringstream in(e.what());
    std::string l;
    while (std::getline(in, l)) lines.push_back(l);
  }
  std::string summary = lines.empty() ? std::string("unknown error") : lines[0];
  if (summary.rfind("[error] ", 0) == 0) summary.erase(0, 8);
  std::vector<QuotedSource> quotes;
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    QuotedSource q;
    if (parse_source_line(lines[i], q.line, q.source) && parse_marker_line(lines[i + 1], q.column, q.hint)) {
      quotes.push_back(q);
      ++i;
    }
  }
  // A date or time out of range (25:00:00): toml11 marks the end of the value; the value starts at the
  // first character of its run of digits, ':', '.', '-', '+', 'T', 'Z'.
  const bool date_time = summary.find("RFC3339") != std::string::npos;
  for (auto& q : quotes) {
    if (!date_time) continue;
    std::size_t k = std::min(q.column > 0 ? q.column - 1 : 0, q.source.size());
    while (k > 0 && std::strchr("0123456789:.-+TZtz", q.source[k - 1]) != nullptr) --k;
    q.column = k + 1;
  }
  if (quotes.size() > 2) quotes.erase(quotes.begin(), quotes.end() - 2);
  for (auto& q : quotes) q.line = original_line(q.line);
  // The error itself is the last location toml11 quotes (the first ones are where a table or an array
  // started); toml11's own location can be that of a copy of the value's text (line 1).
  std::size_t line = original_line(e.location().line()), column = e.location().column();
  if (!quotes.empty()) {
    line = quotes.back().line;
    column = quotes.back().column;
  }
  std::string out = name + ":" + std::to_string(line) + ":" + std::to_string(column) +
                    ": malformed TOML: " + cut(summary, 2 * k_message_quote_max);
  if (summary.find("parse_time") != std::string::npos || summary.find("parse_local_time") != std::string::npos)
    out += " (a duration is a number of seconds or a quoted string such as \"25:00:00\")";
  for (std::size_t i = 0; i < quotes.size(); ++i) {
    std::size_t col = quotes[i].column;
    const std::string src = source_window(quotes[i].source, col);
    const std::string number = std::to_string(quotes[i].line);
    out += (i ? "\n ..." : "") + std::string("\n ") + number + " | " + src + "\n " + std::string(number.size(), ' ') +
           " | " + std::string(col > 0 ? col - 1 : 0, ' ') + "^--- " + cut(quotes[i].hint, 2 * k_message_quote_max);
  }
  return out;
}

// Whether a schema key is key or lies below it (key is then a section of the schema).
bool in_schema(const DeckSchema& schema, const std::string& key) {
  for (const auto& s : schema.keys)
    if (s.key == key || s.key.rfind(key + ".", 0) == 0) return true;
  return false;
}

// Refuses key and table names that are not bare TOML keys: toml11 takes "md.dt" = 1 as one key named
// md.dt, which no lookup of md.dt would find (the schema default would run instead). For a quoted dotted
// name it says what to write: the key it names below the table it is in ("pair.epsilon" under [md]:
// md.pair.epsilon) when the schema has that, else the key it names from the top ("md.dt" under [md]: md.dt)
// when the schema has that, else the first.
void check_key_names(const toml::value& v, const std::string& prefix, const std::string& deck_name,
                     const DeckSchema& schema, const std::function<std::size_t(std::size_t)>& original_line) {
  if (v.is_array()) {
    for (const auto& e : v.as_array()) check_key_names(e, prefix, deck_name, schema, original_line);
    return;
  }
  if (!v.is_table()) return;
  std::vector<std::string> names;
  for (const auto& kv : v.as_table()) names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const toml::value& child = v.as_table().at(name);
    if (!is_bare_key(name)) {
      const auto line = child.location().line();
      std::string at = deck_name + (line > 0 ? ":" + std::to_string(original_line(line)) : std::string()) + ": ";
      const std::string in = prefix.empty() ? std::string() : " in [" + clip(prefix) + "]";
      const bool table = child.is_table();
      const std::string what = (table ? "table name " : "key ") + quote_for_message(name) + in;
      const std::string below = prefix.empty() ? name : prefix + "." + name;
      bool dotted_path = name.find('.') != std::string::npos;
      for (const auto& part : split_key(name)) dotted_path = dotted_path && is_bare_key(part);
      if (dotted_path) {
        const std::string full = !in_schema(schema, below) && in_schema(schema, name) ? name : below;
        const std::string quoted = " is quoted and contains a dot, so it is one name, not a dotted path: write ";
        if (table) throw InputError(at + what + quoted + "[" + clip(full) + "]");
        const auto dot = full.rfind('.');
        const std::string section = full.substr(0, dot), last = full.substr(dot + 1);
        // Under the table it is in (when the key lies below it), and under its own section.
        const bool below_prefix = prefix.empty() || full.rfind(prefix + ".", 0) == 0;
        const std::string relative = prefix.empty() || !below_prefix ? full : full.substr(prefix.size() + 1);
        if (!below_prefix || relative == last)
          throw InputError(at + what + quoted + clip(last) + " = ... under [" + clip(section) + "]");
        throw InputError(at + what + quoted + clip(relative) + " = ..." +
                         (prefix.empty() ? std::string() : " under [" + clip(prefix) + "]") + " (or " + clip(last) +
                         " = ... under [" + clip(section) + "])");
      }
      throw InputError(at + what +
                       " is not a valid name: deck keys and tables are named with letters, digits, _ and -");
    }
    check_key_names(child, prefix.empty() ? name : prefix + "." + name, deck_name, schema, original_line);
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

}  // namespace

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
    const KeySpec* parent = find(section_of(s.key));
    if (parent && parent->type == KeyType::TableArray) continue;  // a field of [[...]] tables
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
  TextScanner scanner(text);
  if (auto problem = scanner.run()) throw InputError(located(name, *problem));
  Deck d;
  d.m_name = name;
  d.m_schema = std::move(schema);
  TableOrder ordered = order_tables(text, scanner.headers());
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
    case KeyType::String: {
      if (!v.is_string()) bad("expected " + type_name(s->type));
      const std::string& str = v.as_string().str;
      if (!s->choices.empty() && std::find(s->choices.begin(), s->choices.end(), str) == s->choices.end())
        bad("allowed: " + range_text(*s));
      // An empty string is refused unless it is the key's default (cloud.metadata_url: the provider's).
      if (s->choices.empty() && str.empty() && s->default_value != "\"\"") bad("must not be empty");
      if (s->unit == "path" || s->choices.empty()) {
        // A path goes to the file system as a C string: a NUL would cut it, other control
        // characters make names no one can type.
        const auto c = std::find_if(str.begin(), str.end(), [](char ch) {
          return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
        });
        if (c != str.end()) {
          char code[8];
          std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(static_cast<unsigned char>(*c)));
          bad(std::string("contains the control character ") + code + " at character " +
              std::to_string(count_chars(std::string_view(str).substr(0, c - str.begin())) + 1) +
              "; a path must not contain control characters (U+0000 to U+001F, U+007F)");
        }
        if (const std::size_t at = invalid_utf8_at(str); at < str.size())
          bad("not valid UTF-8 (byte " + std::to_string(at + 1) +
              "): a deck is TOML, and TOML strings are UTF-8");
        if (str.size() > k_deck_max_path)
          bad("a path of " + std::to_string(str.size()) + " bytes; the longest a file system takes is " +
              std::to_string(k_deck_max_path) + " (PATH_MAX)");
      }
      if (s->check)
        if (const std::string why = s->check(str); !why.empty()) bad(why);
      break;
    }
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
        if (!(x >= 0) || !std::isfinite(x)) bad("must be a finite number >= 0 seconds");
      } else {
        bad("expected " + type_name(s->type));
      }
      break;
    case KeyType::Strings:
      if (!v.is_array()) bad("expected " + type_name(s->type));
    if (v.as_array().size() < s->min || v.as_array().size() > s->max)
      bad("expected " + range_text(*s) + " strings");
    for (std::size_t i = 0; i < v.as_array().size(); ++i) {
      const auto& e = v.as_array()[i];
      if (!e.is_string() || e.as_string().str.empty()) bad("expected an array of non-empty strings");
      const std::string& str = e.as_string().str;
      if (!s->choices.empty() && std::find(s->choices.begin(), s->choices.end(), str) == s->choices.end())
        bad("\"" + str + "\" is not allowed; allowed: " + range_text(*s));
      for (std::size_t j = 0; j < i && !s->choices.empty(); ++j)  // a set of choices names each once
        if (v.as_array()[j].as_string().str == str) bad("\"" + str + "\" appears twice");
    }
    break;
  case KeyType::TableArray: {
    if (!v.is_array()) bad("expected " + type_name(s->type) + ": write each as a [[" + key + "]] block");
    if (v.as_array().size() > s->max) bad("at most " + std::to_string(static_cast<long long>(s->max)) + " tables");
    const std::string prefix = spec.key + ".";
    for (std::size_t i = 0; i < v.as_array().size(); ++i) {
      const toml::value& e = v.as_array()[i];
      const std::string at = key + "[" + std::to_string(i) + "]";
      if (!e.is_table()) throw InputError(where(at, &e) + ": " + key_text(at) + ": expected a table ([[" + key + "]] block)");
      std::vector<std::string> names;
      for (const auto& kv : e.as_table()) names.push_back(kv.first);
      std::sort(names.begin(), names.end());
      for (const auto& name : names) {
        const KeySpec* field = is_bare_key(name) ? schema.find(prefix + name) : nullptr;
        if (!field) {
          std::string fields;
          for (const auto& f : schema.keys)
            if (f.key.rfind(prefix, 0) == 0) fields += (fields.empty() ? "" : ", ") + f.key.substr(prefix.size());
          throw InputError(where(at + "." + name, &e.as_table().at(name)) + ": unknown key " +
                           key_text(at + "." + name) + " in a [[" + key + "]] table; allowed: " + fields);
        }
        check_value(*field, at + "." + name, e.as_table().at(name));
      }
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
  const auto dot = s.key.rfind('.');
  const KeySpec* parent = dot == std::string::npos ? nullptr : schema.find(s.key.substr(0, dot));
  return parent && parent->type == KeyType::TableArray;
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
