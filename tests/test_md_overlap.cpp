// md.halo_overlap (docs/md.md#halo-overlap) at 1-4 ranks: the pair forces of interior rows computed while
// the ghost positions move, and while the forces on ghosts go back to their owners, give the same run bit
// for bit as the halo exchanged first: every thermo row and every atom's position and velocity, for every
// list kind (half with and without Newton across ghosts, full), in double and mixed precision, one type and
// the Kob-Andersen mixture. Where a ghost comes from another rank, rows are in fact computed in between.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;
using test::MdRun;
using test::ThermoRow;
using test::list_name;

namespace {

int differing_rows(const std::vector<ThermoRow>& a, const std::vector<ThermoRow>& b) {
  if (a.size() != b.size()) return static_cast<int>(a.size() + b.size());
  int n = 0;
  for (std::size_t r = 0; r < a.size(); ++r)
    for (int c = 0; c < 7; ++c) n += a[r][c] != b[r][c];
  return n;
}

int differing_atoms(const std::vector<test::AtomState>& a, const std::vector<test::AtomState>& b) {
  if (a.size() != b.size()) return static_cast<int>(a.size() + b.size());
  int n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i].x != b[i].x || a[i].v != b[i].v || a[i].image != b[i].image;
  return n;
}

struct Outcome {
  std::vector<ThermoRow> rows;
  std::vector<test::AtomState> atoms;
  long long overlapped = 0;  // rows computed while the halo moved, summed over ranks
};

Outcome run(md::MdConfig cfg, bool overlap, const io::LammpsData* data) {
  cfg.halo_overlap = overlap;
  MdRun r(cfg, test::world(), data);
  Outcome o;
  o.rows = test::run_thermo(*r.solver, 150, 10);
  o.atoms = test::gather_atoms(*r.solver, test::world());
  const auto rows = r.solver->overlap_rows();
  o.overlapped = test::world().sum(static_cast<std::int64_t>(rows[0] + rows[1]));
  return o;
}

}  // namespace

TEST(MdOverlap, SameRunBitForBitWithTheHaloExchangedFirst) {
  const auto ka_data = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-small.data");
  for (const bool ka : {false, true})
    for (const auto list : {md::NeighborListKind::Half, md::NeighborListKind::HalfNoNewton, md::NeighborListKind::Full})
      for (const auto precision : {md::Precision::Double, md::Precision::Mixed}) {
        auto cfg = ka ? test::ka_config(true) : test::lattice_config({8, 8, 8}, 1.44);
        cfg.neighbor_list = list;
        cfg.precision = precision;
        const std::string what = std::string(ka ? "Kob-Andersen" : "lj liquid") + ", " + list_name(list) + ", " +
                                 (precision == md::Precision::Mixed ? "mixed" : "double");
        SCOPED_TRACE(what);
        const io::LammpsData* data = ka ? &ka_data : nullptr;
        const Outcome on = run(cfg, true, data), off = run(cfg, false, data);
        EXPECT_EQ(differing_rows(on.rows, off.rows), 0) << "thermo differs with the halo overlapped";
        EXPECT_EQ(differing_atoms(on.atoms, off.atoms), 0) << "atoms differ with the halo overlapped";
        EXPECT_EQ(on.overlapped, off.overlapped) << "the row order depends on md.halo_overlap";
        // One rank: every ghost is a copy of this rank's own atoms, nothing to wait for, the sort's order.
        // The liquid's sub-boxes are thick enough for interior atoms at every rank count; the mixture's 864
        // atoms are not (every atom lies within the cutoff of some face at two ranks and more).
        if (test::nranks() == 1) {
          EXPECT_EQ(on.overlapped, 0);
        } else if (!ka) {
          EXPECT_GT(on.overlapped, 0) << "no row was computed while the halo moved";
        }
        // The run moved: not two runs of nothing.
        EXPECT_NE(on.rows.front()[3], on.rows.back()[3]);
      }
}
