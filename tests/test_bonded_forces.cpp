// md::bonded::gather_bonded (solvers/md/bonded/bonded_forces.hpp): chains that cross the periodic
// boundaries of a box, the partners found among owned atoms and ghost images by md::AtomMap, against the
// forces, energy and virial of the same interactions on unwrapped coordinates; each interaction tallied
// once; a broken FENE bond reported by its atoms.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "solvers/md/atom_map.hpp"
#include "solvers/md/bonded/bonded_forces.hpp"
#include "solvers/md/force.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using namespace spotrun;
using namespace spotrun::md::bonded;

namespace {

constexpr double k_box = 6.0;

// Chains of `len` atoms (a random walk of steps 0.97, angles kept away from 0 and 180 degrees), unwrapped,
// atom ids 1..n in chain order.
std::vector<std::array<double, 3>> chains(int nchains, int len, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1), pos(0, k_box);
  std::vector<std::array<double, 3>> x;
  for (int c = 0; c < nchains; ++c) {
    std::array<double, 3> p{pos(rng), pos(rng), pos(rng)};
    std::array<double, 3> prev_dir{0, 0, 0};
    for (int k = 0; k < len; ++k) {
      x.push_back(p);
      std::array<double, 3> dir;
      double norm;
      do {
        dir = {u(rng), u(rng), u(rng)};
        norm = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
      } while (norm < 0.3 || norm > 1 ||
               (k > 0 && (dir[0] * prev_dir[0] + dir[1] * prev_dir[1] + dir[2] * prev_dir[2]) / norm < -0.8));
      for (int d = 0; d < 3; ++d) {
        prev_dir[d] = dir[d] / norm;
        p[d] += 0.97 * prev_dir[d];
      }
    }
  }
  return x;
}

// The atoms wrapped into the box (owned, all of them) and their 26 periodic images (ghosts).
md::AtomStore wrapped_with_images(const std::vector<std::array<double, 3>>& unwrapped) {
  const int n = static_cast<int>(unwrapped.size());
  md::AtomStore a;
  a.reserve(27 * n);
  auto x = Kokkos::create_mirror_view(a.x);
  auto id = Kokkos::create_mirror_view(a.id);
  int i = 0;
  for (int img = 0; img < 27; ++img) {
    const int s[3] = {img % 3 == 2 ? -1 : img % 3, (img / 3) % 3 == 2 ? -1 : (img / 3) % 3, img / 9 == 2 ? -1 : img / 9};
    for (int k = 0; k < n; ++k, ++i) {
      id(i) = k + 1;
      for (int d = 0; d < 3; ++d) x(i, d) = unwrapped[k][d] - std::floor(unwrapped[k][d] / k_box) * k_box + s[d] * k_box;
    }
  }
  Kokkos::deep_copy(a.x, x);
  Kokkos::deep_copy(a.id, id);
  a.nlocal = n;
  a.nghost = 26 * n;
  return a;
}

// The gather list of interactions given by atom ids (first id of each: role 0), partners chained: each the
// copy closest to the one before it, starting from the owned atom's own copy.
template <int Width>
GatherList<Width> gather_list(const md::AtomStore& atoms, const std::vector<std::array<int, Width + 1>>& items) {
  md::AtomMap map;
  map.build(atoms);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.id);
  auto closest = [&](std::int64_t id, const double* ref) {
    int best = -1;
    double best_rsq = 0;
    for (int i = 0; i < atoms.nall(); ++i) {
      if (hid(i) != id) continue;
      double rsq = 0;
      for (int d = 0; d < 3; ++d) rsq += (hx(i, d) - ref[d]) * (hx(i, d) - ref[d]);
      if (best < 0 || rsq < best_rsq) best = i, best_rsq = rsq;
    }
    return best;
  };
  std::vector<std::vector<std::array<int, Width + 2>>> per(atoms.nlocal);
  for (const auto& it : items)
    for (int role = 0; role < Width; ++role) {
      const int a = it[role] - 1;  // owned atom a has id a + 1
      std::array<int, Width + 2> e{};
      e[role] = a;
      for (int k = role + 1; k < Width; ++k) e[k] = closest(it[k], &hx(e[k - 1], 0));
      for (int k = role - 1; k >= 0; --k) e[k] = closest(it[k], &hx(e[k + 1], 0));
      e[Width] = role;
      e[Width + 1] = it[Width];
      per[a].push_back(e);
    }
  GatherList<Width> list;
  list.nlocal = atoms.nlocal;
  list.offset = md::IntView("offset", atoms.nlocal + 1);
  std::size_t total = 0;
  for (const auto& p : per) total += p.size();
  list.entry = decltype(list.entry)("entry", total);
  auto ho = Kokkos::create_mirror_view(list.offset);
  auto he = Kokkos::create_mirror_view(list.entry);
  int at = 0;
  for (int a = 0; a < atoms.nlocal; ++a) {
    ho(a) = at;
    for (const auto& e : per[a]) {
      for (int c = 0; c < Width + 2; ++c) he(at, c) = e[c];
      ++at;
    }
  }
  ho(atoms.nlocal) = at;
  list.count = at;
  Kokkos::deep_copy(list.offset, ho);
  Kokkos::deep_copy(list.entry, he);
  return list;
}

// The list of Newton's kind (scatter_bonded): the entries of `g` whose role is 0, each interaction once.
template <int Width>
GatherList<Width> first_atoms_only(const GatherList<Width>& g) {
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g.offset);
  auto he = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), g.entry);
  GatherList<Width> list;
  list.nlocal = g.nlocal;
  list.offset = md::IntView("offset", g.nlocal + 1);
  list.entry = decltype(list.entry)("entry", he.extent(0));
  auto lo = Kokkos::create_mirror_view(list.offset);
  auto le = Kokkos::create_mirror_view(list.entry);
  int at = 0;
  for (int a = 0; a < g.nlocal; ++a) {
    lo(a) = at;
    for (int e = ho(a); e < ho(a + 1); ++e)
      if (he(e, Width) == 0) {
        for (int c = 0; c < Width + 2; ++c) le(at, c) = he(e, c);
        ++at;
      }
  }
  lo(g.nlocal) = at;
  list.count = at;
  Kokkos::deep_copy(list.offset, lo);
  Kokkos::deep_copy(list.entry, le);
  return list;
}

}  // namespace

TEST(BondedForces, GatheredForcesMatchTheUnwrappedMolecules) {
  const int nchains = 12, len = 9;
  const auto ux = chains(nchains, len, 3);
  const md::AtomStore atoms = wrapped_with_images(ux);
  const int n = atoms.nlocal;
  std::vector<std::array<int, 3>> bonds;
  std::vector<std::array<int, 4>> angles;
  std::vector<std::array<int, 5>> dihedrals;
  for (int c = 0; c < nchains; ++c)
    for (int k = 0; k < len; ++k) {
      const int id = c * len + k + 1;
      if (k + 1 < len) bonds.push_back({id, id + 1, 1 + k % 2});
      if (k + 2 < len) angles.push_back({id, id + 1, id + 2, 1});
      if (k + 3 < len) dihedrals.push_back({id, id + 1, id + 2, id + 3, 1});
    }
  Kokkos::View<BondFene*, md::MemSpace> fene("fene", 3);
  Kokkos::View<AngleHarmonic*, md::MemSpace> angle("angle", 2);
  Kokkos::View<DihedralOpls*, md::MemSpace> opls("opls", 2);
  auto hf = Kokkos::create_mirror_view(fene);
  hf(1) = BondFene{30.0, 1.5, 1.0, 1.0};
  hf(2) = BondFene{20.0, 1.6, 1.2, 0.9};
  Kokkos::deep_copy(fene, hf);
  auto ha = Kokkos::create_mirror_view(angle);
  ha(1) = AngleHarmonic{4.0, 1.9};
  Kokkos::deep_copy(angle, ha);
  auto ho = Kokkos::create_mirror_view(opls);
  ho(1) = DihedralOpls{1.3, -0.05, 0.2, 0.1};
  Kokkos::deep_copy(opls, ho);

  md::Vec3View f("f", atoms.nall());
  const BondedTally tb = gather_bonded(gather_list<2>(atoms, bonds), fene, atoms.x, f);
  const BondedTally ta = gather_bonded(gather_list<3>(atoms, angles), angle, atoms.x, f);
  const BondedTally td = gather_bonded(gather_list<4>(atoms, dihedrals), opls, atoms.x, f);
  auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f);

  // The reference: every interaction once, on the unwrapped coordinates, scattered.
  std::vector<std::array<double, 3>> ref(n, {0, 0, 0});
  double eb = 0, ea = 0, ed = 0, w = 0;
  for (const auto& b : bonds) {
    double del[3], fb, e;
    for (int d = 0; d < 3; ++d) del[d] = ux[b[0] - 1][d] - ux[b[1] - 1][d];
    hf(b[2]).compute(dot3(del, del), fb, e);
    eb += e;
    w += fb * dot3(del, del);
    for (int d = 0; d < 3; ++d) {
      ref[b[0] - 1][d] += fb * del[d];
      ref[b[1] - 1][d] -= fb * del[d];
    }
  }
  for (const auto& a : angles) {
    double del1[3], del2[3], f1[3], f3[3], dedc, e;
    for (int d = 0; d < 3; ++d) {
      del1[d] = ux[a[0] - 1][d] - ux[a[1] - 1][d];
      del2[d] = ux[a[2] - 1][d] - ux[a[1] - 1][d];
    }
    const AngleGeometry g = angle_geometry(del1, del2);
    ha(1).compute(g, dedc, e);
    angle_forces(g, del1, del2, dedc, f1, f3);
    ea += e;
    w += dot3(del1, f1) + dot3(del2, f3);
    for (int d = 0; d < 3; ++d) {
      ref[a[0] - 1][d] += f1[d];
      ref[a[2] - 1][d] += f3[d];
      ref[a[1] - 1][d] -= f1[d] + f3[d];
    }
  }
  for (const auto& q : dihedrals) {
    double b1[3], b2[3], b3[3], fq[4][3], dedphi, e;
    for (int d = 0; d < 3; ++d) {
      b1[d] = ux[q[1] - 1][d] - ux[q[0] - 1][d];
      b2[d] = ux[q[2] - 1][d] - ux[q[1] - 1][d];
      b3[d] = ux[q[3] - 1][d] - ux[q[2] - 1][d];
    }
    const DihedralGeometry g = dihedral_geometry(b1, b2, b3);
    ho(1).compute(g.phi, dedphi, e);
    dihedral_forces(g, b1, b2, b3, dedphi, fq[0], fq[1], fq[2], fq[3]);
    ed += e;
    for (int k = 1; k < 4; ++k)
      for (int d = 0; d < 3; ++d) w += (ux[q[k] - 1][d] - ux[q[0] - 1][d]) * fq[k][d];
    for (int k = 0; k < 4; ++k)
      for (int d = 0; d < 3; ++d) ref[q[k] - 1][d] += fq[k][d];
  }
  double worst = 0;
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(got(i, d) - ref[i][d]) / std::max(1.0, std::abs(ref[i][d])));
  EXPECT_LT(worst, 1e-12);
  EXPECT_NEAR(tb.energy, eb, 1e-11 * std::abs(eb));
  EXPECT_NEAR(ta.energy, ea, 1e-11 * std::max(1.0, std::abs(ea)));
  EXPECT_NEAR(td.energy, ed, 1e-11 * std::max(1.0, std::abs(ed)));
  const double wsum = tb.virial[0] + tb.virial[1] + tb.virial[2] + ta.virial[0] + ta.virial[1] + ta.virial[2] +
                      td.virial[0] + td.virial[1] + td.virial[2];
  EXPECT_NEAR(wsum, w, 1e-10 * std::max(1.0, std::abs(w)));
  EXPECT_EQ(tb.bad_atom[0], -1);
  // Without the tally (a step without thermo): the same forces bit for bit, no energy, no virial.
  md::Vec3View fq("fq", atoms.nall());
  const BondedTally quiet[3] = {gather_bonded<false>(gather_list<2>(atoms, bonds), fene, atoms.x, fq),
                                gather_bonded<false>(gather_list<3>(atoms, angles), angle, atoms.x, fq),
                                gather_bonded<false>(gather_list<4>(atoms, dihedrals), opls, atoms.x, fq)};
  auto got_quiet = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), fq);
  int differ = 0;
  for (int i = 0; i < atoms.nall(); ++i)
    for (int d = 0; d < 3; ++d) differ += got_quiet(i, d) != got(i, d);
  EXPECT_EQ(differ, 0);
  for (const BondedTally& t : quiet) {
    EXPECT_EQ(t.energy, 0.0);
    for (const double v : t.virial) EXPECT_EQ(v, 0.0);
    EXPECT_EQ(t.bad_atom[0], -1);
  }

  // Under Newton (scatter_bonded): each interaction once, its forces on owned atoms and ghosts alike; the ghosts'
  // forces added to their owners (what Halo::reverse_forces does) give the same forces, the energies are the
  // same, and the sum of x . f over owned atoms and ghosts is the virial.
  md::Vec3View fn("fn", atoms.nall());
  md::ForceScatter scatter(fn);
  const BondedTally nb = scatter_bonded(first_atoms_only(gather_list<2>(atoms, bonds)), fene, atoms.x, fn, scatter);
  const BondedTally na = scatter_bonded(first_atoms_only(gather_list<3>(atoms, angles)), angle, atoms.x, fn, scatter);
  const BondedTally nd = scatter_bonded(first_atoms_only(gather_list<4>(atoms, dihedrals)), opls, atoms.x, fn, scatter);
  auto hn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), fn);
  auto hpos = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
  auto hids = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.id);
  std::vector<std::array<double, 3>> folded(n, {0, 0, 0});
  double wn = 0;
  for (int i = 0; i < atoms.nall(); ++i)
    for (int d = 0; d < 3; ++d) {
      folded[hids(i) - 1][d] += hn(i, d);
      wn += hpos(i, d) * hn(i, d);
    }
  double worst_newton = 0;
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d)
      worst_newton = std::max(worst_newton, std::abs(folded[i][d] - ref[i][d]) / std::max(1.0, std::abs(ref[i][d])));
  EXPECT_LT(worst_newton, 1e-12);
  EXPECT_NEAR(nb.energy, eb, 1e-11 * std::abs(eb));
  EXPECT_NEAR(na.energy, ea, 1e-11 * std::max(1.0, std::abs(ea)));
  EXPECT_NEAR(nd.energy, ed, 1e-11 * std::max(1.0, std::abs(ed)));
  EXPECT_NEAR(wn, w, 1e-10 * std::max(1.0, std::abs(w)));
  for (const BondedTally* t : {&nb, &na, &nd}) EXPECT_EQ(t->bad_atom[0], -1);
  test::report("under Newton: max relative force difference " + test::sci(worst_newton) + ", virial from x . f " +
               test::sci(wn) + " against " + test::sci(w));
  test::report(std::to_string(nchains) + " chains of " + std::to_string(len) + " across the boundaries of a " +
               std::to_string(k_box) + " box: max relative force difference " + test::sci(worst) + "; energies " +
               test::sci(tb.energy) + " " + test::sci(ta.energy) + " " + test::sci(td.energy));

  // Stretch one bond past R0: the tally names its two atoms.
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
  md::AtomStore broken = wrapped_with_images([&] {
    auto v = ux;
    for (int k = 5; k < len; ++k) v[k][0] += 2.0;  // chain 0: the bond 5-6 is now about 2.5 long
    return v;
  }());
  md::Vec3View f2("f2", broken.nall());
  const BondedTally bad = gather_bonded(gather_list<2>(broken, bonds), fene, broken.x, f2);
  auto bid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), broken.id);
  ASSERT_GE(bad.bad_atom[0], 0);
  EXPECT_EQ(bid(bad.bad_atom[0]), 5);
  EXPECT_EQ(bid(bad.bad_atom[1]), 6);
  // Without the tally (a step without thermo): the same broken bond.
  md::Vec3View f3("f3", broken.nall());
  const BondedTally bad_quiet = gather_bonded<false>(gather_list<2>(broken, bonds), fene, broken.x, f3);
  EXPECT_EQ(bad_quiet.bad_atom[0], bad.bad_atom[0]);
  EXPECT_EQ(bad_quiet.bad_atom[1], bad.bad_atom[1]);
  // Under Newton: the same broken bond, by the rank that owns its first atom.
  md::Vec3View f4("f4", broken.nall());
  md::ForceScatter scatter4(f4);
  const BondedTally bad_newton = scatter_bonded<false>(first_atoms_only(gather_list<2>(broken, bonds)), fene, broken.x, f4, scatter4);
  EXPECT_EQ(bad_newton.bad_atom[0], bad.bad_atom[0]);
  EXPECT_EQ(bad_newton.bad_atom[1], bad.bad_atom[1]);
}
