// The cuFFT backend: batched transforms with cufftPlanMany on device memory. Host-API code only (it
// compiles with the host compiler); kernels stay in Kokkos. Every cuFFT and CUDA runtime call is checked.
// Compiled when the CUDA toolkit is found (SPOTRUN_HAVE_CUDA_HOST).
#include <cuda_runtime_api.h>
#include <cufft.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "solvers/fft/backend.hpp"

namespace spotrun::fft {

bool cufft_compiled() { return true; }

namespace impl {
namespace {

const char* cufft_result_name(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    default: return "cuFFT error";
  }
}

void check_cufft(cufftResult r, const char* call) {
  if (r != CUFFT_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + cufft_result_name(r) + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
}

// A cufftHandle owned by one object: not copyable, destroyed once.
class CufftPlanHandle {
 public:
  CufftPlanHandle() = default;
  ~CufftPlanHandle() {
    if (m_valid) cufftDestroy(m_handle);  // nothing useful to do with an error in a destructor
  }
  CufftPlanHandle(const CufftPlanHandle&) = delete;
  CufftPlanHandle& operator=(const CufftPlanHandle&) = delete;

  // 64-bit plans (cufftMakePlanMany64: sizes and batches past 2^31 elements) without a work area of
  // their own (cufftSetAutoAllocation(0)): the backend gives every plan one shared area, as large as the
  // largest plan needs (set_work_area). work_bytes() is what this plan needs.
  void create(int rank, const int* n, long long idist, long long odist, cufftType type, long long batch) {
    long long len[2] = {n[0], rank == 2 ? n[1] : 1};
    make(rank, len, nullptr, 1, idist, nullptr, 1, odist, type, batch, "cufftMakePlanMany64");
  }
  // The advanced layout (rank 1): element j of transform b at b * dist + j * stride. cuFFT reads the
  // strides only when inembed / onembed are given; for rank 1 their values are not used.
  void create_strided(int n, long long istride, long long idist, long long ostride, long long odist, cufftType type,
                      long long batch) {
    long long len[1] = {n}, iembed[1] = {n}, oembed[1] = {n};
    make(1, len, iembed, istride, idist, oembed, ostride, odist, type, batch, "cufftMakePlanMany64 (strided)");
  }
  std::size_t work_bytes() const { return m_work_bytes; }
  void set_work_area(void* area) { check_cufft(cufftSetWorkArea(m_handle, area), "cufftSetWorkArea"); }
  cufftHandle get() const { return m_handle; }

 private:
  void make(int rank, long long* n, long long* iembed, long long istride, long long idist, long long* oembed,
            long long ostride, long long odist, cufftType type, long long batch, const char* call) {
    check_cufft(cufftCreate(&m_handle), "cufftCreate");
    m_valid = true;
    check_cufft(cufftSetAutoAllocation(m_handle, 0), "cufftSetAutoAllocation");
    check_cufft(cufftMakePlanMany64(m_handle, rank, n, iembed, istride, idist, oembed, ostride, odist, type, batch,
                                    &m_work_bytes),
                call);
  }

  cufftHandle m_handle = 0;
  bool m_valid = false;
  std::size_t m_work_bytes = 0;
};

// Device memory from cudaMalloc, freed once: the work area the plans of one backend share.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() {
    if (m_ptr) cudaFree(m_ptr);  // nothing useful to do with an error in a destructor
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void allocate(std::size_t bytes) {
    if (bytes == 0) return;
    const cudaError_t e = cudaMalloc(&m_ptr, bytes);
    if (e != cudaSuccess) {
      m_ptr = nullptr;
      throw std::runtime_error("cudaMalloc of the cuFFT work area (" + std::to_string(bytes) +
                               " bytes) failed: " + cudaGetErrorString(e));
    }
  }
  void* get() const { return m_ptr; }

 private:
  void* m_ptr = nullptr;
};

// The distance between transforms of a contiguous batch: real (and c2c) values, half-spectrum values.
int real_dist(const BatchSpec& s) { return s.rank == 1 ? s.n[0] : s.n[0] * s.n[1]; }
int half_dist(const BatchSpec& s) { return s.rank == 1 ? s.n[0] / 2 + 1 : s.n[0] * (s.n[1] / 2 + 1); }

class CufftPlan final : public LocalPlan {
 public:
  // A batch with two loops (pruned transforms) is one cufftPlanMany over the inner loop, executed once
  // per iteration of the outer loop on shifted pointers (cufftPlanMany has one batch dimension); a batch
  // of several fields likewise once per field (and outer iteration). The caller merges the loops first
  // where they are one run (merged_loops): fields at the distance of the whole batch are one cuFFT batch.
  // So one execute() makes impl::cufft_launches(spec) calls (distributed_fft.hpp, which counts them);
  // DistributedFft's FewLaunches grouping gives the pruned transforms batches of one loop.
  explicit CufftPlan(const BatchSpec& s)
      : m_kind(s.kind),
        m_in_place(s.in_place),
        m_outer(s.howmany2),
        m_fields(s.fields),
        m_in_field(s.ifield * element_bytes(s.kind, true)),
        m_out_field(s.ofield * element_bytes(s.kind, false)),
        m_in_offset(s.ioffset * element_bytes(s.kind, true)),
        m_out_offset(s.ooffset * element_bytes(s.kind, false)),
        m_in_step(s.idist2 * element_bytes(s.kind, true)),
        m_out_step(s.odist2 * element_bytes(s.kind, false)) {
    int n[2] = {s.n[0], s.n[1]};
    const int real_dist = impl::real_dist(s);
    const int half_dist = impl::half_dist(s);
    switch (s.kind) {
      case TransformKind::R2C: m_plan.create(s.rank, n, real_dist, half_dist, CUFFT_D2Z, s.howmany); break;
      case TransformKind::C2R: m_plan.create(s.rank, n, half_dist, real_dist, CUFFT_Z2D, s.howmany); break;
      case TransformKind::C2CForward:
      case TransformKind::C2CBackward:
        if (s.strided())
          m_plan.create_strided(n[0], s.istride, s.idist, s.ostride, s.odist, CUFFT_Z2Z, s.howmany);
        else
          m_plan.create(s.rank, n, real_dist, real_dist, CUFFT_Z2Z, s.howmany);
        break;
    }
    // On the stream of the Kokkos kernels around the transforms: ordered with them, no synchronisation.
    check_cufft(cufftSetStream(m_plan.get(), static_cast<cudaStream_t>(s.stream)), "cufftSetStream");
  }

  std::size_t work_bytes() const { return m_plan.work_bytes(); }
  void set_work_area(void* area) {
    if (m_plan.work_bytes() > 0) m_plan.set_work_area(area);
    m_has_work_area = true;
  }

  void execute(void* in, void* out) override {
    if ((in == out) != m_in_place)
      throw std::logic_error("CufftPlan::execute: an in-place plan needs in == out, an out-of-place one in != out");
    if (!m_has_work_area && m_plan.work_bytes() > 0)
      throw std::logic_error("CufftPlan::execute before the backend gave the plans their work area (plans_made)");
    for (int f = 0; f < m_fields; ++f)
      for (int j = 0; j < m_outer; ++j)
        execute_one(static_cast<char*>(in) + m_in_offset + f * m_in_field + j * m_in_step,
                    static_cast<char*>(out) + m_out_offset + f * m_out_field + j * m_out_step);
  }

 private:
  static long element_bytes(TransformKind k, bool input) {
    const bool real = input ? k == TransformKind::R2C : k == TransformKind::C2R;
    return real ? static_cast<long>(sizeof(cufftDoubleReal)) : static_cast<long>(sizeof(cufftDoubleComplex));
  }

  void execute_one(void* in, void* out) {
    switch (m_kind) {
      case TransformKind::R2C:
        check_cufft(cufftExecD2Z(m_plan.get(), static_cast<cufftDoubleReal*>(in), static_cast<cufftDoubleComplex*>(out)),
                    "cufftExecD2Z");
        break;
      case TransformKind::C2R:
        check_cufft(cufftExecZ2D(m_plan.get(), static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleReal*>(out)),
                    "cufftExecZ2D");
        break;
      case TransformKind::C2CForward:
      case TransformKind::C2CBackward:
        check_cufft(cufftExecZ2Z(m_plan.get(), static_cast<cufftDoubleComplex*>(in),
                                 static_cast<cufftDoubleComplex*>(out),
                                 m_kind == TransformKind::C2CForward ? CUFFT_FORWARD : CUFFT_INVERSE),
                    "cufftExecZ2Z");
        break;
    }
  }

  TransformKind m_kind;
  bool m_in_place;
  int m_outer = 1;
  int m_fields = 1;
  long m_in_field = 0, m_out_field = 0;  // bytes
  bool m_has_work_area = false;
  long m_in_offset = 0, m_out_offset = 0, m_in_step = 0, m_out_step = 0;  // bytes
  CufftPlanHandle m_plan;
};

// The plans of one backend run one after another on one stream, so they share one work area, as large
// as the largest of them needs (instead of one area per plan). The backend owns it and outlives its
// plans (DistributedFft declares the backend before the plans).
class CufftBackend final : public LocalBackend {
 public:
  std::string name() const override { return "cufft"; }
  bool needs_device_memory() const override { return true; }
  std::unique_ptr<LocalPlan> make_plan(const BatchSpec& spec, void* in, void* out) override {
    if (spec.in_place != (in == out))
      throw std::invalid_argument("CufftBackend::make_plan: in-place plans need in == out");
    if (m_area.get())
      throw std::logic_error("CufftBackend::make_plan after plans_made(): the shared work area is already sized");
    check_strides(spec);
    auto plan = std::make_unique<CufftPlan>(merged_loops(spec));
    m_plans.push_back(plan.get());
    return plan;
  }
  void plans_made() override {
    std::size_t bytes = 0;
    for (const CufftPlan* p : m_plans) bytes = std::max(bytes, p->work_bytes());
    m_area.allocate(bytes);
    for (CufftPlan* p : m_plans) p->set_work_area(m_area.get());
    m_plans.clear();  // the plans belong to the caller; only the area stays here
  }

 private:
  std::vector<CufftPlan*> m_plans;
  DeviceBuffer m_area;
};

}  // namespace

double cufft_work_area_bytes(const BatchSpec& spec) {
  check_strides(spec);
  // One plan of the inner loop (CufftPlan; fields it cannot merge run that plan once each).
  const BatchSpec s = merged_loops(spec);
  long long n[2] = {s.n[0], s.rank == 2 ? s.n[1] : 1};
  const long long real_dist = impl::real_dist(s);
  const long long half_dist = impl::half_dist(s);
  const long long batch = s.howmany;
  // The 64-bit size query of a plan handle that is never made (cufftGetSizeMany64: cufftEstimateMany
  // takes int sizes and batches), with the layouts CufftPlan gives cufftMakePlanMany64.
  cufftHandle h = 0;
  if (cufftCreate(&h) != CUFFT_SUCCESS) return -1.0;
  std::size_t bytes = 0;
  cufftResult r = CUFFT_SUCCESS;
  switch (s.kind) {
    case TransformKind::R2C:
      r = cufftGetSizeMany64(h, s.rank, n, nullptr, 1, real_dist, nullptr, 1, half_dist, CUFFT_D2Z, batch, &bytes);
      break;
    case TransformKind::C2R:
      r = cufftGetSizeMany64(h, s.rank, n, nullptr, 1, half_dist, nullptr, 1, real_dist, CUFFT_Z2D, batch, &bytes);
      break;
    case TransformKind::C2CForward:
    case TransformKind::C2CBackward:
      if (s.strided()) {
        long long embed[1] = {n[0]};
        r = cufftGetSizeMany64(h, 1, n, embed, s.istride, s.idist, embed, s.ostride, s.odist, CUFFT_Z2Z, batch, &bytes);
      } else {
        r = cufftGetSizeMany64(h, s.rank, n, nullptr, 1, real_dist, nullptr, 1, real_dist, CUFFT_Z2Z, batch, &bytes);
      }
      break;
  }
  cufftDestroy(h);
  return r == CUFFT_SUCCESS ? static_cast<double>(bytes) : -1.0;
}

// cuFFT has no planning rigor: the rigor is ignored.
std::unique_ptr<LocalBackend> make_backend(backend::Cufft, PlanRigor) { return std::make_unique<CufftBackend>(); }

}  // namespace impl
}  // namespace spotrun::fft
