// Fluid solver benchmark and deck driver.
//
//   bench_fluid [--sizes 64,128] [--steps ROUNDS] [--decomposition auto|slab|pencil] [--fft-plan estimate|measure]
//               [--fft-only] [--pppm-mesh] [--samples]
//     Time per RK4 step of the Taylor-Green vortex at each n^3 on the run's ranks, beside the FFT floor
//     measured in the same run: 36 distributed FFTs per step (4 stages x (6 inverse + 3 forward)) times
//     the time of one unpruned distributed FFTW transform (r2c or c2r, with its transposes, of the whole
//     spectrum; the solver's own transforms are pruned to the dealiased band) of the same size on the
//     same ranks. Prints their ratio (target <= 1.3), the local FFT launches of one step (the cuFFT calls
//     its plans make, fft::FftTimes::launches, counted on any backend: the pruned transforms' grouping,
//     fft::PlanGrouping) and checks the transform's round-trip error (ERROR and exit 1 when above 1e-12).
//     A size is n (an n^3 grid) or NXxNYxNZ (64x64x128).
//
//     --fft-only: no fluid step; times spotrun's distributed transform alone (the fluid solver's
//     fft::DistributedFft: local FFTW transforms and spotrun's transposes) beside raw FFTW of the same
//     grid on the same ranks: fftw_mpi_plan_dft_r2c_3d / c2r_3d (slabs, FFTW_MPI_TRANSPOSED_OUT / _IN:
//     one transpose per transform, as spotrun's slabs), the same planning rigor, out of place. Seconds
//     per transform (a forward and a backward per pair, pair time / 2), the ratio spotrun / raw, and both
//     round-trip errors. Raw FFTW needs FFTW's MPI library (Debian: libfftw3-mpi-dev) at build time and
//     host memory (n/a on a GPU build).
//
//     --pppm-mesh: no fluid step; each size is a PPPM mesh, and a round times the distributed transforms
//     spotrun's PPPM makes per step (solvers/md/kspace/pppm.cpp, Pppm::compute): one forward real-to-complex
//     transform of the charge density and the gradient of the potential (DistributedFft::backward_gradient:
//     the three ik field components), on the FFT PPPM builds (the same geometry, decomposition auto, batching
//     of 3 at padded distances, FFTW plans estimate, the run's ranks). Energy steps make no other transform.
//     Seconds per step (the floor of bench/suite.py's charged suite, charged.fft_floor); SAMPLES quantity
//     pppm_gradient_s. Beside it, in the same rounds (alternating), the forward transform and one batched
//     backward call of three complex-to-real transforms, the field made component by component (the floor's
//     reference, charged.fft_three_c2r): SAMPLES quantity pppm_fft_s.
//
//     --samples: after each size, lines "SAMPLES {json}" with the time of every round (bench/suite.py).
//
//     --fft-batch auto|fields|none: the solver's fluid.fft_batch (default auto, as in a deck); the floor
//     stays one field per transform.
//
//   bench_fluid --run DECK.toml [--set section.key=value ...] [--output-dir DIR]
//     Runs a fluid deck ([run] steps, thermo_every; [fluid] ...) the way `spotrun run` will once the
//     launcher makes the fluid solver: thermo rows to stdout and DIR/thermo.csv, spectra and fields via
//     the solver's output hook. Used by bench/tgv_validation.sh.
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/errors.hpp"
#include "comm/transport.hpp"
#include "io/thermo_writer.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/fluid/fluid_registration.hpp"
#include "solvers/fluid/fluid_solver.hpp"

#ifdef SPOTRUN_HAVE_FFTW_MPI
#include <fftw3-mpi.h>
#endif

namespace {

using namespace spotrun;
using Clock = std::chrono::steady_clock;

constexpr int k_ffts_per_step = 36;

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

using Grid = std::array<int, 3>;

std::string grid_name(const Grid& n) {
  if (n[0] == n[1] && n[1] == n[2]) return std::to_string(n[0]);
  return std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]);
}

std::string json_array(const std::vector<double>& v) {
  std::ostringstream s;
  s.precision(9);
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  s << "]";
  return s.str();
}

// "SAMPLES {...}" on rank 0: every round's value of one quantity at one size.
void print_samples(const comm::Communicator& comm, const char* quantity, const Grid& n, const std::vector<double>& v) {
  if (!comm.is_root()) return;
  std::printf("SAMPLES {\"quantity\":\"%s\",\"grid\":[%d,%d,%d],\"ranks\":%d,\"values\":%s}\n", quantity, n[0], n[1],
              n[2], comm.size(), json_array(v).c_str());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct BenchResult {
  Grid n{0, 0, 0};
  std::string decomposition;
  double step = 0;      // s per step
  double fft = 0;       // s per distributed transform
  double fft_in_step = 0;  // s per step inside the solver's FFTs
  double step_median = 0, fft_median = 0;
  double round_trip = 0;
  long long launches = 0;  // local FFT launches (cuFFT calls) of one solver step, the most of any rank
  std::vector<double> step_samples, fft_samples;  // per round: s per step, s per transform
};

// --fft-batch: the solver's fluid.fft_batch.
fluid::FftBatch g_fft_batch = fluid::FftBatch::Auto;

BenchResult bench_size(const comm::Communicator& comm, const Grid& n, int steps, fft::Decomposition kind, fft::PlanRigor plan) {
  auto transport = comm::make_transport("auto", comm);
  fluid::FluidConfig cfg;
  cfg.n = n;
  cfg.viscosity = 1.0 / 1600;
  cfg.dt = 0.1 * 6.283185307179586 / *std::max_element(n.begin(), n.end());  // CFL about 0.2 for |u| + |v| <= 2
  cfg.decomposition = kind;
  cfg.fft_plan = plan;
  cfg.fft_batch = g_fft_batch;
  fluid::FluidSolver solver(cfg, comm, *transport);
  solver.setup();
  solver.step(false);  // warm-up
  BenchResult r;
  r.n = n;
  r.decomposition = solver.fft().geometry().describe();

  // The floor: the unpruned transform of the same grid, made as the solver makes its own.
  const auto floor_fft = fluid::make_fluid_fft(cfg, solver.fft().geometry(), comm, *transport, false);
  auto& f = *floor_fft;
  auto& fs = solver.fft();
  fft::RealView x("bench::x", f.real_size()), y("bench::y", f.real_size());
  fft::ComplexView X("bench::X", f.complex_size());
  auto hx = Kokkos::create_mirror_view(x);
  for (std::size_t p = 0; p < f.real_size(); ++p) hx(p) = std::sin(0.001 * static_cast<double>(p) + comm.rank());
  Kokkos::deep_copy(x, hx);
  f.forward(x.data(), X.data());
  f.backward(X.data(), y.data());

  // Rounds of one step and then the floor (18 forward + 18 inverse transforms of the same size on the
  // same ranks), each timed as the slowest rank; the minimum over rounds is the estimate least
  // disturbed by other load on the machine, the median is printed beside it.
  std::vector<double> step_times, fft_times, fft_in_step;
  for (int round = 0; round < steps; ++round) {
    const double fft_before = fs.times().local + fs.times().reshape;
    const long long launches_before = fs.times().launches;
    comm.barrier();
    auto t0 = Clock::now();
    solver.step(false);
    Kokkos::fence();
    step_times.push_back(comm.max(seconds(t0)));
    fft_in_step.push_back(comm.max(fs.times().local + fs.times().reshape - fft_before));
    r.launches = comm.max(static_cast<std::int64_t>(fs.times().launches - launches_before));
    comm.barrier();
    t0 = Clock::now();
    for (int i = 0; i < k_ffts_per_step / 2; ++i) {
      f.forward(x.data(), X.data());
      f.backward(X.data(), y.data());
    }
    Kokkos::fence();
    fft_times.push_back(comm.max(seconds(t0)) / k_ffts_per_step);
  }
  r.step_samples = step_times;
  r.fft_samples = fft_times;
  r.step = *std::min_element(step_times.begin(), step_times.end());
  r.fft = *std::min_element(fft_times.begin(), fft_times.end());
  r.fft_in_step = *std::min_element(fft_in_step.begin(), fft_in_step.end());
  r.step_median = median(step_times);
  r.fft_median = median(fft_times);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  double err = 0;
  for (std::size_t p = 0; p < f.real_size(); ++p) err = std::max(err, std::abs(hy(p) * f.scale() - hx(p)));
  r.round_trip = comm.max(err);
  return r;
}

int bench(const comm::Communicator& comm, const std::vector<Grid>& sizes, int steps, fft::Decomposition kind,
          fft::PlanRigor plan, bool samples) {
  bool ok = true;
  if (comm.is_root()) {
    std::printf("fluid step vs FFT floor (%d FFTs per step), %d ranks, Kokkos %s, FFTW plans: %s\n", k_ffts_per_step,
                comm.size(), Kokkos::DefaultExecutionSpace::name(), fft::to_string(plan).c_str());
    std::printf("minimum over %d rounds (median in parentheses)\n", steps);
    std::printf("%6s %-16s %12s %12s %12s %12s %7s %8s %9s %10s\n", "n", "decomposition", "step [s]", "FFT [s]",
                "floor [s]", "FFT in step", "ratio", "(median)", "launches", "roundtrip");
  }
  for (const Grid& n : sizes) {
    const BenchResult r = bench_size(comm, n, steps, kind, plan);
    const double floor = k_ffts_per_step * r.fft;
    const bool good = r.round_trip < 1e-12;
    ok = ok && good;
    if (comm.is_root()) {
      std::printf("%6s %-16s %12.5g %12.5g %12.5g %12.5g %7.3f %8.3f %9lld %10.3g%s\n", grid_name(n).c_str(),
                  r.decomposition.c_str(), r.step, r.fft, floor, r.fft_in_step, r.step / floor,
                  r.step_median / (k_ffts_per_step * r.fft_median), r.launches, r.round_trip,
                  good ? "" : "  ERROR: round trip");
      std::fflush(stdout);
    }
    if (samples) {
      std::vector<double> floors;
      for (double t : r.fft_samples) floors.push_back(k_ffts_per_step * t);
      print_samples(comm, "step_s", n, r.step_samples);
      print_samples(comm, "fft_floor_s", n, floors);
      if (comm.is_root()) std::fflush(stdout);
    }
  }
  return ok ? 0 : 1;
}

#ifdef SPOTRUN_HAVE_FFTW_MPI
// Raw FFTW of an n[0] x n[1] x n[2] real grid over the communicator: slabs of x-planes, r2c with the
// output transposed (y distributed), c2r from that transposed layout; out of place, planned arrays.
class RawFftwMpi {
 public:
  RawFftwMpi(const comm::Communicator& comm, const Grid& n, fft::PlanRigor rigor) : m_n(n) {
    const ptrdiff_t n0 = n[0], n1 = n[1], n2c = n[2] / 2 + 1;
    ptrdiff_t local_n1 = 0, local_1_start = 0;
    const ptrdiff_t alloc =
        fftw_mpi_local_size_3d_transposed(n0, n1, n2c, comm.mpi(), &m_local_n0, &m_local_0_start, &local_n1, &local_1_start);
    m_in = fftw_alloc_real(2 * alloc);
    m_out = fftw_alloc_real(2 * alloc);
    m_spectrum = fftw_alloc_complex(alloc);
    if (!m_in || !m_out || !m_spectrum) throw RunError("raw FFTW: fftw_alloc failed");
    const unsigned flags = rigor == fft::PlanRigor::Measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    m_forward = fftw_mpi_plan_dft_r2c_3d(n0, n1, n[2], m_in, m_spectrum, comm.mpi(), flags | FFTW_MPI_TRANSPOSED_OUT);
    m_backward = fftw_mpi_plan_dft_c2r_3d(n0, n1, n[2], m_spectrum, m_out, comm.mpi(), flags | FFTW_MPI_TRANSPOSED_IN);
    if (!m_forward || !m_backward) throw RunError("raw FFTW: fftw_mpi_plan_dft_r2c_3d / c2r_3d failed");
    // Padded real layout: rows of 2 (n2 / 2 + 1) values, the first n2 used.
    for (ptrdiff_t i = 0; i < m_local_n0; ++i)
      for (ptrdiff_t j = 0; j < n1; ++j)
        for (ptrdiff_t k = 0; k < 2 * n2c; ++k)
          m_in[(i * n1 + j) * 2 * n2c + k] = k < n[2] ? std::sin(0.001 * static_cast<double>((i + m_local_0_start) * n1 * n[2] + j * n[2] + k)) : 0.0;
  }
  ~RawFftwMpi() {
    fftw_destroy_plan(m_forward);
    fftw_destroy_plan(m_backward);
    fftw_free(m_in);
    fftw_free(m_out);
    fftw_free(m_spectrum);
  }
  RawFftwMpi(const RawFftwMpi&) = delete;
  RawFftwMpi& operator=(const RawFftwMpi&) = delete;

  void pair() {
    fftw_execute(m_forward);
    fftw_execute(m_backward);
  }
  // Largest |backward(forward(x)) / N - x| on this rank, after pair().
  double round_trip_error() const {
    const ptrdiff_t n1 = m_n[1], n2c = m_n[2] / 2 + 1;
    const double scale = 1.0 / (static_cast<double>(m_n[0]) * m_n[1] * m_n[2]);
    double err = 0;
    for (ptrdiff_t i = 0; i < m_local_n0; ++i)
      for (ptrdiff_t j = 0; j < n1; ++j)
        for (ptrdiff_t k = 0; k < m_n[2]; ++k) {
          const ptrdiff_t p = (i * n1 + j) * 2 * n2c + k;
          err = std::max(err, std::abs(m_out[p] * scale - m_in[p]));
        }
    return err;
  }

 private:
  Grid m_n;
  ptrdiff_t m_local_n0 = 0, m_local_0_start = 0;
  double* m_in = nullptr;
  double* m_out = nullptr;
  fftw_complex* m_spectrum = nullptr;
  fftw_plan m_forward = nullptr, m_backward = nullptr;
};
#endif

// spotrun's distributed transform alone beside raw FFTW (see the comment at the top).
int bench_fft_only(const comm::Communicator& comm, const std::vector<Grid>& sizes, int rounds, fft::Decomposition kind,
                   fft::PlanRigor plan, bool samples) {
  bool ok = true;
  if (comm.is_root()) {
    std::printf("distributed FFT alone vs raw FFTW, %d ranks, Kokkos %s, FFTW plans: %s\n", comm.size(),
                Kokkos::DefaultExecutionSpace::name(), fft::to_string(plan).c_str());
    std::printf("median over %d rounds of %d transforms, seconds per transform\n", rounds, k_ffts_per_step);
    std::printf("%6s %-16s %12s %12s %7s %10s %10s\n", "n", "decomposition", "spotrun [s]", "raw FFTW [s]", "ratio",
                "roundtrip", "raw rt");
  }
  for (const Grid& n : sizes) {
    auto transport = comm::make_transport("auto", comm);
    fluid::FluidConfig cfg;
    cfg.n = n;
    cfg.decomposition = kind;
    cfg.fft_plan = plan;
    // The fluid solver's transform, made as the solver makes it, unpruned (raw FFTW transforms every row).
    const auto geometry = fft::make_fft_geometry(n, comm.size(), kind);
    const auto made = fluid::make_fluid_fft(cfg, geometry, comm, *transport, false);
    auto& f = *made;
    fft::RealView x("bench::x", f.real_size()), y("bench::y", f.real_size());
    fft::ComplexView X("bench::X", f.complex_size());
    auto hx = Kokkos::create_mirror_view(x);
    for (std::size_t p = 0; p < f.real_size(); ++p) hx(p) = std::sin(0.001 * static_cast<double>(p) + comm.rank());
    Kokkos::deep_copy(x, hx);
    f.forward(x.data(), X.data());
    f.backward(X.data(), y.data());
#ifdef SPOTRUN_HAVE_FFTW_MPI
    std::unique_ptr<RawFftwMpi> raw;
    if (f.backend_name() == "fftw") {  // raw FFTW runs on the host: no comparison on a GPU build
      raw = std::make_unique<RawFftwMpi>(comm, n, plan);
      raw->pair();
    }
#endif
    std::vector<double> t_spotrun, t_raw;
    for (int round = 0; round < rounds; ++round) {
      comm.barrier();
      auto t0 = Clock::now();
      for (int i = 0; i < k_ffts_per_step / 2; ++i) {
        f.forward(x.data(), X.data());
        f.backward(X.data(), y.data());
      }
      Kokkos::fence();
      t_spotrun.push_back(comm.max(seconds(t0)) / k_ffts_per_step);
#ifdef SPOTRUN_HAVE_FFTW_MPI
      if (raw) {
        comm.barrier();
        t0 = Clock::now();
        for (int i = 0; i < k_ffts_per_step / 2; ++i) raw->pair();
        t_raw.push_back(comm.max(seconds(t0)) / k_ffts_per_step);
      }
#endif
    }
    auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
    double err = 0;
    for (std::size_t p = 0; p < f.real_size(); ++p) err = std::max(err, std::abs(hy(p) * f.scale() - hx(p)));
    err = comm.max(err);
    double raw_err = 0;
#ifdef SPOTRUN_HAVE_FFTW_MPI
    if (raw) raw_err = comm.max(raw->round_trip_error());
#endif
    const bool good = err < 1e-12 && raw_err < 1e-12;
    ok = ok && good;
    if (comm.is_root()) {
      const double s = median(t_spotrun);
      if (t_raw.empty())
        std::printf("%6s %-16s %12.5g %12s %7s %10.3g %10s%s\n", grid_name(n).c_str(),
                    f.geometry().describe().c_str(), s, "n/a", "n/a", err, "n/a", good ? "" : "  ERROR: round trip");
      else
        std::printf("%6s %-16s %12.5g %12.5g %7.3f %10.3g %10.3g%s\n", grid_name(n).c_str(),
                    f.geometry().describe().c_str(), s, median(t_raw), s / median(t_raw), err, raw_err,
                    good ? "" : "  ERROR: round trip");
      std::fflush(stdout);
    }
    if (samples) {
      print_samples(comm, "fft_s", n, t_spotrun);
      if (!t_raw.empty()) print_samples(comm, "fftw_raw_s", n, t_raw);
      if (comm.is_root()) std::fflush(stdout);
    }
  }
  return ok ? 0 : 1;
}

// The transforms of one PPPM step alone (see --pppm-mesh at the top).
int bench_pppm_mesh(const comm::Communicator& comm, const std::vector<Grid>& sizes, int rounds, bool samples) {
  constexpr int k_steps_per_round = 10;
  if (comm.is_root()) {
    std::printf("PPPM transforms alone, %d ranks, Kokkos %s: 1 r2c + 3 c2r per step (floor), and 1 r2c + the\n"
                "gradient (backward_gradient, what PPPM runs)\n",
                comm.size(), Kokkos::DefaultExecutionSpace::name());
    std::printf("median over %d rounds of %d steps of each, alternating, seconds per step\n", rounds,
                k_steps_per_round);
    std::printf("%14s %-16s %14s %14s\n", "mesh", "decomposition", "r2c+3 c2r [s]", "r2c+grad [s]");
  }
  for (const Grid& n : sizes) {
    auto transport = comm::make_transport("auto", comm);
    // As Pppm's constructor builds its transform.
    const auto geometry = fft::make_fft_geometry(n, comm.size(), fft::Decomposition::Auto, {0, 0});
    fft::FftBatching batching;
    batching.max_batch = 3;
    batching.real_distance = fft::padded_field(geometry.real[static_cast<std::size_t>(comm.rank())].count());
    batching.complex_distance = fft::padded_field(geometry.spectral[static_cast<std::size_t>(comm.rank())].count());
    fft::DistributedFft f(geometry, comm, *transport, fft::backend::Default{}, fft::PlanRigor::Estimate, std::nullopt,
                          batching);
    const std::size_t rs = batching.real_distance, cs = batching.complex_distance;
    fft::RealView density("bench::density", f.real_size()), fields("bench::fields", 3 * rs);
    fft::ComplexView rho_hat("bench::rho_hat", f.complex_size()), field_hat("bench::field_hat", 3 * cs);
    auto hd = Kokkos::create_mirror_view(density);
    for (std::size_t p = 0; p < f.real_size(); ++p) hd(p) = std::sin(0.001 * static_cast<double>(p) + comm.rank());
    Kokkos::deep_copy(density, hd);
    const fft::Complex* hats[3] = {field_hat.data(), field_hat.data() + cs, field_hat.data() + 2 * cs};
    double* reals[3] = {fields.data(), fields.data() + rs, fields.data() + 2 * rs};
    const std::array<double, 3> unit_k{1.0, 1.0, 1.0};
    auto three = [&]() {
      f.forward(density.data(), rho_hat.data());
      f.backward_many(3, hats, reals);
    };
    auto gradient = [&]() {
      f.forward(density.data(), rho_hat.data());
      f.backward_gradient(rho_hat.data(), field_hat.data(), reals, unit_k);
    };
    auto time_of = [&](const auto& step) {
      comm.barrier();
      const auto t0 = Clock::now();
      for (int i = 0; i < k_steps_per_round; ++i) step();
      Kokkos::fence();
      return comm.max(seconds(t0)) / k_steps_per_round;
    };
    three();  // warm up: plans, buffers
    gradient();
    std::vector<double> per_step, per_gradient;
    for (int round = 0; round < rounds; ++round) {
      per_step.push_back(time_of(three));
      per_gradient.push_back(time_of(gradient));
    }
    if (comm.is_root()) {
      std::printf("%14s %-16s %14.5g %14.5g\n", grid_name(n).c_str(), f.geometry().describe().c_str(), median(per_step),
                  median(per_gradient));
      std::fflush(stdout);
    }
    if (samples) {
      print_samples(comm, "pppm_fft_s", n, per_step);
      print_samples(comm, "pppm_gradient_s", n, per_gradient);
      if (comm.is_root()) std::fflush(stdout);
    }
  }
  return 0;
}

std::string read_file_on_root(const comm::Communicator& comm, const std::string& path) {
  std::string text, error;
  if (comm.is_root()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      error = "cannot read deck '" + path + "'";
    } else {
      std::ostringstream s;
      s << in.rdbuf();
      text = s.str();
    }
  }
  comm.agree<InputError>(error.empty(), error);
  return comm.broadcast(text);
}

int run_deck(const comm::Communicator& comm, const std::string& path, const std::vector<std::string>& sets,
             std::string outdir) {
  auto deck = launcher::Deck::parse(read_file_on_root(comm, path), path);
  for (const auto& s : sets) deck.apply_set(s);
  deck.validate();
  if (deck.get_string("run.solver") != "fluid") throw InputError(path + ": run.solver is not \"fluid\"");
  const fluid::FluidConfig cfg = fluid::config_from_deck(deck);
  const std::int64_t steps = deck.get_int("run.steps");
  const std::int64_t every = deck.get_int("run.thermo_every");
  if (outdir.empty()) outdir = (std::filesystem::path("runs") / std::filesystem::path(path).stem()).string();
  std::string error;
  if (comm.is_root()) {
    std::error_code ec;
    std::filesystem::create_directories(outdir, ec);
    if (ec) error = "cannot create '" + outdir + "': " + ec.message();
  }
  comm.agree<InputError>(error.empty(), error);

  auto transport = comm::make_transport("auto", comm);
  fluid::FluidSolver solver(cfg, comm, *transport);
  if (comm.is_root())
    for (const auto& w : solver.warnings()) std::printf("Warning: %s\n", w.c_str());
  io::ThermoWriter thermo(comm.is_root(), outdir + "/thermo.csv", solver.thermo_columns());
  solver.setup();
  thermo.write(solver.step_index(), solver.thermo());
  solver.write_outputs(outdir, solver.step_index());
  const auto t0 = Clock::now();
  while (solver.step_index() < steps && !solver.finished()) {
    const std::int64_t next = solver.step_index() + 1;
    solver.step(next % every == 0);
    if (next % every == 0 || next == steps || solver.finished()) thermo.write(solver.step_index(), solver.thermo());
    solver.write_outputs(outdir, solver.step_index());
  }
  Kokkos::fence();
  const double loop = comm.max(seconds(t0));
  const auto lines = solver.summary();
  if (comm.is_root()) {
    std::printf("Loop time: %.6g s on %d ranks for %lld steps\n", loop, comm.size(),
                static_cast<long long>(solver.step_index()));
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
  }
  return 0;
}

// "64,128" or "64x64x128,128": n (an n^3 grid) or NXxNYxNZ.
std::vector<Grid> parse_sizes(const std::string& text) {
  std::vector<Grid> out;
  std::stringstream s(text);
  std::string part;
  while (std::getline(s, part, ',')) {
    Grid g{0, 0, 0};
    std::stringstream dims(part);
    std::string d;
    int k = 0;
    while (std::getline(dims, d, 'x')) {
      if (k == 3) throw InputError("--sizes: '" + part + "' is neither n nor NXxNYxNZ");
      g[k++] = std::stoi(d);
    }
    if (k == 1) g = {g[0], g[0], g[0]};
    else if (k != 3) throw InputError("--sizes: '" + part + "' is neither n nor NXxNYxNZ");
    for (int v : g)
      if (v < 2) throw InputError("--sizes: '" + part + "': every size must be at least 2");
    out.push_back(g);
  }
  return out;
}

int dispatch(int argc, char** argv, const comm::Communicator& comm) {
  std::vector<Grid> sizes{{64, 64, 64}, {128, 128, 128}};
  int steps = 5;
  bool fft_only = false, pppm_mesh = false, samples = false;
  fft::Decomposition kind = fft::Decomposition::Auto;
  fft::PlanRigor plan = fft::PlanRigor::Estimate;
  std::string deck, outdir;
  std::vector<std::string> sets;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError("option " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--sizes") sizes = parse_sizes(value());
    else if (a == "--steps") steps = std::stoi(value());
    else if (a == "--decomposition") kind = fft::parse_decomposition(value());
    else if (a == "--fft-plan") plan = fft::parse_plan_rigor(value());
    else if (a == "--fft-batch") g_fft_batch = fluid::parse_fft_batch(value());
    else if (a == "--run") deck = value();
    else if (a == "--set") sets.push_back(value());
    else if (a == "--output-dir") outdir = value();
    else if (a == "--fft-only") fft_only = true;
    else if (a == "--pppm-mesh") pppm_mesh = true;
    else if (a == "--samples") samples = true;
    else throw InputError("unknown option '" + a + "' (see the comment at the top of bench/bench_fluid.cpp)");
  }
  if (!deck.empty()) return run_deck(comm, deck, sets, outdir);
  if (pppm_mesh) return bench_pppm_mesh(comm, sizes, steps, samples);
  if (fft_only) return bench_fft_only(comm, sizes, steps, kind, plan, samples);
  return bench(comm, sizes, steps, kind, plan, samples);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
#ifdef SPOTRUN_HAVE_FFTW_MPI
  fftw_mpi_init();
#endif
  Kokkos::initialize(argc, argv);
  int code = 0;
  {
    comm::Communicator comm(MPI_COMM_WORLD);
    try {
      code = dispatch(argc, argv, comm);
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
#ifdef SPOTRUN_HAVE_FFTW_MPI
  fftw_mpi_cleanup();
#endif
  MPI_Finalize();
  return code;
}
