// The pair style registry (solvers/md/pair.hpp, pair_style.hpp): every registered style is a choice of
// md.pair.style in the deck schema and is documented; an unknown style's error, from the deck engine and
// from the solver alike, lists exactly the registered names; and the registry's machinery on a list with a
// second style that exists only in this test (its tables, its own coefficient check, the names).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/md/pair.hpp"
#include "support/input_error.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using namespace spotrun;
using test::input_error;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The double-quoted words of text, in order.
std::vector<std::string> quoted_words(const std::string& text) {
  std::vector<std::string> words;
  for (std::size_t a = text.find('"'); a != std::string::npos; a = text.find('"', a + 1)) {
    const std::size_t b = text.find('"', a + 1);
    if (b == std::string::npos) break;
    words.push_back(text.substr(a + 1, b - a - 1));
    a = b;
  }
  return words;
}

// The names a message gives after its last "allowed:".
std::vector<std::string> allowed_in(const std::string& message) {
  const std::size_t at = message.rfind("allowed:");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no 'allowed:' in: " << message;
    return {};
  }
  return quoted_words(message.substr(at));
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

const std::string k_unknown = "buck/coul/long";

}  // namespace

TEST(PairStyles, NamesAreUniqueBareWords) {
  const auto names = md::pair_style_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << "a style registered twice";
  for (const auto& n : names) {
    EXPECT_FALSE(n.empty());
    EXPECT_EQ(n.find_first_of("\"' \t"), std::string::npos) << "style name '" << n << "'";
  }
  EXPECT_EQ(std::find(names.begin(), names.end(), k_unknown), names.end()) << "the test's unknown style is registered";
}

// The deck schema's choices of md.pair.style are the registered styles, in their order, and its default is one.
TEST(PairStyles, AreTheChoicesOfTheDeckKey) {
  const io::KeySpec* key = launcher::find_key("md.pair.style");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->choices, md::pair_style_names());
  const auto def = quoted_words(key->default_value);
  ASSERT_EQ(def.size(), 1u) << key->default_value;
  const auto names = md::pair_style_names();
  EXPECT_NE(std::find(names.begin(), names.end(), def[0]), names.end()) << "default " << key->default_value;
  // A deck with each registered style validates.
  for (const auto& n : names)
    EXPECT_NO_THROW(launcher::Deck::parse("[md.pair]\nstyle = \"" + n + "\"\n", "deck.toml").validate()) << n;
}

// docs/decks.md's row of md.pair.style allows exactly the registered styles; docs/md.md has a section on each.
TEST(PairStyles, AreDocumented) {
  const std::string decks = read_text(std::string(SPOTRUN_SOURCE_DIR) + "/docs/decks.md");
  const std::string guide = read_text(std::string(SPOTRUN_SOURCE_DIR) + "/docs/md.md");
  ASSERT_FALSE(decks.empty()) << "docs/decks.md";
  ASSERT_FALSE(guide.empty()) << "docs/md.md";
  const std::string row_start = "| `md.pair.style` |";
  const std::size_t at = decks.find(row_start);
  ASSERT_NE(at, std::string::npos) << "docs/decks.md has no row for md.pair.style";
  const std::string row = decks.substr(at, decks.find('\n', at) - at);
  // | key | type | unit | default | allowed | meaning |: the allowed values are the fifth cell.
  std::vector<std::string> cells;
  std::stringstream s(row);
  for (std::string cell; std::getline(s, cell, '|');) cells.push_back(cell);
  ASSERT_GE(cells.size(), 7u) << row;
  EXPECT_EQ(sorted(quoted_words(cells[5])), sorted(md::pair_style_names()))
      << "allowed values in docs/decks.md: " << row;
  for (const auto& n : md::pair_style_names())
    EXPECT_NE(guide.find("## Pair potential: " + n + "\n"), std::string::npos)
        << "docs/md.md has no section '## Pair potential: " << n << "'";
}

// An unknown style: the deck engine's error (validate, run) and the solver's (a configuration made in code)
// name it and list exactly the registered styles.
TEST(PairStyles, UnknownStyleErrorListsExactlyTheRegisteredNames) {
  const std::string deck_error = input_error(
      [] { launcher::Deck::parse("[md.pair]\nstyle = \"" + k_unknown + "\"\n", "deck.toml").validate(); });
  EXPECT_NE(deck_error.find("md.pair.style"), std::string::npos) << deck_error;
  EXPECT_NE(deck_error.find(k_unknown), std::string::npos) << deck_error;
  EXPECT_EQ(allowed_in(deck_error), md::pair_style_names()) << deck_error;

  md::MdConfig c;
  const auto coeffs = md::resolve_pair_coeffs(c, {"1"});
  c.pair_style = k_unknown;
  for (const auto& f : std::vector<std::function<void()>>{[&] { md::resolve_pair_coeffs(c, {"1"}); },
                                                           [&] { md::check_pair_style(c, coeffs); },
                                                           [&] { md::make_pair(c, coeffs); }}) {
    const std::string e = input_error(f);
    EXPECT_NE(e.find("md.pair.style"), std::string::npos) << e;
    EXPECT_NE(e.find("'" + k_unknown + "'"), std::string::npos) << e;
    EXPECT_EQ(allowed_in(e), md::pair_style_names()) << e;
  }
}

// --- the machinery on a list of two styles ---------------------------------------------------------------

namespace {

// A harmonic soft repulsion, E = eps (1 - r/rc)^2, which refuses a negative well depth: a style that exists
// only here.
template <class Real>
struct PairSoftT {
  using real_type = Real;
  Real eps = 0, rc = 0, cutsq = 0;
  PairSoftT() = default;
  PairSoftT(double epsilon, double cutoff) : eps(Real(epsilon)), rc(Real(cutoff)), cutsq(Real(cutoff * cutoff)) {}
  KOKKOS_INLINE_FUNCTION void compute(Real rsq, Real& fpair, Real& energy) const {
    const Real r = std::sqrt(rsq), x = Real(1) - r / rc;
    energy = eps * x * x;
    fpair = Real(2) * eps * x / (rc * r);
  }
  KOKKOS_INLINE_FUNCTION void compute_force(Real rsq, Real& fpair) const {
    Real e;
    compute(rsq, fpair, e);
  }
};

int g_soft_checks = 0;

struct Soft {
  static constexpr const char* name = "soft";
  static constexpr md::PairParam params[] = {
      {"epsilon", "epsilon", "Soft repulsion strength", 0, 1e9, "1.0", md::PairParamMix::Geometric}};
  static constexpr const char* contact = "epsilon";
  template <class Real>
  using Evaluator = PairSoftT<Real>;
  template <class Real>
  static Evaluator<Real> evaluator(const md::PairCoeffs& c, int ti, int tj, const md::MdConfig&) {
    return Evaluator<Real>(c.value(0, ti, tj), c.at(c.cutoff, ti, tj));
  }
  static void check_coeffs(const md::PairCoeffs& c, const md::MdConfig&) {
    ++g_soft_checks;
    for (int i = 1; i <= c.ntypes; ++i)
      if (c.value(0, i, i) > 10)
        throw InputError("soft: type \"" + c.names[i - 1] + "\" has epsilon > 10");
  }
};

using TwoStyles = md::PairStyleList<md::LjCut, Soft>;

}  // namespace

TEST(PairStyles, ListOfTwoStyles) {
  EXPECT_EQ(TwoStyles::names(), (std::vector<std::string>{"lj/cut", "soft"}));
  // Each style at both precisions.
  EXPECT_EQ(std::variant_size_v<TwoStyles::AnyPair>, 4u);
  EXPECT_EQ(std::variant_size_v<md::AnyPair>, 2 * md::pair_style_names().size());

  md::MdConfig c;
  c.pair_defaults = {{"epsilon", 2.0}, {"sigma", 1.0}};
  c.cutoff = 1.5;
  c.pair_coeffs = {{"2", "2", {{"epsilon", 0.5}, {"sigma", 1.0}}, 1.2}};
  const auto coeffs = md::resolve_pair_coeffs(c, {"1", "2"});

  // lj/cut: no coefficient check of its own; the same table as the registry's.
  g_soft_checks = 0;
  const auto lj = TwoStyles::make(c, coeffs);
  EXPECT_TRUE(std::holds_alternative<md::PairTable<md::PairLJCut>>(lj));
  EXPECT_EQ(g_soft_checks, 0);

  c.pair_style = "soft";
  c.precision = md::Precision::Mixed;
  const auto soft = TwoStyles::make(c, coeffs);
  ASSERT_TRUE(std::holds_alternative<md::PairTable<PairSoftT<float>>>(soft));
  EXPECT_EQ(g_soft_checks, 1);
  const auto table =
      Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), std::get<md::PairTable<PairSoftT<float>>>(soft).table);
  ASSERT_EQ(table.extent(0), 3u);
  EXPECT_EQ(table(1, 1).eps, 2.0f);
  EXPECT_EQ(table(2, 2).eps, 0.5f);
  EXPECT_EQ(table(1, 2).eps, float(std::sqrt(2.0 * 0.5)));
  EXPECT_EQ(table(2, 1).rc, float(std::sqrt(1.5 * 1.2)));

  // The style's own check runs in check() (validate) and in make() (run).
  c.pair_defaults = {{"epsilon", 20.0}};
  c.pair_coeffs = {{"2", "2", {{"epsilon", 0.5}}, 1.2}};
  const auto strong = TwoStyles::resolve(c, {"1", "2"});
  EXPECT_EQ(input_error([&] { TwoStyles::check(c, strong); }), "soft: type \"1\" has epsilon > 10");
  EXPECT_EQ(input_error([&] { TwoStyles::make(c, strong); }), "soft: type \"1\" has epsilon > 10");

  c.pair_style = k_unknown;
  const std::string e = input_error([&] { TwoStyles::make(c, coeffs); });
  EXPECT_EQ(e, "md.pair.style: pair style '" + k_unknown + "' is not known; allowed: \"lj/cut\", \"soft\"");
}
