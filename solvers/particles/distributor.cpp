#include "distributor.hpp"

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

}  // namespace

Distributor::Distributor(const comm::Communicator& comm, comm::Transport& transport)
    : m_comm(comm), m_transport(transport) {
  m_batch.memory = comm::memory_of<MemSpace>();
}

void Distributor::build(const IntView& dest, int n, const std::vector<int>& to, const std::vector<int>& from,
                        StayOrder order) {
  if (to.size() != from.size()) throw std::invalid_argument("particles::Distributor::build: to and from differ in size");
  m_to = to;
  m_from = from;
  ensure(m_stay, static_cast<std::size_t>(n));
  ensure(m_leave, static_cast<std::size_t>(n));
  auto stay = m_stay;
  int nstay = 0;
  Kokkos::parallel_scan(
      "particles::distributor::stay", Policy(0, n), KOKKOS_LAMBDA(int i, int& offset, bool final) {
        if (dest(i) >= 0) return;
        if (final) stay(offset) = i;
        ++offset;
      },
      nstay);
  m_nstay = nstay;
  m_order = order;
  m_nholes = 0;
  if (order == StayOrder::holes_filled) {
    // The places below nstay that leaving particles leave: as many staying particles lie at nstay or above
    // (the last m_nholes entries of stay), which take them in order.
    ensure(m_holes, static_cast<std::size_t>(nstay));
    auto holes = m_holes;
    Kokkos::parallel_scan(
        "particles::distributor::holes", Policy(0, nstay), KOKKOS_LAMBDA(int i, int& offset, bool final) {
          if (dest(i) < 0) return;
          if (final) holes(offset) = i;
          ++offset;
        },
        m_nholes);
  }
  // The leaving particles, peer by peer, each group in the particles' order.
  const std::size_t npeers = to.size();
  m_nsend.assign(npeers, 0);
  m_send_first.assign(npeers, 0);
  auto leave = m_leave;
  int first = 0;
  for (std::size_t k = 0; k < npeers; ++k) {
    const int peer = static_cast<int>(k), base = first;
    int count = 0;
    Kokkos::parallel_scan(
        "particles::distributor::leave", Policy(0, n), KOKKOS_LAMBDA(int i, int& offset, bool final) {
          if (dest(i) != peer) return;
          if (final) leave(base + offset) = i;
          ++offset;
        },
        count);
    m_send_first[k] = first;
    m_nsend[k] = static_cast<std::uint64_t>(count);
    first += count;
  }
  m_comm.exchange_counts(m_to, m_nsend, m_from, m_nrecv);
}

int Distributor::place_arrivals(const Fields& fields, const Window& window, const std::vector<std::size_t>& recv_first) {
  std::size_t nrecv = 0;
  for (auto r : m_nrecv) nrecv += r;
  ensure(m_accept, nrecv);
  ensure(m_target, nrecv);
  auto accept = m_accept;
  auto target = m_target;
  if (window.component < 0) {
    Kokkos::deep_copy(Kokkos::subview(accept, Range(0, nrecv)), 1);
  } else {
    if (!fields.position_view())
      throw std::invalid_argument("particles::Distributor::migrate: a window needs a position field");
    std::size_t arrived = 0;
    for (std::size_t k = 0; k < m_nrecv.size(); ++k) {
      // The position's block in peer k's message.
      std::size_t word = recv_first[k];
      for (const auto& f : fields.fields()) {
        if (f.shifted) break;
        word += block_words(f, m_nrecv[k]);
      }
      const double* x = m_recv.data() + word;
      const int c = window.component;
      const double lo = window.lo, hi = window.hi;
      const std::size_t first = arrived;
      Kokkos::parallel_for(
          "particles::distributor::window", Policy(0, static_cast<int>(m_nrecv[k])), KOKKOS_LAMBDA(int j) {
            const double xc = x[3 * static_cast<std::size_t>(j) + c];
            accept(first + j) = xc < lo || xc >= hi ? 0 : 1;
          });
      arrived += m_nrecv[k];
    }
  }
  const int nstay = m_nstay;
  int naccepted = 0;
  Kokkos::parallel_scan(
      "particles::distributor::place", Policy(0, static_cast<int>(nrecv)),
      KOKKOS_LAMBDA(int j, int& offset, bool final) {
        const int a = accept(j);
        if (final) target(j) = a ? nstay + offset : -1;
        offset += a;
      },
      naccepted);
  return naccepted;
}

// Where the particles live in host memory, those that stay are moved down in place, in one forward pass
// (particle stay(s) to place s: stay(s) >= s and increasing, so no place is written before it is read), those
// already in their place untouched: no copy of every field of every particle out and back. A device keeps
// the buffer (m_stay_buf), whose kernels need no order.
constexpr bool k_stay_in_place = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

// The in-place pass over one field (host memory): particle stay(p) to place p. Its rows are a few numbers:
// GCC would call memmove for each (a call per particle), so the copy stays a loop.
template <class V>
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
void move_down(const V& v, const IntView& stay, int nstay) {
  using E = Elem<V>;
  const int nc = E::count(v);
  for (int p = 0; p < nstay; ++p) {
    const int i = stay(p);
    if (i == p) continue;
    for (int c = 0; c < nc; ++c) E::at(v, p, c) = E::at(v, i, c);
  }
}

// The fill of StayOrder::holes_filled over one field: place holes(k) takes particle stay(nstay - nholes + k).
template <class V>
void fill_holes(const V& v, const IntView& holes, const IntView& stay, int nstay, int nholes) {
  using E = Elem<V>;
  const int nc = E::count(v), from = nstay - nholes;
  Kokkos::parallel_for(
      "particles::distributor::fill_holes", Policy(0, nholes), KOKKOS_LAMBDA(int k) {
        const int to = holes(k), i = stay(from + k);
        for (int c = 0; c < nc; ++c) E::at(v, to, c) = E::at(v, i, c);
      });
}

int Distributor::migrate(const Fields& fields, const Grow& grow, const Window& window) {
  const std::size_t npeers = m_to.size();
  // Message layout: each peer's message holds the blocks of every field, one after the other.
  std::vector<std::size_t> send_first(npeers), recv_first(npeers);
  std::size_t sent = 0, received = 0;
  for (std::size_t k = 0; k < npeers; ++k) {
    send_first[k] = sent;
    recv_first[k] = received;
    sent += message_words(fields, m_nsend[k]);
    received += message_words(fields, m_nrecv[k]);
  }
  const bool fill = m_order == StayOrder::holes_filled;
  if (!k_stay_in_place && !fill) ensure(m_stay_buf, message_words(fields, static_cast<std::size_t>(m_nstay)));
  ensure(m_send, sent);
  ensure(m_recv, received);

  // Pack: the particles that stay into m_stay_buf, the leaving ones into their peer's message.
  std::size_t stay_word = 0;
  std::vector<std::size_t> word(send_first);
  for (const auto& f : fields.fields()) {
    visit(f, [&](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if (!k_stay_in_place && !fill)
        Kokkos::parallel_for("particles::distributor::pack_stay", Policy(0, m_nstay),
                             Pack<V>{v, m_stay, m_stay_buf, stay_word, false, 0, 0.0});
      for (std::size_t k = 0; k < npeers; ++k)
        Kokkos::parallel_for("particles::distributor::pack", Policy(0, static_cast<int>(m_nsend[k])),
                             Pack<V>{v, m_leave, m_send, word[k], false, 0, 0.0, m_send_first[k]});
      if (fill) {
        // After the leaving ones are packed (the same execution space, in order): the staying particles at
        // nstay or above into their places, which no other copy reads or writes (any backend, in parallel).
        fill_holes(v, m_holes, m_stay, m_nstay, m_nholes);
      } else if constexpr (k_stay_in_place) {
        // After the leaving ones are packed: their places may be written now.
        Kokkos::fence();
        move_down(v, m_stay, m_nstay);
      }
    });
    stay_word += block_words(f, static_cast<std::size_t>(m_nstay));
    for (std::size_t k = 0; k < npeers; ++k) word[k] += block_words(f, m_nsend[k]);
  }

  // Move the messages; those to this rank itself are copied here unless the transport routes them.
  const bool route_self = m_transport.route_self();
  m_batch.clear();
  for (std::size_t k = 0; k < npeers; ++k) {
    const std::size_t sn = message_words(fields, m_nsend[k]), rn = message_words(fields, m_nrecv[k]);
    if (m_to[k] == m_comm.rank() && !route_self) {
      Kokkos::deep_copy(Kokkos::subview(m_recv, Range(recv_first[k], recv_first[k] + rn)),
                        Kokkos::subview(m_send, Range(send_first[k], send_first[k] + sn)));
      continue;
    }
    m_batch.send(m_to[k], m_send.data() + send_first[k], sn * sizeof(double));
    m_batch.recv(m_from[k], m_recv.data() + recv_first[k], rn * sizeof(double));
  }
  if (!m_batch.sends.empty() || !m_batch.recvs.empty()) comm::exchange(m_transport, m_batch, ExecSpace());

  // Unpack: the particles that stayed, then the accepted arrivals.
  const int naccepted = place_arrivals(fields, window, recv_first);
  if (grow) grow(m_nstay + naccepted);
  stay_word = 0;
  word = recv_first;
  for (const auto& f : fields.fields()) {
    visit(f, [&](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if (!k_stay_in_place && !fill)
        Kokkos::parallel_for("particles::distributor::unpack_stay", Policy(0, m_nstay),
                             Unpack<V>{v, m_stay_buf, stay_word, 0});
      int arrived = 0;
      for (std::size_t k = 0; k < npeers; ++k) {
        Kokkos::parallel_for("particles::distributor::unpack", Policy(0, static_cast<int>(m_nrecv[k])),
                             UnpackTo<V>{v, m_recv, word[k], m_target, arrived});
        arrived += static_cast<int>(m_nrecv[k]);
      }
    });
    stay_word += block_words(f, static_cast<std::size_t>(m_nstay));
    for (std::size_t k = 0; k < npeers; ++k) word[k] += block_words(f, m_nrecv[k]);
  }
  return m_nstay + naccepted;
}

}  // namespace spotrun::particles
