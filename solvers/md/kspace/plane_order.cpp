#include "plane_order.hpp"

#include <algorithm>
#include <cmath>

namespace spotrun::md::kspace {

void PlaneOrder::build(const Vec3View& x, int nlocal, const BrickMap& map) {
  const int planes = std::max(1, map.dim[0]);
  m_start.assign(static_cast<std::size_t>(planes) + 1, 0);
  m_plane.resize(static_cast<std::size_t>(nlocal));
  m_atoms.resize(static_cast<std::size_t>(nlocal));
  // The first stencil point along x; an atom outside the brick (which the spreading refuses) in the nearest
  // plane.
  for (int i = 0; i < nlocal; ++i) {
    const double u = (x(i, 0) - map.lo[0]) * map.inv_h[0];
    const double first = std::isfinite(u) ? stencil_first_point(u, map.order) : 0.0;
    const double clamped = std::min(std::max(first, -1.0e9), 1.0e9);
    const int p = std::min(std::max(map.local(0, static_cast<int>(clamped)), 0), planes - 1);
    m_plane[static_cast<std::size_t>(i)] = p;
    ++m_start[static_cast<std::size_t>(p) + 1];
  }
  for (int p = 0; p < planes; ++p) m_start[static_cast<std::size_t>(p) + 1] += m_start[static_cast<std::size_t>(p)];
  m_next.assign(m_start.begin(), m_start.end() - 1);
  for (int i = 0; i < nlocal; ++i) {
    const auto p = static_cast<std::size_t>(m_plane[static_cast<std::size_t>(i)]);
    m_atoms[static_cast<std::size_t>(m_next[p]++)] = i;
  }
}

}  // namespace spotrun::md::kspace
