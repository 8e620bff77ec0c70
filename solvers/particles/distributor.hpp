#pragma once
// Migration of particles between ranks, for any particle method (Cabana's Distributor): the plan apart from
// what travels through it.
//
//   Distributor::build() (the plan): from a destination for each of this rank's n particles -- -1: it stays;
//       k >= 0: it goes to peer k of a short list of peers -- which particles stay (in their order), which
//       leave for each peer (each group in the particles' order), and, by one exchange of counts, how many
//       arrive from each peer. Built where the particles are (kernels); only counts cross to the host.
//   Distributor::migrate() (the mover): packs the fields of the leaving particles (Fields, fields.hpp) by
//       kernels, moves them by one transport exchange, and stores the particles that stay first, then those
//       that arrived, from peer 0 first, each message in its order. A window drops arrivals whose position
//       lies outside [lo, hi) in one component (particles that moved past the peer). The particles that stay
//       keep their order (StayOrder::kept), or, for a caller that orders them anew anyway, those beyond the
//       first nstay places fill the places the leaving ones left below it (StayOrder::holes_filled): as many
//       moves as particles left, not a move of every particle after the first that left.
//
// The messages of peer k go to to[k] and come from from[k]; between two ranks the k-th message one sends
// the other is the k-th it receives from it (two peers may be the same rank). A peer that is this rank
// itself (to[k] == from[k] == rank) gets its message by a kernel copy unless the transport routes it.
// Includes nothing of any solver: comm/ and Kokkos only.
#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/transport.hpp"
#include "solvers/particles/fields.hpp"

namespace spotrun::particles {

// Arrivals outside [lo, hi) in the position's component `component` are dropped (-1: none is).
struct Window {
  int component = -1;
  double lo = 0, hi = 0;
};

class Distributor {
 public:
  Distributor(const comm::Communicator& comm, comm::Transport& transport);

  // Where the particles that stay lie after migrate(), in places 0 .. nstay() - 1: in their order (kept); or
  // each one below nstay() where it was, and the k-th place below nstay() that a leaving particle left taken
  // by the k-th staying particle at nstay() or above (holes_filled, LAMMPS's copy of a later atom into the
  // place of one that left): for a caller that orders its particles anew after the migration.
  enum class StayOrder { kept, holes_filled };

  // The plan for the n particles of dest (-1 or a peer index < to.size()). Collective among the peers.
  void build(const IntView& dest, int n, const std::vector<int>& to, const std::vector<int>& from,
             StayOrder order = StayOrder::kept);

  // Moves the particles of the plan: the fields of `fields` (the position one among them when the window
  // has a component) of particles [0, n) of the plan's build. grow(m) is called before the first particle
  // lands, with the particles there will be. Returns that number. Collective among the peers.
  int migrate(const Fields& fields, const Grow& grow, const Window& window = Window{});

  int nstay() const { return m_nstay; }
  int nsend(int k) const { return static_cast<int>(m_nsend.at(static_cast<std::size_t>(k))); }
  int nrecv(int k) const { return static_cast<int>(m_nrecv.at(static_cast<std::size_t>(k))); }

  // migrate()'s step after the exchange (public: CUDA lambdas may not live in private members): marks each
  // arrival accepted (1) or dropped (0) by the window, then gives each accepted one its place after the
  // particles that stay; returns how many were accepted. recv_first: where each peer's message starts.
  int place_arrivals(const Fields& fields, const Window& window, const std::vector<std::size_t>& recv_first);

 private:

  const comm::Communicator& m_comm;
  comm::Transport& m_transport;
  comm::Batch m_batch;
  std::vector<int> m_to, m_from;
  int m_nstay = 0;
  StayOrder m_order = StayOrder::kept;
  int m_nholes = 0;  // holes_filled: the places below m_nstay that leaving particles left
  std::vector<std::uint64_t> m_nsend, m_nrecv;
  std::vector<int> m_send_first;  // where peer k's particles start in m_leave
  IntView m_stay{"particles::distributor::stay", 0};    // the particles that stay, in order
  IntView m_leave{"particles::distributor::leave", 0};  // those that leave, peer by peer, each in order
  IntView m_holes{"particles::distributor::holes", 0};  // holes_filled: those places, in order
  IntView m_accept{"particles::distributor::accept", 0};
  IntView m_target{"particles::distributor::target", 0};  // where each arrival lands (-1: dropped)
  // Persistent buffers (grown, never shrunk), in 8-byte words: the particles that stay, sent, received.
  DoubleView m_stay_buf{"particles::distributor::stay_buf", 0};
  DoubleView m_send{"particles::distributor::send", 0};
  DoubleView m_recv{"particles::distributor::recv", 0};
};

}  // namespace spotrun::particles
