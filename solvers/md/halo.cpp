#include "halo.hpp"

#include <cmath>

namespace spotrun::md {
namespace {

template <class View>
void ensure(View& v, std::size_t n) {
  if (v.extent(0) < n) v = View(v.label(), n + n / 4 + 64);
}

constexpr int k_pack_ghost = 5;    // x y z type id
constexpr int k_pack_migrate = 11; // x y z vx vy vz id type ix iy iz

}  // namespace

Halo::Halo(const comm::ProcessGrid& grid, comm::Transport& transport, double cutneigh)
    : m_grid(grid), m_transport(transport), m_cutneigh(cutneigh) {
  for (int d = 0; d < 3; ++d)
    for (int dir = 0; dir < 2; ++dir) {
      Swap s;
      s.dim = d;
      s.dir = dir;
      s.send_rank = grid.neighbor(d, dir);
      s.recv_rank = grid.neighbor(d, 1 - dir);
      double L = grid.global_box().length(d);
      s.shift = grid.at_boundary(d, dir) ? (dir == 0 ? L : -L) : 0.0;
      m_swaps.push_back(s);
    }
}

void Halo::exchange(const DoubleView& send, std::size_t send_count, int dest, DoubleView& recv, std::size_t recv_count,
                    int src, int tag) {
  ensure(recv, recv_count);
  constexpr bool host_ok = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
  if (host_ok || !m_transport.needs_host_buffers()) {
    m_transport.sendrecv(send.data(), send_count * sizeof(double), dest, recv.data(), recv_count * sizeof(double), src,
                         tag);
    return;
  }
  ensure(m_host_send, send_count);
  ensure(m_host_recv, recv_count);
  Kokkos::deep_copy(Kokkos::subview(m_host_send, std::pair<std::size_t, std::size_t>(0, send_count)),
                    Kokkos::subview(send, std::pair<std::size_t, std::size_t>(0, send_count)));
  m_transport.sendrecv(m_host_send.data(), send_count * sizeof(double), dest, m_host_recv.data(),
                       recv_count * sizeof(double), src, tag);
  Kokkos::deep_copy(Kokkos::subview(recv, std::pair<std::size_t, std::size_t>(0, recv_count)),
                    Kokkos::subview(m_host_recv, std::pair<std::size_t, std::size_t>(0, recv_count)));
}

int Halo::migrate(AtomStore& atoms) {
  // Runs at re-neighbouring only; the selection is done on host copies (no-ops on host backends).
  const auto& box = m_grid.global_box();
  const auto& sub = m_grid.sub_box();
  auto hx = Kokkos::create_mirror_view(atoms.x);
  auto hv = Kokkos::create_mirror_view(atoms.v);
  auto hid = Kokkos::create_mirror_view(atoms.id);
  auto htype = Kokkos::create_mirror_view(atoms.type);
  auto himage = Kokkos::create_mirror_view(atoms.image);
  Kokkos::deep_copy(hx, atoms.x);
  Kokkos::deep_copy(hv, atoms.v);
  Kokkos::deep_copy(hid, atoms.id);
  Kokkos::deep_copy(htype, atoms.type);
  Kokkos::deep_copy(himage, atoms.image);
  int nlocal = atoms.nlocal;

  // Dimensions with one rank: wrap into the periodic box here. Others wrap when an atom crosses the
  // periodic boundary on its way to the neighbour (below), so the direction it moved is kept.
  int nonfinite = 0;
  for (int i = 0; i < nlocal; ++i) {
    bool finite = true;
    for (int d = 0; d < 3; ++d) finite = finite && std::isfinite(hx(i, d)) && std::isfinite(hv(i, d));
    if (!finite) ++nonfinite;
    for (int d = 0; d < 3; ++d) {
      double x = hx(i, d);
      int img = himage(i, d);
      if (!std::isfinite(x)) {
        // Left as it is (no image arithmetic on it): the caller's checks report it.
      } else if (m_grid.dims()[d] == 1) {
        comm::wrap_periodic(x, box.lo[d], box.hi[d], img);
      } else if (x < box.lo[d] && x + box.length(d) >= box.hi[d]) {
        x = box.lo[d];  // below lo by a rounding error only: it stays on this side, image unchanged
      }
      hx(i, d) = x;
      himage(i, d) = img;
    }
  }

  std::vector<double> out[2];
  std::vector<double> in;
  for (int d = 0; d < 3; ++d) {
    if (m_grid.dims()[d] == 1) continue;
    out[0].clear();
    out[1].clear();
    int keep = 0;
    for (int i = 0; i < nlocal; ++i) {
      int dir = hx(i, d) < sub.lo[d] ? 0 : (hx(i, d) >= sub.hi[d] ? 1 : -1);
      if (dir < 0) {
        if (keep != i) {
          for (int k = 0; k < 3; ++k) {
            hx(keep, k) = hx(i, k);
            hv(keep, k) = hv(i, k);
            himage(keep, k) = himage(i, k);
          }
          hid(keep) = hid(i);
          htype(keep) = htype(i);
        }
        ++keep;
        continue;
      }
      double p[3] = {hx(i, 0), hx(i, 1), hx(i, 2)};
      int img[3] = {himage(i, 0), himage(i, 1), himage(i, 2)};
      if (m_grid.at_boundary(d, dir) && std::isfinite(p[d]))
        comm::wrap_periodic(p[d], box.lo[d], box.hi[d], img[d]);  // crossing it (an infinite one is lost)
      auto& o = out[dir];
      o.insert(o.end(), {p[0], p[1], p[2], hv(i, 0), hv(i, 1), hv(i, 2), static_cast<double>(hid(i)),
                         static_cast<double>(htype(i)), static_cast<double>(img[0]), static_cast<double>(img[1]),
                         static_cast<double>(img[2])});
    }
    nlocal = keep;
    for (int dir = 0; dir < 2; ++dir) {
      int dest = m_grid.neighbor(d, dir), src = m_grid.neighbor(d, 1 - dir);
      std::size_t n_in = m_transport.sendrecv_count(out[dir].size(), dest, src, 100 + 2 * d + dir);
      in.resize(n_in);
      m_transport.sendrecv(out[dir].data(), out[dir].size() * sizeof(double), dest, in.data(), n_in * sizeof(double), src,
                           200 + 2 * d + dir);
      int nin = static_cast<int>(n_in / k_pack_migrate);
      if (nlocal + nin > static_cast<int>(hx.extent(0))) {
        atoms.reserve(nlocal + nin);
        Kokkos::resize(hx, atoms.capacity());
        Kokkos::resize(hv, atoms.capacity());
        Kokkos::resize(hid, atoms.capacity());
        Kokkos::resize(htype, atoms.capacity());
        Kokkos::resize(himage, atoms.capacity());
      }
      for (int a = 0; a < nin; ++a) {
        const double* p = &in[static_cast<std::size_t>(a) * k_pack_migrate];
        if (p[d] < sub.lo[d] || p[d] >= sub.hi[d]) continue;  // moved more than one sub-box: lost
        for (int k = 0; k < 3; ++k) {
          hx(nlocal, k) = p[k];
          hv(nlocal, k) = p[3 + k];
          himage(nlocal, k) = static_cast<int>(p[8 + k]);
        }
        hid(nlocal) = static_cast<std::int64_t>(p[6]);
        htype(nlocal) = static_cast<int>(p[7]);
        ++nlocal;
      }
    }
  }
  atoms.reserve(nlocal);
  atoms.nlocal = nlocal;
  atoms.nghost = 0;
  Kokkos::deep_copy(atoms.x, hx);
  Kokkos::deep_copy(atoms.v, hv);
  Kokkos::deep_copy(atoms.id, hid);
  Kokkos::deep_copy(atoms.type, htype);
  Kokkos::deep_copy(atoms.image, himage);
  return nonfinite;
}

void Halo::build(AtomStore& atoms) {
  const auto& sub = m_grid.sub_box();
  int nall = atoms.nlocal;
  int nlast = atoms.nlocal;  // atoms eligible for this dimension: owned + ghosts of earlier dimensions
  for (auto& s : m_swaps) {
    const int d = s.dim;
    if (s.dir == 0) nlast = nall;
    // Select: lower swap sends atoms within cutneigh of the lower face, upper swap of the upper face.
    const double bound = s.dir == 0 ? sub.lo[d] + m_cutneigh : sub.hi[d] - m_cutneigh;
    const int dir = s.dir;
    auto x = atoms.x;
    int count = 0;
    Kokkos::parallel_reduce(
        "md::halo::count", Policy(0, nlast),
        KOKKOS_LAMBDA(int i, int& c) {
          if (dir == 0 ? x(i, d) < bound : x(i, d) >= bound) ++c;
        },
        count);
    ensure(s.sendlist, count);
    auto list = s.sendlist;
    Kokkos::parallel_scan(
        "md::halo::select", Policy(0, nlast), KOKKOS_LAMBDA(int i, int& offset, bool final) {
          if (dir == 0 ? x(i, d) < bound : x(i, d) >= bound) {
            if (final) list(offset) = i;
            ++offset;
          }
        });
    s.nsend = count;
    s.nrecv = static_cast<int>(m_transport.sendrecv_count(count, s.send_rank, s.recv_rank, 10 + 2 * d + s.dir));
    s.first_recv = nall;
    // Pack positions (shifted), type, id.
    ensure(m_send, static_cast<std::size_t>(count) * k_pack_ghost);
    auto send = m_send;
    auto type = atoms.type;
    auto id = atoms.id;
    const double shift = s.shift;
    Kokkos::parallel_for(
        "md::halo::pack_ghosts", Policy(0, count), KOKKOS_LAMBDA(int k) {
          const int i = list(k);
          for (int c = 0; c < 3; ++c) send(k_pack_ghost * k + c) = x(i, c) + (c == d ? shift : 0.0);
          send(k_pack_ghost * k + 3) = type(i);
          send(k_pack_ghost * k + 4) = static_cast<double>(id(i));
        });
    exchange(m_send, static_cast<std::size_t>(count) * k_pack_ghost, s.send_rank, m_recv,
             static_cast<std::size_t>(s.nrecv) * k_pack_ghost, s.recv_rank, 20 + 2 * d + s.dir);
    atoms.reserve(nall + s.nrecv);
    auto recv = m_recv;
    auto ax = atoms.x;
    auto atype = atoms.type;
    auto aid = atoms.id;
    const int first = nall;
    Kokkos::parallel_for(
        "md::halo::unpack_ghosts", Policy(0, s.nrecv), KOKKOS_LAMBDA(int k) {
          for (int c = 0; c < 3; ++c) ax(first + k, c) = recv(k_pack_ghost * k + c);
          atype(first + k) = static_cast<int>(recv(k_pack_ghost * k + 3));
          aid(first + k) = static_cast<std::int64_t>(recv(k_pack_ghost * k + 4));
        });
    nall += s.nrecv;
  }
  atoms.nghost = nall - atoms.nlocal;
}

void Halo::update_positions(AtomStore& atoms) {
  auto x = atoms.x;
  for (auto& s : m_swaps) {
    const int d = s.dim;
    const double shift = s.shift;
    auto list = s.sendlist;
    const int first = s.first_recv;
    if (s.send_rank == m_grid.rank() && s.recv_rank == m_grid.rank()) {
      // Periodic image of this rank's own atoms: copy directly, no buffers.
      Kokkos::parallel_for(
          "md::halo::copy_positions", Policy(0, s.nsend), KOKKOS_LAMBDA(int k) {
            const int i = list(k);
            x(first + k, 0) = x(i, 0) + (d == 0 ? shift : 0.0);
            x(first + k, 1) = x(i, 1) + (d == 1 ? shift : 0.0);
            x(first + k, 2) = x(i, 2) + (d == 2 ? shift : 0.0);
          });
      continue;
    }
    ensure(m_send, static_cast<std::size_t>(s.nsend) * 3);
    auto send = m_send;
    Kokkos::parallel_for(
        "md::halo::pack_positions", Policy(0, s.nsend), KOKKOS_LAMBDA(int k) {
          const int i = list(k);
          send(3 * k + 0) = x(i, 0) + (d == 0 ? shift : 0.0);
          send(3 * k + 1) = x(i, 1) + (d == 1 ? shift : 0.0);
          send(3 * k + 2) = x(i, 2) + (d == 2 ? shift : 0.0);
        });
    exchange(m_send, static_cast<std::size_t>(s.nsend) * 3, s.send_rank, m_recv, static_cast<std::size_t>(s.nrecv) * 3,
             s.recv_rank, 30 + 2 * d + s.dir);
    auto recv = m_recv;
    Kokkos::parallel_for(
        "md::halo::unpack_positions", Policy(0, s.nrecv), KOKKOS_LAMBDA(int k) {
          x(first + k, 0) = recv(3 * k + 0);
          x(first + k, 1) = recv(3 * k + 1);
          x(first + k, 2) = recv(3 * k + 2);
        });
  }
}

long long Halo::ghost_count() const {
  long long n = 0;
  for (const auto& s : m_swaps) n += s.nrecv;
  return n;
}

}  // namespace spotrun::md
