#include "pair_coeffs.hpp"

#include <algorithm>
#include <cmath>

#include "comm/errors.hpp"

namespace spotrun::md {

double PairCoeffs::max_cutoff() const {
  double m = 0;
  for (int i = 1; i <= ntypes; ++i)
    for (int j = 1; j <= ntypes; ++j) m = std::max(m, at(cutoff, i, j));
  return m;
}

double PairCoeffs::min_sigma() const {
  double m = at(sigma, 1, 1);
  for (int i = 1; i <= ntypes; ++i)
    for (int j = 1; j <= ntypes; ++j) m = std::min(m, at(sigma, i, j));
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

PairCoeffs resolve_pair_coeffs(const MdConfig& cfg, const std::vector<std::string>& names) {
  PairCoeffs p;
  p.ntypes = static_cast<int>(names.size());
  p.names = names;
  const int n1 = p.ntypes + 1;
  p.epsilon.assign(static_cast<std::size_t>(n1 * n1), 0.0);
  p.sigma = p.epsilon;
  p.cutoff = p.epsilon;
  std::vector<char> given(static_cast<std::size_t>(n1 * n1), 0);
  auto type_of = [&](const std::string& name, std::size_t k) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "\"" : ", \"") + n + "\"";
      throw InputError("md.pair.coeff[" + std::to_string(k) + "].types: no atom type named \"" + name +
                       "\"; the types are " + known + (cfg.types.empty() ? " (numbered: the deck has no md.types)" : ""));
    }
    return static_cast<int>(it - names.begin()) + 1;
  };
  for (std::size_t k = 0; k < cfg.pair_coeffs.size(); ++k) {
    const auto& c = cfg.pair_coeffs[k];
    const int i = type_of(c.type_a, k), j = type_of(c.type_b, k);
    if (given[i * n1 + j])
      throw InputError("md.pair.coeff[" + std::to_string(k) + "]: the pair \"" + c.type_a + "\" \"" + c.type_b +
                       "\" is given twice");
    for (const auto ij : {i * n1 + j, j * n1 + i}) {
      p.epsilon[ij] = c.epsilon;
      p.sigma[ij] = c.sigma;
      p.cutoff[ij] = c.cutoff > 0 ? c.cutoff : cfg.cutoff;
      given[ij] = 1;
    }
  }
  for (int i = 1; i <= p.ntypes; ++i)
    if (!given[i * n1 + i]) {
      p.epsilon[i * n1 + i] = cfg.epsilon;
      p.sigma[i * n1 + i] = cfg.sigma;
      p.cutoff[i * n1 + i] = cfg.cutoff;
    }
  const bool geometric = cfg.mix == PairMix::Geometric;
  auto mix_distance = [&](double a, double b) { return geometric ? std::sqrt(a * b) : 0.5 * (a + b); };
  for (int i = 1; i <= p.ntypes; ++i)
    for (int j = 1; j <= p.ntypes; ++j) {
      if (i == j || given[i * n1 + j]) continue;
      p.epsilon[i * n1 + j] = std::sqrt(p.at(p.epsilon, i, i) * p.at(p.epsilon, j, j));
      p.sigma[i * n1 + j] = mix_distance(p.at(p.sigma, i, i), p.at(p.sigma, j, j));
      p.cutoff[i * n1 + j] = mix_distance(p.at(p.cutoff, i, i), p.at(p.cutoff, j, j));
    }
  return p;
}

double max_configured_cutoff(const MdConfig& cfg) {
  double m = cfg.cutoff;
  for (const auto& c : cfg.pair_coeffs) m = std::max(m, c.cutoff);
  return m;
}

}  // namespace spotrun::md
