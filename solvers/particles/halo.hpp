#pragma once
// Ghost particles over a 3D rank grid, for any particle method (docs/md.md#ghost-atoms): the plan apart
// from what travels through it.
//
//   Halo (the plan): for each of the six swaps (x-lower, x-upper, y-lower, y-upper, z-lower, z-upper),
//       which particles go to the neighbour on that side, the periodic image shift they get when the swap
//       crosses the boundary of the box, how many arrive and where they land. Built from the positions,
//       the box, the process grid and the cutoff by a staged exchange: x, then y, then z, forwarding the
//       ghosts of earlier dimensions, so that edge and corner ghosts arrive without diagonal messages.
//   Fields (what travels, fields.hpp): the caller's per-particle arrays, by reference: 3-component and scalar
//       doubles, 32- and 64-bit integers (sent as integers, so they arrive exactly). At most one field is the
//       position, the one shifted by the image shift.
//
//   build():   builds the plan and fills the ghosts of every field given (at rebuilds).
//   gather():  refreshes the ghosts of the fields given through the plan (forward: owners to ghosts).
//   start_gather() / progress() / finish_gather(): gather() in steps, so that the caller computes while
//              the messages move (docs/md.md#halo-overlap).
//   scatter(): the reverse: the values of the ghosts go back through the plan, last swap first (a ghost of
//              a ghost reaches its owner through the rank it came from), and are added to the particles
//              they are images of (forces under Newton's third law across ranks).
//
// Particles are stored owned [0, nlocal) then ghosts, those of each swap contiguous, in swap order. The
// sub-boxes must be at least the cutoff thick (ghosts come only from the six face neighbours). Everything
// stays in the memory space of the fields: only counts cross to the host. Messages from a rank to itself
// (a dimension of one rank) are copied by a kernel unless the transport routes them (route_self()).
// Includes nothing of any solver: comm/ and Kokkos only.
#include <Kokkos_Core.hpp>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"
#include "comm/transport.hpp"
#include "solvers/particles/fields.hpp"

namespace spotrun::particles {

// One swap of the plan, as the host sees it.
struct SwapInfo {
  int dim = 0, dir = 0;              // dir 0: sends to the lower neighbour in dim; 1: to the upper one
  int send_rank = 0, recv_rank = 0;  // where this swap's particles go, where its ghosts come from
  double shift = 0;                  // added to the position's component dim of the particles sent
  int nsend = 0, nrecv = 0;          // particles sent, ghosts received
  int first_recv = 0;                // index of the first ghost received
};

class Halo {
 public:
  // cutoff: a particle within cutoff of a face of the sub-box is sent to the neighbour across it.
  Halo(const comm::Communicator& comm, const comm::ProcessGrid& grid, comm::Transport& transport, double cutoff);

  // Builds the plan for the nlocal owned particles whose positions are the position field of `fields`
  // (required; the positions of [0, nlocal) must lie in the sub-box), and fills the ghosts of every field
  // of `fields` after the owned particles. Before the ghosts of each dimension land, grow(n) is called with
  // the particles there will be. Returns the number of ghosts. Collective over the grid.
  int build(int nlocal, const Fields& fields, const Grow& grow);
  // Refreshes the ghosts of every field through the current plan (the position shifted). Collective.
  void gather(const Fields& fields);
  // gather() in steps. start_gather() copies what stays on this rank and posts the first messages to other
  // ranks (the transport's post()); progress() moves on without waiting: it unpacks the messages that have
  // arrived and posts the next dimension's, and returns true when every ghost is in place; finish_gather()
  // waits for the rest. In between, the caller may compute with the owned particles (their fields are
  // read, not written) but not with the ghosts, and makes no other call of this Halo or its transport.
  // The results are those of gather(), bit for bit (gather() is start_gather() then finish_gather()).
  // Collective: every rank of the grid starts and finishes.
  void start_gather(const Fields& fields);
  void finish_gather();
  bool gathering() const { return m_gathering; }
  // scatter() in steps, in the same way: start_scatter() adds what stays on this rank to the ghosts that
  // forward it and posts the first messages; progress() moves on; finish_scatter() waits for the rest and
  // only then adds to the owned particles, swap by swap in scatter()'s order. In between, the caller may
  // add to the owned particles' values (not to the ghosts'): the sums are those of scatter() after the
  // caller's additions, bit for bit.
  void start_scatter(const Fields& fields);
  void finish_scatter();
  bool scattering() const { return m_scattering; }
  // Moves a gather or scatter in progress on without waiting; true when it is done (or none is).
  bool progress();
  // Adds the value of every ghost to the particle it is an image of (through the plan, last swap first),
  // for double fields without the position; throws std::invalid_argument for others. The values of
  // ghosts that were forwarded to other ranks gather what came back through them on the way (the values
  // of the ghosts are scratch afterwards). Collective.
  void scatter(const Fields& fields);

  // After the grid's box changed (comm::ProcessGrid::set_box(): constant pressure): the periodic image shift
  // of every swap that crosses the box boundary becomes the new box length, so that gather() places the
  // ghosts at the images of their particles in the new box (the lists of the last build stay). Not collective.
  void update_shifts();

  int nlocal() const { return m_nlocal; }
  // Whether any swap goes to or comes from another rank (else every ghost is an image of this rank's own
  // particles and nothing is waited for, whether the transport routes messages to this rank or not).
  bool remote() const;
  int ghost_count() const;
  const std::array<SwapInfo, 6>& swaps() const { return m_swaps; }
  // The particles swap k sends (indices into the fields), copied to the host (tests, diagnostics).
  std::vector<int> send_list(int k) const;
  // Bytes one gather() (or scatter()) of `fields` hands the transport, sent plus received (copies to this
  // rank itself excluded).
  std::size_t message_bytes(const Fields& fields) const;

 private:
  // The messages of dimension d's two swaps carrying `fields`: particle counts, offsets in m_send / m_recv
  // (8-byte words), and whether any goes to another rank (else both are local copies); the buffers are
  // grown to fit. reverse: the other way (scatter()).
  struct Layout {
    std::array<std::size_t, 2> nsend{}, nrecv{}, send_first{}, recv_first{};
    bool remote = false;
  };
  Layout layout(int d, const Fields& fields, bool reverse);
  bool local(const SwapInfo& s) const;  // a periodic image of this rank's own particles: a kernel copies it
  // Posts dimension d's messages to other ranks (reverse: to each swap's recv_rank, from its send_rank);
  // exchange_dim() also waits for them.
  void post_dim(int d, const Layout& l, const Fields& fields, bool reverse);
  void exchange_dim(int d, const Layout& l, const Fields& fields, bool reverse);
  // The forward move of dimension d's ghosts in its parts: copies to this rank itself and packing of
  // the messages (returns their layout), then the unpacking of what arrived.
  Layout pack_dim(int d, const Fields& fields);
  void unpack_dim(int d, const Layout& l, const Fields& fields);
  // launch(swap, view, word) for every field of each swap of dimension d whose messages go to another rank:
  // its block in the message buffer starts at `word`, first[k] for swap k's first field, and each field's
  // block holds count[k] rows.
  template <class Launch>
  void for_each_remote_block(int d, const std::array<std::size_t, 2>& first, const std::array<std::size_t, 2>& count,
                             const Fields& fields, Launch&& launch);
  // Moves the fields of dimension d's ghosts forward (owners to ghosts).
  void gather_dim(int d, const Fields& fields);
  // The steps of a gather in progress: with wait, until it is done; else as far as arrived messages allow.
  bool advance_gather(bool wait);
  // The same for a scatter, and the additions of dimension d's swaps: to every particle of their send lists
  // (scatter()), or to the ghosts or the owned particles among them (a scatter in steps).
  bool advance_scatter(bool wait);
  enum class AddTo { every, ghosts, owned };
  void add_dim(int d, const Layout& l, const Fields& fields, AddTo to);
  void pack_ghosts_dim(int d, const Layout& l, const Fields& fields);
  // Throws std::logic_error naming `what` while a gather or scatter is in progress.
  void check_idle(const char* what) const;
  // The state of a gather or scatter starting at dimension first_dim.
  void begin_flight(const Fields& fields, int first_dim);
  void check_scatter_fields(const Fields& fields) const;

  const comm::Communicator& m_comm;
  const comm::ProcessGrid& m_grid;
  comm::Transport& m_transport;
  double m_cutoff;
  int m_nlocal = 0;
  std::array<SwapInfo, 6> m_swaps{};
  std::array<IntView, 6> m_lists;
  comm::Batch m_batch;
  // A gather in progress (start_gather()): its fields, the dimension it is at, and that dimension's
  // layout when its messages are posted.
  bool m_gathering = false;
  Fields m_flight;
  int m_flight_dim = 0;
  bool m_flight_posted = false;
  Layout m_flight_layout;
  // A scatter in progress: the layouts of its dimensions (each receives into its own part of m_recv: what
  // came for the owned particles is added at the end).
  bool m_scattering = false;
  std::array<Layout, 3> m_scatter_layout;
  // Persistent message buffers (grown, never shrunk), in 8-byte words.
  DoubleView m_send{"particles::halo::send", 0};
  DoubleView m_recv{"particles::halo::recv", 0};
};

}  // namespace spotrun::particles
