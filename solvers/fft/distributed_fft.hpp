#pragma once
// Distributed 3D real-to-complex FFT of an nx x ny x nz periodic grid over the ranks of a communicator,
// in slabs or pencils (geometry.hpp). Local transforms by a backend chosen with a tag type
// (backend::Fftw, backend::Cufft); transposes by Reshape (Kokkos pack/unpack + Transport::alltoallv).
// Plans, work arrays and transpose buffers are made once, in the constructor; forward() and backward()
// allocate nothing.
//
//   forward:  real layout (real_layout()) -> spectral layout (spectral_layout()), coefficients
//             X(kx, ky, kz) = sum_xyz x(i, j, k) exp(-2 pi i (kx i / nx + ky j / ny + kz k / nz)),
//             kz in [0, nz/2] (the other half is the complex conjugate).
//   backward: the inverse without the 1 / (nx ny nz): backward(forward(x)) = nx ny nz x.
// Pruned (made with a SpectralBand, geometry.hpp): the transforms of the rows that the band zeroes are
// skipped, along the axes transformed first and last in spectral space (x; y; the r2c/c2r along z is
// whole). Then:
//   forward:  out holds the transform on the band's modes and zero on the other modes of the band's
//             columns (ky and kz in the band); the columns outside the band (ky or kz outside) are not
//             written: they keep what the caller put there (zero them once: Kokkos views start zeroed).
//   backward: in must be zero outside the band (a band-limited field); the result is the unpruned one.
// Results equal the unpruned transforms' to round-off (the batches differ, so FFTW's algorithms may).
// Array arguments are this rank's blocks, in the memory space of the backend (host for FFTW), allocated
// with the alignment of Kokkos views (64 bytes).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend.hpp"
#include "comm/communicator.hpp"
#include "comm/transport.hpp"
#include "geometry.hpp"
#include "reshape.hpp"
#include "types.hpp"

namespace spotrun::fft {

// Wall time spent in local transforms and in reshapes (pack, exchange, unpack), seconds, fenced.
// The local transforms a DistributedFft of this geometry plans on `rank`, in this order: r2c, c2r,
// (pencils: y forward, y backward,) x forward, x backward; on `stream`. The memory estimate asks cuFFT
// for their work areas with them (solvers/fluid/fluid_memory.cpp).
// With a band: the pruned transforms' batches (r2c and c2r along z, then the y and the x batches, each
// direction's in at most two pieces).
std::vector<impl::BatchSpec> plan_specs(const FftGeometry& g, int rank, void* stream = nullptr,
                                        const SpectralBand* band = nullptr);

struct FftTimes {
  double local = 0;
  double reshape = 0;
  long long transforms = 0;  // forward() + backward() calls
};

class DistributedFft {
 public:
  // band: prune the transforms to it (see the top); none: the whole spectrum.
  template <class Backend>
  DistributedFft(const FftGeometry& geometry, const comm::Communicator& comm, comm::Transport& transport, Backend tag,
                 PlanRigor rigor = PlanRigor::Estimate, const std::optional<SpectralBand>& band = std::nullopt)
      : DistributedFft(geometry, comm, transport, impl::make_backend(tag, rigor), band) {}
  ~DistributedFft();
  DistributedFft(const DistributedFft&) = delete;
  DistributedFft& operator=(const DistributedFft&) = delete;

  // in: real_size() values (preserved); out: complex_size() values. Collective.
  void forward(const double* in, Complex* out);
  // in: complex_size() values (preserved); out: real_size() values. Collective.
  void backward(const Complex* in, double* out);

  const FftGeometry& geometry() const { return m_geometry; }
  const Layout3& real_layout() const { return m_geometry.real[m_rank]; }
  const Layout3& spectral_layout() const { return m_geometry.spectral[m_rank]; }
  std::size_t real_size() const { return real_layout().count(); }
  std::size_t complex_size() const { return spectral_layout().count(); }
  // 1 / (nx ny nz): the factor that makes backward() the inverse of forward().
  double scale() const { return 1.0 / static_cast<double>(m_geometry.total_real()); }
  std::string backend_name() const;
  const std::optional<SpectralBand>& band() const { return m_band; }
  const FftTimes& times() const { return m_times; }
  void reset_times() { m_times = FftTimes{}; }

 private:
  DistributedFft(const FftGeometry& geometry, const comm::Communicator& comm, comm::Transport& transport,
                 std::unique_ptr<impl::LocalBackend> backend, const std::optional<SpectralBand>& band);
  void make_plans();
  void x_forward(Complex* out);
  void x_backward(const Complex* in);
  // The y transform `plan` (none: no y stage apart) in place on `data`, timed as local work.
  void y_transform(impl::LocalPlan* plan, Complex* data);
  // One reshape between stages, timed as such.
  void reshape(Reshape<Complex>& r, const Complex* in, Complex* out);

  FftGeometry m_geometry;
  const comm::Communicator& m_comm;
  int m_rank = 0;
  std::unique_ptr<impl::LocalBackend> m_backend;
  // Work arrays of the stages (see geometry.hpp): m_wa stage A, m_wb stage B (pencils), m_wg the spectral
  // box stored [x][ky][kz] (gather layout: the x transforms read it with a stride and write the spectral
  // layout [ky][kz][kx], so the last transpose is part of the FFT). When stage A already is that layout
  // (one rank, slabs), m_wg is m_wa and no reshape runs.
  ComplexView m_wa, m_wb, m_wg;
  bool m_a_is_g = false;
  // Pruned: the band, and m_wgb, the gather array of backward(): the x transforms write only the band's
  // columns, so the others must hold zeros. A separate array whose other columns nothing writes (pencils,
  // slabs on several ranks), or m_wa (one-rank slabs), whose other columns are zeroed before each
  // backward. Unpruned: m_wgb is m_wg.
  std::optional<SpectralBand> m_band;
  ComplexView m_wgb;
  // Local transforms: r2c/c2r over z (pencil, pruned slab) or (y, z) (slab); c2c over y (pencil, pruned
  // slab; in place on m_wb or m_wa; none on a rank without kept rows); c2c over x (strided; pruned: one
  // plan per run of kept ky).
  std::unique_ptr<impl::LocalPlan> m_r2c, m_c2r, m_y_forward, m_y_backward;
  std::vector<std::unique_ptr<impl::LocalPlan>> m_x_forward, m_x_backward;
  // Reshapes: pencil a->b->g and back; slab a->g and back.
  std::unique_ptr<Reshape<Complex>> m_a_to_b, m_b_to_g, m_g_to_b, m_b_to_a, m_a_to_g, m_g_to_a;
  FftTimes m_times;
};

}  // namespace spotrun::fft
