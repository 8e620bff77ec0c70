#include "topology.hpp"

#include <algorithm>
#include <unordered_map>

namespace spotrun::md::bonded {
namespace {

// The interactions of one kind of the data file, listed with each of their atoms.
PerAtomKind per_atom(const io::LammpsTopology& t, const std::unordered_map<std::int64_t, std::size_t>& index,
                     std::size_t natoms) {
  PerAtomKind k;
  k.width = t.width;
  k.count.assign(natoms, 0);
  for (const std::int64_t id : t.atoms) ++k.count[index.at(id)];
  k.max = natoms ? *std::max_element(k.count.begin(), k.count.end()) : 0;
  const std::size_t slots = natoms * static_cast<std::size_t>(k.max), w = static_cast<std::size_t>(t.width);
  k.type.assign(slots, 0);
  k.role.assign(slots, 0);
  k.ids.assign(slots * w, 0);
  std::vector<int> filled(natoms, 0);
  for (std::size_t i = 0; i < t.count(); ++i)
    for (std::size_t r = 0; r < w; ++r) {
      const std::size_t a = index.at(t.atoms[i * w + r]);
      const std::size_t slot = a * static_cast<std::size_t>(k.max) + static_cast<std::size_t>(filled[a]++);
      k.type[slot] = t.type[i];
      k.role[slot] = static_cast<int>(r);
      std::copy(t.atoms.begin() + static_cast<std::ptrdiff_t>(i * w), t.atoms.begin() + static_cast<std::ptrdiff_t>((i + 1) * w),
                k.ids.begin() + static_cast<std::ptrdiff_t>(slot * w));
    }
  return k;
}

// 1-2, 1-3 and 1-4 neighbours along the bonds: each neighbour once, at its shortest path (a ring's atom
// that is both 1-2 and 1-3 is 1-2), never the atom itself.
PerAtomSpecial specials(const io::LammpsData& d, const std::unordered_map<std::int64_t, std::size_t>& index) {
  const std::size_t n = d.natoms();
  std::vector<std::vector<std::int64_t>> partners(n);
  for (std::size_t b = 0; b < d.bonds.count(); ++b) {
    const std::int64_t i = d.bonds.atoms[2 * b], j = d.bonds.atoms[2 * b + 1];
    partners[index.at(i)].push_back(j);
    partners[index.at(j)].push_back(i);
  }
  PerAtomSpecial s;
  s.n12.assign(n, 0);
  s.n13.assign(n, 0);
  s.n14.assign(n, 0);
  std::vector<std::vector<std::int64_t>> lists(n);
  for (std::size_t a = 0; a < n; ++a) {
    std::vector<std::int64_t>& list = lists[a];
    auto known = [&](std::int64_t id) { return id == d.id[a] || std::find(list.begin(), list.end(), id) != list.end(); };
    std::vector<std::int64_t> shell{d.id[a]};
    int* counts[3] = {&s.n12[a], &s.n13[a], &s.n14[a]};
    for (int level = 0; level < 3; ++level) {
      std::vector<std::int64_t> next;
      for (const std::int64_t id : shell)
        for (const std::int64_t p : partners[index.at(id)])
          if (!known(p)) {
            list.push_back(p);
            next.push_back(p);
          }
      *counts[level] = static_cast<int>(list.size());
      shell = std::move(next);
    }
  }
  s.max = 0;
  for (const auto& l : lists) s.max = std::max(s.max, static_cast<int>(l.size()));
  s.ids.assign(n * static_cast<std::size_t>(s.max), 0);
  for (std::size_t a = 0; a < n; ++a)
    std::copy(lists[a].begin(), lists[a].end(), s.ids.begin() + static_cast<std::ptrdiff_t>(a * static_cast<std::size_t>(s.max)));
  return s;
}

}  // namespace

PerAtomTopology per_atom_topology(const io::LammpsData& d) {
  std::unordered_map<std::int64_t, std::size_t> index;
  for (std::size_t a = 0; a < d.natoms(); ++a) index.emplace(d.id[a], a);
  PerAtomTopology t;
  t.bonds = per_atom(d.bonds, index, d.natoms());
  t.angles = per_atom(d.angles, index, d.natoms());
  t.dihedrals = per_atom(d.dihedrals, index, d.natoms());
  t.impropers = per_atom(d.impropers, index, d.natoms());
  t.special = specials(d, index);
  return t;
}

}  // namespace spotrun::md::bonded
