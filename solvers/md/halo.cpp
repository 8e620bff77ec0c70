#include "halo.hpp"

#include <cstdint>
#include <cstring>

#include "comm/exchange.hpp"

namespace spotrun::md {
namespace {

template <class View>
void ensure(View& v, std::size_t n) {
  if (v.extent(0) < n) v = View(Kokkos::view_alloc(v.label(), Kokkos::WithoutInitializing), n + n / 4 + 64);
}

constexpr int k_pack_migrate = 11;  // x y z vx vy vz id type ix iy iz

// The id travels as its 64 bits in a double's slot, not as a value: a double would round ids beyond 2^53.
KOKKOS_INLINE_FUNCTION double id_slot(std::int64_t id) {
  double r;
  memcpy(&r, &id, sizeof r);
  return r;
}
KOKKOS_INLINE_FUNCTION std::int64_t id_of_slot(double r) {
  std::int64_t id;
  memcpy(&id, &r, sizeof id);
  return id;
}

// Finite (neither infinite nor NaN), in a form every device compiler takes.
KOKKOS_INLINE_FUNCTION bool is_finite(double v) { return v - v == 0.0; }

using Range = std::pair<std::size_t, std::size_t>;

// Writes one packed migration record (k_pack_migrate doubles) into atom slot `to`.
struct MigrationRecord {
  Vec3View x, v;
  IdView id;
  IntView type;
  Int3View image;
  KOKKOS_INLINE_FUNCTION void operator()(const double* r, int to) const {
    for (int c = 0; c < 3; ++c) {
      x(to, c) = r[c];
      v(to, c) = r[3 + c];
      image(to, c) = static_cast<int>(r[8 + c]);
    }
    id(to) = id_of_slot(r[6]);
    type(to) = static_cast<int>(r[7]);
  }
};

}  // namespace

Halo::Halo(const comm::Communicator& comm, const comm::ProcessGrid& grid, comm::Transport& transport, double cutneigh)
    : m_comm(comm), m_grid(grid), m_transport(transport), m_plan(comm, grid, transport, cutneigh) {
  m_batch.memory = comm::memory_of<MemSpace>();
}

void Halo::exchange_dim(int d, int per_atom, const std::array<std::size_t, 2>& send_first,
                        const std::array<std::size_t, 2>& recv_first, const std::array<std::size_t, 2>& nsend,
                        const std::array<std::size_t, 2>& nrecv) {
  const bool route_self = m_transport.route_self();
  m_batch.clear();
  for (int k = 0; k < 2; ++k) {
    const int to = m_grid.neighbor(d, k), from = m_grid.neighbor(d, 1 - k);
    const std::size_t sn = nsend[k] * per_atom, rn = nrecv[k] * per_atom;
    if (to == m_grid.rank() && !route_self) {
      // A periodic image of this rank's own atoms: copied in the atoms' memory space.
      Kokkos::deep_copy(Kokkos::subview(m_recv, Range(recv_first[k], recv_first[k] + rn)),
                        Kokkos::subview(m_send, Range(send_first[k], send_first[k] + sn)));
      continue;
    }
    m_batch.send(to, m_send.data() + send_first[k], sn * sizeof(double));
    m_batch.recv(from, m_recv.data() + recv_first[k], rn * sizeof(double));
  }
  if (!m_batch.sends.empty() || !m_batch.recvs.empty()) comm::exchange(m_transport, m_batch, ExecSpace());
}

int Halo::migrate(AtomStore& atoms) {
  const auto& box = m_grid.global_box();
  const auto& sub = m_grid.sub_box();
  const auto& dims = m_grid.dims();
  int nlocal = atoms.nlocal;

  // Dimensions with one rank: wrap into the periodic box here. Others wrap when an atom crosses the
  // periodic boundary on its way to the neighbour (below), so the direction it moved is kept.
  int nonfinite = 0;
  {
    auto x = atoms.x;
    auto v = atoms.v;
    auto image = atoms.image;
    const double lo[3] = {box.lo[0], box.lo[1], box.lo[2]}, hi[3] = {box.hi[0], box.hi[1], box.hi[2]};
    const double len[3] = {box.length(0), box.length(1), box.length(2)};
    const bool alone[3] = {dims[0] == 1, dims[1] == 1, dims[2] == 1};
    Kokkos::parallel_reduce(
        "md::halo::wrap", Policy(0, nlocal),
        KOKKOS_LAMBDA(int i, int& bad) {
          bool finite = true;
          for (int d = 0; d < 3; ++d) finite = finite && is_finite(x(i, d)) && is_finite(v(i, d));
          if (!finite) ++bad;
          for (int d = 0; d < 3; ++d) {
            double xd = x(i, d);
            int img = image(i, d);
            if (!is_finite(xd)) {
              // Left as it is (no image arithmetic on it): the caller's checks report it.
            } else if (alone[d]) {
              comm::wrap_periodic(xd, lo[d], hi[d], img);
            } else if (xd < lo[d] && xd + len[d] >= hi[d]) {
              xd = lo[d];  // below lo by a rounding error only: it stays on this side, image unchanged
            }
            x(i, d) = xd;
            image(i, d) = img;
          }
        },
        nonfinite);
  }

  for (int d = 0; d < 3; ++d) {
    if (dims[d] == 1) continue;
    // The plan of this dimension: each owned atom stays (-1) or leaves downwards (0) or upwards (1).
    ensure(m_code, static_cast<std::size_t>(nlocal));
    auto code = m_code;
    auto x = atoms.x;
    auto v = atoms.v;
    auto id = atoms.id;
    auto type = atoms.type;
    auto image = atoms.image;
    const double slo = sub.lo[d], shi = sub.hi[d];
    Kokkos::parallel_for(
        "md::halo::migrate_plan", Policy(0, nlocal),
        KOKKOS_LAMBDA(int i) { code(i) = x(i, d) < slo ? 0 : (x(i, d) >= shi ? 1 : -1); });

    // Pack the atoms that stay into m_keep, in their order.
    ensure(m_keep, static_cast<std::size_t>(nlocal) * k_pack_migrate);
    auto keep = m_keep;
    int nkeep = 0;
    Kokkos::parallel_scan(
        "md::halo::migrate_keep", Policy(0, nlocal),
        KOKKOS_LAMBDA(int i, int& offset, bool final) {
          if (code(i) >= 0) return;
          if (final) {
            double* r = &keep(static_cast<std::size_t>(offset) * k_pack_migrate);
            for (int c = 0; c < 3; ++c) {
              r[c] = x(i, c);
              r[3 + c] = v(i, c);
              r[8 + c] = image(i, c);
            }
            r[6] = id_slot(id(i));
            r[7] = type(i);
          }
          ++offset;
        },
        nkeep);
    // Pack the leaving atoms into m_send, those going down first, each group in the order of the atoms,
    // wrapped into the periodic box where they cross its boundary. The scan counts both groups at once:
    // down in the low 32 bits, up in the high ones.
    const std::int64_t nleave = nlocal - nkeep;
    ensure(m_send, static_cast<std::size_t>(nleave) * k_pack_migrate);
    auto send = m_send;
    const bool wraps[2] = {m_grid.at_boundary(d, 0), m_grid.at_boundary(d, 1)};
    const double blo = box.lo[d], bhi = box.hi[d];
    std::int64_t down_up = 0;
    Kokkos::parallel_reduce(
        "md::halo::migrate_count", Policy(0, nlocal),
        KOKKOS_LAMBDA(int i, std::int64_t& n) {
          if (code(i) >= 0) n += code(i) == 0 ? 1 : (std::int64_t(1) << 32);
        },
        down_up);
    const std::int64_t n0 = down_up & 0xffffffff, n1 = down_up >> 32;
    Kokkos::parallel_scan(
        "md::halo::migrate_pack", Policy(0, nlocal), KOKKOS_LAMBDA(int i, std::int64_t& offset, bool final) {
          const int dir = code(i);
          if (dir < 0) return;
          if (final) {
            const std::int64_t slot = dir == 0 ? (offset & 0xffffffff) : n0 + (offset >> 32);
            double p[3] = {x(i, 0), x(i, 1), x(i, 2)};
            int img[3] = {image(i, 0), image(i, 1), image(i, 2)};
            if (wraps[dir] && is_finite(p[d])) comm::wrap_periodic(p[d], blo, bhi, img[d]);  // crossing it
            double* r = &send(static_cast<std::size_t>(slot) * k_pack_migrate);
            for (int c = 0; c < 3; ++c) {
              r[c] = p[c];
              r[3 + c] = v(i, c);
              r[8 + c] = img[c];
            }
            r[6] = id_slot(id(i));
            r[7] = type(i);
          }
          offset += dir == 0 ? 1 : (std::int64_t(1) << 32);
        });

    // Counts, then the atoms: down to the lower neighbour (from the upper one), up to the upper one.
    const std::vector<int> to = {m_grid.neighbor(d, 0), m_grid.neighbor(d, 1)};
    const std::vector<int> from = {m_grid.neighbor(d, 1), m_grid.neighbor(d, 0)};
    std::vector<std::uint64_t> incoming;
    m_comm.exchange_counts(to, {static_cast<std::uint64_t>(n0), static_cast<std::uint64_t>(n1)}, from, incoming);
    const std::size_t r0 = incoming[0], r1 = incoming[1], nrec = r0 + r1;
    ensure(m_recv, nrec * k_pack_migrate);
    exchange_dim(d, k_pack_migrate, {0, static_cast<std::size_t>(n0) * k_pack_migrate}, {0, r0 * k_pack_migrate},
                 {static_cast<std::size_t>(n0), static_cast<std::size_t>(n1)}, {r0, r1});

    // Unpack: the atoms that stayed, then those that arrived inside this sub-box, down-going first.
    // An atom that moved further than one sub-box is dropped here: the caller's count reports it lost.
    atoms.reserve(nkeep + static_cast<int>(nrec));
    x = atoms.x;
    v = atoms.v;
    id = atoms.id;
    type = atoms.type;
    image = atoms.image;
    auto recv = m_recv;
    const MigrationRecord unpack{x, v, id, type, image};
    Kokkos::parallel_for(
        "md::halo::migrate_unpack_keep", Policy(0, nkeep),
        KOKKOS_LAMBDA(int k) { unpack(&keep(static_cast<std::size_t>(k) * k_pack_migrate), k); });
    int naccepted = 0;
    const int first = nkeep;
    Kokkos::parallel_scan(
        "md::halo::migrate_unpack", Policy(0, static_cast<int>(nrec)),
        KOKKOS_LAMBDA(int k, int& offset, bool final) {
          const double* r = &recv(static_cast<std::size_t>(k) * k_pack_migrate);
          if (r[d] < slo || r[d] >= shi) return;
          if (final) unpack(r, first + offset);
          ++offset;
        },
        naccepted);
    nlocal = nkeep + naccepted;
  }
  atoms.reserve(nlocal);
  atoms.nlocal = nlocal;
  atoms.nghost = 0;
  return nonfinite;
}

void Halo::build(AtomStore& atoms) {
  particles::Fields fields;
  fields.position(atoms.x).add(atoms.type).add(atoms.id);
  atoms.nghost = m_plan.build(atoms.nlocal, fields, [&atoms](int n) { atoms.reserve(n); });
}

void Halo::update_positions(AtomStore& atoms) {
  particles::Fields fields;
  fields.position(atoms.x);
  m_plan.gather(fields);
}

void Halo::start_update_positions(AtomStore& atoms) {
  particles::Fields fields;
  fields.position(atoms.x);
  m_plan.start_gather(fields);
}

void Halo::start_reverse_forces(AtomStore& atoms) {
  particles::Fields fields;
  fields.add(atoms.f);
  m_plan.start_scatter(fields);
}

void Halo::reverse_forces(AtomStore& atoms) {
  particles::Fields fields;
  fields.add(atoms.f);
  m_plan.scatter(fields);
}

std::size_t Halo::position_bytes() const {
  // The plan's message sizes do not depend on the view a Fields refers to, only on its kinds.
  Vec3View x;
  particles::Fields fields;
  fields.position(x);
  return m_plan.message_bytes(fields);
}

long long Halo::ghost_count() const { return m_plan.ghost_count(); }

}  // namespace spotrun::md
