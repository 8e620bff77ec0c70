// The FFTW3 backend: batched transforms with fftw_plan_many_dft(_r2c/_c2r) (batches of several fields
// that are no single loop: fftw_plan_guru64_dft(_r2c/_c2r)), plans made once and executed on new arrays
// of the same alignment (fftw_execute_dft*). Every plan is checked; fftw_execute* return
// nothing to check.
#include <fftw3.h>

#include <stdexcept>
#include <string>

#include "comm/errors.hpp"
#include "comm/transport.hpp"
#include "solvers/fft/backend.hpp"
#include "solvers/fft/types.hpp"

namespace spotrun::fft {

PlanRigor parse_plan_rigor(const std::string& name) {
  if (name == "estimate") return PlanRigor::Estimate;
  if (name == "measure") return PlanRigor::Measure;
  throw InputError("FFT plan rigor '" + name + "' is not known; allowed: \"estimate\", \"measure\"");
}

std::string to_string(PlanRigor r) { return r == PlanRigor::Measure ? "measure" : "estimate"; }

namespace impl {
namespace {

// An fftw_plan owned by one object: not copyable, destroyed once.
class FftwPlanHandle {
 public:
  FftwPlanHandle(fftw_plan plan, const char* call) : m_plan(plan) {
    if (!m_plan) throw std::runtime_error(std::string(call) + " failed: FFTW could not make a plan");
  }
  ~FftwPlanHandle() {
    if (m_plan) fftw_destroy_plan(m_plan);
  }
  FftwPlanHandle(const FftwPlanHandle&) = delete;
  FftwPlanHandle& operator=(const FftwPlanHandle&) = delete;
  fftw_plan get() const { return m_plan; }

 private:
  fftw_plan m_plan = nullptr;
};

class FftwPlan final : public LocalPlan {
 public:
  FftwPlan(const BatchSpec& spec, void* in, void* out, unsigned flags)
      : m_kind(spec.kind),
        m_in_place(spec.in_place),
        m_in_offset(spec.ioffset * element_bytes(spec.kind, true)),
        m_out_offset(spec.ooffset * element_bytes(spec.kind, false)),
        m_plan(create(spec, shifted(in, m_in_offset), shifted(out, m_out_offset), flags), call_name(spec)) {
    m_in_align = fftw_alignment_of(static_cast<double*>(shifted(in, m_in_offset)));
    m_out_align = fftw_alignment_of(static_cast<double*>(shifted(out, m_out_offset)));
  }

  void execute(void* in_base, void* out_base) override {
    if ((in_base == out_base) != m_in_place)
      throw std::logic_error("FftwPlan::execute: an in-place plan needs in == out, an out-of-place one in != out");
    void* in = shifted(in_base, m_in_offset);
    void* out = shifted(out_base, m_out_offset);
    if (fftw_alignment_of(static_cast<double*>(in)) != m_in_align ||
        fftw_alignment_of(static_cast<double*>(out)) != m_out_align)
      throw std::logic_error("FftwPlan::execute: arrays are aligned differently from the arrays the plan was made "
                             "for (fftw_alignment_of); pad the arrays to 64 bytes");
    switch (m_kind) {
      case TransformKind::R2C:
        fftw_execute_dft_r2c(m_plan.get(), static_cast<double*>(in), static_cast<fftw_complex*>(out));
        break;
      case TransformKind::C2R:
        fftw_execute_dft_c2r(m_plan.get(), static_cast<fftw_complex*>(in), static_cast<double*>(out));
        break;
      case TransformKind::C2CForward:
      case TransformKind::C2CBackward:
        fftw_execute_dft(m_plan.get(), static_cast<fftw_complex*>(in), static_cast<fftw_complex*>(out));
        break;
    }
  }

 private:
  static void* shifted(void* p, long bytes) { return static_cast<char*>(p) + bytes; }
  // Bytes of one element of the input (or output) array of a transform of this kind.
  static long element_bytes(TransformKind k, bool input) {
    const bool real = input ? k == TransformKind::R2C : k == TransformKind::C2R;
    return real ? static_cast<long>(sizeof(double)) : static_cast<long>(sizeof(fftw_complex));
  }

  // A batch of several fields that merged_loops could not fold into one loop: FFTW's guru interface
  // (64-bit strides), the transform dimensions and up to three loops (fields, outer, inner).
  static fftw_plan create_fields(const BatchSpec& s, void* in, void* out, unsigned flags) {
    fftw_iodim64 dims[2];
    if (s.strided()) {
      dims[0] = {s.n[0], s.istride, s.ostride};
    } else if (s.rank == 1) {
      dims[0] = {s.n[0], 1, 1};
    } else {
      // Rank 2: the slow dimension steps over a row of each side (n[1], or n[1]/2 + 1 on the half side).
      const long in_row = contiguous_dist(s, true) / s.n[0], out_row = contiguous_dist(s, false) / s.n[0];
      dims[0] = {s.n[0], in_row, out_row};
      dims[1] = {s.n[1], 1, 1};
    }
    const long id = s.strided() ? s.idist : contiguous_dist(s, true);
    const long od = s.strided() ? s.odist : contiguous_dist(s, false);
    fftw_iodim64 loops[3];
    int nloops = 0;
    loops[nloops++] = {s.fields, s.ifield, s.ofield};
    if (s.two_loops()) loops[nloops++] = {s.howmany2, s.idist2, s.odist2};
    loops[nloops++] = {s.howmany, id, od};
    switch (s.kind) {
      case TransformKind::R2C:
        return fftw_plan_guru64_dft_r2c(s.rank, dims, nloops, loops, static_cast<double*>(in),
                                        static_cast<fftw_complex*>(out), flags | FFTW_PRESERVE_INPUT);
      case TransformKind::C2R:
        return fftw_plan_guru64_dft_c2r(s.rank, dims, nloops, loops, static_cast<fftw_complex*>(in),
                                        static_cast<double*>(out), flags | FFTW_DESTROY_INPUT);
      case TransformKind::C2CForward:
      case TransformKind::C2CBackward: {
        const int sign = s.kind == TransformKind::C2CForward ? FFTW_FORWARD : FFTW_BACKWARD;
        const unsigned keep = s.in_place ? 0u : static_cast<unsigned>(FFTW_PRESERVE_INPUT);
        return fftw_plan_guru64_dft(s.rank, dims, nloops, loops, static_cast<fftw_complex*>(in),
                                    static_cast<fftw_complex*>(out), sign, flags | keep);
      }
    }
    return nullptr;
  }

  static fftw_plan create(const BatchSpec& s, void* in, void* out, unsigned flags) {
    if (s.fields > 1) return create_fields(s, in, out, flags);
    int n[2] = {s.n[0], s.n[1]};
    const int real_dist = s.rank == 1 ? n[0] : n[0] * n[1];
    const int half_dist = s.rank == 1 ? n[0] / 2 + 1 : n[0] * (n[1] / 2 + 1);
    switch (s.kind) {
      case TransformKind::R2C:
        return fftw_plan_many_dft_r2c(s.rank, n, s.howmany, static_cast<double*>(in), nullptr, 1, real_dist,
                                      static_cast<fftw_complex*>(out), nullptr, 1, half_dist,
                                      flags | FFTW_PRESERVE_INPUT);
      case TransformKind::C2R:
        return fftw_plan_many_dft_c2r(s.rank, n, s.howmany, static_cast<fftw_complex*>(in), nullptr, 1, half_dist,
                                      static_cast<double*>(out), nullptr, 1, real_dist, flags | FFTW_DESTROY_INPUT);
      case TransformKind::C2CForward:
      case TransformKind::C2CBackward: {
        const int sign = s.kind == TransformKind::C2CForward ? FFTW_FORWARD : FFTW_BACKWARD;
        const unsigned keep = s.in_place ? 0u : static_cast<unsigned>(FFTW_PRESERVE_INPUT);
        if (s.two_loops()) {
          // The guru interface: one transform dimension, two loops (fftw_plan_many_dft has one).
          fftw_iodim dim{n[0], static_cast<int>(s.istride), static_cast<int>(s.ostride)};
          fftw_iodim loops[2] = {{s.howmany2, static_cast<int>(s.idist2), static_cast<int>(s.odist2)},
                                 {s.howmany, static_cast<int>(s.idist), static_cast<int>(s.odist)}};
          return fftw_plan_guru_dft(1, &dim, 2, loops, static_cast<fftw_complex*>(in), static_cast<fftw_complex*>(out),
                                    sign, flags | keep);
        }
        if (s.strided())
          return fftw_plan_many_dft(1, n, s.howmany, static_cast<fftw_complex*>(in), nullptr, static_cast<int>(s.istride),
                                    static_cast<int>(s.idist), static_cast<fftw_complex*>(out), nullptr,
                                    static_cast<int>(s.ostride), static_cast<int>(s.odist), sign, flags | keep);
        return fftw_plan_many_dft(s.rank, n, s.howmany, static_cast<fftw_complex*>(in), nullptr, 1, real_dist,
                                  static_cast<fftw_complex*>(out), nullptr, 1, real_dist, sign, flags | keep);
      }
    }
    return nullptr;
  }

 public:
  static const char* call_name(const BatchSpec& s) {
    if (s.fields > 1)
      return s.kind == TransformKind::R2C   ? "fftw_plan_guru64_dft_r2c"
             : s.kind == TransformKind::C2R ? "fftw_plan_guru64_dft_c2r"
                                            : "fftw_plan_guru64_dft";
    return s.kind == TransformKind::R2C   ? "fftw_plan_many_dft_r2c"
           : s.kind == TransformKind::C2R ? "fftw_plan_many_dft_c2r"
           : s.two_loops()                ? "fftw_plan_guru_dft"
                                          : "fftw_plan_many_dft";
  }

 private:
  TransformKind m_kind;
  bool m_in_place;
  long m_in_offset = 0, m_out_offset = 0;  // bytes
  FftwPlanHandle m_plan;
  int m_in_align = 0, m_out_align = 0;
};

class FftwBackend final : public LocalBackend {
 public:
  explicit FftwBackend(PlanRigor rigor) : m_flags(rigor == PlanRigor::Measure ? FFTW_MEASURE : FFTW_ESTIMATE) {}
  std::string name() const override { return "fftw"; }
  bool needs_device_memory() const override { return false; }
  std::unique_ptr<LocalPlan> make_plan(const BatchSpec& spec, void* in, void* out) override {
    if (spec.howmany < 1 || spec.n[0] < 1 || (spec.rank == 2 && spec.n[1] < 1) || spec.rank < 1 || spec.rank > 2)
      throw std::invalid_argument("FftwBackend::make_plan: bad batch");
    if (spec.in_place != (in == out))
      throw std::invalid_argument("FftwBackend::make_plan: in-place plans need in == out");
    check_strides(spec);
    try {
      return std::make_unique<FftwPlan>(merged_loops(spec), in, out, m_flags);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string(e.what()) + " (" + FftwPlan::call_name(merged_loops(spec)) + ", batch " +
                               std::to_string(spec.howmany) + ", fields " + std::to_string(spec.fields) + ")");
    }
  }

 private:
  unsigned m_flags;
};

}  // namespace

std::unique_ptr<LocalBackend> make_backend(backend::Fftw, PlanRigor rigor) {
  if (k_host_accessible && comm::device_rules())
    throw InputError("the fftw FFT backend, named outright, is refused under the device build's rules (a device "
                     "build's memory is not host memory): use the build's default backend");
  return std::make_unique<FftwBackend>(rigor);
}

std::unique_ptr<LocalBackend> make_backend(backend::Default, PlanRigor rigor) {
  if constexpr (k_host_accessible)
    return std::make_unique<FftwBackend>(rigor);
  else
    return make_backend(backend::Cufft{}, rigor);
}

}  // namespace impl
}  // namespace spotrun::fft
