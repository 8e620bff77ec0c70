// The reader of LAMMPS data files (lammps_data.hpp): the header, then one method per section.
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "comm/errors.hpp"
#include "comm/process_grid.hpp"
#include "lammps_data.hpp"

namespace spotrun::io {
namespace {

std::string strip_comment(const std::string& line) {
  auto pos = line.find('#');
  std::string s = pos == std::string::npos ? line : line.substr(0, pos);
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// The text after '#' of a line, trimmed ("" without one).
std::string comment_of(const std::string& line) {
  const auto pos = line.find('#');
  return pos == std::string::npos ? std::string() : strip_comment(line.substr(pos + 1));
}

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

// The columns of an Atoms row of a style, without the image flags.
struct StyleColumns {
  bool molecule, charge;
  std::size_t count;
  const char* text;
};
StyleColumns columns_of(AtomStyle s) {
  switch (s) {
    case AtomStyle::Atomic: return {false, false, 5, "id type x y z"};
    case AtomStyle::Charge: return {false, true, 6, "id type q x y z"};
    case AtomStyle::Full: return {true, true, 7, "id mol type q x y z"};
    default: return {true, false, 6, "id mol type x y z"};  // bond, angle, molecular
  }
}

// How many of the topology kinds (bonds, angles, dihedrals, impropers, in that order) a style holds.
int kinds_held(AtomStyle s) {
  switch (s) {
    case AtomStyle::Bond: return 1;
    case AtomStyle::Angle: return 2;
    case AtomStyle::Molecular:
    case AtomStyle::Full: return 4;
    default: return 0;
  }
}

const char* k_kind_names[4] = {"bonds", "angles", "dihedrals", "impropers"};
const char* k_kind_sections[4] = {"Bonds", "Angles", "Dihedrals", "Impropers"};
const char* k_kind_type_words[4] = {"bond", "angle", "dihedral", "improper"};
const char* k_holders[4] = {"bond, angle, molecular or full", "angle, molecular or full", "molecular or full",
                            "molecular or full"};

class Parser {
 public:
  Parser(const std::string& text, const std::string& name, std::optional<AtomStyle> declared)
      : m_name(name), m_declared(declared) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) m_lines.push_back(line);
  }

  LammpsData parse() {
    header();
    sections();
    finish();
    return std::move(m_d);
  }

 private:
  [[noreturn]] void fail(std::size_t lineno, const std::string& what) const {
    throw InputError(m_name + ":" + std::to_string(lineno) + ": " + what);
  }

  double to_double(const std::string& w, std::size_t lineno, const char* what) const {
    try {
      std::size_t used = 0;
      double v = std::stod(w, &used);
      if (used != w.size() || !std::isfinite(v)) throw std::invalid_argument(w);
      return v;
    } catch (const std::exception&) {
      fail(lineno, std::string("expected a number for ") + what + ", got '" + w + "'");
    }
  }
  long long to_int(const std::string& w, std::size_t lineno, const char* what) const {
    try {
      std::size_t used = 0;
      long long v = std::stoll(w, &used);
      if (used != w.size()) throw std::invalid_argument(w);
      return v;
    } catch (const std::exception&) {
      fail(lineno, std::string("expected an integer for ") + what + ", got '" + w + "'");
    }
  }

  // The next `count` non-empty lines after the section header at m_i, each given to row(words, line).
  template <class Row>
  void read_rows(const std::string& section, std::size_t count, Row&& row) {
    const std::size_t section_line = m_i + 1;
    std::size_t got = 0;
    ++m_i;
    for (; m_i < m_lines.size() && got < count; ++m_i) {
      std::string r = strip_comment(m_lines[m_i]);
      if (r.empty()) continue;
      row(split(r), m_i + 1);
      ++got;
    }
    if (got < count)
      fail(section_line, section + " section has " + std::to_string(got) + " lines, expected " + std::to_string(count));
    --m_i;
  }

  // --- the header ------------------------------------------------------------------------------------
  void header() {
    bool have_box[3] = {false, false, false};
    for (m_i = 1; m_i < m_lines.size(); ++m_i) {  // the first line is a title
      const std::string s = strip_comment(m_lines[m_i]);
      if (s.empty()) continue;
      const auto w = split(s);
      const std::size_t ln = m_i + 1;
      if (w.size() == 4 && (w[2] == "xlo" || w[2] == "ylo" || w[2] == "zlo")) {
        const int dim = w[2][0] - 'x';
        if (w[3] != std::string(1, w[2][0]) + "hi") fail(ln, "malformed box line '" + s + "'");
        m_d.lo[dim] = to_double(w[0], ln, "the box bound");
        m_d.hi[dim] = to_double(w[1], ln, "the box bound");
        if (!(m_d.hi[dim] > m_d.lo[dim])) fail(ln, "box " + w[2] + " >= " + w[3]);
        have_box[dim] = true;
      } else if (w.size() == 6 && w[3] == "xy") {
        fail(ln, "triclinic boxes (xy xz yz) are not supported; spotrun needs an orthogonal box");
      } else if (!count_line(w, ln)) {
        break;  // the first section keyword
      }
    }
    if (m_natoms < 0) fail(m_i + 1, "header has no 'N atoms' line");
    if (m_d.ntypes < 1) fail(m_i + 1, "header has no 'N atom types' line");
    for (int dim = 0; dim < 3; ++dim)
      if (!have_box[dim])
        fail(m_i + 1, std::string("header has no '") + char('x' + dim) + "lo " + char('x' + dim) + "hi' line");
  }

  // A header line of counts ("864 atoms", "2 atom types", "120 bonds", "1 bond types", "2 extra bond per
  // atom"); false for another line.
  bool count_line(const std::vector<std::string>& w, std::size_t ln) {
    if (w.size() == 2 && w[1] == "atoms") {
      m_natoms = to_int(w[0], ln, "the atom count");
      if (m_natoms < 0) fail(ln, "negative atom count");
      return true;
    }
    if (w.size() == 3 && w[1] == "atom" && w[2] == "types") {
      m_d.ntypes = static_cast<int>(to_int(w[0], ln, "the number of atom types"));
      if (m_d.ntypes < 1) fail(ln, "at least 1 atom type is required");
      return true;
    }
    for (int k = 0; k < 4; ++k) {
      if (w.size() == 2 && w[1] == k_kind_names[k]) {
        m_counts[k] = to_int(w[0], ln, "a topology count");
        if (m_counts[k] < 0) fail(ln, std::string("negative number of ") + k_kind_names[k]);
        m_count_lines[k] = ln;
        return true;
      }
      if (w.size() == 3 && w[1] == k_kind_type_words[k] && w[2] == "types") {
        const long long n = to_int(w[0], ln, "a number of topology types");
        if (n < 0) fail(ln, std::string("negative number of ") + k_kind_type_words[k] + " types");
        topology(k).ntypes = static_cast<int>(n);
        return true;
      }
    }
    // "N extra bond per atom", "N extra special per atom": room LAMMPS reserves; spotrun sizes by itself.
    if (w.size() >= 4 && w[1] == "extra" && w.back() == "atom") {
      to_int(w[0], ln, "an extra count");
      return true;
    }
    return false;
  }

  LammpsTopology& topology(int k) {
    LammpsTopology* all[4] = {&m_d.bonds, &m_d.angles, &m_d.dihedrals, &m_d.impropers};
    return *all[k];
  }

  // --- the sections --------------------------------------------------------------------------------
  void sections() {
    m_d.masses.assign(m_d.ntypes, 0.0);
    m_mass_set.assign(m_d.ntypes, false);
    for (; m_i < m_lines.size(); ++m_i) {
      const std::string raw = m_lines[m_i];
      const std::string s = strip_comment(raw);
      if (s.empty()) continue;
      const auto w = split(s);
      const std::size_t ln = m_i + 1;
      const std::string& section = w[0];
      if (section == "Masses") {
        masses();
      } else if (section == "Atoms") {
        atoms(raw, w);
      } else if (section == "Velocities") {
        velocities();
      } else if (w.size() == 2 && w[1] == "Coeffs") {
        coeffs(section, raw);
      } else if (w.size() == 1 && topology_section(section)) {
        // read by topology_section()
      } else {
        fail(ln, "unknown or unsupported section '" + s +
                     "' (allowed: Masses, Atoms, Velocities, Bonds, Angles, Dihedrals, Impropers, and the Coeffs "
                     "sections Pair, PairIJ, Bond, Angle, Dihedral, Improper)");
      }
    }
  }

  void masses() {
    read_rows("Masses", m_d.ntypes, [&](const std::vector<std::string>& r, std::size_t ln) {
      if (r.size() != 2) fail(ln, "Masses line needs 'type mass'");
      long long t = to_int(r[0], ln, "the atom type");
      if (t < 1 || t > m_d.ntypes) fail(ln, "atom type " + r[0] + " out of range 1.." + std::to_string(m_d.ntypes));
      double m = to_double(r[1], ln, "the mass");
      if (!(m > 0)) fail(ln, "mass must be > 0, got " + r[1]);
      m_d.masses[t - 1] = m;
      m_mass_set[t - 1] = true;
    });
  }

  // The style: the section's comment, else the declared one (md.initial.atom_style), else atomic.
  void choose_style(const std::string& raw, std::size_t ln) {
    const std::string named = comment_of(raw);
    std::string allowed;
    for (const auto& n : atom_style_names()) allowed += (allowed.empty() ? "" : ", ") + n;
    if (!named.empty()) {
      const auto s = atom_style_from_name(named);
      if (!s) fail(ln, "Atoms section style '" + named + "' is not supported; allowed: " + allowed);
      if (m_declared && *m_declared != *s)
        fail(ln, "the Atoms section is '" + named + "' but md.initial.atom_style is '" +
                     atom_style_name(*m_declared) + "'; make them agree");
      m_d.atom_style = *s;
      m_style_named = true;
    } else {
      m_d.atom_style = m_declared.value_or(AtomStyle::Atomic);
    }
  }

  void atoms(const std::string& raw, const std::vector<std::string>& w) {
    const std::size_t section_line = m_i + 1;
    if (m_have_atoms) fail(section_line, "a second Atoms section");
    if (w.size() > 1) fail(section_line, "unexpected text after 'Atoms': the style goes in a comment, 'Atoms # full'");
    choose_style(raw, section_line);
    const StyleColumns cols = columns_of(m_d.atom_style);
    m_d.id.reserve(m_natoms);
    bool first = true;
    read_rows("Atoms", static_cast<std::size_t>(m_natoms), [&](const std::vector<std::string>& r, std::size_t ln) {
      if (r.size() != cols.count && r.size() != cols.count + 3) {
        const std::string name = atom_style_name(m_d.atom_style);
        const std::string want = "'" + std::string(cols.text) + "' or '" + cols.text + " ix iy iz' (atom_style " +
                                 name + "), got " + std::to_string(r.size()) + " columns";
        if (first && m_style_named)
          fail(section_line, "Atoms # " + name + ": the rows have " + std::to_string(r.size()) + " columns; atom_style " +
                                 name + " has " + std::to_string(cols.count) + " (" + cols.text + ") or " +
                                 std::to_string(cols.count + 3) + " with image flags");
        fail(ln, "Atoms line needs " + want +
                     (m_style_named || m_declared ? "" : "; a file of another atom style names it after 'Atoms #' or in "
                                                         "md.initial.atom_style"));
      }
      first = false;
      atom_row(r, ln, cols);
    });
    m_have_atoms = true;
  }

  void atom_row(const std::vector<std::string>& r, std::size_t ln, const StyleColumns& cols) {
    std::size_t c = 0;
    const long long id = to_int(r[c++], ln, "the atom id");
    if (id < 1) fail(ln, "atom id must be >= 1, got " + r[0]);
    long long mol = 0;
    if (cols.molecule) {
      mol = to_int(r[c++], ln, "the molecule id");
      if (mol < 0) fail(ln, "molecule id must be >= 0, got " + r[c - 1]);
    }
    const std::string& type_word = r[c];
    const long long t = to_int(r[c++], ln, "the atom type");
    if (t < 1 || t > m_d.ntypes) fail(ln, "atom type " + type_word + " out of range 1.." + std::to_string(m_d.ntypes));
    const double q = cols.charge ? to_double(r[c++], ln, "the charge") : 0.0;
    if (!m_index.emplace(id, m_d.id.size()).second) fail(ln, "duplicate atom id " + r[0]);
    m_d.id.push_back(id);
    m_d.type.push_back(static_cast<int>(t));
    m_d.molecule.push_back(mol);
    m_d.q.push_back(q);
    const bool images = r.size() == cols.count + 3;
    for (int k = 0; k < 3; ++k) {
      double x = to_double(r[c + k], ln, "a coordinate");
      int img = images ? static_cast<int>(to_int(r[cols.count + k], ln, "an image flag")) : 0;
      if (std::abs(x - m_d.lo[k]) > 1e6 * (m_d.hi[k] - m_d.lo[k]))
        fail(ln, "coordinate " + r[c + k] + " is absurdly far outside the box");
      comm::wrap_periodic(x, m_d.lo[k], m_d.hi[k], img);
      m_d.x.push_back(x);
      m_d.image.push_back(img);
    }
  }

  void velocities() {
    if (!m_have_atoms) fail(m_i + 1, "Velocities section before Atoms section");
    m_d.v.assign(3 * m_d.id.size(), 0.0);
    std::vector<bool> seen(m_d.id.size(), false);
    read_rows("Velocities", m_d.id.size(), [&](const std::vector<std::string>& r, std::size_t ln) {
      if (r.size() != 4) fail(ln, "Velocities line needs 'id vx vy vz'");
      long long id = to_int(r[0], ln, "the atom id");
      auto it = m_index.find(id);
      if (it == m_index.end()) fail(ln, "velocity for unknown atom id " + r[0]);
      if (seen[it->second]) fail(ln, "duplicate velocity for atom id " + r[0]);
      seen[it->second] = true;
      for (int k = 0; k < 3; ++k) m_d.v[3 * it->second + k] = to_double(r[1 + k], ln, "a velocity");
    });
    m_d.has_velocities = true;
  }

  // Bonds, Angles, Dihedrals, Impropers: "id type atom1 atom2 ..."; false for another word.
  bool topology_section(const std::string& section) {
    int k = 0;
    while (k < 4 && section != k_kind_sections[k]) ++k;
    if (k == 4) return false;
    const std::size_t ln = m_i + 1;
    LammpsTopology& t = topology(k);
    const std::string kind = k_kind_names[k];
    if (m_counts[k] <= 0) fail(ln, section + " section, but the header has no 'N " + kind + "' line (or says 0)");
    if (!m_have_atoms) fail(ln, section + " section before the Atoms section (LAMMPS reads Atoms first)");
    if (t.count() > 0) fail(ln, "a second " + section + " section");
    if (t.ntypes < 1) fail(ln, section + " section, but the header has no 'N " + k_kind_type_words[k] + " types' line");
    const std::size_t cols = 2 + static_cast<std::size_t>(t.width);
    read_rows(section, static_cast<std::size_t>(m_counts[k]), [&](const std::vector<std::string>& r, std::size_t rl) {
      if (r.size() != cols)
        fail(rl, section + " line needs 'id type' and " + std::to_string(t.width) + " atom ids, got " +
                     std::to_string(r.size()) + " columns");
      to_int(r[0], rl, "the interaction id");
      const long long type = to_int(r[1], rl, "the interaction type");
      if (type < 1 || type > t.ntypes)
        fail(rl, std::string(k_kind_type_words[k]) + " type " + r[1] + " out of range 1.." + std::to_string(t.ntypes));
      t.type.push_back(static_cast<int>(type));
      for (int a = 0; a < t.width; ++a) {
        const long long id = to_int(r[2 + a], rl, "an atom id");
        if (!m_index.count(id)) fail(rl, section + " line names atom id " + r[2 + a] + ", which the Atoms section has not");
        for (int b = 0; b < a; ++b)
          if (t.atoms[t.atoms.size() - static_cast<std::size_t>(a - b)] == id)
            fail(rl, section + " line names atom id " + r[2 + a] + " twice");
        t.atoms.push_back(id);
      }
    });
    return true;
  }

  // "Bond Coeffs # harmonic": one line per type, "type numbers..."; PairIJ Coeffs: "i j numbers..." per pair.
  void coeffs(const std::string& word, const std::string& raw) {
    const std::size_t ln = m_i + 1;
    const std::string section = word + " Coeffs";
    LammpsCoeffs* c = nullptr;
    int ntypes = 0;
    bool ij = false;
    if (word == "Pair" || word == "PairIJ") {
      c = word == "Pair" ? &m_d.pair_coeffs : &m_d.pair_ij_coeffs;
      ntypes = m_d.ntypes;
      ij = word == "PairIJ";
    } else {
      const char* words[4] = {"Bond", "Angle", "Dihedral", "Improper"};
      LammpsCoeffs* all[4] = {&m_d.bond_coeffs, &m_d.angle_coeffs, &m_d.dihedral_coeffs, &m_d.improper_coeffs};
      for (int k = 0; k < 4; ++k)
        if (word == words[k]) {
          c = all[k];
          ntypes = topology(k).ntypes;
          if (ntypes < 1) fail(ln, section + " section, but the header has no 'N " + k_kind_type_words[k] + " types' line");
        }
    }
    if (!c)
      fail(ln, "unknown or unsupported section '" + section +
                   "' (allowed Coeffs sections: Pair, PairIJ, Bond, Angle, Dihedral, Improper; class2 cross terms are "
                   "not supported)");
    if (c->present) fail(ln, "a second " + section + " section");
    c->present = true;
    c->line = ln;
    c->style = comment_of(raw);
    const std::size_t n = static_cast<std::size_t>(ntypes);
    const std::size_t rows = ij ? n * (n + 1) / 2 : n;
    c->rows.assign(rows, {});
    std::vector<bool> seen(rows, false);
    const std::size_t lead = ij ? 2 : 1;
    read_rows(section, rows, [&](const std::vector<std::string>& r, std::size_t rl) {
      if (r.size() < lead) fail(rl, section + " line needs " + (ij ? "'i j' and the coefficients" : "'type' and the coefficients"));
      long long i = to_int(r[0], rl, "a type"), j = ij ? to_int(r[1], rl, "a type") : i;
      if (i < 1 || j < 1 || i > ntypes || j > ntypes)
        fail(rl, "type " + std::to_string(i < 1 || i > ntypes ? i : j) + " out of range 1.." + std::to_string(ntypes));
      if (ij && j < i) std::swap(i, j);
      // PairIJ rows in the order i = 1..n, j = i..n.
      const std::size_t at = ij ? static_cast<std::size_t>((i - 1) * ntypes - (i - 1) * (i - 2) / 2 + (j - i))
                                : static_cast<std::size_t>(i - 1);
      if (seen[at]) fail(rl, section + ": type " + (ij ? std::to_string(i) + " " + std::to_string(j) : std::to_string(i)) + " given twice");
      seen[at] = true;
      for (std::size_t k = lead; k < r.size(); ++k) c->rows[at].push_back(to_double(r[k], rl, "a coefficient"));
    });
  }

  // --- what the whole file must satisfy -------------------------------------------------------------
  void finish() {
    if (!m_have_atoms) fail(m_lines.size(), "no Atoms section");
    for (int t = 0; t < m_d.ntypes; ++t)
      if (!m_mass_set[t]) fail(m_lines.size(), "no mass given for atom type " + std::to_string(t + 1) + " (Masses section)");
    if (!m_d.has_velocities) m_d.v.assign(3 * m_d.id.size(), 0.0);
    const int held = kinds_held(m_d.atom_style);
    for (int k = 0; k < 4; ++k) {
      if (m_counts[k] <= 0) continue;
      if (k >= held)
        fail(m_count_lines[k], std::string("atom_style ") + atom_style_name(m_d.atom_style) + " holds no " + k_kind_names[k] +
                                   " (atom styles " + k_holders[k] + " do); name the style after 'Atoms #' or in "
                                   "md.initial.atom_style");
      if (topology(k).count() == 0)
        fail(m_count_lines[k], "the header says " + std::to_string(m_counts[k]) + " " + k_kind_names[k] +
                                   " but the file has no " + k_kind_sections[k] + " section");
    }
  }

  std::string m_name;
  std::optional<AtomStyle> m_declared;
  std::vector<std::string> m_lines;
  std::size_t m_i = 0;
  LammpsData m_d;
  long long m_natoms = -1;
  long long m_counts[4] = {0, 0, 0, 0};
  std::size_t m_count_lines[4] = {0, 0, 0, 0};
  std::vector<bool> m_mass_set;
  bool m_have_atoms = false;
  bool m_style_named = false;
  std::unordered_map<std::int64_t, std::size_t> m_index;
};

}  // namespace

const char* atom_style_name(AtomStyle s) {
  switch (s) {
    case AtomStyle::Atomic: return "atomic";
    case AtomStyle::Bond: return "bond";
    case AtomStyle::Angle: return "angle";
    case AtomStyle::Molecular: return "molecular";
    case AtomStyle::Charge: return "charge";
    case AtomStyle::Full: return "full";
  }
  return "atomic";
}

AtomStyleHolds atom_style_holds(AtomStyle s) {
  const StyleColumns c = columns_of(s);
  return {c.molecule, c.charge, kinds_held(s)};
}

std::vector<std::string> atom_style_names() {
  return {"atomic", "bond", "angle", "molecular", "charge", "full"};
}

std::optional<AtomStyle> atom_style_from_name(const std::string& name) {
  for (const AtomStyle s : {AtomStyle::Atomic, AtomStyle::Bond, AtomStyle::Angle, AtomStyle::Molecular,
                            AtomStyle::Charge, AtomStyle::Full})
    if (name == atom_style_name(s)) return s;
  return std::nullopt;
}

LammpsData parse_lammps_data(const std::string& text, const std::string& name, std::optional<AtomStyle> declared) {
  return Parser(text, name, declared).parse();
}

}  // namespace spotrun::io
