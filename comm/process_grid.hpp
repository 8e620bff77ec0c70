#pragma once
// A 3D Cartesian grid of ranks over a periodic orthogonal box: which rank owns which sub-box and who
// its six neighbours are. Geometry only; no physics.
#include <Kokkos_Macros.hpp>
#include <array>
#include <cmath>

#include "communicator.hpp"

namespace spotrun::comm {

struct Box3 {
  std::array<double, 3> lo{0, 0, 0};
  std::array<double, 3> hi{0, 0, 0};
  double length(int d) const { return hi[d] - lo[d]; }
  double volume() const { return length(0) * length(1) * length(2); }
};

// Wraps coordinate x into the periodic interval [lo, hi), counting box crossings in image, so that
// x + image * (hi - lo) is unchanged. A value a rounding error below lo whose image would round to hi
// becomes lo with the image unchanged (it is at lo to within an ulp).
// Callable in device kernels (migration runs on the device).
KOKKOS_INLINE_FUNCTION void wrap_periodic(double& x, double lo, double hi, int& image) {
  if (x >= lo && x < hi) return;
  const double L = hi - lo;
  const double shift = ::floor((x - lo) / L);
  double y = x - shift * L;
  int img = image + static_cast<int>(shift);
  if (y >= hi) {  // (x - lo) / L rounded down across an integer
    y -= L;
    ++img;
  }
  if (y < lo) {
    y += L;
    --img;
    if (y >= hi) {
      y = lo;
      ++img;
    }
  }
  x = y;
  image = img;
}

// Chooses px*py*pz == nranks minimising the surface of a sub-box of a box with lengths L (the rule of
// LAMMPS's processors * * *): less halo for the same work. Ties go to the larger px.
// With min_thickness > 0, only grids whose sub-boxes are at least that thick count; {0,0,0} if none is.
std::array<int, 3> choose_grid(int nranks, const std::array<double, 3>& lengths, double min_thickness = 0.0);

class ProcessGrid {
 public:
  ProcessGrid(const Communicator& comm, const Box3& box);
  ProcessGrid(const Communicator& comm, const Box3& box, const std::array<int, 3>& dims);

  int rank() const { return m_rank; }
  const std::array<int, 3>& dims() const { return m_dims; }
  const std::array<int, 3>& coords() const { return m_coords; }
  // Neighbour rank in dimension d: dir 0 = lower, 1 = upper (periodic).
  int neighbor(int d, int dir) const { return m_neighbors[d][dir]; }
  const Box3& global_box() const { return m_box; }
  const Box3& sub_box() const { return m_sub; }
  // Whether this rank's sub-box touches the lower (dir 0) / upper (dir 1) global boundary in d.
  // The rank whose sub-box contains position p (wrapped into the periodic box first).
  int owner_of(const double p[3]) const;
  bool at_boundary(int d, int dir) const { return dir == 0 ? m_coords[d] == 0 : m_coords[d] == m_dims[d] - 1; }
  // A box that changes with time (constant pressure): the same rank grid over `box`, every sub-box its share
  // by the same expressions as at construction. Not collective (every rank passes the same box).
  void set_box(const Box3& box);
  // The thinnest sub-box of the grid over the current box (every rank's: the same on all).
  double min_sub_thickness() const;

 private:
  void setup(const Communicator& comm);
  void set_sub_box();
  Box3 m_box;
  Box3 m_sub;
  int m_rank = 0;
  std::array<int, 3> m_dims{1, 1, 1};
  std::array<int, 3> m_coords{0, 0, 0};
  std::array<std::array<int, 2>, 3> m_neighbors{};
};

}  // namespace spotrun::comm
