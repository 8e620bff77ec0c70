#include "pppm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "solvers/fft/reshape_plan.hpp"
#include "stencil.hpp"
#include "tally.hpp"

namespace spotrun::md::kspace {

namespace impl {

// Global indices (kx, ky, kz) of point p of a rank's block stored in the order of its layout.
struct BlockDecode {
  int lo[3] = {0, 0, 0};
  long extent[3] = {0, 0, 0};
  int order[3] = {0, 1, 2};

  explicit BlockDecode(const fft::Layout3& l) {
    for (int d = 0; d < 3; ++d) {
      lo[d] = l.box.lo[d];
      extent[d] = l.box.extent(d);
      order[d] = l.order[d];
    }
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t p, int idx[3]) const {
    const long e1 = extent[order[1]], e2 = extent[order[2]];
    idx[order[2]] = lo[order[2]] + static_cast<int>(p % e2);
    idx[order[1]] = lo[order[1]] + static_cast<int>((p / e2) % e1);
    idx[order[0]] = lo[order[0]] + static_cast<int>(p / (e1 * e2));
  }
};

// The signed wavenumber of index i of an axis of n points: i for i < n/2, i - n from n/2 on (the Nyquist
// index n/2 of an even n is -n/2).
KOKKOS_INLINE_FUNCTION int signed_index(int i, int n) { return 2 * i < n ? i : i - n; }

// (sin x / x)^power.
KOKKOS_INLINE_FUNCTION double sinc_power(double x, int power) {
  if (x == 0.0) return 1.0;
  const double s = ::sin(x) / x;
  double r = 1.0;
  for (int k = 0; k < power; ++k) r *= s;
  return r;
}

// What the spectral kernels need of the mesh.
struct SpectralMesh {
  int n[3] = {0, 0, 0};
  double unit_k[3] = {0, 0, 0};  // 2 pi / L
  double h[3] = {0, 0, 0};
};

// The influence function optimal for ik differentiation (Hockney and Eastwood) on the rank's spectral box:
//   G(k) = 4 pi / k^2 sum_m (k.k_m / k_m^2) U^2(k_m) exp(-k_m^2 / (4 g^2)) / [sum_m U^2(k_m)]^2,
// k_m = k + 2 pi m / h, U(k) = prod_d sinc^order(k_d h_d / 2), the numerator's aliases |m_d| <= alias[d] and
// the denominator's sum in closed form (alias_sum_coefficients, b[0 .. order-1]). G(0) = 0.
// Not in the unnamed namespace: CUDA extended lambdas need an enclosing function with external linkage.
void influence_function(const fft::Layout3& layout, const SpectralMesh& mesh, double g, int order,
                        const std::array<double, k_max_order>& b, const std::array<int, 3>& alias,
                        const fft::RealView& green) {
  const BlockDecode decode(layout);
  const SpectralMesh m = mesh;
  const double inv_4g2 = 0.25 / (g * g);
  const int p = order;
  const double bc[k_max_order] = {b[0], b[1], b[2], b[3], b[4], b[5], b[6]};
  const int nb[3] = {alias[0], alias[1], alias[2]};
  Kokkos::parallel_for(
      "md::kspace::influence_function", fft::Policy(0, static_cast<std::int64_t>(layout.count())),
      KOKKOS_LAMBDA(const std::int64_t pt) {
        int idx[3];
        decode(pt, idx);
        int kper[3];
        double kv[3];
        double ksq = 0, denom = 1;
        for (int d = 0; d < 3; ++d) {
          kper[d] = signed_index(idx[d], m.n[d]);
          kv[d] = m.unit_k[d] * kper[d];
          ksq += kv[d] * kv[d];
          const double s = ::sin(0.5 * kv[d] * m.h[d]);
          const double x = s * s;
          double poly = 0;
          for (int l = p - 1; l >= 0; --l) poly = bc[l] + poly * x;
          denom *= poly;
        }
        if (ksq == 0.0) {
          green(pt) = 0.0;
          return;
        }
        denom *= denom;
        double sum = 0;
        for (int mx = -nb[0]; mx <= nb[0]; ++mx) {
          const double qx = m.unit_k[0] * (kper[0] + m.n[0] * mx);
          const double fx = ::exp(-inv_4g2 * qx * qx) * sinc_power(0.5 * qx * m.h[0], 2 * p);
          for (int my = -nb[1]; my <= nb[1]; ++my) {
            const double qy = m.unit_k[1] * (kper[1] + m.n[1] * my);
            const double fy = ::exp(-inv_4g2 * qy * qy) * sinc_power(0.5 * qy * m.h[1], 2 * p);
            for (int mz = -nb[2]; mz <= nb[2]; ++mz) {
              const double qz = m.unit_k[2] * (kper[2] + m.n[2] * mz);
              const double fz = ::exp(-inv_4g2 * qz * qz) * sinc_power(0.5 * qz * m.h[2], 2 * p);
              const double dot = kv[0] * qx + kv[1] * qy + kv[2] * qz;
              const double qsq = qx * qx + qy * qy + qz * qz;
              sum += dot / qsq * fx * fy * fz;
            }
          }
        }
        green(pt) = 4.0 * k_pi / ksq * sum / denom;
      });
}

// Whether one thread runs the kernels (Kokkos::Serial): the spreading then adds without atomics.
#if defined(KOKKOS_ENABLE_SERIAL)
constexpr bool k_one_thread = std::is_same_v<ExecSpace, Kokkos::Serial>;
#else
constexpr bool k_one_thread = false;
#endif

// Calls f(std::integral_constant<int, P>{}) for the order P = order (k_min_order .. k_max_order): the stencil
// kernels are made for each order, so that their loops have a known length.
template <class F>
void with_order(int order, F&& f) {
  switch (order) {
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 5: f(std::integral_constant<int, 5>{}); break;
    case 6: f(std::integral_constant<int, 6>{}); break;
    case 7: f(std::integral_constant<int, 7>{}); break;
    default: throw std::invalid_argument("md::kspace: PPPM order " + std::to_string(order) + " outside 2..7");
  }
  static_assert(k_min_order == 2 && k_max_order == 7, "with_order: one case per order");
}

// Adds charge qi (over the cell volume) at position xi to the stencil's points of brick rho, atomically where
// `atomic`; false (nothing added) when the stencil leaves the brick.
template <int P>
KOKKOS_INLINE_FUNCTION bool spread_at(const BrickMap& bm, const fft::RealView& rho, const double xi[3], double qi,
                                      bool atomic) {
  int s[3];
  double w[3][k_max_order];
  if (!bm.template stencil<P>(xi, s, w)) return false;
  BrickMap::Points<P> pts;
  bm.points(s, pts);
  for (int a = 0; a < P; ++a)
    for (int b = 0; b < P; ++b) {
      const double wab = qi * w[0][a] * w[1][b];
      const long row = pts.xy[a][b];
      for (int c = 0; c < P; ++c) {
        if (atomic)
          Kokkos::atomic_add(&rho(row + pts.z[c]), wab * w[2][c]);
        else
          rho(row + pts.z[c]) += wab * w[2][c];
      }
    }
  return true;
}

// Chunks of whole planes for the host's plane walks: `per_thread` per thread (the spreading takes every other
// chunk at a time: two), each at least P planes (the planes a chunk writes end before the next chunk but one
// begins), an even number where there are several (the last chunk's writes wrap into the first's: they are
// spread in different halves); one for one thread.
template <int P>
int plane_chunks(int planes, int per_thread) {
  const int threads = ExecSpace().concurrency();
  if (threads <= 1) return 1;
  const int most = std::min(planes / P, per_thread * threads);
  return most < 2 ? 1 : most - most % 2;
}

// Zeroes the brick and spreads the owned atoms' charges over it; returns how many atoms' stencils leave it
// (those are not spread). On a device one thread per atom, atomic additions (several threads spreading); on
// the host the atoms in plane order, each thread a chunk of whole planes (every other chunk at a time: no two
// threads add to one point), each new plane read ahead of the stencils that write it (one thread: zeroed
// ahead of them instead, no pass of its own).
template <int P>
int spread_charges_order(const Vec3View& x, const DoubleView& q, int nlocal, const BrickMap& map,
                         const fft::RealView& rho, const PlaneOrder& order) {
  const BrickMap bm = map;
  const double inv_cell = map.inv_h[0] * map.inv_h[1] * map.inv_h[2];
  int outside = 0;
  if (!fft::k_host_accessible) {
    Kokkos::deep_copy(rho, 0.0);
    Kokkos::parallel_reduce(
        "md::kspace::spread_charges", Policy(0, nlocal),
        KOKKOS_LAMBDA(const int i, int& bad) {
          const double xi[3] = {x(i, 0), x(i, 1), x(i, 2)};
          if (!spread_at<P>(bm, rho, xi, q(i) * inv_cell, !k_one_thread)) ++bad;
        },
        outside);
    return outside;
  }
  const int planes = order.planes();
  const int chunks = plane_chunks<P>(planes, 2);
  const int* start = order.start();
  const int* atoms = order.atoms();
  const long plane_size = static_cast<long>(map.dim[1]) * map.dim[2];
  const bool zero_ahead = chunks == 1 && planes >= P;
  if (!zero_ahead) Kokkos::deep_copy(rho, 0.0);
  for (int half = 0; half < (chunks > 1 ? 2 : 1); ++half) {
    int bad_half = 0;
    Kokkos::parallel_reduce(
        "md::kspace::spread_charges_planes", Policy(0, chunks > 1 ? chunks / 2 : 1),
        KOKKOS_LAMBDA(const int h, int& bad) {
          const int c = chunks > 1 ? 2 * h + half : 0;
          const int p0 = chunk_plane(planes, c, chunks), p1 = chunk_plane(planes, c + 1, chunks);
          double sink = 0;
          for (int p = p0; p < p1; ++p) {
            if (zero_ahead) {  // one chunk: each plane zeroed once, before the first stencil that adds to it
              for (int a = p == p0 ? 0 : P - 1; a < P && p + a < planes; ++a) zero_plane(rho.data(), plane_size, p + a);
            } else {
              for (int a = p == p0 ? 0 : P - 1; a < P; ++a) sink += read_plane(rho.data(), 0, 1, plane_size, (p + a) % planes);
            }
            for (int k = start[p]; k < start[p + 1]; ++k) {
              const int i = atoms[k];
              const double xi[3] = {x(i, 0), x(i, 1), x(i, 2)};
              if (!spread_at<P>(bm, rho, xi, q(i) * inv_cell, false)) ++bad;
            }
          }
          if (sink != sink) ++bad;  // a NaN in the density (never: it was zeroed); keeps the reads ahead
        },
        bad_half);
    outside += bad_half;
  }
  return outside;
}

int spread_charges(const Vec3View& x, const DoubleView& q, int nlocal, const BrickMap& map, const fft::RealView& rho,
                   const PlaneOrder& order) {
  int outside = 0;
  with_order(map.order,
             [&](auto p) { outside = spread_charges_order<decltype(p)::value>(x, q, nlocal, map, rho, order); });
  return outside;
}

// This rank's spectral sums (V / 2 N^2 not applied): sum_k w G |rho|^2 and its virial, w = 2 for the modes
// whose conjugate the half spectrum does not hold (Tally::add_mode: the Nyquist planes' off-diagonal terms).
Tally spectral_energy(const fft::Layout3& layout, const SpectralMesh& mesh, double g, const fft::RealView& green,
                      const fft::ComplexView& rho_hat) {
  const BlockDecode decode(layout);
  const SpectralMesh m = mesh;
  const double inv_4g2 = 0.25 / (g * g);
  Tally t;
  Kokkos::parallel_reduce(
      "md::kspace::pppm_energy", fft::Policy(0, static_cast<std::int64_t>(layout.count())),
      KOKKOS_LAMBDA(const std::int64_t pt, Tally& s) {
        int idx[3];
        decode(pt, idx);
        double kv[3], kp[3], ksq = 0;
        for (int d = 0; d < 3; ++d) {
          kv[d] = m.unit_k[d] * signed_index(idx[d], m.n[d]);
          kp[d] = 2 * idx[d] == m.n[d] ? 0.0 : kv[d];
          ksq += kv[d] * kv[d];
        }
        if (ksq == 0.0) return;
        const double weight = (idx[2] == 0 || 2 * idx[2] == m.n[2]) ? 1.0 : 2.0;
        const fft::Complex r = rho_hat(pt);
        s.add_mode(weight * green(pt) * (r.real() * r.real() + r.imag() * r.imag()), kv, kp, ksq, inv_4g2);
      },
      Kokkos::Sum<Tally>(t));
  return t;
}

// The potential's spectrum -G(k) rho(k) scale in place of rho(k): the field E_d = -i k_d G rho scale is its
// gradient (DistributedFft::backward_gradient, k_d = 0 on the Nyquist index of axis d).
void spectral_potential(const fft::Layout3& layout, double scale, const fft::RealView& green,
                        const fft::ComplexView& rho_hat) {
  Kokkos::parallel_for(
      "md::kspace::pppm_potential", fft::Policy(0, static_cast<std::int64_t>(layout.count())),
      KOKKOS_LAMBDA(const std::int64_t pt) { rho_hat(pt) *= -scale * green(pt); });
}

// sum_stencil W E at position xi (the fields at distance `st` in `field`) into e.
template <int P>
KOKKOS_INLINE_FUNCTION void interpolate_at(const BrickMap& bm, const fft::RealView& field, long st, const double xi[3],
                                           double e[3]) {
  int s[3];
  double w[3][k_max_order];
  e[0] = e[1] = e[2] = 0;
  if (!bm.template stencil<P>(xi, s, w)) return;  // never: spread_charges has checked every atom
  BrickMap::Points<P> pts;
  bm.points(s, pts);
  for (int a = 0; a < P; ++a)
    for (int b = 0; b < P; ++b) {
      const double wab = w[0][a] * w[1][b];
      const long row = pts.xy[a][b];
      for (int c = 0; c < P; ++c) {
        const double wt = wab * w[2][c];
        for (int d = 0; d < 3; ++d) e[d] += wt * field(d * st + row + pts.z[c]);
      }
    }
}

// F_i += scale q_i sum_stencil W E for owned atom i.
template <int P>
KOKKOS_INLINE_FUNCTION void add_force_at(const BrickMap& bm, const fft::RealView& field, long st, const Vec3View& x,
                                         const DoubleView& q, double scale, const Vec3View& f, int i) {
  const double xi[3] = {x(i, 0), x(i, 1), x(i, 2)};
  double e[3];
  interpolate_at<P>(bm, field, st, xi, e);
  const double qs = scale * q(i);
  for (int d = 0; d < 3; ++d) f(i, d) += qs * e[d];
}

// F_i += scale q_i sum_stencil W E at each owned atom (the fields at distance `stride` in `field`). On a device
// one thread per atom; on the host the atoms in plane order (PlaneOrder), each thread a run of whole planes,
// each new plane of the three fields read ahead of the stencils that need it.
template <int P>
void interpolate_forces_order(const Vec3View& x, const DoubleView& q, int nlocal, const BrickMap& map,
                              const fft::RealView& field, std::size_t stride, double scale, const Vec3View& f,
                              PlaneOrder& order) {
  const BrickMap bm = map;
  const long st = static_cast<long>(stride);
  if (!fft::k_host_accessible) {
    Kokkos::parallel_for(
        "md::kspace::interpolate_forces", Policy(0, nlocal),
        KOKKOS_LAMBDA(const int i) { add_force_at<P>(bm, field, st, x, q, scale, f, i); });
    return;
  }
  const int planes = order.planes();
  const int chunks = plane_chunks<P>(planes, 1);
  const int* start = order.start();
  const int* atoms = order.atoms();
  double* sinks = order.sinks(chunks);
  const long plane_size = static_cast<long>(map.dim[1]) * map.dim[2];
  Kokkos::parallel_for(
      "md::kspace::interpolate_forces_planes", Policy(0, chunks), KOKKOS_LAMBDA(const int c) {
        const int p0 = chunk_plane(planes, c, chunks), p1 = chunk_plane(planes, c + 1, chunks);
        double sink = 0;
        for (int p = p0; p < p1; ++p) {
          for (int a = p == p0 ? 0 : P - 1; a < P; ++a)
            sink += read_plane(field.data(), st, 3, plane_size, (p + a) % planes);
          for (int k = start[p]; k < start[p + 1]; ++k) add_force_at<P>(bm, field, st, x, q, scale, f, atoms[k]);
        }
        sinks[8 * c] = sink;
      });
}

void interpolate_forces(const Vec3View& x, const DoubleView& q, int nlocal, const BrickMap& map,
                        const fft::RealView& field, std::size_t stride, double scale, const Vec3View& f,
                        PlaneOrder& order) {
  with_order(map.order, [&](auto p) {
    interpolate_forces_order<decltype(p)::value>(x, q, nlocal, map, field, stride, scale, f, order);
  });
}

// interpolate_forces() for the atoms whose stencils begin at planes [p0, p1) of the brick (PlaneOrder), in
// parallel over them, without reading ahead: the caller has just written those planes (host memory).
template <int P>
void interpolate_planes_order(const Vec3View& x, const DoubleView& q, const BrickMap& map, const fft::RealView& field,
                              std::size_t stride, double scale, const Vec3View& f, const PlaneOrder& order, int p0,
                              int p1) {
  const int* atoms = order.atoms();
  const long st = static_cast<long>(stride);
  const BrickMap bm = map;
  Kokkos::parallel_for(
      "md::kspace::interpolate_planes", Policy(order.start()[p0], order.start()[p1]),
      KOKKOS_LAMBDA(const int k) { add_force_at<P>(bm, field, st, x, q, scale, f, atoms[k]); });
}

void interpolate_planes(const Vec3View& x, const DoubleView& q, const BrickMap& map, const fft::RealView& field,
                        std::size_t stride, double scale, const Vec3View& f, const PlaneOrder& order, int p0, int p1) {
  with_order(map.order, [&](auto p) {
    interpolate_planes_order<decltype(p)::value>(x, q, map, field, stride, scale, f, order, p0, p1);
  });
}

}  // namespace impl

namespace {

// The brick map of a rank: its mesh coordinates, the reach of its stencils, and its brick (the cells stored,
// periodic along the axes of period[d] > 0).
BrickMap brick_map(const comm::Box3& box, const std::array<int, 3>& n, int order, const fft::Box3i& reach,
                   const fft::Box3i& brick, const int period[3]) {
  BrickMap m;
  m.order = order;
  for (int d = 0; d < 3; ++d) {
    m.lo[d] = box.lo[d];
    m.inv_h[d] = n[d] / box.length(d);
    m.first[d] = reach.lo[d];
    m.extent[d] = reach.extent(d);
    m.base[d] = brick.lo[d];
    m.dim[d] = brick.extent(d);
    m.period[d] = period[d];
  }
  return m;
}

// Every rank's owned box and brick, gathered (collective). Throws InputError on every rank alike when some
// rank's reach leaves the neighbouring periodic images (neither ghost cells nor a single wrap can hold it).
std::vector<BrickBoxes> gather_boxes(const comm::Communicator& comm, const fft::Box3i& owned, const fft::Box3i& reach,
                                     const fft::Box3i& brick, const std::array<int, 3>& n, int order) {
  std::vector<std::int64_t> mine;
  for (int d = 0; d < 3; ++d)
    for (const int v : {owned.lo[d], owned.hi[d], reach.lo[d], reach.hi[d], brick.lo[d], brick.hi[d]}) mine.push_back(v);
  const std::vector<std::int64_t> all = comm.all_gather(mine);
  std::vector<BrickBoxes> boxes(static_cast<std::size_t>(comm.size()));
  std::string too_coarse;
  for (int r = 0; r < comm.size(); ++r) {
    BrickBoxes& b = boxes[static_cast<std::size_t>(r)];
    for (int d = 0; d < 3; ++d) {
      const std::int64_t* v = &all[static_cast<std::size_t>(18 * r + 6 * d)];
      b.owned.lo[d] = static_cast<int>(v[0]);
      b.owned.hi[d] = static_cast<int>(v[1]);
      b.brick.lo[d] = static_cast<int>(v[4]);
      b.brick.hi[d] = static_cast<int>(v[5]);
      // The reach (v[2], v[3]) within one periodic image either side: ghost cells or a single wrap.
      if (too_coarse.empty() && (v[2] < -n[d] || v[3] >= 2 * n[d]))
        too_coarse = "md.kspace.mesh: the PPPM mesh " + std::to_string(n[0]) + " x " + std::to_string(n[1]) + " x " +
                     std::to_string(n[2]) + " is too coarse for the ghost cells of rank " + std::to_string(r) +
                     " (cells " + std::to_string(v[2]) + ".." + std::to_string(v[3]) + " along axis " +
                     std::to_string(d) + ", order " + std::to_string(order) +
                     "): its atoms' stencils reach beyond the neighbouring periodic image; give a finer mesh";
    }
  }
  // The same gathered boxes on every rank: the same verdict everywhere.
  if (!too_coarse.empty()) throw InputError(too_coarse);
  return boxes;
}

}  // namespace

Pppm::Pppm(const KspaceOptions& options, const comm::ProcessGrid& grid, const comm::Communicator& comm,
           comm::Transport& transport, const ChargeTotals& charges)
    : m_choice(choose_pppm(options, grid.global_box(), charges, comm.size())),
      m_options(options),
      m_box(grid.global_box()),
      m_comm(comm),
      m_charges(charges) {
  const std::string warning = neutrality_warning(charges);
  if (!warning.empty()) m_warnings.push_back(warning);
  const auto& n = m_choice.mesh;
  const int order = m_choice.order;
  const int nranks = comm.size(), rank = comm.rank();

  // This rank's owned box and the reach of its atoms: the mesh points their stencils reach when they are up to
  // `margin` outside its sub-box (the same stencil arithmetic as the kernels). Its brick, the cells it stores:
  // the reach, except along an axis the rank grid does not split (unless the transport routes messages to the
  // rank itself), where it holds the whole axis and a stencil point outside it is its periodic image.
  fft::Box3i brick;
  const comm::Box3& sub = grid.sub_box();
  const bool wrap_unsplit = !transport.route_self();
  for (int d = 0; d < 3; ++d) {
    const int c = grid.coords()[d], p = grid.dims()[d];
    // The even split of the transform's slabs (fft::split_bounds): on a P x 1 x 1 rank grid the owned boxes are
    // the slabs.
    const std::array<int, 2> own = fft::split_bounds(n[d], p, c);
    m_owned.lo[d] = own[0];
    m_owned.hi[d] = own[1];
    const double inv_h = n[d] / m_box.length(d);
    double w[k_max_order];
    const int lo = stencil_weights((sub.lo[d] - options.margin - m_box.lo[d]) * inv_h, order, w);
    const int hi = stencil_weights((sub.hi[d] + options.margin - m_box.lo[d]) * inv_h, order, w) + order - 1;
    const bool owns = m_owned.hi[d] >= m_owned.lo[d];
    m_reach.lo[d] = owns ? std::min(lo, m_owned.lo[d]) : lo;
    m_reach.hi[d] = owns ? std::max(hi, m_owned.hi[d]) : hi;
    m_period[d] = wrap_unsplit && p == 1 ? n[d] : 0;
    brick.lo[d] = m_period[d] ? 0 : m_reach.lo[d];
    brick.hi[d] = m_period[d] ? n[d] - 1 : m_reach.hi[d];
  }
  const std::vector<BrickBoxes> boxes = gather_boxes(comm, m_owned, m_reach, brick, n, order);

  fft::FftGeometry geometry;
  try {
    geometry = fft::make_fft_geometry(n, nranks, options.decomposition, options.fft_grid);
  } catch (const InputError& e) {
    throw InputError(std::string("md.kspace.mesh: ") + e.what());
  }
  // The transform in place on the bricks where every rank's real block of the transform is its owned box and
  // those cells are one contiguous run of its brick (slabs along x of a P x 1 x 1 rank grid whose y and z the
  // bricks hold whole; one rank): no reshapes. Each brick then starts `lead` elements into its array, so that
  // its owned run is aligned as the transform's planning arrays (64 bytes).
  const fft::Layout3& real = geometry.real[static_cast<std::size_t>(rank)];
  const bool mine_in_place = real.box == m_owned && real.order == std::array<int, 3>{0, 1, 2} && !m_owned.empty() &&
                             brick.lo[1] == 0 && brick.hi[1] == n[1] - 1 && brick.lo[2] == 0 && brick.hi[2] == n[2] - 1;
  m_in_place = comm.min(static_cast<double>(mine_in_place ? 1 : 0)) == 1.0;
  const std::size_t owned_offset = static_cast<std::size_t>(m_owned.lo[0] - brick.lo[0]) * n[1] * n[2];
  const std::size_t lead = m_in_place ? (8 - owned_offset % 8) % 8 : 0;
  m_brick_stride = fft::padded_field(lead + brick.count());
  m_owned_offset = owned_offset;

  fft::FftBatching batching;
  batching.max_batch = 3;
  batching.real_distance =
      m_in_place ? m_brick_stride : fft::padded_field(geometry.real[static_cast<std::size_t>(rank)].count());
  batching.complex_distance = fft::padded_field(geometry.spectral[static_cast<std::size_t>(rank)].count());
  m_fft = std::make_unique<fft::DistributedFft>(geometry, comm, transport, fft::backend::Default{},
                                                fft::PlanRigor::Estimate, std::nullopt, batching);
  m_halo = std::make_unique<MeshHalo>(make_mesh_halo_plan(boxes, n, rank), transport, 3);
  m_halo_cells = comm.max(static_cast<std::int64_t>(m_halo->plan().ghost_total + m_halo->plan().owned_total)) > 0;
  // The bricks: each field's first cell `lead` elements into its stretch of the arrays (views from there).
  const auto from_lead = std::make_pair(lead, lead + brick.count());
  m_density = Kokkos::subview(fft::RealView("md::kspace::density", lead + brick.count()), from_lead);
  m_field = Kokkos::subview(fft::RealView("md::kspace::field", 3 * m_brick_stride),
                            std::make_pair(lead, 3 * m_brick_stride));
  if (!m_in_place) {
    std::vector<fft::Layout3> owned_layouts(static_cast<std::size_t>(nranks));
    for (int r = 0; r < nranks; ++r) owned_layouts[static_cast<std::size_t>(r)].box = boxes[static_cast<std::size_t>(r)].owned;
    // The reshapes read the density's owned cells out of its brick and write the fields' into theirs.
    const fft::Layout3& brick_layout = m_halo->plan().brick;
    m_to_fft = std::make_unique<fft::Reshape<double>>(
        fft::within_arrays(fft::make_reshape_plan(owned_layouts, geometry.real, rank), brick_layout, {}), transport,
        "md::kspace::to_fft", 1);
    m_from_fft = std::make_unique<fft::Reshape<double>>(
        fft::within_arrays(fft::make_reshape_plan(geometry.real, owned_layouts, rank), {}, brick_layout), transport,
        "md::kspace::from_fft", 3);
    m_real_stride = batching.real_distance;
    m_real = fft::RealView("md::kspace::real", 3 * m_real_stride);
  }
  m_rho_hat = fft::ComplexView("md::kspace::rho_hat", m_fft->complex_size());
  m_scratch_hat = fft::ComplexView("md::kspace::gradient_scratch", m_fft->complex_size());
  m_green = fft::RealView("md::kspace::green", m_fft->complex_size());
  compute_green();
}

void Pppm::set_box(const comm::Box3& box) {
  m_box = box;
  compute_green();
}

void Pppm::compute_green() {
  const auto& n = m_choice.mesh;
  const int order = m_choice.order;
  // The influence function, its aliases as LAMMPS's compute_gf_ik: |m_d| <= g L_d / (pi n_d) (-ln 1e-7)^(1/4).
  impl::SpectralMesh sm;
  std::array<int, 3> alias{0, 0, 0};
  const double g = m_choice.g_ewald;
  for (int d = 0; d < 3; ++d) {
    sm.n[d] = n[d];
    sm.unit_k[d] = 2.0 * k_pi / m_box.length(d);
    sm.h[d] = m_box.length(d) / n[d];
    alias[d] = static_cast<int>(g * m_box.length(d) / (k_pi * n[d]) * std::pow(-std::log(1e-7), 0.25));
  }
  const std::vector<double> coeffs = alias_sum_coefficients(order);
  std::array<double, k_max_order> b{};
  std::copy(coeffs.begin(), coeffs.end(), b.begin());
  impl::influence_function(m_fft->spectral_layout(), sm, g, order, b, alias, m_green);
}

Pppm::~Pppm() = default;

KspaceResult Pppm::compute(const Vec3View& x, const DoubleView& q, int nlocal, const Vec3View& f, bool energy_virial) {
  if (nlocal < 0 || static_cast<std::size_t>(nlocal) > x.extent(0) || static_cast<std::size_t>(nlocal) > q.extent(0) ||
      static_cast<std::size_t>(nlocal) > f.extent(0))
    throw std::invalid_argument("md::kspace::Pppm::compute: nlocal beyond the arrays");
  const auto& n = m_choice.mesh;
  const BrickMap map = brick_map(m_box, n, m_choice.order, m_reach, m_halo->plan().brick.box, m_period);

  if (fft::k_host_accessible) m_planes.build(x, nlocal, map);
  const int outside = impl::spread_charges(x, q, nlocal, map, m_density, m_planes);
  m_comm.agree<RunError>(outside == 0, outside == 0 ? std::string()
                                                    : "md: " + std::to_string(outside) + " atom(s) of rank " +
                                                          std::to_string(m_comm.rank()) +
                                                          " are further outside its sub-box than the PPPM mesh's "
                                                          "ghost cells reach (out of range atoms: lost, or moved more "
                                                          "than half the neighbour skin)");
  if (m_halo_cells) m_halo->reverse_sum(m_density.data());
  if (m_in_place) {
    m_fft->forward(m_density.data() + m_owned_offset, m_rho_hat.data());
  } else {
    m_to_fft->execute(m_density.data(), m_real.data());
    m_fft->forward(m_real.data(), m_rho_hat.data());
  }

  impl::SpectralMesh sm;
  for (int d = 0; d < 3; ++d) {
    sm.n[d] = n[d];
    sm.unit_k[d] = 2.0 * k_pi / m_box.length(d);
    sm.h[d] = m_box.length(d) / n[d];
  }
  const double g = m_choice.g_ewald, volume = m_box.volume(), qqrd2e = m_options.qqrd2e;
  KspaceResult r;
  if (energy_virial) {
    const impl::Tally t = impl::spectral_energy(m_fft->spectral_layout(), sm, g, m_green, m_rho_hat);
    const double total = static_cast<double>(m_fft->geometry().total_real());
    const double s = qqrd2e * 0.5 * volume / (total * total);
    r.energy = s * t.energy;
    for (int c = 0; c < 6; ++c) r.virial[c] = s * t.virial[c];
    double sum = 0, sum_sq = 0;
    impl::owned_charge_sums(q, nlocal, sum, sum_sq);
    impl::add_self_and_background(r, sum, sum_sq, m_charges.sum, g, volume, qqrd2e);
  }

  // The field: the gradient of the potential, whose spectrum takes rho_hat's place (the energy is done with it).
  impl::spectral_potential(m_fft->spectral_layout(), m_fft->scale(), m_green, m_rho_hat);
  double* reals[3] = {m_real.data(), m_real.data() + m_real_stride, m_real.data() + 2 * m_real_stride};
  double* bricks[3] = {m_field.data(), m_field.data() + m_brick_stride, m_field.data() + 2 * m_brick_stride};
  const std::array<double, 3> unit_k{sm.unit_k[0], sm.unit_k[1], sm.unit_k[2]};
  // Where the bricks are this rank's whole block of the transform (one rank: no ghost cells, no reshapes), the
  // interpolation follows the transform plane by plane: the atoms whose stencils end at plane e - 1 as soon as
  // planes [0, e) of the three fields are final, while those are in cache (the same arithmetic as after the
  // whole transform: the same forces, bit for bit).
  const bool by_plane = fft::k_host_accessible && m_options.plane_interpolation && m_in_place && !m_halo_cells;
  const int planes = m_planes.planes(), reach = m_choice.order - 1;
  int interpolated = 0, made = 0;  // the planes whose atoms have their forces; the planes made
  double sink = 0;
  const long plane_size = static_cast<long>(map.dim[1]) * map.dim[2];
  auto ready = [&](int e) {
    // The new planes of the x component (made before the others, now in memory) read ahead, in sequence.
    for (; made < std::min(e, planes); ++made) sink += read_plane(m_field.data(), 0, 1, plane_size, made);
    const int upto = e >= planes ? planes : std::max(interpolated, e - reach);
    if (upto > interpolated)
      impl::interpolate_planes(x, q, map, m_field, m_brick_stride, qqrd2e, f, m_planes, interpolated, upto);
    interpolated = upto;
  };
  if (m_in_place) {
    double* owned[3];
    for (int d = 0; d < 3; ++d) owned[d] = bricks[d] + m_owned_offset;
    // The report wrapped only where it is taken (a std::function of these captures allocates).
    m_fft->backward_gradient(m_rho_hat.data(), m_scratch_hat.data(), owned, unit_k,
                             by_plane ? fft::DistributedFft::PlanesReady(ready) : fft::DistributedFft::PlanesReady{});
  } else {
    m_fft->backward_gradient(m_rho_hat.data(), m_scratch_hat.data(), reals, unit_k);
    m_from_fft->execute_many(3, reals, bricks);
  }
  if (by_plane) {
    if (interpolated != planes)
      throw std::logic_error("md::kspace::Pppm::compute: the transform reported " + std::to_string(interpolated) +
                             " of the brick's " + std::to_string(planes) + " planes");
    m_planes.sinks(1)[0] = sink;  // kept, so that the reads ahead stay
    ++m_plane_interpolations;
    return r;
  }
  if (m_halo_cells) m_halo->forward_fill(3, bricks);
  impl::interpolate_forces(x, q, nlocal, map, m_field, m_brick_stride, qqrd2e, f, m_planes);
  return r;
}

}  // namespace spotrun::md::kspace
