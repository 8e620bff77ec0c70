// NVE energy conservation of a charged fluid over 10^4 steps, against LAMMPS with the same settings: the charged
// Kob-Andersen mixture (tests/data/ka-charged-small.data, 864 atoms, charges +-0.4) under lj/cut/coul/long (LJ
// shifted to zero at its cutoffs, Coulomb real-space cutoff 3.0) + PPPM at accuracy 1e-4, dt 0.005, 50 tau.
// LAMMPS's total energy every 100 steps is tests/data/lammps-ka-charged-small-drift.csv (tools/
// make_lammps_reference.sh section 10). Both series are measured alike: the drift (slope of a least-squares
// line through the total energy per atom against time) and the fluctuation (RMS about that line, and the largest
// excursion from the start); spotrun's must be no worse than LAMMPS's (within the scatter of such estimates).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2);  // the suite runs it at 2 (tests/CMakeLists.txt); 1 lists it (the GPU check)

using namespace spotrun;

namespace {

struct Conservation {
  double slope = 0;     // energy per atom per tau
  double rms = 0;       // about the line
  double excursion = 0; // largest |E(t) - E(0)|
  double slope_error = 0;  // the standard error of the slope from the scatter about the line
};

Conservation measure(const std::vector<double>& t, const std::vector<double>& e) {
  const double n = static_cast<double>(t.size());
  double tm = 0, em = 0;
  for (std::size_t k = 0; k < t.size(); ++k) tm += t[k] / n, em += e[k] / n;
  double stt = 0, ste = 0;
  for (std::size_t k = 0; k < t.size(); ++k) stt += (t[k] - tm) * (t[k] - tm), ste += (t[k] - tm) * (e[k] - em);
  Conservation c;
  c.slope = ste / stt;
  double ss = 0;
  for (std::size_t k = 0; k < t.size(); ++k) {
    const double r = e[k] - (em + c.slope * (t[k] - tm));
    ss += r * r;
    c.excursion = std::max(c.excursion, std::abs(e[k] - e[0]));
  }
  c.rms = std::sqrt(ss / n);
  c.slope_error = std::sqrt(ss / (n - 2) / stt);
  return c;
}

TEST(MdDrift, ChargedFluidConservesEnergyAsLammps) {
  const auto data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-charged-small.data");
  const test::Csv ref = test::read_named_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-ka-charged-small-drift.csv");
  md::MdConfig cfg = test::ka_config(true);
  cfg.pair_style = "lj/cut/coul/long";
  cfg.coulomb_cutoff = 3.0;
  cfg.shift = true;
  cfg.kspace.style = md::KspaceStyle::Pppm;
  cfg.kspace.accuracy = 1e-4;
  cfg.thermo_style = {"step", "time", "etotal"};
  test::MdRun run(cfg, test::world(), &data);
  run->setup();
  std::vector<double> t, e;
  auto row = [&] {
    run->prepare_thermo();
    const auto th = run->thermo();
    t.push_back(th.at(0));
    e.push_back(th.at(1));
  };
  row();
  for (int n = 1; n <= 10000; ++n) {
    run->step(n % 100 == 0);
    if (n % 100 == 0) row();
  }
  ASSERT_EQ(ref.rows.size(), t.size());
  auto column = [&](const char* name) {
    const auto it = std::find(ref.header.begin(), ref.header.end(), name);
    EXPECT_NE(it, ref.header.end()) << name;
    return static_cast<std::size_t>(it - ref.header.begin());
  };
  const std::size_t ct = column("time"), ce = column("etotal");
  std::vector<double> lt, le;
  for (const auto& r : ref.rows) lt.push_back(r.at(ct)), le.push_back(r.at(ce));
  // Both start from the same state: the same energy to the k-space accuracy.
  EXPECT_NEAR(e[0], le[0], 1e-4 * std::abs(le[0]));
  const Conservation s = measure(t, e), l = measure(lt, le);
  test::report("charged fluid, 10^4 steps NVE at 2 ranks: spotrun drift " + test::sci(s.slope) + " +- " +
               test::sci(s.slope_error) + " per atom per tau, RMS " + test::sci(s.rms) + ", excursion " +
               test::sci(s.excursion) + "; LAMMPS " + test::sci(l.slope) + " +- " + test::sci(l.slope_error) + ", RMS " +
               test::sci(l.rms) + ", excursion " + test::sci(l.excursion));
  // No worse: the drift within LAMMPS's plus twice the combined standard error of the two estimates, the
  // fluctuations within 1.5x LAMMPS's.
  EXPECT_LE(std::abs(s.slope), std::abs(l.slope) + 2.0 * std::hypot(s.slope_error, l.slope_error));
  EXPECT_LE(s.rms, 1.5 * l.rms);
  EXPECT_LE(s.excursion, 1.5 * l.excursion);
}

}  // namespace
