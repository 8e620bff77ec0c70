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
// How the kept rows are grouped into plans (PlanGrouping, below): exactly the kept rows, two loops deep
// (the host), or a few contiguous batches that take some dropped rows along (a device: cuFFT runs a
// two-loop batch as one call per outer iteration); with FewLaunches the forward also writes zeros into
// the columns of a kept ky whose kz is outside the band.
// Array arguments are this rank's blocks, in the memory space of the backend (host for FFTW), allocated
// with the alignment of Kokkos views (64 bytes).
//
// Batched transforms (forward_many, backward_many; forward() and backward() are the count-1 case of the
// same code): up to FftBatching::max_batch fields of the same grid in one call. What is batched:
//   - every transpose: one transport exchange (one round of messages, all posted at once) per reshape
//     stage for the whole call, one message per partner and field (reshape.hpp); a pencil transform
//     makes 2 per direction, a slab transform on several ranks 1, instead of that many per field;
//   - the local transforms inside the transform (the y transforms, in place on the work arrays, whose
//     fields lie at a fixed distance): one plan execution for all fields;
//   - the local transforms at the ends (r2c and c2r, which read or write the caller's real arrays; the x
//     transforms, which write or read the caller's spectral arrays): one plan execution for a run of
//     fields that lie at the distances given in FftBatching (rows of one view), one per field otherwise.
// Not batched: the pack / unpack kernels of a reshape (one per block and field, as before) and, pruned,
// the zeroing kernels (one per field). A host build on one rank (nothing to exchange; unless the
// transport routes messages to the rank itself) runs a batch field by field through one field of the
// work arrays, which stays in cache: batching measured slower there (docs/performance.md). FFTW runs a batch of fields as a loop around the same codelets;
// cuFFT as one batch where the fields lie at the distance of the whole batch, else one execution per
// field (BatchSpec::fields). The work arrays and transpose buffers are max_batch times as large (one
// field's where a batch goes field by field).
#include <array>
#include <functional>
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

// How the rows of a pruned transform (with a band) are grouped into local plans.
//   Exact: only the kept rows are transformed. The y batch (kept kz of every x plane) and the x batches
//     (kept kz of every kept ky) are two loops deep: FFTW runs each as one plan, cuFFT, whose batches
//     have one dimension, as one call per outer iteration (about 850 calls per field and direction at
//     512^3 on one rank: a step of launches).
//   FewLaunches: every stage one batch of contiguous rows: the y transforms over every kz of the stage
//     (pencils), or together with the r2c / c2r as one 2D transform (slabs), the x transforms over every
//     kz of each run of kept ky (at most 2). About 1.5x the arithmetic of Exact on those stages, and 3
//     to 4 calls per field and direction. The dropped rows the x transforms take along are zero on the
//     gather side (the forward zeroes them where stage A holds them: one-rank slabs).
//   Auto: FewLaunches where Kokkos' memory is device memory (cuFFT), Exact on the host.
// Without a band there is one grouping: whole stages.
enum class PlanGrouping { Auto, Exact, FewLaunches };
// Auto resolved for this build.
inline PlanGrouping resolved(PlanGrouping g) {
  if (g != PlanGrouping::Auto) return g;
  return k_host_accessible ? PlanGrouping::Exact : PlanGrouping::FewLaunches;
}

// Wall time spent in local transforms and in reshapes (pack, exchange, unpack), seconds, fenced.
// The local transforms a DistributedFft of this geometry plans on `rank`, in this order: r2c, c2r,
// (pencils: y forward, y backward,) x forward, x backward; on `stream`. The memory estimate asks cuFFT
// for their work areas with them (solvers/fluid/fluid_memory.cpp).
// With a band: the pruned transforms' batches (r2c and c2r along z, then the y and the x batches, each
// direction's in at most two pieces).
// fields > 1: the plans of a batch of that many fields (the memory estimate asks with the solver's
// max_batch), the caller's fields at the distances padded_field(real / spectral count).
// grouping: that of the transform (Auto: the build's).
std::vector<impl::BatchSpec> plan_specs(const FftGeometry& g, int rank, void* stream = nullptr,
                                        const SpectralBand* band = nullptr, int fields = 1,
                                        PlanGrouping grouping = PlanGrouping::Auto);

// The distance between the fields of a work array of `count` elements: count padded to 8 elements, so
// that every field is aligned like the first (FFTW executes plans only on arrays aligned like those it
// planned for). Callers that keep their fields as rows of one view use the same padding.
inline std::size_t padded_field(std::size_t count) { return (count + 7) / 8 * 8; }

// How a DistributedFft batches (see the top).
struct FftBatching {
  // The most fields one forward_many / backward_many call transforms (>= 1).
  int max_batch = 1;
  // Distances in elements between consecutive fields in the caller's real and spectral arrays, where the
  // caller keeps its fields as rows of one view (>= real_size() and complex_size(); 0: none). With them,
  // the transforms at the ends run several fields in one plan execution when the fields lie at them.
  std::size_t real_distance = 0, complex_distance = 0;
  // How a pruned transform groups its rows into plans (above).
  PlanGrouping grouping = PlanGrouping::Auto;
};

struct FftTimes {
  double local = 0;
  double reshape = 0;
  long long transforms = 0;  // fields transformed (forward and backward), a batched call counts each
  // Local FFT launches: the library calls the cuFFT backend makes for these plans (impl::cufft_launches
  // of each execution), counted on every backend, so that a host build shows a device build's count.
  long long launches = 0;
};

namespace impl {
// The cuFFT calls (cufftExec*) one execution of `spec` makes: one per field and iteration of the outer
// loop that merged_loops leaves (cufftPlanMany has one batch dimension; CufftPlan, backend_cufft.cpp).
inline long long cufft_launches(const BatchSpec& spec) {
  const BatchSpec s = merged_loops(spec);
  return static_cast<long long>(s.fields) * s.howmany2;
}
}  // namespace impl

class DistributedFft {
 public:
  // band: prune the transforms to it (see the top); none: the whole spectrum. batching: see the top;
  // throws std::invalid_argument for a max_batch below 1 or a distance below the size of a field.
  template <class Backend>
  DistributedFft(const FftGeometry& geometry, const comm::Communicator& comm, comm::Transport& transport, Backend tag,
                 PlanRigor rigor = PlanRigor::Estimate, const std::optional<SpectralBand>& band = std::nullopt,
                 const FftBatching& batching = {})
      : DistributedFft(geometry, comm, transport, impl::make_backend(tag, rigor), band, batching) {}
  ~DistributedFft();
  DistributedFft(const DistributedFft&) = delete;
  DistributedFft& operator=(const DistributedFft&) = delete;

  // in: real_size() values (preserved); out: complex_size() values. Collective.
  void forward(const double* in, Complex* out);
  // in: complex_size() values (preserved); out: real_size() values. Collective.
  void backward(const Complex* in, double* out);
  // forward(in[f], out[f]) and backward(in[f], out[f]) for f < count, 1 <= count <= max_batch(), the
  // same count on every rank; results equal count separate calls' to round-off (FFTW may pick other
  // algorithms for a batch). Arrays of different fields must not overlap. Collective.
  void forward_many(int count, const double* const in[], Complex* const out[]);
  void backward_many(int count, const Complex* const in[], double* const out[]);
  // The gradient of the real field whose transform is `in`, without the 1 / (nx ny nz) (as backward()):
  // out[d] = backward(i k_d in), k_d = unit_k[d] x the signed wavenumber along axis d, 0 on the Nyquist
  // index of an even axis (derivative.hpp). Equals three backward() calls to round-off, with less work: only
  // i k_x in is transformed along x apart; i k_y and i k_z multiply the transform along x of `in` before the
  // transforms along y and z (ky and kz are still wavenumbers there), so two fields go through the x
  // transforms and the first transpose instead of three. A host rank that exchanges nothing (slabs) takes
  // the products and the (y, z) transforms plane by plane, each plane in cache. in: complex_size() values,
  // preserved; scratch: complex_size() values, overwritten; out: three real_size() arrays. Unpruned only, and
  // max_batch() >= 3 unless the rank goes field by field; throws std::invalid_argument otherwise. Collective.
  // ready (optional, host code): ready(e) once planes [0, e) along the first axis of the rank's real block (in
  // its layout's order) are final in all three outputs, e increasing. The host path that makes the (y, z)
  // planes one by one calls it after each plane, so that the caller reads each plane while it is in cache
  // (PPPM interpolates the field there); every other path once, with every plane, at the end. Its time is not
  // the transform's (times()).
  using PlanesReady = std::function<void(int)>;
  void backward_gradient(const Complex* in, Complex* scratch, double* const out[3], const std::array<double, 3>& unit_k,
                         const PlanesReady& ready = {});
  int max_batch() const { return m_batching.max_batch; }
  const FftBatching& batching() const { return m_batching; }

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
  // The plans of one local transform for 1, 2, ..., max_batch fields ([k - 1]: k fields; null where
  // none is made: several fields only where both sides have a field distance), and those distances.
  struct PlanSet {
    std::vector<std::unique_ptr<impl::LocalPlan>> by_fields;
    std::vector<long long> launches;  // [k - 1]: impl::cufft_launches of by_fields[k - 1]
    std::size_t in_dist = 0, out_dist = 0;
    bool empty() const { return by_fields.empty(); }
  };

  DistributedFft(const FftGeometry& geometry, const comm::Communicator& comm, comm::Transport& transport,
                 std::unique_ptr<impl::LocalBackend> backend, const std::optional<SpectralBand>& band,
                 const FftBatching& batching);
  void make_plans();
  void check_count(int count, const char* call) const;
  // The stages of a forward (backward) transform of `count` fields through the work arrays' first
  // `count` fields.
  void forward_fields(int count, const double* const in[], Complex* const out[]);
  void backward_fields(int count, const Complex* const in[], double* const out[]);
  void x_forward(int count, Complex* const out[]);
  void x_backward(int count, const Complex* const in[]);
  // backward_gradient on a rank that goes field by field (its work arrays hold one field).
  void gradient_one_by_one(const Complex* in, Complex* scratch, double* const out[3], const std::array<double, 3>& unit_k,
                           const PlanesReady& ready);
  // backward_gradient's report of every plane of the rank's real block, after the last transform.
  void all_planes_ready(const PlanesReady& ready) const;
  // The y transforms `plans` (empty: no y stage apart) in place on the fields `data`, timed as local work.
  void y_transform(const PlanSet& plans, int count, Complex* const data[]);
  // One reshape between stages, timed as such.
  void reshape(Reshape<Complex>& r, int count, const Complex* const in[], Complex* const out[]);

  FftGeometry m_geometry;
  const comm::Communicator& m_comm;
  int m_rank = 0;
  FftBatching m_batching;
  std::unique_ptr<impl::LocalBackend> m_backend;
  // Work arrays of the stages (see geometry.hpp): m_wa stage A, m_wb stage B (pencils), m_wg the spectral
  // box stored [x][ky][kz] (gather layout: the x transforms read it with a stride and write the spectral
  // layout [ky][kz][kx], so the last transpose is part of the FFT). When stage A already is that layout
  // (one rank, slabs), m_wg is m_wa and no reshape runs. Each holds max_batch fields, field f at
  // f * padded_field(count of the stage); m_pa, m_pb, m_pg, m_pgb point at the fields.
  ComplexView m_wa, m_wb, m_wg;
  std::vector<Complex*> m_pa, m_pb, m_pg, m_pgb;
  std::size_t m_da = 0, m_db = 0, m_dg = 0;
  bool m_a_is_g = false;
  // This rank exchanges nothing and runs on the host: a batch goes field by field (see the top); the
  // work arrays, buffers and plans are those of one field.
  bool m_one_by_one = false;
  // Pruned: the band, and m_wgb, the gather array of backward(): the x transforms write only the band's
  // columns, so the others must hold zeros. A separate array whose other columns nothing writes (pencils,
  // slabs on several ranks), or m_wa (one-rank slabs), whose other columns are zeroed before each
  // backward. Unpruned: m_wgb is m_wg.
  std::optional<SpectralBand> m_band;
  ComplexView m_wgb;
  // Local transforms: r2c/c2r over z (pencil, pruned slab) or (y, z) (slab); c2c over y (pencil, pruned
  // slab; in place on m_wb or m_wa; none on a rank without kept rows); c2c over x (strided; pruned: one
  // plan per run of kept ky). m_grouping: Auto resolved; m_zero_before_x: the forward zeroes the gather
  // array's columns outside the band before the x transforms (FewLaunches on one-rank slabs, whose stage A
  // holds every kz there).
  PlanGrouping m_grouping = PlanGrouping::Exact;
  bool m_zero_before_x = false;
  PlanSet m_r2c, m_c2r, m_y_forward, m_y_backward;
  std::vector<PlanSet> m_x_forward, m_x_backward;
  // backward_gradient on a one-rank slab: the c2r of one x-plane (from m_plane, ny x nzc values), made where
  // every plane of a real array keeps the alignment of its first (FFTW's: 16 bytes); null otherwise.
  std::unique_ptr<impl::LocalPlan> m_c2r_plane;
  ComplexView m_plane;
  // Reshapes: pencil a->b->g and back; slab a->g and back.
  std::unique_ptr<Reshape<Complex>> m_a_to_b, m_b_to_g, m_g_to_b, m_b_to_a, m_a_to_g, m_g_to_a;
  FftTimes m_times;
};

}  // namespace spotrun::fft
