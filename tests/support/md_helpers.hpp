#pragma once
// Helpers of the MD tests: build an MdSolver on a communicator, run it collecting thermo rows, gather
// every atom to every rank, move one atom.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/transport.hpp"
#include "io/lammps_data.hpp"
#include "solvers/md/md_solver.hpp"

namespace spotrun::test {

// A solver with its transport, the build's choice ("auto"; the solver keeps a reference to it).
struct MdRun {
  MdRun(const md::MdConfig& cfg, const comm::Communicator& comm, const io::LammpsData* data = nullptr)
      : transport(comm::make_transport("auto", comm)), solver(std::make_unique<md::MdSolver>(cfg, comm, *transport, data)) {}
  std::unique_ptr<comm::Transport> transport;
  std::unique_ptr<md::MdSolver> solver;
  md::MdSolver* operator->() { return solver.get(); }
};

// One thermo row: step, time, temp, pe, ke, etotal, press.
using ThermoRow = std::array<double, 7>;
inline const char* k_thermo_names[7] = {"step", "time", "temp", "pe", "ke", "etotal", "press"};

inline ThermoRow thermo_row(md::MdSolver& s) {
  const auto t = s.thermo();  // time temp pe ke etotal press
  return {static_cast<double>(s.step_index()), t[0], t[1], t[2], t[3], t[4], t[5]};
}

// setup(), then `steps` steps; thermo rows at step 0 and every `every` steps (collective).
inline std::vector<ThermoRow> run_thermo(md::MdSolver& s, int steps, int every, bool do_setup = true) {
  if (do_setup) s.setup();
  std::vector<ThermoRow> rows{thermo_row(s)};
  for (int n = 1; n <= steps; ++n) {
    const bool want = n % every == 0;
    s.step(want);
    if (want) rows.push_back(thermo_row(s));
  }
  return rows;
}

// Relative difference, 0 when both are 0.
inline double rel_diff(double a, double b) {
  const double scale = std::max(std::abs(a), std::abs(b));
  return scale == 0 ? 0.0 : std::abs(a - b) / scale;
}

// Largest relative difference of columns time..press over all rows (rows must match in step).
inline double max_thermo_diff(const std::vector<ThermoRow>& a, const std::vector<ThermoRow>& b, std::string* where = nullptr) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t r = 0; r < std::min(a.size(), b.size()); ++r) {
    EXPECT_EQ(a[r][0], b[r][0]) << "row " << r;
    for (int c = 1; c < 7; ++c) {
      const double d = rel_diff(a[r][c], b[r][c]);
      if (d > worst) {
        worst = d;
        if (where) {
          std::ostringstream s;
          s.precision(17);
          s << "step " << a[r][0] << " " << k_thermo_names[c] << ": " << a[r][c] << " vs " << b[r][c];
          *where = s.str();
        }
      }
    }
  }
  return worst;
}

inline std::vector<ThermoRow> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string line;
  std::getline(in, line);
  if (line != "step,time,temp,pe,ke,etotal,press") throw std::runtime_error(path + ": unexpected header " + line);
  std::vector<ThermoRow> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ThermoRow r{};
    std::istringstream s(line);
    std::string cell;
    for (int c = 0; c < 7; ++c) {
      std::getline(s, cell, ',');
      r[c] = std::stod(cell);
    }
    rows.push_back(r);
  }
  return rows;
}

struct AtomState {
  std::int64_t id = 0;
  int type = 0;
  std::array<double, 3> x{}, v{}, unwrapped{};
  std::array<int, 3> image{};
  int owner = -1;
};

// Every owned atom of every rank, on every rank, indexed by id - 1 (ids must be 1..natoms).
inline std::vector<AtomState> gather_atoms(const md::MdSolver& s, const comm::Communicator& comm) {
  const auto& a = s.atoms();
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.x);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.v);
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.id);
  auto ht = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.type);
  auto himg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.image);
  constexpr int k = 11;
  std::vector<double> mine;
  for (int i = 0; i < a.nlocal; ++i) {
    mine.push_back(static_cast<double>(hid(i)));
    mine.push_back(ht(i));
    for (int d = 0; d < 3; ++d) mine.push_back(hx(i, d));
    for (int d = 0; d < 3; ++d) mine.push_back(hv(i, d));
    for (int d = 0; d < 3; ++d) mine.push_back(himg(i, d));
  }
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(comm.size()), displs(comm.size());
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm.mpi());
  int total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<double> all(total);
  MPI_Allgatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, comm.mpi());
  const auto& box = s.grid().global_box();
  std::vector<AtomState> out(static_cast<std::size_t>(total / k));
  for (int r = 0; r < comm.size(); ++r)
    for (int off = displs[r]; off < displs[r] + counts[r]; off += k) {
      const double* p = &all[off];
      const auto id = static_cast<std::int64_t>(p[0]);
      if (id < 1 || id > static_cast<std::int64_t>(out.size())) throw std::runtime_error("gather_atoms: atom ids are not 1..N");
      AtomState& st = out[id - 1];
      if (st.id != 0) throw std::runtime_error("gather_atoms: atom " + std::to_string(id) + " is owned twice");
      st.id = id;
      st.type = static_cast<int>(p[1]);
      st.owner = r;
      for (int d = 0; d < 3; ++d) {
        st.x[d] = p[2 + d];
        st.v[d] = p[5 + d];
        st.image[d] = static_cast<int>(p[8 + d]);
        st.unwrapped[d] = st.x[d] + st.image[d] * box.length(d);
      }
    }
  return out;
}

// Sets the position of atom id on the rank that owns it (returns whether this rank does). Not collective.
inline bool set_position(md::MdSolver& s, std::int64_t id, const std::array<double, 3>& x) {
  auto& a = s.atoms();
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.id);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.x);
  for (int i = 0; i < a.nlocal; ++i)
    if (hid(i) == id) {
      for (int d = 0; d < 3; ++d) hx(i, d) = x[d];
      Kokkos::deep_copy(a.x, hx);
      return true;
    }
  return false;
}

// Force on atom id, broadcast from its owner (collective).
inline std::array<double, 3> force_on(const md::MdSolver& s, const comm::Communicator& comm, std::int64_t id) {
  const auto& a = s.atoms();
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.id);
  auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.f);
  double f[3] = {0, 0, 0};
  for (int i = 0; i < a.nlocal; ++i)
    if (hid(i) == id)
      for (int d = 0; d < 3; ++d) f[d] = hf(i, d);
  comm.sum_in_place(f, 3);
  return {f[0], f[1], f[2]};
}

inline md::MdConfig lattice_config(std::array<int, 3> cells, double temperature) {
  md::MdConfig c;
  c.cells = cells;
  c.density = 0.8442;
  c.cutoff = 2.5;
  c.skin = 0.3;
  c.dt = 0.005;
  c.neighbor_every = 1;
  c.neighbor_check = true;
  c.lattice_temperature = temperature;
  c.lattice_seed = 87287;
  return c;
}

// A neighbour list kind as the tests' messages name it.
inline std::string list_name(md::NeighborListKind k) {
  switch (k) {
    case md::NeighborListKind::Half: return "half list, newton on";
    case md::NeighborListKind::HalfNoNewton: return "half list, newton off";
    case md::NeighborListKind::Full: return "full list";
    case md::NeighborListKind::ByBackend: break;
  }
  return "by backend";
}

// The Kob-Andersen 80:20 mixture's types and pairs (A = type 1, B = type 2), atoms from a data file:
// A-A (1, 1, cutoff 2.5), B-B (0.5, 0.88, 2.2), and B-A given explicitly (1.5, 0.8, 2.0) when
// explicit_ab, else from pair_modify mix arithmetic.
// A [[md.pair.coeff]] entry of pair style lj/cut (cutoff 0: md.cutoff).
inline md::PairCoeffSpec lj_pair(const std::string& a, const std::string& b, double epsilon, double sigma,
                                 double cutoff) {
  return {a, b, {{"epsilon", epsilon}, {"sigma", sigma}}, cutoff};
}

inline md::MdConfig ka_config(bool explicit_ab) {
  md::MdConfig c;
  c.from_lattice = false;
  c.cutoff = 2.5;
  c.skin = 0.3;
  c.dt = 0.005;
  c.types = {{"A", 1.0, 0.0, false}, {"B", 1.0, 0.0, false}};
  c.pair_coeffs = {lj_pair("A", "A", 1.0, 1.0, 2.5), lj_pair("B", "B", 0.5, 0.88, 2.2)};
  if (explicit_ab)
    c.pair_coeffs.push_back(lj_pair("B", "A", 1.5, 0.8, 2.0));
  else
    c.mix = md::PairMix::Arithmetic;
  return c;
}


// A LAMMPS thermo CSV: its header and rows.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
};
inline Csv read_named_csv(const std::string& path) {
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

// The thermo of `steps` steps (every `every`) on comm in the CSV's columns, against the CSV: the largest
// relative difference and where.
inline double run_against(md::MdConfig cfg, const io::LammpsData& data, const Csv& ref, int steps, int every,
                          std::string& where, const comm::Communicator& comm) {
  cfg.thermo_style = ref.header;
  test::MdRun run(cfg, comm, &data);
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

}  // namespace spotrun::test
