#include "bonded_terms.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "comm/errors.hpp"

namespace spotrun::md::bonded {
namespace {

constexpr double k_degree = 3.14159265358979323846 / 180.0;

// The rows of a style: one per type, each of `n` coefficients; InputError otherwise.
void check_rows(const char* kind, const std::string& style, const std::vector<std::vector<double>>& rows, std::size_t n) {
  for (std::size_t t = 0; t < rows.size(); ++t)
    if (rows[t].size() != n)
      throw InputError(std::string(kind) + " style \"" + style + "\": type " + std::to_string(t + 1) + " has " +
                       std::to_string(rows[t].size()) + " coefficients, the style takes " + std::to_string(n));
}

// The device table of evaluators by type (entry 0 unused) made by make(row).
template <class Style, class Make>
StyleView<Style> table(const std::string& label, const std::vector<std::vector<double>>& rows, Make&& make) {
  StyleView<Style> v(label, rows.size() + 1);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t t = 0; t < rows.size(); ++t) h(t + 1) = make(rows[t]);
  Kokkos::deep_copy(v, h);
  return v;
}

[[noreturn]] void unknown_style(const char* kind, const std::string& style, const char* allowed) {
  throw InputError(std::string("md.") + kind + ".style: \"" + style + "\" is not a " + kind + " style spotrun has; allowed: " +
                   allowed);
}

// Whether slot s of owned atom a's list (of interactions of W atoms) goes into the gather list: every slot, or
// under Newton only those whose first atom is a itself (each interaction once, on the rank owning that atom).
template <int W>
KOKKOS_INLINE_FUNCTION bool listed(const IdRowsView& lists, const IdView& id, int a, int s, bool newton) {
  return !newton || lists(a, 1 + s * (W + 1) + 1) == id(a);
}

// The gather list of one kind from the lists of the owned atoms (atom_fields.hpp): for each owned atom, its
// interactions in its list's order (under Newton those it is the first atom of), each with the local indices
// of its atoms (the copies closest to the owned atom), the atom's role and the type. Entries whose partner is
// missing hold -1 there; returns how many.
template <int W>
long long build_gather(const IdRowsView& lists, const AtomStore& atoms, const AtomMap::Lookup& map, bool newton,
                       GatherList<W>& out) {
  const int nlocal = atoms.nlocal;
  if (out.offset.extent(0) < static_cast<std::size_t>(nlocal) + 1)
    out.offset = IntView("md::bonded::offset", nlocal + nlocal / 4 + 17);
  out.nlocal = nlocal;
  auto offset = out.offset;
  auto id = atoms.id;
  const bool any = lists.extent(1) > 0;
  int total = 0;
  Kokkos::parallel_scan(
      "md::bonded::count", Policy(0, nlocal + 1), KOKKOS_LAMBDA(int a, int& sum, bool final) {
        if (final) offset(a) = sum;
        if (a < nlocal && any)
          for (int s = 0, n = static_cast<int>(lists(a, 0)); s < n; ++s) sum += listed<W>(lists, id, a, s, newton) ? 1 : 0;
      },
      total);
  out.count = total;
  if (out.entry.extent(0) < static_cast<std::size_t>(total))
    out.entry = decltype(out.entry)("md::bonded::entry", total + total / 4 + 16);
  if (total == 0) return 0;
  auto entry = out.entry;
  auto x = atoms.x;
  long long missing = 0;
  Kokkos::parallel_reduce(
      "md::bonded::gather_list", Policy(0, nlocal),
      KOKKOS_LAMBDA(int a, long long& miss) {
        const int n = static_cast<int>(lists(a, 0));
        for (int s = 0, e = offset(a); s < n; ++s) {
          if (!listed<W>(lists, id, a, s, newton)) continue;
          const int col = 1 + s * (W + 1);
          int role = 0;
          for (int k = 0; k < W; ++k) {
            const std::int64_t partner = lists(a, col + 1 + k);
            int at = a;
            if (partner == id(a))
              role = k;
            else
              at = map.closest(partner, x(a, 0), x(a, 1), x(a, 2));
            entry(e, k) = at;
            if (at < 0) ++miss;
          }
          entry(e, W) = role;
          entry(e, W + 1) = static_cast<int>(lists(a, col));
          ++e;
        }
      },
      missing);
  return missing;
}

// The first missing partner of a kind (after build_gather() counted some): host copies, on the error path.
template <int W>
MissingPartner first_missing(const IdRowsView& lists, const AtomStore& atoms, const GatherList<W>& g, bool newton,
                             const char* kind) {
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), lists);
  auto he = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g.entry);
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.id);
  int e = 0;
  for (int a = 0; a < g.nlocal; ++a)
    for (int s = 0; s < static_cast<int>(hl(a, 0)); ++s) {
      if (newton && hl(a, 1 + s * (W + 1) + 1) != hid(a)) continue;
      for (int k = 0; k < W; ++k)
        if (he(e, k) < 0) return {hid(a), hl(a, 1 + s * (W + 1) + 1 + k), kind};
      ++e;
    }
  return {};
}

}  // namespace

BondStyleView make_bond_styles(const std::string& style, const std::vector<std::vector<double>>& rows) {
  if (style.empty()) return {};
  if (style == "harmonic") {
    check_rows("bond", style, rows, 2);
    return table<BondHarmonic>("md::bond::harmonic", rows, [](const std::vector<double>& c) { return BondHarmonic{c[0], c[1]}; });
  }
  if (style == "fene") {
    check_rows("bond", style, rows, 4);
    return table<BondFene>("md::bond::fene", rows,
                           [](const std::vector<double>& c) { return BondFene{c[0], c[1], c[2], c[3]}; });
  }
  unknown_style("bond", style, "\"harmonic\", \"fene\"");
}

AngleStyleView make_angle_styles(const std::string& style, const std::vector<std::vector<double>>& rows) {
  if (style.empty()) return {};
  if (style == "harmonic") {
    check_rows("angle", style, rows, 2);
    return table<AngleHarmonic>("md::angle::harmonic", rows,
                                [](const std::vector<double>& c) { return AngleHarmonic{c[0], c[1] * k_degree}; });
  }
  if (style == "cosine") {
    check_rows("angle", style, rows, 1);
    return table<AngleCosine>("md::angle::cosine", rows, [](const std::vector<double>& c) { return AngleCosine{c[0]}; });
  }
  unknown_style("angle", style, "\"harmonic\", \"cosine\"");
}

DihedralStyleView make_dihedral_styles(const std::string& style, const std::vector<std::vector<double>>& rows) {
  if (style.empty()) return {};
  if (style == "harmonic") {
    check_rows("dihedral", style, rows, 3);
    return table<DihedralHarmonic>("md::dihedral::harmonic", rows, [](const std::vector<double>& c) {
      return DihedralHarmonic{c[0], static_cast<int>(c[1]), static_cast<int>(c[2])};
    });
  }
  if (style == "opls") {
    check_rows("dihedral", style, rows, 4);
    return table<DihedralOpls>("md::dihedral::opls", rows,
                               [](const std::vector<double>& c) { return DihedralOpls{c[0], c[1], c[2], c[3]}; });
  }
  unknown_style("dihedral", style, "\"harmonic\", \"opls\"");
}

void BondedTerms::setup(const BondedSetup& s) {
  m_bond_styles = make_bond_styles(s.bond_style, s.bond_coeffs);
  m_angle_styles = make_angle_styles(s.angle_style, s.angle_coeffs);
  m_dihedral_styles = make_dihedral_styles(s.dihedral_style, s.dihedral_coeffs);
  m_special_lj = s.special_lj;
  m_special_coul = s.special_coul;
  m_charged = s.charged;
  m_long_range = s.long_range;
}

namespace {
bool styled(const BondStyleView& v) { return v.index() != 0; }
bool styled(const AngleStyleView& v) { return v.index() != 0; }
bool styled(const DihedralStyleView& v) { return v.index() != 0; }
}  // namespace

bool BondedTerms::active(const AtomStore& atoms) const {
  return (styled(m_bond_styles) && atoms.bond.extent(1) > 0) || (styled(m_angle_styles) && atoms.angle.extent(1) > 0) ||
         (styled(m_dihedral_styles) && atoms.dihedral.extent(1) > 0) || atoms.special.extent(1) > 0;
}

bool BondedTerms::scaled_specials() const {
  if (m_long_range) return true;  // every special pair not in the list needs the Coulomb correction
  for (int k = 0; k < 3; ++k) {
    const double flj = m_special_lj[k], fcoul = m_charged ? m_special_coul[k] : flj;
    if (!((flj == 1.0 && fcoul == 1.0) || (flj == 0.0 && fcoul == 0.0))) return true;
  }
  return false;
}

MissingPartner BondedTerms::build(const AtomStore& atoms, bool newton) {
  m_newton = newton;
  m_map.build(atoms);
  const AtomMap::Lookup& map = m_map.lookup();
  // A kind without a style has no interactions (resolve_bonded_coeffs() asks for a style where there are some).
  if (styled(m_bond_styles) && build_gather(atoms.bond, atoms, map, newton, m_bonds) > 0)
    return first_missing(atoms.bond, atoms, m_bonds, newton, "bond");
  if (styled(m_angle_styles) && build_gather(atoms.angle, atoms, map, newton, m_angles) > 0)
    return first_missing(atoms.angle, atoms, m_angles, newton, "angle");
  if (styled(m_dihedral_styles) && build_gather(atoms.dihedral, atoms, map, newton, m_dihedrals) > 0)
    return first_missing(atoms.dihedral, atoms, m_dihedrals, newton, "dihedral");
  return {};
}

Exclusions BondedTerms::exclusions(const AtomStore& atoms) const {
  Exclusions e;
  e.special = atoms.special;
  // Which levels leave the list: those with a factor that is not 1 (of either part of a charged style).
  for (int k = 0; k < 3; ++k) e.out[k] = m_special_lj[k] != 1.0 || (m_charged && m_special_coul[k] != 1.0);
  return e;
}

BondedEnergies BondedTerms::compute(const AtomStore& atoms, bool ev, ForceScatter& scatter) {
  BondedEnergies out;
  BondedTally bad;
  auto kind = [&](const auto& list, const auto& styles, double& energy) {
    std::visit(
        [&](const auto& view) {
          using V = std::decay_t<decltype(view)>;
          if constexpr (!std::is_same_v<V, std::monostate>) {
            const BondedTally t = m_newton ? (ev ? scatter_bonded<true>(list, view, atoms.x, atoms.f, scatter)
                                                 : scatter_bonded<false>(list, view, atoms.x, atoms.f, scatter))
                                           : (ev ? gather_bonded<true>(list, view, atoms.x, atoms.f)
                                                 : gather_bonded<false>(list, view, atoms.x, atoms.f));
            energy += t.energy;
            out.virial += t.virial[0] + t.virial[1] + t.virial[2];
            for (int c = 0; c < 3; ++c) out.virial_diagonal[c] += t.virial[c];
            bad += t;
          }
        },
        styles);
  };
  if (m_bonds.nlocal > 0 && m_bonds.offset.extent(0) > 0) kind(m_bonds, m_bond_styles, out.ebond);
  if (m_angles.nlocal > 0 && m_angles.offset.extent(0) > 0) kind(m_angles, m_angle_styles, out.eangle);
  if (m_dihedrals.nlocal > 0 && m_dihedrals.offset.extent(0) > 0) kind(m_dihedrals, m_dihedral_styles, out.edihed);
  if (bad.bad_atom[0] >= 0) {
    std::int64_t ids[2];
    for (int k = 0; k < 2; ++k) {
      auto one = Kokkos::subview(atoms.id, bad.bad_atom[k]);
      Kokkos::deep_copy(ids[k], one);
    }
    out.broken[0] = ids[0];
    out.broken[1] = ids[1];
  }
  return out;
}

double bonded_span(const io::LammpsData& d) {
  std::unordered_map<std::int64_t, std::size_t> index;
  for (std::size_t a = 0; a < d.natoms(); ++a) index.emplace(d.id[a], a);
  double len[3];
  for (int k = 0; k < 3; ++k) len[k] = d.hi[k] - d.lo[k];
  double span2 = 0;
  for (const io::LammpsTopology* t : {&d.bonds, &d.angles, &d.dihedrals, &d.impropers}) {
    const std::size_t w = static_cast<std::size_t>(t->width);
    for (std::size_t i = 0; i < t->count(); ++i)
      for (std::size_t p = 0; p < w; ++p)
        for (std::size_t q = p + 1; q < w; ++q) {
          const auto ip = index.find(t->atoms[i * w + p]), iq = index.find(t->atoms[i * w + q]);
          if (ip == index.end() || iq == index.end()) continue;  // the reader refused such files
          double r2 = 0;
          for (int k = 0; k < 3; ++k) {
            double dx = d.x[3 * ip->second + k] - d.x[3 * iq->second + k];
            dx -= len[k] * std::nearbyint(dx / len[k]);
            r2 += dx * dx;
          }
          span2 = std::max(span2, r2);
        }
  }
  return std::sqrt(span2);
}

}  // namespace spotrun::md::bonded
