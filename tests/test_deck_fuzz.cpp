// launcher::load_deck on several hundred deterministic mutations of real decks (the shipped inputs and the
// decks of the tests): byte flips, deletions and insertions, duplicated, dropped and truncated lines,
// lines spliced between decks, TOML tokens, deep nesting, long arrays, long strings, quoted dotted keys,
// duplicate tables, values of the wrong type. Whatever the text, every rank must reach the same verdict:
// the deck loads, or load_deck throws InputError (never another exception, never a crash) with the same
// message on every rank, a message of a few hundred characters that names the deck; each load takes well
// under a second, and loading the same file again gives the same verdict. Mutations that break a rule for
// sure (nesting beyond the limit, a quoted dotted key, ...) must be refused with the message of that rule.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "launcher/run/run.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2);

namespace {

namespace fs = std::filesystem;
using spotrun::test::world;

// splitmix64: the same sequence on every rank and with every standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : m_state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0.
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }

 private:
  std::uint64_t m_state;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The decks every mutation starts from: inputs/*.toml (sorted by name) and decks of the other tests.
std::vector<std::string> seed_decks() {
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(fs::path(SPOTRUN_SOURCE_DIR) / "inputs"))
    if (e.path().extension() == ".toml") inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  std::vector<std::string> seeds;
  for (const auto& p : inputs) seeds.push_back(read_text(p));
  // tests/data/custom-deck.toml (a value for most keys) and the other decks of tests/test_deck.cpp (a
  // data file, quotes and backslashes in a path).
  seeds.push_back(read_text(fs::path(SPOTRUN_TEST_DATA_DIR) / "custom-deck.toml"));
  seeds.push_back("[run]\nsteps = 7\n[md.initial]\nlammps_data = \"data/lj.data\"\n");
  seeds.push_back("[run]\noutput_dir = 'C:\\runs\\lj \"melt\"'\ntime_limit = \"01:02:03\"\n");
  // tests/cli/cli_test.sh good_deck and a checkpointing deck with a time limit.
  seeds.push_back(R"([run]
steps = 20
thermo_every = 10

[md]
dt = 0.002
neighbor_every = 1

[md.lattice]
cells = [6, 4, 4]
temperature = 1.0
)");
  seeds.push_back(R"([run]
steps = 4000
thermo_every = 100
time_limit = 02:00:00

[checkpoint]
every_steps = 500
every_seconds = 60.5
interval = "auto"
mtbf = 3600
keep = 3
on_error = "abort"
safety_factor = 1.5
)");
  seeds.push_back(R"([run]
solver = "fluid"
steps = 50
time_limit = "1-00:30:00"

[fluid]
n = [16, 16, 8]
viscosity = 0.02
init = "random"
seed = 7
random_peak = 3.0
random_energy = 0.25
forcing = "linear"
forcing_rate = 0.2
forcing_kmax = 2.0
dealias = "none"
fft_plan = "estimate"
decomposition = "pencil"
cfl = 0.4
cfl_limit = 0.9
time_end = 1.5
blowup_factor = 50.0
)");
  return seeds;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string l;
  std::istringstream in(text);
  while (std::getline(in, l)) lines.push_back(l);
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Indices of the lines "key = value" of a deck (not headers, comments or blank lines).
std::vector<std::size_t> key_lines(const std::vector<std::string>& lines) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto first = lines[i].find_first_not_of(" \t");
    if (first != std::string::npos && lines[i][first] != '#' && lines[i][first] != '[' &&
        lines[i].find('=') != std::string::npos)
      out.push_back(i);
  }
  return out;
}

const std::vector<std::string>& tokens() {
  static const std::vector<std::string> t = {
      "[[", "]]", "[", "]", "{", "}", "\"\"\"", "'''", "'", "\"", "\\u0000", "\\", "=", "==", ".", ",", "#", "\n",
      "\r", "\t", "1e999", "-1e999", "-0", "-0.0", "nan", "-nan", "+inf", "inf", "99999999999999999999999",
      "-9223372036854775809", "0x7fffffffffffffff", "0b102", "1_000", "1__0", "07:32:00", "25:00:00",
      "1979-05-27T07:32:00Z", "1979-13-27", "true", "fals", "\"md.dt\"", "[\"md.pair\"]", "[[md]]", "a.b.c.d.e.f.g.h.i",
      "\xc3\xa5", "\xff\xfe", "\x01", "\x7f", "\\U0010FFFF", "\\uD800", "\"\"", "{}", "[]", "=\"x\""};
  return t;
}

const std::vector<std::string>& wrong_values() {
  static const std::vector<std::string> v = {
      "\"str\"", "true", "[1, 2, 3]", "[1, 2]", "[1, 2, 3.5]", "{a = 1}", "1979-05-27", "07:32:00", "\"1.2.3\"",
      "\"1-12:00:00\"", "\"25:00:00\"", "-1", "0", "1e999", "-0", "nan", "inf", "9223372036854775807", "1.5", "\"\"",
      "\"a\\u0000b\"", "\"\\u001f\"", "'''x'''", "[[1, 2, 3]]", "[\"a\", \"b\", \"c\"]", "\"nve\"", "\"fluid\""};
  return v;
}

struct Mutant {
  std::string text;
  std::string kind;
  std::string must_say;  // non-empty: the deck must be refused with this in the message
};

std::string nest(std::size_t depth, bool one_per_line) {
  std::string open, close;
  for (std::size_t i = 0; i < depth; ++i) {
    open += std::string(i % 3 == 2 ? "{a = " : "[") + (one_per_line ? "\n" : "");
    close = (i % 3 == 2 ? "}" : "]") + std::string(one_per_line ? "\n" : "") + close;
  }
  return open + "1" + close;
}

// One mutation of text; kinds that break a rule for sure set must_say.
Mutant mutate_once(const std::string& text, const std::vector<std::string>& seeds, Rng& rng) {
  std::vector<std::string> lines = split_lines(text);
  const std::vector<std::size_t> keys = key_lines(lines);
  auto set_value = [&](const std::string& value) {
    if (keys.empty()) return join_lines(lines) + "x = " + value + "\n";
    const std::size_t i = rng.pick(keys);
    lines[i] = lines[i].substr(0, lines[i].find('=') + 1) + " " + value;
    return join_lines(lines);
  };
  std::string t = text;
  switch (rng.below(16)) {
    case 0: {  // flip a byte
      if (!t.empty()) t[rng.below(t.size())] = static_cast<char>(rng.below(256));
      return {t, "flip", ""};
    }
    case 1: {  // delete bytes
      if (!t.empty()) t.erase(rng.below(t.size()), 1 + rng.below(4));
      return {t, "delete", ""};
    }
    case 2: {  // insert a byte
      t.insert(t.begin() + static_cast<std::ptrdiff_t>(rng.below(t.size() + 1)), static_cast<char>(rng.below(256)));
      return {t, "insert", ""};
    }
    case 3: {  // duplicate a line
      if (!lines.empty()) {
        const std::size_t i = rng.below(lines.size());
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), lines[i]);
      }
      return {join_lines(lines), "duplicate line", ""};
    }
    case 4: {  // drop a line, or truncate the text
      if (rng.below(2) && !lines.empty()) {
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(rng.below(lines.size())));
        return {join_lines(lines), "drop line", ""};
      }
      t.resize(rng.below(t.size() + 1));
      return {t, "truncate", ""};
    }
    case 5: {  // splice a line of another deck in
      const auto other = split_lines(rng.pick(seeds));
      if (!other.empty())
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(rng.below(lines.size() + 1)), rng.pick(other));
      return {join_lines(lines), "splice", ""};
    }
    case 6:
    case 7: {  // a TOML token anywhere
      t.insert(rng.below(t.size() + 1), rng.pick(tokens()));
      return {t, "token", ""};
    }
    case 8:  // a value of another type or form
      return {set_value(rng.pick(wrong_values())), "wrong value", ""};
    case 9: {  // nesting: within the limit (then the key is wrong) or beyond it
      const std::vector<std::size_t> depths = {1, 8, 9, 64, 10000};
      const std::size_t d = rng.pick(depths);
      const std::string value = nest(d, d == 10000);
      return {set_value(value), "nesting " + std::to_string(d), d > 8 ? "nested more than 8 deep" : ""};
    }
    case 10: {  // arrays: within the limit or beyond it (one element per line: lines stay short)
      const std::vector<std::size_t> sizes = {0, 3, 1024, 1025, 5000};
      const std::size_t n = rng.pick(sizes);
      std::string value = "[";
      for (std::size_t i = 0; i < n; ++i) value += (i ? ",\n" : "") + std::to_string(i % 10);
      return {set_value(value + "]"), "array " + std::to_string(n), n > 1024 ? "more than 1024 elements" : ""};
    }
    case 11: {  // a quoted dotted key or table name
      std::vector<std::size_t> headers;
      for (std::size_t i = 0; i < lines.size(); ++i)
        // Tables, not arrays of tables ([[md.types]]: its quoted form is malformed TOML, not a quoted name).
        if (lines[i].rfind("[", 0) == 0 && lines[i].rfind("[[", 0) != 0 && lines[i].find('.') != std::string::npos)
          headers.push_back(i);
      if (!headers.empty() && rng.below(2)) {
        const std::size_t i = rng.pick(headers);
        const auto close = lines[i].find(']');
        lines[i] = "[\"" + lines[i].substr(1, close - 1) + "\"]" + lines[i].substr(close + 1);
        return {join_lines(lines), "quoted dotted table", "is quoted and contains a dot"};
      }
      if (keys.empty()) return {"\"md.dt\" = 0.5\n" + t, "quoted dotted key", "is quoted and contains a dot"};
      const std::size_t i = rng.pick(keys);
      const auto first = lines[i].find_first_not_of(" \t");
      const auto eq = lines[i].find('=');
      std::string key = lines[i].substr(first, eq - first);
      key.erase(key.find_last_not_of(" \t") + 1);
      lines[i] = "\"md." + key + "\" " + lines[i].substr(eq);
      return {join_lines(lines), "quoted dotted key", "is quoted and contains a dot"};
    }
    case 12: {  // a table defined twice
      std::vector<std::string> headers;
      for (const auto& l : lines)
        if (l.rfind("[", 0) == 0 && l.rfind("[[", 0) != 0) headers.push_back(l);
      if (headers.empty()) return {t + "[run]\n[run]\n", "duplicate table", "defined twice"};
      return {t + rng.pick(headers) + "\n", "duplicate table", "defined twice"};
    }
    case 13: {  // long strings: within the line limit, beyond it, and long over many lines
      const std::vector<std::size_t> sizes = {100, 8000, 9000, 200000};
      const std::size_t n = rng.pick(sizes);
      if (n == 200000) {
        std::string ml = "\"\"\"\\\n";
        for (std::size_t i = 0; i < n / 100; ++i) ml += std::string(100, 'a') + "\\\n";
        return {set_value(ml + "\"\"\""), "multi-line string", ""};
      }
      return {set_value("\"" + std::string(n, 's') + "\""), "string " + std::to_string(n),
              n > 8150 ? "the longest is 8192" : ""};
    }
    case 14: {  // NUL bytes and text over 1 MiB
      if (rng.below(2)) {
        t.insert(rng.below(t.size() + 1), std::string(1, '\0'));
        return {t, "NUL", "NUL byte"};
      }
      while (t.size() <= spotrun::launcher::k_deck_max_bytes) t += "# " + std::string(200, 'c') + "\n";
      return {t, "over 1 MiB", "1048576"};  // the reader of the file or Deck::parse
    }
    default: {  // many keys or tables
      std::string extra;
      const bool tables = rng.below(2);
      for (int i = 0; i < 5000; ++i)
        extra += tables ? "[t" + std::to_string(i) + "]\n" : "k" + std::to_string(i) + " = 1\n";
      return {t + extra, tables ? "5000 tables" : "5000 keys", "names and array elements in all"};
    }
  }
}

std::vector<Mutant> make_mutants(const std::vector<std::string>& seeds, int count) {
  Rng rng(20240611);
  std::vector<Mutant> out;
  for (int i = 0; i < count; ++i) {
    const std::string& seed = seeds[static_cast<std::size_t>(i) % seeds.size()];
    if (i % 4 == 3) {  // two to four mutations on top of each other: no rule is sure to be broken
      Mutant m{seed, "", ""};
      const std::size_t n = 2 + rng.below(3);
      for (std::size_t k = 0; k < n; ++k) {
        Mutant next = mutate_once(m.text, seeds, rng);
        m.text = next.text;
        m.kind += (k ? "+" : "") + next.kind;
      }
      out.push_back(m);
    } else {
      out.push_back(mutate_once(seed, seeds, rng));
    }
  }
  return out;
}

struct Verdict {
  bool loaded = false;
  bool other_exception = false;
  std::string message;  // InputError's message, or the other exception's type and message
  std::string text() const {
    return other_exception ? "OTHER: " + message : loaded ? "loaded" : "InputError: " + message;
  }
};

Verdict load(const std::string& path) {
  Verdict v;
  try {
    const auto deck = spotrun::launcher::load_deck(world(), path, {});
    v.loaded = true;
    // A loaded deck resolves to a deck that loads again (checkpoints hold it; a resume parses it).
    try {
      spotrun::launcher::Deck back = spotrun::launcher::Deck::parse(deck.resolved(), "resolved.toml");
      back.validate();
    } catch (const std::exception& e) {
      v.other_exception = true;
      v.message = std::string("its resolved deck does not load: ") + e.what();
    }
  } catch (const spotrun::InputError& e) {
    v.message = e.what();
  } catch (const std::exception& e) {
    v.other_exception = true;
    v.message = std::string(typeid(e).name()) + ": " + e.what();
  }
  return v;
}

// A printable excerpt of a deck for failure messages.
std::string excerpt(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 300)) out += (static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f ? '?' : c;
  return out + (text.size() > 300 ? "... (" + std::to_string(text.size()) + " bytes)" : "");
}

}  // namespace

TEST(DeckFuzz, EveryMutationLoadsOrIsRefusedAlikeOnEveryRankQuickly) {
  // A private directory for the decks, made on rank 0 (load_deck reads on rank 0 only).
  std::string dir;
  if (spotrun::test::is_root()) {
    std::string pattern = (fs::temp_directory_path() / "spotrun-deck-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data())) dir = pattern;
  }
  dir = world().broadcast(dir);
  ASSERT_FALSE(dir.empty()) << "cannot make a temporary directory";  // same on every rank: before any collective

  const auto seeds = seed_decks();
  constexpr int k_count = 720;
  const auto mutants = make_mutants(seeds, k_count);
  const auto again = make_mutants(seeds, k_count);
  bool same_mutants = mutants.size() == again.size();
  for (std::size_t i = 0; same_mutants && i < mutants.size(); ++i) same_mutants = mutants[i].text == again[i].text;
  EXPECT_TRUE(same_mutants) << "the mutations are not deterministic";

  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) {
    if (failures.size() < 20) failures.push_back(what);
  };
  const std::size_t k_max_message = 600;  // characters besides the deck's path
  int loaded = 0, refused = 0, seeds_loaded = 0;
  double slowest = 0;
  std::string slowest_kind;
  std::size_t longest = 0;
  std::string longest_message;

  // The seeds themselves load.
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = dir + "/seed-" + std::to_string(i) + ".toml";
    if (spotrun::test::is_root()) std::ofstream(path, std::ios::binary) << seeds[i];
    const Verdict v = load(path);
    seeds_loaded += v.loaded ? 1 : 0;
    if (!v.loaded) fail("seed " + std::to_string(i) + " does not load: " + v.text());
  }

  for (std::size_t i = 0; i < mutants.size(); ++i) {
    const Mutant& m = mutants[i];
    char name[32];
    std::snprintf(name, sizeof name, "/deck-%03zu.toml", i);
    const std::string path = dir + name;
    if (spotrun::test::is_root()) std::ofstream(path, std::ios::binary | std::ios::trunc) << m.text;
    double t0 = MPI_Wtime();
    const Verdict v = load(path);
    double seconds = world().max(MPI_Wtime() - t0);
    t0 = MPI_Wtime();
    const Verdict second = load(path);  // the same file again
    // The load time is the faster of the two (and of a third where both reached the bound): a parser
    // that is slow on a deck is slow every time, a machine busy with other work only now and then.
    seconds = std::min(seconds, world().max(MPI_Wtime() - t0));
    if (seconds >= 1.0) {
      t0 = MPI_Wtime();
      (void)load(path);
      seconds = std::min(seconds, world().max(MPI_Wtime() - t0));
    }
    const auto all = world().all_gather(v.text());
    const std::string where = "deck " + std::to_string(i) + " (" + m.kind + "):\n" + excerpt(m.text) + "\n-> ";

    if (v.loaded) ++loaded;
    else ++refused;
    if (seconds > slowest) {
      slowest = seconds;
      slowest_kind = m.kind;
    }
    if (v.other_exception) fail(where + "not an InputError: " + v.message);
    for (std::size_t r = 0; r < all.size(); ++r)
      if (all[r] != all[0]) fail(where + "rank " + std::to_string(r) + ": " + all[r] + "\nrank 0: " + all[0]);
    if (second.text() != v.text()) fail(where + "a second load differs: " + second.text() + "\nfirst: " + v.text());
    if (seconds >= 1.0) fail(where + "took " + std::to_string(seconds) + " s");
    if (!v.loaded) {
      if (v.message.find(path) == std::string::npos)
        fail(where + "the message does not name " + path + ": " + v.message);
      const std::size_t length = v.message.size() - std::min(v.message.size(), path.size());
      if (length > longest) {
        longest = length;
        longest_message = v.message;
      }
      if (length > k_max_message) fail(where + "a message of " + std::to_string(v.message.size()) + " characters");
    }
    if (!m.must_say.empty() && (v.loaded || v.message.find(m.must_say) == std::string::npos))
      fail(where + "expected a refusal with '" + m.must_say + "', got " + v.text());
  }
  if (spotrun::test::is_root()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  EXPECT_EQ(seeds_loaded, static_cast<int>(seeds.size()));
  // Both outcomes are exercised (a fuzzer whose decks all fail at the first byte tests little).
  EXPECT_GE(loaded, k_count / 20);
  EXPECT_GE(refused, k_count / 4);
  for (const auto& f : failures) ADD_FAILURE() << f;
  spotrun::test::report(std::to_string(mutants.size()) + " mutated decks at " +
                        std::to_string(spotrun::test::nranks()) + " rank(s): " + std::to_string(loaded) + " loaded, " +
                        std::to_string(refused) + " refused (InputError, the same on every rank); slowest load " +
                        std::to_string(slowest * 1e3) + " ms (" + slowest_kind + "); longest message " +
                        std::to_string(longest) + " characters besides the path");
  if (!longest_message.empty()) spotrun::test::report("longest message: " + longest_message);
}
