// The bonded styles (solvers/md/bonded/styles.hpp, geometry.hpp): energies against closed forms at known
// geometries, forces against central differences of the energy (F = -dU/dx for every coordinate of every
// atom) on random geometries, zero net force and torque, FENE's stretched and broken states, and the same
// numbers from a Kokkos kernel over many interactions as from the host (the threaded check runs this on
// several threads, the device build on the GPU).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <array>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "solvers/md/bonded/styles.hpp"
#include "solvers/md/types.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using namespace spotrun::md::bonded;

namespace {

constexpr double k_pi = 3.14159265358979323846;
using Atoms = std::vector<std::array<double, 3>>;

// Energy and forces of an angle (3 atoms) or a dihedral (4 atoms) of one style.
using Evaluate = std::function<double(const Atoms&, Atoms&)>;

template <class Style>
Evaluate angle_of(const Style& style) {
  return [style](const Atoms& x, Atoms& f) {
    double del1[3], del2[3], f1[3], f3[3], dedc, e;
    for (int d = 0; d < 3; ++d) {
      del1[d] = x[0][d] - x[1][d];
      del2[d] = x[2][d] - x[1][d];
    }
    const AngleGeometry g = angle_geometry(del1, del2);
    style.compute(g, dedc, e);
    angle_forces(g, del1, del2, dedc, f1, f3);
    f.assign(3, {0, 0, 0});
    for (int d = 0; d < 3; ++d) {
      f[0][d] = f1[d];
      f[2][d] = f3[d];
      f[1][d] = -(f1[d] + f3[d]);
    }
    return e;
  };
}

template <class Style>
Evaluate dihedral_of(const Style& style) {
  return [style](const Atoms& x, Atoms& f) {
    double b1[3], b2[3], b3[3], dedphi, e;
    for (int d = 0; d < 3; ++d) {
      b1[d] = x[1][d] - x[0][d];
      b2[d] = x[2][d] - x[1][d];
      b3[d] = x[3][d] - x[2][d];
    }
    const DihedralGeometry g = dihedral_geometry(b1, b2, b3);
    style.compute(g.phi, dedphi, e);
    f.assign(4, {0, 0, 0});
    dihedral_forces(g, b1, b2, b3, dedphi, f[0].data(), f[1].data(), f[2].data(), f[3].data());
    return e;
  };
}

// The largest difference between a force component and -dE/dx by central differences (step h), relative
// to max(1, |F|); and the net force and torque.
struct Check {
  double fd = 0, net = 0, torque = 0;
};
Check check_forces(const Evaluate& eval, const Atoms& x0, double h = 1e-6) {
  Atoms f;
  eval(x0, f);
  Check c;
  double net[3] = {0, 0, 0}, tq[3] = {0, 0, 0};
  for (std::size_t a = 0; a < x0.size(); ++a)
    for (int d = 0; d < 3; ++d) {
      Atoms xp = x0, xm = x0, scratch;
      xp[a][d] += h;
      xm[a][d] -= h;
      const double numeric = -(eval(xp, scratch) - eval(xm, scratch)) / (2 * h);
      c.fd = std::max(c.fd, std::abs(f[a][d] - numeric) / std::max(1.0, std::abs(f[a][d])));
      net[d] += f[a][d];
    }
  for (std::size_t a = 0; a < x0.size(); ++a) {
    const auto& r = x0[a];
    tq[0] += r[1] * f[a][2] - r[2] * f[a][1];
    tq[1] += r[2] * f[a][0] - r[0] * f[a][2];
    tq[2] += r[0] * f[a][1] - r[1] * f[a][0];
  }
  c.net = std::sqrt(net[0] * net[0] + net[1] * net[1] + net[2] * net[2]);
  c.torque = std::sqrt(tq[0] * tq[0] + tq[1] * tq[1] + tq[2] * tq[2]);
  return c;
}

// Random chains of n atoms with bond lengths in [0.8, 1.3] and angles away from 0 and 180 degrees.
std::vector<Atoms> random_chains(int n, int count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1), len(0.8, 1.3);
  std::vector<Atoms> out;
  while (static_cast<int>(out.size()) < count) {
    Atoms x{{u(rng), u(rng), u(rng)}};
    bool ok = true;
    while (static_cast<int>(x.size()) < n) {
      double dir[3] = {u(rng), u(rng), u(rng)};
      const double norm = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
      if (norm < 0.2) continue;
      const double l = len(rng);
      std::array<double, 3> next;
      for (int d = 0; d < 3; ++d) next[d] = x.back()[d] + l * dir[d] / norm;
      if (x.size() >= 2) {  // keep the angle between 20 and 160 degrees
        double a[3], b[3];
        for (int d = 0; d < 3; ++d) {
          a[d] = x[x.size() - 2][d] - x.back()[d];
          b[d] = next[d] - x.back()[d];
        }
        const double c = dot3(a, b) / std::sqrt(dot3(a, a) * dot3(b, b));
        if (std::abs(c) > std::cos(20 * k_pi / 180)) ok = false;
      }
      x.push_back(next);
    }
    if (ok) out.push_back(x);
  }
  return out;
}

// Each interaction's forces and energy in a kernel (a free function: a device lambda may not live in a
// test's private body).
void kernel_dihedrals_and_angles(const Kokkos::View<double* [4][3], spotrun::md::MemSpace>& x,
                                 const Kokkos::View<double* [4][3], spotrun::md::MemSpace>& f,
                                 const Kokkos::View<double*, spotrun::md::MemSpace>& e, const DihedralOpls& opls,
                                 const AngleHarmonic& angle) {
  const int n = static_cast<int>(x.extent(0));
  Kokkos::parallel_for(
      "test::bonded", Kokkos::RangePolicy<spotrun::md::ExecSpace>(0, n), KOKKOS_LAMBDA(const int i) {
        double b1[3], b2[3], b3[3], f1[3], f2[3], f3[3], f4[3], dedphi, ed, dedc, ea, a1[3], a3[3];
        for (int d = 0; d < 3; ++d) {
          b1[d] = x(i, 1, d) - x(i, 0, d);
          b2[d] = x(i, 2, d) - x(i, 1, d);
          b3[d] = x(i, 3, d) - x(i, 2, d);
        }
        const DihedralGeometry g = dihedral_geometry(b1, b2, b3);
        opls.compute(g.phi, dedphi, ed);
        dihedral_forces(g, b1, b2, b3, dedphi, f1, f2, f3, f4);
        double del1[3], del2[3];
        for (int d = 0; d < 3; ++d) {
          del1[d] = -b1[d];
          del2[d] = b2[d];
        }
        const AngleGeometry ga = angle_geometry(del1, del2);
        angle.compute(ga, dedc, ea);
        angle_forces(ga, del1, del2, dedc, a1, a3);
        for (int d = 0; d < 3; ++d) {
          f(i, 0, d) = f1[d] + a1[d];
          f(i, 1, d) = f2[d] - a1[d] - a3[d];
          f(i, 2, d) = f3[d] + a3[d];
          f(i, 3, d) = f4[d];
        }
        e(i) = ed + ea;
      });
}

}  // namespace

TEST(BondedStyles, BondsFollowTheirClosedForms) {
  const BondHarmonic h{30.0, 1.2};
  const BondFene fene{30.0, 1.5, 1.0, 1.0};
  for (const double r : {0.85, 0.97, 1.1, 1.2, 1.35}) {
    double f, e;
    h.compute(r * r, f, e);
    EXPECT_NEAR(e, 30.0 * (r - 1.2) * (r - 1.2), 1e-13);
    EXPECT_NEAR(f * r, -60.0 * (r - 1.2), 1e-12);
    EXPECT_EQ(fene.compute(r * r, f, e), FeneState::Fine);
    const double wca = r < std::pow(2.0, 1.0 / 6) ? 4 * (std::pow(r, -12) - std::pow(r, -6)) + 1 : 0.0;
    EXPECT_NEAR(e, -0.5 * 30.0 * 2.25 * std::log(1 - r * r / 2.25) + wca, 1e-12) << "r " << r;
    // fbond r = -dE/dr by central differences.
    for (const auto* style : {static_cast<const void*>(&h), static_cast<const void*>(&fene)}) {
      auto energy = [&](double rr) {
        double ff, ee;
        if (style == &h) h.compute(rr * rr, ff, ee);
        else fene.compute(rr * rr, ff, ee);
        return ee;
      };
      double fb, eb;
      if (style == &h) h.compute(r * r, fb, eb);
      else fene.compute(r * r, fb, eb);
      const double dh = 1e-6;
      EXPECT_NEAR(fb * r, -(energy(r + dh) - energy(r - dh)) / (2 * dh), 1e-6 * std::max(1.0, std::abs(fb * r)));
    }
  }
  // The WCA part is continuous at 2^(1/6) sigma; beyond 0.95 R0 the force is capped as LAMMPS does; at R0
  // the bond is broken.
  double f1, e1, f2, e2;
  const double rc = std::pow(2.0, 1.0 / 6);
  fene.compute(rc * rc * (1 - 1e-12), f1, e1);
  fene.compute(rc * rc * (1 + 1e-12), f2, e2);
  EXPECT_NEAR(e1, e2, 1e-9);
  EXPECT_EQ(fene.compute(1.46 * 1.46, f1, e1), FeneState::Stretched);
  EXPECT_NEAR(f1, -30.0 / 0.1, 1e-12);
  EXPECT_NEAR(e1, -0.5 * 30 * 2.25 * std::log(0.1), 1e-12);
  EXPECT_EQ(fene.compute(1.5 * 1.5, f1, e1), FeneState::Broken);
  EXPECT_EQ(fene.compute(2.0 * 2.0, f1, e1), FeneState::Broken);
}

TEST(BondedStyles, AnglesAndDihedralsAtKnownGeometries) {
  const double deg = k_pi / 180;
  // A right angle: harmonic with theta0 = 109.5 degrees, cosine.
  Atoms right{{1, 0, 0}, {0, 0, 0}, {0, 2, 0}}, f;
  EXPECT_NEAR(angle_of(AngleHarmonic{5.0, 109.5 * deg})(right, f), 5.0 * std::pow((90 - 109.5) * deg, 2), 1e-14);
  EXPECT_NEAR(angle_of(AngleCosine{2.0})(right, f), 2.0, 1e-14);
  // Trans (180), cis (0) and gauche (60) dihedrals.
  const Atoms trans{{0, 1, 0}, {0, 0, 0}, {1, 0, 0}, {1, -1, 0}}, cis{{0, 1, 0}, {0, 0, 0}, {1, 0, 0}, {1, 1, 0}};
  const Atoms gauche{{0, 1, 0}, {0, 0, 0}, {1, 0, 0}, {1, std::cos(60 * deg), std::sin(60 * deg)}};
  const DihedralOpls opls{1.3, -0.05, 0.2, 0.0};
  EXPECT_NEAR(dihedral_of(opls)(trans, f), 0.5 * (1.3 * 0 - 0.05 * 0 + 0.2 * 0), 1e-14);
  EXPECT_NEAR(dihedral_of(opls)(cis, f), 0.5 * (1.3 * 2 + 0.2 * 2), 1e-14);
  const double c60 = std::cos(60 * deg), c120 = std::cos(120 * deg), c180 = -1;
  EXPECT_NEAR(dihedral_of(opls)(gauche, f), 0.5 * (1.3 * (1 + c60) - 0.05 * (1 - c120) + 0.2 * (1 + c180)), 1e-14);
  EXPECT_NEAR(dihedral_of(DihedralHarmonic{2.0, -1, 3})(gauche, f), 2.0 * (1 - std::cos(3 * 60 * deg)), 1e-14);
  EXPECT_NEAR(dihedral_of(DihedralHarmonic{2.0, 1, 1})(trans, f), 0.0, 1e-14);
  // The sign of phi: the mirror image of gauche is -60 degrees, same energy.
  double b1[3] = {0, -1, 0}, b2[3] = {1, 0, 0}, b3[3] = {0, c60, std::sin(60 * deg)}, b3m[3] = {0, c60, -std::sin(60 * deg)};
  EXPECT_NEAR(dihedral_geometry(b1, b2, b3).phi, 60 * deg, 1e-14);
  EXPECT_NEAR(dihedral_geometry(b1, b2, b3m).phi, -60 * deg, 1e-14);
}

TEST(BondedStyles, ForcesAreMinusTheEnergyGradient) {
  const double deg = k_pi / 180;
  const std::vector<std::pair<const char*, Evaluate>> angles{{"angle harmonic", angle_of(AngleHarmonic{5.0, 109.5 * deg})},
                                                             {"angle cosine", angle_of(AngleCosine{2.0})}};
  const std::vector<std::pair<const char*, Evaluate>> dihedrals{
      {"dihedral harmonic", dihedral_of(DihedralHarmonic{2.0, -1, 3})},
      {"dihedral harmonic n=0", dihedral_of(DihedralHarmonic{1.5, 1, 0})},
      {"dihedral opls", dihedral_of(DihedralOpls{1.3, -0.05, 0.2, 0.7})}};
  // Each style on 200 random chains of its atoms: the worst difference, net force and torque.
  auto check_styles = [](const std::vector<std::pair<const char*, Evaluate>>& styles, int atoms, unsigned seed,
                         const char* what) {
    for (const auto& [name, eval] : styles) {
      Check worst;
      for (const Atoms& x : random_chains(atoms, 200, seed)) {
        const Check c = check_forces(eval, x);
        worst = {std::max(worst.fd, c.fd), std::max(worst.net, c.net), std::max(worst.torque, c.torque)};
      }
      EXPECT_LT(worst.fd, 1e-6) << name;
      EXPECT_LT(worst.net, 1e-12) << name;
      EXPECT_LT(worst.torque, 1e-11) << name;
      spotrun::test::report(std::string(name) + ": 200 random " + what + ", max |F + dE/dx| " +
                            spotrun::test::sci(worst.fd) + ", net force " + spotrun::test::sci(worst.net) +
                            ", torque " + spotrun::test::sci(worst.torque));
    }
  };
  check_styles(angles, 3, 7, "angles");
  check_styles(dihedrals, 4, 11, "dihedrals");
}

// The evaluators in a Kokkos kernel (the execution space of the build: threads, or the GPU) give the
// host's numbers.
TEST(BondedStyles, KernelGivesTheHostsNumbers) {
  const auto chains = random_chains(4, 4000, 23);
  const int n = static_cast<int>(chains.size());
  Kokkos::View<double* [4][3], spotrun::md::MemSpace> x("x", n), f("f", n);
  Kokkos::View<double*, spotrun::md::MemSpace> e("e", n);
  auto hx = Kokkos::create_mirror_view(x);
  for (int i = 0; i < n; ++i)
    for (int a = 0; a < 4; ++a)
      for (int d = 0; d < 3; ++d) hx(i, a, d) = chains[i][a][d];
  Kokkos::deep_copy(x, hx);
  const DihedralOpls opls{1.3, -0.05, 0.2, 0.7};
  const AngleHarmonic angle{5.0, 1.9};
  kernel_dihedrals_and_angles(x, f, e, opls, angle);
  auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f);
  auto he = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), e);
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    Atoms fd, fa;
    const double ed = dihedral_of(opls)(chains[i], fd);
    const double ea = angle_of(angle)({chains[i][0], chains[i][1], chains[i][2]}, fa);
    worst = std::max(worst, std::abs(he(i) - (ed + ea)) / std::max(1.0, std::abs(ed + ea)));
    for (int a = 0; a < 4; ++a)
      for (int d = 0; d < 3; ++d) {
        const double host = fd[a][d] + (a < 3 ? fa[a][d] : 0.0);
        worst = std::max(worst, std::abs(hf(i, a, d) - host) / std::max(1.0, std::abs(host)));
      }
  }
  EXPECT_LT(worst, 1e-12);  // bitwise on CPUs; a GPU may contract into fused multiply-adds
  spotrun::test::report(std::to_string(n) + " dihedrals and angles in a kernel: max relative difference to the host " +
                        spotrun::test::sci(worst));
}
