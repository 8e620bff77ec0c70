#pragma once
// Kokkos types of the FFT component: the execution and memory space of the run, complex numbers laid
// out as two doubles (re, im) like fftw_complex and cufftDoubleComplex.
#include <Kokkos_Core.hpp>

namespace spotrun::fft {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using Policy = Kokkos::RangePolicy<ExecSpace>;
using Complex = Kokkos::complex<double>;

using RealView = Kokkos::View<double*, MemSpace>;
using ComplexView = Kokkos::View<Complex*, MemSpace>;

template <class T>
using Unmanaged = Kokkos::View<T*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Whether the host can read and write the memory of the FFT's views (host backends, FFTW).
constexpr bool k_host_accessible = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

static_assert(sizeof(Complex) == 2 * sizeof(double), "Kokkos::complex<double> must be two packed doubles");

}  // namespace spotrun::fft
