#include "halo.hpp"

#include <cstdint>
#include <type_traits>

#include "comm/exchange.hpp"

namespace spotrun::md {
namespace {

template <class View>
void ensure(View& v, std::size_t n) {
  if (v.extent(0) < n) v = View(Kokkos::view_alloc(v.label(), Kokkos::WithoutInitializing), n + n / 4 + 64);
}

// Finite (neither infinite nor NaN), in a form every device compiler takes.
KOKKOS_INLINE_FUNCTION bool is_finite(double v) { return v - v == 0.0; }

}  // namespace

particles::Fields atom_fields_with(AtomStore& atoms, unsigned flag) {
  particles::Fields fields;
  atoms.for_each_field([&](const AtomField& f, auto& view) {
    if (!f.has(flag)) return;
    using V = std::decay_t<decltype(view)>;
    if constexpr (std::is_same_v<V, Vec3View>) {
      if (&f == &atom_field(AtomFieldId::x)) {
        fields.position(view);
        return;
      }
    }
    fields.add(view);
  });
  return fields;
}

Halo::Halo(const comm::Communicator& comm, const comm::ProcessGrid& grid, comm::Transport& transport, double cutneigh)
    : m_grid(grid), m_plan(comm, grid, transport, cutneigh), m_migration(comm, transport) {}

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
    auto image = atoms.image;
    const double slo = sub.lo[d], shi = sub.hi[d];
    const bool wraps[2] = {m_grid.at_boundary(d, 0), m_grid.at_boundary(d, 1)};
    const double blo = box.lo[d], bhi = box.hi[d];
    // A leaving atom that crosses the periodic boundary of the box is wrapped into it on its way.
    Kokkos::parallel_for(
        "md::halo::migrate_plan", Policy(0, nlocal), KOKKOS_LAMBDA(int i) {
          const int dir = x(i, d) < slo ? 0 : (x(i, d) >= shi ? 1 : -1);
          code(i) = dir;
          if (dir >= 0 && wraps[dir] && is_finite(x(i, d))) {
            double p = x(i, d);
            int img = image(i, d);
            comm::wrap_periodic(p, blo, bhi, img);
            x(i, d) = p;
            image(i, d) = img;
          }
        });
    // Down to the lower neighbour (from the upper one), up to the upper one. The atoms that stay come
    // first, then those that arrived inside this sub-box, down-going first. The atoms that stay need not
    // keep their order (holes_filled): the sort after the migration orders every owned atom by bin and id
    // (MdSolver::rebuild). An atom that moved further than one sub-box is dropped (the window): the
    // caller's count reports it lost.
    m_migration.build(code, nlocal, {m_grid.neighbor(d, 0), m_grid.neighbor(d, 1)},
                      {m_grid.neighbor(d, 1), m_grid.neighbor(d, 0)}, particles::Distributor::StayOrder::holes_filled);
    nlocal = m_migration.migrate(atom_fields_with(atoms, k_migrates), [&atoms](int n) { atoms.reserve(n); },
                                 particles::Window{d, slo, shi});
  }
  atoms.reserve(nlocal);
  atoms.nlocal = nlocal;
  atoms.nghost = 0;
  return nonfinite;
}

void Halo::build(AtomStore& atoms) {
  const particles::Fields fields = atom_fields_with(atoms, k_ghosted);
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
