// Checkpoint state of the MD solver: export as arrays sorted by atom id, and restore on any rank count.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "md_solver.hpp"

namespace spotrun::md {
namespace {

// Per-atom record moved between ranks: id, x[3], v[3], f[3], image[3], x_build[3], type.
constexpr int k_rec = 17;

// Rank owning global row `row` when `total` rows are split by io::block_of.
int block_owner(std::uint64_t total, int nranks, std::uint64_t row) {
  const std::uint64_t base = total / nranks, extra = total % nranks;
  if (row < extra * (base + 1)) return static_cast<int>(row / (base + 1));
  return static_cast<int>(extra + (row - extra * (base + 1)) / base);
}

// Sends each record to the rank dest[k]; returns the records received (any order).
std::vector<double> exchange_records(const comm::Communicator& comm, comm::Transport& transport,
                                     const std::vector<double>& recs, const std::vector<int>& dest) {
  const int n = comm.size();
  std::vector<std::size_t> scount(n, 0), sdispl(n, 0), rcount(n, 0), rdispl(n, 0);
  for (int d : dest) scount[d] += k_rec * sizeof(double);
  std::vector<std::uint64_t> s64(scount.begin(), scount.end()), r64(n);
  SPOTRUN_MPI_CHECK(MPI_Alltoall(s64.data(), 1, MPI_UINT64_T, r64.data(), 1, MPI_UINT64_T, comm.mpi()));
  for (int r = 0; r < n; ++r) rcount[r] = r64[r];
  for (int r = 1; r < n; ++r) {
    sdispl[r] = sdispl[r - 1] + scount[r - 1];
    rdispl[r] = rdispl[r - 1] + rcount[r - 1];
  }
  std::vector<double> packed(recs.size());
  std::vector<std::size_t> fill(n);
  for (int r = 0; r < n; ++r) fill[r] = sdispl[r] / sizeof(double);
  for (std::size_t k = 0; k < dest.size(); ++k) {
    std::copy_n(&recs[k * k_rec], k_rec, &packed[fill[dest[k]]]);
    fill[dest[k]] += k_rec;
  }
  std::vector<double> out((rdispl[n - 1] + rcount[n - 1]) / sizeof(double));
  transport.alltoallv(packed.data(), scount.data(), sdispl.data(), out.data(), rcount.data(), rdispl.data());
  return out;
}

io::StateArray make_array(const std::string& name, std::vector<std::uint64_t> inner, bool integer,
                          std::uint64_t global_rows) {
  io::StateArray a;
  a.name = name;
  a.inner = std::move(inner);
  a.is_integer = integer;
  a.global_rows = global_rows;
  return a;
}

}  // namespace

std::vector<io::StateArray> MdSolver::state_layout() const {
  return {make_array("/md/id", {}, true, 0),      make_array("/md/x", {3}, false, 0),
          make_array("/md/v", {3}, false, 0),     make_array("/md/f", {3}, false, 0),
          make_array("/md/image", {3}, true, 0),  make_array("/md/x_build", {3}, false, 0),
          make_array("/md/type", {}, true, 0)};
}

io::SolverState MdSolver::state() {
  const int nl = m_atoms.nlocal;
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.x);
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.v);
  auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.f);
  auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.id);
  auto himg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.image);
  auto hxb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.x_build);
  auto ht = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.type);

  // Row of each atom in the id-sorted dataset: id - 1 when ids are 1..N (the usual case), else the
  // rank of the id among all ids (gathered).
  std::int64_t max_id = 0;
  for (int i = 0; i < nl; ++i) max_id = std::max<std::int64_t>(max_id, hid(i));
  max_id = m_comm.max(max_id);
  const bool dense = max_id == m_natoms;
  std::vector<std::int64_t> all_ids;
  if (!dense) {
    std::vector<int> counts(m_comm.size()), displs(m_comm.size());
    SPOTRUN_MPI_CHECK(MPI_Allgather(&nl, 1, MPI_INT, counts.data(), 1, MPI_INT, m_comm.mpi()));
    for (int r = 1; r < m_comm.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
    std::vector<std::int64_t> mine(hid.data(), hid.data() + nl);
    all_ids.resize(static_cast<std::size_t>(m_natoms));
    SPOTRUN_MPI_CHECK(MPI_Allgatherv(mine.data(), nl, MPI_INT64_T, all_ids.data(), counts.data(), displs.data(),
                                     MPI_INT64_T, m_comm.mpi()));
    std::sort(all_ids.begin(), all_ids.end());
  }
  auto row_of = [&](std::int64_t id) -> std::uint64_t {
    if (dense) return static_cast<std::uint64_t>(id - 1);
    return static_cast<std::uint64_t>(std::lower_bound(all_ids.begin(), all_ids.end(), id) - all_ids.begin());
  };

  std::vector<double> recs(static_cast<std::size_t>(nl) * k_rec);
  std::vector<int> dest(nl);
  const auto N = static_cast<std::uint64_t>(m_natoms);
  for (int i = 0; i < nl; ++i) {
    double* r = &recs[static_cast<std::size_t>(i) * k_rec];
    r[0] = static_cast<double>(hid(i));
    for (int d = 0; d < 3; ++d) {
      r[1 + d] = hx(i, d);
      r[4 + d] = hv(i, d);
      r[7 + d] = hf(i, d);
      r[10 + d] = himg(i, d);
      r[13 + d] = hxb(i, d);
    }
    r[16] = ht(i);
    dest[i] = block_owner(N, m_comm.size(), row_of(hid(i)));
  }
  std::vector<double> got = exchange_records(m_comm, m_transport, recs, dest);

  io::SolverState st;
  st.solver = "md";
  st.arrays = state_layout();
  std::uint64_t first = 0, rows = 0;
  io::block_of(N, m_comm.size(), m_comm.rank(), first, rows);
  if (got.size() != rows * k_rec) throw std::logic_error("MdSolver::state: row block does not match the atoms received");
  for (auto& a : st.arrays) {
    a.global_rows = N;
    a.first_row = first;
    a.rows = rows;
    if (a.is_integer)
      a.i64.assign(rows * a.row_size(), 0);
    else
      a.f64.assign(rows * a.row_size(), 0.0);
  }
  for (std::uint64_t k = 0; k < rows; ++k) {
    const double* r = &got[k * k_rec];
    const auto id = static_cast<std::int64_t>(r[0]);
    const std::uint64_t row = row_of(id) - first;
    st.arrays[0].i64[row] = id;
    for (int d = 0; d < 3; ++d) {
      st.arrays[1].f64[3 * row + d] = r[1 + d];
      st.arrays[2].f64[3 * row + d] = r[4 + d];
      st.arrays[3].f64[3 * row + d] = r[7 + d];
      st.arrays[4].i64[3 * row + d] = static_cast<std::int64_t>(r[10 + d]);
      st.arrays[5].f64[3 * row + d] = r[13 + d];
    }
    st.arrays[6].i64[row] = static_cast<std::int64_t>(r[16]);
  }
  st.integers["step"] = m_step;
  st.reals["time"] = m_time;
  st.integers["md.natoms"] = m_natoms;
  st.integers["md.since_build"] = m_since_build;
  st.integers["md.dangerous_builds"] = m_dangerous_builds;
  st.integers["md.moved_too_far"] = m_comm.any(m_moved_too_far) ? 1 : 0;
  st.integers["md.ntypes"] = static_cast<std::int64_t>(m_masses.size());
  for (std::size_t t = 0; t < m_masses.size(); ++t) st.reals["md.mass." + std::to_string(t + 1)] = m_masses[t];
  for (int d = 0; d < 3; ++d) {
    st.reals[std::string("md.box.lo_") + char('x' + d)] = m_box.lo[d];
    st.reals[std::string("md.box.hi_") + char('x' + d)] = m_box.hi[d];
  }
  return st;
}

void MdSolver::restore(const io::SolverState& st) {
  comm::Box3 box;
  for (int d = 0; d < 3; ++d) {
    box.lo[d] = st.require_real(std::string("md.box.lo_") + char('x' + d));
    box.hi[d] = st.require_real(std::string("md.box.hi_") + char('x' + d));
    if (!(box.hi[d] > box.lo[d])) throw InputError("checkpoint box is empty or inverted");
  }
  const std::int64_t ntypes = st.require_integer("md.ntypes");
  if (ntypes < 1 || ntypes > 1000000) throw InputError("checkpoint md.ntypes out of range");
  std::vector<double> masses(static_cast<std::size_t>(ntypes));
  for (std::int64_t t = 0; t < ntypes; ++t) masses[t] = st.require_real("md.mass." + std::to_string(t + 1));
  init_domain(box, masses);
  m_natoms = st.require_integer("md.natoms");

  const io::StateArray* arr[7];
  const auto layout = state_layout();
  for (int k = 0; k < 7; ++k) {
    arr[k] = st.find(layout[k].name);
    if (!arr[k]) throw InputError("checkpoint has no dataset " + layout[k].name);
    if (arr[k]->global_rows != static_cast<std::uint64_t>(m_natoms))
      throw InputError("checkpoint dataset " + layout[k].name + " has " + std::to_string(arr[k]->global_rows) +
                       " rows, but md.natoms is " + std::to_string(m_natoms));
  }
  // Send every atom to the rank that owned it at the last neighbour build (by x_build).
  const std::uint64_t rows = arr[0]->rows;
  std::vector<double> recs(rows * k_rec);
  std::vector<int> dest(rows);
  std::string bad;  // checked collectively below: the blocks differ between ranks
  for (std::uint64_t k = 0; k < rows; ++k) {
    double* r = &recs[k * k_rec];
    r[0] = static_cast<double>(arr[0]->i64[k]);
    for (int d = 0; d < 3; ++d) {
      r[1 + d] = arr[1]->f64[3 * k + d];
      r[4 + d] = arr[2]->f64[3 * k + d];
      r[7 + d] = arr[3]->f64[3 * k + d];
      r[10 + d] = static_cast<double>(arr[4]->i64[3 * k + d]);
      r[13 + d] = arr[5]->f64[3 * k + d];
    }
    r[16] = static_cast<double>(arr[6]->i64[k]);
    if ((r[16] < 1 || r[16] > static_cast<double>(ntypes)) && bad.empty())
      bad = "checkpoint atom " + std::to_string(arr[0]->i64[k]) + " has type " + std::to_string(arr[6]->i64[k]) +
            " outside 1.." + std::to_string(ntypes);
    for (int d = 0; d < 3 && bad.empty(); ++d)
      if (!std::isfinite(r[1 + d]) || !std::isfinite(r[4 + d]) || !std::isfinite(r[7 + d]) || !std::isfinite(r[13 + d]))
        bad = "checkpoint atom " + std::to_string(arr[0]->i64[k]) + " has a non-finite position, velocity or force";
    dest[k] = bad.empty() ? m_grid->owner_of(&r[13]) : 0;
  }
  m_comm.agree<InputError>(bad.empty(), bad);
  std::vector<double> got = exchange_records(m_comm, m_transport, recs, dest);
  const int nl = static_cast<int>(got.size() / k_rec);
  m_atoms.reserve(nl);
  m_atoms.nlocal = nl;
  m_atoms.nghost = 0;
  auto hx = Kokkos::create_mirror_view(m_atoms.x);
  auto hv = Kokkos::create_mirror_view(m_atoms.v);
  auto hid = Kokkos::create_mirror_view(m_atoms.id);
  auto ht = Kokkos::create_mirror_view(m_atoms.type);
  auto himg = Kokkos::create_mirror_view(m_atoms.image);
  std::unordered_map<std::int64_t, int> rec_of;
  rec_of.reserve(nl);
  for (int i = 0; i < nl; ++i) {
    const double* r = &got[static_cast<std::size_t>(i) * k_rec];
    hid(i) = static_cast<std::int64_t>(r[0]);
    ht(i) = static_cast<int>(r[16]);
    for (int d = 0; d < 3; ++d) {
      hx(i, d) = r[13 + d];  // rebuild from the positions of the last build: same lists, same order
      hv(i, d) = r[4 + d];
      himg(i, d) = static_cast<int>(r[10 + d]);
    }
    rec_of[hid(i)] = i;
  }
  Kokkos::deep_copy(m_atoms.x, hx);
  Kokkos::deep_copy(m_atoms.v, hv);
  Kokkos::deep_copy(m_atoms.id, hid);
  Kokkos::deep_copy(m_atoms.type, ht);
  Kokkos::deep_copy(m_atoms.image, himg);

  m_step = st.require_integer("step");
  m_time = st.require_real("time");
  m_step_origin = m_step;
  m_time_origin = m_time;
  m_dangerous_builds = st.require_integer("md.dangerous_builds");
  m_moved_too_far = false;
  rebuild();
  if (m_atoms.nlocal != nl) throw std::logic_error("MdSolver::restore: atoms moved during the rebuild");
  // Now the current positions and forces, by atom id.
  auto cx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.x);
  auto cid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.id);
  auto cf = Kokkos::create_mirror_view(m_atoms.f);
  for (int i = 0; i < nl; ++i) {
    const double* r = &got[static_cast<std::size_t>(rec_of.at(cid(i))) * k_rec];
    for (int d = 0; d < 3; ++d) {
      cx(i, d) = r[1 + d];
      cf(i, d) = r[7 + d];
    }
  }
  Kokkos::deep_copy(m_atoms.x, cx);
  Kokkos::deep_copy(m_atoms.f, cf);
  m_halo->update_positions(m_atoms);
  m_since_build = static_cast<int>(st.require_integer("md.since_build"));
  m_moved_too_far = st.require_integer("md.moved_too_far") != 0;
  m_tally_valid = false;
  m_setup_done = true;
  m_restored = true;
}

}  // namespace spotrun::md
