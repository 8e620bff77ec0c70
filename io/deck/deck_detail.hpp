#pragma once
// The deck engine's internals shared by its three files (not an interface of spotrun): the text helpers of
// messages (deck_text.cpp), the scanner that checks the text's limits and puts its tables in an order toml11
// reads, and toml11's messages rewritten (deck_scan.cpp); deck.cpp uses both.
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "deck.hpp"

namespace spotrun::io::deck_detail {

// --- deck_text.cpp: text for messages -----------------------------------------------------------------
bool is_utf8_continuation(char c);
// The offset of the first byte of s that is not part of a valid UTF-8 sequence, or s.size().
std::size_t invalid_utf8_at(std::string_view s);
std::size_t count_chars(std::string_view s);
std::size_t char_offset(std::string_view s, std::size_t n);
void append_escaped(std::string& out, std::string_view s, char q);
std::string clip(std::string_view text);
std::string cut(std::string_view text, std::size_t max);
std::size_t edit_distance(const std::string& a, const std::string& b);
std::string type_name(KeyType t);
std::string show(const toml::value& v);
std::string show_short(const toml::value& v);
std::string key_text(const std::string& key);
bool is_bare_key(std::string_view name);
std::vector<std::string> split_key(const std::string& key);
std::string range_text(const KeySpec& s);
toml::value parse_literal(const std::string& literal);
bool all_digits(std::string_view s);
std::optional<double> duration_number(std::string_view s, bool integer);

// --- deck_scan.cpp: the text before toml11 ------------------------------------------------------------
struct TextProblem {
  std::size_t line = 0, column = 0;  // 0: the whole text
  std::string what;
  bool integer_out_of_range = false;  // a literal that only a 64-bit overflow keeps from being an integer
};
// parse_literal's error for an integer literal out of TOML's 64-bit range (never taken for a bare word).
struct IntegerOutOfRange : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
// The text's limits checked (a problem, or none) and the offsets of its table headers.
struct ScannedText {
  std::optional<TextProblem> problem;
  std::vector<std::size_t> headers;
};
ScannedText scan_text(std::string_view text);
std::optional<TextProblem> check_text(std::string_view text);
std::string located(const std::string& name, const TextProblem& p);
// TOML text in an order toml11 reads and, when it had to change the order, the number in the original text
// of each of its lines (index: line - 1).
struct TableOrder {
  std::string text;
  std::vector<std::size_t> lines;  // empty: the text is the original
};
TableOrder order_tables(const std::string& text, const std::vector<std::size_t>& header_offsets);
std::string toml_error_message(const toml::exception& e, const std::string& name,
                               const std::function<std::size_t(std::size_t)>& original_line);
void check_key_names(const toml::value& v, const std::string& prefix, const std::string& deck_name,
                     const DeckSchema& schema, const std::function<std::size_t(std::size_t)>& original_line);

}  // namespace spotrun::io::deck_detail
