// launcher::Deck: TOML decks validated against the schema (launcher/deck/deck_schema.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "launcher/run/progress.hpp"
#include "launcher/run/run.hpp"
#include "solvers/md/md_registration.hpp"
#include "support/input_error.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using spotrun::InputError;
using spotrun::test::input_error;
using spotrun::launcher::Deck;
using spotrun::launcher::KeyType;

namespace {

std::string validate_error(const std::string& toml) {
  return input_error([&] { Deck::parse(toml, "deck.toml").validate(); });
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

Deck valid(const std::string& toml) {
  Deck d = Deck::parse(toml, "deck.toml");
  d.validate();
  return d;
}

// Every schema key reads the same from both decks.
void expect_same_values(const Deck& a, const Deck& b) {
  for (const auto& s : spotrun::launcher::deck_schema()) {
    if (s.default_value.empty() && !a.has(s.key) && !b.has(s.key)) continue;
    SCOPED_TRACE(s.key);
    switch (s.type) {
      case KeyType::Int: EXPECT_EQ(a.get_int(s.key), b.get_int(s.key)); break;
      case KeyType::Float: EXPECT_EQ(a.get_float(s.key), b.get_float(s.key)); break;
      case KeyType::Bool: EXPECT_EQ(a.get_bool(s.key), b.get_bool(s.key)); break;
      case KeyType::String: EXPECT_EQ(a.get_string(s.key), b.get_string(s.key)); break;
      case KeyType::Int3: EXPECT_EQ(a.get_int3(s.key), b.get_int3(s.key)); break;
      case KeyType::Float3: EXPECT_EQ(a.get_float3(s.key), b.get_float3(s.key)); break;
      case KeyType::Duration: EXPECT_EQ(a.get_seconds(s.key), b.get_seconds(s.key)); break;
      case KeyType::Strings: EXPECT_EQ(a.get_strings(s.key), b.get_strings(s.key)); break;
      case KeyType::TableArray: EXPECT_EQ(a.count(s.key), b.count(s.key)); break;
    }
  }
}

// tests/data/custom-deck.toml: a deck with a value for most keys (also a seed of the deck fuzz test).
std::string custom_deck() {
  std::ifstream in(std::string(SPOTRUN_TEST_DATA_DIR) + "/custom-deck.toml", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(Deck, EmptyDeckHasTheDefaults) {
  const Deck d = valid("");
  EXPECT_EQ(d.get_string("run.solver"), "md");
  EXPECT_EQ(d.get_int("run.steps"), 1000);
  EXPECT_EQ(d.get_int("run.thermo_every"), 100);
  EXPECT_EQ(d.get_string("run.output_dir"), "");
  EXPECT_EQ(d.get_float("md.dt"), 0.005);
  EXPECT_EQ(d.get_float("md.cutoff"), 2.5);
  EXPECT_EQ(d.get_float("md.skin"), 0.3);
  EXPECT_EQ(d.get_int("md.neighbor_every"), 1);
  EXPECT_TRUE(d.get_bool("md.neighbor_check"));
  EXPECT_EQ(d.get_string("md.ensemble"), "nve");
  EXPECT_EQ(d.get_string("md.pair.style"), "lj/cut");
  EXPECT_EQ(d.get_float("md.pair.epsilon"), 1.0);
  EXPECT_EQ(d.get_float("md.pair.sigma"), 1.0);
  EXPECT_FALSE(d.get_bool("md.pair.shift"));
  EXPECT_EQ(d.get_string("md.lattice.type"), "fcc");
  EXPECT_EQ(d.get_float("md.lattice.density"), 0.8442);
  EXPECT_EQ(d.get_int3("md.lattice.cells"), (std::array<int, 3>{10, 10, 10}));
  EXPECT_EQ(d.get_string("md.initial.lammps_data"), "");
  EXPECT_FALSE(d.has("md.initial.lammps_data"));
}

// The schema defaults and the defaults of md::MdConfig must not drift apart.
TEST(Deck, SchemaDefaultsMatchMdConfigDefaults) {
  const auto c = spotrun::md::config_from_deck(valid(""));
  const spotrun::md::MdConfig d;
  EXPECT_EQ(c.dt, d.dt);
  EXPECT_EQ(c.cutoff, d.cutoff);
  EXPECT_EQ(c.skin, d.skin);
  EXPECT_EQ(c.neighbor_every, d.neighbor_every);
  EXPECT_EQ(c.neighbor_check, d.neighbor_check);
  EXPECT_EQ(c.ensemble, d.ensemble);
  EXPECT_EQ(c.temperature, d.temperature);
  EXPECT_EQ(c.damp, d.damp);
  EXPECT_EQ(c.seed, d.seed);
  EXPECT_EQ(c.pair_style, d.pair_style);
  EXPECT_EQ(c.pair_defaults, d.pair_defaults);
  EXPECT_EQ(c.shift, d.shift);
  EXPECT_EQ(c.from_lattice, d.from_lattice);
  EXPECT_EQ(c.lattice_type, d.lattice_type);
  EXPECT_EQ(c.density, d.density);
  EXPECT_EQ(c.cells, d.cells);
  EXPECT_EQ(c.lattice_temperature, d.lattice_temperature);
  EXPECT_EQ(c.lattice_seed, d.lattice_seed);
}

TEST(Deck, CustomValuesReachMdConfig) {
  const auto c = spotrun::md::config_from_deck(valid(custom_deck()));
  EXPECT_EQ(c.dt, 0.0025);
  EXPECT_EQ(c.cutoff, 3.0);
  EXPECT_EQ(c.neighbor_every, 5);
  EXPECT_FALSE(c.neighbor_check);
  EXPECT_EQ(c.ensemble, spotrun::md::Ensemble::Langevin);
  EXPECT_EQ(c.damp, 1e-5);
  EXPECT_EQ(c.seed, 9000000000000000000ull);
  EXPECT_EQ(c.pair_defaults, (std::vector<std::pair<std::string, double>>{{"epsilon", 2.0}, {"sigma", 1.3}}));
  EXPECT_TRUE(c.shift);
  EXPECT_EQ(c.cells, (std::array<int, 3>{6, 4, 5}));
  EXPECT_EQ(c.lattice_temperature, 3.0);
  EXPECT_TRUE(c.from_lattice);
}

TEST(Deck, UnknownKeyNamesTheKeyAndTheClosestValidKey) {
  struct Case {
    const char* toml;
    const char* key;
    const char* closest;
  };
  for (const Case& c : {Case{"[md]\ndtt = 0.01\n", "md.dtt", "md.dt"},
                        Case{"[md.pair]\nepsilom = 1.0\n", "md.pair.epsilom", "md.pair.epsilon"},
                        Case{"[run]\nstepz = 10\n", "run.stepz", "run.steps"},
                        Case{"[md]\nneighbour_every = 2\n", "md.neighbour_every", "md.neighbor_every"},
                        Case{"[md.lattice]\ncell = [2, 2, 2]\n", "md.lattice.cell", "md.lattice.cells"},
                        Case{"steps = 10\n", "steps", "run.steps"}}) {
    const std::string msg = validate_error(c.toml);
    EXPECT_CONTAINS(msg, "deck.toml");
    EXPECT_CONTAINS(msg, std::string("'") + c.key + "'");
    EXPECT_CONTAINS(msg, std::string("did you mean '") + c.closest + "'");
  }
  EXPECT_EQ(spotrun::launcher::closest_key("md.dtt"), "md.dt");
  EXPECT_EQ(spotrun::launcher::closest_key("md.pair.epsilom"), "md.pair.epsilon");
  EXPECT_EQ(spotrun::launcher::closest_key("run.dt"), "md.dt");
  EXPECT_EQ(spotrun::launcher::find_key("md.dtt"), nullptr);
  ASSERT_NE(spotrun::launcher::find_key("md.pair.epsilon"), nullptr);
  EXPECT_EQ(spotrun::launcher::find_key("md.pair.epsilon")->type, KeyType::Float);
}

TEST(Deck, WrongTypeNamesKeyValueAndExpectedType) {
  struct Case {
    const char* toml;
    std::vector<const char*> parts;
  };
  for (const Case& c : {Case{"[md]\ndt = \"fast\"\n", {"md.dt", "\"fast\"", "a number"}},
                        Case{"[md]\nneighbor_check = 1\n", {"md.neighbor_check", "= 1", "true or false"}},
                        Case{"[run]\nsteps = 1.5\n", {"run.steps", "1.5", "an integer"}},
                        Case{"[md.lattice]\ncells = [4, 4]\n", {"md.lattice.cells", "[4, 4]", "3 integers"}},
                        Case{"[md.lattice]\ncells = [4, 4, 4.5]\n", {"md.lattice.cells", "4.5", "3 integers"}},
                        Case{"[md]\nensemble = 2\n", {"md.ensemble", "= 2", "a string"}}}) {
    const std::string msg = validate_error(c.toml);
    EXPECT_CONTAINS(msg, "deck.toml");
    for (const char* p : c.parts) EXPECT_CONTAINS(msg, p);
  }
}

// Integer keys state both bounds in full; literals beyond TOML's 64-bit integers are refused as such
// (toml11 alone saturates 9223372036854775808 to 9223372036854775807), in a deck and through --set.
TEST(Deck, IntegerBoundsAreStatedAndOverflowingLiteralsRefused) {
  EXPECT_CONTAINS(validate_error("[run]\nsteps = 9223372036854775807\n"),
                  "key 'run.steps' = 9223372036854775807: out of range; allowed: >= 0 and <= 1000000000000000");
  EXPECT_CONTAINS(validate_error("[run]\nthermo_every = 1000000000000001\n"), ">= 1 and <= 1000000000000000");
  EXPECT_CONTAINS(validate_error("[md.lattice]\nseed = 9223372036854775807\n"),
                  ">= 1 and <= 9200000000000000000");
  for (const char* literal : {"9223372036854775808", "-9223372036854775809", "99999999999999999999",
                              "0x8000000000000000", "0o1000000000000000000000", "9_223_372_036_854_775_808"}) {
    for (const char* key : {"run.steps", "run.thermo_every", "md.lattice.seed"}) {
      const std::string k(key), section = k.substr(0, k.rfind('.')), name = k.substr(k.rfind('.') + 1);
      const std::string msg = input_error([&] { Deck::parse("[" + section + "]\n" + name + " = " + literal + "\n", "deck.toml"); });
      EXPECT_CONTAINS(msg, "deck.toml:2:");
      EXPECT_CONTAINS(msg, std::string("the integer ") + literal + " is out of range: TOML integers are 64-bit");
      Deck d = Deck::parse("", "deck.toml");
      const std::string set = input_error([&] { d.apply_set(k + "=" + literal); });
      EXPECT_CONTAINS(set, "--set '" + k + "=" + literal + "'");
      EXPECT_CONTAINS(set, "is out of range: TOML integers are 64-bit");
    }
  }
  // The largest and smallest integers, floats, dates and times are not integers out of range.
  EXPECT_EQ(valid("[run]\nsteps = 1_000\n").get_int("run.steps"), 1000);
  EXPECT_CONTAINS(validate_error("[run]\nsteps = 9223372036854775807\n"), "out of range; allowed");
  EXPECT_CONTAINS(validate_error("[run]\nsteps = -9223372036854775808\n"), "out of range; allowed");
  EXPECT_CONTAINS(validate_error("[run]\nsteps = 1e30\n"), "expected an integer");
  EXPECT_CONTAINS(validate_error("[run]\nsteps = 1979-05-27\n"), "expected an integer");
}

TEST(Deck, OutOfRangeNamesKeyValueAndAllowedRange) {
  struct Case {
    const char* toml;
    std::vector<const char*> parts;
  };
  for (const Case& c :
       {Case{"[md]\ndt = -0.001\n", {"md.dt", "-0.001", "> 0", "<= 1000", "tau"}},
        Case{"[md]\ndt = 0\n", {"md.dt", "> 0"}},
        Case{"[md]\ncutoff = 0.0\n", {"md.cutoff", "0.0", "> 0"}},
        Case{"[md]\nskin = -0.1\n", {"md.skin", "-0.1", ">= 0"}},
        Case{"[run]\nsteps = -5\n", {"run.steps", "-5", ">= 0"}},
        Case{"[run]\nthermo_every = 0\n", {"run.thermo_every", "= 0", ">= 1"}},
        Case{"[md]\nneighbor_every = 0\n", {"md.neighbor_every", ">= 1"}},
        Case{"[md.pair]\nsigma = -1.0\n", {"md.pair.sigma", "-1.0", "> 0"}},
        Case{"[md.lattice]\ncells = [4, 0, 4]\n", {"md.lattice.cells", "[4, 0, 4]", ">= 1", "<= 100000"}},
        Case{"[md]\nensemble = \"npt-mtk\"\n", {"md.ensemble", "\"npt-mtk\"", "\"nve\"", "\"langevin\"", "\"npt\"", "\"nph\""}},
        Case{"[md]\ndt = nan\n", {"md.dt", "nan"}},
        Case{"[md]\ndt = inf\n", {"md.dt", "inf"}}}) {
    const std::string msg = validate_error(c.toml);
    EXPECT_CONTAINS(msg, "deck.toml");
    for (const char* p : c.parts) EXPECT_CONTAINS(msg, p);
  }
  // The bounds themselves: inclusive where the schema says so.
  valid("[md]\nskin = 0.0\n");
  valid("[md]\ndt = 1000.0\n");
  valid("[md.lattice]\ncells = [1, 1, 100000]\n");
}

TEST(Deck, MalformedTomlGivesFileLineAndColumn) {
  // Line 4: the unexpected second "=" is at column 6 (where toml11 itself puts its caret).
  const std::string msg = input_error([] { Deck::parse("[run]\nsteps = 10\n[md]\ndt = = 0.1\n", "bad.toml"); });
  EXPECT_CONTAINS(msg, "bad.toml:4:");
  std::size_t at = msg.find("bad.toml:4:");
  int column = -1;
  if (at != std::string::npos) column = std::atoi(msg.c_str() + at + std::string("bad.toml:4:").size());
  EXPECT_GE(column, 5) << msg;
  EXPECT_LE(column, 7) << msg;
  // Unterminated string on line 2.
  const std::string msg2 = input_error([] { Deck::parse("[run]\nsolver = \"md\n", "bad2.toml"); });
  EXPECT_CONTAINS(msg2, "bad2.toml:2:");
  // Duplicate key on line 3.
  const std::string msg3 = input_error([] { Deck::parse("[run]\nsteps = 1\nsteps = 2\n", "dup.toml"); });
  EXPECT_CONTAINS(msg3, "dup.toml:3");
}

TEST(Deck, SetOverrides) {
  Deck d = Deck::parse("[md]\ndt = 0.005\nensemble = \"nve\"\n", "deck.toml");
  d.apply_set("md.dt=0.001");                  // number (replaces)
  d.apply_set("run.steps=42");                 // integer, new section
  d.apply_set("md.neighbor_check=false");      // bool
  d.apply_set("md.lattice.cells=[2, 3, 4]");   // array, nested new section
  d.apply_set("md.ensemble=langevin");         // bare word: a string
  d.apply_set("md.pair.epsilon=2");            // integer for a float key
  d.apply_set("run.output_dir=\"out dir\"");   // quoted string
  d.validate();
  EXPECT_EQ(d.get_float("md.dt"), 0.001);
  EXPECT_EQ(d.get_int("run.steps"), 42);
  EXPECT_FALSE(d.get_bool("md.neighbor_check"));
  EXPECT_EQ(d.get_int3("md.lattice.cells"), (std::array<int, 3>{2, 3, 4}));
  EXPECT_EQ(d.get_string("md.ensemble"), "langevin");
  EXPECT_EQ(d.get_float("md.pair.epsilon"), 2.0);
  EXPECT_EQ(d.get_string("run.output_dir"), "out dir");

  // Overrides are validated like the file: unknown keys and bad values are caught.
  Deck e = Deck::parse("", "deck.toml");
  e.apply_set("md.dtt=0.001");
  const std::string msg = input_error([&] { e.validate(); });
  EXPECT_CONTAINS(msg, "'md.dtt'");
  EXPECT_CONTAINS(msg, "'md.dt'");
  Deck f = Deck::parse("", "deck.toml");
  f.apply_set("md.dt=-1");
  EXPECT_CONTAINS(input_error([&] { f.validate(); }), "md.dt");
  Deck g = Deck::parse("", "deck.toml");
  EXPECT_CONTAINS(input_error([&] { g.apply_set("md.dt"); }), "md.dt");
  EXPECT_CONTAINS(input_error([&] { g.apply_set("=3"); }), "=3");
  Deck h = Deck::parse("[md]\ndt = 0.005\n", "deck.toml");
  EXPECT_CONTAINS(input_error([&] { h.apply_set("md.dt.x=1"); }), "dt");
}

TEST(Deck, LatticeAndInitialTogetherAreRejected) {
  const std::string msg =
      validate_error("[md.lattice]\ncells = [4, 4, 4]\n[md.initial]\nlammps_data = \"lj.data\"\n");
  EXPECT_EQ(msg, "deck.toml:3: give either [md.lattice] or [md.initial], not both");
  // [md.initial] needs its data file.
  EXPECT_EQ(validate_error("[run]\n[md.initial]\n"), "deck.toml:2: [md.initial] needs key 'lammps_data'");
  // Either one alone is fine.
  const Deck d = valid("[md.initial]\nlammps_data = \"lj.data\"\n");
  EXPECT_EQ(d.get_string("md.initial.lammps_data"), "lj.data");
  EXPECT_FALSE(spotrun::md::config_from_deck(d).from_lattice);
}

TEST(Deck, ParseDuration) {
  using spotrun::launcher::parse_duration;
  EXPECT_EQ(parse_duration("01:02:03"), 3723.0);
  EXPECT_EQ(parse_duration("1:02:03"), 3723.0);
  EXPECT_EQ(parse_duration("02:03"), 123.0);
  EXPECT_EQ(parse_duration("45"), 45.0);
  EXPECT_EQ(parse_duration("1.5"), 1.5);
  EXPECT_EQ(parse_duration("100:00:00"), 360000.0);
  EXPECT_EQ(parse_duration(""), std::nullopt);
  EXPECT_EQ(parse_duration("1:2:3:4"), std::nullopt);
  EXPECT_EQ(parse_duration("1::3"), std::nullopt);
  EXPECT_EQ(parse_duration("ab:cd"), std::nullopt);
  EXPECT_EQ(parse_duration("-5"), std::nullopt);
  EXPECT_EQ(parse_duration("1h"), std::nullopt);
}

// Duration keys (run.time_limit) take seconds or "HH:MM:SS", in the deck and through --set. On the
// command line the natural spelling is unquoted: --set run.time_limit=01:02:03.
TEST(Deck, DurationKeysTakeSecondsOrHoursMinutesSeconds) {
  EXPECT_EQ(valid("[run]\ntime_limit = \"01:02:03\"\n").get_seconds("run.time_limit"), 3723.0);
  EXPECT_EQ(valid("[run]\ntime_limit = 90\n").get_seconds("run.time_limit"), 90.0);
  EXPECT_EQ(valid("[run]\ntime_limit = 90.5\n").get_seconds("run.time_limit"), 90.5);
  EXPECT_EQ(valid("").get_seconds("run.time_limit"), 0.0);
  EXPECT_CONTAINS(validate_error("[run]\ntime_limit = \"1:xx\"\n"), "run.time_limit");
  EXPECT_CONTAINS(validate_error("[run]\ntime_limit = -5\n"), "run.time_limit");
  for (const auto& [text, seconds] : {std::pair<const char*, double>{"run.time_limit=30:00:00", 108000.0},
                                      std::pair<const char*, double>{"run.time_limit=\"01:02:03\"", 3723.0},
                                      std::pair<const char*, double>{"run.time_limit=01:02:03", 3723.0},
                                      std::pair<const char*, double>{"run.time_limit=23:59:59", 86399.0}}) {
    SCOPED_TRACE(text);
    Deck d = Deck::parse("", "deck.toml");
    d.apply_set(text);
    double got = -1;
    try {
      d.validate();
      got = d.get_seconds("run.time_limit");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "--set " << text << ": " << e.what();
    }
    EXPECT_EQ(got, seconds);
  }
}

TEST(Deck, ResolvedRoundTrips) {
  for (const std::string& text :
       {std::string(), custom_deck(), std::string("[run]\nsteps = 7\n[md.initial]\nlammps_data = \"data/lj.data\"\n")}) {
    const Deck d = valid(text);
    const std::string r = d.resolved();
    SCOPED_TRACE("resolved deck:\n" + r);
    Deck back = Deck::parse(r, "resolved.toml");
    EXPECT_NO_THROW(back.validate());
    expect_same_values(d, back);
    EXPECT_EQ(back.resolved(), r) << "resolving twice changes the text";
  }
  // The resolved deck is complete: every key with a default appears, the inactive source does not.
  const std::string lattice = valid("").resolved();
  EXPECT_CONTAINS(lattice, "[md.lattice]");
  EXPECT_CONTAINS(lattice, "cells = [10, 10, 10]");
  EXPECT_CONTAINS(lattice, "dt = 0.005");
  EXPECT_EQ(lattice.find("[md.initial]"), std::string::npos);
  const std::string data = valid("[md.initial]\nlammps_data = \"lj.data\"\n").resolved();
  EXPECT_CONTAINS(data, "lammps_data = \"lj.data\"");
  EXPECT_EQ(data.find("[md.lattice]"), std::string::npos);
}

// Strings are written back as TOML strings: quotes and backslashes must survive the round trip.
TEST(Deck, ResolvedRoundTripsStringsWithQuotesAndBackslashes) {
  const Deck d = valid("[run]\noutput_dir = 'C:\\runs\\lj \"melt\"'\n");
  ASSERT_EQ(d.get_string("run.output_dir"), "C:\\runs\\lj \"melt\"");
  const std::string r = d.resolved();
  std::string back_value;
  try {
    Deck back = Deck::parse(r, "resolved.toml");
    back.validate();
    back_value = back.get_string("run.output_dir");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the resolved deck does not parse:\n" << r << "\n" << e.what();
  }
  EXPECT_EQ(back_value, "C:\\runs\\lj \"melt\"");
}

TEST(Deck, ParsesTheShippedInputDecks) {
  std::ifstream in(std::string(SPOTRUN_SOURCE_DIR) + "/inputs/lj-melt.toml");
  ASSERT_TRUE(in) << "inputs/lj-melt.toml";
  std::stringstream s;
  s << in.rdbuf();
  const Deck d = valid(s.str());
  EXPECT_EQ(d.get_int3("md.lattice.cells"), (std::array<int, 3>{10, 10, 10}));
}

// docs/decks.md documents every deck key (by its full dotted name, e.g. `md.pair.epsilon`).
TEST(Deck, EveryKeyIsDocumented) {
  const std::string path = std::string(SPOTRUN_SOURCE_DIR) + "/docs/decks.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " does not exist: it must document every deck key";
  std::stringstream s;
  s << in.rdbuf();
  const std::string doc = s.str();
  for (const auto& k : spotrun::launcher::deck_schema())
    EXPECT_NE(doc.find(k.key), std::string::npos) << "docs/decks.md does not mention the deck key '" << k.key << "'";
}

// --- Hostile and broken decks -------------------------------------------------------------------------

namespace {

using spotrun::launcher::k_deck_max_bytes;
using spotrun::launcher::k_deck_max_elements;
using spotrun::launcher::k_deck_max_items;
using spotrun::launcher::k_deck_max_line;
using spotrun::launcher::k_deck_max_nesting;

// Seconds f() takes.
double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The InputError message of parsing text (Deck::parse alone), with the time it took.
std::string parse_error(const std::string& text, double* seconds = nullptr) {
  std::string msg;
  const double s = seconds_of([&] { msg = input_error([&] { Deck::parse(text, "deck.toml"); }); });
  if (seconds) *seconds = s;
  return msg;
}

// "deck.toml:LINE:COLUMN" at the start of msg as {LINE, COLUMN}; {-1, -1} if absent.
std::pair<int, int> line_and_column(const std::string& msg) {
  int line = -1, column = -1;
  if (std::sscanf(msg.c_str(), "deck.toml:%d:%d", &line, &column) < 2) return {-1, -1};
  return {line, column};
}

}  // namespace

// Before: toml11 took "md.dt" as one key named md.dt; validate() accepted it (it joins names with dots)
// and lookup() never found it, so the default time step ran.
TEST(Deck, QuotedDottedKeysAreRefusedNotIgnored) {
  const std::string top = parse_error("\"md.dt\" = 0.5\n");
  EXPECT_CONTAINS(top, "deck.toml:1:");
  EXPECT_CONTAINS(top, "key \"md.dt\" is quoted and contains a dot");
  EXPECT_CONTAINS(top, "write md.dt = ... (or dt = ... under [md])");
  const std::string table = parse_error("[run]\nsteps = 5\n[\"md.pair\"]\nepsilon = 2.0\n");
  EXPECT_CONTAINS(table, "deck.toml:3:");
  EXPECT_CONTAINS(table, "\"md.pair\"");
  EXPECT_CONTAINS(table, "write [md.pair]");
  const std::string inner = parse_error("[md]\n\"pair.epsilon\" = 2.0\n");
  EXPECT_CONTAINS(inner, "\"pair.epsilon\" in [md]");
  EXPECT_CONTAINS(parse_error("[md.\"pair.x\"]\n"), "write [md.pair.x]");
  EXPECT_CONTAINS(parse_error("x = {\"a.b\" = 1}\n"), "\"a.b\"");
  EXPECT_CONTAINS(parse_error("[[x]]\n\"a.b\" = 1\n"), "\"a.b\"");
  // Other names that are not bare names; control characters are shown escaped.
  EXPECT_CONTAINS(parse_error("\"a b\" = 1\n"), "key \"a b\" is not a valid name");
  EXPECT_CONTAINS(parse_error("\"\" = 1\n"), "key \"\" is not a valid name");
  EXPECT_CONTAINS(parse_error("\"dt\\u0001\" = 1\n"), "\"dt\\u0001\"");
  EXPECT_CONTAINS(parse_error("[md]\n'dt\"' = 1\n"), "\"dt\\\"\"");
  // A quoted bare name is the same name: accepted and found.
  EXPECT_EQ(valid("[md]\n\"dt\" = 0.01\n").get_float("md.dt"), 0.01);
  EXPECT_EQ(valid("['md']\n'dt' = 0.01\n").get_float("md.dt"), 0.01);
  // --set keys: dotted paths of bare names.
  Deck d = Deck::parse("", "deck.toml");
  EXPECT_CONTAINS(input_error([&] { d.apply_set("\"md.dt\"=0.5"); }), "is not a key name");
  EXPECT_CONTAINS(input_error([&] { d.apply_set("md..dt=0.5"); }), "\"\" is not a key name");
  EXPECT_CONTAINS(input_error([&] { d.apply_set("md.dt.=0.5"); }), "is not a key name");
  EXPECT_CONTAINS(input_error([&] { d.apply_set("md dt=0.5"); }), "\"md dt\"");
  EXPECT_CONTAINS(input_error([&] { d.apply_set("a.b.c.d.e.f.g.h.i=1"); }), "more than 8 dotted parts");
}

// Before: toml11 recursed once per level and crashed (stack overflow) at 10000 levels.
TEST(Deck, DeepNestingIsRefusedBeforeTheParser) {
  const std::string n = std::to_string(k_deck_max_nesting);
  for (const std::string& open : {std::string("["), std::string("{a="), std::string("[{a=")}) {
    SCOPED_TRACE(open);
    // One level more than allowed, on one line; and 10000 levels, one per line (short lines).
    std::string deep = "x = ";
    for (std::size_t i = 0; i <= k_deck_max_nesting; ++i) deep += open;
    const std::string msg = parse_error(deep + "\n");
    EXPECT_CONTAINS(msg, "nested more than " + n + " deep");
    EXPECT_EQ(line_and_column(msg).first, 1) << msg;
    std::string very_deep = "x = ";
    for (int i = 0; i < 10000; ++i) very_deep += open + "\n";
    double seconds = 0;
    const std::string msg2 = parse_error(very_deep, &seconds);
    EXPECT_CONTAINS(msg2, "nested more than " + n + " deep");
    EXPECT_LT(seconds, 1.0);
  }
  // Exactly the limit parses (the parser then sees it), mixed arrays and inline tables included.
  std::string ok = "x = ", close;
  for (std::size_t i = 0; i < k_deck_max_nesting; ++i) {
    ok += i % 2 ? "{a = " : "[";
    close = (i % 2 ? "}" : "]") + close;
  }
  EXPECT_NO_THROW(Deck::parse(ok + "1" + close + "\n", "deck.toml")) << ok + "1" + close;
  // Brackets in strings and comments are text, not nesting.
  const Deck d = valid("[run]\noutput_dir = \"[[[[[[[[[[{{{{{{{{{{\" # [[[[[[[[[[[[\n"
                       "# {{{{{{{{{{{{{{\n[md.initial]\nlammps_data = '''[[[[[[[[[[[[\\'''\n");
  EXPECT_EQ(d.get_string("run.output_dir"), "[[[[[[[[[[{{{{{{{{{{");
  EXPECT_EQ(d.get_string("md.initial.lammps_data"), "[[[[[[[[[[[[\\");
  EXPECT_NO_THROW(Deck::parse("x = \"\"\"\n[[[[[[[[[[\\\"\"\"\"\ny = '''\n{{{{{{{{{{{\n'''\n", "deck.toml"));
}

// Before: an array of 200000 elements took toml11 about a minute (its time grows with the values on a
// line times the length of the line).
TEST(Deck, HugeArraysAndManyKeysAreRefusedQuickly) {
  auto array = [](std::size_t n, const char* sep) {
    std::string a = "x = [";
    for (std::size_t i = 0; i < n; ++i) a += std::string(i ? sep : "") + "1";
    return a + "]\n";
  };
  const std::string limit = std::to_string(k_deck_max_elements);
  double seconds = 0;
  EXPECT_CONTAINS(parse_error(array(k_deck_max_elements + 1, ",\n"), &seconds),
                  "an array of more than " + limit + " elements");
  EXPECT_LT(seconds, 1.0);
  EXPECT_CONTAINS(parse_error(array(200000, ",\n"), &seconds), "more than " + limit + " elements");
  EXPECT_LT(seconds, 1.0);
  // On one line, the line limit comes first.
  EXPECT_CONTAINS(parse_error(array(200000, ","), &seconds), "the longest is " + std::to_string(k_deck_max_line));
  EXPECT_LT(seconds, 1.0);
  // The limit itself parses; a trailing comma is not an element; commas in strings are not elements.
  EXPECT_NO_THROW(Deck::parse(array(k_deck_max_elements, ",\n"), "deck.toml"));
  // A long number is one element (a float: as an integer it would be out of TOML's 64-bit range).
  EXPECT_NO_THROW(Deck::parse("x = [0." + std::string(k_deck_max_elements, '1') + "]\n", "deck.toml"));
  std::string trailing = array(k_deck_max_elements, ",\n");
  trailing.insert(trailing.size() - 2, ",");
  EXPECT_NO_THROW(Deck::parse(trailing, "deck.toml"));
  EXPECT_NO_THROW(Deck::parse("x = [\"" + std::string(3000, ',') + "\", '" + std::string(3000, ',') + "']\n",
                              "deck.toml"));
  // Inline tables: entries.
  std::string inline_table = "x = {";
  for (std::size_t i = 0; i <= k_deck_max_elements; ++i)
    inline_table += (i ? ",\n" : "") + std::string("k") + std::to_string(i) + "=1";
  EXPECT_CONTAINS(parse_error(inline_table + "}\n"), "inline table of more than " + limit + " entries");
  // 60000 tiny tables and 60000 keys (toml11 takes about a second for 100000 of them).
  std::string tables, keys;
  for (int i = 0; i < 60000; ++i) {
    tables += "[t" + std::to_string(i) + "]\n";
    keys += "k" + std::to_string(i) + " = 1\n";
  }
  const std::string items = "more than " + std::to_string(k_deck_max_items) + " names and array elements";
  for (const std::string* text : {&tables, &keys}) {
    const std::string msg = parse_error(*text, &seconds);
    EXPECT_CONTAINS(msg, items);
    EXPECT_EQ(line_and_column(msg).first, static_cast<int>(k_deck_max_items) + 1) << msg;
    EXPECT_LT(seconds, 1.0);
  }
  // Dotted parts count: 600 tables of 8 parts are 4800 names.
  std::string dotted;
  for (int i = 0; i < 600; ++i) dotted += "[a" + std::to_string(i) + ".b.c.d.e.f.g.h]\n";
  EXPECT_CONTAINS(parse_error(dotted), items);
  EXPECT_CONTAINS(parse_error("[a.b.c.d.e.f.g.h.i]\n"), "more than 8 dotted parts");
  EXPECT_NO_THROW(Deck::parse("[a.b.c.d.e.f.g]\nh = 1\n", "deck.toml"));
}

TEST(Deck, OversizedTextLongLinesAndNulBytesAreRefused) {
  // One byte over 1 MiB: refused by its size; exactly 1 MiB of comments: parsed, in well under a second.
  std::string big;
  while (big.size() < k_deck_max_bytes) big += "# " + std::string(98, 'c') + "\n";
  big.resize(k_deck_max_bytes);
  big.back() = '\n';
  double seconds = 0;
  EXPECT_CONTAINS(parse_error(big + "\n", &seconds), std::to_string(k_deck_max_bytes + 1) + " bytes");
  EXPECT_LT(seconds, 1.0);
  seconds = seconds_of([&] { EXPECT_NO_THROW(valid(big)); });
  EXPECT_LT(seconds, 1.0);
  // A line over the limit (here a long string), named by its number; the same string over several lines
  // of a multi-line string is fine.
  const std::string msg = parse_error("[run]\noutput_dir = \"" + std::string(k_deck_max_line, 'a') + "\"\n");
  EXPECT_CONTAINS(msg, "deck.toml:2: the line is " + std::to_string(k_deck_max_line + 15) + " bytes long");
  std::string ml = "[run]\noutput_dir = \"\"\"\\\n";
  for (int i = 0; i < 40; ++i) ml += std::string(100, 'a') + "\\\n";
  EXPECT_EQ(valid(ml + "\"\"\"\n").get_string("run.output_dir"), std::string(4000, 'a'));
  // A NUL byte anywhere, with its line and column; NUL written as an escape is a different matter (below).
  const std::string nul = parse_error(std::string("[run]\nsteps = 1\0\n", 17));
  EXPECT_CONTAINS(nul, "deck.toml:2:10: the text contains a NUL byte");
  EXPECT_CONTAINS(parse_error(std::string("# \0\n", 4)), "NUL byte");
}

// Before: every message quoted the whole value, key or line, a megabyte at a time.
TEST(Deck, MessagesQuoteAtMostAboutEightyCharacters) {
  const std::size_t most = 400;  // every message below, whatever the length of what it quotes
  const std::string mb(1000000, 'a');
  // A 1 MB value (a multi-line string) of a key with choices.
  std::string deck = "[md]\nensemble = \"\"\"\\\n";
  for (int i = 0; i < 10000; ++i) deck += std::string(100, 'a') + "\\\n";
  const std::string value = validate_error(deck + "\"\"\"\n");
  EXPECT_CONTAINS(value, "key 'md.ensemble' = \"aaaa");
  EXPECT_CONTAINS(value, "aaa\" (1000000 characters)");
  EXPECT_CONTAINS(value, "allowed: one of \"nve\", \"langevin\"");
  EXPECT_LE(value.size(), most) << value.substr(0, 1000);
  // A 1 MB key and a 1 MB value through --set.
  Deck k = Deck::parse("", "deck.toml");
  k.apply_set(mb + "=1");
  double seconds = 0;
  std::string key;
  seconds = seconds_of([&] { key = input_error([&] { k.validate(); }); });
  EXPECT_CONTAINS(key, "unknown key 'aaaa");
  // Nothing is close to it: the sections a deck has instead of a guess.
  EXPECT_CONTAINS(key, "(1000000 characters); a deck has the sections [run], [checkpoint],");
  EXPECT_LE(key.size(), most) << key.substr(0, 1000);
  EXPECT_LT(seconds, 1.0);  // "did you mean" compares at most 64 characters of the key
  Deck v = Deck::parse("", "deck.toml");
  v.apply_set("md.dt=" + mb);
  const std::string set_value = input_error([&] { v.validate(); });
  EXPECT_CONTAINS(set_value, "(1000000 characters): expected a number");
  EXPECT_LE(set_value.size(), most) << set_value.substr(0, 1000);
  const std::string assignment = input_error([&] { v.apply_set(mb); });
  EXPECT_CONTAINS(assignment, "--set 'aaaa");
  EXPECT_CONTAINS(assignment, "(1000000 characters): expected section.key=value");
  EXPECT_LE(assignment.size(), most);
  EXPECT_LE(input_error([&] { v.apply_set(mb + " x=1"); }).size(), most);  // not a key name
  // A 1 MB path with a control character at its end.
  Deck p = Deck::parse("", "deck.toml");
  p.apply_set("run.output_dir=" + mb + "\a");  // longer than a line: taken as a string
  const std::string path = input_error([&] { p.validate(); });
  EXPECT_CONTAINS(path, "U+0007 at character 1000001");
  EXPECT_CONTAINS(path, "aaaa\\u0007\" (1000001 characters)");
  EXPECT_LE(path.size(), most);
  // A syntax error far into a long line: line and column kept, the line cut around the column.
  const std::string line = "x = [" + std::string(7000, ' ') + "1, 2, = 3]\n";
  const std::string syntax = parse_error("[run]\n" + line);
  EXPECT_EQ(line_and_column(syntax), (std::pair<int, int>{2, 7012})) << syntax;
  EXPECT_CONTAINS(syntax, "malformed TOML");
  EXPECT_CONTAINS(syntax, " | ...      ");
  EXPECT_CONTAINS(syntax, "      1, 2, = 3]\n");
  EXPECT_LE(syntax.size(), most + 200) << syntax;
  // The helper itself: short text whole, long text by its ends and length.
  using spotrun::launcher::quote_for_message;
  EXPECT_EQ(quote_for_message("md.dt"), "\"md.dt\"");
  EXPECT_EQ(quote_for_message("a\"b\n", '\''), "'a\"b\\n'");
  const std::string q = quote_for_message(std::string(50, 'x') + std::string(50, 'y'));
  EXPECT_EQ(q, "\"" + std::string(50, 'x') + std::string(7, 'y') + "..." + std::string(20, 'y') +
                   "\" (100 characters)");
  EXPECT_EQ(quote_for_message(std::string(80, 'z')).size(), 82u);
}

// Before: "1.2.3" read as 1.2 s (std::stod stops at the second dot).
TEST(Deck, ParseDurationIsStrictAndTakesSlurmDayForms) {
  using spotrun::launcher::parse_duration;
  EXPECT_EQ(parse_duration("0"), 0.0);
  EXPECT_EQ(parse_duration("90.25"), 90.25);
  EXPECT_EQ(parse_duration("90:30"), 5430.0);
  EXPECT_EQ(parse_duration("1:59.5"), 119.5);
  EXPECT_EQ(parse_duration("01:02:03.5"), 3723.5);
  EXPECT_EQ(parse_duration("36:00:00"), 129600.0);
  EXPECT_EQ(parse_duration("2-12"), 2 * 86400.0 + 12 * 3600.0);
  EXPECT_EQ(parse_duration("2-12:30"), 2 * 86400.0 + 12 * 3600.0 + 30 * 60.0);
  EXPECT_EQ(parse_duration("0-01:02:03"), 3723.0);
  EXPECT_EQ(parse_duration("10-23:59:59"), 10 * 86400.0 + 86399.0);
  for (const char* bad :
       {"1.2.3",    "1..2",  "1.",    ".5",      "+5",     " 5",        "5 ",      "5s",
        "1e3",      "0x10",  "inf",   "nan",     "1:60",   "1:00:60",   "1:60:00", "1:2:3:4",
        ":5",       "5:",    "1-24",  "1-",      "-1",     "-",         "1-2-3",   "1-2:60",
        "1-2:3:60", "1.5-2", "1-2.5", "1:2.5:3", "1.5:00", "1-1:2:3:4", "１",      "99999999999999999999999"}) {
    EXPECT_EQ(parse_duration(bad), std::nullopt) << "'" << bad << "'";
  }
  // In a deck: strings refused with the accepted forms listed; Slurm forms accepted, also through --set.
  const std::string msg = validate_error("[run]\ntime_limit = \"1.2.3\"\n");
  EXPECT_CONTAINS(msg, "'run.time_limit' = \"1.2.3\"");
  for (const char* form : {"\"MM:SS\"", "\"HH:MM:SS\"", "\"D-HH\"", "\"D-HH:MM\"", "\"D-HH:MM:SS\""})
    EXPECT_CONTAINS(msg, form);
  EXPECT_EQ(valid("[run]\ntime_limit = \"1-12:00:00\"\n").get_seconds("run.time_limit"), 129600.0);
  EXPECT_EQ(valid("[run]\ntime_limit = \"1-12\"\n").get_seconds("run.time_limit"), 129600.0);
  EXPECT_EQ(valid("[run]\ntime_limit = 02:00:00.5\n").get_seconds("run.time_limit"), 7200.5);
  for (const char* set : {"run.time_limit=1-12:00:00", "run.time_limit=\"1-12:00\"", "run.time_limit=36:00:00"}) {
    Deck d = Deck::parse("", "deck.toml");
    d.apply_set(set);
    EXPECT_NO_THROW(d.validate()) << set;
  }
  Deck s = Deck::parse("", "deck.toml");
  s.apply_set("run.time_limit=1.2.3");
  EXPECT_CONTAINS(input_error([&] { s.validate(); }), "\"D-HH:MM:SS\"");
  // get_seconds without validate() refuses too (it used to dereference an empty optional).
  const Deck raw = Deck::parse("[run]\ntime_limit = \"1.2.3\"\n", "deck.toml");
  EXPECT_CONTAINS(input_error([&] { raw.get_seconds("run.time_limit"); }), "run.time_limit");
  // Numbers: finite and >= 0.
  EXPECT_CONTAINS(validate_error("[run]\ntime_limit = inf\n"), "finite");
  EXPECT_CONTAINS(validate_error("[run]\ntime_limit = nan\n"), "run.time_limit");
  // docs/decks.md states the same forms.
  std::ifstream in(std::string(SPOTRUN_SOURCE_DIR) + "/docs/decks.md");
  std::stringstream doc;
  doc << in.rdbuf();
  for (const char* form :
       {"`\"S\"`", "`\"MM:SS\"`", "`\"HH:MM:SS\"`", "`\"D-HH\"`", "`\"D-HH:MM\"`", "`\"D-HH:MM:SS\"`"})
    EXPECT_CONTAINS(doc.str(), form);
}

// Before: toml11 located an out-of-range time in a copy of the value's text, so the error said line 1.
TEST(Deck, TimeErrorsNameTheirLineAndColumn) {
  for (const char* value : {"25:00:00", "12:61:00", "23:59:61"}) {
    SCOPED_TRACE(value);
    const std::string msg = parse_error(std::string("[run]\nsteps = 1\ntime_limit = ") + value + "\n");
    EXPECT_EQ(line_and_column(msg), (std::pair<int, int>{3, 14})) << msg;
    EXPECT_CONTAINS(msg, "quoted string");
  }
  const std::string date = parse_error("[run]\n\n\n\nx = 1979-13-27\n");
  EXPECT_EQ(line_and_column(date), (std::pair<int, int>{5, 5})) << date;
  // Unquoted times of day still work.
  EXPECT_EQ(valid("[run]\nsteps = 1\ntime_limit = 23:59:59\n").get_seconds("run.time_limit"), 86399.0);
}

// Before: output_dir = "a\u0000b" reached the file system as "a".
TEST(Deck, ControlCharactersInPathsAreRefused) {
  struct Case {
    std::string toml, code;
  };
  for (const Case& c : {Case{"[run]\noutput_dir = \"a\\u0000b\"\n", "U+0000 at character 2"},
                        Case{"[run]\noutput_dir = \"runs/\\u001f\"\n", "U+001F at character 6"},
                        Case{"[run]\noutput_dir = \"x\\u007f\"\n", "U+007F at character 2"},
                        Case{"[run]\noutput_dir = \"\\n\"\n", "U+000A at character 1"},
                        Case{"[run]\noutput_dir = 'tab\there'\n", "U+0009 at character 4"},
                        Case{"[md.initial]\nlammps_data = \"d\\u00e9j\\u00e0\\r.data\"\n", "U+000D at character 5"}}) {
    SCOPED_TRACE(c.toml);
    const std::string msg = validate_error(c.toml);
    EXPECT_CONTAINS(msg, c.code);
    EXPECT_CONTAINS(msg, "must not contain control characters");
  }
  Deck d = Deck::parse("", "deck.toml");
  d.apply_set("md.initial.lammps_data=\"a\\u0000.data\"");
  EXPECT_CONTAINS(input_error([&] { d.validate(); }), "'md.initial.lammps_data' = \"a\\u0000.data\"");
  // Other characters are fine: spaces, non-ASCII letters.
  EXPECT_EQ(valid("[run]\noutput_dir = \"runs/déjà vu\"\n").get_string("run.output_dir"), "runs/déjà vu");
}

// Paths are at most PATH_MAX bytes; the resolved deck (written into checkpoints and parsed again on
// resume) writes long strings over several short lines, so it stays within the line limit.
TEST(Deck, LongPathsRoundTripWithinTheLineLimit) {
  using spotrun::launcher::k_deck_max_path;
  Deck too_long = Deck::parse("", "deck.toml");
  too_long.apply_set("run.output_dir=" + std::string(k_deck_max_path + 1, 'p'));
  EXPECT_CONTAINS(input_error([&] { too_long.validate(); }), "a path of 4097 bytes");
  // The longest path, of characters that need escapes or that a line continuation would eat.
  std::string path;
  const std::string pieces[] = {R"(\\)", " ", R"(\")", R"(d\u00e9j\u00e0)", "  x", "/"};  // TOML basic-string text
  for (std::size_t i = 0; path.size() < k_deck_max_path - 8; ++i) {
    Deck one = Deck::parse("[run]\noutput_dir = \"" + pieces[i % 6] + "\"\n", "deck.toml");
    path += one.get_string("run.output_dir");
  }
  path.resize(k_deck_max_path - 8);
  while (!path.empty() && static_cast<unsigned char>(path.back()) >= 0x80) path.pop_back();  // whole characters
  path = " " + path + " ";
  Deck d = Deck::parse("", "deck.toml");
  d.apply_set("run.output_dir=" + path);
  ASSERT_NO_THROW(d.validate());
  const std::string r = d.resolved();
  std::size_t longest_line = 0, begin = 0;
  for (std::size_t nl; (nl = r.find('\n', begin)) != std::string::npos; begin = nl + 1)
    longest_line = std::max(longest_line, nl - begin);
  EXPECT_LE(longest_line, 120u);
  std::string back;
  try {
    Deck again = Deck::parse(r, "resolved.toml");
    again.validate();
    back = again.get_string("run.output_dir");
    EXPECT_EQ(again.resolved(), r);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  EXPECT_TRUE(back == path) << "the path does not survive the resolved deck";
  // Bytes that are not UTF-8 (a --set value is taken as it comes) cannot be written as TOML: refused.
  Deck latin1 = Deck::parse("", "deck.toml");
  latin1.apply_set("run.output_dir=caf\xe9/runs");
  EXPECT_CONTAINS(input_error([&] { latin1.validate(); }), "not valid UTF-8 (byte 4)");
}

// A --set value is one TOML value or else a string; the limits apply to it too.
TEST(Deck, SetValuesAreOneValueOrAString) {
  Deck d = Deck::parse("", "deck.toml");
  d.apply_set("md.dt=0.1\nrun.steps=9");
  const std::string msg = input_error([&] { d.validate(); });
  EXPECT_CONTAINS(msg, "'md.dt' = \"0.1\\nrun.steps=9\"");
  EXPECT_FALSE(d.has("run.steps"));
  Deck deep = Deck::parse("", "deck.toml");
  deep.apply_set("md.lattice.cells=" + std::string(10000, '['));  // a string, not a crash
  EXPECT_CONTAINS(input_error([&] { deep.validate(); }), "expected an array of 3 integers");
}

// docs/decks.md states the limits that Deck::parse applies (the numbers of io/deck/deck.hpp).
TEST(Deck, LimitsAreDocumented) {
  std::ifstream in(std::string(SPOTRUN_SOURCE_DIR) + "/docs/decks.md");
  std::stringstream s;
  s << in.rdbuf();
  const std::string doc = s.str();
  using namespace spotrun::launcher;
  const std::vector<std::string> rows = {
      "| Size of the deck | 1 MiB (" + std::to_string(k_deck_max_bytes) + " bytes)",
      "| Length of a line | " + std::to_string(k_deck_max_line) + " bytes",
      "| Nesting of arrays and inline tables (together) | " + std::to_string(k_deck_max_nesting) + " levels",
      "| Elements of one array, entries of one inline table | " + std::to_string(k_deck_max_elements) + " |",
      "| Dotted parts of one key or table name | " + std::to_string(k_deck_max_key_parts) + " ",
      "| Names and array elements in all | " + std::to_string(k_deck_max_items) + ":",
      "A path is at most " + std::to_string(k_deck_max_path) + " bytes",
      "is quoted and contains a dot",
      "control\n  characters (U+0000 to U+001F, U+007F"};
  for (const std::string& row : rows)
    EXPECT_CONTAINS(doc, row);
}

// [[md.types]] and [[md.pair.coeff]]: arrays of tables whose fields are checked like keys, read into
// MdConfig, resolved and read back; the keys of several types apply only to decks that have types.
TEST(Deck, AtomTypesAndPairCoefficients) {
  const std::string text =
      "[[md.types]]\nname = \"A\"\nfraction = 0.8\n[[md.types]]\nname = \"B\"\nmass = 2.5\nfraction = 0.2\n"
      "[md.pair]\nmix = \"arithmetic\"\n"
      "[[md.pair.coeff]]\ntypes = [\"A\", \"B\"]\nepsilon = 1.5\nsigma = 0.8\ncutoff = 2.0\n"
      "[[md.pair.coeff]]\ntypes = [\"B\", \"B\"]\nepsilon = 0.5\nsigma = 0.88\n"
      "[md.lattice]\ntype_seed = 99\n";
  const Deck d = valid(text);
  const auto c = spotrun::md::config_from_deck(d);
  ASSERT_EQ(c.types.size(), 2u);
  EXPECT_EQ(c.types[1].name, "B");
  EXPECT_EQ(c.types[1].mass, 2.5);
  EXPECT_TRUE(c.types[1].mass_given);
  EXPECT_EQ(c.types[0].mass, 1.0);
  EXPECT_FALSE(c.types[0].mass_given);
  EXPECT_EQ(c.types[0].fraction, 0.8);
  ASSERT_EQ(c.pair_coeffs.size(), 2u);
  EXPECT_EQ(c.pair_coeffs[0].type_b, "B");
  EXPECT_EQ(c.pair_coeffs[0].cutoff, 2.0);
  EXPECT_EQ(c.pair_coeffs[1].cutoff, 0.0);  // not given: md.cutoff
  EXPECT_EQ(c.mix, spotrun::md::PairMix::Arithmetic);
  EXPECT_EQ(c.type_seed, 99u);
  const std::string r = d.resolved();
  SCOPED_TRACE("resolved deck:\n" + r);
  Deck back = Deck::parse(r, "resolved.toml");
  EXPECT_NO_THROW(back.validate());
  expect_same_values(d, back);
  EXPECT_EQ(back.resolved(), r);
  EXPECT_CONTAINS(d.physics(), "md.pair.coeff = [{cutoff = 2.0, epsilon = 1.5, sigma = 0.8, types = [\"A\", \"B\"]}, "
                               "{epsilon = 0.5, sigma = 0.88, types = [\"B\", \"B\"]}]");
  EXPECT_CONTAINS(d.physics(), "md.pair.mix = \"arithmetic\"");
  // A deck without types: its physics (and so its checkpoints' physics) has none of the new keys.
  EXPECT_EQ(valid("").physics().find("md.pair.mix"), std::string::npos);
  EXPECT_EQ(valid("").physics().find("type_seed"), std::string::npos);

  EXPECT_CONTAINS(validate_error("[[md.types]]\nname = \"A\"\nmas = 2.0\n"),
                  "unknown key 'md.types[0].mas' in a [[md.types]] table; allowed: name, mass, fraction");
  EXPECT_CONTAINS(validate_error("[[md.types]]\nmass = 2.0\n"), "'md.types[0]' has no key 'name'");
  EXPECT_CONTAINS(validate_error("[[md.pair.coeff]]\ntypes = [\"1\", \"1\"]\nepsilon = 1.0\n"),
                  "'md.pair.coeff[0]' has no key 'sigma'");
  EXPECT_CONTAINS(validate_error("[[md.pair.coeff]]\ntypes = [\"1\"]\nepsilon = 1.0\nsigma = 1.0\n"),
                  "key 'md.pair.coeff[0].types' = [\"1\"]: expected >= 2 and <= 2 strings");
  EXPECT_CONTAINS(validate_error("[[md.pair.coeff]]\ntypes = [\"1\", \"1\"]\nepsilon = -1.0\nsigma = 1.0\n"),
                  "key 'md.pair.coeff[0].epsilon' = -1.0: out of range");
  EXPECT_CONTAINS(validate_error("[md.pair.coeff]\ntypes = [\"1\", \"1\"]\n"),
                  "key 'md.pair.coeff' = {types = [\"1\", \"1\"]}: expected an array of tables");
  EXPECT_EQ(validate_error("[[md.types]]\nname = \"A\"\n[[md.types]]\nname = \"A\"\n"),
            "deck.toml:4: md.types[1].name = \"A\" is also the name of md.types[0]; type names must be unique");
  EXPECT_CONTAINS(validate_error("[[md.types]]\nname = \"A\"\nfraction = 0.5\n[[md.types]]\nname = \"B\"\nfraction = 0.2\n"),
                  "deck.toml:1: the md.types fractions add up to 0.7");
}

// The progress figures: share, throughput over this process's steps, time left and expected end.
TEST(Progress, FiguresAndLine) {
  using spotrun::launcher::progress_figures;
  // Resumed at step 100, now step 300 of 1100 after 10 s: 20 steps/s, 800 steps = 40 s left.
  const double epoch = 1795996800;  // 2026-11-30T00:00:00Z
  const auto f = progress_figures(100, 300, 1100, 10.0, 864.0, epoch);
  EXPECT_DOUBLE_EQ(f.percent, 100.0 * 300 / 1100);
  EXPECT_DOUBLE_EQ(f.steps_per_second, 20.0);
  EXPECT_DOUBLE_EQ(f.work_per_second, 20.0 * 864);
  EXPECT_DOUBLE_EQ(f.remaining, 40.0);
  EXPECT_EQ(f.eta_utc, "2026-11-30T00:00:40Z");
  EXPECT_EQ(spotrun::launcher::progress_line(f, "atom-steps"),
            "Progress: step 300 of 1100 (27.3%), 20 steps/s (1.728e+04 atom-steps/s), 40 s left, ends at "
            "2026-11-30 00:00:40 UTC");
  const auto g = progress_figures(100, 100, 1100, 0.5, 864.0, epoch);  // no step done yet
  EXPECT_LT(g.remaining, 0);
  EXPECT_CONTAINS(spotrun::launcher::progress_line(g, "atom-steps"), "no step done yet");
  const auto h = progress_figures(0, 50, 7250, 1.0, 1.0, epoch);  // 50 steps/s, 144 s left
  EXPECT_CONTAINS(spotrun::launcher::progress_line(h, "x"), "2 min 24 s left, ends at 2026-11-30 00:02:24 UTC");
  EXPECT_CONTAINS(spotrun::launcher::progress_json(f, "atom-steps", false), "\"remaining_seconds\": 40.0");
}

// --- The order of tables ---------------------------------------------------------------------------------

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The ```toml blocks of a Markdown file.
std::vector<std::string> toml_blocks(const std::string& markdown) {
  std::vector<std::string> out;
  for (std::size_t at = 0; (at = markdown.find("```toml\n", at)) != std::string::npos;) {
    at += 8;
    const std::size_t end = markdown.find("```", at);
    out.push_back(markdown.substr(at, end - at));
    at = end;
  }
  return out;
}

// A deck cut into its root lines and its blocks (a table header and the lines up to the next header).
// The decks shuffled here have no multi-line strings or arrays, so a header is a line that starts with '['.
struct Blocks {
  std::string root;
  std::vector<std::string> blocks, names;  // names: "md.pair", "[md.types]" for an array of tables
};
Blocks split_blocks(const std::string& text) {
  Blocks b;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '[') {
      const bool array = line.rfind("[[", 0) == 0;
      const std::size_t open = array ? 2 : 1, close = line.find(']');
      const std::string name = line.substr(open, close - open);
      // A table in the last table of an array ([run.stage.md] after [[run.stage]]) belongs to that table: it
      // moves with its block.
      const bool in_array_table = !array && !b.names.empty() && b.names.back().front() == '[' &&
                                  name.rfind(b.names.back().substr(1, b.names.back().size() - 2) + ".", 0) == 0;
      if (!in_array_table) {
        b.names.push_back((array ? "[" : "") + name + (array ? "]" : ""));
        b.blocks.emplace_back();
      }
    }
    (b.blocks.empty() ? b.root : b.blocks.back()) += line + "\n";
  }
  return b;
}

// Every order of the blocks that TOML allows and that is the same document: the root lines first, and the
// tables of one array of tables in their order (the order of an array is part of its value). A deck with
// more such orders than `most` (inputs/protocol.toml: 13 blocks, 13! / (2! 3! 4!) orders) gets `most` of them,
// drawn with a fixed seed: a shuffle whose slots of one array take that array's tables in their order.
std::vector<std::string> every_order(const Blocks& b, std::size_t most = 500) {
  const std::size_t n = b.blocks.size();
  auto text_of = [&](const std::vector<std::size_t>& perm) {
    std::string text = b.root;
    for (const std::size_t i : perm) text += b.blocks[i];
    return text;
  };
  // The number of orders: n! over the factorial of each array's length.
  double count = 1;
  for (std::size_t i = 2; i <= n; ++i) count *= static_cast<double>(i);
  std::map<std::string, std::size_t> group;
  for (const auto& name : b.names) count /= static_cast<double>(++group[name]);
  std::vector<std::size_t> perm(n);
  for (std::size_t i = 0; i < n; ++i) perm[i] = i;
  std::vector<std::string> out;
  if (count <= static_cast<double>(most)) {
    do {
      bool keeps_arrays = true;
      for (std::size_t i = 0; i < n && keeps_arrays; ++i)
        for (std::size_t j = i + 1; j < n; ++j)
          if (b.names[perm[i]] == b.names[perm[j]] && perm[i] > perm[j]) keeps_arrays = false;
      if (keeps_arrays) out.push_back(text_of(perm));
    } while (std::next_permutation(perm.begin(), perm.end()));
    return out;
  }
  std::mt19937 rng(20261205u);
  while (out.size() < most) {
    std::shuffle(perm.begin(), perm.end(), rng);
    // The slots that one name's blocks took get that name's blocks in the deck's order.
    std::map<std::string, std::vector<std::size_t>> members;
    for (std::size_t i = 0; i < n; ++i) members[b.names[i]].push_back(i);
    std::map<std::string, std::size_t> next;
    for (std::size_t& slot : perm) {
      const std::string& name = b.names[slot];
      slot = members[name][next[name]++];
    }
    out.push_back(text_of(perm));
  }
  return out;
}

}  // namespace

// Before: toml11 3.7 refused [md.pair] after [[md.pair.coeff]] and [md] after [[md.types]] ("table
// ("md.pair") already exists"), which TOML allows. Every example deck (inputs/), the decks of the tests
// (tests/data/) and the decks of docs/decks.md, in every order of its tables, is the same deck.
TEST(Deck, EveryOrderOfTablesIsTheSameDeck) {
  std::vector<std::pair<std::string, std::string>> decks;  // name, text
  for (const auto& e : std::filesystem::directory_iterator(std::string(SPOTRUN_SOURCE_DIR) + "/inputs"))
    if (e.path().extension() == ".toml") decks.emplace_back(e.path().string(), read_text(e.path().string()));
  for (const auto& e : std::filesystem::directory_iterator(SPOTRUN_TEST_DATA_DIR))
    if (e.path().extension() == ".toml") decks.emplace_back(e.path().string(), read_text(e.path().string()));
  const auto doc = toml_blocks(read_text(std::string(SPOTRUN_SOURCE_DIR) + "/docs/decks.md"));
  for (std::size_t i = 0; i < doc.size(); ++i) decks.emplace_back("docs/decks.md block " + std::to_string(i), doc[i]);
  // [md.pair] with [[md.pair.coeff]] (test AtomTypesAndPairCoefficients).
  decks.emplace_back("types and coefficients",
                     "[[md.types]]\nname = \"A\"\nfraction = 0.8\n[[md.types]]\nname = \"B\"\n"
                     "mass = 2.5\nfraction = 0.2\n[md.pair]\nmix = \"arithmetic\"\n[[md.pair.coeff]]\n"
                     "types = [\"A\", \"B\"]\nepsilon = 1.5\nsigma = 0.8\n[[md.pair.coeff]]\ntypes = [\"B\", \"B\"]\n"
                     "epsilon = 0.5\nsigma = 0.88\n[md]\ndt = 0.002\n");
  ASSERT_GE(decks.size(), 8u);
  std::size_t orders = 0;
  for (const auto& [name, text] : decks) {
    SCOPED_TRACE(name);
    const Blocks blocks = split_blocks(text);
    ASSERT_EQ(blocks.root + [&] {
      std::string all;
      for (const auto& b : blocks.blocks) all += b;
      return all;
    }(), text + (text.empty() || text.back() == '\n' ? "" : "\n"));
    const Deck original = valid(text);
    const std::string resolved = original.resolved(), physics = original.physics();
    bool first = true;
    for (const std::string& shuffled : every_order(blocks)) {
      ++orders;
      try {
        const Deck d = valid(shuffled);
        // The resolved deck has every key that applies with its value, the tables of arrays in full.
        EXPECT_EQ(d.resolved(), resolved) << shuffled;
        EXPECT_EQ(d.physics(), physics) << shuffled;
        if (first) expect_same_values(d, original);
        first = false;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what() << "\nin:\n" << shuffled;
      }
    }
  }
  // lj-melt: 4! orders; ka-lattice-nvt and the types and coefficients: 6! / (2! 2!) each.
  EXPECT_GE(orders, 24u + 180u + 180u);
  // The two orders of the report, each refused before.
  EXPECT_EQ(valid("[[md.pair.coeff]]\ntypes = [\"1\", \"1\"]\nepsilon = 1.0\nsigma = 1.0\n[md.pair]\nmix = \"geometric\"\n")
                .count("md.pair.coeff"),
            1u);
  EXPECT_EQ(valid("[[md.types]]\nname = \"A\"\n[md]\ndt = 0.002\n").get_float("md.dt"), 0.002);
}

// Moved tables keep the line numbers of the file in every message: syntax, key names and values.
TEST(Deck, MessagesOfMovedTablesNameTheLinesOfTheFile) {
  const std::string head = "[[md.pair.coeff]]\ntypes = [\"1\", \"1\"]\nepsilon = 1.0\nsigma = 1.0\n";
  EXPECT_EQ(validate_error(head + "[md.pair]\nmix = \"geometric\"\nepsilon = -1.0\n"),
            "deck.toml:7: key 'md.pair.epsilon' = -1.0: out of range; allowed: > 0 and <= 1e+09 (epsilon)");
  const std::string syntax = parse_error(head + "[md.pair]\nmix = = 1\n");
  EXPECT_EQ(line_and_column(syntax), (std::pair<int, int>{6, 7})) << syntax;
  EXPECT_CONTAINS(syntax, "\n 6 | mix = = 1\n");
  EXPECT_CONTAINS(parse_error(head + "[md.pair]\n\"md.x\" = 1\n"), "deck.toml:6: key \"md.x\" in [md.pair]");
  // A table defined twice is refused as before, with both lines.
  const std::string twice = parse_error(head + "[md.pair]\nmix = \"geometric\"\n[md.pair]\nshift = true\n");
  EXPECT_CONTAINS(twice, "already exists");
  EXPECT_CONTAINS(twice, "\n 7 | [md.pair]");
  EXPECT_EQ(line_and_column(twice).first, 7) << twice;
  // Arrays of tables keep their order.
  const Deck d = valid("[[md.types]]\nname = \"B\"\nfraction = 0.5\n[md]\ndt = 0.002\n[[md.types]]\nname = \"A\"\n"
                       "fraction = 0.5\n");
  EXPECT_EQ(d.get_string("md.types.0.name"), "B");
  EXPECT_EQ(d.get_string("md.types.1.name"), "A");
}

// --- Messages that point the right way ---------------------------------------------------------------------

// Before: "fluid.reynolds" -> "did you mean 'md.lattice.cells'?", [mdd] -> 'md.dt', and key errors named the
// file without a line.
TEST(Deck, DidYouMeanOnlyForCloseKeysSameSectionFirst) {
  EXPECT_EQ(validate_error("[run]\nsolver = \"fluid\"\n[fluid]\nreynolds = 1600\n"),
            "deck.toml:4: unknown key 'fluid.reynolds'; [fluid] has the keys n, viscosity, dt, cfl, cfl_limit, time_end, "
            "init, decomposition, fft_plan, fft_batch, dealias, seed, random_peak, random_energy, forcing, "
            "forcing_rate, forcing_kmax, spectrum_every, field_every, blowup_factor");
  EXPECT_EQ(validate_error("[mdd]\ndt = 0.01\n"), "deck.toml:1: unknown section [mdd]; did you mean [md]?");
  EXPECT_EQ(validate_error("[run]\nsteps = 1\n[md.latice]\ncells = [2, 2, 2]\n"),
            "deck.toml:3: unknown section [md.latice]; did you mean [md.lattice]?");
  EXPECT_EQ(validate_error("[run]\nsteps = 1\n\n[md]\ndtt = 0.01\n"),
            "deck.toml:5: unknown key 'md.dtt'; did you mean 'md.dt'?");
  // The same section first: fluid.dtt is fluid.dt, not md.dt; run.dt has no close key in [run], md.dt is the
  // first key named dt.
  EXPECT_EQ(validate_error("[fluid]\ndtt = 0.1\n"), "deck.toml:2: unknown key 'fluid.dtt'; did you mean 'fluid.dt'?");
  EXPECT_EQ(validate_error("[run]\ndt = 0.1\n"), "deck.toml:2: unknown key 'run.dt'; did you mean 'md.dt'?");
  EXPECT_EQ(validate_error("[run]\nfoo = 1\n"), "deck.toml:2: unknown key 'run.foo'; [run] has the keys solver, steps, thermo_every, output_dir, "
            "progress_seconds, time_limit, stage");
  EXPECT_CONTAINS(validate_error("[md]\nfoo = 1\n"), "; [md] has the keys units, dt, cutoff,");
  EXPECT_CONTAINS(validate_error("[md]\nfoo = 1\n"),
                  " and the sections [md.pair], [md.kspace], [md.bond], [md.angle], [md.dihedral], [md.special_bonds], [md.lattice], ");
  EXPECT_EQ(validate_error("x = 1\n"), "deck.toml:1: unknown key 'x'; a deck has the sections [run], [checkpoint], "
                                        "[comm], [cloud], [report], [md], [fluid]");
  using spotrun::launcher::closest_key;
  EXPECT_EQ(closest_key("fluid.reynolds"), "");
  EXPECT_EQ(closest_key("md.x"), "");  // one letter in place of another is not close
  EXPECT_EQ(spotrun::launcher::spotrun_deck_schema()->closest_section("mdd"), "md");
  EXPECT_EQ(spotrun::launcher::spotrun_deck_schema()->closest_section("solver"), "");
}

TEST(Deck, KeyErrorsNameTheirLineOrTheirSet) {
  EXPECT_EQ(validate_error("[run]\nsteps = 1\n[md]\n\ndt = -0.01\n"),
            "deck.toml:5: key 'md.dt' = -0.01: out of range; allowed: > 0 and <= 1000 (tau)");
  EXPECT_EQ(validate_error("[md.lattice]\ncells = [\n  2,\n  0,\n  2]\n"),
            "deck.toml:2: key 'md.lattice.cells' = [2, 0, 2]: each component must be >= 1 and <= 100000");
  EXPECT_EQ(validate_error("[[md.types]]\nname = \"A\"\nmas = 2.0\n"),
            "deck.toml:3: unknown key 'md.types[0].mas' in a [[md.types]] table; allowed: name, mass, fraction");
  EXPECT_EQ(validate_error("[run]\n[[md.types]]\nmass = 2.0\n"),
            "deck.toml:2: 'md.types[0]' has no key 'name' (Name of the type (unique))");
  Deck d = Deck::parse("[md]\ndt = 0.01\n", "deck.toml");
  d.apply_set("md.dt=-1");
  EXPECT_EQ(input_error([&] { d.validate(); }),
            "deck.toml: --set 'md.dt=-1': key 'md.dt' = -1: out of range; allowed: > 0 and <= 1000 (tau)");
  EXPECT_EQ(d.where("md.dt"), "deck.toml: --set 'md.dt=-1'");
  EXPECT_EQ(d.where("md.cutoff"), "deck.toml");
  const Deck t = valid("[run]\n\n[[md.types]]\nname = \"A\"\nfraction = 0.5\n[[md.types]]\nname = \"B\"\nfraction = 0.5\n");
  EXPECT_EQ(t.where("md.types.1.name"), "deck.toml:7");
  EXPECT_EQ(t.where("md.types"), "deck.toml:3");
}

// Before: "md.dt" = 1 under [md] was told to write dt = ... under [md.md].
TEST(Deck, QuotedKeyHintNamesTheRightSection) {
  EXPECT_EQ(parse_error("[md]\n\"md.dt\" = 0.01\n"),
            "deck.toml:2: key \"md.dt\" in [md] is quoted and contains a dot, so it is one name, not a dotted path: "
            "write dt = ... under [md]");
  EXPECT_EQ(parse_error("[run]\n\"md.dt\" = 0.01\n"),
            "deck.toml:2: key \"md.dt\" in [run] is quoted and contains a dot, so it is one name, not a dotted path: "
            "write dt = ... under [md]");
  EXPECT_EQ(parse_error("[md]\n\"pair.epsilon\" = 2.0\n"),
            "deck.toml:2: key \"pair.epsilon\" in [md] is quoted and contains a dot, so it is one name, not a dotted "
            "path: write pair.epsilon = ... under [md] (or epsilon = ... under [md.pair])");
  EXPECT_EQ(parse_error("\"md.pair.epsilon\" = 2.0\n"),
            "deck.toml:1: key \"md.pair.epsilon\" is quoted and contains a dot, so it is one name, not a dotted "
            "path: write md.pair.epsilon = ... (or epsilon = ... under [md.pair])");
  EXPECT_EQ(parse_error("[md]\n[\"md.pair\"]\n"),
            "deck.toml:2: table name \"md.pair\" is quoted and contains a dot, so it is one name, not a dotted path: "
            "write [md.pair]");
}

// Before: a time limit within the stop reserve was obeyed by stopping at the first step.
TEST(Deck, TimeLimitWithinTheStopReserveIsRefused) {
  EXPECT_EQ(validate_error("[run]\nsteps = 10\ntime_limit = 1.5\n"),
            "deck.toml:3: key 'run.time_limit' = 1.5 s is not longer than the stop reserve, 2 s "
            "(checkpoint.safety_factor 2 times the cost of a checkpoint, at least 1 s, plus two steps): the run "
            "would stop at its first step; allowed: 0 (no limit) or more than 2 s");
  EXPECT_CONTAINS(validate_error("[run]\ntime_limit = \"00:00:02\"\n"), "'run.time_limit' = 2 s is not longer");
  // The reserve follows checkpoint.safety_factor.
  Deck d = Deck::parse("[run]\ntime_limit = 30\n[checkpoint]\nsafety_factor = 40.0\n", "deck.toml");
  EXPECT_CONTAINS(input_error([&] { d.validate(); }), "deck.toml:2: key 'run.time_limit' = 30 s is not longer than "
                                                      "the stop reserve, 40 s (checkpoint.safety_factor 40 times");
  d.apply_set("checkpoint.safety_factor=10");
  EXPECT_NO_THROW(d.validate());
  d.apply_set("run.time_limit=5");
  EXPECT_CONTAINS(input_error([&] { d.validate(); }), "deck.toml: --set 'run.time_limit=5': key 'run.time_limit' = 5 s");
  EXPECT_NO_THROW(valid("[run]\ntime_limit = 2.5\n"));
  EXPECT_NO_THROW(valid("[run]\ntime_limit = 0\n"));
}

// [md.minimize]: the keys reach MdConfig (their defaults without the section, which leaves the minimisation
// off), and a value out of its range or choices is refused naming the key, the value and what is allowed.
TEST(Deck, MinimizeKeysReachMdConfigAndAreChecked) {
  const auto off = spotrun::md::config_from_deck(valid("[run]\nsteps = 1\n"));
  EXPECT_FALSE(off.minimize.enabled);
  const auto defaults = spotrun::md::config_from_deck(valid("[run]\nsteps = 0\n[md.minimize]\n"));
  EXPECT_TRUE(defaults.minimize.enabled);
  EXPECT_EQ(defaults.minimize.style, spotrun::md::MinStyle::Cg);
  EXPECT_EQ(defaults.minimize.etol, 1e-8);
  EXPECT_EQ(defaults.minimize.ftol, 1e-10);
  EXPECT_EQ(defaults.minimize.max_iterations, 1000);
  EXPECT_EQ(defaults.minimize.max_evaluations, 10000);
  EXPECT_EQ(defaults.minimize.dmax, 0.1);
  const auto c = spotrun::md::config_from_deck(valid(
      "[run]\nsteps = 0\n[md.minimize]\nstyle = \"fire\"\netol = 0.0\nftol = 1e-6\nmax_iterations = 50\n"
      "max_evaluations = 70\ndmax = 0.05\n"));
  EXPECT_EQ(c.minimize.style, spotrun::md::MinStyle::Fire);
  EXPECT_EQ(c.minimize.etol, 0.0);
  EXPECT_EQ(c.minimize.ftol, 1e-6);
  EXPECT_EQ(c.minimize.max_iterations, 50);
  EXPECT_EQ(c.minimize.max_evaluations, 70);
  EXPECT_EQ(c.minimize.dmax, 0.05);
  EXPECT_EQ(validate_error("[md.minimize]\nstyle = \"sd\"\n"),
            "deck.toml:2: key 'md.minimize.style' = \"sd\": allowed: one of \"cg\", \"fire\"");
  EXPECT_CONTAINS(validate_error("[md.minimize]\ndmax = 0.0\n"), "key 'md.minimize.dmax' = 0.0: out of range; allowed: > 0 and <= 1000 (sigma)");
  EXPECT_CONTAINS(validate_error("[md.minimize]\netol = 2.0\n"), "key 'md.minimize.etol' = 2.0: out of range; allowed: >= 0 and <= 1");
  EXPECT_CONTAINS(validate_error("[md.minimize]\nmax_evaluations = 0\n"),
                  "key 'md.minimize.max_evaluations' = 0: out of range; allowed: >= 1");
}
