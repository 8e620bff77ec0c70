// The deck engine before toml11 (deck_detail.hpp): the limits of the text, the order of its tables, and
// toml11's messages rewritten with the file's own lines.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <sstream>

#include "comm/errors.hpp"
#include "deck_detail.hpp"

namespace spotrun::io::deck_detail {

// --- The limits of the text, checked before toml11 parses it -------------------------------------------



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


ScannedText scan_text(std::string_view text) {
  TextScanner scanner(text);
  ScannedText s;
  s.problem = scanner.run();
  s.headers = scanner.headers();
  return s;
}

}  // namespace spotrun::io::deck_detail
