#include "fluid_config.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "comm/errors.hpp"

namespace spotrun::launcher {
namespace {

const KeySpec& spec_of(const std::string& key) {
  for (const auto& s : fluid_deck_schema())
    if (s.key == key) return s;
  throw std::logic_error("fluid key '" + key + "' is not in fluid_deck_schema()");
}

toml::value default_of(const KeySpec& s) {
  std::istringstream in("v = " + s.default_value);
  return toml::find(toml::parse(in, "default"), "v");
}

std::string range_text(const KeySpec& s) {
  std::ostringstream r;
  if (!s.choices.empty()) {
    r << "one of";
    for (std::size_t i = 0; i < s.choices.size(); ++i) r << (i ? ", " : " ") << '"' << s.choices[i] << '"';
    return r.str();
  }
  r << (s.min_exclusive ? "> " : ">= ") << s.min;
  if (s.max < 1e299) r << " and <= " << s.max;
  return r.str();
}

class Reader {
 public:
  explicit Reader(const Deck& d) : m_deck(d) {}

  double number(const std::string& key) const {
    const KeySpec& s = spec_of(key);
    double v = 0;
    if (!m_deck.has(key)) {
      const toml::value t = default_of(s);
      v = t.is_integer() ? static_cast<double>(t.as_integer()) : t.as_floating();
    } else {
      try {
        v = m_deck.get_float(key);
      } catch (const std::exception&) {
        bad(key, "expected a number");
      }
    }
    check_range(s, v, key);
    return v;
  }
  std::int64_t integer(const std::string& key) const {
    const KeySpec& s = spec_of(key);
    std::int64_t v = 0;
    if (!m_deck.has(key)) {
      v = default_of(s).as_integer();
    } else {
      try {
        v = m_deck.get_int(key);
      } catch (const std::exception&) {
        bad(key, "expected an integer");
      }
    }
    check_range(s, static_cast<double>(v), key);
    return v;
  }
  std::string text(const std::string& key) const {
    const KeySpec& s = spec_of(key);
    std::string v;
    if (!m_deck.has(key)) {
      v = default_of(s).as_string().str;
    } else {
      try {
        v = m_deck.get_string(key);
      } catch (const std::exception&) {
        bad(key, "expected a string");
      }
    }
    if (!s.choices.empty() && std::find(s.choices.begin(), s.choices.end(), v) == s.choices.end())
      bad(key, "'" + v + "' is not allowed; allowed: " + range_text(s));
    return v;
  }
  std::array<int, 3> int3(const std::string& key) const {
    const KeySpec& s = spec_of(key);
    std::array<int, 3> v{0, 0, 0};
    if (!m_deck.has(key)) {
      const auto t = default_of(s);
      for (int d = 0; d < 3; ++d) v[d] = static_cast<int>(t.as_array().at(d).as_integer());
    } else {
      try {
        v = m_deck.get_int3(key);
      } catch (const std::exception&) {
        bad(key, "expected an array of 3 integers");
      }
    }
    for (int d = 0; d < 3; ++d)
      if (v[d] < s.min || v[d] > s.max) bad(key, "each component must be " + range_text(s) + " (" + s.unit + ")");
    return v;
  }

 private:
  [[noreturn]] void bad(const std::string& key, const std::string& why) const {
    throw InputError(m_deck.name() + ": key '" + key + "': " + why);
  }
  void check_range(const KeySpec& s, double v, const std::string& key) const {
    if (!std::isfinite(v) || v < s.min || v > s.max || (s.min_exclusive && v == s.min))
      bad(key, "out of range; allowed: " + range_text(s) + " (" + s.unit + ")");
  }
  const Deck& m_deck;
};

}  // namespace

fluid::FluidConfig fluid_config_from_deck(const Deck& d) {
  const Reader r(d);
  fluid::FluidConfig c;
  c.n = r.int3("fluid.n");
  c.viscosity = r.number("fluid.viscosity");
  c.dt = r.number("fluid.dt");
  c.cfl = r.number("fluid.cfl");
  c.cfl_limit = r.number("fluid.cfl_limit");
  c.time_end = r.number("fluid.time_end");
  c.init = fluid::parse_init(r.text("fluid.init"));
  c.decomposition = fft::parse_decomposition(r.text("fluid.decomposition"));
  c.fft_plan = fft::parse_plan_rigor(r.text("fluid.fft_plan"));
  c.dealias = fluid::parse_dealias(r.text("fluid.dealias"));
  c.seed = static_cast<std::uint64_t>(r.integer("fluid.seed"));
  c.random_peak = r.number("fluid.random_peak");
  c.random_energy = r.number("fluid.random_energy");
  c.forcing = fluid::parse_forcing(r.text("fluid.forcing"));
  c.forcing_rate = r.number("fluid.forcing_rate");
  c.forcing_kmax = r.number("fluid.forcing_kmax");
  c.spectrum_every = r.integer("fluid.spectrum_every");
  c.field_every = r.integer("fluid.field_every");
  c.blowup_factor = r.number("fluid.blowup_factor");
  if (c.cfl > c.cfl_limit)
    throw InputError(d.name() + ": fluid.cfl = " + std::to_string(c.cfl) + " exceeds fluid.cfl_limit = " +
                     std::to_string(c.cfl_limit));
  return c;
}

}  // namespace spotrun::launcher
