#pragma once
// Field output of grid solvers: velocity (or any vector/scalar) fields as parallel HDF5 files with XDMF
// descriptions that ParaView and VisIt open, and energy spectra as HDF5. Written from the x-plane blocks
// every rank holds (io::block_of of nx, like checkpoints); every HDF5 call is checked, and failures end
// in a RunError on every rank.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace spotrun::io {

// A block of x-planes of a field of `components` values per point on an n[0] x n[1] x n[2] grid:
// rows planes from first_row, values [x][y][z][component] (row-major).
struct FieldPlanes {
  std::array<std::uint64_t, 3> n{0, 0, 0};
  std::uint64_t first_row = 0;
  std::uint64_t rows = 0;
  int components = 3;
  const double* values = nullptr;
};

// Writes OUTDIR/fields/NAME_<step>.h5 (dataset /NAME of shape (nz, ny, nx[, components]), x fastest,
// float64, attributes time and step; written to a .tmp file and renamed), OUTDIR/fields/NAME_<step>.xmf
// (that one step), and rewrites OUTDIR/NAME.xmf, the time series of every step written so far (listed in
// OUTDIR/fields/NAME.series; entries at or after `step` from an earlier, interrupted run are replaced).
// Grid spacing: lengths[d] / n[d]; the first point at the origin. Collective.
void write_field(const comm::Communicator& comm, const std::string& outdir, const std::string& name,
                 std::int64_t step, double time, const std::array<double, 3>& lengths, const FieldPlanes& field);

// Adds group /step_<step> (datasets k and E, attributes time and step) to the HDF5 file `path`, creating
// the file if needed and replacing a group of the same step. k and E are the same on every rank; the
// root rank writes. Collective.
void write_spectrum(const comm::Communicator& comm, const std::string& path, std::int64_t step, double time,
                    const std::vector<double>& k, const std::vector<double>& energy);

// The XDMF text of one grid (exposed for tests): `h5_ref` is "file.h5:/dataset".
std::string xdmf_grid(const std::string& name, double time, const std::array<std::uint64_t, 3>& n,
                      const std::array<double, 3>& lengths, int components, const std::string& h5_ref);

}  // namespace spotrun::io
