// Molecules in md::MdSolver at 1-4 ranks: a Kremer-Grest melt (FENE bonds with their WCA part, WCA pairs,
// special_bonds lj 0 1 1) and a semiflexible melt (harmonic bonds and angles, lj/cut 2.5, special_bonds lj
// 0 0 0.5) from LAMMPS data files, against LAMMPS's thermo (tests/data/README.md: made by
// tools/make_lammps_reference.sh with Debian's lmp); the special-bond treatment of the pair list against a
// brute-force sum over every pair; the topology through a checkpoint written at N ranks and read at M.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "io/checkpoint.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;

namespace {

// A LAMMPS thermo CSV: its header and rows.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
};
Csv read_named_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  Csv c;
  std::string line, cell;
  std::getline(in, line);
  for (std::istringstream s(line); std::getline(s, cell, ',');) c.header.push_back(cell);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<double> r;
    for (std::istringstream s(line); std::getline(s, cell, ',');) r.push_back(std::stod(cell));
    c.rows.push_back(r);
  }
  return c;
}

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

// The thermo of `steps` steps (every `every`) in the CSV's columns, against the CSV: the largest relative
// difference and where.
double run_against(md::MdConfig cfg, const io::LammpsData& data, const Csv& ref, int steps, int every, std::string& where) {
  cfg.thermo_style = ref.header;
  test::MdRun run(cfg, test::world(), &data);
  run->setup();
  std::vector<std::vector<double>> rows;
  auto row = [&] {
    run->prepare_thermo();
    std::vector<double> r{static_cast<double>(run->step_index())};
    for (const double v : run->thermo()) r.push_back(v);
    rows.push_back(r);
  };
  row();
  for (int n = 1; n <= steps; ++n) {
    run->step(n % every == 0);
    if (n % every == 0) row();
  }
  EXPECT_EQ(rows.size(), ref.rows.size());
  double worst = 0;
  for (std::size_t r = 0; r < std::min(rows.size(), ref.rows.size()); ++r)
    for (std::size_t c = 0; c < ref.header.size(); ++c) {
      const double d = test::rel_diff(rows[r][c], ref.rows[r][c]);
      if (d > worst) {
        worst = d;
        std::ostringstream s;
        s.precision(17);
        s << "step " << rows[r][0] << " " << ref.header[c] << ": " << rows[r][c] << " vs LAMMPS " << ref.rows[r][c];
        where = s.str();
      }
    }
  return worst;
}

io::LammpsData data_file(const char* name) { return io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/" + name); }

TEST(MdMolecules, KremerGrestAgreesWithLammps) {
  const io::LammpsData data = data_file("kg-small.data");
  const Csv ref = read_named_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-kg-small-nve.csv");
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
    auto cfg = kg_config();
    cfg.neighbor_list = list;
    std::string where;
    const double diff = run_against(cfg, data, ref, 200, 10, where);
    const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
    EXPECT_LE(diff, 1e-9) << kind << ": " << where;
    test::report("Kremer-Grest melt, " + kind + ", " + std::to_string(test::nranks()) +
                 " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" + where + ")");
  }
}

TEST(MdMolecules, SemiflexibleAgreesWithLammps) {
  const io::LammpsData data = data_file("semiflexible-small.data");
  const Csv ref = read_named_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-semiflexible-small-nve.csv");
  for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::Full}) {
    auto cfg = semiflexible_config();
    cfg.neighbor_list = list;
    std::string where;
    const double diff = run_against(cfg, data, ref, 200, 10, where);
    const std::string kind = list == md::NeighborListKind::Full ? "full list" : "half list";
    EXPECT_LE(diff, 1e-9) << kind << ": " << where;
    test::report("semiflexible melt, " + kind + ", " + std::to_string(test::nranks()) +
                 " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" + where + ")");
  }
}

}  // namespace
