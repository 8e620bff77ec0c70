#pragma once
// Memory the MD solver will need, estimated from the configuration alone (no MPI, no allocation), so
// that a run too large for its ranks is refused before anything is allocated. See docs/md.md.
#include <cstdint>

#include "md_config.hpp"
#include "solvers/memory_need.hpp"

namespace spotrun::md {

// Atoms of the configuration's fcc lattice, 4 * nx * ny * nz, as a double (no integer overflow).
double lattice_atoms(const MdConfig& cfg);

// Most atoms (owned + ghost) one rank may hold: per-atom indices (neighbour lists, bins, halo send
// lists) are 32-bit ints, and the atom arrays grow by 1/4 beyond what they hold.
constexpr std::int64_t k_max_atoms_per_rank = std::int64_t{1} << 30;

// An upper estimate of what one of `nranks` ranks allocates over a run of `natoms` atoms (the lattice's,
// or a data file's): the per-atom arrays of owned and ghost atoms with their growth margin, the neighbour
// lists (full on a device, as the device stores them) and bins, the sort's and the halo's buffers (in the
// memory space), the host staging of the halo and the host copies of a device build, and the larger of
// the transients of a re-neighbouring, of a checkpoint (state()) and of a restore. The rank grid and
// sub-box are those the solver chooses; the number density is the lattice's (md.lattice.density, also
// assumed for data files, whose whole contents every rank holds while the solver is made). Not counted:
// MPI and HDF5 internal buffers, the Kokkos runtime itself, and the topology lists of molecules (bonds, angles,
// dihedrals and special neighbours of each atom: 8 bytes per listed id, a few hundred bytes per atom of a
// polymer; docs/md.md#molecules).
solvers::MemoryNeed estimated_memory(const MdConfig& cfg, double natoms, int nranks);
// Its host part (on a host build, everything).
double estimated_bytes_per_rank(const MdConfig& cfg, double natoms, int nranks);

}  // namespace spotrun::md
