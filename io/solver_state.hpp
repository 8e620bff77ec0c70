#pragma once
// A solver's state as decomposition-independent global arrays plus scalars: what a checkpoint holds.
// Each array is a global dataset of `global_rows` rows (atoms sorted by id, or grid planes), each row
// of shape `inner` (e.g. {3} for positions, {ny, nz, 3} for a velocity field). Every rank holds one
// contiguous block of rows [first_row, first_row + rows); blocks of all ranks tile the dataset.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/errors.hpp"

namespace spotrun::io {

struct StateArray {
  std::string name;                  // dataset path in the file, e.g. "/md/x"
  // Shape of one row ({} for a scalar per row). In a layout a reader is given (Solver::state_layout()), an
  // extent k_any_extent takes the file's extent (a per-atom list whose length the run chose: /md/bond).
  std::vector<std::uint64_t> inner;
  bool is_integer = false;           // int64 data in i64, else float64 data in f64
  std::uint64_t global_rows = 0;
  std::uint64_t first_row = 0;
  std::uint64_t rows = 0;
  std::vector<double> f64;           // rows * prod(inner) values, row-major
  std::vector<std::int64_t> i64;
  // In a layout a reader is given: a checkpoint without this dataset is read without it (the state then has
  // no such array), not refused.
  bool optional = false;

  static constexpr std::uint64_t k_any_extent = 0;
  // Whether a row shape read from a file is the one this layout expects (k_any_extent matches any extent).
  bool accepts_inner(const std::vector<std::uint64_t>& got) const {
    if (got.size() != inner.size()) return false;
    for (std::size_t d = 0; d < inner.size(); ++d)
      if (inner[d] != k_any_extent && inner[d] != got[d]) return false;
    return true;
  }

  std::uint64_t row_size() const {
    std::uint64_t n = 1;
    for (auto d : inner) n *= d;
    return n;
  }
  // An array's layout without data (Solver::state_layout()): its name, row shape, type and global rows.
  static StateArray layout(std::string name, std::vector<std::uint64_t> inner, bool is_integer,
                           std::uint64_t global_rows) {
    StateArray a;
    a.name = std::move(name);
    a.inner = std::move(inner);
    a.is_integer = is_integer;
    a.global_rows = global_rows;
    return a;
  }
};

// Resizes `v` to n values that the caller then overwrites, every one (a snapshot into the memory of the last):
// memory it already has is neither zero-filled again nor, where it must grow, copied; new memory holds
// `spare` more values for later growth.
inline void resize_for_overwrite(std::vector<double>& v, std::size_t n, std::size_t spare = 0) {
  if (n > v.capacity()) {
    std::vector<double>().swap(v);
    v.reserve(n + spare);
  }
  v.resize(n);
}

struct SolverState {
  std::string solver;                            // "md", "fluid"
  std::vector<StateArray> arrays;
  std::map<std::string, double> reals;           // e.g. "time", "box/lo_x"
  std::map<std::string, std::int64_t> integers;  // e.g. "step", "md/since_build"
  std::map<std::string, std::string> strings;

  // A scalar the restoring solver needs; InputError naming it when the checkpoint lacks it.
  std::int64_t require_integer(const std::string& key) const {
    auto it = integers.find(key);
    if (it == integers.end()) throw InputError("checkpoint has no attribute '" + key + "'");
    return it->second;
  }
  double require_real(const std::string& key) const {
    auto it = reals.find(key);
    if (it == reals.end()) throw InputError("checkpoint has no attribute '" + key + "'");
    return it->second;
  }

  const StateArray* find(const std::string& name) const {
    for (const auto& a : arrays)
      if (a.name == name) return &a;
    return nullptr;
  }
};

// The block of rows rank r of nranks owns when `total` rows are split as evenly as possible.
inline void block_of(std::uint64_t total, int nranks, int r, std::uint64_t& first, std::uint64_t& count) {
  const std::uint64_t base = total / static_cast<std::uint64_t>(nranks);
  const std::uint64_t extra = total % static_cast<std::uint64_t>(nranks);
  const std::uint64_t ur = static_cast<std::uint64_t>(r);
  first = ur * base + (ur < extra ? ur : extra);
  count = base + (ur < extra ? 1 : 0);
}

}  // namespace spotrun::io
