#pragma once
// Helpers shared by the MD solver's source files (md_setup.cpp, md_step.cpp, md_diagnostics.cpp,
// md_state.cpp); not part of its interface.
#include <Kokkos_Core.hpp>
#include <chrono>
#include <sstream>
#include <string>

#include "comm/number_text.hpp"
#include "comm/timing.hpp"

namespace spotrun::md::impl {

// Adds the wall time of a scope to a phase counter. On a host build the phase's kernels are done when it
// ends; on a device build the timer fences the execution space at both ends (comm/timing.hpp), so the
// counter holds the phase's kernels, not the time to queue them nor the previous phase's.
class PhaseTimer {
 public:
  explicit PhaseTimer(double& acc) : m_acc(acc) {
    comm::fence_for_timing();
    m_t0 = std::chrono::steady_clock::now();
  }
  ~PhaseTimer() {
    comm::fence_for_timing();
    m_acc += std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double& m_acc;
  std::chrono::steady_clock::time_point m_t0;
};

}  // namespace spotrun::md::impl
