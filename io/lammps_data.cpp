#include "lammps_data.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "comm/process_grid.hpp"

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

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& name) : m_name(name) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) m_lines.push_back(line);
  }

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

  LammpsData parse() {
    LammpsData d;
    long long natoms = -1;
    bool have_box[3] = {false, false, false};
    std::size_t i = 1;  // first line is a title
    // Header
    for (; i < m_lines.size(); ++i) {
      std::string s = strip_comment(m_lines[i]);
      if (s.empty()) continue;
      auto w = split(s);
      if (w.size() == 2 && w[1] == "atoms") {
        natoms = to_int(w[0], i + 1, "the atom count");
        if (natoms < 0) fail(i + 1, "negative atom count");
      } else if (w.size() == 3 && w[1] == "atom" && w[2] == "types") {
        d.ntypes = static_cast<int>(to_int(w[0], i + 1, "the number of atom types"));
        if (d.ntypes < 1) fail(i + 1, "at least 1 atom type is required");
      } else if (w.size() == 4 && (w[2] == "xlo" || w[2] == "ylo" || w[2] == "zlo")) {
        int dim = w[2][0] - 'x';
        if (w[3] != std::string(1, w[2][0]) + "hi") fail(i + 1, "malformed box line '" + s + "'");
        d.lo[dim] = to_double(w[0], i + 1, "the box bound");
        d.hi[dim] = to_double(w[1], i + 1, "the box bound");
        if (!(d.hi[dim] > d.lo[dim])) fail(i + 1, "box " + w[2] + " >= " + w[3]);
        have_box[dim] = true;
      } else if (w.size() == 6 && w[3] == "xy") {
        fail(i + 1, "triclinic boxes (xy xz yz) are not supported; spotrun needs an orthogonal box");
      } else if (w.size() >= 2 && (w[1] == "bonds" || w[1] == "angles" || w[1] == "dihedrals" || w[1] == "impropers")) {
        if (to_int(w[0], i + 1, "a topology count") != 0)
          fail(i + 1, "molecular topology ('" + s + "') is not supported; only atom_style atomic");
      } else if (w.size() >= 3 && w[2] == "types") {
        // bond types etc.: ignored when zero topology follows
      } else {
        break;  // first section keyword
      }
    }
    if (natoms < 0) fail(i + 1, "header has no 'N atoms' line");
    if (d.ntypes < 1) fail(i + 1, "header has no 'N atom types' line");
    for (int dim = 0; dim < 3; ++dim)
      if (!have_box[dim]) fail(i + 1, std::string("header has no '") + char('x' + dim) + "lo " + char('x' + dim) + "hi' line");

    d.masses.assign(d.ntypes, 0.0);
    std::vector<bool> mass_set(d.ntypes, false);
    bool have_atoms = false;
    std::unordered_map<std::int64_t, std::size_t> index;
    for (; i < m_lines.size(); ++i) {
      std::string raw = m_lines[i];
      std::string s = strip_comment(raw);
      if (s.empty()) continue;
      auto w = split(s);
      std::string section = w[0];
      std::size_t section_line = i + 1;
      auto read_rows = [&](std::size_t count, auto&& row) {
        std::size_t got = 0;
        ++i;
        for (; i < m_lines.size() && got < count; ++i) {
          std::string r = strip_comment(m_lines[i]);
          if (r.empty()) continue;
          row(split(r), i + 1);
          ++got;
        }
        if (got < count)
          fail(section_line, section + " section has " + std::to_string(got) + " lines, expected " + std::to_string(count));
        --i;
      };
      if (section == "Masses") {
        read_rows(d.ntypes, [&](const std::vector<std::string>& r, std::size_t ln) {
          if (r.size() != 2) fail(ln, "Masses line needs 'type mass'");
          long long t = to_int(r[0], ln, "the atom type");
          if (t < 1 || t > d.ntypes) fail(ln, "atom type " + r[0] + " out of range 1.." + std::to_string(d.ntypes));
          double m = to_double(r[1], ln, "the mass");
          if (!(m > 0)) fail(ln, "mass must be > 0, got " + r[1]);
          d.masses[t - 1] = m;
          mass_set[t - 1] = true;
        });
      } else if (section == "Atoms") {
        if (w.size() > 1 && w[1] != "atomic" && raw.find('#') != std::string::npos)
          fail(section_line, "Atoms section style '" + w[1] + "' is not supported; only 'atomic'");
        std::string style = strip_comment(raw.substr(raw.find('#') == std::string::npos ? raw.size() : raw.find('#') + 1));
        if (!style.empty() && style != "atomic")
          fail(section_line, "Atoms section style '" + style + "' is not supported; only 'atomic'");
        d.id.reserve(natoms);
        read_rows(static_cast<std::size_t>(natoms), [&](const std::vector<std::string>& r, std::size_t ln) {
          if (r.size() != 5 && r.size() != 8)
            fail(ln, "Atoms line needs 'id type x y z' or 'id type x y z ix iy iz' (atom_style atomic), got " +
                         std::to_string(r.size()) + " columns");
          long long id = to_int(r[0], ln, "the atom id");
          if (id < 1) fail(ln, "atom id must be >= 1, got " + r[0]);
          long long t = to_int(r[1], ln, "the atom type");
          if (t < 1 || t > d.ntypes) fail(ln, "atom type " + r[1] + " out of range 1.." + std::to_string(d.ntypes));
          if (!index.emplace(id, d.id.size()).second) fail(ln, "duplicate atom id " + r[0]);
          d.id.push_back(id);
          d.type.push_back(static_cast<int>(t));
          for (int k = 0; k < 3; ++k) {
            double x = to_double(r[2 + k], ln, "a coordinate");
            int img = r.size() == 8 ? static_cast<int>(to_int(r[5 + k], ln, "an image flag")) : 0;
            if (std::abs(x - d.lo[k]) > 1e6 * (d.hi[k] - d.lo[k]))
              fail(ln, "coordinate " + r[2 + k] + " is absurdly far outside the box");
            comm::wrap_periodic(x, d.lo[k], d.hi[k], img);
            d.x.push_back(x);
            d.image.push_back(img);
          }
        });
        have_atoms = true;
      } else if (section == "Velocities") {
        if (!have_atoms) fail(section_line, "Velocities section before Atoms section");
        d.v.assign(3 * d.id.size(), 0.0);
        std::vector<bool> seen(d.id.size(), false);
        read_rows(d.id.size(), [&](const std::vector<std::string>& r, std::size_t ln) {
          if (r.size() != 4) fail(ln, "Velocities line needs 'id vx vy vz'");
          long long id = to_int(r[0], ln, "the atom id");
          auto it = index.find(id);
          if (it == index.end()) fail(ln, "velocity for unknown atom id " + r[0]);
          if (seen[it->second]) fail(ln, "duplicate velocity for atom id " + r[0]);
          seen[it->second] = true;
          for (int k = 0; k < 3; ++k) d.v[3 * it->second + k] = to_double(r[1 + k], ln, "a velocity");
        });
        d.has_velocities = true;
      } else if (section == "Pair" || section == "PairIJ") {
        // "Pair Coeffs": the deck's [md.pair] is authoritative; skip the section's lines.
        read_rows(section == "Pair" ? d.ntypes : d.ntypes * (d.ntypes + 1) / 2,
                  [](const std::vector<std::string>&, std::size_t) {});
      } else {
        fail(section_line, "unknown or unsupported section '" + s + "' (allowed: Masses, Atoms, Velocities, Pair Coeffs)");
      }
    }
    if (!have_atoms) fail(m_lines.size(), "no Atoms section");
    for (int t = 0; t < d.ntypes; ++t)
      if (!mass_set[t]) fail(m_lines.size(), "no mass given for atom type " + std::to_string(t + 1) + " (Masses section)");
    if (!d.has_velocities) d.v.assign(3 * d.id.size(), 0.0);
    return d;
  }

 private:
  std::string m_name;
  std::vector<std::string> m_lines;
};

}  // namespace

LammpsData parse_lammps_data(const std::string& text, const std::string& name) { return Parser(text, name).parse(); }


std::string format_lammps_data(const LammpsData& d, const std::string& title, LammpsDataStyle style,
                               const std::vector<std::string>& type_names) {
  std::ostringstream o;
  o << title << "\n\n" << d.natoms() << " atoms\n" << d.ntypes << " atom types\n\n";
  const char* names[3] = {"x", "y", "z"};
  for (int k = 0; k < 3; ++k) o << exact(d.lo[k]) << " " << exact(d.hi[k]) << " " << names[k] << "lo " << names[k] << "hi\n";
  o << "\nMasses\n\n";
  for (int t = 0; t < d.ntypes; ++t) {
    o << t + 1 << " " << exact(d.masses[t]);
    if (static_cast<std::size_t>(t) < type_names.size()) o << " # " << type_names[t];
    o << "\n";
  }
  const bool molecular = style == LammpsDataStyle::Molecular;
  o << (molecular ? "\nAtoms # molecular\n\n" : "\nAtoms # atomic\n\n");
  for (std::size_t a = 0; a < d.natoms(); ++a) {
    o << d.id[a] << " ";
    if (molecular) o << "0 ";  // molecule-ID 0: in no molecule
    o << d.type[a] << " " << exact(d.x[3 * a]) << " " << exact(d.x[3 * a + 1]) << " " << exact(d.x[3 * a + 2]) << " "
      << d.image[3 * a] << " " << d.image[3 * a + 1] << " " << d.image[3 * a + 2] << "\n";
  }
  if (!d.has_velocities) return o.str();
  o << "\nVelocities\n\n";
  for (std::size_t a = 0; a < d.natoms(); ++a)
    o << d.id[a] << " " << exact(d.v[3 * a]) << " " << exact(d.v[3 * a + 1]) << " " << exact(d.v[3 * a + 2]) << "\n";
  return o.str();
}

std::string format_xyz(const LammpsData& d, const std::vector<std::string>& names, const std::string& comment) {
  std::ostringstream o;
  o << d.natoms() << "\n";
  o << "Lattice=\"" << exact(d.hi[0] - d.lo[0]) << " 0 0 0 " << exact(d.hi[1] - d.lo[1]) << " 0 0 0 "
    << exact(d.hi[2] - d.lo[2]) << "\" Origin=\"" << exact(d.lo[0]) << " " << exact(d.lo[1]) << " " << exact(d.lo[2])
    << "\" Properties=species:S:1:pos:R:3 pbc=\"T T T\" " << comment << "\n";
  for (std::size_t a = 0; a < d.natoms(); ++a)
    o << names.at(static_cast<std::size_t>(d.type[a] - 1)) << " " << exact(d.x[3 * a]) << " " << exact(d.x[3 * a + 1])
      << " " << exact(d.x[3 * a + 2]) << "\n";
  return o.str();
}

LammpsData read_lammps_data(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open LAMMPS data file '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_lammps_data(s.str(), path);
}

}  // namespace spotrun::io
