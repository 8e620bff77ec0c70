#pragma once
// The pair-force loops; the physics comes from a small evaluator (PairLJCut, ...). One loop per list
// kind (neighbor.hpp): the half list updates both atoms of an owned pair (a scatter: atomics on a GPU),
// the full list only the atom of the thread (no atomics: the GPU default, bitwise reproducible). The half
// list has a host loop of its own (CPU backends, the default there), written for the compiler's vectoriser.
// Every loop runs at the precision of its evaluator (Pair::real_type, precision.hpp): the separation of a pair
// is taken in double and rounded to Real, the pair's distance, force factor and energy are Real; the force
// components are the double separation times the factor rounded to double, and every sum over pairs (forces
// on atoms, reactions, energy, virial) is double. In double the operations are those of a double-only loop,
// in the same order.
#include <Kokkos_ScatterView.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>
#if defined(__AVX2__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

#include "atoms.hpp"
#include "neighbor.hpp"
#include "pair.hpp"

namespace spotrun::md {

struct PairTally {
  double energy = 0;  // sum of pair energies owned by this rank (ghost pairs count 1/2): the van der Waals part
  double virial = 0;  // sum of r_ij . F_ij, same weighting
  double ecoul = 0;   // the Coulomb part of the energies, same weighting (a charged style: PairCharged)
};


using ForceScatter = Kokkos::Experimental::ScatterView<double* [3], Kokkos::LayoutRight, ExecSpace>;

namespace impl {

// One pair's force factor and, with EV, its energies (evdwl, ecoul; ecoul 0 for an uncharged style). qiqj:
// the product of the two charges (read only by a charged style).
template <bool EV, class Pair, class Real = typename Pair::real_type>
KOKKOS_INLINE_FUNCTION void evaluate_pair(const Pair& pair, Real rsq, Real qiqj, Real& fpair, Real& evdwl, Real& ecoul) {
  if constexpr (PairCharged<Pair>::value) {
    if (EV)
      pair.compute(rsq, qiqj, fpair, evdwl, ecoul);
    else
      pair.compute_force(rsq, qiqj, fpair);
  } else {
    (void)qiqj;
    ecoul = Real(0);
    if (EV)
      pair.compute(rsq, fpair, evdwl);
    else
      pair.compute_force(rsq, fpair);
  }
}

// The loop of a force kernel over the rows order(begin .. end-1): body(i, energy, ecoul, virial) for each row
// i. With EV a reduction of the three sums into the tally (the host waits for it); without EV a parallel_for
// with the sums thrown away (nothing returns to the host on a step without thermo). Every kernel runs on
// ExecSpace (Policy); a body that is a host lambda (the host half list) is only instantiated where ExecSpace
// runs on the host.
template <bool EV, class Order, class Body>
PairTally over_rows(const char* name, int begin, int end, const Order& order, const Body& body) {
  PairTally t;
  if constexpr (EV) {
    Kokkos::parallel_reduce(
        name, Policy(begin, end),
        KOKKOS_LAMBDA(int k, double& energy, double& ecoul, double& virial) { body(order(k), energy, ecoul, virial); },
        t.energy, t.ecoul, t.virial);
  } else {
    Kokkos::parallel_for(
        name, Policy(begin, end), KOKKOS_LAMBDA(int k) {
          double e = 0, c = 0, w = 0;
          body(order(k), e, c, w);
        });
  }
  return t;
}

// Sum over the neighbours jj in [jbegin, jend) of row i of the pair force on atom i; calls
// on_pair(j, fx, fy, fz, e, ec, w) for each pair within the cutoff of the two atoms' types, with the pair's
// force on i (double), its energies (van der Waals e and Coulomb ec; only with EV) and r_ij . F_ij, rounded to
// double from the pair's precision. q: the charges (read only by a charged style).
template <bool EV, class Pair, class OnPair>
KOKKOS_INLINE_FUNCTION void row_forces(const Vec3View& x, const IntView& type, const DoubleView& q,
                                       const NeighborView& neigh, const PairTable<Pair>& pairs, int i, int jbegin,
                                       int jend, double& fx, double& fy, double& fz, const OnPair& on_pair) {
  using Real = typename Pair::real_type;
  constexpr bool charged = PairCharged<Pair>::value;
  const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
  const double qi = charged ? q(i) : 0.0;
  const int ti = type(i);
  for (int jj = jbegin; jj < jend; ++jj) {
    const int j = neigh(i, jj);
    const double dxd = xi - x(j, 0), dyd = yi - x(j, 1), dzd = zi - x(j, 2);
    const Real dx = static_cast<Real>(dxd), dy = static_cast<Real>(dyd), dz = static_cast<Real>(dzd);
    const Real rsq = dx * dx + dy * dy + dz * dz;
    const Pair& pair = pairs(ti, type(j));
    if (rsq >= pair.cutsq) continue;
    Real fpair, e = 0, ec = 0;
    evaluate_pair<EV>(pair, rsq, static_cast<Real>(charged ? qi * q(j) : 0.0), fpair, e, ec);
    const double fd = static_cast<double>(fpair);
    const double fxp = dxd * fd, fyp = dyd * fd, fzp = dzd * fd;
    fx += fxp;
    fy += fyp;
    fz += fzp;
    on_pair(j, fxp, fyp, fzp, static_cast<double>(e), static_cast<double>(ec), static_cast<double>(rsq * fpair));
  }
}

// Half list on the host (CPU backends): each row in chunks of k_row_chunk neighbours held in stack arrays,
// in three passes: gather the separations in double (and, with several types, each neighbour's evaluator);
// evaluate every pair without a branch, the cutoff as a mask (the loop the compiler vectorises: no scatter, no
// data-dependent branch, so a liquid's neighbours beyond the cutoff cost no mispredictions); scatter the
// reactions onto the owned neighbours. OneType: one evaluator for the whole row (a run of one type).
// Lists whose pairs mostly lie beyond the cutoff (pair_list_sparse(): a WCA melt) take stream_forces_host()
// instead, over the rows laid end to end (NeighborList::stream).
constexpr int k_row_chunk = 64;

// Passes one and three with the positions and forces as rows of three doubles (LayoutRight host arrays; the
// scatter writes in place, so only where one thread owns the force array: k_scatter_in_place). With AVX2,
// four neighbours at a time: each neighbour's row in one masked load (x, y, z; nothing read beyond it), the
// four separations transposed into dx, dy, dz; the reactions transposed back and subtracted from each
// neighbour's x and y in one 128-bit operation and from z alone. The same operations on the same numbers
// as the scalar loops (xi - x_j; f_j - r), so the results are bitwise those of the scalar code.
struct RowsOfThree {
  static void gather(const double* x, const int* row, int n, double xi, double yi, double zi, double* dx, double* dy,
                     double* dz) {
    int k = 0;
#if defined(__AVX2__) && !defined(__CUDACC__)
    const __m256i three = _mm256_set_epi64x(0, -1, -1, -1);
    const __m256d ri = _mm256_set_pd(0.0, zi, yi, xi);
    for (; k + 4 <= n; k += 4) {
      const __m256d d0 = _mm256_sub_pd(ri, _mm256_maskload_pd(x + 3 * static_cast<std::ptrdiff_t>(row[k]), three));
      const __m256d d1 = _mm256_sub_pd(ri, _mm256_maskload_pd(x + 3 * static_cast<std::ptrdiff_t>(row[k + 1]), three));
      const __m256d d2 = _mm256_sub_pd(ri, _mm256_maskload_pd(x + 3 * static_cast<std::ptrdiff_t>(row[k + 2]), three));
      const __m256d d3 = _mm256_sub_pd(ri, _mm256_maskload_pd(x + 3 * static_cast<std::ptrdiff_t>(row[k + 3]), three));
      const __m256d t0 = _mm256_unpacklo_pd(d0, d1), t1 = _mm256_unpackhi_pd(d0, d1);  // x0 x1 z0 z1, y0 y1 . .
      const __m256d t2 = _mm256_unpacklo_pd(d2, d3), t3 = _mm256_unpackhi_pd(d2, d3);
      _mm256_storeu_pd(dx + k, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_storeu_pd(dy + k, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_storeu_pd(dz + k, _mm256_permute2f128_pd(t0, t2, 0x31));
    }
#endif
    for (; k < n; ++k) {
      const double* xj = x + 3 * static_cast<std::ptrdiff_t>(row[k]);
      dx[k] = xi - xj[0];
      dy[k] = yi - xj[1];
      dz[k] = zi - xj[2];
    }
  }
  static void scatter(double* f, const int* row, int n, const double* rx, const double* ry, const double* rz) {
    int k = 0;
#if defined(__AVX2__) && !defined(__CUDACC__)
    for (; k + 4 <= n; k += 4) {
      const __m256d x = _mm256_loadu_pd(rx + k), y = _mm256_loadu_pd(ry + k);
      const __m256d xy02 = _mm256_unpacklo_pd(x, y), xy13 = _mm256_unpackhi_pd(x, y);  // x0 y0 x2 y2, x1 y1 x3 y3
      const __m128d r[4] = {_mm256_castpd256_pd128(xy02), _mm256_castpd256_pd128(xy13),
                            _mm256_extractf128_pd(xy02, 1), _mm256_extractf128_pd(xy13, 1)};
      for (int q = 0; q < 4; ++q) {
        double* fj = f + 3 * static_cast<std::ptrdiff_t>(row[k + q]);
        _mm_storeu_pd(fj, _mm_sub_pd(_mm_loadu_pd(fj), r[q]));
        fj[2] -= rz[k + q];
      }
    }
#endif
    for (; k < n; ++k) {
      double* fj = f + 3 * static_cast<std::ptrdiff_t>(row[k]);
      fj[0] -= rx[k];
      fj[1] -= ry[k];
      fj[2] -= rz[k];
    }
  }
};

// Whether the host loop's scatter may write into the force array itself (RowsOfThree::scatter): one thread,
// the scatter view being that array. Threaded host backends go through the scatter view's access.
#if defined(KOKKOS_ENABLE_SERIAL)
constexpr bool k_scatter_in_place = std::is_same_v<ExecSpace, Kokkos::Serial>;
#else
constexpr bool k_scatter_in_place = false;
#endif

// The masked evaluation of pass two over n gathered pairs, at the precision of the evaluator (Real): each
// separation (double) is rounded to Real, the pair's force factor computed in Real and rounded to double, and
// the force components, separation times factor in double, replace the separation in dx, dy, dz (pass three
// subtracts them from the neighbours: the same numbers as those added to atom i, so momentum is conserved
// pair by pair). Adds the force on atom i to fi, the energy and virial (weighted by w) to e and v (with EV;
// the energy only with E as well: a constant-pressure step needs the virial alone). Every conversion is in this
// vectorised loop.
template <bool EV, bool E, class Real, class PairOf>
KOKKOS_INLINE_FUNCTION void masked_pairs(int n, double* dx, double* dy, double* dz, const double* qq, const PairOf& pair_of,
                                         double w, double& fxi, double& fyi, double& fzi, double& e, double& ec,
                                         double& v) {
  double sx = 0, sy = 0, sz = 0, se = 0, sc = 0, sv = 0;
#if defined(SPOTRUN_OMP_SIMD)
#pragma omp simd reduction(+ : sx, sy, sz, se, sc, sv)
#endif
  for (int k = 0; k < n; ++k) {
    const Real rx = static_cast<Real>(dx[k]), ry = static_cast<Real>(dy[k]), rz = static_cast<Real>(dz[k]);
    const Real rsq = rx * rx + ry * ry + rz * rz;
    const auto& pair = pair_of(k);
    Real fpair, ek = 0, eck = 0;
    evaluate_pair<EV && E>(pair, rsq, qq ? static_cast<Real>(qq[k]) : Real(0), fpair, ek, eck);
    const bool inside = rsq < pair.cutsq;
    fpair = inside ? fpair : Real(0);  // a select, not a branch
    const double fd = static_cast<double>(fpair);
    const double fx = dx[k] * fd, fy = dy[k] * fd, fz = dz[k] * fd;
    sx += fx;
    sy += fy;
    sz += fz;
    dx[k] = fx;
    dy[k] = fy;
    dz[k] = fz;
    if (EV && E) {
      se += static_cast<double>(inside ? ek : Real(0));
      sc += static_cast<double>(inside ? eck : Real(0));
    }
    if (EV) sv += static_cast<double>(rsq * fpair);
  }
  fxi += sx;
  fyi += sy;
  fzi += sz;
  if (EV) {
    e += w * se;
    ec += w * sc;
    v += w * sv;
  }
}

template <bool EV, bool OneType, bool E, class Pair>
PairTally half_list_forces_host(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pairs,
                                ForceScatter& scatter, int begin, int end) {
  auto x = atoms.x;
  auto order = list.order;
  auto neigh = list.neighbors;
  auto numneigh = list.numneigh;
  auto numghost = list.numghost;
  auto type = atoms.type;
  const int maxn = list.max_neighbors();
  const bool newton = list.newton();
  auto f = atoms.f;
  auto q = atoms.q;
  scatter.reset_except(f);
  double* const fraw = k_scatter_in_place ? scatter.subview().data() : nullptr;  // the force array itself
  using Real = typename Pair::real_type;
  constexpr bool charged = PairCharged<Pair>::value;
  auto body = [=](int i, double& energy, double& ecoul, double& virial) {
    auto fa = scatter.access();
    const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
    const int ti = type(i);
    const Pair pii = pairs(ti, ti);
    double fxi = 0, fyi = 0, fzi = 0;
    double dx[k_row_chunk], dy[k_row_chunk], dz[k_row_chunk];  // separations, then pair forces
    double qq[charged ? k_row_chunk : 1];                        // a charged style: q_i q_j of each pair
    Pair pj[OneType ? 1 : k_row_chunk];
    // Owned neighbours (front of the row: the reaction goes to j, the pair counts whole), then ghosts
    // (back of the row). Under Newton a ghost pair is listed on this side alone: its reaction goes to the
    // ghost (Halo::reverse_forces sends it to the owner) and it counts whole; otherwise the ghost's owner
    // computes the pair too, so it counts half.
    const int ranges[2][2] = {{0, numneigh(i)}, {maxn - numghost(i), maxn}};
    for (int part = 0; part < 2; ++part) {
      const bool owned = part == 0 || newton;
      for (int c0 = ranges[part][0]; c0 < ranges[part][1]; c0 += k_row_chunk) {
        const int n = ranges[part][1] - c0 < k_row_chunk ? ranges[part][1] - c0 : k_row_chunk;
        const int* row = &neigh(i, c0);
        RowsOfThree::gather(x.data(), row, n, xi, yi, zi, dx, dy, dz);
        if (!OneType)
          for (int k = 0; k < n; ++k) pj[k] = pairs(ti, type(row[k]));
        if constexpr (charged)
          for (int k = 0; k < n; ++k) qq[k] = q(i) * q(row[k]);
        const double* qs = charged ? qq : nullptr;
        if (OneType)
          masked_pairs<EV, E, Real>(n, dx, dy, dz, qs, [&](int) -> const Pair& { return pii; }, owned ? 1.0 : 0.5, fxi,
                                    fyi, fzi, energy, ecoul, virial);
        else
          masked_pairs<EV, E, Real>(n, dx, dy, dz, qs, [&](int k) -> const Pair& { return pj[k]; }, owned ? 1.0 : 0.5,
                                    fxi, fyi, fzi, energy, ecoul, virial);
        if (owned) {
          if constexpr (k_scatter_in_place) {
            RowsOfThree::scatter(fraw, row, n, dx, dy, dz);
          } else {
            for (int k = 0; k < n; ++k) {
              const int j = row[k];
              fa(j, 0) -= dx[k];
              fa(j, 1) -= dy[k];
              fa(j, 2) -= dz[k];
            }
          }
        }
      }
    }
    fa(i, 0) += fxi;
    fa(i, 1) += fyi;
    fa(i, 2) += fzi;
  };
  const PairTally t = over_rows<EV>("md::pair::force_half", begin, end, order, body);
  Kokkos::Experimental::contribute(f, scatter);
  return t;
}

// The rows of a block for stream_forces_host() (a block holds rows of one part of the order alone: with the
// atoms sorted by bin, as a run's are at every build, an atom's owned neighbours in a half list lie after it,
// so within a part no later row of the block adds to an earlier row's atom, and each atom's force sums run in
// the order of a loop over one row at a time), and the entries one pass of it holds (on the stack).
constexpr int k_stream_block = 16;
constexpr int k_stream_chunk = 128;

// The half list on the host for sparse rows (pair_list_sparse(): most listed pairs beyond the cutoff, a few
// within it to a row), over the rows laid end to end (NeighborList::stream): blocks of k_stream_block rows,
// each in two loops over all its entries rather than in loops of a few iterations for each row (the loop
// exits the branch predictor cannot foresee cost more than the pairs): pass one computes every entry's
// separation and keeps those within the cutoff, packed at the front (no branch on the distance); pass two
// evaluates the kept pairs, takes the reaction from neighbour j (owned, or a ghost under Newton) and adds
// the force on atom i, the energies and the virial to its row's sums, owned and ghost neighbours apart;
// the block ends adding each row's force to its atom and its sums to the tally in row order. The same
// operations in the same order as a loop over one row's kept pairs at a time (the sparse loop this replaced):
// its results bit for bit, where a row holds at most k_row_chunk entries; half_list_forces_host()'s to
// rounding (its pairs beyond the cutoff add zeros, but its vectorised sums may run in another order).
template <bool EV, bool E, bool OneType, class Pair>
PairTally stream_forces_host(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pairs,
                             ForceScatter& scatter, int begin, int end) {
  using Real = typename Pair::real_type;
  constexpr bool charged = PairCharged<Pair>::value;
  constexpr int B = k_stream_block, C = k_stream_chunk;
  auto x = atoms.x;
  auto type = atoms.type;
  auto q = atoms.q;
  auto f = atoms.f;
  auto order = list.order;
  auto start = list.stream_start;
  auto stream = list.stream;
  auto stream_row = list.stream_row;
  const bool newton = list.newton();
  const int nlocal = atoms.nlocal;
  scatter.reset_except(f);
  // The parts of the order within [begin, end) and their blocks: part p's rows [from[p], to[p]), its blocks
  // from first[p] on.
  const int bounds[4] = {0, list.interior_rows(), nlocal - list.deferred_rows(), nlocal};
  std::array<int, 3> from{}, to{};
  std::array<int, 4> first{};
  for (int p = 0; p < 3; ++p) {
    from[p] = std::max(begin, bounds[p]);
    to[p] = std::max(from[p], std::min(end, bounds[p + 1]));
    first[p + 1] = first[p] + (to[p] - from[p] + B - 1) / B;
  }
  auto body = [=](int b, double& energy, double& ecoul, double& virial) {
    auto fa = scatter.access();
    const int p = b < first[1] ? 0 : (b < first[2] ? 1 : 2);
    const int k0 = from[p] + (b - first[p]) * B, k1 = std::min(to[p], k0 + B);
    // Each row's atom: position, type (evaluator), charge; its sums (force; energies and virial, owned and
    // ghost neighbours apart).
    double xb[B][3], qb[charged ? B : 1];
    int tb[B];
    double sf[B][3], se[B][2], sc[B][2], sv[B][2];
    for (int r = 0; r < k1 - k0; ++r) {
      const int i = order(k0 + r);
      xb[r][0] = x(i, 0);
      xb[r][1] = x(i, 1);
      xb[r][2] = x(i, 2);
      tb[r] = type(i);
      if constexpr (charged) qb[r] = q(i);
      sf[r][0] = sf[r][1] = sf[r][2] = 0;
      se[r][0] = se[r][1] = sc[r][0] = sc[r][1] = sv[r][0] = sv[r][1] = 0;
    }
    const Pair pii = pairs(tb[0], tb[0]);  // OneType: the evaluator of every pair
    double dx[C], dy[C], dz[C];
    double qq[charged ? C : 1];
    int kj[C], kr[C];
    Pair pj[OneType ? 1 : C];
    const int e1 = start(k1);
    for (int c0 = start(k0); c0 < e1; c0 += C) {
      const int n = e1 - c0 < C ? e1 - c0 : C;
      int m = 0;
      for (int e = 0; e < n; ++e) {
        const int j = stream(c0 + e), r = stream_row(c0 + e) - k0;
        const double dxd = xb[r][0] - x(j, 0), dyd = xb[r][1] - x(j, 1), dzd = xb[r][2] - x(j, 2);
        const Real rx = static_cast<Real>(dxd), ry = static_cast<Real>(dyd), rz = static_cast<Real>(dzd);
        const Real rsq = rx * rx + ry * ry + rz * rz;
        dx[m] = dxd;
        dy[m] = dyd;
        dz[m] = dzd;
        kj[m] = j;
        kr[m] = r;
        if constexpr (charged) qq[m] = qb[r] * q(j);
        if constexpr (!OneType) {
          pj[m] = pairs(tb[r], type(j));
          m += rsq < pj[m].cutsq ? 1 : 0;
        } else {
          m += rsq < pii.cutsq ? 1 : 0;
        }
      }
      for (int k = 0; k < m; ++k) {
        const Real rx = static_cast<Real>(dx[k]), ry = static_cast<Real>(dy[k]), rz = static_cast<Real>(dz[k]);
        const Real rsq = rx * rx + ry * ry + rz * rz;
        Real fpair, ek = 0, eck = 0;
        if constexpr (OneType)
          evaluate_pair<EV && E>(pii, rsq, charged ? static_cast<Real>(qq[k]) : Real(0), fpair, ek, eck);
        else
          evaluate_pair<EV && E>(pj[k], rsq, charged ? static_cast<Real>(qq[k]) : Real(0), fpair, ek, eck);
        const double fd = static_cast<double>(fpair);
        const double fx = dx[k] * fd, fy = dy[k] * fd, fz = dz[k] * fd;
        const int r = kr[k], j = kj[k];
        sf[r][0] += fx;
        sf[r][1] += fy;
        sf[r][2] += fz;
        const int ghost = j >= nlocal ? 1 : 0;
        if (newton || !ghost) {
          fa(j, 0) -= fx;
          fa(j, 1) -= fy;
          fa(j, 2) -= fz;
        }
        if (EV && E) {
          se[r][ghost] += static_cast<double>(ek);
          sc[r][ghost] += static_cast<double>(eck);
        }
        if (EV) sv[r][ghost] += static_cast<double>(rsq * fpair);
      }
    }
    // Under Newton a ghost pair is listed on this side alone and counts whole; otherwise the ghost's owner
    // computes it too, so it counts half.
    const double wg = newton ? 1.0 : 0.5;
    for (int r = 0; r < k1 - k0; ++r) {
      const int i = order(k0 + r);
      fa(i, 0) += sf[r][0];
      fa(i, 1) += sf[r][1];
      fa(i, 2) += sf[r][2];
      if (EV) {
        energy += se[r][0];
        ecoul += sc[r][0];
        virial += sv[r][0];
        energy += wg * se[r][1];
        ecoul += wg * sc[r][1];
        virial += wg * sv[r][1];
      }
    }
  };
  PairTally t;
  const int nblocks = first[3];
  if (nblocks > 0) {
    if constexpr (EV) {
      Kokkos::parallel_reduce(
          "md::pair::force_stream", Policy(0, nblocks),
          [=](int b, double& energy, double& ecoul, double& virial) { body(b, energy, ecoul, virial); }, t.energy,
          t.ecoul, t.virial);
    } else {
      Kokkos::parallel_for(
          "md::pair::force_stream", Policy(0, nblocks), [=](int b) {
            double e = 0, c = 0, w = 0;
            body(b, e, c, w);
          });
    }
  }
  Kokkos::Experimental::contribute(f, scatter);
  return t;
}

// Half list: accumulates into atoms.f (which the caller zeroes) through the scatter view.
template <bool EV, class Pair>
PairTally half_list_forces_device(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pair,
                                  ForceScatter& scatter, int begin, int end) {
  auto x = atoms.x;
  auto order = list.order;
  auto neigh = list.neighbors;
  auto numneigh = list.numneigh;
  auto numghost = list.numghost;
  auto type = atoms.type;
  auto q = atoms.q;
  const int maxn = list.max_neighbors();
  auto f = atoms.f;
  scatter.reset_except(f);
  // Owned neighbours at the front of the row (Newton's third law: the pair force acts on both atoms),
  // ghost neighbours at the back (only the owned atom is updated here; the ghost's owner computes the
  // pair too, so energy and virial count half).
  auto body = [=] KOKKOS_FUNCTION(int i, double& energy, double& ecoul, double& virial) {
    auto fa = scatter.access();
    double fxi = 0, fyi = 0, fzi = 0;
    row_forces<EV>(x, type, q, neigh, pair, i, 0, numneigh(i), fxi, fyi, fzi,
                   [&](int j, double fx, double fy, double fz, double e, double ec, double w) {
                     fa(j, 0) -= fx;
                     fa(j, 1) -= fy;
                     fa(j, 2) -= fz;
                     if (EV) {
                       energy += e;
                       ecoul += ec;
                       virial += w;
                     }
                   });
    row_forces<EV>(x, type, q, neigh, pair, i, maxn - numghost(i), maxn, fxi, fyi, fzi,
                   [&](int, double, double, double, double e, double ec, double w) {
                     if (EV) {
                       energy += 0.5 * e;
                       ecoul += 0.5 * ec;
                       virial += 0.5 * w;
                     }
                   });
    fa(i, 0) += fxi;
    fa(i, 1) += fyi;
    fa(i, 2) += fzi;
  };
  const PairTally t = over_rows<EV>("md::pair::force_half", begin, end, order, body);
  Kokkos::Experimental::contribute(f, scatter);
  return t;
}

// Full list: each thread writes the force on its own atom; every pair is seen from both of its atoms
// (here or on the ghost's rank), so energy and virial count half.
template <bool EV, class Pair>
PairTally full_list_forces(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pair, int begin,
                           int end) {
  auto x = atoms.x;
  auto order = list.order;
  auto f = atoms.f;
  auto neigh = list.neighbors;
  auto numneigh = list.numneigh;
  auto numghost = list.numghost;
  auto type = atoms.type;
  auto q = atoms.q;
  const int maxn = list.max_neighbors();
  auto body = [=] KOKKOS_FUNCTION(int i, double& energy, double& ecoul, double& virial) {
    double fxi = 0, fyi = 0, fzi = 0;
    auto tally = [&](int, double, double, double, double e, double ec, double w) {
      if (EV) {
        energy += 0.5 * e;
        ecoul += 0.5 * ec;
        virial += 0.5 * w;
      }
    };
    row_forces<EV>(x, type, q, neigh, pair, i, 0, numneigh(i), fxi, fyi, fzi, tally);
    row_forces<EV>(x, type, q, neigh, pair, i, maxn - numghost(i), maxn, fxi, fyi, fzi, tally);
    f(i, 0) = fxi;
    f(i, 1) = fyi;
    f(i, 2) = fzi;
  };
  return over_rows<EV>("md::pair::force_full", begin, end, order, body);
}

}  // namespace impl

// The diagonal of the pair virial, sum of r_a F_a (a = x, y, z) over the pairs of every row, weighted as
// compute_pair_forces() weights the energy (a pair counts half where its other atom's rank or row counts it
// too): a pass of its own over the list, for the pressure tensor of an anisotropic barostat. The forces are not
// touched.
template <class Pair>
std::array<double, 3> pair_virial_diagonal(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pair) {
  auto x = atoms.x;
  auto neigh = list.neighbors;
  auto numneigh = list.numneigh;
  auto numghost = list.numghost;
  auto type = atoms.type;
  auto q = atoms.q;
  const int maxn = list.max_neighbors();
  const double w_owned = list.full() ? 0.5 : 1.0;
  const double w_ghost = list.full() ? 0.5 : (list.newton() ? 1.0 : 0.5);
  double v[3] = {0, 0, 0};
  Kokkos::parallel_reduce(
      "md::pair::virial_diagonal", Policy(0, atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& vx, double& vy, double& vz) {
        double fx = 0, fy = 0, fz = 0;
        const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
        double w = w_owned;
        auto tally = [&](int j, double px, double py, double pz, double, double, double) {
          vx += w * (xi - x(j, 0)) * px;
          vy += w * (yi - x(j, 1)) * py;
          vz += w * (zi - x(j, 2)) * pz;
        };
        impl::row_forces<false>(x, type, q, neigh, pair, i, 0, numneigh(i), fx, fy, fz, tally);
        w = w_ghost;
        impl::row_forces<false>(x, type, q, neigh, pair, i, maxn - numghost(i), maxn, fx, fy, fz, tally);
      },
      v[0], v[1], v[2]);
  return {v[0], v[1], v[2]};
}

// The diagonal of sum over atoms begin .. end-1 of (x - origin)_a f_a (a = x, y, z): under Newton, after the pair
// loop and before the ghosts' forces go back to their owners, that sum over the owned atoms and the ghosts is
// the pair virial (LAMMPS's virial_fdotr_compute), a pass over the atoms where a per-pair tally adds work to
// every pair. The forces summing to zero, the origin (the box's corner) changes nothing but the round-off of
// the sum, which it keeps that of the box's size, not of where the box lies.
inline std::array<double, 3> fdotr_virial(const AtomStore& atoms, int begin, int end, const std::array<double, 3>& origin) {
  if (begin >= end) return {0, 0, 0};
  auto x = atoms.x;
  auto f = atoms.f;
  const double ox = origin[0], oy = origin[1], oz = origin[2];
  double v[3] = {0, 0, 0};
  Kokkos::parallel_reduce(
      "md::pair::virial_fdotr", Policy(begin, end),
      KOKKOS_LAMBDA(int i, double& vx, double& vy, double& vz) {
        vx += (x(i, 0) - ox) * f(i, 0);
        vy += (x(i, 1) - oy) * f(i, 1);
        vz += (x(i, 2) - oz) * f(i, 2);
      },
      v[0], v[1], v[2]);
  return {v[0], v[1], v[2]};
}

// Whether the host's half-list loop first drops the pairs beyond the cutoff (impl::stream_forces_host, over
// the rows laid end to end): where the largest cutoff of the table encloses less than k_sparse_share of the list's sphere
// (cutneigh = cutoff + skin), as in a WCA melt (2^(1/6) sigma + 0.4: 40 %), most listed pairs add nothing and
// the masked loop would evaluate them all; a liquid's LJ at 2.5 sigma + 0.3 (71 %) keeps the masked loop. A
// choice by the coefficients and the skin alone, the same on every step and rank. Host memory only.
// sparse_reach() is the rule on the squares of the largest cutoff and of cutneigh (the memory estimate takes it
// from the deck), pair_list_sparse() applies it to a table and a list.
constexpr double k_sparse_share = 0.5;
inline bool sparse_reach(double cutsq, double cutneigh_sq) {
  const double r = cutneigh_sq > 0 ? cutsq / cutneigh_sq : 1.0;
  return r * std::sqrt(r) < k_sparse_share;
}
template <class Pair>
bool pair_list_sparse(const NeighborList& list, const PairTable<Pair>& pair) {
  double cutsq = 0;
  const int n = static_cast<int>(pair.table.extent(0));
  for (int i = 1; i < n; ++i)
    for (int j = 1; j < n; ++j) cutsq = std::max(cutsq, static_cast<double>(pair.table(i, j).cutsq));
  return sparse_reach(cutsq, list.cutneigh_sq());
}

// Whether the list's builds lay its rows out end to end for the pair table (NeighborList::stream_rows()): a
// half list in host memory whose pairs are sparse (pair_list_sparse()); compute_pair_forces() then takes
// impl::stream_forces_host().
template <class Pair>
bool pair_rows_streamed(const NeighborList& list, const PairTable<Pair>& pair) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible)
    return !list.full() && pair_list_sparse(list, pair);
  else
    return false;
}

// The pair forces on the owned atoms of rows list.order(begin .. end-1) (all rows: 0, -1) added to atoms.f
// (which the caller zeroes), through the list's kind. With EV, also their energy and virial (a reduction the
// host waits for; without EV nothing returns to it); with EV and not E the virial without the energies where
// that saves work (the host's half list; the energy of the tally is then 0 there).
template <bool EV, bool E = EV, class Pair>
PairTally compute_pair_forces(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pair,
                              ForceScatter& scatter, int begin = 0, int end = -1) {
  if (end < 0) end = atoms.nlocal;
  if (begin >= end) return PairTally{};
  if (list.full()) return impl::full_list_forces<EV>(atoms, list, pair, begin, end);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible) {
    // One type: the table holds types 1..1.
    const bool one = pair.table.extent(0) == 2;
    if (list.streamed())
      return one ? impl::stream_forces_host<EV, E, true>(atoms, list, pair, scatter, begin, end)
                 : impl::stream_forces_host<EV, E, false>(atoms, list, pair, scatter, begin, end);
    return one ? impl::half_list_forces_host<EV, true, E>(atoms, list, pair, scatter, begin, end)
               : impl::half_list_forces_host<EV, false, E>(atoms, list, pair, scatter, begin, end);
  } else {
    return impl::half_list_forces_device<EV>(atoms, list, pair, scatter, begin, end);
  }
}

}  // namespace spotrun::md
