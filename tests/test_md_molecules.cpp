// Molecules in md::MdSolver at 1-4 ranks: a Kremer-Grest melt (FENE bonds with their WCA part, WCA pairs,
// special_bonds lj 0 1 1) and a semiflexible melt (harmonic bonds and angles, lj/cut 2.5, special_bonds lj
// 0 0 0.5) from LAMMPS data files, against LAMMPS's thermo (tests/data/README.md: made by
// tools/make_lammps_reference.sh with Debian's lmp); the special-bond treatment of the pair list against a
// brute-force sum over every pair; the topology through a checkpoint written at N ranks and read at M.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "comm/transport.hpp"
#include "io/checkpoint.hpp"
#include "support/md_helpers.hpp"
#include "support/md_resume.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;

namespace {

md::BondedCoeffSpec coeff(int type, std::vector<std::pair<std::string, double>> values) {
  md::BondedCoeffSpec c;
  c.type = type;
  c.values = std::move(values);
  return c;
}

md::MdConfig kg_config() {
  md::MdConfig c;
  c.from_lattice = false;
  c.cutoff = 1.12246204830937;
  c.shift = true;
  c.skin = 0.4;
  c.dt = 0.012;
  c.bond.style = "fene";
  c.bond.coeffs = {coeff(1, {{"k", 30.0}, {"r0", 1.5}, {"epsilon", 1.0}, {"sigma", 1.0}})};
  c.special_lj = {0.0, 1.0, 1.0};
  return c;
}

md::MdConfig semiflexible_config() {
  md::MdConfig c;
  c.from_lattice = false;
  c.cutoff = 2.5;
  c.skin = 0.3;
  c.dt = 0.005;
  c.bond.style = "harmonic";
  c.bond.coeffs = {coeff(1, {{"k", 100.0}, {"r0", 1.0}})};
  c.angle.style = "harmonic";
  c.angle.coeffs = {coeff(1, {{"k", 2.0}, {"theta0", 180.0}})};
  c.special_lj = {0.0, 0.0, 0.5};
  return c;
}

io::LammpsData data_file(const char* name) { return io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/" + name); }

TEST(MdMolecules, KremerGrestAgreesWithLammps) {
  const io::LammpsData data = data_file("kg-small.data");
  const test::Csv ref = test::read_named_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-kg-small-nve.csv");
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
    auto cfg = kg_config();
    cfg.neighbor_list = list;
    std::string where;
    const double diff = test::run_against(cfg, data, ref, 200, 10, where, test::world());
    const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
    EXPECT_LE(diff, 1e-9) << kind << ": " << where;
    test::report("Kremer-Grest melt, " + kind + ", " + std::to_string(test::nranks()) +
                 " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" + where + ")");
  }
}

TEST(MdMolecules, SemiflexibleAgreesWithLammps) {
  const io::LammpsData data = data_file("semiflexible-small.data");
  const test::Csv ref = test::read_named_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-semiflexible-small-nve.csv");
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
    auto cfg = semiflexible_config();
    cfg.neighbor_list = list;
    std::string where;
    const double diff = test::run_against(cfg, data, ref, 200, 10, where, test::world());
    const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
    EXPECT_LE(diff, 1e-9) << kind << ": " << where;
    test::report("semiflexible melt, " + kind + ", " + std::to_string(test::nranks()) +
                 " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" + where + ")");
  }
}

// special_bonds against a sum over every pair of atoms: with the bonded styles at zero stiffness the forces are
// the pair forces alone, 1-2 pairs excluded (factor 0) and 1-3, 1-4 pairs scaled (0.3, 0.7). The oracle finds
// the 1-2, 1-3 and 1-4 neighbours by its own walk along the data file's bonds.
TEST(MdMolecules, SpecialBondsAgainstEveryPair) {
  const io::LammpsData data = data_file("semiflexible-small.data");
  auto cfg = semiflexible_config();
  cfg.bond.coeffs = {coeff(1, {{"k", 0.0}, {"r0", 1.0}})};
  cfg.angle.coeffs = {coeff(1, {{"k", 0.0}, {"theta0", 180.0}})};
  const std::array<double, 3> factor{0.0, 0.3, 0.7};
  cfg.special_lj = factor;
  cfg.thermo_style = {"step", "evdwl", "ebond", "eangle"};
  test::MdRun run(cfg, test::world(), &data);
  run->setup();
  const auto thermo = run->thermo();
  const auto atoms = test::gather_atoms(*run.solver, test::world());
  // Forces by id: gathered from every rank.
  std::vector<double> force(3 * data.natoms(), 0.0);
  {
    const auto& a = run->atoms();
    auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.id);
    auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.f);
    for (int i = 0; i < a.nlocal; ++i)
      for (int d = 0; d < 3; ++d) force[3 * static_cast<std::size_t>(hid(i) - 1) + d] = hf(i, d);
    test::world().sum_in_place(force.data(), static_cast<int>(force.size()));
  }
  // The oracle: the hop count along the bonds (1, 2, 3) of each pair that has one.
  const std::size_t n = data.natoms();
  std::vector<std::vector<std::size_t>> bonded(n);
  for (std::size_t b = 0; b < data.bonds.count(); ++b) {
    const auto i = static_cast<std::size_t>(data.bonds.atoms[2 * b] - 1), j = static_cast<std::size_t>(data.bonds.atoms[2 * b + 1] - 1);
    bonded[i].push_back(j);
    bonded[j].push_back(i);
  }
  std::vector<std::map<std::size_t, int>> hops(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t> shell{i};
    std::set<std::size_t> seen{i};
    for (int h = 1; h <= 3; ++h) {
      std::vector<std::size_t> next;
      for (const std::size_t a : shell)
        for (const std::size_t b : bonded[a])
          if (seen.insert(b).second) {
            hops[i][b] = h;
            next.push_back(b);
          }
      shell = next;
    }
  }
  const double L[3] = {data.hi[0] - data.lo[0], data.hi[1] - data.lo[1], data.hi[2] - data.lo[2]};
  double energy = 0;
  std::vector<double> want(3 * n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      double del[3], rsq = 0;
      for (int d = 0; d < 3; ++d) {
        del[d] = atoms[i].x[d] - atoms[j].x[d];
        del[d] -= L[d] * std::nearbyint(del[d] / L[d]);
        rsq += del[d] * del[d];
      }
      if (rsq >= 2.5 * 2.5) continue;
      const auto h = hops[i].find(j);
      const double w = h == hops[i].end() ? 1.0 : factor[static_cast<std::size_t>(h->second - 1)];
      const double sr6 = 1.0 / (rsq * rsq * rsq);
      energy += w * 4.0 * sr6 * (sr6 - 1.0);
      const double fpair = w * 24.0 * sr6 * (2.0 * sr6 - 1.0) / rsq;
      for (int d = 0; d < 3; ++d) {
        want[3 * i + d] += fpair * del[d];
        want[3 * j + d] -= fpair * del[d];
      }
    }
  double worst = 0, scale = 0;
  for (std::size_t k = 0; k < 3 * n; ++k) {
    worst = std::max(worst, std::abs(force[k] - want[k]));
    scale = std::max(scale, std::abs(want[k]));
  }
  EXPECT_LE(worst, 1e-9) << "largest force difference to the sum over every pair (forces up to " << scale << ")";
  EXPECT_NEAR(thermo[0] * static_cast<double>(n), energy, 1e-11 * std::abs(energy));
  EXPECT_EQ(thermo[1], 0.0);
  EXPECT_EQ(thermo[2], 0.0);
  test::report("special_bonds lj 0 0.3 0.7 at " + std::to_string(test::nranks()) + " ranks: largest force difference " +
               test::sci(worst) + " of " + test::sci(scale) + ", energy " + test::sci(thermo[0] * static_cast<double>(n)) +
               " vs " + test::sci(energy));
}

// Thermo rows (temp, pe, ebond, evdwl, press) every `every` steps for `steps` steps, the first row included.
std::vector<std::vector<double>> thermo_rows(md::MdSolver& s, int steps, int every) {
  std::vector<std::vector<double>> rows;
  auto row = [&] {
    s.prepare_thermo();
    rows.push_back(s.thermo());
  };
  row();
  for (int n = 1; n <= steps; ++n) {
    s.step(n % every == 0);
    if (n % every == 0) row();
  }
  return rows;
}

// A melt stopped at N ranks (a checkpoint file) goes on at M ranks: the molecules come back (bitwise the same
// thermo at M = N; to round-off at other M) and the bonded styles with them.
TEST(MdMolecules, CheckpointAtNResumesAtM) {
  const io::LammpsData data = data_file("semiflexible-small.data");
  auto cfg = semiflexible_config();
  cfg.thermo_style = {"step", "temp", "pe", "ebond", "eangle", "evdwl", "press"};
  test::MdRun run(cfg, test::world(), &data);
  run->setup();
  for (int n = 0; n < 40; ++n) run->step(false);
  const io::SolverState st = run->state();
  const auto want = thermo_rows(*run.solver, 60, 20);
  const auto checks = test::restore_at_rank_counts(cfg, st, 40, 40 * cfg.dt, [&](md::MdSolver& restored, const comm::Communicator&) {
    const auto& a = restored.bonded_setup();
    const auto& b = run->bonded_setup();
    const bool same_styles = a.bond_style == b.bond_style && a.angle_style == b.angle_style &&
                             a.bond_coeffs == b.bond_coeffs && a.angle_coeffs == b.angle_coeffs &&
                             restored.ghost_cutoff() == run->ghost_cutoff();
    const auto got = thermo_rows(restored, 60, 20);
    double worst = 0, bitwise = 1;
    for (std::size_t r = 0; r < want.size(); ++r)
      for (std::size_t k = 0; k < want[r].size(); ++k) {
        worst = std::max(worst, test::rel_diff(got.at(r).at(k), want[r][k]));
        if (got[r][k] != want[r][k]) bitwise = 0;
      }
    return std::vector<double>{worst, bitwise, same_styles ? 1.0 : 0.0};
  });
  for (const auto& c : checks) {
    ASSERT_TRUE(c.error.empty()) << c.ranks << " ranks: " << c.error;
    const int M = c.ranks;
    EXPECT_EQ(c.values.at(2), 1.0) << "read at " << M << " ranks: other bonded styles, coefficients or ghost reach";
    if (M == test::nranks()) {
      EXPECT_EQ(c.values[1], 1.0) << "written and read at " << M << " ranks: not the same thermo bit for bit";
    }
    EXPECT_LE(c.values[0], 1e-10) << "written at " << test::nranks() << " ranks, read at " << M;
    test::report("semiflexible melt written at " + std::to_string(test::nranks()) + " ranks, resumed at " +
                 std::to_string(M) + ": max relative thermo difference over 60 steps " + test::sci(c.values[0]));
  }
}

}  // namespace
