#include "md_export.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"

namespace spotrun::md {
namespace {

const io::StateArray& dataset(const io::SolverState& st, AtomFieldId f) {
  const std::string name = std::string("/md/") + atom_field(f).name;
  const io::StateArray* a = st.find(name);
  if (!a) throw InputError("checkpoint has no dataset " + name);
  return *a;
}

// The LammpsData member of a kind (k_topology_kinds order).
io::LammpsTopology& topology_of(io::LammpsData& d, int k) {
  io::LammpsTopology* all[3] = {&d.bonds, &d.angles, &d.dihedrals};
  return *all[k];
}
io::LammpsCoeffs& coeffs_member(io::LammpsData& d, int k) {
  io::LammpsCoeffs* all[3] = {&d.bond_coeffs, &d.angle_coeffs, &d.dihedral_coeffs};
  return *all[k];
}

// The checkpoint's molecules, where it has them: molecule ids, each kind's interactions, types and Coeffs,
// and the LAMMPS commands they need before read_data (the styles, special_bonds).
void export_molecules(const io::SolverState& st, solvers::ExportedSystem& out) {
  io::LammpsData& d = out.data;
  if (const io::StateArray* m = st.find("/md/molecule")) {
    if (m->i64.size() != d.natoms())
      throw InputError("checkpoint dataset /md/molecule has " + std::to_string(m->i64.size()) + " values for " +
                       std::to_string(d.natoms()) + " atoms");
    d.molecule = m->i64;
  }
  for (int k = 0; k < 3; ++k) {
    const TopologyKind& kind = k_topology_kinds[k];
    const std::string prefix = std::string("md.") + kind.name;
    io::LammpsTopology& t = topology_of(d, k);
    if (const io::StateArray* a = st.find(std::string("/md/") + kind.name)) {
      if (a->rows != d.natoms())
        throw InputError("checkpoint dataset " + a->name + " has " + std::to_string(a->rows) + " rows for " +
                         std::to_string(d.natoms()) + " atoms");
      t = interactions_of(*a, d.id.data(), kind.width);
    }
    // The number of types the run declared (types without interactions yet included).
    if (const auto n = st.integers.find(prefix + ".ntypes"); n != st.integers.end()) {
      if (n->second < t.ntypes || n->second > std::numeric_limits<int>::max())
        throw InputError("checkpoint attribute " + prefix + ".ntypes = " + std::to_string(n->second) + ", but /md/" +
                         kind.name + " holds " + kind.name + " type " + std::to_string(t.ntypes));
      t.ntypes = static_cast<int>(n->second);
    }
    io::LammpsCoeffs& c = coeffs_member(d, k);
    c = coeffs_of(st, kind.name, t.ntypes);
    if (c.present) out.lammps_commands.push_back(std::string(kind.name) + "_style " + c.style);
  }
  // special_bonds: the factors of the pair interactions of 1-2, 1-3, 1-4 neighbours, each set whole; only
  // for a system with bonded types (every checkpoint has the factors, an atomic one needs no command).
  if (d.bonds.ntypes + d.angles.ntypes + d.dihedrals.ntypes == 0) return;
  std::string special;
  const bool charged = std::any_of(d.q.begin(), d.q.end(), [](double q) { return q != 0.0; });
  for (const char* which : {"lj", "coul"}) {
    if (std::string(which) == "coul" && !charged) continue;  // the Coulomb factors act on charges only
    std::string factors;
    int found = 0;
    for (int n = 1; n <= 3; ++n) {
      const auto f = st.reals.find(std::string("md.special_bonds.") + which + "." + std::to_string(n));
      if (f == st.reals.end()) continue;
      factors += " " + exact(f->second);
      ++found;
    }
    if (found == 3) special += std::string(" ") + which + factors;
  }
  if (!special.empty()) out.lammps_commands.push_back("special_bonds" + special);
}

}  // namespace

io::LammpsTopology interactions_of(const io::StateArray& a, const std::int64_t* ids, int width) {
  io::LammpsTopology t;
  t.width = width;
  const std::uint64_t slot = static_cast<std::uint64_t>(width) + 1, cols = a.row_size();
  if (!a.is_integer || a.inner.size() != 1 || cols < 1 || (cols - 1) % slot != 0)
    throw InputError("checkpoint dataset " + a.name + " has rows of " + std::to_string(cols) + " " +
                     (a.is_integer ? "int64" : "float64") + " values; a row of interactions of " +
                     std::to_string(width) + " atoms is int64 [1 + max * " + std::to_string(slot) + "]");
  const std::int64_t max = static_cast<std::int64_t>((cols - 1) / slot);
  for (std::uint64_t r = 0; r < a.rows; ++r) {
    const std::int64_t* row = a.i64.data() + r * cols;
    const std::string atom = "checkpoint dataset " + a.name + ": atom " + std::to_string(ids[r]);
    if (row[0] < 0 || row[0] > max)
      throw InputError(atom + " has " + std::to_string(row[0]) + " interactions, allowed 0.." + std::to_string(max));
    for (std::int64_t s = 0; s < row[0]; ++s) {
      const std::int64_t* p = row + 1 + static_cast<std::uint64_t>(s) * slot;
      if (p[0] < 1 || p[0] > std::numeric_limits<int>::max())
        throw InputError(atom + ": interaction " + std::to_string(s + 1) + " has type " + std::to_string(p[0]) +
                         " (types are 1 or more)");
      if (std::find(p + 1, p + 1 + width, ids[r]) == p + 1 + width)
        throw InputError(atom + ": interaction " + std::to_string(s + 1) + " does not name the atom");
      if (p[1] != ids[r]) continue;  // listed from the row of its first atom
      t.type.push_back(static_cast<int>(p[0]));
      t.atoms.insert(t.atoms.end(), p + 1, p + 1 + width);
      t.ntypes = std::max(t.ntypes, static_cast<int>(p[0]));
    }
  }
  return t;
}

io::LammpsCoeffs coeffs_of(const io::SolverState& st, const std::string& kind, int ntypes) {
  io::LammpsCoeffs c;
  const std::string prefix = "md." + kind;
  const auto style = st.strings.find(prefix + ".style");
  if (style == st.strings.end() || ntypes < 1) return c;
  c.present = true;
  c.style = style->second;
  for (int type = 1; type <= ntypes; ++type) {
    const std::string key = prefix + ".coeff." + std::to_string(type) + ".";
    std::vector<double> row;
    for (auto v = st.reals.find(key + "1"); v != st.reals.end();
         v = st.reals.find(key + std::to_string(row.size() + 1)))
      row.push_back(v->second);
    if (row.empty())
      throw InputError("checkpoint has " + prefix + ".style = '" + c.style + "' but no coefficients of " + kind +
                       " type " + std::to_string(type) + " (attribute " + key + "1)");
    c.rows.push_back(std::move(row));
  }
  return c;
}

io::StateArray dataset_layout(const AtomField& f, int width) {
  std::vector<std::uint64_t> inner;
  if (f.is_list())
    inner.push_back(width < 0 ? io::StateArray::k_any_extent : static_cast<std::uint64_t>(width));
  else if (f.width > 1)
    inner.push_back(static_cast<std::uint64_t>(f.width));
  io::StateArray a = io::StateArray::layout(std::string("/md/") + f.name, std::move(inner), f.is_integer(), 0);
  a.optional = f.has(k_optional) || (f.is_list() && width < 0);
  return a;
}

std::vector<io::StateArray> export_arrays() {
  std::vector<io::StateArray> arrays;
  for (const auto& f : k_atom_fields)
    if (f.has(k_exported) || f.is_list())
      arrays.push_back(dataset_layout(f));
  return arrays;
}

solvers::ExportedSystem export_system(const io::SolverState& st, const io::Deck* deck) {
  solvers::ExportedSystem out;
  io::LammpsData& d = out.data;
  for (int k = 0; k < 3; ++k) {
    d.lo[k] = st.require_real(std::string("md.box.lo_") + char('x' + k));
    d.hi[k] = st.require_real(std::string("md.box.hi_") + char('x' + k));
  }
  d.ntypes = static_cast<int>(st.require_integer("md.ntypes"));
  for (int t = 1; t <= d.ntypes; ++t) d.masses.push_back(st.require_real("md.mass." + std::to_string(t)));
  // The LAMMPS data file's columns (atom_style atomic, Velocities).
  d.id = dataset(st, AtomFieldId::id).i64;
  const auto& types = dataset(st, AtomFieldId::type).i64;
  const auto& images = dataset(st, AtomFieldId::image).i64;
  d.type.assign(types.begin(), types.end());
  d.image.assign(images.begin(), images.end());
  d.x = dataset(st, AtomFieldId::x).f64;
  d.v = dataset(st, AtomFieldId::v).f64;
  d.has_velocities = true;
  // Charges, where the checkpoint has them (the data file's atom style then holds them: charge or full).
  if (const io::StateArray* q = st.find("/md/q")) {
    if (q->f64.size() != d.natoms())
      throw InputError("checkpoint dataset /md/q has " + std::to_string(q->f64.size()) + " values for " +
                       std::to_string(d.natoms()) + " atoms");
    d.q = q->f64;
  }
  export_molecules(st, out);
  // Type names from the checkpoint's deck ([[md.types]]), else the type numbers.
  if (deck) {
    for (std::size_t k = 0; k < deck->count("md.types"); ++k)
      out.type_names.push_back(deck->get_string("md.types." + std::to_string(k) + ".name"));
    if (static_cast<int>(out.type_names.size()) != d.ntypes) out.type_names.clear();
  }
  return out;
}

}  // namespace spotrun::md
