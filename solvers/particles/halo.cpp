#include "halo.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "comm/exchange.hpp"
#include "impl/field_kernels.hpp"

namespace spotrun::particles {
namespace {

using namespace impl;
using Policy = Kokkos::RangePolicy<ExecSpace>;
using Range = std::pair<std::size_t, std::size_t>;

// Copies the particles of a send list to the ghosts from `first` on (a swap to this rank itself).
template <class V>
struct Copy {
  V v;
  IntView list;
  int first;
  bool shifted;
  int d;
  double shift;
  KOKKOS_INLINE_FUNCTION void operator()(int j) const {
    using E = Elem<V>;
    const int i = list(j), nc = E::count(v);
    for (int c = 0; c < nc; ++c) E::at(v, first + j, c) = sent(v, i, c, shifted, d, shift);
  }
};

// Packs the ghosts from `first` on, in order (scatter).
template <class V>
struct PackGhosts {
  V v;
  DoubleView buf;
  std::size_t word;
  int first;
  KOKKOS_INLINE_FUNCTION void operator()(int j) const {
    using E = Elem<V>;
    auto* r = reinterpret_cast<typename E::T*>(buf.data() + word);
    const int nc = E::count(v);
    for (int c = 0; c < nc; ++c) r[nc * j + c] = E::at(v, first + j, c);
  }
};

// Adds a block (or, with from_ghosts, the ghosts from `first` on) to the particles of a send list: those
// below `below` and from `from` on (every one: 0, INT_MAX; the owned ones: 0, nlocal; the ghosts: nlocal, ...).
template <class V>
struct Add {
  V v;
  IntView list;
  DoubleView buf;
  std::size_t word;
  int first;
  bool from_ghosts;
  int from = 0, below = std::numeric_limits<int>::max();
  KOKKOS_INLINE_FUNCTION void operator()(int j) const {
    using E = Elem<V>;
    const int i = list(j);
    if (i < from || i >= below) return;
    const int nc = E::count(v);
    if (from_ghosts) {
      for (int c = 0; c < nc; ++c) E::at(v, i, c) += E::at(v, first + j, c);
    } else {
      const auto* r = reinterpret_cast<const typename E::T*>(buf.data() + word);
      for (int c = 0; c < nc; ++c) E::at(v, i, c) += r[nc * j + c];
    }
  }
};

}  // namespace

// ---- Halo -----------------------------------------------------------------------------------------------------

Halo::Halo(const comm::Communicator& comm, const comm::ProcessGrid& grid, comm::Transport& transport, double cutoff)
    : m_comm(comm), m_grid(grid), m_transport(transport), m_cutoff(cutoff) {
  for (int d = 0; d < 3; ++d)
    for (int dir = 0; dir < 2; ++dir) {
      SwapInfo& s = m_swaps[2 * d + dir];
      s.dim = d;
      s.dir = dir;
      s.send_rank = grid.neighbor(d, dir);
      s.recv_rank = grid.neighbor(d, 1 - dir);
      m_lists[2 * d + dir] = IntView("particles::halo::sendlist", 0);
    }
  update_shifts();
  m_batch.memory = comm::memory_of<MemSpace>();
}

void Halo::update_shifts() {
  for (SwapInfo& s : m_swaps) {
    const double L = m_grid.global_box().length(s.dim);
    s.shift = m_grid.at_boundary(s.dim, s.dir) ? (s.dir == 0 ? L : -L) : 0.0;
  }
}

bool Halo::local(const SwapInfo& s) const { return s.send_rank == m_grid.rank() && !m_transport.route_self(); }

Halo::Layout Halo::layout(int d, const Fields& fields, bool reverse) {
  Layout l;
  std::size_t sent = 0, received = 0;
  for (int k = 0; k < 2; ++k) {
    const SwapInfo& s = m_swaps[2 * d + k];
    if (local(s)) continue;
    l.remote = true;
    l.nsend[k] = static_cast<std::size_t>(reverse ? s.nrecv : s.nsend);
    l.nrecv[k] = static_cast<std::size_t>(reverse ? s.nsend : s.nrecv);
    l.send_first[k] = sent;
    l.recv_first[k] = received;
    sent += message_words(fields, l.nsend[k]);
    received += message_words(fields, l.nrecv[k]);
  }
  if (l.remote) {
    ensure(m_send, sent);
    ensure(m_recv, received);
  }
  return l;
}

void Halo::post_dim(int d, const Layout& l, const Fields& fields, bool reverse) {
  m_batch.clear();
  for (int k = 0; k < 2; ++k) {
    const SwapInfo& s = m_swaps[2 * d + k];
    if (local(s)) continue;
    m_batch.send(reverse ? s.recv_rank : s.send_rank, m_send.data() + l.send_first[k],
                 message_words(fields, l.nsend[k]) * 8);
    m_batch.recv(reverse ? s.send_rank : s.recv_rank, m_recv.data() + l.recv_first[k],
                 message_words(fields, l.nrecv[k]) * 8);
  }
  comm::post(m_transport, m_batch, ExecSpace());
}

void Halo::exchange_dim(int d, const Layout& l, const Fields& fields, bool reverse) {
  post_dim(d, l, fields, reverse);
  m_transport.complete();
}

Halo::Layout Halo::pack_dim(int d, const Fields& fields) {
  const Layout l = layout(d, fields, false);
  for (int k = 0; k < 2; ++k) {
    const SwapInfo& s = m_swaps[2 * d + k];
    const IntView list = m_lists[2 * d + k];
    std::size_t word = l.send_first[k];
    for (const auto& f : fields.fields()) {
      visit(f, [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if (local(s))
          Kokkos::parallel_for("particles::halo::copy", Policy(0, s.nsend),
                               Copy<V>{v, list, s.first_recv, f.shifted, d, s.shift});
        else
          Kokkos::parallel_for("particles::halo::pack", Policy(0, s.nsend),
                               Pack<V>{v, list, m_send, word, f.shifted, d, s.shift});
      });
      word += block_words(f, l.nsend[k]);
    }
  }
  return l;
}

template <class Launch>
void Halo::for_each_remote_block(int d, const std::array<std::size_t, 2>& first, const std::array<std::size_t, 2>& count,
                                 const Fields& fields, Launch&& launch) {
  for (int k = 0; k < 2; ++k) {
    const SwapInfo& s = m_swaps[2 * d + k];
    if (local(s)) continue;
    std::size_t word = first[k];
    for (const auto& f : fields.fields()) {
      visit(f, [&](const auto& v) { launch(s, v, word); });
      word += block_words(f, count[k]);
    }
  }
}

void Halo::unpack_dim(int d, const Layout& l, const Fields& fields) {
  for_each_remote_block(d, l.recv_first, l.nrecv, fields, [&](const SwapInfo& s, const auto& v, std::size_t word) {
    using V = std::decay_t<decltype(v)>;
    Kokkos::parallel_for("particles::halo::unpack", Policy(0, s.nrecv), Unpack<V>{v, m_recv, word, s.first_recv});
  });
}

void Halo::gather_dim(int d, const Fields& fields) {
  const Layout l = pack_dim(d, fields);
  if (!l.remote) return;  // both swaps were local copies
  exchange_dim(d, l, fields, false);
  unpack_dim(d, l, fields);
}

namespace {
// Whether a particle at coordinate xi goes with the first swap of a dimension (bit 0) and with the second (bit
// 32): a swap to the lower neighbour takes those below `lower`, one to the upper those at or above `upper`.
KOKKOS_INLINE_FUNCTION std::int64_t swap_bits(double xi, double lower, double upper, bool first_lower,
                                              bool second_lower) {
  const std::int64_t lo = xi < lower ? 1 : 0, hi = xi >= upper ? 1 : 0;
  return (first_lower ? lo : hi) | ((second_lower ? lo : hi) << 32);
}
}  // namespace

int Halo::build(int nlocal, const Fields& fields, const Grow& grow) {
  check_idle("build");
  const Vec3View* position = fields.position_view();
  if (!position) throw std::invalid_argument("particles::Halo::build: the fields have no position");
  const auto& sub = m_grid.sub_box();
  m_nlocal = nlocal;
  int nall = nlocal;
  for (int d = 0; d < 3; ++d) {
    // Both directions select from the owned particles and the ghosts of earlier dimensions.
    const int nlast = nall;
    const Vec3View x = *position;
    // The lower swap sends the particles within the cutoff of the lower face, the upper swap of the upper: both
    // lists in index order, from one counting pass and one selecting pass over the particles for the two (the
    // two counts in one 64-bit sum: the lower's in the low 32 bits, the upper's in the high).
    const double lower = sub.lo[d] + m_cutoff, upper = sub.hi[d] - m_cutoff;
    const bool first_lower = m_swaps[2 * d].dir == 0, second_lower = m_swaps[2 * d + 1].dir == 0;
    std::int64_t both = 0;
    Kokkos::parallel_reduce(
        "particles::halo::count", Policy(0, nlast),
        KOKKOS_LAMBDA(int i, std::int64_t& c) { c += swap_bits(x(i, d), lower, upper, first_lower, second_lower); },
        both);
    const std::array<std::uint64_t, 2> nsend{static_cast<std::uint64_t>(both & 0xffffffff),
                                             static_cast<std::uint64_t>(both >> 32)};
    for (int k = 0; k < 2; ++k) {
      ensure(m_lists[2 * d + k], static_cast<std::size_t>(nsend[k]));
      m_swaps[2 * d + k].nsend = static_cast<int>(nsend[k]);
    }
    auto first = m_lists[2 * d], second = m_lists[2 * d + 1];
    Kokkos::parallel_scan(
        "particles::halo::select", Policy(0, nlast), KOKKOS_LAMBDA(int i, std::int64_t& offset, bool final) {
          const std::int64_t in = swap_bits(x(i, d), lower, upper, first_lower, second_lower);
          if (final && (in & 0xffffffff)) first(static_cast<int>(offset & 0xffffffff)) = i;
          if (final && (in >> 32)) second(static_cast<int>(offset >> 32)) = i;
          offset += in;
        });
    std::vector<std::uint64_t> incoming;
    m_comm.exchange_counts({m_swaps[2 * d].send_rank, m_swaps[2 * d + 1].send_rank}, {nsend[0], nsend[1]},
                           {m_swaps[2 * d].recv_rank, m_swaps[2 * d + 1].recv_rank}, incoming);
    const int nrecv = static_cast<int>(incoming[0] + incoming[1]);
    if (grow) grow(nall + nrecv);
    // The lower swap's ghosts first.
    for (int k = 0; k < 2; ++k) {
      SwapInfo& s = m_swaps[2 * d + k];
      s.nrecv = static_cast<int>(incoming[k]);
      s.first_recv = nall;
      nall += s.nrecv;
    }
    gather_dim(d, fields);
  }
  return nall - nlocal;
}

void Halo::gather(const Fields& fields) {
  start_gather(fields);
  finish_gather();
}

void Halo::check_idle(const char* what) const {
  if (m_gathering || m_scattering)
    throw std::logic_error(std::string("particles::Halo::") + what + ": a halo operation is in progress");
}

void Halo::begin_flight(const Fields& fields, int first_dim) {
  m_flight = fields;
  m_flight_dim = first_dim;
  m_flight_posted = false;
}

void Halo::start_gather(const Fields& fields) {
  check_idle("start_gather");
  begin_flight(fields, 0);
  m_gathering = true;
  advance_gather(false);
}

bool Halo::progress() {
  if (m_gathering) return advance_gather(false);
  if (m_scattering) return advance_scatter(false);
  return true;
}

void Halo::finish_gather() {
  if (m_gathering) advance_gather(true);
}

bool Halo::advance_gather(bool wait) {
  // Dimension by dimension, as gather_dim(): the ghosts of a dimension are packed (forwarded) by the next
  // one, so its messages are posted once those of the one before have been unpacked.
  while (m_flight_dim < 3) {
    if (m_flight_posted) {
      if (!wait && !m_transport.test()) return false;
      m_transport.complete();
      m_flight_posted = false;
      unpack_dim(m_flight_dim, m_flight_layout, m_flight);
      ++m_flight_dim;
      continue;
    }
    m_flight_layout = pack_dim(m_flight_dim, m_flight);
    if (!m_flight_layout.remote) {
      ++m_flight_dim;
      continue;
    }
    post_dim(m_flight_dim, m_flight_layout, m_flight, false);
    m_flight_posted = true;
  }
  m_gathering = false;
  return true;
}

void Halo::check_scatter_fields(const Fields& fields) const {
  for (const auto& f : fields.fields())
    if (f.shifted || (f.kind != Fields::Kind::vec3 && f.kind != Fields::Kind::scalar))
      throw std::invalid_argument(
          "particles::Halo::scatter: only double fields other than the position can be summed onto their owners");
}

void Halo::pack_ghosts_dim(int d, const Layout& l, const Fields& fields) {
  for_each_remote_block(d, l.send_first, l.nsend, fields, [&](const SwapInfo& s, const auto& v, std::size_t word) {
    using V = std::decay_t<decltype(v)>;
    Kokkos::parallel_for("particles::halo::pack_ghosts", Policy(0, s.nrecv), PackGhosts<V>{v, m_send, word, s.first_recv});
  });
}

void Halo::scatter(const Fields& fields) {
  check_idle("scatter");
  check_scatter_fields(fields);
  for (int d = 2; d >= 0; --d) {
    // Sent: the values of the ghosts each swap received; received: those for the particles it sent.
    const Layout l = layout(d, fields, true);
    if (l.remote) {
      pack_ghosts_dim(d, l, fields);
      exchange_dim(d, l, fields, true);
    }
    add_dim(d, l, fields, AddTo::every);
  }
}

void Halo::add_dim(int d, const Layout& l, const Fields& fields, AddTo to) {
  // One swap after the other: the send lists of the two may share particles (a sub-box thinner than two
  // cutoffs); within one list every particle is there once.
  for (int k = 0; k < 2; ++k) {
    const SwapInfo& s = m_swaps[2 * d + k];
    const IntView list = m_lists[2 * d + k];
    const bool own = local(s);
    std::size_t word = l.recv_first[k];
    for (const auto& f : fields.fields()) {
      visit(f, [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        Add<V> add{v, list, m_recv, word, s.first_recv, own};
        if (to == AddTo::owned) add.below = m_nlocal;
        if (to == AddTo::ghosts) add.from = m_nlocal;
        Kokkos::parallel_for(own ? "particles::halo::add_own" : "particles::halo::add", Policy(0, s.nsend), add);
      });
      word += block_words(f, l.nrecv[k]);
    }
  }
}

void Halo::start_scatter(const Fields& fields) {
  check_idle("start_scatter");
  check_scatter_fields(fields);
  // Every dimension receives into its own part of m_recv; the send buffer serves one dimension at a time.
  std::size_t recv_total = 0;
  for (int d = 2; d >= 0; --d) {
    Layout& l = m_scatter_layout[d];
    l = layout(d, fields, true);
    for (auto& r : l.recv_first) r += recv_total;
    if (l.remote) recv_total += message_words(fields, l.nrecv[0]) + message_words(fields, l.nrecv[1]);
  }
  ensure(m_recv, recv_total);
  begin_flight(fields, 2);
  m_scattering = true;
  advance_scatter(false);
}

void Halo::finish_scatter() {
  if (!m_scattering) return;
  advance_scatter(true);
  // What came for the owned particles, in scatter()'s order.
  for (int d = 2; d >= 0; --d) add_dim(d, m_scatter_layout[d], m_flight, AddTo::owned);
  m_scattering = false;
}

bool Halo::advance_scatter(bool wait) {
  while (m_flight_dim >= 0) {
    const int d = m_flight_dim;
    const Layout& l = m_scatter_layout[d];
    if (m_flight_posted) {
      if (!wait && !m_transport.test()) return false;
      m_transport.complete();
      m_flight_posted = false;
    } else if (l.remote) {
      pack_ghosts_dim(d, l, m_flight);
      post_dim(d, l, m_flight, true);
      m_flight_posted = true;
      continue;
    }
    // The ghosts of earlier dimensions get theirs now: the next dimension sends them on.
    add_dim(d, l, m_flight, AddTo::ghosts);
    --m_flight_dim;
  }
  return true;
}

bool Halo::remote() const {
  for (const auto& s : m_swaps)
    if (s.send_rank != m_grid.rank() || s.recv_rank != m_grid.rank()) return true;
  return false;
}

int Halo::ghost_count() const {
  int n = 0;
  for (const auto& s : m_swaps) n += s.nrecv;
  return n;
}

std::vector<int> Halo::send_list(int k) const {
  const SwapInfo& s = m_swaps.at(static_cast<std::size_t>(k));
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Kokkos::subview(m_lists[k], Range(0, s.nsend)));
  return std::vector<int>(h.data(), h.data() + s.nsend);
}

std::size_t Halo::message_bytes(const Fields& fields) const {
  std::size_t bytes = 0;
  for (const auto& s : m_swaps)
    if (!local(s))
      bytes += (message_words(fields, static_cast<std::size_t>(s.nsend)) +
                message_words(fields, static_cast<std::size_t>(s.nrecv))) * 8;
  return bytes;
}

}  // namespace spotrun::particles
