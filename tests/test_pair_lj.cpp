// The Lennard-Jones evaluator (solvers/md/pair_lj_cut.hpp): hand-computed energies and forces, the
// shift at the cutoff, and F = -dE/dr by central finite differences.
//
// Reference values: E(r) = 4 eps [(s/r)^12 - (s/r)^6], fpair = F/r = (48 eps (s/r)^12 - 24 eps (s/r)^6)/r^2,
// evaluated in 50-digit decimal arithmetic from the exact rationals (r = 1, 3/2, 12/5, s = 13/10) and
// from r^6 = 2 for r = 2^(1/6).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "solvers/md/pair.hpp"
#include "solvers/md/pair_lj_cut.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using spotrun::md::PairLJCut;

namespace {

struct Ref {
  double rsq, energy, fpair;
};

void expect_close(double got, double want, double rel, double abs_floor, const char* what, double rsq) {
  const double tol = std::max(rel * std::abs(want), abs_floor);
  EXPECT_NEAR(got, want, tol) << what << " at r^2 = " << rsq;
}

void check_refs(const PairLJCut& p, const std::vector<Ref>& refs) {
  for (const auto& r : refs) {
    double fpair = -1, e = -1, fonly = -1;
    p.compute(r.rsq, fpair, e);
    p.compute_force(r.rsq, fonly);
    expect_close(e, r.energy, 1e-14, 1e-14, "energy", r.rsq);
    expect_close(fpair, r.fpair, 1e-14, 1e-13, "fpair", r.rsq);
    EXPECT_EQ(fonly, fpair) << "compute_force() and compute() disagree at r^2 = " << r.rsq;
  }
}

const double k_two_third = std::cbrt(2.0);  // r^2 at r = 2^(1/6)

}  // namespace

TEST(PairLJCut, HandComputedEpsilon1Sigma1) {
  PairLJCut p(1.0, 1.0, 2.5, false);
  check_refs(p, {
                    {1.0, 0.0, 24.0},                                            // r = 1
                    {k_two_third, -1.0, 0.0},                                    // r = 2^(1/6): minimum
                    {2.25, -0.32033659427857466774, -0.77201922069743709399},   // r = 3/2: -170240/531441
                    {5.76, -0.020821595559335904819, -0.021575070391820629323}, // r = 12/5
                });
}

TEST(PairLJCut, HandComputedEpsilon2Sigma13) {
  PairLJCut p(2.0, 1.3, 3.0, false);
  check_refs(p, {
                    {1.0, 147.770208979848, 2004.929339758176},  // 8 (1.3^12 - 1.3^6), 96 1.3^12 - 48 1.3^6
                    {k_two_third, 27.288934244962, 351.85587777625708761},
                    {2.25, -1.9534908905006248897, -1.3785587941469084194},
                    {5.76, -0.19695748643911343027, -0.19984781446655557889},
                    {k_two_third * 1.69, -2.0, 0.0},  // r = 2^(1/6) sigma: E = -eps, F = 0
                });
}

TEST(PairLJCut, ShiftMakesTheEnergyZeroAtTheCutoff) {
  struct Case {
    double eps, sigma, rc, e_rc;  // e_rc: the unshifted energy at the cutoff
  };
  for (const Case c : {Case{1.0, 1.0, 2.5, -0.016316891136}, Case{2.0, 1.3, 3.0, -0.052618381733852209370}}) {
    PairLJCut shifted(c.eps, c.sigma, c.rc, true), plain(c.eps, c.sigma, c.rc, false);
    EXPECT_EQ(plain.offset, 0.0);
    EXPECT_NEAR(shifted.offset, c.e_rc, 1e-15 * std::abs(c.e_rc)) << "eps " << c.eps << " sigma " << c.sigma;
    EXPECT_DOUBLE_EQ(shifted.cutsq, c.rc * c.rc);
    double f = 0, e = 1;
    shifted.compute(c.rc * c.rc, f, e);
    EXPECT_NEAR(e, 0.0, 1e-15) << "shifted energy at the cutoff";
    shifted.compute(std::nextafter(c.rc * c.rc, 0.0), f, e);
    EXPECT_NEAR(e, 0.0, 1e-14) << "shifted energy just inside the cutoff";
    plain.compute(c.rc * c.rc, f, e);
    EXPECT_NEAR(e, c.e_rc, 1e-15) << "unshifted energy at the cutoff";
    // The shift changes the energy by a constant and leaves the force alone.
    for (double rsq : {1.0, 1.3, 2.25, 4.0, 5.76}) {
      double fs, es, fp, ep;
      shifted.compute(rsq, fs, es);
      plain.compute(rsq, fp, ep);
      EXPECT_NEAR(es, ep - c.e_rc, 1e-14 * std::max(1.0, std::abs(ep)));
      EXPECT_EQ(fs, fp);
    }
  }
}

// fpair * r == -dE/dr, by central differences in r (step h = 1e-5 r: truncation ~1e-10, rounding ~1e-11).
TEST(PairLJCut, ForceIsMinusTheEnergyDerivative) {
  struct Params {
    double eps, sigma, rc;
    bool shift;
  };
  double worst = 0;
  for (const Params prm : {Params{1.0, 1.0, 2.5, false}, Params{1.0, 1.0, 2.5, true}, Params{2.0, 1.3, 3.0, false},
                           Params{0.5, 0.8, 2.0, true}}) {
    PairLJCut p(prm.eps, prm.sigma, prm.rc, prm.shift);
    for (double r = 0.85 * prm.sigma; r < prm.rc * (1 - 1e-4); r += 0.0137 * prm.sigma) {
      const double h = 1e-5 * r;
      double f, e, fp, ep, fm, em;
      p.compute(r * r, f, e);
      p.compute((r + h) * (r + h), fp, ep);
      p.compute((r - h) * (r - h), fm, em);
      const double dEdr = (ep - em) / (2 * h);
      const double force = f * r;
      // Near the minimum F -> 0; measure relative to the force scale eps/sigma there.
      const double scale = std::max(std::abs(force), prm.eps / prm.sigma);
      const double rel = std::abs(force + dEdr) / scale;
      worst = std::max(worst, rel);
      EXPECT_LT(rel, 1e-7) << "eps " << prm.eps << " sigma " << prm.sigma << " r " << r << ": F = " << force
                           << ", -dE/dr = " << -dEdr;
    }
  }
  spotrun::test::report("LJ force vs -dE/dr (central differences): max relative difference " + spotrun::test::sci(worst));
}

TEST(PairLJCut, RegistryBuildsLjCutAndRejectsUnknownStyles) {
  spotrun::md::MdConfig c;
  c.pair_defaults = {{"epsilon", 2.0}, {"sigma", 1.3}};
  c.cutoff = 3.0;
  c.shift = true;
  // Two types: the first's own pair from [md.pair], the second's given, the unlike pair mixed (geometric).
  c.pair_coeffs = {{"2", "2", {{"epsilon", 0.5}, {"sigma", 0.88}}, 2.2}};
  const auto coeffs = spotrun::md::resolve_pair_coeffs(c, {"1", "2"});
  auto any = spotrun::md::make_pair(c, coeffs);
  const auto table = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                                         std::get<spotrun::md::PairTable<PairLJCut>>(any).table);
  const auto& p = table(1, 1);
  EXPECT_DOUBLE_EQ(p.cutsq, 9.0);
  EXPECT_NEAR(p.offset, -0.052618381733852209370, 1e-15);
  EXPECT_DOUBLE_EQ(table(2, 2).cutsq, 2.2 * 2.2);
  EXPECT_DOUBLE_EQ(table(1, 2).cutsq, 3.0 * 2.2);  // (sqrt(3.0 * 2.2))^2
  EXPECT_EQ(table(1, 2).lj1, table(2, 1).lj1);
  const PairLJCut mixed(std::sqrt(1.0), std::sqrt(1.3 * 0.88), std::sqrt(3.0 * 2.2), true);
  EXPECT_EQ(table(1, 2).lj3, mixed.lj3);
  c.pair_style = "lj/cut/coul";
  try {
    spotrun::md::make_pair(c, coeffs);
    ADD_FAILURE() << "unknown pair style accepted";
  } catch (const spotrun::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lj/cut/coul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"lj/cut\""), std::string::npos) << e.what();
  }
}
