// Checkpoint state of the MD solver: export as arrays sorted by atom id, and restore on any rank count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "md_export.hpp"
#include "md_memory.hpp"
#include "md_impl.hpp"
#include "md_solver.hpp"
#include "md_stage.hpp"

namespace spotrun::md {
namespace {

// Per-atom record moved between ranks: every checkpointed field of the per-atom field table (atom_fields.hpp),
// one 8-byte slot per component (id, x[3], v[3], f[3], image[3], x_build[3], type, molecule: 18, then the
// list fields at this run's lengths): AtomStore::record_layout().
using RecordLayout = AtomStore::RecordLayout;

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

// Host copies of the per-atom fields (as AtomStore, from the same table), and the walk over both.
struct HostAtoms {
#define SPOTRUN_MD_HOST_VIEW(name, Device, flags, noun) \
  Kokkos::View<Device::data_type, Device::array_layout, Kokkos::HostSpace> name;
  SPOTRUN_MD_ATOM_FIELDS(SPOTRUN_MD_HOST_VIEW)
#undef SPOTRUN_MD_HOST_VIEW
};
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

// The fields with `flag`: copied to the host (with copy; else only room for them), or back to the atoms.
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

// Atom i's record from the host copies of its checkpointed fields, and the fields with `flag` from a record.
void pack_record(HostAtoms& host, const RecordLayout& layout, int i, double* r) {
  for_each_field(host, [&](const AtomField& f, const auto& h) {
    if (!f.has(k_checkpointed)) return;
    const int slot = layout.slot[index_of(f)];
    for (int c = 0; c < layout.width[index_of(f)]; ++c) r[slot + c] = to_slot(component(h, i, c));
  });
}
void unpack_record(const double* r, const RecordLayout& layout, HostAtoms& host, int i, unsigned flag) {
  for_each_field(host, [&](const AtomField& f, const auto& h) {
    if (!f.has(flag) || !f.has(k_checkpointed)) return;
    const int slot = layout.slot[index_of(f)];
    for (int c = 0; c < layout.width[index_of(f)]; ++c) from_slot(r[slot + c], component(h, i, c));
  });
}

// The checkpointed fields as the datasets of state_layout() hold them (in its order): where each row's values
// go in a record, and back. A field without a dataset (a list of length 0) has no column.
struct Column {
  const AtomField* field;
  int slot;
  int width;
};
std::vector<Column> checkpoint_columns(const RecordLayout& layout) {
  std::vector<Column> c;
  for (const auto& f : k_atom_fields)
    if (f.has(k_checkpointed) && layout.width[index_of(f)] > 0)
      c.push_back({&f, layout.slot[index_of(f)], layout.width[index_of(f)]});
  return c;
}
// Row `row` of the state's arrays from record r, or (to_record) the record from the row.
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
// arrays[k]: the dataset of column k, or nullptr for an optional one the checkpoint lacks (its slots stay 0).
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

// Sends record k of `recs` to rank dest[k]; returns the records received (in the order of the sending ranks).
// On one rank (exchange_is_local) the records are returned as they are, without a copy.
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



std::uint64_t bits_of(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// The largest atom id: one a double holds exactly (LAMMPS data files, trajectories, readers that convert).
constexpr std::int64_t k_max_id = std::int64_t{1} << 53;

// The scalars of an MD checkpoint.
struct Scalars {
  std::int64_t step = 0, natoms = 0, since_build = 0, dangerous_builds = 0, moved_too_far = 0;
  double time = 0;
  comm::Box3 box;
  std::vector<double> masses;  // by type - 1
  double t_current = 0;                        // md.ensemble = "nvt", "npt": the Nose-Hoover chain
  std::vector<double> eta, eta_dot, eta_dotdot;
  // md.ensemble = "npt", "nph": the barostat (md.npt.*), the temperature after the last step, the summed virial of
  // the last force call and the box of the last neighbour build.
  std::array<double, 3> omega{}, omega_dot{}, fixedpoint{}, virial_diagonal{};
  double vol0 = 0, t_target = 0, baro_t_current = 0, virial = 0, mtk_term2 = 0;
  std::vector<double> etap, etap_dot, etap_dotdot;
  comm::Box3 build_box;
};

// Reads the scalars of a checkpoint and checks them, and what the deck fixes, against the configuration;
// returns the first problem, or "" when there is none. Throws InputError for a missing attribute.
std::string read_scalars(const io::SolverState& st, const MdConfig& cfg, Scalars& s) {
  if (!st.solver.empty() && st.solver != "md") return "checkpoint was written by solver '" + st.solver + "', not 'md'";
  s.step = st.require_integer("step");
  s.time = st.require_real("time");
  s.natoms = st.require_integer("md.natoms");
  s.since_build = st.require_integer("md.since_build");
  s.dangerous_builds = st.require_integer("md.dangerous_builds");
  s.moved_too_far = st.require_integer("md.moved_too_far");
  const std::int64_t ntypes = st.require_integer("md.ntypes");
  for (int d = 0; d < 3; ++d) {
    s.box.lo[d] = st.require_real(std::string("md.box.lo_") + char('x' + d));
    s.box.hi[d] = st.require_real(std::string("md.box.hi_") + char('x' + d));
  }
  if (s.step < 0) return "checkpoint step " + std::to_string(s.step) + " is negative";
  const double expected_time = checkpoint_time(cfg, st, s.step);
  if (bits_of(s.time) != bits_of(expected_time))
    return "checkpoint time " + exact(s.time) + " does not match step " + std::to_string(s.step) + " x md.dt = " +
           exact(cfg.dt) + " (" + exact(expected_time) + "); MD time is always step x md.dt (with [[run.stage]] that "
           "change md.dt: accumulated stage by stage)";
  if (s.natoms < 1) return "checkpoint md.natoms = " + std::to_string(s.natoms) + ": a checkpoint holds at least one atom";
  if (s.since_build < 0 || s.since_build > s.step || s.since_build > std::numeric_limits<int>::max())
    return "checkpoint md.since_build = " + std::to_string(s.since_build) + " is outside 0..step (" +
           std::to_string(s.step) + ")";
  if (s.dangerous_builds < 0)
    return "checkpoint md.dangerous_builds = " + std::to_string(s.dangerous_builds) + " is negative";
  if (s.moved_too_far != 0 && s.moved_too_far != 1)
    return "checkpoint md.moved_too_far = " + std::to_string(s.moved_too_far) + " is neither 0 nor 1";
  if (ntypes < 1 || ntypes > 1000000)
    return "checkpoint md.ntypes = " + std::to_string(ntypes) + " is outside 1..1000000";
  s.masses.resize(static_cast<std::size_t>(ntypes));
  for (std::int64_t t = 0; t < ntypes; ++t) {
    s.masses[t] = st.require_real("md.mass." + std::to_string(t + 1));
    if (!(std::isfinite(s.masses[t]) && s.masses[t] > 0))
      return "checkpoint mass of type " + std::to_string(t + 1) + " is " + exact(s.masses[t]) +
             "; masses must be finite and > 0";
  }
  for (int d = 0; d < 3; ++d)
    if (!(std::isfinite(s.box.lo[d]) && std::isfinite(s.box.hi[d]) && s.box.hi[d] > s.box.lo[d]))
      return std::string("checkpoint box in ") + char('x' + d) + " is [" + exact(s.box.lo[d]) + ", " +
             exact(s.box.hi[d]) + "): not a finite, non-empty interval";

  if (barostatted(cfg.ensemble)) {
    const std::int64_t pchain = st.require_integer("md.npt.pchain");
    if (pchain != cfg.pchain)
      return "checkpoint md.npt.pchain = " + std::to_string(pchain) + ", but the deck's md.pchain is " +
             std::to_string(cfg.pchain);
    std::vector<double> finite;
    for (int d = 0; d < 3; ++d) {
      const std::string n = std::to_string(d + 1);
      s.omega[d] = st.require_real("md.npt.omega." + n);
      s.omega_dot[d] = st.require_real("md.npt.omega_dot." + n);
      s.fixedpoint[d] = st.require_real("md.npt.fixedpoint." + n);
      s.build_box.lo[d] = st.require_real(std::string("md.npt.build_lo_") + char('x' + d));
      s.build_box.hi[d] = st.require_real(std::string("md.npt.build_hi_") + char('x' + d));
      finite.insert(finite.end(), {s.omega[d], s.omega_dot[d], s.fixedpoint[d]});
      if (!(std::isfinite(s.build_box.lo[d]) && std::isfinite(s.build_box.hi[d]) && s.build_box.hi[d] > s.build_box.lo[d]))
        return std::string("checkpoint box of the last neighbour build in ") + char('x' + d) + " is [" +
               exact(s.build_box.lo[d]) + ", " + exact(s.build_box.hi[d]) + "): not a finite, non-empty interval";
    }
    s.vol0 = st.require_real("md.npt.vol0");
    s.t_target = st.require_real("md.npt.t_target");
    s.baro_t_current = st.require_real("md.npt.t_current");
    s.virial = st.require_real("md.npt.virial");
    for (int d = 0; d < 3; ++d) {
      s.virial_diagonal[d] = st.require_real("md.npt.virial_diagonal." + std::to_string(d + 1));
      finite.push_back(s.virial_diagonal[d]);
    }
    s.mtk_term2 = st.require_real("md.npt.mtk_term2");
    finite.insert(finite.end(), {s.vol0, s.t_target, s.baro_t_current, s.virial, s.mtk_term2});
    for (std::int64_t k = 1; k <= pchain; ++k) {
      const std::string n = std::to_string(k);
      s.etap.push_back(st.require_real("md.npt.etap." + n));
      s.etap_dot.push_back(st.require_real("md.npt.etap_dot." + n));
      s.etap_dotdot.push_back(st.require_real("md.npt.etap_dotdot." + n));
      finite.insert(finite.end(), {s.etap.back(), s.etap_dot.back(), s.etap_dotdot.back()});
    }
    for (const double v : finite)
      if (!std::isfinite(v)) return "checkpoint holds a non-finite barostat value (md.npt.*)";
    if (!(s.vol0 > 0) || !(s.t_target > 0))
      return "checkpoint md.npt.vol0 = " + exact(s.vol0) + ", md.npt.t_target = " + exact(s.t_target) +
             ": both must be > 0";
  }
  if (thermostatted(cfg.ensemble)) {
    const std::int64_t tchain = st.require_integer("md.nvt.tchain");
    if (tchain != cfg.tchain)
      return "checkpoint md.nvt.tchain = " + std::to_string(tchain) + ", but the deck's md.tchain is " +
             std::to_string(cfg.tchain);
    s.t_current = st.require_real("md.nvt.t_current");
    for (const char* name : {"eta", "eta_dot", "eta_dotdot"}) {
      auto& values = name == std::string("eta") ? s.eta : name == std::string("eta_dot") ? s.eta_dot : s.eta_dotdot;
      for (std::int64_t k = 1; k <= tchain; ++k) values.push_back(st.require_real(std::string("md.nvt.") + name + "." + std::to_string(k)));
    }
    for (const double v : {s.t_current, s.eta.front(), s.eta_dot.front(), s.eta_dotdot.front()})
      if (!std::isfinite(v)) return "checkpoint holds a non-finite Nose-Hoover thermostat value (md.nvt.*)";
    for (std::size_t k = 0; k < s.eta.size(); ++k)
      if (!std::isfinite(s.eta[k]) || !std::isfinite(s.eta_dot[k]) || !std::isfinite(s.eta_dotdot[k]))
        return "checkpoint holds a non-finite Nose-Hoover thermostat value (md.nvt.*." + std::to_string(k + 1) + ")";
  }
  if (!cfg.from_lattice) return {};  // a data file's box, atoms and masses: the deck does not say
  // A lattice start: the deck fixes the box, the atom count and the one type of mass 1 (the constructor's
  // formulas, compared exactly).
  if (cfg.lattice_type != "fcc")
    return "md.lattice.type: '" + cfg.lattice_type + "' is not supported; allowed: \"fcc\"";
  const double a = std::cbrt(4.0 / cfg.density);
  // Constant pressure (the run's ensemble or any of its stages') moves the box away from the lattice's.
  bool box_moves = barostatted(cfg.ensemble);
  for (const auto& stage : cfg.stages) box_moves = box_moves || barostatted(stage.config.ensemble);
  for (int d = 0; d < 3 && !box_moves; ++d) {
    const double hi = cfg.cells[d] * a;
    if (bits_of(s.box.lo[d]) != bits_of(0.0) || bits_of(s.box.hi[d]) != bits_of(hi))
      return std::string("checkpoint box in ") + char('x' + d) + " is [" + exact(s.box.lo[d]) + ", " +
             exact(s.box.hi[d]) + "), but the deck's lattice (md.lattice.cells, md.lattice.density) gives [0, " +
             exact(hi) + ")";
  }
  if (static_cast<double>(s.natoms) != lattice_atoms(cfg))
    return "checkpoint md.natoms = " + std::to_string(s.natoms) + ", but the deck's lattice has " + exact(lattice_atoms(cfg)) +
           " atoms (4 x md.lattice.cells)";
  // The deck's types: md.types, else one type of mass 1.
  std::vector<double> deck_masses{1.0};
  if (!cfg.types.empty()) {
    deck_masses.clear();
    for (const auto& t : cfg.types) deck_masses.push_back(t.mass);
  }
  if (s.masses.size() != deck_masses.size())
    return "checkpoint has " + std::to_string(s.masses.size()) + " atom type(s), but the deck's lattice has " +
           std::to_string(deck_masses.size()) + " (md.types)";
  for (std::size_t t = 0; t < deck_masses.size(); ++t)
    if (bits_of(s.masses[t]) != bits_of(deck_masses[t]))
      return "checkpoint mass of type " + std::to_string(t + 1) + " is " + exact(s.masses[t]) +
             ", but the deck gives it mass " + exact(deck_masses[t]) + " (md.types, default 1)";
  return {};
}

// Checks the shape and this rank's block of each dataset; returns the first problem or "".
std::string check_datasets(const io::SolverState& st, const std::vector<io::StateArray>& layout, std::int64_t natoms,
                           int nranks, int rank, const io::StateArray* arr[]) {
  std::uint64_t first = 0, rows = 0;
  io::block_of(static_cast<std::uint64_t>(natoms), nranks, rank, first, rows);
  for (std::size_t k = 0; k < layout.size(); ++k) {
    const std::string& name = layout[k].name;
    arr[k] = st.find(name);
    const io::StateArray* a = arr[k];
    if (!a && layout[k].optional) continue;
    if (!a) return "checkpoint has no dataset " + name;
    if (a->global_rows != static_cast<std::uint64_t>(natoms))
      return "checkpoint dataset " + name + " has " + std::to_string(a->global_rows) + " rows, but md.natoms is " +
             std::to_string(natoms);
    if (a->is_integer != layout[k].is_integer || !layout[k].accepts_inner(a->inner))
      return "checkpoint dataset " + name + " does not have the type and row shape of " + name;
    if (a->first_row != first || a->rows != rows)
      return "checkpoint dataset " + name + " gives rank " + std::to_string(rank) + " rows [" +
             std::to_string(a->first_row) + ", " + std::to_string(a->first_row + a->rows) + "), not its block [" +
             std::to_string(first) + ", " + std::to_string(first + rows) + ")";
    const std::size_t values = a->is_integer ? a->i64.size() : a->f64.size();
    if (values != a->rows * a->row_size())
      return "checkpoint dataset " + name + " holds " + std::to_string(values) + " values for " +
             std::to_string(a->rows) + " rows";
  }
  return {};
}

// Checks every atom of this rank's block: ids >= 1 and strictly increasing (the rows are sorted by id),
// types, finite values, x_build inside the box as every neighbour build leaves it ([lo, hi), wrapped),
// x near x_build, image flags that fit an int. Returns the first problem or "".
std::string check_atoms(const std::vector<Column>& columns, const io::StateArray* arr[], const comm::Box3& box,
                        std::int64_t ntypes) {
  const io::StateArray& id = *arr[checkpoint_index(AtomFieldId::id)];
  const io::StateArray& types = *arr[checkpoint_index(AtomFieldId::type)];
  const io::StateArray& x = *arr[checkpoint_index(AtomFieldId::x)];
  const io::StateArray& x_build = *arr[checkpoint_index(AtomFieldId::x_build)];
  const double half_box = 0.5 * std::min({box.length(0), box.length(1), box.length(2)});
  for (std::uint64_t k = 0; k < id.rows; ++k) {
    const std::int64_t i = id.i64[k];
    const std::string row = std::to_string(id.first_row + k);
    const std::string atom = "checkpoint atom " + std::to_string(i) + " (row " + row + ")";
    if (i < 1 || i > k_max_id)
      return "checkpoint atom at row " + row + " has id " + std::to_string(i) + "; ids must be 1.." +
             std::to_string(k_max_id);
    if (k > 0 && i == id.i64[k - 1])
      return "checkpoint atom id " + std::to_string(i) + " appears twice (rows " + std::to_string(id.first_row + k - 1) +
             " and " + row + ")";
    if (k > 0 && i < id.i64[k - 1])
      return "checkpoint atom ids are not in increasing order: id " + std::to_string(i) + " at row " + row +
             " follows id " + std::to_string(id.i64[k - 1]);
    const std::int64_t type = types.i64[k];
    if (type < 1 || type > ntypes)
      return atom + " has type " + std::to_string(type) + " outside 1.." + std::to_string(ntypes);
    // Every field of the table: doubles finite, 32-bit integers within int.
    for (std::size_t n = 0; n < columns.size(); ++n) {
      const AtomField& f = *columns[n].field;
      if (!arr[n]) continue;
      const int width = columns[n].width;
      for (int d = 0; d < width; ++d) {
        const char* which = !f.is_list() && width == 3 ? (d == 0 ? "x" : d == 1 ? "y" : "z") : "";
        const std::uint64_t at = static_cast<std::uint64_t>(width) * k + d;
        if (f.elem == AtomElem::f64 && !std::isfinite(arr[n]->f64[at]))
          return atom + " has a non-finite " + f.name + " (" + (*which ? std::string(which) + " component " : "") +
                 exact(arr[n]->f64[at]) + ")";
        if (f.elem == AtomElem::i32 &&
            (arr[n]->i64[at] < std::numeric_limits<int>::min() || arr[n]->i64[at] > std::numeric_limits<int>::max()))
          return atom + " has " + f.noun + " " + std::to_string(arr[n]->i64[at]) + (*which ? " in " : "") + which +
                 " outside the range of int";
      }
    }
    double dist2 = 0;
    for (int d = 0; d < 3; ++d) {
      const double xb = x_build.f64[3 * k + d], xd = x.f64[3 * k + d];
      if (!(xb >= box.lo[d] && xb < box.hi[d]))
        return atom + " has x_build " + exact(xb) + " in " + char('x' + d) + " outside the box [" + exact(box.lo[d]) +
               ", " + exact(box.hi[d]) + ")";
      dist2 += (xd - xb) * (xd - xb);
    }
    if (!(std::sqrt(dist2) < half_box))
      return atom + " is " + significant(std::sqrt(dist2), 6) +
             " sigma from its position at the last neighbour build (x_build), more than half the box (" +
             significant(half_box, 6) + " sigma)";
  }
  return {};
}

// The ids where two ranks' blocks meet must increase too: every rank gathers each block's row count and
// first and last id (one small collective) and reaches the same verdict. After check_atoms() passed.
std::string check_block_order(const comm::Communicator& comm, const io::StateArray* ids) {
  const bool any_rows = ids->rows > 0;
  const std::int64_t mine[3] = {static_cast<std::int64_t>(ids->rows), any_rows ? ids->i64.front() : 0,
                                any_rows ? ids->i64.back() : 0};
  const std::vector<std::int64_t> all = comm.all_gather(std::vector<std::int64_t>{mine[0], mine[1], mine[2]});
  std::int64_t row = 0, last = 0;
  bool any = false;
  for (int r = 0; r < comm.size(); ++r) {
    const std::int64_t rows = all[3 * r], first_id = all[3 * r + 1], last_id = all[3 * r + 2];
    if (rows == 0) continue;
    if (any && first_id <= last)
      return std::string("checkpoint atom ids are not strictly increasing where two blocks meet: id ") +
             std::to_string(first_id) + " at row " + std::to_string(row) + " follows id " + std::to_string(last) +
             (first_id == last ? " (a duplicate)" : "");
    any = true;
    last = last_id;
    row += rows;
  }
  return {};
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
  const auto& hid = host.id;

  // Row of each atom in the id-sorted dataset: id - 1 when ids are 1..N (the usual case), else the
  // rank of the id among all ids (gathered).
  std::int64_t max_id = 0;
  for (int i = 0; i < nl; ++i) max_id = std::max<std::int64_t>(max_id, hid(i));
  max_id = m_comm.max(max_id);
  const bool dense = max_id == m_natoms;
  std::vector<std::int64_t> all_ids;
  if (!dense) {
    all_ids = m_comm.all_gather(std::vector<std::int64_t>(hid.data(), hid.data() + nl));
    std::sort(all_ids.begin(), all_ids.end());
  }
  auto row_of = [&](std::int64_t id) -> std::uint64_t {
    if (dense) return static_cast<std::uint64_t>(id - 1);
    return static_cast<std::uint64_t>(std::lower_bound(all_ids.begin(), all_ids.end(), id) - all_ids.begin());
  };

  // The records and every array below go into memory kept from the previous call (the records sent and
  // received, the arrays of `spare`): a checkpoint of a large system otherwise spends most of its snapshot's
  // time in the kernel, mapping and zeroing new pages. Every value is written before it is read. Each record
  // is written straight to its place among those sent to its rank.
  const auto N = static_cast<std::uint64_t>(m_natoms);
  m_state_dest.resize(nl);
  for (int i = 0; i < nl; ++i) m_state_dest[i] = block_owner(N, m_comm.size(), row_of(hid(i)));
  const PackPlan plan = pack_plan(m_comm.size(), m_state_dest, rec);
  const std::size_t values = static_cast<std::size_t>(nl) * rec;
  io::resize_for_overwrite(m_state_records, values, values / 8);  // an eighth to spare, as the block received
  std::vector<std::size_t> fill(plan.offset.begin(), plan.offset.end() - 1);
  for (int i = 0; i < nl; ++i) {
    double* r = &m_state_records[fill[m_state_dest[i]]];
    fill[m_state_dest[i]] += rec;
    pack_record(host, rl, i, r);
  }
  exchange_packed(m_comm, m_transport, m_state_records, plan, m_state_received);
  const std::vector<double>& got = exchange_is_local(m_comm, m_transport) ? m_state_records : m_state_received;

  io::SolverState st;
  st.solver = "md";
  // The arrays in the spare's own vector where it holds this layout (no allocation of its size either).
  std::vector<io::StateArray> layout = state_layout();
  bool same = spare.arrays.size() == layout.size();
  for (std::size_t k = 0; same && k < layout.size(); ++k)
    same = spare.arrays[k].name == layout[k].name && spare.arrays[k].inner == layout[k].inner &&
           spare.arrays[k].is_integer == layout[k].is_integer;
  if (same)
    st.arrays.swap(spare.arrays);
  else
    st.arrays.swap(layout);
  std::uint64_t first = 0, rows = 0;
  io::block_of(N, m_comm.size(), m_comm.rank(), first, rows);
  if (got.size() != rows * rec) throw std::logic_error("MdSolver::state: row block does not match the atoms received");
  for (std::size_t k = 0; k < st.arrays.size(); ++k) {
    io::StateArray& a = st.arrays[k];
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
  // The records in row order first (one index written per atom), then every array filled in row order:
  // after the spatial sorts of the neighbour builds the records come in a shuffled id order, and writing
  // each into every array at its row would cost a cache miss per value (the checkpoint snapshot's time).
  constexpr std::uint64_t k_none = ~std::uint64_t(0);
  std::vector<std::uint64_t>& record_of_row = m_state_record_of_row;
  record_of_row.assign(rows, k_none);
  for (std::uint64_t k = 0; k < rows; ++k) record_of_row[row_of(id_of_record(&got[k * rec])) - first] = k;
  const std::vector<double> zeros(static_cast<std::size_t>(rec), 0.0);  // a row no record reached (not while ids are unique)
  for (std::uint64_t row = 0; row < rows; ++row)
    record_to_row(columns, record_of_row[row] == k_none ? zeros.data() : &got[record_of_row[row] * rec], st.arrays, row);
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
    MtkBarostat& b = m_baro;
    st.integers["md.npt.pchain"] = b.chain();
    for (int d = 0; d < 3; ++d) {
      const std::string n = std::to_string(d + 1);
      st.reals["md.npt.omega." + n] = b.omega()[d];
      st.reals["md.npt.omega_dot." + n] = b.omega_dot()[d];
      st.reals["md.npt.fixedpoint." + n] = b.fixedpoint()[d];
      st.reals[std::string("md.npt.build_lo_") + char('x' + d)] = m_build_box.lo[d];
      st.reals[std::string("md.npt.build_hi_") + char('x' + d)] = m_build_box.hi[d];
    }
    st.reals["md.npt.shrink_stop"] = m_shrink_stop;
    if (m_pppm) {
      for (int d = 0; d < 3; ++d) st.integers[std::string("md.npt.pppm_mesh_") + char('x' + d)] = m_pppm->choice().mesh[d];
      st.reals["md.npt.pppm_g_ewald"] = m_pppm->choice().g_ewald;
    }
    st.reals["md.npt.vol0"] = b.vol0();
    st.reals["md.npt.t_target"] = b.t_target();
    st.reals["md.npt.t_current"] = m_t_current;
    st.reals["md.npt.virial"] = m_virial_sum;
    for (int d = 0; d < 3; ++d) st.reals["md.npt.virial_diagonal." + std::to_string(d + 1)] = m_virial_diagonal[d];
    st.reals["md.npt.mtk_term2"] = b.mtk_term2();
    for (int k = 0; k < b.chain(); ++k) {
      const std::string n = std::to_string(k + 1);
      st.reals["md.npt.etap." + n] = b.etap()[k];
      st.reals["md.npt.etap_dot." + n] = b.etap_dot()[k];
      st.reals["md.npt.etap_dotdot." + n] = b.etap_dotdot()[k];
    }
  }
  if (thermostatted(m_cfg.ensemble)) {  // the Nose-Hoover chain, so that a resume continues it bitwise
    st.integers["md.nvt.tchain"] = m_nhc.chain();
    st.reals["md.nvt.t_current"] = m_nhc.t_current();
    for (int k = 0; k < m_nhc.chain(); ++k) {
      const std::string n = std::to_string(k + 1);
      st.reals["md.nvt.eta." + n] = m_nhc.eta()[k];
      st.reals["md.nvt.eta_dot." + n] = m_nhc.eta_dot()[k];
      st.reals["md.nvt.eta_dotdot." + n] = m_nhc.eta_dotdot()[k];
    }
  }
  return st;
}

void MdSolver::restore(const io::SolverState& st) {
  // Every verdict below is agreed by all ranks before the next collective, and the atoms are checked
  // before they are exchanged: a damaged or crafted checkpoint ends in an InputError on every rank.
  // 1. Scalars (the same on every rank) and what the deck fixes.
  restore_stage(st);  // [[run.stage]]: the settings of the checkpoint's stage
  Scalars s;
  std::string bad;
  try {
    bad = read_scalars(st, m_cfg, s);
  } catch (const InputError& e) {
    bad = e.what();
  }
  m_comm.agree<InputError>(bad.empty(), bad);
  // The bonded styles: the deck's over the coefficients the checkpoint recorded; the ghosts reach as far as
  // they did (the same lists, so a resume on as many ranks is bitwise).
  try {
    m_bonded_setup = restore_bonded_setup(st);
    m_bonded.setup(m_bonded_setup);
    bad.clear();
  } catch (const InputError& e) {
    bad = e.what();
  }
  m_comm.agree<InputError>(bad.empty(), bad);
  const auto reach = st.reals.find("md.ghost_cutoff");
  // Constant pressure: the lists are rebuilt in the box of their build (from x_build), then the box is the current
  // one; as in the run that wrote the checkpoint.
  const bool npt = barostatted(m_cfg.ensemble);
  for (int d = 0; d < 3; ++d) {
    const auto g = st.integers.find(std::string("md.grid_") + char('x' + d));
    m_prefer_dims[d] = g == st.integers.end() || g->second < 1 || g->second > 1000000 ? 0 : static_cast<int>(g->second);
  }
  if (npt) {
    const auto ge = st.reals.find("md.npt.pppm_g_ewald");
    bool mesh_ok = ge != st.reals.end() && std::isfinite(ge->second) && ge->second > 0;
    for (int d = 0; d < 3 && mesh_ok; ++d) {
      const auto m = st.integers.find(std::string("md.npt.pppm_mesh_") + char('x' + d));
      mesh_ok = m != st.integers.end() && m->second >= 1 && m->second <= 1 << 20;
      if (mesh_ok) m_kspace_restore[d] = static_cast<double>(m->second);
    }
    if (mesh_ok) m_kspace_restore[3] = ge->second;
    else m_kspace_restore = {0, 0, 0, 0};
  }
  init_domain(npt ? s.build_box : s.box, s.masses, "the checkpoint", reach == st.reals.end() ? 0.0 : reach->second,
              static_cast<double>(s.natoms));
  if (npt) {
    // A checkpoint of a stop for a box too small for its rank grid: the grid here must give thicker sub-boxes.
    const auto shrink = st.reals.find("md.npt.shrink_stop");
    const double stopped_at = shrink == st.reals.end() ? 0.0 : shrink->second;
    double thinnest = s.box.length(0);
    for (int d = 0; d < 3; ++d) thinnest = std::min(thinnest, s.box.length(d) / m_grid->dims()[d]);
    const auto& g = m_grid->dims();
    m_comm.agree<InputError>(!(stopped_at > 0 && thinnest <= stopped_at * (1 + 1e-9)),
                             "checkpoint: the run stopped because its box got too small for its rank grid (thinnest "
                             "sub-box " + significant(stopped_at, 6) + ", ghost reach " + significant(m_ghost_cutoff, 6) +
                             "); the grid of " + std::to_string(m_comm.size()) + " ranks here (" + std::to_string(g[0]) +
                             " x " + std::to_string(g[1]) + " x " + std::to_string(g[2]) +
                             ") is no thicker: resume on fewer ranks");
  }
  m_natoms = s.natoms;

  // 2. The lengths of the list fields (the checkpoint's: 0 where it has none), this rank's block of every
  //    dataset, then its atoms, then the ids where blocks meet.
  for (const auto& f : k_atom_fields) {
    if (!f.is_list() || !f.has(k_checkpointed)) continue;
    const io::StateArray* a = st.find(std::string("/md/") + f.name);
    const std::uint64_t width = a && a->inner.size() == 1 ? a->inner[0] : 0;
    m_comm.agree<InputError>(!a || (a->inner.size() == 1 && width <= 1000000),
                             std::string("checkpoint dataset /md/") + f.name + " does not have rows of one list each (the " +
                                 f.noun + " of every atom, at most 1000000 values)");
    m_atoms.set_width(static_cast<AtomFieldId>(index_of(f)), static_cast<int>(width));
  }
  m_lists_from_checkpoint = false;
  const RecordLayout rl = m_atoms.record_layout();
  const int rec = rl.total;
  const auto layout = state_layout();
  const std::vector<Column> columns = checkpoint_columns(rl);
  const io::StateArray* arr[k_natom_fields] = {};
  bad = check_datasets(st, layout, s.natoms, m_comm.size(), m_comm.rank(), arr);
  if (bad.empty()) bad = check_atoms(columns, arr, m_box, static_cast<std::int64_t>(s.masses.size()));
  m_comm.agree<InputError>(bad.empty(), bad);
  bad = check_block_order(m_comm, arr[checkpoint_index(AtomFieldId::id)]);
  m_comm.agree<InputError>(bad.empty(), bad);

  // 3. Send every atom to the rank that owned it at the last neighbour build (by x_build).
  std::vector<double> got;
  {
    const std::uint64_t rows = arr[0]->rows;
    std::vector<double> recs(rows * rec);
    std::vector<int> dest(rows);
    for (std::uint64_t k = 0; k < rows; ++k) {
      double* r = &recs[k * rec];
      row_to_record(columns, arr, k, r);
      dest[k] = m_grid->owner_of(&r[record_slot(AtomFieldId::x_build)]);
    }
    got = exchange_records(m_comm, m_transport, std::move(recs), dest, rec);
  }
  const std::size_t received = got.size() / rec;
  m_comm.agree<InputError>(static_cast<std::int64_t>(received) <= k_max_atoms_per_rank,
                           "rank " + std::to_string(m_comm.rank()) + " would own " + std::to_string(received) +
                               " atoms of the checkpoint, more than the " + std::to_string(k_max_atoms_per_rank) +
                               " one rank can hold; use more ranks");
  const int nl = static_cast<int>(received);
  m_atoms.reserve(nl);
  m_atoms.nlocal = nl;
  m_atoms.nghost = 0;
  // Every field that moves with its atom (the table: id, x, v, image, type, ...), but x: the positions of the
  // last build, from which the rebuild makes the same lists in the same order.
  HostAtoms host = host_atoms(m_atoms, k_migrates, false);
  std::unordered_map<std::int64_t, int> rec_of;
  rec_of.reserve(nl);
  for (int i = 0; i < nl; ++i) {
    const double* r = &got[static_cast<std::size_t>(i) * rec];
    unpack_record(r, rl, host, i, k_migrates);
    for (int d = 0; d < 3; ++d) host.x(i, d) = r[record_slot(AtomFieldId::x_build) + d];
    rec_of[host.id(i)] = i;
  }
  copy_to_atoms(host, m_atoms, k_migrates);
  setup_kspace();  // from the restored charges, before any force

  m_step = s.step;
  m_time = clock_time();  // equal to the checkpoint's, checked above
  m_dangerous_builds = s.dangerous_builds;
  m_moved_too_far = false;
  rebuild();
  if (m_atoms.nlocal != nl) throw std::logic_error("MdSolver::restore: atoms moved during the rebuild");
  // Now the current positions and forces, by atom id.
  auto cx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.x);
  auto cid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_atoms.id);
  auto cf = Kokkos::create_mirror_view(m_atoms.f);
  for (int i = 0; i < nl; ++i) {
    const double* r = &got[static_cast<std::size_t>(rec_of.at(cid(i))) * rec];
    for (int d = 0; d < 3; ++d) {
      cx(i, d) = r[record_slot(AtomFieldId::x) + d];
      cf(i, d) = r[record_slot(AtomFieldId::f) + d];
    }
  }
  Kokkos::deep_copy(m_atoms.x, cx);
  Kokkos::deep_copy(m_atoms.f, cf);
  if (npt) set_box(s.box);
  m_halo->update_positions(m_atoms);
  if (npt) {
    m_baro = MtkBarostat(barostat_settings());
    m_baro.omega() = s.omega;
    m_baro.omega_dot() = s.omega_dot;
    m_baro.fixedpoint() = s.fixedpoint;
    m_baro.vol0() = s.vol0;
    m_baro.mtk_term2() = s.mtk_term2;
    m_baro.etap() = s.etap;
    m_baro.etap_dot() = s.etap_dot;
    m_baro.etap_dot().push_back(0.0);  // the chain's always-zero last member
    m_baro.etap_dotdot() = s.etap_dotdot;
    m_baro.restore(s.t_target);
    m_t_current = s.baro_t_current;
    m_virial_sum = s.virial;
    m_virial_diagonal = s.virial_diagonal;
  }
  if (thermostatted(m_cfg.ensemble)) {
    m_nhc = NoseHooverChain(m_cfg.tchain, m_cfg.temperature, m_cfg.damp, m_cfg.dt, m_cfg.unit().boltz);
    for (int k = 0; k < m_cfg.tchain; ++k) {
      m_nhc.eta()[k] = s.eta[k];
      m_nhc.eta_dot()[k] = s.eta_dot[k];
      m_nhc.eta_dotdot()[k] = s.eta_dotdot[k];
    }
    m_nhc.restore(s.t_current, 3.0 * static_cast<double>(m_natoms) - 3.0);
  }
  m_since_build = static_cast<int>(s.since_build);
  m_moved_too_far = s.moved_too_far != 0;
  m_tally_valid = false;
  m_setup_done = true;
  m_restored = true;
  restore_minimizer(st);
}

}  // namespace spotrun::md
