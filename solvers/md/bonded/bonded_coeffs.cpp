#include "bonded_coeffs.hpp"

#include <algorithm>
#include <cstdio>

#include "comm/errors.hpp"

namespace spotrun::md {

namespace {

// A value as a message shows it: up to 15 significant digits, "30", "1.5", "-1".
std::string value_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", x);
  return text;
}

// "md.bond.coeff.0.k" (a key as BondedKeyWhere takes it) and "md.bond.coeff[0].k" (as messages show it).
std::string table_key(BondedKind kind, std::size_t k, const std::string& field) {
  return std::string(bonded_kind_info(kind).key) + ".coeff." + std::to_string(k) + (field.empty() ? "" : "." + field);
}
std::string shown_key(BondedKind kind, std::size_t k, const std::string& field) {
  return std::string(bonded_kind_info(kind).key) + ".coeff[" + std::to_string(k) + "]" +
         (field.empty() ? "" : "." + field);
}

// The message about a deck key, led by where it comes from when that is known.
InputError key_error(const BondedKeyWhere& where, const std::string& key, const std::string& message) {
  const std::string at = where ? where(key) : std::string();
  return InputError(at.empty() ? message : at + ": " + message);
}

// "bond style \"fene\" (md.bond.style)".
std::string style_words(const BondedStyleInfo& style, const std::string& style_source) {
  return std::string(bonded_kind_info(style.kind).name) + " style \"" + style.name + "\" (" + style_source + ")";
}

// "Spring constant K" -> "spring constant K", for the middle of a sentence.
std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

// "a Bond Coeffs section", "an Angle Coeffs section".
std::string article(const std::string& word) {
  return std::string(word.find_first_of("AEIOUaeiou") == 0 ? "an " : "a ") + word;
}

std::string plural(std::size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::vector<double> bonded_table_values(const BondedStyleInfo& style, const BondedCoeffSpec& spec, std::size_t k,
                                        const std::string& style_source, const BondedKeyWhere& where) {
  const BondedKind kind = style.kind;
  for (const auto& [name, value] : spec.values)
    if (style.index(name) < 0)
      throw key_error(where, table_key(kind, k, name),
                      shown_key(kind, k, name) + ": not a coefficient of " + style_words(style, style_source) +
                          "; its coefficients: " + style.names());
  std::vector<double> v;
  for (const auto& p : style.params) {
    const auto it =
        std::find_if(spec.values.begin(), spec.values.end(), [&](const auto& nv) { return nv.first == p.name; });
    if (it == spec.values.end())
      throw key_error(where, table_key(kind, k, ""),
                      "'" + shown_key(kind, k, "") + "' has no key '" + p.name + "' (" + lower_first(p.help) + "); " +
                          style_words(style, style_source) + " takes " + style.names());
    if (const std::string why = bonded_value_problem(p, it->second); !why.empty())
      throw key_error(where, table_key(kind, k, p.name),
                      shown_key(kind, k, p.name) + " = " + value_text(it->second) + ": " +
                          style_words(style, style_source) + ": " + why);
    v.push_back(it->second);
  }
  return v;
}

void check_bonded_types_unique(const MdConfig& cfg, BondedKind kind, const BondedKeyWhere& where) {
  const auto& tables = cfg.bonded(kind).coeffs;
  for (std::size_t i = 0; i < tables.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (tables[i].type == tables[j].type)
        throw key_error(where, table_key(kind, i, "type"),
                        shown_key(kind, i, "type") + " = " + std::to_string(tables[i].type) + ": " +
                            bonded_kind_info(kind).name + " type " + std::to_string(tables[i].type) +
                            " is also given in " + shown_key(kind, j, "") + "; give each type once");
}

std::string bonded_style_of(const MdConfig& cfg, BondedKind kind, const io::LammpsCoeffs* file) {
  if (!cfg.bonded(kind).style.empty()) return cfg.bonded(kind).style;
  if (file && file->present) return file->style;
  return "";
}

std::vector<std::vector<double>> resolve_bonded_coeffs(const MdConfig& cfg, BondedKind kind, int ntypes,
                                                       const io::LammpsCoeffs* file, const std::string& file_name,
                                                       std::size_t count) {
  const BondedKindInfo& info = bonded_kind_info(kind);
  const BondedStyleConfig& deck = cfg.bonded(kind);
  const std::string key = info.key, name = info.name, section = info.section;
  const bool has_file = file && file->present;
  // The file and the section's header line: "kg.data:12" ("kg.data" where the line is not known).
  const std::string file_text = file_name.empty() ? "the data file" : file_name;
  const std::string at_file = file_text + (has_file && file->line > 0 ? ":" + std::to_string(file->line) : "");

  // The types the deck names: each in 1..ntypes, each once.
  check_bonded_types_unique(cfg, kind);
  for (std::size_t k = 0; k < deck.coeffs.size(); ++k) {
    const int t = deck.coeffs[k].type;
    if (t < 1 || t > ntypes)
      throw InputError(shown_key(kind, k, "type") + " = " + std::to_string(t) + ": " +
                       (ntypes == 0 ? "the system has no " + name + " types"
                                    : "the " + name + " types are 1.." + std::to_string(ntypes)) +
                       (file_name.empty() ? "" : " (" + file_name + ")"));
  }

  // The style: the deck's, else the file section's comment.
  std::string style_name = deck.style, style_source = key + ".style";
  if (style_name.empty() && has_file && !file->style.empty()) {
    style_name = file->style;
    style_source = at_file + " '" + section + " # " + file->style + "'";
  }
  if (style_name.empty()) {
    if (ntypes == 0) return {};
    const std::string held = count > 0 ? plural(count, name, info.plural) + " of " + plural(ntypes, "type", "types")
                                       : plural(static_cast<std::size_t>(ntypes), name + " type", name + " types");
    throw InputError(file_text + ": the data file has " + held + "; give [" + key + "] style (allowed: " +
                     quoted_bonded_style_names(kind) + "), or " + article(section) +
                     " section whose header names it (\"" + section + " # " + bonded_style_names(kind).front() + "\")");
  }
  const BondedStyleInfo* style = find_bonded_style(kind, style_name);
  if (!style && !deck.style.empty())
    throw InputError(key + ".style: " + name + " style '" + style_name + "' is not known; allowed: " +
                     quoted_bonded_style_names(kind));
  if (!style)
    throw InputError(style_source + ": " + name + " style \"" + style_name + "\" is not one spotrun has; allowed: " +
                     quoted_bonded_style_names(kind) + " (give [" + key + "] style and the coefficients in [[" + key +
                     ".coeff]])");
  if (!deck.style.empty() && has_file && !file->style.empty() && file->style != deck.style)
    throw InputError(at_file + ": " + section + " # " + file->style + ": the file's coefficients are of " + name +
                     " style \"" + file->style + "\", but " + key + ".style is \"" + deck.style +
                     "\"; make them agree, or give every type in [[" + key + ".coeff]] and remove the section");

  // The deck's tables, then the file's rows for the types they leave.
  const std::size_t n = static_cast<std::size_t>(std::max(ntypes, 0));
  std::vector<std::vector<double>> rows(n);
  std::vector<char> given(n, 0);
  for (std::size_t k = 0; k < deck.coeffs.size(); ++k) {
    const std::size_t t = static_cast<std::size_t>(deck.coeffs[k].type - 1);
    rows[t] = bonded_table_values(*style, deck.coeffs[k], k, style_source);
    given[t] = 1;
  }
  if (has_file) {
    if (file->rows.size() != n)
      throw InputError(at_file + ": " + section + " has " + plural(file->rows.size(), "row", "rows") + ", but the " +
                       name + " types are 1.." + std::to_string(n));
    for (std::size_t t = 0; t < n; ++t) {
      const auto& row = file->rows[t];
      const std::string of = at_file + ": " + section + ", " + name + " type " + std::to_string(t + 1);
      // Every row has the style's shape, also one a deck table overrides: another shape is another style.
      if (row.size() != style->params.size())
        throw InputError(of + ": " + plural(row.size(), "value", "values") + "; " + style_words(*style, style_source) +
                         " takes " + std::to_string(style->params.size()) + ": " + style->names());
      if (given[t]) continue;
      for (std::size_t q = 0; q < row.size(); ++q)
        if (const std::string why = bonded_value_problem(style->params[q], row[q]); !why.empty())
          throw InputError(of + ": " + style->params[q].name + " = " + value_text(row[q]) + ": " +
                           style_words(*style, style_source) + ": " + why);
      rows[t] = row;
      given[t] = 1;
    }
  }
  for (std::size_t t = 0; t < n; ++t)
    if (!given[t])
      throw InputError(name + " type " + std::to_string(t + 1) + " has no coefficients: give [[" + key +
                       ".coeff]] with type = " + std::to_string(t + 1) + " or " + article(section) + " section" +
                       (file_name.empty() ? "" : " in " + file_name));
  return rows;
}

}  // namespace spotrun::md
