#pragma once
// Kokkos types of the FFT component: the execution and memory space of the run, complex numbers laid
// out as two doubles (re, im) like fftw_complex and cufftDoubleComplex.
#include <Kokkos_Core.hpp>

#include <cstdint>

namespace spotrun::fft {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
// 64-bit indices: a rank's points can exceed 2^31 (the default index type of Kokkos' Cuda is 32-bit).
using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
using Complex = Kokkos::complex<double>;

using RealView = Kokkos::View<double*, MemSpace>;
using ComplexView = Kokkos::View<Complex*, MemSpace>;

template <class T>
using Unmanaged = Kokkos::View<T*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Whether the host can read and write the memory of the FFT's views (host backends, FFTW).
constexpr bool k_host_accessible = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

static_assert(sizeof(Complex) == 2 * sizeof(double), "Kokkos::complex<double> must be two packed doubles");

}  // namespace spotrun::fft
