// The MD solver, molecules: the topology of a data file given to its atoms (the list fields of the per-atom
// field table), the bonded styles and special_bonds of the run, their checkpoint scalars, and the bonded
// forces of a step (bonded/bonded_terms.hpp; docs/md.md#molecules).
#include <algorithm>
#include <sstream>

#include "bonded/bonded_coeffs.hpp"
#include "bonded/topology.hpp"
#include "md_export.hpp"
#include "md_impl.hpp"
#include "md_solver.hpp"

namespace spotrun::md {

namespace {

const char* const k_kind_names[3] = {"bond", "angle", "dihedral"};

}  // namespace

bonded::BondedSetup resolve_bonded(const MdConfig& cfg, const BondedCounts& counts, const io::LammpsCoeffs* const rows[3],
                                   const std::string& source) {
  bonded::BondedSetup s;
  const BondedKind kinds[3] = {BondedKind::Bond, BondedKind::Angle, BondedKind::Dihedral};
  std::string* styles[3] = {&s.bond_style, &s.angle_style, &s.dihedral_style};
  std::vector<std::vector<double>>* coeffs[3] = {&s.bond_coeffs, &s.angle_coeffs, &s.dihedral_coeffs};
  for (int k = 0; k < 3; ++k) {
    *coeffs[k] = resolve_bonded_coeffs(cfg, kinds[k], counts.ntypes[k], rows[k], source, counts.count[k]);
    *styles[k] = counts.ntypes[k] > 0 ? bonded_style_of(cfg, kinds[k], rows[k]) : std::string();
  }
  s.special_lj = cfg.special_lj;
  s.special_coul = cfg.special_coul;
  s.charged = pair_style_info(cfg.pair_style).charged;
  s.long_range = pair_style_info(cfg.pair_style).long_range;
  return s;
}

double bonded_ghost_reach(const MdConfig& cfg, const io::LammpsData& d, double span) {
  double reach = 1.2 * span + cfg.skin;
  const bool bonds_only = d.bonds.count() > 0 && d.angles.count() == 0 && d.dihedrals.count() == 0 && d.impropers.count() == 0;
  if (bonds_only && bonded_style_of(cfg, BondedKind::Bond, &d.bond_coeffs) == "fene") {
    const auto rows = resolve_bonded_coeffs(cfg, BondedKind::Bond, d.bonds.ntypes, &d.bond_coeffs,
                                            "md.initial.lammps_data", d.bonds.count());
    const int r0_index = find_bonded_style(BondedKind::Bond, "fene")->index("r0");
    double r0 = 0;
    for (const auto& row : rows) r0 = std::max(r0, row.at(static_cast<std::size_t>(r0_index)));
    reach = std::max(span, std::min(reach, r0));
  }
  return reach;
}

BondedCounts bonded_counts(const io::LammpsData& d) {
  BondedCounts c;
  c.ntypes = {d.bonds.ntypes, d.angles.ntypes, d.dihedrals.ntypes};
  c.count = {d.bonds.count(), d.angles.count(), d.dihedrals.count()};
  return c;
}

void check_topology(const io::LammpsData& d, const MdConfig& cfg) {
  if (d.impropers.count() > 0)
    throw InputError("md.initial.lammps_data: the data file has " + std::to_string(d.impropers.count()) +
                     " impropers; spotrun's MD has no improper style yet (README, \"What spotrun does not do yet\")");
  // Charges act only through a charged pair style: a run of another style would be another system.
  const bool charged = pair_style_info(cfg.pair_style).charged;
  for (const double q : d.q)
    if (q != 0 && !charged)
      throw InputError("md.initial.lammps_data: the data file (atom_style " + std::string(io::atom_style_name(d.atom_style)) +
                       ") gives atoms non-zero charges, but md.pair.style \"" + cfg.pair_style +
                       "\" does not act between charges; use a style with Coulomb interactions (" +
                       charged_pair_style_names() + ")");
}

void MdSolver::load_topology(const io::LammpsData& data, const std::vector<std::size_t>& mine) {
  if (!data.has_topology()) return;
  const bonded::PerAtomTopology topo = bonded::per_atom_topology(data);
  const int nl = static_cast<int>(mine.size());
  // The lists of a kind: [count, (type, ids) per slot]; the same length on every rank (the file's).
  auto fill = [&](const bonded::PerAtomKind& k, IdRowsView& view, AtomFieldId field) {
    const int w = k.width, width = k.max > 0 ? 1 + k.max * (w + 1) : 0;
    m_atoms.set_width(field, width);
    m_atoms.reserve(nl);
    if (width == 0) return;
    auto h = Kokkos::create_mirror_view(view);
    for (int i = 0; i < nl; ++i) {
      const std::size_t a = mine[static_cast<std::size_t>(i)];
      for (int c = 0; c < width; ++c) h(i, c) = 0;
      h(i, 0) = k.count[a];
      for (int s = 0; s < k.count[a]; ++s) {
        const std::size_t slot = a * static_cast<std::size_t>(k.max) + static_cast<std::size_t>(s);
        h(i, 1 + s * (w + 1)) = k.type[slot];
        for (int r = 0; r < w; ++r) h(i, 1 + s * (w + 1) + 1 + r) = k.ids[slot * static_cast<std::size_t>(w) + static_cast<std::size_t>(r)];
      }
    }
    Kokkos::deep_copy(view, h);
  };
  fill(topo.bonds, m_atoms.bond, AtomFieldId::bond);
  fill(topo.angles, m_atoms.angle, AtomFieldId::angle);
  fill(topo.dihedrals, m_atoms.dihedral, AtomFieldId::dihedral);
  const bonded::PerAtomSpecial& sp = topo.special;
  const int width = sp.max > 0 ? 3 + sp.max : 0;
  m_atoms.set_width(AtomFieldId::special, width);
  m_atoms.reserve(nl);
  if (width == 0) return;
  auto h = Kokkos::create_mirror_view(m_atoms.special);
  for (int i = 0; i < nl; ++i) {
    const std::size_t a = mine[static_cast<std::size_t>(i)];
    for (int c = 0; c < width; ++c) h(i, c) = 0;
    h(i, 0) = sp.n12[a];
    h(i, 1) = sp.n13[a];
    h(i, 2) = sp.n14[a];
    for (int s = 0; s < sp.n14[a]; ++s) h(i, 3 + s) = sp.ids[a * static_cast<std::size_t>(sp.max) + static_cast<std::size_t>(s)];
  }
  Kokkos::deep_copy(m_atoms.special, h);
}

void MdSolver::build_bonded() {
  if (!m_bonded.active(m_atoms)) return;
  const bonded::MissingPartner miss = m_bonded.build(m_atoms, m_neighbor.newton());
  std::ostringstream msg;
  msg << "atom " << miss.partner << " of a " << miss.kind << " of atom " << miss.atom << " is missing on rank "
      << m_comm.rank() << " at step " << m_step << ": the ghost atoms reach " << significant(m_ghost_cutoff, 6)
      << " sigma (from the longest bonded interaction of the data file, docs/md.md#molecules) and the molecule "
         "stretched further, or the system is unstable (LAMMPS: \"Bond atoms missing\"): "
      << instability_hint();
  m_comm.agree<RunError>(miss.atom == 0, msg.str());
}

void MdSolver::compute_bonded_terms(bool ev) {
  if (!m_bonded.active(m_atoms)) return;
  impl::PhaseTimer timer(m_phase_time[k_bond]);
  m_bonded_energy = m_bonded.compute(m_atoms, ev, m_scatter);
  if (m_bonded_energy.broken[0] != 0 && m_broken_at < 0) {
    m_broken_at = m_step;
    m_broken[0] = m_bonded_energy.broken[0];
    m_broken[1] = m_bonded_energy.broken[1];
  }
}

void MdSolver::compute_special_pairs(bool ev) {
  if (!m_bonded.active(m_atoms)) return;
  impl::PhaseTimer timer(m_phase_time[k_bond]);
  m_special_tally = std::visit(
      [&](const auto& pair) {
        return ev ? m_bonded.special_pairs<true>(m_atoms, pair) : m_bonded.special_pairs<false>(m_atoms, pair);
      },
      m_pair);
}

void MdSolver::check_broken_bonds(bool broken_anywhere) {
  if (!broken_anywhere) return;
  std::ostringstream msg;
  msg << "FENE bond between atoms " << m_broken[0] << " and " << m_broken[1] << " stretched to its maximum length R0 at step "
      << m_broken_at << " (LAMMPS: \"Bad FENE bond\"): " << instability_hint();
  m_comm.agree<RunError>(m_broken_at < 0, msg.str());
}

void MdSolver::put_bonded_state(io::SolverState& st) const {
  const bonded::BondedSetup& s = m_bonded_setup;
  const std::string* styles[3] = {&s.bond_style, &s.angle_style, &s.dihedral_style};
  const std::vector<std::vector<double>>* coeffs[3] = {&s.bond_coeffs, &s.angle_coeffs, &s.dihedral_coeffs};
  for (int k = 0; k < 3; ++k) {
    const std::string kind = std::string("md.") + k_kind_names[k];
    if (!styles[k]->empty()) st.strings[kind + ".style"] = *styles[k];
    st.integers[kind + ".ntypes"] = static_cast<std::int64_t>(coeffs[k]->size());
    for (std::size_t t = 0; t < coeffs[k]->size(); ++t)
      for (std::size_t c = 0; c < (*coeffs[k])[t].size(); ++c)
        st.reals[kind + ".coeff." + std::to_string(t + 1) + "." + std::to_string(c + 1)] = (*coeffs[k])[t][c];
  }
  for (int k = 0; k < 3; ++k) {
    st.reals["md.special_bonds.lj." + std::to_string(k + 1)] = s.special_lj[k];
    st.reals["md.special_bonds.coul." + std::to_string(k + 1)] = s.special_coul[k];
  }
  st.reals["md.ghost_cutoff"] = m_ghost_cutoff;
}

bonded::BondedSetup MdSolver::restore_bonded_setup(const io::SolverState& st) {
  // The checkpoint's style and coefficients of each kind as a data file's Coeffs sections would give them
  // (coeffs_of(), as `spotrun export` reads them).
  BondedCounts counts;
  io::LammpsCoeffs rows[3];
  for (int k = 0; k < 3; ++k) {
    const auto n = st.integers.find(std::string("md.") + k_kind_names[k] + ".ntypes");
    counts.ntypes[k] = n == st.integers.end() ? 0 : static_cast<int>(std::clamp<std::int64_t>(n->second, 0, 1000000));
    rows[k] = coeffs_of(st, k_kind_names[k], counts.ntypes[k]);
  }
  const io::LammpsCoeffs* const given[3] = {&rows[0], &rows[1], &rows[2]};
  return resolve_bonded(m_cfg, counts, given, "the checkpoint");
}

}  // namespace spotrun::md
