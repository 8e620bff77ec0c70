// launcher::Deck: TOML decks validated against the schema (launcher/deck_schema.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "comm/errors.hpp"
#include "launcher/deck.hpp"
#include "launcher/run.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using spotrun::InputError;
using spotrun::launcher::Deck;
using spotrun::launcher::KeyType;

namespace {

// The InputError message of f(), or a test failure when f() does not throw one.
std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InputError, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InputError, nothing was thrown";
  return {};
}

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
      case KeyType::Duration: EXPECT_EQ(a.get_seconds(s.key), b.get_seconds(s.key)); break;
    }
  }
}

const char* k_custom_deck = R"(# a deck with a value for most keys
[run]
steps = 250
thermo_every = 50
output_dir = "runs/custom"

[md]
dt = 0.0025
cutoff = 3
skin = 0.25
neighbor_every = 5
neighbor_check = false
ensemble = "langevin"
temperature = 1.5
damp = 1e-5
seed = 9000000000000000000

[md.pair]
epsilon = 2
sigma = 1.3
shift = true

[md.lattice]
density = 0.8442
cells = [6, 4, 5]
temperature = 3.0
seed = 1
)";

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
  const auto c = spotrun::launcher::md_config_from_deck(valid(""));
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
  EXPECT_EQ(c.epsilon, d.epsilon);
  EXPECT_EQ(c.sigma, d.sigma);
  EXPECT_EQ(c.shift, d.shift);
  EXPECT_EQ(c.from_lattice, d.from_lattice);
  EXPECT_EQ(c.lattice_type, d.lattice_type);
  EXPECT_EQ(c.density, d.density);
  EXPECT_EQ(c.cells, d.cells);
  EXPECT_EQ(c.lattice_temperature, d.lattice_temperature);
  EXPECT_EQ(c.lattice_seed, d.lattice_seed);
}

TEST(Deck, CustomValuesReachMdConfig) {
  const auto c = spotrun::launcher::md_config_from_deck(valid(k_custom_deck));
  EXPECT_EQ(c.dt, 0.0025);
  EXPECT_EQ(c.cutoff, 3.0);
  EXPECT_EQ(c.neighbor_every, 5);
  EXPECT_FALSE(c.neighbor_check);
  EXPECT_EQ(c.ensemble, spotrun::md::Ensemble::Langevin);
  EXPECT_EQ(c.damp, 1e-5);
  EXPECT_EQ(c.seed, 9000000000000000000ull);
  EXPECT_EQ(c.epsilon, 2.0);
  EXPECT_EQ(c.sigma, 1.3);
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
        Case{"[md]\nensemble = \"npt\"\n", {"md.ensemble", "\"npt\"", "\"nve\"", "\"langevin\""}},
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
  EXPECT_CONTAINS(msg, "deck.toml");
  EXPECT_CONTAINS(msg, "[md.lattice]");
  EXPECT_CONTAINS(msg, "[md.initial]");
  // [md.initial] needs its data file.
  EXPECT_CONTAINS(validate_error("[md.initial]\n"), "lammps_data");
  // Either one alone is fine.
  const Deck d = valid("[md.initial]\nlammps_data = \"lj.data\"\n");
  EXPECT_EQ(d.get_string("md.initial.lammps_data"), "lj.data");
  EXPECT_FALSE(spotrun::launcher::md_config_from_deck(d).from_lattice);
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
  EXPECT_EQ(valid("[run]\ntime_limit = 1.5\n").get_seconds("run.time_limit"), 1.5);
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
  for (const char* text : {"", k_custom_deck, "[run]\nsteps = 7\n[md.initial]\nlammps_data = \"data/lj.data\"\n"}) {
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
