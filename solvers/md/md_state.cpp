// Checkpoint state of the MD solver: export as arrays sorted by atom id (the restore on any rank count:
// md_restore.cpp), and the per-atom records both move between ranks (md_state_detail.hpp).
#include <algorithm>
#include <cstring>

#include "md_export.hpp"
#include "md_memory.hpp"
#include "md_impl.hpp"
#include "md_solver.hpp"
#include "md_stage.hpp"
#include "md_state_detail.hpp"

namespace spotrun::md {
namespace state_detail {
namespace {

// The records hold 64-bit integers by their bits, 32-bit ones and doubles by value (exact either way).
double to_slot(double v) { return v; }
double to_slot(int v) { return v; }
double to_slot(std::int64_t v) {
  double r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}
void from_slot(double r, double& v) { v = r; }
void from_slot(double r, int& v) { v = static_cast<int>(r); }
void from_slot(double r, std::int64_t& v) { std::memcpy(&v, &r, sizeof v); }

// The walk over the per-atom fields of the atoms and their host copies (HostAtoms), or of the host copies.
template <class Fn>
void for_each_field(AtomStore& atoms, HostAtoms& host, Fn&& fn) {
#define SPOTRUN_MD_BOTH(name, View, flags, noun) fn(atom_field(AtomFieldId::name), atoms.name, host.name);
  SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_BOTH)
#undef SPOTRUN_MD_BOTH
}
template <class Fn>
void for_each_field(HostAtoms& host, Fn&& fn) {
#define SPOTRUN_MD_HOST(name, View, flags, noun) fn(atom_field(AtomFieldId::name), host.name);
  SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_HOST)
#undef SPOTRUN_MD_HOST
}

// Component c of atom i of a host view of the table (one component, three, or a list field's).
template <class V>
auto& component(const V& v, int i, int c) {
  if constexpr (V::rank == 1)
    return v(i);
  else
    return v(i, c);
}

// Atom i's record from the host copies of its checkpointed fields.
void pack_record(HostAtoms& host, const RecordLayout& layout, int i, double* r) {
  for_each_field(host, [&](const AtomField& f, const auto& h) {
    if (!f.has(k_checkpointed)) return;
    const int slot = layout.slot[index_of(f)];
    for (int c = 0; c < layout.width[index_of(f)]; ++c) r[slot + c] = to_slot(component(h, i, c));
  });
}

// Row `row` of the state's arrays from record r (row_to_record: the other way).
void record_to_row(const std::vector<Column>& columns, const double* r, std::vector<io::StateArray>& arrays,
                   std::uint64_t row) {
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const AtomField& f = *columns[k].field;
    const int width = columns[k].width;
    const double* slot = r + columns[k].slot;
    const std::uint64_t at = row * static_cast<std::uint64_t>(width);
    for (int c = 0; c < width; ++c) {
      if (f.elem == AtomElem::f64) {
        arrays[k].f64[at + c] = slot[c];
      } else if (f.elem == AtomElem::i64) {
        std::int64_t v;
        from_slot(slot[c], v);
        arrays[k].i64[at + c] = v;
      } else {
        arrays[k].i64[at + c] = static_cast<std::int64_t>(slot[c]);
      }
    }
  }
}
// A record's atom id.
std::int64_t id_of_record(const double* r) {
  std::int64_t id;
  from_slot(r[record_slot(AtomFieldId::id)], id);
  return id;
}

// Rank owning global row `row` when `total` rows are split by io::block_of.
int block_owner(std::uint64_t total, int nranks, std::uint64_t row) {
  const std::uint64_t base = total / nranks, extra = total % nranks;
  if (row < extra * (base + 1)) return static_cast<int>(row / (base + 1));
  return static_cast<int>(extra + (row - extra * (base + 1)) / base);
}

// Records grouped by the rank they go to: rank r's are values [offset[r], offset[r + 1]) of the buffer.
struct PackPlan {
  std::vector<std::size_t> offset;  // nranks + 1 entries
};

// The plan for sending record k (of `rec` values) to rank dest[k].
PackPlan pack_plan(int nranks, const std::vector<int>& dest, int rec) {
  PackPlan p;
  p.offset.assign(static_cast<std::size_t>(nranks) + 1, 0);
  for (int d : dest) p.offset[static_cast<std::size_t>(d) + 1] += static_cast<std::size_t>(rec);
  for (int r = 0; r < nranks; ++r) p.offset[r + 1] += p.offset[r];
  return p;
}

// Whether exchange_packed() would hand back the send buffer itself: one rank, and no transport that routes a
// rank's messages to itself.
bool exchange_is_local(const comm::Communicator& comm, const comm::Transport& transport) {
  return comm.size() == 1 && !transport.route_self();
}

// Sends the packed records (plan) to their ranks; the records received (in the order of the sending ranks)
// go into `out`, resized (its memory kept where it is large enough). Host records: this runs at checkpoints
// and restores only. Where exchange_is_local(), nothing moves: the caller reads `packed`.
void exchange_packed(const comm::Communicator& comm, comm::Transport& transport, const std::vector<double>& packed,
                     const PackPlan& plan, std::vector<double>& out) {
  if (exchange_is_local(comm, transport)) return;
  const int n = comm.size();
  std::vector<std::uint64_t> scount(n);
  for (int r = 0; r < n; ++r) scount[r] = plan.offset[r + 1] - plan.offset[r];
  const std::vector<std::uint64_t> rcount = comm.alltoall(scount);
  std::vector<std::size_t> rdispl(n + 1, 0);
  for (int r = 0; r < n; ++r) rdispl[r + 1] = rdispl[r] + rcount[r];
  io::resize_for_overwrite(out, rdispl[n], rdispl[n] / 8);  // an eighth to spare: atoms move between checkpoints
  comm::Batch batch;
  batch.memory = comm::Memory::host;
  for (int r = 0; r < n; ++r) {
    if (r == comm.rank() && !transport.route_self()) {
      std::copy_n(packed.data() + plan.offset[r], scount[r], out.data() + rdispl[r]);
      continue;
    }
    batch.send(r, packed.data() + plan.offset[r], scount[r] * sizeof(double));
    batch.recv(r, out.data() + rdispl[r], rcount[r] * sizeof(double));
  }
  transport.exchange(batch);
}

}  // namespace

HostAtoms host_atoms(AtomStore& atoms, unsigned flag, bool copy) {
  HostAtoms host;
  for_each_field(atoms, host, [&](const AtomField& f, auto& view, auto& mirror) {
    if (!f.has(flag)) return;
    if (copy)
      mirror = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), view);
    else
      mirror = Kokkos::create_mirror_view(view);
  });
  return host;
}
void copy_to_atoms(HostAtoms& host, AtomStore& atoms, unsigned flag) {
  for_each_field(atoms, host, [&](const AtomField& f, auto& view, auto& mirror) {
    if (f.has(flag)) Kokkos::deep_copy(view, mirror);
  });
}

void unpack_record(const double* r, const RecordLayout& layout, HostAtoms& host, int i, unsigned flag) {
  for_each_field(host, [&](const AtomField& f, const auto& h) {
    if (!f.has(flag) || !f.has(k_checkpointed)) return;
    const int slot = layout.slot[index_of(f)];
    for (int c = 0; c < layout.width[index_of(f)]; ++c) from_slot(r[slot + c], component(h, i, c));
  });
}

std::vector<Column> checkpoint_columns(const RecordLayout& layout) {
  std::vector<Column> c;
  for (const auto& f : k_atom_fields)
    if (f.has(k_checkpointed) && layout.width[index_of(f)] > 0)
      c.push_back({&f, layout.slot[index_of(f)], layout.width[index_of(f)]});
  return c;
}
void row_to_record(const std::vector<Column>& columns, const io::StateArray* const arrays[], std::uint64_t row,
                   double* r) {
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const AtomField& f = *columns[k].field;
    const int width = columns[k].width;
    double* slot = r + columns[k].slot;
    if (!arrays[k]) {
      std::fill_n(slot, width, 0.0);
      continue;
    }
    const std::uint64_t at = row * static_cast<std::uint64_t>(width);
    for (int c = 0; c < width; ++c) {
      if (f.elem == AtomElem::f64)
        slot[c] = arrays[k]->f64[at + c];
      else if (f.elem == AtomElem::i64)
        slot[c] = to_slot(arrays[k]->i64[at + c]);
      else
        slot[c] = static_cast<double>(arrays[k]->i64[at + c]);  // within int: check_atoms()
    }
  }
}

std::vector<double> exchange_records(const comm::Communicator& comm, comm::Transport& transport,
                                     std::vector<double> recs, const std::vector<int>& dest, int rec) {
  if (exchange_is_local(comm, transport)) return recs;
  const PackPlan plan = pack_plan(comm.size(), dest, rec);
  std::vector<double> packed(recs.size());
  std::vector<std::size_t> fill(plan.offset.begin(), plan.offset.end() - 1);
  const auto n = static_cast<std::size_t>(rec);
  for (std::size_t k = 0; k < dest.size(); ++k) {
    std::copy_n(&recs[k * n], n, &packed[fill[dest[k]]]);
    fill[dest[k]] += n;
  }
  recs = std::vector<double>();
  std::vector<double> out;
  exchange_packed(comm, transport, packed, plan, out);
  return out;
}

}  // namespace state_detail

using namespace state_detail;

namespace {

// Row of each atom in the id-sorted dataset: id - 1 when ids are 1..N (the usual case), else the
// rank of the id among all ids (gathered).
struct RowOfId {
  bool dense = true;
  std::vector<std::int64_t> all_ids;  // sorted, where !dense
  std::uint64_t operator()(std::int64_t id) const {
    if (dense) return static_cast<std::uint64_t>(id - 1);
    return static_cast<std::uint64_t>(std::lower_bound(all_ids.begin(), all_ids.end(), id) - all_ids.begin());
  }
};
RowOfId row_of_id(const comm::Communicator& comm, const decltype(HostAtoms::id)& hid, int nl, std::int64_t natoms) {
  std::int64_t max_id = 0;
  for (int i = 0; i < nl; ++i) max_id = std::max<std::int64_t>(max_id, hid(i));
  max_id = comm.max(max_id);
  RowOfId row_of;
  row_of.dense = max_id == natoms;
  if (!row_of.dense) {
    row_of.all_ids = comm.all_gather(std::vector<std::int64_t>(hid.data(), hid.data() + nl));
    std::sort(row_of.all_ids.begin(), row_of.all_ids.end());
  }
  return row_of;
}

// The records of the nl atoms into `records` (resized, its memory kept), each written straight to its place
// among those sent to its rank dest[i].
void pack_records(HostAtoms& host, const RecordLayout& rl, int nl, const std::vector<int>& dest, const PackPlan& plan,
                  std::vector<double>& records) {
  const int rec = rl.total;
  const std::size_t values = static_cast<std::size_t>(nl) * rec;
  io::resize_for_overwrite(records, values, values / 8);  // an eighth to spare, as the block received
  std::vector<std::size_t> fill(plan.offset.begin(), plan.offset.end() - 1);
  for (int i = 0; i < nl; ++i) {
    double* r = &records[fill[dest[i]]];
    fill[dest[i]] += rec;
    pack_record(host, rl, i, r);
  }
}

// The arrays of the state, rows [first, first + rows) of N, in the layout given: in the spare's own vector where
// it holds this layout (no allocation of its size either), else each in the memory of the spare's array of its
// name (its memory, not its values). The spare is emptied.
std::vector<io::StateArray> state_arrays(std::vector<io::StateArray> layout, io::SolverState& spare, std::uint64_t N,
                                         std::uint64_t first, std::uint64_t rows) {
  std::vector<io::StateArray> arrays;
  bool same = spare.arrays.size() == layout.size();
  for (std::size_t k = 0; same && k < layout.size(); ++k)
    same = spare.arrays[k].name == layout[k].name && spare.arrays[k].inner == layout[k].inner &&
           spare.arrays[k].is_integer == layout[k].is_integer;
  if (same)
    arrays.swap(spare.arrays);
  else
    arrays.swap(layout);
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    io::StateArray& a = arrays[k];
    if (!same && k < spare.arrays.size() && spare.arrays[k].name == a.name) {  // its memory, not its values
      a.f64.swap(spare.arrays[k].f64);
      a.i64.swap(spare.arrays[k].i64);
    }
    a.global_rows = N;
    a.first_row = first;
    a.rows = rows;
    if (a.is_integer) {
      a.f64.clear();
      a.i64.resize(rows * a.row_size());
    } else {
      a.i64.clear();
      a.f64.resize(rows * a.row_size());
    }
  }
  spare = io::SolverState{};
  return arrays;
}

// The rows [first, first + rows) of the arrays from the records received (got, `rec` values each): the records
// in row order first (one index written per atom, into record_of_row), then every array filled in row order:
// after the spatial sorts of the neighbour builds the records come in a shuffled id order, and writing each
// into every array at its row would cost a cache miss per value (the checkpoint snapshot's time).
void fill_rows(const std::vector<Column>& columns, const std::vector<double>& got, int rec, const RowOfId& row_of,
               std::uint64_t first, std::uint64_t rows, std::vector<std::uint64_t>& record_of_row,
               std::vector<io::StateArray>& arrays) {
  constexpr std::uint64_t k_none = ~std::uint64_t(0);
  record_of_row.assign(rows, k_none);
  for (std::uint64_t k = 0; k < rows; ++k) record_of_row[row_of(id_of_record(&got[k * rec])) - first] = k;
  const std::vector<double> zeros(static_cast<std::size_t>(rec), 0.0);  // a row no record reached (not while ids are unique)
  for (std::uint64_t row = 0; row < rows; ++row)
    record_to_row(columns, record_of_row[row] == k_none ? zeros.data() : &got[record_of_row[row] * rec], arrays, row);
}

// The barostat's own state (md.npt.*), so that a resume continues it bitwise.
void put_barostat_state(io::SolverState& st, MtkBarostat& b) {
  st.integers["md.npt.pchain"] = b.chain();
  for (int d = 0; d < 3; ++d) {
    const std::string n = std::to_string(d + 1);
    st.reals["md.npt.omega." + n] = b.omega()[d];
    st.reals["md.npt.omega_dot." + n] = b.omega_dot()[d];
    st.reals["md.npt.fixedpoint." + n] = b.fixedpoint()[d];
  }
  st.reals["md.npt.vol0"] = b.vol0();
  st.reals["md.npt.t_target"] = b.t_target();
  st.reals["md.npt.mtk_term2"] = b.mtk_term2();
  for (int k = 0; k < b.chain(); ++k) {
    const std::string n = std::to_string(k + 1);
    st.reals["md.npt.etap." + n] = b.etap()[k];
    st.reals["md.npt.etap_dot." + n] = b.etap_dot()[k];
    st.reals["md.npt.etap_dotdot." + n] = b.etap_dotdot()[k];
  }
}

// The Nose-Hoover chain (md.nvt.*), so that a resume continues it bitwise.
void put_thermostat_state(io::SolverState& st, NoseHooverChain& nhc) {
  st.integers["md.nvt.tchain"] = nhc.chain();
  st.reals["md.nvt.t_current"] = nhc.t_current();
  for (int k = 0; k < nhc.chain(); ++k) {
    const std::string n = std::to_string(k + 1);
    st.reals["md.nvt.eta." + n] = nhc.eta()[k];
    st.reals["md.nvt.eta_dot." + n] = nhc.eta_dot()[k];
    st.reals["md.nvt.eta_dotdot." + n] = nhc.eta_dotdot()[k];
  }
}

}  // namespace

std::vector<io::StateArray> MdSolver::state_layout() const {
  // /md/<name> of every checkpointed field of the table, in its order: /md/id, /md/x, /md/v, /md/f, /md/image,
  // /md/x_build, /md/type, /md/molecule, then the list fields this run has (/md/bond, ...). Before a restore
  // has read them, a list field's length is the checkpoint's, and its dataset optional.
  auto present = [&](const AtomField& f) {
    return f.has(k_checkpointed) && ((f.is_list() && m_lists_from_checkpoint) || m_atoms.width(f) > 0);
  };
  std::size_t n = 0;
  for (const auto& f : k_atom_fields) n += present(f) ? 1 : 0;
  std::vector<io::StateArray> layout;
  layout.reserve(n);  // one allocation of its size (a checkpoint's snapshot allocates nothing array-sized)
  for (const auto& f : k_atom_fields) {
    if (!present(f)) continue;
    if (f.is_list() && m_lists_from_checkpoint) {
      layout.push_back(dataset_layout(f));
      continue;
    }
    const int width = m_atoms.width(f);
    if (width > 0) layout.push_back(dataset_layout(f, width));
  }
  return layout;
}

io::SolverState MdSolver::state() { return state_reusing(io::SolverState{}); }

io::SolverState MdSolver::state_reusing(io::SolverState&& spare) {
  const int nl = m_atoms.nlocal;
  const RecordLayout rl = m_atoms.record_layout();
  const int rec = rl.total;
  const std::vector<Column> columns = checkpoint_columns(rl);
  HostAtoms host = host_atoms(m_atoms, k_checkpointed, true);
  const RowOfId row_of = row_of_id(m_comm, host.id, nl, m_natoms);

  // The records and every array below go into memory kept from the previous call (the records sent and
  // received, the arrays of `spare`): a checkpoint of a large system otherwise spends most of its snapshot's
  // time in the kernel, mapping and zeroing new pages. Every value is written before it is read. Each record
  // is written straight to its place among those sent to its rank.
  const auto N = static_cast<std::uint64_t>(m_natoms);
  m_state_dest.resize(nl);
  for (int i = 0; i < nl; ++i) m_state_dest[i] = block_owner(N, m_comm.size(), row_of(host.id(i)));
  const PackPlan plan = pack_plan(m_comm.size(), m_state_dest, rec);
  pack_records(host, rl, nl, m_state_dest, plan, m_state_records);
  exchange_packed(m_comm, m_transport, m_state_records, plan, m_state_received);
  const std::vector<double>& got = exchange_is_local(m_comm, m_transport) ? m_state_records : m_state_received;

  io::SolverState st;
  st.solver = "md";
  std::uint64_t first = 0, rows = 0;
  io::block_of(N, m_comm.size(), m_comm.rank(), first, rows);
  if (got.size() != rows * rec) throw std::logic_error("MdSolver::state: row block does not match the atoms received");
  st.arrays = state_arrays(state_layout(), spare, N, first, rows);
  fill_rows(columns, got, rec, row_of, first, rows, m_state_record_of_row, st.arrays);
  st.integers["step"] = m_step;
  st.reals["time"] = m_time;
  st.integers["md.natoms"] = m_natoms;
  st.integers["md.since_build"] = m_since_build;
  st.integers["md.dangerous_builds"] = m_dangerous_builds;
  st.integers["md.moved_too_far"] = m_comm.any(collect_moved_too_far()) ? 1 : 0;
  st.integers["md.ntypes"] = static_cast<std::int64_t>(m_masses.size());
  for (std::size_t t = 0; t < m_masses.size(); ++t) st.reals["md.mass." + std::to_string(t + 1)] = m_masses[t];
  for (int d = 0; d < 3; ++d) {
    st.reals[std::string("md.box.lo_") + char('x' + d)] = m_box.lo[d];
    st.reals[std::string("md.box.hi_") + char('x' + d)] = m_box.hi[d];
    // The rank grid: a resume on as many ranks takes it where it fits (a box that changed shape under aniso
    // constant pressure may make another grid the best for it now).
    st.integers[std::string("md.grid_") + char('x' + d)] = m_grid->dims()[d];
  }
  put_bonded_state(st);
  put_stage_state(st);
  if (m_min) m_min->put_state(st);
  if (barostatted(m_cfg.ensemble)) {  // the barostat, so that a resume continues it bitwise
    put_barostat_state(st, m_baro);
    for (int d = 0; d < 3; ++d) {
      st.reals[std::string("md.npt.build_lo_") + char('x' + d)] = m_build_box.lo[d];
      st.reals[std::string("md.npt.build_hi_") + char('x' + d)] = m_build_box.hi[d];
    }
    st.reals["md.npt.shrink_stop"] = m_shrink_stop;
    if (m_pppm) {
      for (int d = 0; d < 3; ++d) st.integers[std::string("md.npt.pppm_mesh_") + char('x' + d)] = m_pppm->choice().mesh[d];
      st.reals["md.npt.pppm_g_ewald"] = m_pppm->choice().g_ewald;
    }
    st.reals["md.npt.t_current"] = m_t_current;
    st.reals["md.npt.virial"] = m_virial_sum;
    for (int d = 0; d < 3; ++d) st.reals["md.npt.virial_diagonal." + std::to_string(d + 1)] = m_virial_diagonal[d];
  }
  if (thermostatted(m_cfg.ensemble)) put_thermostat_state(st, m_nhc);
  return st;
}

}  // namespace spotrun::md
