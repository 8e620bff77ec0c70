// The MD solver's halo update alone, its integrate step, and the memory-bandwidth floor of both.
//
//   mpirun -np N build/bench/bench_halo [--cells NX,NY,NZ] [--reps R] [--calls K] [--bandwidth-mib M] [--samples]
//
// Builds the LAMMPS bench/in.lj system (fcc at density 0.8442, lj/cut 2.5, skin 0.3, T = 1.44; --cells unit
// cells, default 20,20,20: 32,000 atoms) through md::MdSolver at the run's rank count, calls setup(), and
// then times, in each of R repetitions (default 5), between barriers, as the slowest rank's time:
//
//   halo update  md::Halo::update_positions: the ghost-coordinate refresh of every step without a
//                neighbour rebuild (for x, y, z: pack, one exchange of both directions through the
//                transport, unpack; a kernel copy where a dimension has one rank). The Halo is the bench's
//                own, built with the solver's rank grid, transport and cutoff + skin on a copy of the
//                solver's owned atoms: the plan the solver builds (checked: its ghosts equal the
//                solver's bit for bit, else ERROR and exit 1). Seconds per call, mean of K calls.
//   integrate    md::initial_integrate + md::final_integrate (velocity Verlet, LAMMPS fix nve) on a copy
//                of the owned atoms: seconds per step, mean of K steps (checked against the same
//                arithmetic on the host).
//   bandwidth    STREAM-like a(i) += s * b(i) over two arrays of M MiB each (default 64) on every rank at
//                once, counted as 24 bytes per element (two reads, one write; `a` is read before it is
//                written, so no write-allocate traffic): the access pattern of the integrate step, in
//                arrays larger than the last-level cache. Bytes per second summed over ranks.
//
// Floors, from the bandwidth of the same repetition and each rank's own share (the slowest rank's):
//   integrate floor  owned atoms x 224 bytes / bandwidth. initial_integrate reads x, v, f, x_build (96
//                    bytes) and the type (4) and writes x, v (48); final_integrate reads v, f (48) and the
//                    type (4) and writes v (24). The per-type mass is one cached value.
//   halo floor       ghosts x 52 bytes / bandwidth: each ghost's send-list index (4) and owner coordinates
//                    (24) read once and its coordinates (24) written once, the copy no exchange avoids;
//                    packing, the transport's copies and unpacking are above it.
// A system that fits in the caches can run faster than these floors (ratio below 1).
//
// Output: a table on rank 0; with --samples, one line per quantity "SAMPLES {json}" with the value of each
// repetition (read by bench/suite.py).
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/errors.hpp"
#include "comm/transport.hpp"
#include "solvers/md/halo.hpp"
#include "solvers/md/integrate.hpp"
#include "solvers/md/md_solver.hpp"

using namespace spotrun;

// Kernels in free functions with external linkage (CUDA extended-lambda rules).
void bench_halo_update_kernel(const md::DoubleView& a, const md::DoubleView& b, double s) {
  Kokkos::parallel_for(
      "bench::bandwidth::update", md::Policy(0, a.extent(0)), KOKKOS_LAMBDA(int i) { a(i) += s * b(i); });
}

void bench_halo_fill_kernel(const md::DoubleView& a, double v) {
  Kokkos::parallel_for("bench::bandwidth::fill", md::Policy(0, a.extent(0)), KOKKOS_LAMBDA(int i) { a(i) = v + 1e-9 * i; });
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double k_integrate_bytes_per_atom = 96 + 4 + 48 + 48 + 4 + 24;  // see the header comment
constexpr double k_halo_bytes_per_ghost = 4 + 24 + 24;

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Options {
  std::array<int, 3> cells{20, 20, 20};
  int reps = 5;
  int calls = 0;  // 0: chosen from the system size
  double bandwidth_mib = 64;
  bool samples = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError("option " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--cells") {
      std::stringstream s(value());
      std::string part;
      for (int d = 0; d < 3; ++d) {
        if (!std::getline(s, part, ',')) throw InputError("--cells needs NX,NY,NZ");
        o.cells[d] = std::stoi(part);
      }
    } else if (a == "--reps") {
      o.reps = std::max(1, std::stoi(value()));
    } else if (a == "--calls") {
      o.calls = std::max(1, std::stoi(value()));
    } else if (a == "--bandwidth-mib") {
      o.bandwidth_mib = std::stod(value());
    } else if (a == "--samples") {
      o.samples = true;
    } else {
      throw InputError("unknown option '" + a + "' (see the comment at the top of bench/bench_halo.cpp)");
    }
  }
  return o;
}

// A copy of the owned atoms of `from` (positions, velocities, forces, ids, types, images, x_build), with room
// for ghosts; shares the per-type masses.
md::AtomStore copy_owned(const md::AtomStore& from) {
  md::AtomStore a;
  a.reserve(from.nall());
  a.nlocal = from.nlocal;
  a.nghost = 0;
  const auto own = std::make_pair(0, from.nlocal);
  auto copy3 = [&](const md::Vec3View& dst, const md::Vec3View& src) {
    Kokkos::deep_copy(Kokkos::subview(dst, own, Kokkos::ALL), Kokkos::subview(src, own, Kokkos::ALL));
  };
  copy3(a.x, from.x);
  copy3(a.v, from.v);
  copy3(a.f, from.f);
  copy3(a.x_build, from.x_build);
  Kokkos::deep_copy(Kokkos::subview(a.id, own), Kokkos::subview(from.id, own));
  Kokkos::deep_copy(Kokkos::subview(a.type, own), Kokkos::subview(from.type, own));
  Kokkos::deep_copy(Kokkos::subview(a.image, own, Kokkos::ALL), Kokkos::subview(from.image, own, Kokkos::ALL));
  a.mass_by_type = from.mass_by_type;
  return a;
}

// Ghost coordinates of `a` equal those of `b`, bit for bit (same count, same order).
bool same_ghosts(const md::AtomStore& a, const md::AtomStore& b) {
  if (a.nlocal != b.nlocal || a.nghost != b.nghost) return false;
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.x);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.x);
  for (int i = a.nlocal; i < a.nall(); ++i)
    for (int c = 0; c < 3; ++c)
      if (ha(i, c) != hb(i, c)) return false;
  return true;
}

// A host copy of a view (create_mirror always copies; a mirror *view* of host memory would alias it).
template <class View>
auto host_copy(const View& v) {
  auto h = Kokkos::create_mirror(v);
  Kokkos::deep_copy(h, v);
  return h;
}

// One velocity-Verlet step on `a` against the same arithmetic on the host, to 1e-14 relative.
bool integrate_is_right(md::AtomStore& a, double dt, const Kokkos::View<double, md::MemSpace>& maxsq) {
  auto x0 = host_copy(a.x);
  auto v0 = host_copy(a.v);
  auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.f);
  auto type = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.type);
  auto mass = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.mass_by_type);
  md::initial_integrate(a, dt, 1.0, maxsq);
  md::final_integrate(a, dt, 1.0);
  auto x1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.x);
  auto v1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.v);
  auto close = [](double got, double want) { return std::abs(got - want) <= 1e-14 * std::max(1.0, std::abs(want)); };
  for (int i = 0; i < a.nlocal; ++i) {
    const double h = 0.5 * dt / mass(type(i));
    for (int c = 0; c < 3; ++c) {
      const double vh = v0(i, c) + h * f(i, c);
      if (!close(x1(i, c), x0(i, c) + dt * vh) || !close(v1(i, c), vh + h * f(i, c))) return false;
    }
  }
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string json_array(const std::vector<double>& v) {
  std::ostringstream s;
  s.precision(9);
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  s << "]";
  return s.str();
}

int bench(const comm::Communicator& comm, const Options& o) {
  md::MdConfig cfg;
  cfg.dt = 0.005;
  cfg.cutoff = 2.5;
  cfg.skin = 0.3;
  cfg.neighbor_every = 20;
  cfg.neighbor_check = false;
  cfg.density = 0.8442;
  cfg.cells = o.cells;
  cfg.lattice_temperature = 1.44;
  cfg.lattice_seed = 87287;
  auto transport = comm::make_transport("auto", comm);
  md::MdSolver solver(cfg, comm, *transport, nullptr);
  solver.setup();
  const md::AtomStore& solver_atoms = solver.atoms();

  md::AtomStore atoms = copy_owned(solver_atoms);
  md::Halo halo(comm, solver.grid(), *transport, cfg.cutoff + cfg.skin);
  halo.build(atoms);
  halo.update_positions(atoms);
  Kokkos::fence();
  bool ok = !comm.any(!same_ghosts(atoms, solver_atoms));
  Kokkos::View<double, md::MemSpace> maxsq("bench::maxsq");
  ok = !comm.any(!integrate_is_right(atoms, cfg.dt, maxsq)) && ok;

  const std::int64_t natoms = solver.natoms();
  const long long ghosts_max = comm.max(static_cast<std::int64_t>(atoms.nghost));
  const std::int64_t ghosts_total = comm.sum(static_cast<std::int64_t>(atoms.nghost));
  const double transport_bytes = comm.sum(static_cast<double>(halo.position_bytes()));
  // Enough calls per repetition for about 20 ms of integrate work at 1e8 atoms per second per rank.
  const int calls = o.calls > 0 ? o.calls : std::max(5, static_cast<int>(2e6 / std::max<std::int64_t>(1, natoms / comm.size())));

  const std::size_t elements = static_cast<std::size_t>(o.bandwidth_mib * 1048576.0 / sizeof(double));
  md::DoubleView ba("bench::bandwidth::a", elements), bb("bench::bandwidth::b", elements);
  bench_halo_fill_kernel(ba, 1.0);
  bench_halo_fill_kernel(bb, 2.0);
  bench_halo_update_kernel(ba, bb, 1e-3);  // first touch done, pages mapped
  Kokkos::fence();
  const int bw_calls = 5;

  std::vector<double> t_halo, t_integrate, bandwidth, floor_integrate, floor_halo;
  for (int rep = 0; rep < o.reps; ++rep) {
    comm.barrier();
    auto t0 = Clock::now();
    for (int k = 0; k < calls; ++k) halo.update_positions(atoms);
    Kokkos::fence();
    t_halo.push_back(comm.max(seconds(t0)) / calls);

    comm.barrier();
    t0 = Clock::now();
    for (int k = 0; k < calls; ++k) {
      md::initial_integrate(atoms, cfg.dt, cfg.unit().ftm2v, maxsq);
      md::final_integrate(atoms, cfg.dt, cfg.unit().ftm2v);
    }
    Kokkos::fence();
    t_integrate.push_back(comm.max(seconds(t0)) / calls);

    comm.barrier();
    t0 = Clock::now();
    for (int k = 0; k < bw_calls; ++k) bench_halo_update_kernel(ba, bb, 1e-3);
    Kokkos::fence();
    const double mine = 24.0 * static_cast<double>(elements) * bw_calls / seconds(t0);  // bytes/s of this rank
    bandwidth.push_back(comm.sum(mine));
    floor_integrate.push_back(comm.max(k_integrate_bytes_per_atom * atoms.nlocal / mine));
    floor_halo.push_back(comm.max(k_halo_bytes_per_ghost * atoms.nghost / mine));
  }

  if (comm.is_root()) {
    std::printf("# bench_halo: %d ranks, %lld atoms (cells %dx%dx%d), Kokkos %s; median of %d repetitions of %d calls\n",
                comm.size(), static_cast<long long>(natoms), o.cells[0], o.cells[1], o.cells[2],
                Kokkos::DefaultExecutionSpace::name(), o.reps, calls);
    std::printf("# ghosts: %lld in all, %lld on the busiest rank; %.0f bytes through the transport per update\n",
                static_cast<long long>(ghosts_total), ghosts_max, transport_bytes);
    std::printf("# %-12s %14s %14s %8s\n", "quantity", "median [s]", "floor [s]", "ratio");
    std::printf("  %-12s %14.6g %14.6g %8.3f\n", "halo", median(t_halo), median(floor_halo),
                median(t_halo) / median(floor_halo));
    std::printf("  %-12s %14.6g %14.6g %8.3f\n", "integrate", median(t_integrate), median(floor_integrate),
                median(t_integrate) / median(floor_integrate));
    std::printf("# bandwidth: %.4g GB/s (all ranks, a(i) += s b(i), %.0f MiB per array per rank)\n",
                median(bandwidth) / 1e9, o.bandwidth_mib);
    if (o.samples) {
      std::printf("SAMPLES {\"quantity\":\"halo_update_s\",\"atoms\":%lld,\"ranks\":%d,\"ghosts\":%lld,\"values\":%s}\n",
                  static_cast<long long>(natoms), comm.size(), static_cast<long long>(ghosts_total),
                  json_array(t_halo).c_str());
      std::printf("SAMPLES {\"quantity\":\"halo_floor_s\",\"atoms\":%lld,\"ranks\":%d,\"values\":%s}\n",
                  static_cast<long long>(natoms), comm.size(), json_array(floor_halo).c_str());
      std::printf("SAMPLES {\"quantity\":\"integrate_s\",\"atoms\":%lld,\"ranks\":%d,\"values\":%s}\n",
                  static_cast<long long>(natoms), comm.size(), json_array(t_integrate).c_str());
      std::printf("SAMPLES {\"quantity\":\"integrate_floor_s\",\"atoms\":%lld,\"ranks\":%d,\"bytes_per_atom\":%.0f,\"values\":%s}\n",
                  static_cast<long long>(natoms), comm.size(), k_integrate_bytes_per_atom, json_array(floor_integrate).c_str());
      std::vector<double> gbps;
      for (double b : bandwidth) gbps.push_back(b / 1e9);
      std::printf("SAMPLES {\"quantity\":\"bandwidth_GBps\",\"atoms\":%lld,\"ranks\":%d,\"values\":%s}\n",
                  static_cast<long long>(natoms), comm.size(), json_array(gbps).c_str());
    }
    if (!ok) std::printf("ERROR: the bench's halo or integrate step disagrees with the solver's (see bench/bench_halo.cpp)\n");
    std::fflush(stdout);
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Kokkos::initialize(argc, argv);
  int code = 0;
  {
    comm::Communicator comm(MPI_COMM_WORLD);
    try {
      code = bench(comm, parse(argc, argv));
    } catch (const CollectiveError& e) {
      if (comm.is_root()) std::fprintf(stderr, "ERROR: %s\n", e.what());
      code = e.exit_code();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ERROR on rank %d: %s\n", comm.rank(), e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, k_exit_failure);
    }
  }
  Kokkos::finalize();
  MPI_Finalize();
  return code;
}
