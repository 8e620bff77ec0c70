#include "process_grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace spotrun::comm {

std::array<int, 3> choose_grid(int nranks, const std::array<double, 3>& L, double min_thickness) {
  std::array<int, 3> best{0, 0, 0};
  double best_surface = std::numeric_limits<double>::max();
  for (int px = nranks; px >= 1; --px) {
    if (nranks % px) continue;
    for (int py = nranks / px; py >= 1; --py) {
      if ((nranks / px) % py) continue;
      int pz = nranks / px / py;
      double a = L[0] / px, b = L[1] / py, c = L[2] / pz;
      if (a < min_thickness || b < min_thickness || c < min_thickness) continue;
      double surface = a * b + b * c + a * c;
      if (surface < best_surface * (1.0 - 1e-12)) {
        best_surface = surface;
        best = {px, py, pz};
      }
    }
  }
  return best;
}

ProcessGrid::ProcessGrid(const Communicator& comm, const Box3& box)
    : ProcessGrid(comm, box, choose_grid(comm.size(), {box.length(0), box.length(1), box.length(2)})) {}

ProcessGrid::ProcessGrid(const Communicator& comm, const Box3& box, const std::array<int, 3>& dims)
    : m_box(box), m_dims(dims) {
  setup(comm);
}

int ProcessGrid::owner_of(const double p[3]) const {
  int c[3];
  for (int d = 0; d < 3; ++d) {
    const double L = m_box.length(d);
    double x = p[d];
    int image = 0;
    wrap_periodic(x, m_box.lo[d], m_box.hi[d], image);
    int k = static_cast<int>((x - m_box.lo[d]) / L * m_dims[d]);
    k = std::min(std::max(k, 0), m_dims[d] - 1);
    // The same boundary expressions as setup(), so ownership agrees bit for bit.
    auto lo = [&](int q) { return m_box.lo[d] + L * q / m_dims[d]; };
    while (k > 0 && x < lo(k)) --k;
    while (k < m_dims[d] - 1 && x >= lo(k + 1)) ++k;
    c[d] = k;
  }
  return (c[0] * m_dims[1] + c[1]) * m_dims[2] + c[2];
}

void ProcessGrid::setup(const Communicator& comm) {
  // Rank order: x fastest is not needed; use row-major (x slowest) like MPI_Cart_create without reorder.
  int r = comm.rank();
  m_rank = r;
  m_coords[2] = r % m_dims[2];
  m_coords[1] = (r / m_dims[2]) % m_dims[1];
  m_coords[0] = r / (m_dims[2] * m_dims[1]);
  auto rank_of = [&](std::array<int, 3> c) {
    for (int d = 0; d < 3; ++d) c[d] = (c[d] + m_dims[d]) % m_dims[d];
    return (c[0] * m_dims[1] + c[1]) * m_dims[2] + c[2];
  };
  for (int d = 0; d < 3; ++d) {
    auto lo = m_coords, hi = m_coords;
    lo[d] -= 1;
    hi[d] += 1;
    m_neighbors[d][0] = rank_of(lo);
    m_neighbors[d][1] = rank_of(hi);
  }
  set_sub_box();
}

void ProcessGrid::set_sub_box() {
  for (int d = 0; d < 3; ++d) {
    double L = m_box.length(d);
    m_sub.lo[d] = m_box.lo[d] + L * m_coords[d] / m_dims[d];
    m_sub.hi[d] = m_coords[d] == m_dims[d] - 1 ? m_box.hi[d] : m_box.lo[d] + L * (m_coords[d] + 1) / m_dims[d];
  }
}

void ProcessGrid::set_box(const Box3& box) {
  m_box = box;
  set_sub_box();
}

double ProcessGrid::min_sub_thickness() const {
  double t = m_box.length(0) / m_dims[0];
  for (int d = 0; d < 3; ++d) {
    const double L = m_box.length(d);
    // The grid's sub-boxes in d, by the expressions of set_sub_box(): the thinnest of them.
    for (int q = 0; q < m_dims[d]; ++q) {
      const double lo = m_box.lo[d] + L * q / m_dims[d];
      const double hi = q == m_dims[d] - 1 ? m_box.hi[d] : m_box.lo[d] + L * (q + 1) / m_dims[d];
      t = std::min(t, hi - lo);
    }
  }
  return t;
}

}  // namespace spotrun::comm
