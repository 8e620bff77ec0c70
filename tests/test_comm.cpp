// The communication layer (docs/comm.md): the batched transports and the staging wrapper, the MD
// migration and ghost plans against brute-force computations, the movers with messages to this rank
// routed through the transport and with forced staging (bit for bit the same physics), and the
// host-copy accounting of a time step. At 1, 2, 3 and 4 ranks, with uneven boxes and atom counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "comm/copy_counter.hpp"
#include "comm/impl/transport_mpi.hpp"
#include "comm/process_grid.hpp"
#include "comm/staging.hpp"
#include "comm/transport.hpp"
#include "solvers/fft/distributed_fft.hpp"
#include "solvers/fluid/fluid_solver.hpp"
#include "solvers/md/halo.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;

namespace {

// Whether this build, under its rules (comm::device_rules()), provides the transport `kind`: "mpi" on a
// device build needs a GPU-aware MPI. The tests of one transport run it where it is provided and check
// that it is refused where not (a CPU run under SPOTRUN_TEST_DEVICE_RULES=1 with a plain MPI).
bool provided(const std::string& kind) {
  if (kind == "mpi") return !comm::device_rules() || comm::impl::mpi_is_gpu_aware();
  return true;
}

// The kinds of `kinds` this build provides; reports each left out, and checks that it is refused.
std::vector<std::string> provided_kinds(std::initializer_list<const char*> kinds) {
  std::vector<std::string> out;
  for (const char* k : kinds) {
    if (provided(k)) {
      out.emplace_back(k);
      continue;
    }
    EXPECT_THROW(comm::make_transport(k, test::world()), InputError) << k;
    test::report(std::string("transport \"") + k + "\" skipped: refused under the device build's rules (MPI not GPU-aware)");
  }
  return out;
}

comm::TransportOptions options(const std::string& kind, bool route_self = false, bool force_staging = false) {
  comm::TransportOptions o;
  o.kind = kind;
  o.route_self = route_self;
  o.force_staging = force_staging;
  return o;
}

// ---- transports -------------------------------------------------------------------------------------------

// Every rank sends every rank (itself included) a message of its own length and content; the receiver
// checks each byte. posted: through post(), test() until it says done, and complete().
void check_all_to_all(comm::Transport& t, bool posted = false) {
  const int me = test::rank(), n = test::nranks();
  auto length = [](int from, int to) { return static_cast<std::size_t>(97 * from + 13 * to + 5 + (from == to ? 0 : 3000)); };
  auto byte = [](int from, int to, std::size_t k) { return static_cast<unsigned char>((from * 31 + to * 7 + k) % 251); };
  std::vector<std::vector<unsigned char>> out(n), in(n);
  comm::Batch batch;
  batch.memory = comm::Memory::host;
  for (int r = 0; r < n; ++r) {
    out[r].resize(length(me, r));
    for (std::size_t k = 0; k < out[r].size(); ++k) out[r][k] = byte(me, r, k);
    in[r].assign(length(r, me), 0);
    batch.send(r, out[r].data(), out[r].size());
    batch.recv(r, in[r].data(), in[r].size());
  }
  if (posted) {
    t.post(batch);
    while (!t.test()) {
    }
    t.complete();
  } else {
    t.exchange(batch);
  }
  std::size_t wrong = 0;
  for (int r = 0; r < n; ++r)
    for (std::size_t k = 0; k < in[r].size(); ++k) wrong += in[r][k] != byte(r, me, k);
  EXPECT_EQ(wrong, 0u) << t.name();
}

TEST(Transport, EveryKindMovesEveryMessageOfABatch) {
  for (const std::string& kind : provided_kinds({"auto", "mpi", "mpi-host"})) {
    auto t = comm::make_transport(kind, test::world());
    check_all_to_all(*t);
    EXPECT_EQ(t->staged_bytes(), 0u) << kind << ": host buffers on a host build need no staging";
  }
  EXPECT_THROW(comm::make_transport("carrier-pigeon", test::world()), InputError);
}

TEST(Transport, PostedExchangesMoveEveryMessageToo) {
  for (const auto& o : {options("mpi"), options("mpi-host"), options("mpi", true), options("mpi-host", false, true)}) {
    if (!provided(o.kind)) continue;  // checked refused in EveryKindMovesEveryMessageOfABatch
    auto t = comm::make_transport(o, test::world());
    check_all_to_all(*t, true);
    check_all_to_all(*t);  // and an exchange after it
  }
  // One posted batch at a time: MPI refuses a second post() before complete().
  auto t = comm::make_transport("auto", test::world());
  std::vector<char> out(4000, 'x'), in(4000);
  comm::Batch batch;
  batch.send(test::rank(), out.data(), out.size());
  batch.recv(test::rank(), in.data(), in.size());
  t->post(batch);
  EXPECT_THROW(t->post(batch), std::logic_error);
  t->complete();
  EXPECT_EQ(in, out);
}

TEST(Transport, ForcedStagingCopiesExactlyTheBytesOfTheBatch) {
  auto t = comm::make_transport(options("mpi-host", false, true), test::world());
  check_all_to_all(*t);
  std::size_t expected = 0;
  const int me = test::rank(), n = test::nranks();
  for (int r = 0; r < n; ++r)
    expected += static_cast<std::size_t>(97 * me + 13 * r + 5 + (me == r ? 0 : 3000)) +
                static_cast<std::size_t>(97 * r + 13 * me + 5 + (me == r ? 0 : 3000));
  EXPECT_EQ(t->staged_bytes(), expected);
}

// The staged path moves a device batch with one copy down and one up: every rank sends every rank
// (itself included) 33 messages of 0-60 bytes, more than one pack kernel takes. Separate buffers need
// the pack and unpack kernels; messages lying back to back in one buffer are copied in place.
TEST(StagedTransport, OneCopyEachWayWithPackKernelsOrInPlace) {
  using Bytes = Kokkos::View<char*, Kokkos::DefaultExecutionSpace::memory_space>;
  const int me = test::rank(), n = test::nranks();
  constexpr int per_peer = 33;
  auto length = [](int from, int to, int k) { return static_cast<std::size_t>((7 * from + 11 * to + 13 * k) % 61); };
  auto byte = [](int from, int to, int k, std::size_t i) {
    return static_cast<char>((from * 31 + to * 7 + k * 3 + i) % 251);
  };
  for (bool in_place : {false, true}) {
    comm::StagedTransport t(std::make_unique<comm::impl::TransportMpi>(test::world(), comm::Accepts::host, true), true);
    comm::Batch batch;
    batch.memory = comm::Memory::device;
    std::vector<Bytes> sends, recvs;  // separate buffers, or one of each (in place)
    std::size_t send_total = 0, recv_total = 0;
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < per_peer; ++k) {
        send_total += length(me, r, k);
        recv_total += length(r, me, k);
      }
    if (in_place) {
      sends.emplace_back("send", send_total);
      recvs.emplace_back("recv", recv_total);
    }
    std::size_t so = 0, ro = 0;
    std::vector<std::pair<std::size_t, std::size_t>> where;  // (buffer, offset) of each receive
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < per_peer; ++k) {
        const std::size_t sl = length(me, r, k), rl = length(r, me, k);
        if (!in_place) {
          sends.emplace_back("send", sl);
          recvs.emplace_back("recv", rl);
        }
        Bytes& sb = sends.back();
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb);
        const std::size_t at = in_place ? so : 0;
        for (std::size_t i = 0; i < sl; ++i) h(at + i) = byte(me, r, k, i);
        Kokkos::deep_copy(sb, h);
        batch.send(r, sb.data() + at, sl);
        batch.recv(r, recvs.back().data() + (in_place ? ro : 0), rl);
        where.emplace_back(recvs.size() - 1, in_place ? ro : 0);
        so += sl;
        ro += rl;
      }
    t.exchange(batch, nullptr);
    std::size_t wrong = 0, m = 0;
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < per_peer; ++k, ++m) {
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), recvs[where[m].first]);
        for (std::size_t i = 0; i < length(r, me, k); ++i) wrong += h(where[m].second + i) != byte(r, me, k, i);
      }
    const std::string what = in_place ? "back to back" : "separate buffers";
    EXPECT_EQ(wrong, 0u) << what;
    EXPECT_EQ(t.staged_bytes(), send_total + recv_total) << what;
    const auto& st = t.stats();
    EXPECT_EQ(st.exchanges, 1u);
    EXPECT_EQ(st.copies_down, 1u) << what << ": one copy down";
    EXPECT_EQ(st.copies_up, 1u) << what << ": one copy up";
    EXPECT_EQ(st.pack_kernels, in_place ? 0u : 1u) << what;
    EXPECT_EQ(st.unpack_kernels, in_place ? 0u : 1u) << what;
  }
}

// ---- the MD migration plan ---------------------------------------------------------------------------------

// A box whose sides differ, split by the grid the MD solver would choose, with an uneven number of
// random atoms per rank, each moved by up to 90 % of a sub-box (never further: that would be a loss).
// The ids are beyond 2^53, where a double would round them.
struct Scatter {
  comm::Box3 box;
  std::unique_ptr<comm::ProcessGrid> grid;
  md::AtomStore atoms;
  std::map<std::int64_t, std::array<double, 3>> unwrapped;  // global: id -> position + image * L
};

double uniform(std::mt19937_64& rng, double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); }

std::unique_ptr<Scatter> scatter(double cutneigh, unsigned seed) {
  auto s = std::make_unique<Scatter>();
  s->box.hi = {11.0, 8.5, 7.25};
  const auto dims = comm::choose_grid(test::nranks(), {11.0, 8.5, 7.25}, cutneigh);
  s->grid = std::make_unique<comm::ProcessGrid>(test::world(), s->box, dims);
  const auto& sub = s->grid->sub_box();
  std::mt19937_64 rng(seed + 1000 * test::rank());
  const int n = 40 + 23 * test::rank();
  s->atoms.reserve(n);
  s->atoms.nlocal = n;
  auto x = Kokkos::create_mirror_view(s->atoms.x);
  auto v = Kokkos::create_mirror_view(s->atoms.v);
  auto id = Kokkos::create_mirror_view(s->atoms.id);
  auto type = Kokkos::create_mirror_view(s->atoms.type);
  auto image = Kokkos::create_mirror_view(s->atoms.image);
  std::vector<std::int64_t> mine;
  for (int i = 0; i < n; ++i) {
    id(i) = (std::int64_t(1) << 60) + 1 + 1000 * test::rank() + i;  // beyond 2^53: ids must move exactly
    type(i) = 1 + i % 3;
    for (int d = 0; d < 3; ++d) {
      const double w = sub.length(d);
      x(i, d) = uniform(rng, sub.lo[d], sub.hi[d]) + uniform(rng, -0.9, 0.9) * w;
      v(i, d) = uniform(rng, -1, 1);
      image(i, d) = static_cast<int>(i % 5) - 2;
    }
  }
  Kokkos::deep_copy(s->atoms.x, x);
  Kokkos::deep_copy(s->atoms.v, v);
  Kokkos::deep_copy(s->atoms.id, id);
  Kokkos::deep_copy(s->atoms.type, type);
  Kokkos::deep_copy(s->atoms.image, image);
  // Every rank knows every atom's unwrapped position (the invariant migration keeps).
  std::vector<std::int64_t> flat;
  for (int i = 0; i < n; ++i) {
    flat.push_back(id(i));
    for (int d = 0; d < 3; ++d) {
      const double u = x(i, d) + image(i, d) * s->box.length(d);
      std::int64_t bits = 0;
      std::memcpy(&bits, &u, sizeof bits);
      flat.push_back(bits);
    }
  }
  const auto all = test::world().all_gather(flat);
  for (std::size_t k = 0; k < all.size(); k += 4) {
    std::array<double, 3> u{};
    for (int d = 0; d < 3; ++d) std::memcpy(&u[d], &all[k + 1 + d], sizeof(double));
    s->unwrapped[all[k]] = u;
  }
  return s;
}

// The rank that owns an unwrapped position, computed from the box and the grid alone.
int brute_force_owner(const Scatter& s, const std::array<double, 3>& u) {
  const auto& dims = s.grid->dims();
  std::array<int, 3> c{};
  for (int d = 0; d < 3; ++d) {
    const double L = s.box.length(d);
    double w = std::fmod(u[d] - s.box.lo[d], L);
    if (w < 0) w += L;
    c[d] = std::min(dims[d] - 1, static_cast<int>(w / (L / dims[d])));
  }
  // The rank at those grid coordinates: ask the grid with a point in the middle of that sub-box.
  double p[3];
  for (int d = 0; d < 3; ++d) p[d] = s.box.lo[d] + (c[d] + 0.5) * s.box.length(d) / dims[d];
  return s.grid->owner_of(p);
}

TEST(MigrationPlan, EveryAtomEndsOnTheRankABruteForceComputationNames) {
  for (const std::string& kind : provided_kinds({"mpi", "mpi-host"})) {
    auto s = scatter(2.8, 17);
    auto t = comm::make_transport(options(kind, true, kind == "mpi-host"), test::world());
    md::Halo halo(test::world(), *s->grid, *t, 2.8);
    EXPECT_EQ(halo.migrate(s->atoms), 0);
    const int n = s->atoms.nlocal;
    auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s->atoms.x);
    auto id = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s->atoms.id);
    auto image = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s->atoms.image);
    const auto& sub = s->grid->sub_box();
    int misplaced = 0, outside = 0, moved = 0;
    std::vector<std::int64_t> ids;
    for (int i = 0; i < n; ++i) {
      ids.push_back(id(i));
      const auto& u = s->unwrapped.at(id(i));
      misplaced += brute_force_owner(*s, u) != test::rank();
      for (int d = 0; d < 3; ++d) {
        outside += x(i, d) < sub.lo[d] || x(i, d) >= sub.hi[d];
        moved += std::abs(x(i, d) + image(i, d) * s->box.length(d) - u[d]) > 1e-12 * s->box.length(d);
      }
    }
    EXPECT_EQ(misplaced, 0) << kind;
    EXPECT_EQ(outside, 0) << kind;
    EXPECT_EQ(moved, 0) << kind << ": position + image * L changed";
    // Every atom is somewhere, once.
    auto all = test::world().all_gather(ids);
    std::sort(all.begin(), all.end());
    std::vector<std::int64_t> want;
    for (const auto& kv : s->unwrapped) want.push_back(kv.first);
    EXPECT_EQ(all, want) << kind;
  }
}

// ---- the MD ghost plan --------------------------------------------------------------------------------------

// Ghosts after build(): every periodic image of every atom that lies within cutneigh of this rank's
// sub-box (and is not an owned atom itself) arrives, once; nothing else does. Images within 1e-9 of the
// region's boundary may go either way (the halo decides by the sender's coordinates).
TEST(GhostPlan, GhostsAreExactlyTheImagesNearTheSubBox) {
  const double cut = 2.8;
  auto s = scatter(cut, 29);
  auto t = comm::make_transport("auto", test::world());
  md::Halo halo(test::world(), *s->grid, *t, cut);
  halo.migrate(s->atoms);
  halo.build(s->atoms);
  const auto& sub = s->grid->sub_box();
  // What arrived: (id, position).
  auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s->atoms.x);
  auto id = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s->atoms.id);
  std::multimap<std::int64_t, std::array<double, 3>> got;
  for (int i = s->atoms.nlocal; i < s->atoms.nall(); ++i) got.insert({id(i), {x(i, 0), x(i, 1), x(i, 2)}});
  // What should: images of every atom, from its wrapped position (after migration), brute force.
  std::vector<std::int64_t> flat;
  for (int i = 0; i < s->atoms.nlocal; ++i) {
    flat.push_back(id(i));
    for (int d = 0; d < 3; ++d) {
      std::int64_t bits = 0;
      std::memcpy(&bits, &x(i, d), sizeof bits);
      flat.push_back(bits);
    }
  }
  const auto all = test::world().all_gather(flat);
  int missing = 0, extra = 0, checked = 0;
  const double eps = 1e-9;
  auto inside = [&](const std::array<double, 3>& p, double margin) {
    for (int d = 0; d < 3; ++d)
      if (p[d] < sub.lo[d] - cut + margin || p[d] >= sub.hi[d] + cut - margin) return false;
    return true;
  };
  auto owned_here = [&](const std::array<double, 3>& p) {
    for (int d = 0; d < 3; ++d)
      if (p[d] < sub.lo[d] || p[d] >= sub.hi[d]) return false;
    return true;
  };
  for (std::size_t k = 0; k < all.size(); k += 4) {
    std::array<double, 3> p0{};
    for (int d = 0; d < 3; ++d) std::memcpy(&p0[d], &all[k + 1 + d], sizeof(double));
    for (int a = -1; a <= 1; ++a)
      for (int b = -1; b <= 1; ++b)
        for (int c = -1; c <= 1; ++c) {
          const int sh[3] = {a, b, c};
          std::array<double, 3> p{};
          for (int d = 0; d < 3; ++d) p[d] = p0[d] + sh[d] * s->box.length(d);
          if (a == 0 && b == 0 && c == 0 && owned_here(p)) continue;  // the atom itself
          const bool surely_in = inside(p, eps), maybe_in = inside(p, -eps);
          auto range = got.equal_range(all[k]);
          int found = 0;
          for (auto it = range.first; it != range.second; ++it) {
            bool same = true;
            for (int d = 0; d < 3; ++d) same = same && std::abs(it->second[d] - p[d]) < 1e-9;
            found += same;
          }
          if (surely_in) {
            ++checked;
            missing += found != 1;
          } else if (!maybe_in) {
            extra += found != 0;
          }
        }
  }
  // Every ghost that arrived is one of the images.
  int unexplained = 0;
  for (const auto& kv : got) unexplained += !inside(kv.second, -eps);
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(extra, 0);
  EXPECT_EQ(unexplained, 0);
  EXPECT_GT(checked, 0);
  EXPECT_EQ(static_cast<long long>(got.size()), halo.ghost_count());
}

// ---- movers through the transport: the same physics bit for bit ---------------------------------------------

std::vector<test::ThermoRow> md_rows(const comm::TransportOptions& o) {
  auto cfg = test::lattice_config({6, 5, 7}, 2.0);
  auto t = comm::make_transport(o, test::world());
  md::MdSolver s(cfg, test::world(), *t, nullptr);
  return test::run_thermo(s, 60, 20);  // liquid at T = 2: several neighbour rebuilds and migrations
}

TEST(Movers, SelfMessagesAndStagingThroughTheTransportChangeNothing) {
  const auto plain = md_rows(options("auto"));
  for (const auto& o : {options("auto", true), options("mpi-host", true, true), options("mpi-host", false, true)}) {
    const auto rows = md_rows(o);
    ASSERT_EQ(rows.size(), plain.size());
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (int c = 0; c < 7; ++c)
        EXPECT_EQ(rows[r][c], plain[r][c]) << o.kind << " route_self=" << o.route_self << " row " << r << " "
                                           << test::k_thermo_names[c];
  }
}

TEST(Movers, FftTransposesWithTheOwnBlockThroughTheTransportChangeNothing) {
  const auto g = fft::make_fft_geometry({12, 10, 9}, test::nranks(), fft::Decomposition::Pencil);
  std::vector<std::vector<double>> results;
  for (bool route : {false, true}) {
    auto t = comm::make_transport(options("mpi-host", route, route), test::world());
    fft::DistributedFft f(g, test::world(), *t, fft::backend::Default{});
    fft::RealView x("x", f.real_size());
    fft::ComplexView X("X", f.complex_size());
    auto hx = Kokkos::create_mirror_view(x);
    for (std::size_t i = 0; i < hx.extent(0); ++i) hx(i) = std::sin(0.37 * i + test::rank());
    Kokkos::deep_copy(x, hx);
    f.forward(x.data(), X.data());
    auto hX = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
    std::vector<double> flat;
    for (std::size_t i = 0; i < hX.extent(0); ++i) {
      flat.push_back(hX(i).real());
      flat.push_back(hX(i).imag());
    }
    results.push_back(flat);
    if (route) {
      EXPECT_GT(t->staged_bytes(), 0u);
    }
  }
  EXPECT_TRUE(results[0] == results[1]);
}

// ---- host-copy accounting ----------------------------------------------------------------------------------

// A step without a neighbour rebuild copies nothing between memory spaces, and the host-staged path
// copies exactly the bytes of the halo's position update (and, under Newton, of the ghost forces sent
// back).
TEST(HostCopies, AnMdStepCopiesOnlyTheHaloThroughTheStaging) {
  comm::start_counting_copies();
  ASSERT_TRUE(comm::counting_copies());
  auto cfg = test::lattice_config({6, 5, 7}, 0.5);
  cfg.neighbor_every = 1000;  // no rebuild in the steps measured
  auto t = comm::make_transport(options("mpi-host", false, true), test::world());
  md::MdSolver s(cfg, test::world(), *t, nullptr);
  s.setup();
  s.step(false);
  const long long builds = s.neighbor_builds();
  const auto copies0 = comm::copies_between_spaces();
  const std::size_t staged0 = t->staged_bytes();
  for (int n = 0; n < 3; ++n) s.step(false);
  EXPECT_EQ(s.neighbor_builds(), builds);
  EXPECT_EQ(comm::copies_between_spaces().bytes, copies0.bytes);
  const std::size_t per_step = s.halo().position_bytes() + (s.newton() ? s.halo().force_bytes() : 0);
  EXPECT_EQ(t->staged_bytes() - staged0, 3 * per_step);
  if (test::nranks() > 1) {
    EXPECT_GT(s.halo().position_bytes(), 0u);
  }
}

TEST(HostCopies, AFluidStepCopiesNothingBetweenSpaces) {
  comm::start_counting_copies();
  fluid::FluidConfig cfg;
  cfg.n = {16, 12, 10};
  cfg.cfl = 0.4;  // an adaptive step: the integrating factor changes every step
  cfg.viscosity = 0.05;
  auto t = comm::make_transport("auto", test::world());
  fluid::FluidSolver s(cfg, test::world(), *t, false);
  s.setup();
  s.step(false);
  const auto copies0 = comm::copies_between_spaces();
  for (int n = 0; n < 3; ++n) s.step(false);
  EXPECT_EQ(comm::copies_between_spaces().bytes, copies0.bytes);
}

}  // namespace
