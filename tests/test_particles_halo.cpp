// The generic particle halo (solvers/particles/halo.hpp) against brute force, at 1, 2 and 4 ranks, with
// its messages to this rank itself copied by kernels and routed through the transport:
//  - build(): the ghosts are exactly the periodic images of the particles within the cutoff of this
//    rank's sub-box (enumerated over the 27 image shifts), each once, its position the owner's plus the
//    image shift bit for bit, and every other field (3-component and scalar doubles, 32- and 64-bit
//    integers, the ids beyond 2^53 where a double would round them) the owner's exactly;
//  - gather(): after the owners move and change, the ghosts follow through the same plan;
//  - scatter(): every owner receives the sum of the values of all its ghosts on all ranks;
//  - both in steps (the halo overlapped with computation): the same results bit for bit;
//  - integer fields and the position cannot be scattered; a plan without a position cannot be built.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "comm/process_grid.hpp"
#include "comm/transport.hpp"
#include "solvers/particles/halo.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 4);

using namespace spotrun;

namespace {

constexpr int k_particles = 700;
constexpr double k_cut = 1.9;
constexpr std::int64_t k_id_base = std::int64_t(1) << 60;  // ids beyond 2^53: a double would round them

std::int64_t id_of(int k) { return k_id_base + 7919 * static_cast<std::int64_t>(k) + 1; }
int type_of(int k, int version) { return version == 0 ? 2147483647 - 3 * k : -100000 - 11 * k; }
double q_of(int k, int version) { return (version == 0 ? 0.1 : -0.37) * k + 1.0 / 3.0; }
std::array<double, 3> v_of(int k) { return {std::sin(k + 0.5), -std::cos(0.25 * k), 1e-3 * k}; }

// A ghost (or expected ghost): particle k at image shift n (each in -1..1), coded as one number.
using Image = std::pair<int, int>;
int code_of(const std::array<int, 3>& n) { return (n[0] + 1) * 9 + (n[1] + 1) * 3 + (n[2] + 1); }

struct Particles {
  particles::Vec3View x{"x", 0}, v{"v", 0}, acc{"acc", 0};
  particles::DoubleView q{"q", 0}, w{"w", 0};
  particles::IntView type{"type", 0};
  particles::Int64View id{"id", 0};
  void resize(int n) {
    Kokkos::resize(x, n);
    Kokkos::resize(v, n);
    Kokkos::resize(acc, n);
    Kokkos::resize(q, n);
    Kokkos::resize(w, n);
    Kokkos::resize(type, n);
    Kokkos::resize(id, n);
  }
};

void check_halo(bool route_self) {
  const auto& world = test::world();
  comm::Box3 box;
  box.lo = {-1.5, 0.25, 2.0};
  box.hi = {7.5, 7.75, 10.25};  // 9 x 7.5 x 8.25
  const comm::ProcessGrid grid(world, box, comm::choose_grid(world.size(), {9.0, 7.5, 8.25}, k_cut));
  const auto& sub = grid.sub_box();
  const std::array<double, 3> L = {box.length(0), box.length(1), box.length(2)};
  for (int d = 0; d < 3; ++d) EXPECT_GE(sub.hi[d] - sub.lo[d], k_cut) << "dimension " << d;

  // The same particles on every rank, none within 1e-6 of a plane where the plan's choice could go
  // either way by rounding (a sub-box face, or a face +- the cutoff, in any image).
  std::mt19937_64 rng(12345);
  std::vector<std::array<double, 3>> p0;
  while (static_cast<int>(p0.size()) < k_particles) {
    std::array<double, 3> p{};
    bool clear = true;
    for (int d = 0; d < 3; ++d) {
      p[d] = box.lo[d] + L[d] * std::uniform_real_distribution<double>(0, 1)(rng);
      for (int i = 0; i <= grid.dims()[d]; ++i)
        for (double off : {-k_cut, 0.0, k_cut})
          for (int n = -1; n <= 1; ++n)
            clear = clear && std::abs(p[d] - (box.lo[d] + i * L[d] / grid.dims()[d] + off + n * L[d])) > 1e-6;
    }
    if (clear) p0.push_back(p);
  }
  auto owned_here = [&](const std::array<double, 3>& p) {
    for (int d = 0; d < 3; ++d)
      if (p[d] < sub.lo[d] || p[d] >= sub.hi[d]) return false;
    return true;
  };
  std::vector<int> mine;
  for (int k = 0; k < k_particles; ++k)
    if (owned_here(p0[k])) mine.push_back(k);
  const int nlocal = static_cast<int>(mine.size());
  EXPECT_EQ(world.sum(static_cast<std::int64_t>(nlocal)), k_particles);

  // Brute force: every image of every particle within the cutoff of the sub-box, but the owned ones.
  std::vector<Image> expected;
  for (int k = 0; k < k_particles; ++k)
    for (int a = -1; a <= 1; ++a)
      for (int b = -1; b <= 1; ++b)
        for (int c = -1; c <= 1; ++c) {
          const std::array<int, 3> n = {a, b, c};
          bool in = true;
          for (int d = 0; d < 3; ++d) {
            const double pd = p0[k][d] + n[d] * L[d];
            in = in && pd >= sub.lo[d] - k_cut && pd < sub.hi[d] + k_cut;
          }
          if (in && !(a == 0 && b == 0 && c == 0 && owned_here(p0[k]))) expected.push_back({k, code_of(n)});
        }
  std::sort(expected.begin(), expected.end());

  Particles P;
  P.resize(nlocal);
  {
    auto x = Kokkos::create_mirror_view(P.x);
    auto v = Kokkos::create_mirror_view(P.v);
    auto q = Kokkos::create_mirror_view(P.q);
    auto type = Kokkos::create_mirror_view(P.type);
    auto id = Kokkos::create_mirror_view(P.id);
    for (int i = 0; i < nlocal; ++i) {
      const int k = mine[i];
      for (int c = 0; c < 3; ++c) {
        x(i, c) = p0[k][c];
        v(i, c) = v_of(k)[c];
      }
      q(i) = q_of(k, 0);
      type(i) = type_of(k, 0);
      id(i) = id_of(k);
    }
    Kokkos::deep_copy(P.x, x);
    Kokkos::deep_copy(P.v, v);
    Kokkos::deep_copy(P.q, q);
    Kokkos::deep_copy(P.type, type);
    Kokkos::deep_copy(P.id, id);
  }

  comm::TransportOptions o;
  o.kind = "auto";  // the build's transport
  o.route_self = route_self;
  auto transport = comm::make_transport(o, world);
  particles::Halo halo(world, grid, *transport, k_cut);
  particles::Fields fields;
  fields.position(P.x).add(P.v).add(P.q).add(P.type).add(P.id);
  int grows = 0;
  const int nghost = halo.build(nlocal, fields, [&](int n) {
    ++grows;
    P.resize(n);
  });
  EXPECT_EQ(grows, 3);
  EXPECT_EQ(nghost, halo.ghost_count());
  EXPECT_EQ(halo.nlocal(), nlocal);
  EXPECT_EQ(static_cast<int>(P.x.extent(0)), nlocal + nghost);
  // The plan: swaps in order, their ghosts contiguous after the owned particles, shifts at the boundary.
  int next = nlocal;
  for (int s = 0; s < 6; ++s) {
    const auto& sw = halo.swaps()[s];
    EXPECT_EQ(sw.dim, s / 2);
    EXPECT_EQ(sw.dir, s % 2);
    EXPECT_EQ(sw.first_recv, next);
    next += sw.nrecv;
    const double want_shift = grid.at_boundary(sw.dim, sw.dir) ? (sw.dir == 0 ? L[sw.dim] : -L[sw.dim]) : 0.0;
    EXPECT_EQ(sw.shift, want_shift) << "swap " << s;
    const auto list = halo.send_list(s);
    EXPECT_EQ(static_cast<int>(list.size()), sw.nsend);
    for (int i : list) EXPECT_TRUE(i >= 0 && i < sw.first_recv) << "swap " << s << " sends " << i;
  }
  EXPECT_EQ(next, nlocal + nghost);

  // Which image each ghost is, from its id and position; every other field checked on the way.
  auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.x);
  auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.v);
  auto q = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.q);
  auto type = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.type);
  auto id = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.id);
  std::vector<Image> got;
  std::vector<int> ghost_k(nghost, -1);
  std::vector<std::array<int, 3>> ghost_n(nghost);
  int bad_id = 0, bad_position = 0, bad_field = 0;
  for (int j = 0; j < nghost; ++j) {
    const int g = nlocal + j;
    const std::int64_t rest = id(g) - k_id_base - 1;
    if (rest < 0 || rest % 7919 != 0 || rest / 7919 >= k_particles) {
      ++bad_id;
      continue;
    }
    const int k = static_cast<int>(rest / 7919);
    std::array<int, 3> n{};
    bool found = true;
    for (int d = 0; d < 3; ++d) {
      int hit = 0;
      for (int m = -1; m <= 1; ++m)
        if (x(g, d) == (m == 0 ? p0[k][d] : p0[k][d] + m * L[d])) {
          n[d] = m;
          ++hit;
        }
      found = found && hit == 1;
    }
    if (!found) {
      ++bad_position;
      continue;
    }
    ghost_k[j] = k;
    ghost_n[j] = n;
    got.push_back({k, code_of(n)});
    bool same = q(g) == q_of(k, 0) && type(g) == type_of(k, 0);
    for (int c = 0; c < 3; ++c) same = same && v(g, c) == v_of(k)[c];
    bad_field += !same;
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(bad_id, 0);
  EXPECT_EQ(bad_position, 0);
  EXPECT_EQ(bad_field, 0);
  EXPECT_EQ(got, expected) << "the ghosts are not the periodic images within the cutoff";
  EXPECT_GT(expected.size(), 0u);
  // Owned particles are untouched.
  int bad_owned = 0;
  for (int i = 0; i < nlocal; ++i) bad_owned += id(i) != id_of(mine[i]) || type(i) != type_of(mine[i], 0);
  EXPECT_EQ(bad_owned, 0);

  // gather(): the owners move and change their charge and type; the ghosts follow.
  auto moved = [&](int k) {
    std::array<double, 3> p = p0[k];
    for (int d = 0; d < 3; ++d) p[d] += 0.01 * std::sin(3.0 * k + d);
    return p;
  };
  for (int i = 0; i < nlocal; ++i) {
    const auto p = moved(mine[i]);
    for (int c = 0; c < 3; ++c) x(i, c) = p[c];
    q(i) = q_of(mine[i], 1);
    type(i) = type_of(mine[i], 1);
  }
  Kokkos::deep_copy(P.x, x);
  Kokkos::deep_copy(P.q, q);
  Kokkos::deep_copy(P.type, type);
  particles::Fields update;
  update.position(P.x).add(P.q).add(P.type);
  halo.gather(update);
  Kokkos::deep_copy(x, P.x);
  Kokkos::deep_copy(q, P.q);
  Kokkos::deep_copy(type, P.type);
  int bad_gather = 0;
  for (int j = 0; j < nghost; ++j) {
    const int k = ghost_k[j], g = nlocal + j;
    if (k < 0) continue;
    const auto p = moved(k);
    bool same = q(g) == q_of(k, 1) && type(g) == type_of(k, 1);
    for (int d = 0; d < 3; ++d) same = same && x(g, d) == (ghost_n[j][d] == 0 ? p[d] : p[d] + ghost_n[j][d] * L[d]);
    bad_gather += !same;
  }
  EXPECT_EQ(bad_gather, 0);

  // scatter(): ghost (rank r, image n of k) carries (code(n) + 1, r + 1, 1) and r + 1; each owner gets the
  // sum over all its ghosts on every rank. Small integers: exact in any order.
  auto acc = Kokkos::create_mirror_view(P.acc);
  auto w = Kokkos::create_mirror_view(P.w);
  std::vector<std::int64_t> flat;
  for (int i = 0; i < nlocal + nghost; ++i) {
    const bool ghost = i >= nlocal;
    const int j = i - nlocal;
    const double c = ghost && ghost_k[j] >= 0 ? code_of(ghost_n[j]) + 1.0 : 0.0;
    acc(i, 0) = ghost ? c : 0.0;
    acc(i, 1) = ghost ? world.rank() + 1.0 : 0.0;
    acc(i, 2) = ghost ? 1.0 : 0.0;
    w(i) = ghost ? world.rank() + 1.0 : 1000.0;
    if (ghost && ghost_k[j] >= 0) {
      flat.push_back(ghost_k[j]);
      flat.push_back(code_of(ghost_n[j]));
      flat.push_back(world.rank());
    }
  }
  Kokkos::deep_copy(P.acc, acc);
  Kokkos::deep_copy(P.w, w);
  particles::Fields sums;
  sums.add(P.acc).add(P.w);
  halo.scatter(sums);
  const auto all = world.all_gather(flat);
  std::map<int, std::array<double, 4>> want;  // k -> acc, w
  for (std::size_t e = 0; e + 2 < all.size(); e += 3) {
    auto& s = want[static_cast<int>(all[e])];
    s[0] += all[e + 1] + 1.0;
    s[1] += all[e + 2] + 1.0;
    s[2] += 1.0;
    s[3] += all[e + 2] + 1.0;
  }
  auto acc_after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.acc);
  auto w_after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), P.w);
  int bad_scatter = 0, summed = 0;
  for (int i = 0; i < nlocal; ++i) {
    const auto it = want.find(mine[i]);
    const std::array<double, 4> s = it == want.end() ? std::array<double, 4>{} : it->second;
    summed += it != want.end();
    bad_scatter += acc_after(i, 0) != s[0] || acc_after(i, 1) != s[1] || acc_after(i, 2) != s[2] ||
                   w_after(i) != 1000.0 + s[3];
  }
  EXPECT_EQ(bad_scatter, 0);
  EXPECT_GT(world.sum(static_cast<std::int64_t>(summed)), 0);

  // In steps (start_gather/progress/finish_gather, start_scatter/progress/finish_scatter): the results of
  // the one-call forms bit for bit, with values whose sums depend on their order. Between start and finish
  // of the scatter the caller adds to the owned values, as the MD force loop does.
  {
    auto fill = [&](particles::Vec3View& v, double scale) {
      auto h = Kokkos::create_mirror_view(v);
      for (int i = 0; i < static_cast<int>(h.extent(0)); ++i)
        for (int c = 0; c < 3; ++c) h(i, c) = scale * std::sin(0.37 * i + 1.3 * c + world.rank()) + 1.0 / 3.0;
      Kokkos::deep_copy(v, h);
    };
    particles::Vec3View xa("xa", nlocal + nghost), xb("xb", nlocal + nghost);
    Kokkos::deep_copy(xa, P.x);
    Kokkos::deep_copy(xb, P.x);
    particles::Fields fa, fb;
    fa.position(xa);
    fb.position(xb);
    halo.gather(fa);
    halo.start_gather(fb);
    // One halo operation at a time (a gather whose messages were all local is done at once).
    if (halo.gathering()) {
      EXPECT_THROW(halo.start_scatter(sums), std::logic_error);
    }
    for (int k = 0; k < 5 && !halo.progress(); ++k) {
    }
    halo.finish_gather();
    EXPECT_FALSE(halo.gathering());
    auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xa);
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xb);
    int differ = 0;
    for (int i = 0; i < nlocal + nghost; ++i)
      for (int c = 0; c < 3; ++c) differ += ha(i, c) != hb(i, c);
    EXPECT_EQ(differ, 0) << "a gather in steps differs from gather()";

    particles::Vec3View va("va", nlocal + nghost), vb("vb", nlocal + nghost), extra("extra", nlocal);
    fill(va, 1.0);
    fill(vb, 1.0);
    fill(extra, 1e-3);
    auto add_extra = [&](particles::Vec3View& v) {
      auto e = extra;
      Kokkos::parallel_for(
          "test::add_extra", Kokkos::RangePolicy<particles::ExecSpace>(0, nlocal), KOKKOS_LAMBDA(int i) {
            for (int c = 0; c < 3; ++c) v(i, c) += e(i, c);
          });
    };
    particles::Fields sa, sb;
    sa.add(va);
    sb.add(vb);
    add_extra(va);
    // The owned values before the scatter (a copy: a host mirror of host memory would be the view itself),
    // to see that it added something.
    auto before = Kokkos::create_mirror(va);
    Kokkos::deep_copy(before, va);
    halo.scatter(sa);
    halo.start_scatter(sb);
    if (halo.scattering()) {
      EXPECT_THROW(halo.start_gather(fb), std::logic_error);
    }
    halo.progress();
    add_extra(vb);
    for (int k = 0; k < 5 && !halo.progress(); ++k) {
    }
    halo.finish_scatter();
    EXPECT_FALSE(halo.scattering());
    auto sa_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), va);
    auto sb_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), vb);
    differ = 0;
    for (int i = 0; i < nlocal; ++i)
      for (int c = 0; c < 3; ++c) differ += sa_h(i, c) != sb_h(i, c);
    EXPECT_EQ(differ, 0) << "a scatter in steps differs from scatter()";
    // The sums are not trivially equal: the scatter changed the owned values.
    int changed = 0;
    for (int i = 0; i < nlocal; ++i) changed += sa_h(i, 0) != before(i, 0);
    EXPECT_GT(world.sum(static_cast<std::int64_t>(changed)), 0);
  }

  // The bytes a gather hands the transport: every message not copied locally, each field's block padded
  // to 8 bytes.
  std::size_t want_bytes = 0;
  for (const auto& sw : halo.swaps()) {
    if (sw.send_rank == world.rank() && !route_self) continue;
    for (int n : {sw.nsend, sw.nrecv}) want_bytes += 24 * n + 8 * ((4 * n + 7) / 8) + 8 * n;
  }
  particles::Fields xti;
  xti.position(P.x).add(P.type).add(P.id);
  EXPECT_EQ(halo.message_bytes(xti), want_bytes);

  // Refused before any message: integer fields and the position cannot be summed; no position, no plan.
  particles::Fields ints;
  ints.add(P.type);
  EXPECT_THROW(halo.scatter(ints), std::invalid_argument);
  particles::Fields pos;
  pos.position(P.x);
  EXPECT_THROW(halo.scatter(pos), std::invalid_argument);
  particles::Fields no_position;
  no_position.add(P.q);
  EXPECT_THROW(halo.build(nlocal, no_position, {}), std::invalid_argument);
  EXPECT_THROW(pos.position(P.v), std::invalid_argument);
}

TEST(ParticleHalo, MatchesBruteForceWithLocalCopies) { check_halo(false); }

TEST(ParticleHalo, MatchesBruteForceThroughTheTransport) { check_halo(true); }

}  // namespace
