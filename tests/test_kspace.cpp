// md::kspace (solvers/md/kspace/): Ewald and PPPM at 1-4 ranks against oracles that can fail:
//  - the parameter choice: the alias sum in closed form against the direct sum, LAMMPS's estimates, refusals;
//  - the mesh halo against brute force (odd meshes, bricks reaching past the nearest rank, self messages);
//  - Ewald reproduces the Madelung constant of rock salt, and a dipole's energy in a periodic box;
//  - Ewald's forces and virial are derivatives of its energy (central differences); its total energy
//    (with the test's brute-force real-space sum) does not depend on g_ewald, with and without a net charge;
//  - PPPM against Ewald (same g_ewald) at accuracy 1e-5 and 1e-7: RMS force error below the accuracy;
//  - PPPM's ik forces against central differences of its energy (not exactly conservative: bounded by the
//    accuracy), its virial against Ewald's;
//  - PPPM's energy and forces independent of the rank count, the FFT decomposition, self messages through
//    the transport and atoms up to `margin` outside their sub-boxes, to round-off;
//  - an atom beyond the margin is refused on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "comm/process_grid.hpp"
#include "comm/transport.hpp"
#include "io/lammps_data.hpp"
#include "solvers/md/kspace/ewald.hpp"
#include "solvers/md/kspace/mesh_halo.hpp"
#include "solvers/md/kspace/pppm.hpp"
#include "solvers/md/kspace/stencil.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;
using namespace spotrun::md::kspace;
using Vec = std::array<double, 3>;

namespace {

constexpr double k_madelung_nacl = 1.7475645946331822;  // per ion pair, in units of e^2 / nearest distance

struct System {
  comm::Box3 box;
  std::vector<Vec> x;
  std::vector<double> q;
  int size() const { return static_cast<int>(x.size()); }
};

// n charges (+1 and -1 alternating; one more +1 when `extra` is non-zero: a net charge) at random in a cube of
// number density `density`, no two closer than min_distance (periodic).
System random_system(int n, double density, double min_distance, unsigned seed, double extra = 0) {
  System s;
  const double L = std::cbrt(n / density);
  s.box.lo = {-0.3 * L, 0.1, 1.7};  // not at the origin
  for (int d = 0; d < 3; ++d) s.box.hi[d] = s.box.lo[d] + L;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, L);
  while (s.size() < n) {
    const Vec p{s.box.lo[0] + u(rng), s.box.lo[1] + u(rng), s.box.lo[2] + u(rng)};
    bool ok = true;
    for (const Vec& o : s.x) {
      double r2 = 0;
      for (int d = 0; d < 3; ++d) {
        double dx = p[d] - o[d];
        dx -= L * std::round(dx / L);
        r2 += dx * dx;
      }
      if (r2 < min_distance * min_distance) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    s.x.push_back(p);
    s.q.push_back(s.size() % 2 ? 1.0 : -1.0);
  }
  if (extra != 0) s.q[0] += extra;
  return s;
}

// Rock salt: `cells`^3 cubic cells of edge 2a (nearest distance a), +1 at (i + j + k) even.
System rock_salt(int cells, double a) {
  System s;
  const int m = 2 * cells;
  for (int d = 0; d < 3; ++d) {
    s.box.lo[d] = 0.25 * a;  // lattice points off the box faces
    s.box.hi[d] = s.box.lo[d] + m * a;
  }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j)
      for (int k = 0; k < m; ++k) {
        s.x.push_back({s.box.lo[0] + (i + 0.5) * a, s.box.lo[1] + (j + 0.5) * a, s.box.lo[2] + (k + 0.5) * a});
        s.q.push_back((i + j + k) % 2 == 0 ? 1.0 : -1.0);
      }
  return s;
}

struct Outcome {
  double energy = 0;
  std::array<double, 6> virial{};
  std::vector<Vec> f;
  bool in_place = false;  // PPPM: the transform ran in place on the bricks
  long long plane_interpolations = 0;  // PPPM: computes that interpolated plane by plane
};

// The atoms of `s` a rank owns: those whose `owner_x` (default: x) lies in its sub-box.
struct Local {
  md::Vec3View x{"x", 0}, f{"f", 0};
  md::DoubleView q{"q", 0};
  std::vector<int> ids;
  int nlocal = 0;
};

Local distribute(const System& s, const comm::ProcessGrid& grid, const std::vector<Vec>* owner_x = nullptr) {
  Local l;
  for (int i = 0; i < s.size(); ++i) {
    const Vec& p = owner_x ? (*owner_x)[static_cast<std::size_t>(i)] : s.x[static_cast<std::size_t>(i)];
    if (grid.owner_of(p.data()) == grid.rank()) l.ids.push_back(i);
  }
  l.nlocal = static_cast<int>(l.ids.size());
  l.x = md::Vec3View("x", l.nlocal);
  l.f = md::Vec3View("f", l.nlocal);
  l.q = md::DoubleView("q", l.nlocal);
  auto hx = Kokkos::create_mirror_view(l.x);
  auto hq = Kokkos::create_mirror_view(l.q);
  for (int a = 0; a < l.nlocal; ++a) {
    const int i = l.ids[static_cast<std::size_t>(a)];
    for (int d = 0; d < 3; ++d) hx(a, d) = s.x[static_cast<std::size_t>(i)][d];
    hq(a) = s.q[static_cast<std::size_t>(i)];
  }
  Kokkos::deep_copy(l.x, hx);
  Kokkos::deep_copy(l.q, hq);
  return l;
}

// Energy, virial and every atom's force, summed over the ranks of comm.
Outcome collect(const KspaceResult& r, const Local& l, int n, const comm::Communicator& comm) {
  Outcome o;
  o.energy = comm.sum(r.energy);
  double v[6];
  for (int c = 0; c < 6; ++c) v[c] = r.virial[c];
  comm.sum_in_place(v, 6);
  for (int c = 0; c < 6; ++c) o.virial[static_cast<std::size_t>(c)] = v[c];
  std::vector<double> flat(static_cast<std::size_t>(3 * n), 0.0);
  auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), l.f);
  for (int a = 0; a < l.nlocal; ++a)
    for (int d = 0; d < 3; ++d) flat[static_cast<std::size_t>(3 * l.ids[static_cast<std::size_t>(a)] + d)] = hf(a, d);
  comm.sum_in_place(flat.data(), 3 * n);
  o.f.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) o.f[static_cast<std::size_t>(i)][d] = flat[static_cast<std::size_t>(3 * i + d)];
  return o;
}

Outcome run_ewald(const System& s, const KspaceOptions& o, const comm::Communicator& comm, EwaldChoice* choice = nullptr) {
  comm::ProcessGrid grid(comm, s.box);
  Local l = distribute(s, grid);
  Ewald ewald(o, grid, comm, charge_totals(l.q, l.nlocal, comm));
  if (choice) *choice = ewald.choice();
  const KspaceResult r = ewald.compute(l.x, l.q, l.nlocal, l.f);
  return collect(r, l, s.size(), comm);
}

struct PppmRun {
  fft::Decomposition decomposition = fft::Decomposition::Auto;
  bool route_self = false;
  const std::vector<Vec>* owner_x = nullptr;  // ownership by these positions (atoms displaced from them)
};

Outcome run_pppm(const System& s, KspaceOptions o, const comm::Communicator& comm, const PppmRun& how = {},
                 PppmChoice* choice = nullptr) {
  comm::TransportOptions t;
  t.route_self = how.route_self;
  auto transport = comm::make_transport(t, comm);
  comm::ProcessGrid grid(comm, s.box);
  Local l = distribute(s, grid, how.owner_x);
  o.decomposition = how.decomposition;
  Pppm pppm(o, grid, comm, *transport, charge_totals(l.q, l.nlocal, comm));
  if (choice) *choice = pppm.choice();
  const KspaceResult r = pppm.compute(l.x, l.q, l.nlocal, l.f);
  Outcome out = collect(r, l, s.size(), comm);
  out.in_place = pppm.in_place();
  out.plane_interpolations = pppm.plane_interpolations();
  return out;
}

// The real-space part by brute force over every pair and periodic image within rc:
// E = 1/2 sum_(i,j,n)' q_i q_j erfc(g r) / r, and its forces.
Outcome real_space(const System& s, double g, double rc) {
  Outcome o;
  o.f.assign(static_cast<std::size_t>(s.size()), Vec{0, 0, 0});
  int images[3];
  double L[3];
  for (int d = 0; d < 3; ++d) {
    L[d] = s.box.length(d);
    images[d] = static_cast<int>(std::ceil(rc / L[d])) + 1;
  }
  const double two_over_sqrt_pi = 2.0 / std::sqrt(k_pi);
  for (int i = 0; i < s.size(); ++i)
    for (int j = 0; j < s.size(); ++j)
      for (int a = -images[0]; a <= images[0]; ++a)
        for (int b = -images[1]; b <= images[1]; ++b)
          for (int c = -images[2]; c <= images[2]; ++c) {
            if (i == j && a == 0 && b == 0 && c == 0) continue;
            const double del[3] = {s.x[i][0] - s.x[j][0] + a * L[0], s.x[i][1] - s.x[j][1] + b * L[1],
                                   s.x[i][2] - s.x[j][2] + c * L[2]};
            const double r2 = del[0] * del[0] + del[1] * del[1] + del[2] * del[2];
            if (r2 >= rc * rc) continue;
            const double r = std::sqrt(r2), qq = s.q[i] * s.q[j];
            o.energy += 0.5 * qq * std::erfc(g * r) / r;
            const double fr = qq * (std::erfc(g * r) / r + two_over_sqrt_pi * g * std::exp(-g * g * r2)) / r2;
            for (int d = 0; d < 3; ++d) o.f[static_cast<std::size_t>(i)][d] += fr * del[d];
          }
  return o;
}

// sqrt(sum_i |a_i - b_i|^2 / N)
double rms_difference(const std::vector<Vec>& a, const std::vector<Vec>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int d = 0; d < 3; ++d) s += (a[i][d] - b[i][d]) * (a[i][d] - b[i][d]);
  return std::sqrt(s / static_cast<double>(a.size()));
}
double max_abs(const std::vector<Vec>& a) {
  double m = 0;
  for (const Vec& v : a)
    for (double c : v) m = std::max(m, std::fabs(c));
  return m;
}
double max_difference(const std::vector<Vec>& a, const std::vector<Vec>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int d = 0; d < 3; ++d) m = std::max(m, std::fabs(a[i][d] - b[i][d]));
  return m;
}

// The bound of PPPM's energy error against Ewald's: PPPM's influence function is optimal for the forces, not
// for the energy, and no estimate of the energy error comes with it. Each atom's potential energy is off by
// about the force accuracy times a distance of order 1 (measured: 0.5 to 9 times the accuracy for a whole
// system of 2 or 1000 atoms); summed with random signs: 10 accuracy sqrt(N). The virial likewise.
double energy_bound(double accuracy, int atoms) { return 10.0 * accuracy * std::sqrt(static_cast<double>(atoms)); }

std::string decomposition_name(fft::Decomposition d) { return fft::to_string(d); }

// A deterministic value in [-1, 1) for (tag, i, j, k).
double value_at(int tag, int i, int j, int k) {
  std::uint64_t z = (static_cast<std::uint64_t>(i + 1000) * 73856093u) ^ (static_cast<std::uint64_t>(j + 1000) * 19349663u) ^
                    (static_cast<std::uint64_t>(k + 1000) * 83492791u) ^ (static_cast<std::uint64_t>(tag) * 2654435761u);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 4503599627370496.0 - 1.0;
}

}  // namespace

// --- parameters ------------------------------------------------------------------------------------------

// The closed form of sum_m sinc^(2p)(z + pi m) against the direct sum.
TEST(KspaceParams, AliasSumClosedForm) {
  double worst = 0;
  for (int order = 2; order <= k_max_order; ++order) {
    const std::vector<double> b = alias_sum_coefficients(order);
    ASSERT_EQ(b.size(), static_cast<std::size_t>(order));
    for (double z : {0.05, 0.4, 0.9, 1.3, 1.5707}) {
      double direct = 0;
      for (int m = -20000; m <= 20000; ++m) {
        const double a = z + k_pi * m;
        direct += std::pow(std::sin(a) / a, 2 * order);
      }
      const double x = std::sin(z) * std::sin(z);
      double closed = 0;
      for (int l = order - 1; l >= 0; --l) closed = b[static_cast<std::size_t>(l)] + closed * x;
      worst = std::max(worst, std::fabs(closed - direct) / direct);
    }
  }
  test::report("alias sum closed form vs direct: max relative difference " + test::sci(worst));
  EXPECT_LT(worst, 1e-11);
}

// The B-spline weights: partition of unity, symmetric, the stencil around the charge.
TEST(KspaceParams, StencilWeights) {
  for (int order = k_min_order; order <= k_max_order; ++order)
    for (double u : {3.0, 3.2, 3.5, 3.77, -1.25, 0.999999}) {
      double w[k_max_order];
      const int first = stencil_weights(u, order, w);
      double sum = 0, mean = 0;
      for (int k = 0; k < order; ++k) {
        EXPECT_GE(w[k], 0.0);
        sum += w[k];
        mean += w[k] * (first + k);
      }
      EXPECT_NEAR(sum, 1.0, 1e-14) << "order " << order << " u " << u;
      EXPECT_NEAR(mean, u, 1e-13) << "order " << order << " u " << u;  // first moment: the charge's position
      EXPECT_LE(first, u + 0.5);
      EXPECT_GE(first + order - 1, u - 0.5);
    }
}

// The host's plane order: every owned atom once, by the brick plane where its stencil begins (BrickMap::stencil's
// first point along x, as the brick stores it), by index within a plane; on a periodic brick (whole mesh, stencils
// wrapping) and on one with ghost planes.
TEST(PlaneOrder, EveryAtomOnceByTheFirstPlaneOfItsStencil) {
  if (!fft::k_host_accessible) GTEST_SKIP() << "host memory only";
  std::mt19937 rng(7);
  for (const bool periodic : {true, false}) {
    BrickMap map;
    map.order = 5;
    for (int d = 0; d < 3; ++d) {
      map.lo[d] = 0.0;
      map.inv_h[d] = 20.0 / 10.0;  // 20 points over a length of 10
      map.first[d] = periodic ? -3 : -4;  // the reach of the stencils; periodic: past the mesh
      map.extent[d] = periodic ? 26 : 28;
      map.base[d] = periodic ? 0 : -4;
      map.dim[d] = periodic ? 20 : 28;
      map.period[d] = periodic ? 20 : 0;
    }
    std::uniform_real_distribution<double> pos(periodic ? 0.0 : -0.5, periodic ? 10.0 : 10.5);
    const int nlocal = 500;
    md::Vec3View x("x", nlocal + 7);  // rows past nlocal are not atoms
    auto hx = Kokkos::create_mirror_view(x);
    for (int i = 0; i < nlocal + 7; ++i)
      for (int d = 0; d < 3; ++d) hx(i, d) = pos(rng);
    Kokkos::deep_copy(x, hx);
    PlaneOrder order;
    order.build(x, nlocal, map);
    ASSERT_EQ(order.planes(), map.dim[0]);
    EXPECT_EQ(order.start()[0], 0);
    EXPECT_EQ(order.start()[order.planes()], nlocal);
    std::vector<int> seen(nlocal, 0);
    for (int p = 0; p < order.planes(); ++p)
      for (int k = order.start()[p]; k < order.start()[p + 1]; ++k) {
        const int i = order.atoms()[k];
        ASSERT_GE(i, 0);
        ASSERT_LT(i, nlocal);
        ++seen[static_cast<std::size_t>(i)];
        if (k > order.start()[p]) {
          EXPECT_LT(order.atoms()[k - 1], i) << "by index within plane " << p;
        }
        const double xi[3] = {hx(i, 0), hx(i, 1), hx(i, 2)};
        int s[3];
        double w[3][k_max_order];
        ASSERT_TRUE(map.stencil<5>(xi, s, w)) << "atom " << i;
        EXPECT_EQ(map.local(0, s[0]), p) << "atom " << i << " at x " << xi[0] << (periodic ? " (periodic)" : "");
      }
    for (int i = 0; i < nlocal; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << "atom " << i;
  }
}

TEST(KspaceParams, ChoiceAndRefusals) {
  comm::Box3 box;
  box.hi = {10, 10, 10};
  ChargeTotals c{1000, 0, 1000};
  KspaceOptions o;
  o.cutoff = 3.0;
  const PppmChoice p = choose_pppm(o, box, c, 1);
  test::report(p.describe());
  for (int d = 0; d < 3; ++d) {
    EXPECT_TRUE(factorable(p.mesh[d]));
    // The smallest: the next smaller factorable mesh misses the accuracy at the first g_ewald.
  }
  EXPECT_LE(p.kspace_error, o.accuracy * (1 + 1e-9));
  EXPECT_NEAR(p.kspace_error, p.real_space_error, 1e-12 * p.kspace_error);  // g_ewald balanced
  const EwaldChoice e = choose_ewald(o, box, c);
  test::report(e.describe());
  EXPECT_LE(e.kspace_error, o.accuracy);

  auto refused = [&](KspaceOptions bad, const std::string& key, bool ewald = false) {
    try {
      if (ewald)
        choose_ewald(bad, box, c);
      else
        choose_pppm(bad, box, c, 4);
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find(key), std::string::npos) << err.what();
      return;
    }
    ADD_FAILURE() << "not refused: " << key;
  };
  KspaceOptions bad = o;
  bad.accuracy = 0;
  refused(bad, "md.kspace.accuracy");
  bad.accuracy = 1e-40;
  refused(bad, "md.kspace.accuracy");
  bad = o;
  bad.order = 8;
  refused(bad, "md.kspace.order");
  bad.order = 1;
  refused(bad, "md.kspace.order");
  bad = o;
  bad.mesh = {8, 8, 8};  // far too coarse for 1e-5
  refused(bad, "md.kspace.mesh");
  bad.mesh = {1, 16, 16};
  refused(bad, "md.kspace.mesh");
  bad = o;
  bad.max_grid_bytes = 1e5;
  refused(bad, "md.kspace.accuracy");
  bad.mesh = p.mesh;
  refused(bad, "bytes");
  bad = o;
  bad.g_ewald = -1;
  refused(bad, "md.kspace.g_ewald");
  bad = o;
  bad.kmax = {0, 3, 0};
  refused(bad, "md.kspace.kmax", true);
  ChargeTotals none{10, 0, 0};
  try {
    choose_pppm(o, box, none, 1);
    ADD_FAILURE() << "an uncharged system without g_ewald";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("md.kspace.g_ewald"), std::string::npos);
  }
  EXPECT_EQ(neutrality_warning(c), "");
  ChargeTotals charged{1000, 0.5, 1000};
  EXPECT_NE(neutrality_warning(charged).find("System is not charge neutral, net charge = 0.5"), std::string::npos);
}

// --- the mesh halo ----------------------------------------------------------------------------------------

TEST(MeshHalo, SumsAndFillsAgainstBruteForce) {
  const auto& world = test::world();
  const std::array<int, 3> n{7, 6, 5};
  const int nranks = world.size(), me = world.rank();
  const std::array<int, 3> dims = comm::choose_grid(nranks, {7, 6, 5});
  std::vector<BrickBoxes> boxes(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    const int c[3] = {r / (dims[2] * dims[1]), (r / dims[2]) % dims[1], r % dims[2]};
    for (int d = 0; d < 3; ++d) {
      auto& b = boxes[static_cast<std::size_t>(r)];
      b.owned.lo[d] = c[d] * n[d] / dims[d];
      b.owned.hi[d] = (c[d] + 1) * n[d] / dims[d] - 1;
      b.brick.lo[d] = b.owned.lo[d] - 2 - (r % 2);  // uneven ghost widths
      b.brick.hi[d] = b.owned.hi[d] + 3;
    }
  }
  auto wrap = [&](int i, int d) { return ((i % n[d]) + n[d]) % n[d]; };
  for (const bool route_self : {false, true}) {
    comm::TransportOptions t;
    t.route_self = route_self;
    auto transport = comm::make_transport(t, world);
    const MeshHaloPlan plan = make_mesh_halo_plan(boxes, n, me);
    MeshHalo halo(plan, *transport, 2);
    const fft::Box3i& brick = plan.brick.box;
    const fft::Box3i& owned = boxes[static_cast<std::size_t>(me)].owned;

    // reverse_sum: every cell of every brick holds value_at(rank, cell); the owned cells end with their own
    // value plus every ghost that is their image, on any rank.
    fft::RealView v("v", brick.count());
    auto hv = Kokkos::create_mirror_view(v);
    for (int i = brick.lo[0]; i <= brick.hi[0]; ++i)
      for (int j = brick.lo[1]; j <= brick.hi[1]; ++j)
        for (int k = brick.lo[2]; k <= brick.hi[2]; ++k) hv(plan.brick.offset(i, j, k)) = value_at(me, i, j, k);
    Kokkos::deep_copy(v, hv);
    halo.reverse_sum(v.data());
    Kokkos::deep_copy(hv, v);
    double err = 0;
    for (int i = owned.lo[0]; i <= owned.hi[0]; ++i)
      for (int j = owned.lo[1]; j <= owned.hi[1]; ++j)
        for (int k = owned.lo[2]; k <= owned.hi[2]; ++k) {
          double expect = value_at(me, i, j, k);
          for (int r = 0; r < nranks; ++r) {
            const BrickBoxes& b = boxes[static_cast<std::size_t>(r)];
            for (int a = b.brick.lo[0]; a <= b.brick.hi[0]; ++a)
              for (int bb = b.brick.lo[1]; bb <= b.brick.hi[1]; ++bb)
                for (int cc = b.brick.lo[2]; cc <= b.brick.hi[2]; ++cc)
                  if (!b.owned.contains(a, bb, cc) && wrap(a, 0) == i && wrap(bb, 1) == j && wrap(cc, 2) == k)
                    expect += value_at(r, a, bb, cc);
          }
          err = std::max(err, std::fabs(hv(plan.brick.offset(i, j, k)) - expect));
        }
    EXPECT_LT(err, 1e-13) << "route_self " << route_self;

    // forward_fill of two fields: every cell ends with the value of the cell it is an image of.
    fft::RealView f0("f0", brick.count()), f1("f1", brick.count());
    auto h0 = Kokkos::create_mirror_view(f0);
    auto h1 = Kokkos::create_mirror_view(f1);
    for (int i = brick.lo[0]; i <= brick.hi[0]; ++i)
      for (int j = brick.lo[1]; j <= brick.hi[1]; ++j)
        for (int k = brick.lo[2]; k <= brick.hi[2]; ++k) {
          const bool mine = owned.contains(i, j, k);
          h0(plan.brick.offset(i, j, k)) = mine ? value_at(100, i, j, k) : std::nan("");
          h1(plan.brick.offset(i, j, k)) = mine ? value_at(200, i, j, k) : std::nan("");
        }
    Kokkos::deep_copy(f0, h0);
    Kokkos::deep_copy(f1, h1);
    double* fields[2] = {f0.data(), f1.data()};
    halo.forward_fill(2, fields);
    Kokkos::deep_copy(h0, f0);
    Kokkos::deep_copy(h1, f1);
    int wrong = 0;
    for (int i = brick.lo[0]; i <= brick.hi[0]; ++i)
      for (int j = brick.lo[1]; j <= brick.hi[1]; ++j)
        for (int k = brick.lo[2]; k <= brick.hi[2]; ++k) {
          const int w[3] = {wrap(i, 0), wrap(j, 1), wrap(k, 2)};
          if (h0(plan.brick.offset(i, j, k)) != value_at(100, w[0], w[1], w[2])) ++wrong;
          if (h1(plan.brick.offset(i, j, k)) != value_at(200, w[0], w[1], w[2])) ++wrong;
        }
    EXPECT_EQ(wrong, 0) << "route_self " << route_self;
  }
}

// --- Ewald ------------------------------------------------------------------------------------------------

// Rock salt: the energy per ion pair is -M / a (M the Madelung constant), with the test's real-space sum.
TEST(Ewald, MadelungConstantOfRockSalt) {
  for (const auto& [cells, a] : {std::pair<int, double>{3, 1.0}, std::pair<int, double>{2, 1.3}}) {
    const System s = rock_salt(cells, a);
    KspaceOptions o;
    o.accuracy = 1e-10;
    o.cutoff = 3.0 * a;
    EwaldChoice ch;
    const Outcome k = run_ewald(s, o, test::world(), &ch);
    const Outcome r = real_space(s, ch.g_ewald, o.cutoff);
    const double per_pair = (k.energy + r.energy) / (s.size() / 2);
    const double rel = std::fabs(per_pair * a / -k_madelung_nacl - 1.0);
    test::report("rock salt " + std::to_string(s.size()) + " ions, a " + test::sci(a) + ": " + ch.describe() +
                 "; energy per ion pair x a " + exact(per_pair * a) + ", relative error " + test::sci(rel) +
                 ", largest k-space force " + test::sci(max_abs(k.f)));
    EXPECT_LT(rel, 1e-8);
    EXPECT_LT(max_abs(k.f), 1e-9);  // every ion is a centre of symmetry
  }
}

// Two opposite charges at distance d in a cubic box, with tin-foil boundaries: E = -1/d - 2 pi d^2 / (3 V) up to
// terms of order d^4 / L^5 (the dipole lattice sum of a cubic lattice vanishes), and the force on either charge
// along the pair, dE/dd = 1/d^2 - 4 pi d / (3 V) up to terms of order d^3 / L^5.
TEST(Ewald, DipoleInABox) {
  const auto& world = test::world();
  System s;
  const double L = 8.0, d = 0.4;
  s.box.lo = {0, 0, 0};
  s.box.hi = {L, L, L};
  const Vec dir{0.48, -0.6, 0.64};  // a unit vector
  s.x = {{3.1, 4.2, 5.3}, {3.1 + d * dir[0], 4.2 + d * dir[1], 5.3 + d * dir[2]}};
  s.q = {1.0, -1.0};
  KspaceOptions o;
  o.accuracy = 1e-12;
  o.cutoff = 3.9;
  EwaldChoice ch;
  const Outcome k = run_ewald(s, o, world, &ch);
  const Outcome r = real_space(s, ch.g_ewald, o.cutoff);
  const double energy = k.energy + r.energy;
  const double box_term = 2.0 * k_pi * d * d / (3.0 * L * L * L);
  const double expect = -1.0 / d - box_term;
  double f_along = 0;  // on the positive charge, towards the negative one
  for (int c = 0; c < 3; ++c) f_along += (k.f[0][c] + r.f[0][c]) * dir[c];
  const double f_expect = 1.0 / (d * d) - 2.0 * box_term / d;
  const double next = std::pow(d, 4) / std::pow(L, 5);  // the order of the first term left out
  test::report("dipole d " + test::sci(d) + " in L " + test::sci(L) + ": Ewald energy " + exact(energy) + ", expansion " +
               exact(expect) + " (difference " + test::sci(energy - expect) + ", box term " + test::sci(box_term) +
               ", d^4/L^5 " + test::sci(next) + "); force along the pair " + exact(f_along) + " vs " + exact(f_expect) +
               " (difference " + test::sci(f_along - f_expect) + ")");
  EXPECT_NEAR(energy, expect, 5 * next);
  EXPECT_NEAR(f_along, f_expect, 5 * 4 * next / d);  // the derivative of a term C d^4 / L^5
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(k.f[0][c] + k.f[1][c], 0.0, 1e-12);  // Newton's third law
}

// A dipole against the Ewald sum, at a separation where the two charges' stencils do not overlap: the RMS force
// error below the accuracy. The estimate (Deserno and Holm) assumes uncorrelated charges: the k-space error of a
// close pair is larger (at d = 0.4, about 5 times the estimate; LAMMPS's PPPM has the same, Pppm.AgainstLammps),
// and falls with the mesh as fast as the estimate does.
TEST(Pppm, DipoleAgainstEwald) {
  const auto& world = test::world();
  const double L = 8.0;
  struct Placement {
    Vec at, dir;
    double d;
  };
  const Placement far[2] = {{{3.1, 4.2, 5.3}, {0.48, -0.6, 0.64}, 3.0}, {{7.2, 0.3, 1.9}, {0.0, 0.8, -0.6}, 3.3}};
  auto dipole = [&](const Placement& p) {
    System s;
    s.box.hi = {L, L, L};
    s.x = {p.at, {p.at[0] + p.d * p.dir[0], p.at[1] + p.d * p.dir[1], p.at[2] + p.d * p.dir[2]}};
    for (double& c : s.x[1]) c -= L * std::floor(c / L);
    s.q = {1.0, -1.0};
    return s;
  };
  double close_error[2] = {0, 0};
  int a = 0;
  for (double accuracy : {1e-5, 1e-7}) {
    KspaceOptions p;
    p.accuracy = accuracy;
    p.cutoff = 3.9;
    for (const Placement& pl : far) {
      const System s = dipole(pl);
      PppmChoice pc;
      const Outcome got = run_pppm(s, p, world, {}, &pc);
      KspaceOptions e = p;
      e.g_ewald = pc.g_ewald;
      e.accuracy = 1e-12;
      const Outcome ref = run_ewald(s, e, world);
      const double rms = rms_difference(got.f, ref.f);
      test::report("dipole d " + test::sci(pl.d) + ", " + pc.describe() + ": RMS force error " + test::sci(rms) +
                   ", energy " + exact(got.energy) + " vs Ewald " + exact(ref.energy));
      EXPECT_LT(rms, accuracy);
      EXPECT_NEAR(got.energy, ref.energy, energy_bound(accuracy, s.size()));
    }
    const System close = dipole({{3.1, 4.2, 5.3}, {0.48, -0.6, 0.64}, 0.4});
    PppmChoice pc;
    const Outcome got = run_pppm(close, p, world, {}, &pc);
    KspaceOptions e = p;
    e.g_ewald = pc.g_ewald;
    e.accuracy = 1e-12;
    close_error[a++] = rms_difference(got.f, run_ewald(close, e, world).f);
    test::report("dipole d 0.4: RMS force error " + test::sci(close_error[a - 1]) + " (k-space estimate " +
                 test::sci(pc.kspace_error) + ")");
  }
  EXPECT_LT(close_error[1], close_error[0] / 10);
}

// Central differences of Ewald's energy: the forces (each component of a few atoms) and the diagonal virial
// (a strain of box and positions along one axis at fixed g_ewald and k-vectors).
TEST(Ewald, ForcesAndVirialAreDerivativesOfTheEnergy) {
  const auto& world = test::world();
  for (const double extra : {0.0, 0.7}) {  // neutral, and a net charge (the background's virial)
    const System s = random_system(60, 0.6, 0.8, 11, extra);
    KspaceOptions o;
    o.accuracy = 1e-6;
    o.cutoff = 2.0;
    EwaldChoice ch;
    const Outcome base = run_ewald(s, o, world, &ch);
    o.g_ewald = ch.g_ewald;
    o.kmax = ch.kmax;
    // Central differences of fourth order: (8 [E(h) - E(-h)] - [E(2h) - E(-2h)]) / (12 h).
    auto derivative = [&](const std::function<System(double)>& moved, double h) {
      auto e = [&](double t) { return run_ewald(moved(t), o, world).energy; };
      return (8 * (e(h) - e(-h)) - (e(2 * h) - e(-2 * h))) / (12 * h);
    };
    double worst = 0;
    for (int i : {0, 17, 42})
      for (int c = 0; c < 3; ++c) {
        const double fd = -derivative(
            [&](double t) {
              System m = s;
              m.x[static_cast<std::size_t>(i)][c] += t;
              return m;
            },
            1e-4);
        worst = std::max(worst, std::fabs(fd - base.f[static_cast<std::size_t>(i)][c]));
      }
    const double scale = max_abs(base.f);
    double worst_virial = 0;
    for (int c = 0; c < 3; ++c) {
      const double fd = -derivative(
          [&](double t) {
            System m = s;
            m.box.hi[c] = m.box.lo[c] + (1 + t) * s.box.length(c);
            for (Vec& p : m.x) p[c] = m.box.lo[c] + (1 + t) * (p[c] - s.box.lo[c]);
            return m;
          },
          1e-4);
      worst_virial = std::max(worst_virial, std::fabs(fd - base.virial[static_cast<std::size_t>(c)]) /
                                                std::fabs(base.virial[static_cast<std::size_t>(c)]));
    }
    test::report("Ewald, net charge " + test::sci(extra) + ": central differences vs forces, max " + test::sci(worst) +
                 " (largest force " + test::sci(scale) + "); vs diagonal virial, max relative " + test::sci(worst_virial));
    EXPECT_LT(worst, 1e-8 * scale);
    EXPECT_LT(worst_virial, 1e-8);
  }
}

// The total (real space + k-space + self + background) does not depend on how g_ewald splits it.
TEST(Ewald, TotalEnergyIndependentOfSplitting) {
  const auto& world = test::world();
  for (const double extra : {0.0, 0.5}) {
    const System s = random_system(40, 0.5, 0.8, 5, extra);
    double e[2];
    std::vector<Vec> f[2];
    const double gs[2] = {1.2, 1.6};
    for (int k = 0; k < 2; ++k) {
      KspaceOptions o;
      o.accuracy = 1e-13;
      o.cutoff = 4.0;
      o.g_ewald = gs[k];
      const Outcome ks = run_ewald(s, o, world);
      const Outcome rs = real_space(s, gs[k], 4.0);
      e[k] = ks.energy + rs.energy;
      f[k] = ks.f;
      for (std::size_t i = 0; i < f[k].size(); ++i)
        for (int c = 0; c < 3; ++c) f[k][i][c] += rs.f[i][c];
    }
    test::report("Ewald, net charge " + test::sci(extra) + ": total energy at g 1.2 and 1.6: " + exact(e[0]) + ", " +
                 exact(e[1]) + "; largest force difference " + test::sci(max_difference(f[0], f[1])));
    EXPECT_NEAR(e[0], e[1], 1e-9 * std::fabs(e[0]));
    EXPECT_LT(max_difference(f[0], f[1]), 1e-9 * max_abs(f[0]));
  }
}

// --- PPPM -------------------------------------------------------------------------------------------------

// 1000 charges at the density of an LJ liquid: PPPM's k-space forces against Ewald's with the same g_ewald, slabs
// and pencils: at 1e-5 (order 5) and 1e-7 (order 7), and at 1e-4 with every order.
TEST(Pppm, AgainstEwald) {
  const auto& world = test::world();
  const System s = random_system(1000, 0.8442, 0.8, 1);
  struct Case {
    double accuracy;
    int order;
  };
  // Low orders need fine meshes (order 2: 500^3 at 1e-4): they are checked at a larger accuracy.
  const Case cases[] = {{1e-5, 5}, {1e-7, 7}, {3e-3, 2}, {1e-3, 3}, {1e-4, 4}, {1e-4, 5}, {1e-4, 6}, {1e-4, 7}};
  for (const Case& c : cases) {
    KspaceOptions o;
    o.accuracy = c.accuracy;
    o.order = c.order;
    o.cutoff = 3.0;
    PppmChoice pc;
    const Outcome slab = run_pppm(s, o, world, {fft::Decomposition::Slab}, &pc);
    const Outcome pencil = run_pppm(s, o, world, {fft::Decomposition::Pencil});
    KspaceOptions e = o;
    e.accuracy = 1e-10;
    e.g_ewald = pc.g_ewald;
    EwaldChoice ec;
    const Outcome ref = run_ewald(s, e, world, &ec);
    const double rms = rms_difference(slab.f, ref.f);
    const double rms_pencil = rms_difference(pencil.f, ref.f);
    const double de = std::fabs(slab.energy - ref.energy);
    double dv = 0;
    for (int k = 0; k < 6; ++k) dv = std::max(dv, std::fabs(slab.virial[k] - ref.virial[k]));
    test::report(pc.describe());
    std::string line = "  vs " + ec.describe() + ": RMS force error " + test::sci(rms) + " (pencils " +
                       test::sci(rms_pencil) + "), requested " + test::sci(c.accuracy) + "; k-space energy " +
                       exact(slab.energy) + " vs " + exact(ref.energy) + " (difference " + test::sci(de) + ")";
    if (c.order == 5 && c.accuracy == 1e-5) {
      const Outcome rs = real_space(s, pc.g_ewald, o.cutoff);
      line += ", total with real space " + exact(ref.energy + rs.energy);
    }
    test::report(line + "; largest virial difference " + test::sci(dv) + " (xx " + exact(ref.virial[0]) + ")");
    EXPECT_LT(rms, c.accuracy) << "order " << c.order;
    EXPECT_LT(rms_pencil, c.accuracy) << "order " << c.order;
    EXPECT_LT(de, energy_bound(c.accuracy, s.size())) << "order " << c.order;
    EXPECT_LT(dv, energy_bound(c.accuracy, s.size())) << "order " << c.order;
  }
}

// One rank on MPI_COMM_SELF (every rank the whole system) against world, slabs and pencils, self messages
// through the transport, atoms displaced up to the margin out of their sub-boxes (and of the box). Charges as
// close as 0.2, so that many mesh points sum several atoms' charges (in another order on every rank count).
TEST(Pppm, RankAndDecompositionIndependence) {
  const auto& world = test::world();
  System s = random_system(300, 0.8442, 0.2, 3, 0.25);
  const std::vector<Vec> home = s.x;
  const double margin = 0.3;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-margin * 0.99 / std::sqrt(3.0), margin * 0.99 / std::sqrt(3.0));
  for (Vec& p : s.x)
    for (double& c : p) c += u(rng);
  KspaceOptions o;
  o.accuracy = 1e-5;
  o.cutoff = 2.5;
  o.margin = margin;
  comm::Communicator self(MPI_COMM_SELF);
  PppmRun alone;
  alone.owner_x = &home;
  const Outcome ref = run_pppm(s, o, self, alone);
  // One rank: the transform in place on a brick of the whole mesh (no ghosts, no reshapes).
  EXPECT_TRUE(ref.in_place);
  double worst_e = 0, worst_f = 0, worst_v = 0;
  int in_place = 0;
  int differ = 0;  // force components not bitwise equal: the check is not one of identical arithmetic
  for (const auto decomposition : {fft::Decomposition::Slab, fft::Decomposition::Pencil})
    for (const bool route_self : {false, true}) {
      PppmRun how;
      how.decomposition = decomposition;
      how.route_self = route_self;
      how.owner_x = &home;
      const Outcome got = run_pppm(s, o, world, how);
      // In place where the rank grid is P x 1 x 1 (the cubic box's choice at 1-3 ranks) and the slabs are the
      // owned boxes; never through self messages (ghosts everywhere) or pencils on several ranks.
      if (route_self || (world.size() < 4 && decomposition == fft::Decomposition::Slab)) {
        EXPECT_EQ(got.in_place, !route_self) << decomposition_name(decomposition) << " route_self " << route_self;
      }
      in_place += got.in_place;
      const double de = std::fabs(got.energy - ref.energy) / std::fabs(ref.energy);
      const double df = max_difference(got.f, ref.f) / max_abs(ref.f);
      double dv = 0;
      for (int c = 0; c < 6; ++c) dv = std::max(dv, std::fabs(got.virial[c] - ref.virial[c]) / std::fabs(ref.virial[0]));
      EXPECT_LT(de, 1e-12) << decomposition_name(decomposition) << " route_self " << route_self;
      EXPECT_LT(df, 1e-12) << decomposition_name(decomposition) << " route_self " << route_self;
      EXPECT_LT(dv, 1e-12) << decomposition_name(decomposition) << " route_self " << route_self;
      for (std::size_t i = 0; i < got.f.size(); ++i)
        for (int c = 0; c < 3; ++c) differ += got.f[i][c] != ref.f[i][c];
      worst_e = std::max(worst_e, de);
      worst_f = std::max(worst_f, df);
      worst_v = std::max(worst_v, dv);
    }
  test::report("PPPM at " + std::to_string(world.size()) + " rank(s) vs one: energy " + test::sci(worst_e) + ", forces " +
               test::sci(worst_f) + ", virial " + test::sci(worst_v) + " (relative); " + std::to_string(differ) +
               " of " + std::to_string(4 * 3 * s.size()) + " force components not bitwise equal; " +
               std::to_string(in_place) + " of 4 runs in place");
}

// One rank interpolates the field plane by plane as the transform makes it (Pppm::compute, step 7): the same
// arithmetic as after the whole transform, so the same forces and energy bit for bit, at the lowest, the default
// and the highest order; on a mesh whose (y, z) planes the transform makes one by one, and on one it transforms
// whole (an odd number of doubles to a plane: every plane reported at the end).
TEST(Pppm, PlaneByPlaneInterpolationEqualsTheWholeTransforms) {
  comm::Communicator self(MPI_COMM_SELF);
  const System s = random_system(300, 0.8442, 0.2, 5);
  int differ = 0, cases = 0;
  for (const std::array<int, 3>& mesh : {std::array<int, 3>{16, 14, 15}, std::array<int, 3>{15, 13, 11}})
    for (const int order : {2, 5, 7}) {
      KspaceOptions o;
      o.accuracy = 0.2;  // coarse meshes at every order: what is compared is the arithmetic, not the accuracy
      o.cutoff = 2.5;
      o.mesh = mesh;
      o.order = order;
      const Outcome by_plane = run_pppm(s, o, self);
      o.plane_interpolation = false;
      const Outcome whole = run_pppm(s, o, self);
      const std::string what = std::to_string(mesh[0]) + "x" + std::to_string(mesh[1]) + "x" + std::to_string(mesh[2]) +
                               " order " + std::to_string(order);
      EXPECT_EQ(by_plane.plane_interpolations, 1) << what;
      EXPECT_EQ(whole.plane_interpolations, 0) << what;
      EXPECT_EQ(by_plane.energy, whole.energy) << what;
      ASSERT_EQ(by_plane.f.size(), whole.f.size());
      for (std::size_t i = 0; i < whole.f.size(); ++i)
        for (int c = 0; c < 3; ++c) differ += by_plane.f[i][c] != whole.f[i][c];
      EXPECT_GT(max_abs(whole.f), 0.0) << what;
      ++cases;
    }
  EXPECT_EQ(differ, 0) << "force components that differ between the two interpolations";
  test::report("PPPM plane by plane vs after the whole transform: " + std::to_string(differ) +
               " force components differ in " + std::to_string(cases) + " cases of 300 atoms");
}

// PPPM's ik forces against central differences of its own energy, and both against Ewald. The ik force is not
// the gradient of PPPM's energy: the energy's gradient is the force of analytical differentiation with the
// influence function optimal for ik, a different approximation of the exact k-space force with no estimate of
// its own. Both must converge to Ewald's force as the mesh is refined, and so must their difference: at
// accuracy 1e-5 each is bounded by 10 times the accuracy (measured: the ik force 0.3 times, the gradient of the
// energy 3 times), and at 1e-6 the difference of the two falls at least 3-fold.
TEST(Pppm, ForcesAgainstFiniteDifferences) {
  const auto& world = test::world();
  const System s = random_system(200, 0.8442, 0.8, 21);
  double difference[2] = {0, 0};
  int run = 0;
  for (const double accuracy : {1e-5, 1e-6}) {
    KspaceOptions o;
    o.accuracy = accuracy;
    o.cutoff = 2.5;
    o.margin = 0.01;
    PppmChoice pc;
    const Outcome base = run_pppm(s, o, world, {}, &pc);
    o.g_ewald = pc.g_ewald;
    o.mesh = pc.mesh;
    KspaceOptions e = o;
    e.accuracy = 1e-10;
    const Outcome ref = run_ewald(s, e, world);
    const double h = 1e-4;
    double d_fd = 0, d_ewald_fd = 0, d_ewald_ik = 0;
    const int atoms[] = {3, 20, 50, 77, 111, 130, 150, 199};
    for (int i : atoms)
      for (int c = 0; c < 3; ++c) {
        System a = s, b = s;
        a.x[static_cast<std::size_t>(i)][c] += h;
        b.x[static_cast<std::size_t>(i)][c] -= h;
        const double fd = -(run_pppm(a, o, world).energy - run_pppm(b, o, world).energy) / (2 * h);
        const double ik = base.f[static_cast<std::size_t>(i)][c], exact_f = ref.f[static_cast<std::size_t>(i)][c];
        d_fd += (ik - fd) * (ik - fd);
        d_ewald_fd += (exact_f - fd) * (exact_f - fd);
        d_ewald_ik += (exact_f - ik) * (exact_f - ik);
      }
    // RMS per atom (of the three components' squares).
    const double n = static_cast<double>(std::size(atoms));
    d_fd = std::sqrt(d_fd / n);
    d_ewald_fd = std::sqrt(d_ewald_fd / n);
    d_ewald_ik = std::sqrt(d_ewald_ik / n);
    difference[run++] = d_fd;
    test::report(pc.describe() + "; over 8 atoms, RMS |ik - (-dE/dx)| " + test::sci(d_fd) + ", |Ewald - (-dE/dx)| " +
                 test::sci(d_ewald_fd) + ", |Ewald - ik| " + test::sci(d_ewald_ik));
    EXPECT_LT(d_ewald_ik, accuracy);
    EXPECT_LT(d_ewald_fd, 10 * accuracy);
    EXPECT_LT(d_fd, 10 * accuracy);
  }
  EXPECT_LT(difference[1], difference[0] / 3);
}

// Real units: the Coulomb constant qqrd2e scales energy, forces and virial, and with the two-charge force
// scaled alike (LAMMPS: qqr2e qelectron^2 / angstrom^2) the same accuracy chooses the same parameters.
TEST(Pppm, CoulombConstant) {
  const auto& world = test::world();
  const System s = random_system(150, 0.8442, 0.8, 12);
  KspaceOptions o;
  o.cutoff = 2.5;
  PppmChoice lj_choice, real_choice;
  const Outcome lj = run_pppm(s, o, world, {}, &lj_choice);
  o.qqrd2e = o.two_charge_force = 332.06371;
  const Outcome real = run_pppm(s, o, world, {}, &real_choice);
  EXPECT_EQ(real_choice.mesh, lj_choice.mesh);
  EXPECT_NEAR(real_choice.g_ewald, lj_choice.g_ewald, 1e-12 * lj_choice.g_ewald);
  EXPECT_NEAR(real.energy, 332.06371 * lj.energy, 1e-12 * std::fabs(real.energy));
  EXPECT_LT(max_difference(real.f, [&] {
              std::vector<Vec> f = lj.f;
              for (Vec& v : f)
                for (double& x : v) x *= 332.06371;
              return f;
            }()),
            1e-12 * max_abs(real.f));
  for (int c = 0; c < 6; ++c) EXPECT_NEAR(real.virial[c], 332.06371 * lj.virial[c], 1e-12 * std::fabs(real.virial[0]));
}

// An atom further outside its sub-box than the margin: RunError on every rank, naming the margin.
TEST(Pppm, AtomBeyondMarginIsRefused) {
  const auto& world = test::world();
  System s = random_system(100, 0.8442, 0.8, 4);
  KspaceOptions o;
  o.accuracy = 1e-4;
  o.cutoff = 2.5;
  o.margin = 0.1;
  const std::vector<Vec> home = s.x;
  s.x[7][0] = s.box.hi[0] + 2.0;  // far beyond the margin and the ghost cells, at any rank count
  PppmRun how;
  how.owner_x = &home;
  std::string what;
  try {
    run_pppm(s, o, world, how);
  } catch (const RunError& e) {
    what = e.what();
  }
  test::report("refused: " + what);
  EXPECT_TRUE(test::all_ranks(what.find("outside its sub-box") != std::string::npos)) << what;
}

// A net charge: the warning, and PPPM's energy (with the background) against Ewald's.
TEST(Pppm, NonNeutralSystem) {
  const auto& world = test::world();
  const System s = random_system(200, 0.8442, 0.8, 8, 1.0);
  KspaceOptions o;
  o.accuracy = 1e-6;
  o.cutoff = 2.5;
  auto transport = comm::make_transport("auto", world);
  comm::ProcessGrid grid(world, s.box);
  Local l = distribute(s, grid);
  const ChargeTotals totals = charge_totals(l.q, l.nlocal, world);
  EXPECT_NEAR(totals.sum, 1.0, 1e-12);
  Pppm pppm(o, grid, world, *transport, totals);
  ASSERT_EQ(pppm.warnings().size(), 1u);
  EXPECT_NE(pppm.warnings()[0].find("System is not charge neutral, net charge = 1"), std::string::npos);
  const Outcome got = collect(pppm.compute(l.x, l.q, l.nlocal, l.f), l, s.size(), world);
  KspaceOptions e = o;
  e.accuracy = 1e-10;
  e.g_ewald = pppm.choice().g_ewald;
  const Outcome ref = run_ewald(s, e, world);
  const double background = -k_pi / (2.0 * e.g_ewald * e.g_ewald * s.box.volume());
  test::report("net charge 1: PPPM energy " + exact(got.energy) + ", Ewald " + exact(ref.energy) + " (background term " +
               exact(background) + "); RMS force difference " + test::sci(rms_difference(got.f, ref.f)));
  EXPECT_LT(rms_difference(got.f, ref.f), o.accuracy);
  EXPECT_LT(std::fabs(got.energy - ref.energy), energy_bound(o.accuracy, s.size()));
}


// --- LAMMPS references (tools/make_lammps_kspace_reference.sh) -------------------------------------------

namespace {

// A data file of tests/data (atom_style charge) as a System, atoms in id order (ids 1..N); q1: atom 1's
// charge instead of the file's (0: the file's).
System data_system(const std::string& name, double q1 = 0) {
  const io::LammpsData d = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/" + name);
  System s;
  s.box.lo = d.lo;
  s.box.hi = d.hi;
  const std::size_t n = d.natoms();
  s.x.resize(n);
  s.q.resize(n);
  for (std::size_t a = 0; a < n; ++a) {
    const std::size_t i = static_cast<std::size_t>(d.id[a] - 1);
    s.x[i] = {d.x[3 * a], d.x[3 * a + 1], d.x[3 * a + 2]};
    s.q[i] = d.q[a];
  }
  if (q1 != 0) s.q[0] = q1;
  return s;
}

ChargeTotals totals_of(const System& s) {
  ChargeTotals c;
  c.count = s.size();
  for (double q : s.q) {
    c.sum += q;
    c.sum_sq += q * q;
  }
  return c;
}

// tests/data/lammps-kspace-NAME.txt
struct LammpsRun {
  std::string data, style;
  double q1 = 0, accuracy = 0, g_ewald = 0, elong = 0;
  std::array<int, 3> mesh{0, 0, 0};
  int order = 5;
  std::array<double, 6> pressure{};
  std::vector<Vec> f;  // by id - 1
};

LammpsRun read_lammps_run(const std::string& name) {
  const std::string path = std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-kspace-" + name + ".txt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  LammpsRun r;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "data") ls >> r.data;
    else if (key == "q1") ls >> r.q1;
    else if (key == "style") ls >> r.style;
    else if (key == "accuracy") ls >> r.accuracy;
    else if (key == "g_ewald") ls >> r.g_ewald;
    else if (key == "mesh") ls >> r.mesh[0] >> r.mesh[1] >> r.mesh[2];
    else if (key == "order") ls >> r.order;
    else if (key == "elong") ls >> r.elong;
    else if (key == "pressure") for (double& p : r.pressure) ls >> p;
    else if (key == "atoms") {
      int n = 0;
      ls >> n;
      r.f.resize(static_cast<std::size_t>(n));
      for (int k = 0; k < n; ++k) {
        std::int64_t id = 0;
        Vec v{};
        in >> id >> v[0] >> v[1] >> v[2];
        r.f[static_cast<std::size_t>(id - 1)] = v;
      }
    }
  }
  return r;
}

// LAMMPS's mesh rule (PPPM::set_grid_global), reproduced from spotrun's estimates: from n = int(L g) + 1, the
// loop that evaluates the error of the spacing before it steps n, so that it stops one point above the first
// n that meets the accuracy; then the next size of factors 2, 3 and 5.
int lammps_mesh_rule(double length, double g, int order, double q2, double natoms, double accuracy) {
  double h = 1.0 / g;
  int n = static_cast<int>(length / h) + 1;
  double err = ik_error(h, length, g, order, q2, natoms);
  while (err > accuracy) {
    err = ik_error(h, length, g, order, q2, natoms);
    ++n;
    h = length / n;
  }
  while (!factorable(n)) ++n;
  return n;
}

}  // namespace

// spotrun's estimates and choices against what LAMMPS reports for the same system (lammps-kspace-choice.txt):
// the estimated accuracy of given parameters (every order), Ewald's g_ewald, kmax and k-vector count, and
// PPPM's mesh: LAMMPS's loop, which ends one point above the smallest mesh that meets the accuracy
// (reproduced exactly from spotrun's estimates by the test's own copy of the rule, and chosen by spotrun).
TEST(Lammps, ParameterChoice) {
  std::ifstream in(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-kspace-choice.txt");
  ASSERT_TRUE(in.good());
  std::string line;
  int cases = 0;
  double worst_estimate = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string data, style;
    double accuracy, cutoff, g_given, g, estimated;
    int order;
    std::array<int, 3> given, mesh;
    long long vectors;
    ls >> data >> style >> accuracy >> cutoff >> order >> g_given >> given[0] >> given[1] >> given[2] >> g >> mesh[0] >>
        mesh[1] >> mesh[2] >> vectors >> estimated;
    ASSERT_FALSE(ls.fail()) << line;
    ++cases;
    const System s = data_system(data);
    const ChargeTotals c = totals_of(s);
    const double q2 = c.sum_sq, n = static_cast<double>(c.count), volume = s.box.volume();
    KspaceOptions o;
    o.accuracy = accuracy;
    o.cutoff = cutoff;
    o.order = order;
    o.g_ewald = g_given;
    if (style == "ewald") {
      const EwaldChoice e = choose_ewald(o, s.box, c);
      EXPECT_NEAR(e.g_ewald, g, 1e-7 * g) << line;
      EXPECT_EQ(e.kmax, mesh) << line;
      EXPECT_EQ(e.vectors, vectors) << line;
      worst_estimate = std::max(worst_estimate, std::fabs(e.estimated_accuracy / estimated - 1));
      test::report("ewald " + test::sci(accuracy) + ": " + e.describe() + "; LAMMPS g_ewald " + exact(g) + ", kmax " +
                   std::to_string(mesh[0]) + " " + std::to_string(mesh[1]) + " " + std::to_string(mesh[2]) + ", " +
                   std::to_string(vectors) + " k-vectors, estimate " + exact(estimated));
      continue;
    }
    // The estimate of LAMMPS's parameters (given or chosen) by spotrun's formulas. A g_ewald LAMMPS chose is
    // known to its 8 printed digits: the estimate is allowed what that rounding changes in it.
    auto estimate = [&](double gg) {
      const double k = pppm_kspace_error(mesh, s.box, gg, order, q2, n);
      const double r = real_space_error(gg, cutoff, q2, n, volume);
      return std::sqrt(k * k + r * r);
    };
    const double mine = estimate(g);
    const double dg = g_given != 0 ? 0.0 : 0.5 * std::pow(10.0, std::floor(std::log10(g)) - 7);
    const double rounding = std::max(std::fabs(estimate(g + dg) - mine), std::fabs(estimate(g - dg) - mine));
    const double rel = (std::fabs(mine - estimated) - rounding) / estimated;
    worst_estimate = std::max(worst_estimate, rel);
    EXPECT_LT(rel, 1e-7) << line;
    if (g_given != 0) continue;
    const PppmChoice p = choose_pppm(o, s.box, c, 1);
    const double g0 = initial_g_ewald(accuracy, cutoff, q2, n, volume);
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(lammps_mesh_rule(s.box.length(d), g0, order, q2, n, accuracy), mesh[d]) << line;
      EXPECT_EQ(p.mesh[d], mesh[d]) << line;
    }
    // LAMMPS stops its Newton iteration on g_ewald at |real - k-space estimate| < 1e-5 (absolute): the two
    // estimates at its g_ewald.
    const double lk = pppm_kspace_error(mesh, s.box, g, order, q2, n), lr = real_space_error(g, cutoff, q2, n, volume);
    test::report("pppm " + test::sci(accuracy) + " order " + std::to_string(order) + ": " + p.describe() +
                 "; LAMMPS g_ewald " + exact(g) + ", mesh " + std::to_string(mesh[0]) + " x " + std::to_string(mesh[1]) +
                 " x " + std::to_string(mesh[2]) + ", estimate " + exact(estimated) + " (k-space " + test::sci(lk) +
                 ", real space " + test::sci(lr) + ")");
  }
  EXPECT_EQ(cases, 15);
  test::report("estimates against LAMMPS's (8 digits): largest relative difference " + test::sci(worst_estimate) +
               " beyond the rounding of a printed g_ewald");
  EXPECT_LT(worst_estimate, 1e-7);
}

// spotrun's PPPM and Ewald with LAMMPS's parameters against LAMMPS's (lammps-kspace-*.txt: k-space energy,
// forces, virial), and spotrun's PPPM against LAMMPS's Ewald to the accuracy both promise. LAMMPS's influence
// function has 4 pi as 12.5663706 (1.1e-9 relative): the PPPM figures agree to about that.
TEST(Lammps, EnergyForcesAndVirial) {
  const auto& world = test::world();
  struct Pair {
    const char* pppm;
    const char* ewald;
  };
  for (const Pair& p : {Pair{"pppm5", "ewald"}, Pair{"pppm7", "ewald7"}, Pair{"pppm3", "ewald3"},
                        Pair{"pppm5-charged", "ewald-charged"}, Pair{"dipole-pppm", "dipole-ewald"}}) {
    const LammpsRun lp = read_lammps_run(p.pppm), le = read_lammps_run(p.ewald);
    const System s = data_system(lp.data, lp.q1);
    ASSERT_EQ(lp.f.size(), static_cast<std::size_t>(s.size()));
    const double volume = s.box.volume();
    KspaceOptions o;
    o.accuracy = lp.accuracy;
    o.cutoff = 3.0;  // only in the estimates: g_ewald and the mesh are given
    o.g_ewald = lp.g_ewald;
    o.mesh = lp.mesh;
    o.order = lp.order;
    const Outcome mp = run_pppm(s, o, world);
    KspaceOptions oe = o;
    oe.accuracy = le.accuracy;
    oe.g_ewald = le.g_ewald;
    oe.mesh = {0, 0, 0};
    const Outcome me = run_ewald(s, oe, world);
    // The background's virial (spotrun includes it; see below) on each diagonal component.
    const ChargeTotals c = totals_of(s);
    const double background = -k_pi * c.sum * c.sum / (2 * lp.g_ewald * lp.g_ewald * volume);
    auto compare = [&](const Outcome& mine, const LammpsRun& ref, const std::string& what, double tolerance) {
      const double de = std::fabs(mine.energy - ref.elong) / std::fabs(ref.elong);
      const double df = max_difference(mine.f, ref.f) / max_abs(ref.f);
      double dv = 0, scale = 0;
      for (int k = 0; k < 6; ++k) scale = std::max(scale, std::fabs(ref.pressure[k] * volume));
      for (int k = 0; k < 6; ++k) {
        const double lammps = ref.pressure[k] * volume + (k < 3 ? background : 0.0);
        dv = std::max(dv, std::fabs(mine.virial[k] - lammps) / scale);
      }
      test::report(std::string(p.pppm) + ", " + what + ": energy " + exact(mine.energy) + " vs LAMMPS " + exact(ref.elong) +
                   " (relative " + test::sci(de) + "), forces " + test::sci(df) + ", virial " + test::sci(dv) +
                   " (relative to the largest)");
      EXPECT_LT(de, tolerance) << what;
      EXPECT_LT(df, tolerance) << what;
      EXPECT_LT(dv, tolerance) << what;
    };
    compare(mp, lp, "PPPM vs LAMMPS's PPPM", 1e-8);
    // With LAMMPS's 4 pi: the spectral part (forces, the k-space sum of the energy, the virial but the
    // background's) scaled by 12.5663706 / 4 pi, the rest (self energy, background) as it is.
    {
      const double c4 = 12.5663706 / (4 * k_pi);
      const double self = -lp.g_ewald / std::sqrt(k_pi) * c.sum_sq;
      Outcome scaled = mp;
      scaled.energy = c4 * (mp.energy - self - background) + self + background;
      for (int k = 0; k < 6; ++k) scaled.virial[k] = c4 * (mp.virial[k] - (k < 3 ? background : 0.0)) + (k < 3 ? background : 0.0);
      for (Vec& v : scaled.f)
        for (double& x : v) x *= c4;
      compare(scaled, lp, "PPPM with LAMMPS's 4 pi vs LAMMPS's PPPM", 1e-12);
    }
    compare(me, le, "Ewald vs LAMMPS's Ewald", 1e-10);
    // The accuracy both promise: spotrun's PPPM against LAMMPS's Ewald, and LAMMPS's PPPM against it too.
    const double rms = rms_difference(mp.f, le.f), rms_lammps = rms_difference(lp.f, le.f);
    test::report(std::string(p.pppm) + ": RMS force difference to LAMMPS's Ewald " + test::sci(rms) +
                 " (LAMMPS's PPPM " + test::sci(rms_lammps) + "), accuracy " + test::sci(lp.accuracy));
    if (std::string(p.pppm) != "dipole-pppm") {  // a close pair: beyond the estimate (Pppm.DipoleAgainstEwald)
      EXPECT_LT(rms, lp.accuracy);
    }
  }
}
