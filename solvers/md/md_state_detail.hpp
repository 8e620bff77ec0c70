#pragma once
// The MD checkpoint state's internals shared by its two files (not an interface of spotrun): the per-atom
// records, their host copies, the columns of the datasets and the exchange of records between ranks
// (md_state.cpp, which also writes the state); md_restore.cpp restores a checkpoint with them.
#include <cstdint>
#include <vector>

#include "md_solver.hpp"

namespace spotrun::md::state_detail {

// Per-atom record moved between ranks: every checkpointed field of the per-atom field table (atom_fields.hpp),
// one 8-byte slot per component (id, x[3], v[3], f[3], image[3], x_build[3], type, molecule: 18, then the
// list fields at this run's lengths): AtomStore::record_layout().
using RecordLayout = AtomStore::RecordLayout;

// Host copies of the per-atom fields (as AtomStore, from the same table).
struct HostAtoms {
#define SPOTRUN_MD_HOST_VIEW(name, Device, flags, noun) \
  Kokkos::View<Device::data_type, Device::array_layout, Kokkos::HostSpace> name;
  SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_HOST_VIEW)
#undef SPOTRUN_MD_HOST_VIEW
};

// The fields with `flag`: copied to the host (with copy; else only room for them), or back to the atoms.
HostAtoms host_atoms(AtomStore& atoms, unsigned flag, bool copy);
void copy_to_atoms(HostAtoms& host, AtomStore& atoms, unsigned flag);

// The fields with `flag` of atom i from record r.
void unpack_record(const double* r, const RecordLayout& layout, HostAtoms& host, int i, unsigned flag);

// The checkpointed fields as the datasets of state_layout() hold them (in its order): where each row's values
// go in a record, and back. A field without a dataset (a list of length 0) has no column.
struct Column {
  const AtomField* field;
  int slot;
  int width;
};
std::vector<Column> checkpoint_columns(const RecordLayout& layout);

// The record r from row `row` of the datasets; arrays[k]: the dataset of column k, or nullptr for an optional
// one the checkpoint lacks (its slots stay 0).
void row_to_record(const std::vector<Column>& columns, const io::StateArray* const arrays[], std::uint64_t row,
                   double* r);

// Sends record k of `recs` to rank dest[k]; returns the records received (in the order of the sending ranks).
// On one rank (without a transport that routes a rank's messages to itself) the records are returned as they
// are, without a copy.
std::vector<double> exchange_records(const comm::Communicator& comm, comm::Transport& transport,
                                     std::vector<double> recs, const std::vector<int>& dest, int rec);

}  // namespace spotrun::md::state_detail
