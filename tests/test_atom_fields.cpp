// The per-atom field table (solvers/md/atom_fields.hpp) drives what an atom carries: the checkpoint's datasets
// and the export read it; a field the generic code knows nothing about moves with its particle through
// particles::Distributor; the fields of the table migrate with their atoms across ranks and come back from a
// checkpoint written at N ranks and read at M. The oracle throughout: the global id of the particle.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/process_grid.hpp"
#include "io/checkpoint.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/md/atom_fields.hpp"
#include "solvers/particles/distributor.hpp"
#include "solvers/registry.hpp"
#include "support/md_helpers.hpp"
#include "support/md_resume.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

namespace spotrun {
namespace {

using test::world;

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// ---- the table and what reads it -----------------------------------------------------------------------------

TEST(AtomFieldTable, CheckpointDatasetsAreTheTable) {
  // The file layout of every checkpoint of single atoms: these datasets, in this order (the checkpoints written
  // before molecules lack /md/molecule, which is optional); the list fields (bond, angle, ...) follow where the
  // system has them.
  const std::vector<std::string> historical = {"/md/id", "/md/x", "/md/v", "/md/f", "/md/image", "/md/x_build", "/md/type",
                                               "/md/molecule", "/md/q"};
  test::MdRun run(test::lattice_config({6, 6, 6}, 1.0), world());
  const auto layout = run->state_layout();
  std::vector<std::string> names, from_table;
  for (const auto& a : layout) names.push_back(a.name);
  for (const auto& f : md::k_atom_fields)
    if (f.has(md::k_checkpointed) && !f.is_list()) from_table.push_back(std::string("/md/") + f.name);
  EXPECT_EQ(names, historical);
  EXPECT_EQ(names, from_table);
  int slots = 0;
  for (std::size_t k = 0; k < layout.size(); ++k) {
    const md::AtomField& f = md::k_atom_fields[k];
    EXPECT_EQ(layout[k].is_integer, f.is_integer()) << layout[k].name;
    EXPECT_EQ(layout[k].row_size(), static_cast<std::uint64_t>(f.width)) << layout[k].name;
    EXPECT_EQ(layout[k].optional, f.has(md::k_optional)) << layout[k].name;
    slots += f.width;
  }
  EXPECT_EQ(slots, md::record_slots());
  EXPECT_EQ(slots, run->atoms().record_layout().total);
  // What state() writes per atom is what the registration tells the checkpoint sizing.
  const solvers::SolverRegistration* md = solvers::find_solver("md");
  ASSERT_NE(md, nullptr);
  const launcher::Deck deck = launcher::Deck::parse("[run]\nsolver = \"md\"\n", "deck");
  EXPECT_EQ(md->checkpoint_bytes_per_work_unit(deck), 8.0 * slots);
  EXPECT_EQ(8 * slots, 152);
}

TEST(AtomFieldTable, ExportReadsTheExportedFields) {
  const solvers::SolverRegistration* md = solvers::find_solver("md");
  ASSERT_NE(md, nullptr);
  ASSERT_TRUE(md->exporter.arrays && md->exporter.system);
  std::vector<std::string> names, want;
  for (const auto& a : md->exporter.arrays()) names.push_back(a.name);
  for (const auto& f : md::k_atom_fields)
    if (f.has(md::k_exported) || f.is_list()) want.push_back(std::string("/md/") + f.name);
  EXPECT_EQ(names, want);
  for (const auto& a : md->exporter.arrays()) {
    if (a.name != "/md/bond") continue;
    EXPECT_TRUE(a.optional);
    EXPECT_EQ(a.inner, std::vector<std::uint64_t>{io::StateArray::k_any_extent});
  }
  // Solvers without particles do not export.
  const solvers::SolverRegistration* fluid = solvers::find_solver("fluid");
  ASSERT_NE(fluid, nullptr);
  EXPECT_FALSE(fluid->exporter.system);
}

TEST(AtomFieldTable, StoreGrowsEveryField) {
  md::AtomStore atoms;
  atoms.reserve(100);
  int fields = 0;
  atoms.for_each_field([&](const md::AtomField& f, const auto& view) {
    ++fields;
    EXPECT_EQ(static_cast<int>(view.extent(0)), atoms.capacity()) << f.name;
    EXPECT_EQ(static_cast<int>(view.size() / view.extent(0)), f.width) << f.name;  // a list field: 0 until set
    EXPECT_EQ(view.label(), std::string("md::") + f.name);
  });
  EXPECT_EQ(fields, md::k_natom_fields);
  EXPECT_GE(atoms.capacity(), 100);
}

// ---- particles::Distributor: a field it knows nothing about follows its particle ---------------------------

// Particle j of rank r: its global id, where it goes (-1 stays, 0 the lower ring neighbour, 1 the upper), its
// position and its payloads (a charge and three ints).
struct Particle {
  std::int64_t gid;
  int dest;
  double x[3];
  double charge;
  int tag[3];
};
int particles_of(int r) { return 40 + 7 * r; }
Particle particle(int r, int j) {
  Particle p{};
  p.gid = 1000 * static_cast<std::int64_t>(r) + j + 1;
  p.dest = static_cast<int>(p.gid % 3) - 1;
  p.x[0] = p.gid % 4 == 0 ? 0.75 : 0.25;  // 0.75: outside the window, dropped where it arrives
  p.x[1] = 0.001 * static_cast<double>(j);
  p.x[2] = -static_cast<double>(r);
  p.charge = 0.1 * static_cast<double>(p.gid) + 1.0 / 3.0;
  p.tag[0] = static_cast<int>(p.gid % 11) - 5;
  p.tag[1] = -static_cast<int>(p.gid);
  p.tag[2] = r;
  return p;
}

// The particles of rank r that stay, in the places the mover gives them (distributor.hpp, StayOrder): kept, in
// their order; holes_filled, the k-th place below nstay that a leaving particle left taken by the k-th staying
// particle at nstay or above, the others where they were.
std::vector<std::int64_t> staying(int r, particles::Distributor::StayOrder order) {
  std::vector<std::int64_t> stay, holes_of;
  const int n = particles_of(r);
  for (int j = 0; j < n; ++j)
    if (particle(r, j).dest < 0) stay.push_back(particle(r, j).gid);
  if (order == particles::Distributor::StayOrder::kept) return stay;
  const int nstay = static_cast<int>(stay.size());
  std::vector<std::int64_t> placed(static_cast<std::size_t>(nstay), 0), beyond;
  for (int j = nstay; j < n; ++j)
    if (particle(r, j).dest < 0) beyond.push_back(particle(r, j).gid);
  std::size_t next = 0;
  for (int j = 0; j < nstay; ++j)
    placed[static_cast<std::size_t>(j)] = particle(r, j).dest < 0 ? particle(r, j).gid : beyond.at(next++);
  EXPECT_EQ(next, beyond.size()) << "rank " << r << ": as many holes as staying particles beyond them";
  return placed;
}

void check_distributor(particles::Distributor::StayOrder order) {
  const int P = test::nranks(), r = test::rank();
  const int down = (r + P - 1) % P, up = (r + 1) % P;
  const int n = particles_of(r);
  particles::Vec3View x("x", n);
  particles::DoubleView charge("charge", n);
  particles::Int64View gid("gid", n);
  particles::Int3View tag("tag", n);
  particles::IntView dest("dest", n);
  {
    auto hx = Kokkos::create_mirror_view(x);
    auto hq = Kokkos::create_mirror_view(charge);
    auto hg = Kokkos::create_mirror_view(gid);
    auto ht = Kokkos::create_mirror_view(tag);
    auto hd = Kokkos::create_mirror_view(dest);
    for (int j = 0; j < n; ++j) {
      const Particle p = particle(r, j);
      for (int c = 0; c < 3; ++c) {
        hx(j, c) = p.x[c];
        ht(j, c) = p.tag[c];
      }
      hq(j) = p.charge;
      hg(j) = p.gid;
      hd(j) = p.dest;
    }
    Kokkos::deep_copy(x, hx);
    Kokkos::deep_copy(charge, hq);
    Kokkos::deep_copy(gid, hg);
    Kokkos::deep_copy(tag, ht);
    Kokkos::deep_copy(dest, hd);
  }
  // The order the mover promises: those that stay, then the accepted arrivals from `from[0]` (the upper
  // neighbour, whose down-going ones come here), then from `from[1]`.
  std::vector<std::int64_t> want = staying(r, order);
  const int from[2] = {up, down};
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < particles_of(from[k]); ++j) {
      const Particle p = particle(from[k], j);
      if (p.dest == k && p.x[0] < 0.5) want.push_back(p.gid);
    }

  auto transport = comm::make_transport("auto", world());
  particles::Distributor plan(world(), *transport);
  plan.build(dest, n, {down, up}, {up, down}, order);
  particles::Fields fields;
  fields.add(gid).add(charge).position(x).add(tag);
  const int got = plan.migrate(
      fields,
      [&](int m) {
        Kokkos::resize(x, m);
        Kokkos::resize(charge, m);
        Kokkos::resize(gid, m);
        Kokkos::resize(tag, m);
      },
      particles::Window{0, 0.0, 0.5});

  EXPECT_EQ(got, static_cast<int>(want.size()));
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto hq = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), charge);
  auto hg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gid);
  auto ht = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tag);
  int wrong = 0;
  for (int k = 0; k < std::min<int>(got, static_cast<int>(want.size())); ++k) {
    const std::int64_t g = hg(k);
    if (g != want[k]) {
      ++wrong;
      continue;
    }
    const Particle p = particle(static_cast<int>((g - 1) / 1000), static_cast<int>((g - 1) % 1000));
    bool same = same_bits(hq(k), p.charge);
    for (int c = 0; c < 3; ++c) same = same && same_bits(hx(k, c), p.x[c]) && ht(k, c) == p.tag[c];
    if (!same) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "rank " << r << ": particles out of order or with another particle's fields";
}

TEST(Distributor, ExtraFieldsFollowTheirParticles) { check_distributor(particles::Distributor::StayOrder::kept); }

// The holes of the leaving particles filled by the staying ones above them (what MD's migration takes: the sort
// orders the atoms after it): the same particles and fields, in the places that rule gives.
TEST(Distributor, HolesFilledFromAboveKeepEveryField) {
  check_distributor(particles::Distributor::StayOrder::holes_filled);
}

// ---- MD: the table's fields migrate with their atoms and survive a checkpoint at another rank count --------

// Values of atom `id` that no physics makes: the oracle of the fields that travel with it.
std::array<double, 3> velocity_of(std::int64_t id) {
  return {0.001 * static_cast<double>(id), -1.0 / static_cast<double>(id), 0.5 + 1e-9 * static_cast<double>(id)};
}
std::array<int, 3> image_of(std::int64_t id) {
  return {static_cast<int>(id % 7) - 3, -static_cast<int>(id % 5), static_cast<int>(id) * 1000};
}

// Sets every owned atom's velocity and image flags from its id; shifts its position by `shift`.
void mark_atoms(md::MdSolver& s, const std::array<double, 3>& shift) {
  auto& a = s.atoms();
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.id);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.x);
  auto hv = Kokkos::create_mirror_view(a.v);
  auto himg = Kokkos::create_mirror_view(a.image);
  for (int i = 0; i < a.nlocal; ++i) {
    const auto v = velocity_of(hid(i));
    const auto img = image_of(hid(i));
    for (int d = 0; d < 3; ++d) {
      hv(i, d) = v[d];
      himg(i, d) = img[d];
      hx(i, d) += shift[d];
    }
  }
  Kokkos::deep_copy(a.v, hv);
  Kokkos::deep_copy(a.image, himg);
  Kokkos::deep_copy(a.x, hx);
}

// List fields of lengths no system has, each atom's rows and molecule id made from its id: the oracle of lists
// that travel with their atoms (no bonded style is set, so nothing reads them as interactions).
std::int64_t list_value(std::int64_t id, int field, int c) { return id * 1000 + field * 100 + c; }
void mark_lists(md::MdSolver& s) {
  auto& a = s.atoms();
  const int n = a.nlocal;
  a.set_width(md::AtomFieldId::bond, 7);
  a.set_width(md::AtomFieldId::special, 4);
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.id);
  auto hb = Kokkos::create_mirror_view(a.bond);
  auto hs = Kokkos::create_mirror_view(a.special);
  auto hm = Kokkos::create_mirror_view(a.molecule);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < 7; ++c) hb(i, c) = list_value(hid(i), 1, c);
    // special: no 1-2, 1-3 or 1-4 neighbours (counts 0), then values nothing reads.
    for (int c = 0; c < 4; ++c) hs(i, c) = c < 3 ? 0 : list_value(hid(i), 2, c);
    hm(i) = hid(i) % 13;
  }
  Kokkos::deep_copy(a.bond, hb);
  Kokkos::deep_copy(a.special, hs);
  Kokkos::deep_copy(a.molecule, hm);
}
// How many owned atoms hold other lists or molecule ids than mark_lists() gave them.
int wrong_lists(const md::MdSolver& s) {
  const auto& a = s.atoms();
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.id);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.bond);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.special);
  auto hm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.molecule);
  if (hb.extent(1) != 7 || hs.extent(1) != 4) return a.nlocal > 0 ? a.nlocal : 1;
  int wrong = 0;
  for (int i = 0; i < a.nlocal; ++i) {
    bool ok = hm(i) == hid(i) % 13;
    for (int c = 0; c < 7; ++c) ok = ok && hb(i, c) == list_value(hid(i), 1, c);
    for (int c = 3; c < 4; ++c) ok = ok && hs(i, c) == list_value(hid(i), 2, c);
    wrong += ok ? 0 : 1;
  }
  return wrong;
}

TEST(MdAtomFields, FieldsMigrateWithTheirAtoms) {
  test::MdRun run(test::lattice_config({6, 6, 6}, 1.0), world());
  run->setup();
  const auto& grid = run->grid();
  const auto& box = grid.global_box();
  // Less than one sub-box, so that every atom is kept: about half the atoms change rank, and those near the
  // upper faces of the box cross it (their image flags change by one).
  std::array<double, 3> shift{};
  for (int d = 0; d < 3; ++d) shift[d] = 0.45 * grid.sub_box().length(d) + 0.01 * d;
  const auto before = test::gather_atoms(*run.solver, world());
  mark_atoms(*run.solver, shift);
  mark_lists(*run.solver);
  run->halo().migrate(run->atoms());
  EXPECT_EQ(world().sum(static_cast<std::int64_t>(wrong_lists(*run.solver))), 0) << "list fields left their atoms";
  std::vector<test::AtomState> after;
  std::string error;
  try {
    after = test::gather_atoms(*run.solver, world());  // throws for an atom owned twice or ids not 1..N
  } catch (const std::exception& e) {
    error = e.what();
  }
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(after.size(), before.size());
  int moved = 0, crossed = 0, wrong = 0;
  for (std::size_t k = 0; k < after.size(); ++k) {
    const auto& a = after[k];
    const std::int64_t id = static_cast<std::int64_t>(k) + 1;
    auto img = image_of(id);
    std::array<double, 3> x{};
    for (int d = 0; d < 3; ++d) {
      x[d] = before[k].x[d] + shift[d];
      const int was = img[d];
      comm::wrap_periodic(x[d], box.lo[d], box.hi[d], img[d]);
      crossed += img[d] != was;
    }
    moved += a.owner != before[k].owner;
    bool same = a.id == id && a.owner == grid.owner_of(x.data()) && a.type == before[k].type;
    for (int d = 0; d < 3; ++d)
      same = same && same_bits(a.x[d], x[d]) && same_bits(a.v[d], velocity_of(id)[d]) && a.image[d] == img[d];
    if (!same && ++wrong <= 3)
      ADD_FAILURE() << "atom " << id << " arrived on rank " << a.owner << " with other fields than it left with";
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(crossed, 0);
  if (test::nranks() > 1) {
    EXPECT_GT(moved, 0);
  }
}

// A state of every atom's arrays gathered on every rank (id order), to compare bit for bit.
std::vector<std::vector<double>> gathered(const io::SolverState& st, const comm::Communicator& c) {
  std::vector<std::vector<double>> out;
  for (const auto& a : st.arrays) {
    std::vector<double> mine(a.is_integer ? a.i64.size() : a.f64.size());
    if (a.is_integer)
      std::memcpy(mine.data(), a.i64.data(), mine.size() * 8);
    else
      std::memcpy(mine.data(), a.f64.data(), mine.size() * 8);
    int n = static_cast<int>(mine.size());
    std::vector<int> counts(c.size()), displs(c.size());
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, c.mpi());
    int total = 0;
    for (int r = 0; r < c.size(); ++r) {
      displs[r] = total;
      total += counts[r];
    }
    std::vector<double> all(total);
    MPI_Allgatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, c.mpi());
    out.push_back(std::move(all));
  }
  return out;
}

bool same_arrays(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].size() != b[k].size() || std::memcmp(a[k].data(), b[k].data(), a[k].size() * 8) != 0) return false;
  return true;
}

TEST(MdAtomFields, CheckpointAtNRanksRestoresAtM) {
  const md::MdConfig cfg = test::lattice_config({6, 6, 6}, 1.0);
  test::MdRun run(cfg, world());
  run->setup();
  for (int s = 0; s < 5; ++s) run->step(false);
  mark_atoms(*run.solver, {0, 0, 0});  // velocities and image flags that only the atom's id explains
  mark_lists(*run.solver);
  const io::SolverState st = run->state();
  const auto want = gathered(st, world());
  const auto checks = test::restore_at_rank_counts(cfg, st, run->step_index(), run->time(),
                                                   [&](md::MdSolver& restored, const comm::Communicator& c) {
    // Each atom's fields, by its id, and the whole state bit for bit.
    double fields_ok = 1;
    const auto atoms = test::gather_atoms(restored, c);
    for (const auto& a : atoms)
      for (int d = 0; d < 3; ++d)
        if (!same_bits(a.v[d], velocity_of(a.id)[d]) || a.image[d] != image_of(a.id)[d]) fields_ok = 0;
    if (wrong_lists(restored) != 0) fields_ok = 0;
    return std::vector<double>{fields_ok, same_arrays(gathered(restored.state(), c), want) ? 1.0 : 0.0};
  });
  for (const auto& r : checks) {
    ASSERT_TRUE(r.error.empty()) << r.ranks << " ranks: " << r.error;
    EXPECT_EQ(r.values.at(0), 1.0) << "written at " << test::nranks() << " ranks, read at " << r.ranks
                                   << ": an atom came back with another atom's velocity or image flags";
    EXPECT_EQ(r.values.at(1), 1.0) << "written at " << test::nranks() << " ranks, read at " << r.ranks
                                   << ": the restored state differs from the one written";
  }
}

}  // namespace
}  // namespace spotrun
