// The time-independent outputs for viewers at 1-3 ranks, the same files at every rank count.
// io::H5mdTrajectory's, read back with HDF5's C API: /particles/all/id and the connectivity
// (/connectivity/bonds, angles, dihedrals: int64 [n][width] atom ids, each rank's share in rank order,
// particles_group an object reference to /particles/all); no dataset for a kind without rows; bad
// connectivity (a shape, a name, after the first frame) refused on every rank; a continued file keeps its
// connectivity. io::write_topology's OUTDIR/topology.data: the molecule ids and every rank's interactions.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/h5md_trajectory.hpp"
#include "io/lammps_dump.hpp"
#include "io/solver_state.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3);

namespace fs = std::filesystem;
using spotrun::io::H5mdFrame;
using spotrun::io::H5mdTrajectory;
using spotrun::test::is_root;
using spotrun::test::world;

namespace {

// Seven atoms in id order (ids with gaps) in two chains: 2-3-5-7 and 11-13-17; atom 19 alone.
const std::vector<std::int64_t> k_ids = {2, 3, 5, 7, 11, 13, 17, 19};
const std::vector<std::int64_t> k_bonds = {2, 3, 3, 5, 5, 7, 11, 13, 13, 17};
const std::vector<std::int64_t> k_angles = {2, 3, 5, 3, 5, 7, 11, 13, 17};
const std::vector<std::int64_t> k_dihedrals = {2, 3, 5, 7};

// This rank's block of the atoms (rows in id order) and its share of the tuples of `all`: those whose first
// atom is in its block, as the MD solver passes them.
struct Block {
  std::uint64_t first = 0, rows = 0;
  bool holds(std::int64_t id) const {
    for (std::uint64_t r = first; r < first + rows; ++r)
      if (k_ids[r] == id) return true;
    return false;
  }
  std::vector<std::int64_t> share(const std::vector<std::int64_t>& all, std::size_t width) const {
    std::vector<std::int64_t> mine;
    for (std::size_t t = 0; t < all.size(); t += width)
      if (holds(all[t])) mine.insert(mine.end(), all.begin() + static_cast<std::ptrdiff_t>(t),
                                     all.begin() + static_cast<std::ptrdiff_t>(t + width));
    return mine;
  }
};

Block my_block() {
  Block b;
  spotrun::io::block_of(k_ids.size(), world().size(), world().rank(), b.first, b.rows);
  return b;
}

// One frame of this rank's block: positions, species and ids.
void write_frame(H5mdTrajectory& t, std::int64_t step, const Block& b) {
  std::vector<double> x(3 * b.rows);
  std::vector<std::int64_t> species(b.rows, 1), image(3 * b.rows, 0), ids(k_ids.begin() + b.first,
                                                                          k_ids.begin() + b.first + b.rows);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = 0.5 * static_cast<double>(b.first * 3 + k);
  H5mdFrame fr;
  fr.step = step;
  fr.time = 0.005 * step;
  fr.box_edges = {10, 10, 10};
  fr.first_row = b.first;
  fr.rows = b.rows;
  fr.position = x.data();
  fr.image = image.data();
  fr.species = species.data();
  fr.id = ids.data();
  t.write(world(), fr);
}

class H5md : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name;
    if (is_root()) {
      const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
      const char* base = std::getenv("TMPDIR");
      name = (fs::path(base && *base ? base : "/tmp") /
              ("spotrun-test-h5md." + std::to_string(::getpid()) + "." + info->name()))
                 .string();
      fs::remove_all(name);
      fs::create_directories(name);
    }
    m_dir = world().broadcast(name);
  }
  void TearDown() override {
    world().barrier();
    if (is_root()) fs::remove_all(m_dir);
    world().barrier();
  }
  std::string m_dir;
};

// f on rank 0 with HDF5's serial API, the file open read-only; every rank waits for it.
void read_on_root(const std::string& path, const std::function<void(hid_t)>& f) {
  if (is_root()) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    EXPECT_GE(file, 0) << path;
    if (file >= 0) {
      f(file);
      H5Fclose(file);
    }
  }
  world().barrier();
}

// A dataset's shape and int64 values ({} and no values when it is absent).
struct Read {
  std::vector<hsize_t> shape;
  std::vector<std::int64_t> values;
};
Read read_i64(hid_t file, const std::string& name) {
  Read r;
  // Each group on the way first: HDF5 fails (rather than answers no) for a path through a missing group.
  for (std::size_t slash = name.find('/', 1);; slash = name.find('/', slash + 1)) {
    if (H5Lexists(file, name.substr(0, slash).c_str(), H5P_DEFAULT) <= 0) return r;
    if (slash == std::string::npos) break;
  }
  const hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  r.shape.resize(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, r.shape.data(), nullptr);
  hsize_t n = 1;
  for (auto s : r.shape) n *= s;
  r.values.resize(n);
  EXPECT_GE(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.values.data()), 0) << name;
  H5Sclose(space);
  H5Dclose(d);
  return r;
}

// The object particles_group of a dataset refers to ("" when it has none or it is no object reference).
std::string particles_group_of(hid_t file, const char* name) {
  const hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
  std::string target;
  if (H5Aexists(d, "particles_group") > 0) {
    const hid_t a = H5Aopen(d, "particles_group", H5P_DEFAULT);
    const hid_t type = H5Aget_type(a);
    hobj_ref_t ref;
    if (H5Tequal(type, H5T_STD_REF_OBJ) > 0 && H5Aread(a, H5T_STD_REF_OBJ, &ref) >= 0) {
      const hid_t obj = H5Rdereference2(d, H5P_DEFAULT, H5R_OBJECT, &ref);
      char buf[256] = {0};
      if (obj >= 0 && H5Iget_name(obj, buf, sizeof buf) > 0) target = buf;
      if (obj >= 0) H5Oclose(obj);
    }
    H5Tclose(type);
    H5Aclose(a);
  }
  H5Dclose(d);
  return target;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

}  // namespace

// Each rank's share of every kind, written with the first frame: the whole lists in order, whatever the
// rank count, with the ids of /particles/all they refer to.
TEST_F(H5md, ConnectivityOfEveryRankInOrder) {
  const std::string path = m_dir + "/trajectory.h5md";
  const Block b = my_block();
  H5mdTrajectory t(path, {"position", "image", "species"}, k_ids.size());
  t.continue_after(world(), -1);
  t.write_connectivity(world(), "bonds", 2, b.share(k_bonds, 2));
  t.write_connectivity(world(), "angles", 3, b.share(k_angles, 3));
  t.write_connectivity(world(), "dihedrals", 4, b.share(k_dihedrals, 4));
  t.write_connectivity(world(), "impropers", 4, {});
  write_frame(t, 0, b);
  write_frame(t, 10, b);
  read_on_root(path, [&](hid_t file) {
    const Read ids = read_i64(file, "/particles/all/id");
    EXPECT_EQ(ids.shape, std::vector<hsize_t>{k_ids.size()});
    EXPECT_EQ(ids.values, k_ids);
    const Read bonds = read_i64(file, "/connectivity/bonds");
    EXPECT_EQ(bonds.shape, (std::vector<hsize_t>{5, 2}));
    EXPECT_EQ(bonds.values, k_bonds);
    const Read angles = read_i64(file, "/connectivity/angles");
    EXPECT_EQ(angles.shape, (std::vector<hsize_t>{3, 3}));
    EXPECT_EQ(angles.values, k_angles);
    const Read dihedrals = read_i64(file, "/connectivity/dihedrals");
    EXPECT_EQ(dihedrals.shape, (std::vector<hsize_t>{1, 4}));
    EXPECT_EQ(dihedrals.values, k_dihedrals);
    EXPECT_EQ(H5Lexists(file, "/connectivity/impropers", H5P_DEFAULT), 0) << "no rows: no dataset";
    for (const char* name : {"/connectivity/bonds", "/connectivity/angles", "/connectivity/dihedrals"})
      EXPECT_EQ(particles_group_of(file, name), "/particles/all") << name;
    EXPECT_EQ(read_i64(file, "/particles/all/position/step").values, (std::vector<std::int64_t>{0, 10}));
  });
}

// No connectivity: no /connectivity group (an atomic system's file as before, with the ids).
TEST_F(H5md, NoConnectivityNoGroup) {
  const std::string path = m_dir + "/trajectory.h5md";
  const Block b = my_block();
  H5mdTrajectory t(path, {"position"}, k_ids.size());
  t.continue_after(world(), -1);
  t.write_connectivity(world(), "bonds", 2, {});
  write_frame(t, 0, b);
  read_on_root(path, [&](hid_t file) {
    EXPECT_EQ(H5Lexists(file, "/connectivity", H5P_DEFAULT), 0);
    EXPECT_EQ(read_i64(file, "/particles/all/id").values, k_ids);
  });
}

// Refused on every rank: a name that is no dataset name, a width below 2, ids that are not whole rows (on
// one rank), a name given twice, connectivity after the first frame.
TEST_F(H5md, BadConnectivityIsRefusedEverywhere) {
  const std::string path = m_dir + "/trajectory.h5md";
  const Block b = my_block();
  H5mdTrajectory t(path, {"position"}, k_ids.size());
  t.continue_after(world(), -1);
  EXPECT_CONTAINS(error_of([&] { t.write_connectivity(world(), "a/b", 2, {}); }),
                  "connectivity name 'a/b' is not a dataset name of /connectivity");
  EXPECT_CONTAINS(error_of([&] { t.write_connectivity(world(), "pairs", 1, {}); }),
                  "connectivity 'pairs': width 1; tuples have 2 atoms or more");
  const std::vector<std::int64_t> odd = is_root() ? std::vector<std::int64_t>{2, 3, 5} : std::vector<std::int64_t>{};
  EXPECT_CONTAINS(error_of([&] { t.write_connectivity(world(), "bonds", 2, odd); }),
                  "connectivity 'bonds': 3 ids are not whole rows of 2");
  t.write_connectivity(world(), "bonds", 2, b.share(k_bonds, 2));
  EXPECT_CONTAINS(error_of([&] { t.write_connectivity(world(), "bonds", 2, {}); }), "connectivity 'bonds' given twice");
  write_frame(t, 0, b);
  EXPECT_CONTAINS(error_of([&] { t.write_connectivity(world(), "angles", 3, b.share(k_angles, 3)); }),
                  "connectivity 'angles' given after this run's first frame (give it before)");
}

// A resumed run continues the file: its connectivity stays the one the run that began it wrote.
TEST_F(H5md, ContinuedFileKeepsItsConnectivity) {
  const std::string path = m_dir + "/trajectory.h5md";
  const Block b = my_block();
  {
    H5mdTrajectory t(path, {"position"}, k_ids.size());
    t.continue_after(world(), -1);
    t.write_connectivity(world(), "bonds", 2, b.share(k_bonds, 2));
    write_frame(t, 0, b);
    write_frame(t, 10, b);
  }
  H5mdTrajectory resumed(path, {"position"}, k_ids.size());
  resumed.continue_after(world(), 0);
  const std::vector<std::int64_t> other = is_root() ? std::vector<std::int64_t>{2, 19} : std::vector<std::int64_t>{};
  resumed.write_connectivity(world(), "bonds", 2, other);
  write_frame(resumed, 10, b);
  read_on_root(path, [&](hid_t file) {
    EXPECT_EQ(read_i64(file, "/connectivity/bonds").values, k_bonds);
    EXPECT_EQ(read_i64(file, "/particles/all/position/step").values, (std::vector<std::int64_t>{0, 10}));
  });
}

// OUTDIR/topology.data, the other time-independent output MDAnalysis reads with the trajectory
// (io::write_topology): every rank's rows with their molecule ids and its share of the interactions, in
// rank order, the same file at every rank count.
TEST_F(H5md, TopologyDataHoldsEveryRanksMolecules) {
  const std::string path = m_dir + "/topology.data";
  const Block b = my_block();
  spotrun::io::LammpsData header;
  header.hi = {30, 30, 30};
  header.ntypes = 1;
  header.masses = {1.0};
  header.bonds.ntypes = 2;
  header.angles.ntypes = 1;
  header.dihedrals.ntypes = 1;
  std::vector<std::int64_t> ids(k_ids.begin() + b.first, k_ids.begin() + b.first + b.rows), type(b.rows, 1),
      image(3 * b.rows, 0), molecule;
  std::vector<double> x;
  for (const auto id : ids) {
    molecule.push_back(id < 11 ? 1 : id < 19 ? 2 : 0);
    x.insert(x.end(), {static_cast<double>(id), 1.0, 2.0});
  }
  spotrun::io::TopologyShare share;
  share.molecule = molecule.data();
  share.bonds.atoms = b.share(k_bonds, 2);
  for (std::size_t k = 0; k < share.bonds.atoms.size(); k += 2)
    share.bonds.type.push_back(share.bonds.atoms[k] < 11 ? 1 : 2);
  share.angles.atoms = b.share(k_angles, 3);
  share.angles.type.assign(share.angles.atoms.size() / 3, 1);
  share.dihedrals.atoms = b.share(k_dihedrals, 4);
  share.dihedrals.type.assign(share.dihedrals.atoms.size() / 4, 1);
  spotrun::io::write_topology(world(), path, header, {"A"}, "topology of the test", b.rows, ids.data(), type.data(),
                              x.data(), image.data(), share);
  if (is_root()) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const spotrun::io::LammpsData d = spotrun::io::parse_lammps_data(text.str(), path);
    EXPECT_EQ(d.atom_style, spotrun::io::AtomStyle::Molecular);
    EXPECT_EQ(d.id, k_ids);
    EXPECT_EQ(d.molecule, (std::vector<std::int64_t>{1, 1, 1, 1, 2, 2, 2, 0}));
    EXPECT_EQ(d.bonds.atoms, k_bonds);
    EXPECT_EQ(d.bonds.type, (std::vector<int>{1, 1, 1, 2, 2}));
    EXPECT_EQ(d.bonds.ntypes, 2);
    EXPECT_EQ(d.angles.atoms, k_angles);
    EXPECT_EQ(d.dihedrals.atoms, k_dihedrals);
    EXPECT_EQ(d.impropers.count(), 0u);
    EXPECT_NE(text.str().find("\nMasses\n\n1 1 # A\n"), std::string::npos) << text.str();
  }
  world().barrier();
}
