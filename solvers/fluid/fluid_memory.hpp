#pragma once
// Memory the fluid solver will need, estimated from the configuration alone (no MPI, no allocation), so
// that a grid too large for its ranks is refused before anything is allocated. See docs/fluid.md.
#include "fluid_config.hpp"
#include "solvers/memory_need.hpp"

namespace spotrun::fluid {

// An upper estimate of what one of `nranks` ranks allocates over a run: the spectral state and the RK4
// work fields (complex, half spectrum), the physical velocity and vorticity, the distributed FFT's work
// arrays and transpose buffers (solvers/fft), on a device build cuFFT's work area of every plan, the
// reshapes to and from x-plane blocks that checkpoints, restores and field output use, and the larger of
// the transients of a checkpoint and of a restore, plus an allowance for FFTW's planner and plans (host
// builds). For the rank with the largest blocks of the decomposition the solver will choose. Split into
// host and device memory (solvers/memory_need.hpp). Not counted: MPI and HDF5 internal buffers.
solvers::MemoryNeed estimated_memory(const FluidConfig& cfg, int nranks);
// Its host part (on a host build, everything).
double estimated_bytes_per_rank(const FluidConfig& cfg, int nranks);

}  // namespace spotrun::fluid
