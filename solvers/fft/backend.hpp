#pragma once
// Local (on-rank) FFT backends, chosen by a tag type: backend::Fftw (host memory, FFTW3) and
// backend::Cufft (device memory, cuFFT; compiled only when the CUDA toolkit is found). The distributed
// transform (distributed_fft.hpp) is one code path for both: packing, transposes and the order of the
// stages are the same, only the batched 1D/2D transforms on each rank differ.
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

namespace spotrun::fft {

namespace backend {
struct Fftw {};
struct Cufft {};
// The build's backend: cuFFT where Kokkos' memory is device memory (a CUDA build), FFTW where it is host
// memory. The fluid solver, the tests and the benchmarks take this one. Fftw named outright is refused
// under the device build's rules (comm::device_rules(), as a device build refuses it); Default is not.
struct Default {};
}  // namespace backend

// How much effort FFTW spends choosing an algorithm when a plan is made (once, at setup):
// Estimate picks by heuristics, so the plan, and with it every rounding, is the same in every run (the
// default: bitwise-reproducible runs and restarts). Measure times candidate algorithms (FFTW_MEASURE):
// faster transforms, but the choice, and so the last bits of the results, may differ between runs.
enum class PlanRigor { Estimate, Measure };
PlanRigor parse_plan_rigor(const std::string& name);  // "estimate" | "measure"; throws InputError
std::string to_string(PlanRigor r);

// Whether the cuFFT backend is compiled into this build.
bool cufft_compiled();

namespace impl {

enum class TransformKind { R2C, C2R, C2CForward, C2CBackward };

// A batch of `howmany` contiguous transforms of rank 1 or 2 (sizes n[0] (x n[1]), the last the fastest).
// Real arrays hold prod(n) values per transform; complex ones prod(n) with the last size n/2 + 1 for
// r2c/c2r, prod(n) for c2c. Transforms are unnormalised; forward is exp(-i k x).
struct BatchSpec {
  TransformKind kind = TransformKind::C2CForward;
  int rank = 1;
  int n[2] = {1, 1};
  int howmany = 1;
  bool in_place = false;
  // Strided batches (rank-1 c2c only): element j of transform b at in[b * idist + j * istride] and
  // out[b * odist + j * ostride], so that a transform can read or write an array whose transformed axis
  // is not the contiguous one (the x transforms of distributed_fft.cpp, which fuse a transpose into the
  // FFT). 0 in all four: the contiguous batches described above.
  long istride = 0, idist = 0, ostride = 0, odist = 0;
  // A second, outer loop of the strided batch: transform b of loop iteration j at in[j * idist2 + b * idist
  // + ...] (pruned transforms, which skip the rows that dealiasing zeroes: the kept rows of a block are
  // a sub-box, two loops deep). 1 / 0 / 0: no outer loop.
  int howmany2 = 1;
  long idist2 = 0, odist2 = 0;
  // Where the batch starts in the arrays given to execute(): in + ioffset, out + ooffset (elements).
  long ioffset = 0, ooffset = 0;
  // Several fields in one execution (DistributedFft::forward_many): everything above repeated `fields`
  // times, field f at in + f * ifield, out + f * ofield (elements), the outermost loop. Any kind and
  // rank. 1 / 0 / 0: one field.
  int fields = 1;
  long ifield = 0, ofield = 0;
  bool strided() const { return istride != 0 || idist != 0 || ostride != 0 || odist != 0; }
  bool two_loops() const { return howmany2 > 1; }
  // The native stream the transforms run on (cudaStream_t of the Kokkos execution space instance whose
  // kernels prepare and consume the arrays), so that they are ordered with those kernels without a
  // synchronisation; nullptr for host backends.
  void* stream = nullptr;
};

// Throws std::invalid_argument for strides given to anything but a rank-1 c2c batch, negative or
// beyond int (what FFTW and cuFFT take).
inline void check_strides(const BatchSpec& s) {
  if (s.fields < 1) throw std::invalid_argument("BatchSpec: field count below 1");
  if (s.fields > 1 && (s.ifield < 1 || s.ofield < 1))
    throw std::invalid_argument("BatchSpec: the fields of a batch need distances of at least 1");
  if (!s.strided()) return;
  const bool c2c = s.kind == TransformKind::C2CForward || s.kind == TransformKind::C2CBackward;
  if (s.rank != 1 || !c2c) throw std::invalid_argument("BatchSpec: strides are for rank-1 c2c batches only");
  for (long v : {s.istride, s.idist, s.ostride, s.odist})
    if (v < 1 || v > std::numeric_limits<int>::max())
      throw std::invalid_argument("BatchSpec: stride or distance " + std::to_string(v) + " out of range");
  if (s.howmany2 < 1 || s.ioffset < 0 || s.ooffset < 0)
    throw std::invalid_argument("BatchSpec: outer loop count below 1 or a negative offset");
  if (s.two_loops())
    for (long v : {s.idist2, s.odist2})
      if (v < 1 || v > std::numeric_limits<int>::max())
        throw std::invalid_argument("BatchSpec: outer distance " + std::to_string(v) + " out of range");
}

// Elements of one transform of a contiguous batch in its input (or output) array: prod(n), the last
// size n/2 + 1 on the complex side of r2c / c2r.
inline long contiguous_dist(const BatchSpec& s, bool input) {
  const bool half = input ? s.kind == TransformKind::C2R : s.kind == TransformKind::R2C;
  const long last = half ? s.n[s.rank - 1] / 2 + 1 : s.n[s.rank - 1];
  return s.rank == 1 ? last : static_cast<long>(s.n[0]) * last;
}

// The same batch with its loops merged where they are one run of equal steps, so that a backend sees the
// simplest form: the two loops into one (idist2 = howmany * idist, odist2 = howmany * odist), then the
// fields into the outermost remaining loop (ifield = its count times its distance, both sides).
inline BatchSpec merged_loops(BatchSpec s) {
  if (s.two_loops() && s.idist2 == s.howmany * s.idist && s.odist2 == s.howmany * s.odist) {
    s.howmany *= s.howmany2;
    s.howmany2 = 1;
    s.idist2 = s.odist2 = 0;
  }
  if (s.fields > 1) {
    const long id = s.strided() ? s.idist : contiguous_dist(s, true);
    const long od = s.strided() ? s.odist : contiguous_dist(s, false);
    if (s.two_loops() && s.ifield == s.howmany2 * s.idist2 && s.ofield == s.howmany2 * s.odist2) {
      s.howmany2 *= s.fields;
    } else if (!s.two_loops() && s.ifield == s.howmany * id && s.ofield == s.howmany * od) {
      s.howmany *= s.fields;
    } else {
      return s;
    }
    s.fields = 1;
    s.ifield = s.ofield = 0;
  }
  return s;
}

class LocalPlan {
 public:
  virtual ~LocalPlan() = default;
  // Runs the transform on in -> out (in == out exactly when the plan is in place). c2r overwrites in.
  virtual void execute(void* in, void* out) = 0;
};

class LocalBackend {
 public:
  virtual ~LocalBackend() = default;
  virtual std::string name() const = 0;
  // True when the arrays must be device memory (cuFFT), false when host memory (FFTW).
  virtual bool needs_device_memory() const = 0;
  // Makes a plan once. in and out are arrays of the sizes the spec implies, of the same alignment as the
  // arrays execute() will see; planning may overwrite them.
  virtual std::unique_ptr<LocalPlan> make_plan(const BatchSpec& spec, void* in, void* out) = 0;
  // Called once after the last make_plan(), before any execute(): the cuFFT backend gives its plans one
  // shared work area here, as large as the largest plan needs. The backend must outlive its plans.
  virtual void plans_made() {}
};

// The bytes of device memory a cuFFT plan of this batch needs as its work area (cufftGetSizeMany64; the
// plans of a backend share one area, the largest of theirs); -1 when cuFFT is not compiled in or cannot
// say (no usable GPU).
double cufft_work_area_bytes(const BatchSpec& spec);

// Throws InputError under comm::device_rules() on a host build (a device build refuses FFTW in
// DistributedFft, its memory not being host memory).
std::unique_ptr<LocalBackend> make_backend(backend::Fftw, PlanRigor rigor);
std::unique_ptr<LocalBackend> make_backend(backend::Default, PlanRigor rigor);
// Throws InputError when spotrun was built without the CUDA toolkit.
std::unique_ptr<LocalBackend> make_backend(backend::Cufft, PlanRigor rigor);

}  // namespace impl
}  // namespace spotrun::fft
