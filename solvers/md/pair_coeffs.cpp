#include "pair_coeffs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "comm/errors.hpp"
#include "pair.hpp"

namespace spotrun::md {

double PairCoeffs::max_cutoff() const {
  double m = 0;
  for (int i = 1; i <= ntypes; ++i)
    for (int j = 1; j <= ntypes; ++j) {
      m = std::max(m, at(cutoff, i, j));
      if (!coul_cutoff.empty()) m = std::max(m, at(coul_cutoff, i, j));
    }
  return m;
}

double PairCoeffs::min_contact() const {
  const int k = style.index(style.contact);
  if (k < 0) return 0.0;  // a style without a contact distance (coul/cut)
  double m = value(k, 1, 1);
  for (int i = 1; i <= ntypes; ++i)
    for (int j = 1; j <= ntypes; ++j) m = std::min(m, value(k, i, j));
  return m;
}

std::vector<std::string> type_names(const MdConfig& cfg, int ntypes, const std::string& source) {
  if (cfg.types.empty()) {
    std::vector<std::string> names;
    for (int t = 1; t <= ntypes; ++t) names.push_back(std::to_string(t));
    return names;
  }
  if (static_cast<int>(cfg.types.size()) != ntypes)
    throw InputError("md.types names " + std::to_string(cfg.types.size()) + " atom type(s), but " + source + " has " +
                     std::to_string(ntypes));
  std::vector<std::string> names;
  for (const auto& t : cfg.types) names.push_back(t.name);
  return names;
}

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "\"" : ", \"") + n + "\"";
  return s;
}

// The values of one [[md.pair.coeff]] entry in the style's order; InputError for a coefficient missing or
// not the style's.
std::vector<double> entry_values(const PairCoeffSpec& c, std::size_t k, const PairStyleInfo& style) {
  const std::string at = "md.pair.coeff[" + std::to_string(k) + "]";
  for (const auto& [name, value] : c.values)
    if (style.index(name) < 0)
      throw InputError(at + "." + name + ": not a coefficient of pair style \"" + style.name + "\" (md.pair.style); " +
                       (style.params.empty() ? std::string("it has none but the cutoff")
                                             : "its coefficients: " + style.names(true)));
  std::vector<double> v;
  for (const auto& p : style.params) {
    const auto it = std::find_if(c.values.begin(), c.values.end(), [&](const auto& nv) { return nv.first == p.name; });
    if (it == c.values.end())
      throw InputError("'" + at + "' has no key '" + p.name + "' (" + p.help + " of the pair; pair style \"" +
                       style.name + "\")");
    v.push_back(it->second);
  }
  return v;
}

// The [md.pair] default of coefficient p for a type's own pair.
double type_default(const MdConfig& cfg, const PairParam& p) {
  for (const auto& [name, value] : cfg.pair_defaults)
    if (name == p.name) return value;
  return std::strtod(p.type_default, nullptr);
}

}  // namespace

PairCoeffs resolve_pair_coeffs(const MdConfig& cfg, const std::vector<std::string>& names, const PairStyleInfo& style) {
  PairCoeffs p;
  p.ntypes = static_cast<int>(names.size());
  p.names = names;
  p.style = style;
  const int n1 = p.ntypes + 1;
  const std::size_t nparams = style.params.size();
  p.values.assign(nparams, std::vector<double>(static_cast<std::size_t>(n1 * n1), 0.0));
  p.cutoff.assign(static_cast<std::size_t>(n1 * n1), 0.0);
  if (style.charged) p.coul_cutoff.assign(static_cast<std::size_t>(n1 * n1), 0.0);
  std::vector<char> given(static_cast<std::size_t>(n1 * n1), 0);
  auto type_of = [&](const std::string& name, std::size_t k) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw InputError("md.pair.coeff[" + std::to_string(k) + "].types: no atom type named \"" + name +
                       "\"; the types are " + quoted_list(names) +
                       (cfg.types.empty() ? " (numbered: the deck has no md.types)" : ""));
    return static_cast<int>(it - names.begin()) + 1;
  };
  for (std::size_t k = 0; k < cfg.pair_coeffs.size(); ++k) {
    const auto& c = cfg.pair_coeffs[k];
    const int i = type_of(c.type_a, k), j = type_of(c.type_b, k);
    if (given[i * n1 + j])
      throw InputError("md.pair.coeff[" + std::to_string(k) + "]: the pair \"" + c.type_a + "\" \"" + c.type_b +
                       "\" is given twice");
    const std::vector<double> v = entry_values(c, k, style);
    for (const auto ij : {i * n1 + j, j * n1 + i}) {
      for (std::size_t q = 0; q < nparams; ++q) p.values[q][ij] = v[q];
      p.cutoff[ij] = c.cutoff > 0 ? c.cutoff : cfg.cutoff;
      if (style.charged)
        p.coul_cutoff[ij] = c.cutoff > 0 && !style.global_coulomb_cutoff ? c.cutoff : cfg.coulomb_cutoff_or_default();
      given[ij] = 1;
    }
  }
  // A type's own pair not given: the [md.pair] defaults, where the style has them.
  for (int i = 1; i <= p.ntypes; ++i) {
    if (given[i * n1 + i]) continue;
    if (!style.has_type_defaults())
      throw InputError("md.pair.coeff: pair style \"" + style.name + "\" has no defaults for a type's own pair; give "
                       "[[md.pair.coeff]] types = [\"" + names[i - 1] + "\", \"" + names[i - 1] + "\"] with " +
                       style.names(false) + " (LAMMPS: All pair coeffs are not set)");
    for (std::size_t q = 0; q < nparams; ++q) p.values[q][i * n1 + i] = type_default(cfg, style.params[q]);
    p.cutoff[i * n1 + i] = cfg.cutoff;
    if (style.charged) p.coul_cutoff[i * n1 + i] = cfg.coulomb_cutoff_or_default();
  }
  // Unlike pairs not given: mixed from the two types' own pairs, where the style mixes.
  const bool geometric = cfg.mix == PairMix::Geometric;
  auto mix_distance = [&](double a, double b) { return geometric ? std::sqrt(a * b) : 0.5 * (a + b); };
  for (int i = 1; i <= p.ntypes; ++i)
    for (int j = 1; j <= p.ntypes; ++j) {
      if (i == j || given[i * n1 + j]) continue;
      if (!style.mixes())
        throw InputError("md.pair.coeff: pair style \"" + style.name + "\" does not mix the coefficients of unlike "
                         "types; give [[md.pair.coeff]] types = [\"" + names[std::min(i, j) - 1] + "\", \"" +
                         names[std::max(i, j) - 1] + "\"] with " + style.names(false) +
                         " (LAMMPS: All pair coeffs are not set)");
      for (std::size_t q = 0; q < nparams; ++q) {
        const double a = p.value(q, i, i), b = p.value(q, j, j);
        p.values[q][i * n1 + j] = style.params[q].mix == PairParamMix::Geometric ? std::sqrt(a * b) : mix_distance(a, b);
      }
      p.cutoff[i * n1 + j] = mix_distance(p.at(p.cutoff, i, i), p.at(p.cutoff, j, j));
      if (style.charged) p.coul_cutoff[i * n1 + j] = mix_distance(p.at(p.coul_cutoff, i, i), p.at(p.coul_cutoff, j, j));
    }
  return p;
}

PairCoeffs resolve_pair_coeffs(const MdConfig& cfg, const std::vector<std::string>& names) {
  return PairStyles::resolve(cfg, names);
}

double max_configured_cutoff(const MdConfig& cfg) {
  double m = cfg.cutoff;
  for (const auto& c : cfg.pair_coeffs) m = std::max(m, c.cutoff);
  return m;
}

}  // namespace spotrun::md
