// Checkpoint state of the fluid solver. The state is the spectral velocity; a checkpoint holds it
// decomposition-independently as x-plane blocks (io::block_of over the ranks):
//   /fluid/uhat  rows kx = 0..nx-1, row shape {ny, nz/2 + 1, 3, 2}: Fourier coefficients (re, im) of the
//                half spectrum, restored bit for bit on any rank count and decomposition;
//   /fluid/u     rows x = 0..nx-1, row shape {ny, nz, 3}: the physical velocity, the inverse transform of
//                /fluid/uhat (for readers, and for restarts from a file without /fluid/uhat, which are then
//                exact to round-off only). restore() checks it against /fluid/uhat when both are there.
// Moving the spectral coefficients is pure data movement, so a restart at the same rank count continues
// bit-identically.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "fluid_solver.hpp"

namespace spotrun::fluid {
namespace {

// How far /fluid/u may lie from the inverse transform of /fluid/uhat, relative to the largest |u|: the
// round-off of transforms on other rank counts and FFT libraries is about 1e-15 of it.
constexpr double k_u_uhat_tolerance = 1e-9;


}  // namespace

PlaneBlock FluidSolver::velocity_planes(std::vector<double> memory) {
  const auto& g = m_fft->geometry();
  const int P = m_comm.size(), r = m_comm.rank();
  if (!m_real_to_planes)
    m_real_to_planes = std::make_unique<fft::Reshape<double>>(
        fft::make_reshape_plan(g.real, fft::x_block_layouts(g.n, P), r), m_transport, "fluid::reshape_planes");
  const fft::Layout3 out = fft::x_block_layout(g.n, P, r);
  const std::size_t count = out.count();
  fft::RealView buf(Kokkos::view_alloc("fluid::planes", Kokkos::WithoutInitializing), count);
  PlaneBlock b;
  b.first_row = static_cast<std::uint64_t>(out.box.lo[0]);
  b.rows = static_cast<std::uint64_t>(out.box.extent(0));
  b.values = std::move(memory);
  io::resize_for_overwrite(b.values, count * 3);
  backward3(m_uhat, m_u);
  for (int c = 0; c < 3; ++c) {
    m_real_to_planes->execute(row(m_u, c), buf.data());
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), buf);
    for (std::size_t p = 0; p < count; ++p) b.values[3 * p + c] = host(p);
  }
  return b;
}

PlaneBlock FluidSolver::spectral_planes(std::vector<double> memory) {
  const auto& g = m_fft->geometry();
  const int P = m_comm.size(), r = m_comm.rank();
  if (!m_spectral_to_planes)
    m_spectral_to_planes = std::make_unique<fft::Reshape<fft::Complex>>(
        fft::make_reshape_plan(g.spectral, fft::x_block_layouts(g.nc, P), r), m_transport, "fluid::reshape_spectral_planes");
  const fft::Layout3 out = fft::x_block_layout(g.nc, P, r);
  const std::size_t count = out.count();
  fft::ComplexView buf(Kokkos::view_alloc("fluid::spectral_planes", Kokkos::WithoutInitializing), count);
  PlaneBlock b;
  b.first_row = static_cast<std::uint64_t>(out.box.lo[0]);
  b.rows = static_cast<std::uint64_t>(out.box.extent(0));
  b.values = std::move(memory);
  io::resize_for_overwrite(b.values, count * 6);
  for (int c = 0; c < 3; ++c) {
    m_spectral_to_planes->execute(row(m_uhat, c), buf.data());
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), buf);
    for (std::size_t p = 0; p < count; ++p) {
      b.values[6 * p + 2 * c] = host(p).real();
      b.values[6 * p + 2 * c + 1] = host(p).imag();
    }
  }
  return b;
}

std::vector<io::StateArray> FluidSolver::state_layout() const {
  const auto& n = m_cfg.n;
  const auto nx = static_cast<std::uint64_t>(n[0]), ny = static_cast<std::uint64_t>(n[1]),
             nz = static_cast<std::uint64_t>(n[2]);
  return {io::StateArray::layout("/fluid/u", {ny, nz, 3}, false, nx),
          io::StateArray::layout("/fluid/uhat", {ny, nz / 2 + 1, 3, 2}, false, nx)};
}

io::SolverState FluidSolver::state() { return state_reusing(io::SolverState{}); }

io::SolverState FluidSolver::state_reusing(io::SolverState&& spare) {
  io::SolverState st;
  st.solver = "fluid";
  st.arrays = state_layout();
  // The planes go into the memory of the spare's arrays: a large grid's snapshot otherwise spends much of
  // its time mapping and zeroing new pages.
  std::vector<double> memory[2];
  for (std::size_t k = 0; k < 2; ++k)
    if (k < spare.arrays.size() && spare.arrays[k].name == st.arrays[k].name) memory[k].swap(spare.arrays[k].f64);
  spare = io::SolverState{};
  PlaneBlock u = velocity_planes(std::move(memory[0]));
  PlaneBlock uh = spectral_planes(std::move(memory[1]));
  for (auto* pair : {&u, &uh}) {
    auto& a = st.arrays[pair == &u ? 0 : 1];
    a.first_row = pair->first_row;
    a.rows = pair->rows;
    a.f64 = std::move(pair->values);
  }
  st.integers["step"] = m_step;
  st.reals["time"] = m_time;
  st.reals["dt"] = m_dt;
  st.reals["fluid.energy_ref"] = m_energy_ref;
  st.integers["fluid.nx"] = m_cfg.n[0];
  st.integers["fluid.ny"] = m_cfg.n[1];
  st.integers["fluid.nz"] = m_cfg.n[2];
  return st;
}

namespace {

// The scalars of a fluid checkpoint, checked against the deck's grid; `bad` says what is wrong (the caller
// agrees on it across ranks).
struct RestoredScalars {
  std::int64_t step = 0;
  double time = 0, dt = 0, energy_ref = 0;
};
RestoredScalars restored_scalars(const io::SolverState& st, const std::array<int, 3>& n, std::string& bad) {
  RestoredScalars r;
  try {
    if (!st.solver.empty() && st.solver != "fluid")
      throw InputError("checkpoint was written by solver '" + st.solver + "', not 'fluid'");
    const std::array<std::int64_t, 3> cn{st.require_integer("fluid.nx"), st.require_integer("fluid.ny"),
                                         st.require_integer("fluid.nz")};
    for (int d = 0; d < 3; ++d)
      if (cn[d] != n[d])
        throw InputError("checkpoint grid is [" + std::to_string(cn[0]) + ", " + std::to_string(cn[1]) + ", " +
                         std::to_string(cn[2]) + "], the deck's fluid.n is [" + std::to_string(n[0]) + ", " +
                         std::to_string(n[1]) + ", " + std::to_string(n[2]) + "]");
    r.step = st.require_integer("step");
    r.time = st.require_real("time");
    r.dt = st.require_real("dt");
    r.energy_ref = st.require_real("fluid.energy_ref");
    if (r.step < 0) throw InputError("checkpoint step " + std::to_string(r.step) + " is negative");
    if (!std::isfinite(r.time) || r.time < 0) throw InputError("checkpoint time " + exact(r.time) + " is not finite and >= 0");
    if (!(std::isfinite(r.dt) && r.dt > 0)) throw InputError("checkpoint dt " + exact(r.dt) + " is not finite and > 0");
    if (!(std::isfinite(r.energy_ref) && r.energy_ref >= 0))
      throw InputError("checkpoint fluid.energy_ref " + exact(r.energy_ref) + " is not finite and >= 0");
  } catch (const InputError& e) {
    bad = e.what();
  }
  return r;
}

// The first non-finite value of this rank's x-planes of a velocity dataset, named by its place, or "".
std::string first_non_finite(const io::StateArray& a, bool spectral, std::uint64_t nz, std::uint64_t nzc) {
  const std::uint64_t per_row = a.row_size(), per_point = spectral ? 6 : 3;
  for (std::size_t v = 0; v < a.f64.size(); ++v) {
    if (std::isfinite(a.f64[v])) continue;
    const std::uint64_t row = a.first_row + v / per_row, point = (v % per_row) / per_point;
    const std::uint64_t nzr = spectral ? nzc : nz;
    return "checkpoint dataset " + a.name + " has the non-finite value " + exact(a.f64[v]) + " at " +
           (spectral ? "kx = " : "x = ") + std::to_string(row) + (spectral ? ", ky = " : ", y = ") +
           std::to_string(point / nzr) + (spectral ? ", kz = " : ", z = ") + std::to_string(point % nzr) +
           ", component " + std::to_string((v % per_point) / (spectral ? 2 : 1));
  }
  return "";
}

}  // namespace

void FluidSolver::restore(const io::SolverState& st) {
  // Every verdict is agreed by all ranks before the next collective, and the field values are checked
  // before they are moved: a damaged or crafted checkpoint ends in an InputError on every rank.
  // 1. Scalars (the same on every rank).
  std::string bad;
  const RestoredScalars sc = restored_scalars(st, m_cfg.n, bad);
  m_comm.agree<InputError>(bad.empty(), bad);

  const auto& g = m_fft->geometry();
  const int P = m_comm.size(), r = m_comm.rank();
  const io::StateArray* uh = st.find("/fluid/uhat");
  const io::StateArray* u = st.find("/fluid/u");
  // Shapes and row blocks differ between ranks only if the reader is broken; check collectively anyway.
  auto block_ok = [&](const io::StateArray* a, const std::array<int, 3>& n, std::uint64_t row_size) {
    if (!a) return true;
    const fft::Layout3 l = fft::x_block_layout(n, P, r);
    return a->global_rows == static_cast<std::uint64_t>(n[0]) && a->first_row == static_cast<std::uint64_t>(l.box.lo[0]) &&
           a->rows == static_cast<std::uint64_t>(l.box.extent(0)) && a->row_size() == row_size &&
           a->f64.size() == a->rows * row_size;
  };
  const auto ny = static_cast<std::uint64_t>(g.n[1]), nz = static_cast<std::uint64_t>(g.n[2]),
             nzc = static_cast<std::uint64_t>(g.nc[2]);
  bool ok = (uh || u) && block_ok(uh, g.nc, ny * nzc * 6) && block_ok(u, g.n, ny * nz * 3);
  m_comm.agree<InputError>(ok, "checkpoint datasets /fluid/uhat and /fluid/u are missing or do not match the grid "
                               "and this rank's block of x-planes");
  const bool use_spectral = !m_comm.any(uh == nullptr);
  m_comm.agree<InputError>(use_spectral || u != nullptr, "checkpoint has neither /fluid/uhat nor /fluid/u on every rank");
  // 2. Every value of this rank's x-planes finite (both datasets when both are there).
  for (const io::StateArray* a : {uh, u})
    if (a && bad.empty()) bad = first_non_finite(*a, a == uh, nz, nzc);
  m_comm.agree<InputError>(bad.empty(), bad);

  if (use_spectral) {
    if (!m_planes_to_spectral)
      m_planes_to_spectral = std::make_unique<fft::Reshape<fft::Complex>>(
          fft::make_reshape_plan(fft::x_block_layouts(g.nc, P), g.spectral, r), m_transport,
          "fluid::reshape_planes_spectral");
    const std::size_t count = uh->rows * ny * nzc;
    fft::ComplexView buf("fluid::restore_planes", count);
    auto host = Kokkos::create_mirror_view(buf);
    for (int c = 0; c < 3; ++c) {
      for (std::size_t p = 0; p < count; ++p) host(p) = fft::Complex(uh->f64[6 * p + 2 * c], uh->f64[6 * p + 2 * c + 1]);
      Kokkos::deep_copy(buf, host);
      m_planes_to_spectral->execute(buf.data(), row(m_uhat, c));
    }
    zero_dropped_modes(m_uhat);  // zero already in a checkpoint spotrun wrote
    // 3. /fluid/u, when there, is the inverse transform of /fluid/uhat (state() writes both from the same
    // spectrum): a file whose two velocities disagree is refused, not restored from one of them.
    if (!m_comm.any(u == nullptr)) {
      const PlaneBlock back = velocity_planes();
      double umax = 0;
      for (double v : back.values) umax = std::max(umax, std::abs(v));
      umax = m_comm.max(umax);
      const double tol = k_u_uhat_tolerance * umax;
      for (std::size_t v = 0; v < back.values.size() && bad.empty(); ++v) {
        if (std::abs(u->f64[v] - back.values[v]) <= tol) continue;
        const std::uint64_t point = v / 3;
        bad = "checkpoint dataset /fluid/u does not match /fluid/uhat: at x = " +
              std::to_string(u->first_row + point / (ny * nz)) + ", y = " + std::to_string((point / nz) % ny) +
              ", z = " + std::to_string(point % nz) + ", component " + std::to_string(v % 3) + " it holds " +
              exact(u->f64[v]) + ", the inverse transform of /fluid/uhat gives " + exact(back.values[v]) +
              " (allowed difference " + exact(tol) + ")";
      }
      m_comm.agree<InputError>(bad.empty(), bad);
    }
  } else {
    // Physical velocity only: transform (exact to round-off, not bit for bit).
    fft::Reshape<double> to_real(fft::make_reshape_plan(fft::x_block_layouts(g.n, P), g.real, r), m_transport,
                                 "fluid::reshape_planes_real");
    const std::size_t count = u->rows * ny * nz;
    fft::RealView buf("fluid::restore_planes", count);
    auto host = Kokkos::create_mirror_view(buf);
    for (int c = 0; c < 3; ++c) {
      for (std::size_t p = 0; p < count; ++p) host(p) = u->f64[3 * p + c];
      Kokkos::deep_copy(buf, host);
      to_real.execute(buf.data(), row(m_u, c));
    }
    to_spectral(m_u, m_uhat);
  }
  m_step = sc.step;
  m_time = sc.time;
  m_dt = sc.dt;
  m_energy_ref = sc.energy_ref;
  m_restored = true;
  m_setup_done = false;
}

}  // namespace spotrun::fluid
