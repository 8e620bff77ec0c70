#include "md_export.hpp"

#include <string>
#include <utility>

#include "comm/errors.hpp"

namespace spotrun::md {
namespace {

const io::StateArray& dataset(const io::SolverState& st, AtomFieldId f) {
  const std::string name = std::string("/md/") + atom_field(f).name;
  const io::StateArray* a = st.find(name);
  if (!a) throw InputError("checkpoint has no dataset " + name);
  return *a;
}

}  // namespace

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
  // Type names from the checkpoint's deck ([[md.types]]), else the type numbers.
  if (deck) {
    for (std::size_t k = 0; k < deck->count("md.types"); ++k)
      out.type_names.push_back(deck->get_string("md.types." + std::to_string(k) + ".name"));
    if (static_cast<int>(out.type_names.size()) != d.ntypes) out.type_names.clear();
  }
  return out;
}

}  // namespace spotrun::md
