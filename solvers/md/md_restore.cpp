// Restore of the MD solver from a checkpoint on any rank count: the checks of its scalars, datasets and
// atoms, and the atoms sent to the ranks that own them (the state written: md_state.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "md_export.hpp"
#include "md_memory.hpp"
#include "md_impl.hpp"
#include "md_solver.hpp"
#include "md_stage.hpp"
#include "md_state_detail.hpp"

namespace spotrun::md {
using namespace state_detail;
namespace {

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

// The step, time, counters, masses and box of a checkpoint, checked; returns the first problem, or "".
std::string read_counts_and_box(const io::SolverState& st, const MdConfig& cfg, Scalars& s) {
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
  return {};
}

// md.ensemble = "npt", "nph": the barostat (md.npt.*), checked; returns the first problem, or "".
std::string read_barostat(const io::SolverState& st, const MdConfig& cfg, Scalars& s) {
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
  return {};
}

// md.ensemble = "nvt", "npt": the Nose-Hoover chain (md.nvt.*), checked; returns the first problem, or "".
std::string read_thermostat(const io::SolverState& st, const MdConfig& cfg, Scalars& s) {
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
  return {};
}

// A lattice start: the deck fixes the box, the atom count and the one type of mass 1 (the constructor's
// formulas, compared exactly). Returns the first difference, or "".
std::string check_lattice(const MdConfig& cfg, const Scalars& s) {
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

// Reads the scalars of a checkpoint and checks them, and what the deck fixes, against the configuration;
// returns the first problem, or "" when there is none. Throws InputError for a missing attribute.
std::string read_scalars(const io::SolverState& st, const MdConfig& cfg, Scalars& s) {
  std::string bad = read_counts_and_box(st, cfg, s);
  if (bad.empty() && barostatted(cfg.ensemble)) bad = read_barostat(st, cfg, s);
  if (bad.empty() && thermostatted(cfg.ensemble)) bad = read_thermostat(st, cfg, s);
  if (bad.empty() && cfg.from_lattice) bad = check_lattice(cfg, s);  // a data file's box, atoms and masses: the deck does not say
  return bad;
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

// The scalars of the checkpoint (the same on every rank), agreed by all ranks: an InputError on every rank
// for a problem or a missing attribute.
Scalars agreed_scalars(const io::SolverState& st, const MdConfig& cfg, const comm::Communicator& comm) {
  Scalars s;
  std::string bad;
  try {
    bad = read_scalars(st, cfg, s);
  } catch (const InputError& e) {
    bad = e.what();
  }
  comm.agree<InputError>(bad.empty(), bad);
  return s;
}

// The rank grid of the checkpoint's run (0: none, or not one a grid can have).
std::array<int, 3> checkpoint_grid(const io::SolverState& st) {
  std::array<int, 3> dims{0, 0, 0};
  for (int d = 0; d < 3; ++d) {
    const auto g = st.integers.find(std::string("md.grid_") + char('x' + d));
    dims[d] = g == st.integers.end() || g->second < 1 || g->second > 1000000 ? 0 : static_cast<int>(g->second);
  }
  return dims;
}

// The PPPM mesh and g_ewald of the checkpoint's run (npt, nph), or all 0 where it has none that can be used.
std::array<double, 4> checkpoint_pppm(const io::SolverState& st) {
  std::array<double, 4> choice{0, 0, 0, 0};
  const auto ge = st.reals.find("md.npt.pppm_g_ewald");
  bool mesh_ok = ge != st.reals.end() && std::isfinite(ge->second) && ge->second > 0;
  for (int d = 0; d < 3 && mesh_ok; ++d) {
    const auto m = st.integers.find(std::string("md.npt.pppm_mesh_") + char('x' + d));
    mesh_ok = m != st.integers.end() && m->second >= 1 && m->second <= 1 << 20;
    if (mesh_ok) choice[d] = static_cast<double>(m->second);
  }
  if (mesh_ok) choice[3] = ge->second;
  else choice = {0, 0, 0, 0};
  return choice;
}

// A checkpoint of a stop for a box too small for its rank grid: the grid here must give thicker sub-boxes.
void check_shrink_stop(const io::SolverState& st, const comm::Communicator& comm, const comm::ProcessGrid& grid,
                       const comm::Box3& box, double ghost_cutoff) {
  const auto shrink = st.reals.find("md.npt.shrink_stop");
  const double stopped_at = shrink == st.reals.end() ? 0.0 : shrink->second;
  double thinnest = box.length(0);
  for (int d = 0; d < 3; ++d) thinnest = std::min(thinnest, box.length(d) / grid.dims()[d]);
  const auto& g = grid.dims();
  comm.agree<InputError>(!(stopped_at > 0 && thinnest <= stopped_at * (1 + 1e-9)),
                         "checkpoint: the run stopped because its box got too small for its rank grid (thinnest "
                         "sub-box " + significant(stopped_at, 6) + ", ghost reach " + significant(ghost_cutoff, 6) +
                         "); the grid of " + std::to_string(comm.size()) + " ranks here (" + std::to_string(g[0]) +
                         " x " + std::to_string(g[1]) + " x " + std::to_string(g[2]) +
                         ") is no thicker: resume on fewer ranks");
}

// The lengths of the list fields: the checkpoint's (0 where it has none).
void read_list_widths(const io::SolverState& st, const comm::Communicator& comm, AtomStore& atoms) {
  for (const auto& f : k_atom_fields) {
    if (!f.is_list() || !f.has(k_checkpointed)) continue;
    const io::StateArray* a = st.find(std::string("/md/") + f.name);
    const std::uint64_t width = a && a->inner.size() == 1 ? a->inner[0] : 0;
    comm.agree<InputError>(!a || (a->inner.size() == 1 && width <= 1000000),
                           std::string("checkpoint dataset /md/") + f.name + " does not have rows of one list each (the " +
                               f.noun + " of every atom, at most 1000000 values)");
    atoms.set_width(static_cast<AtomFieldId>(index_of(f)), static_cast<int>(width));
  }
}

// This rank's block of every dataset (into arr, in the order of layout), then its atoms, then the ids where
// blocks meet, each verdict agreed by all ranks.
void check_checkpoint_atoms(const io::SolverState& st, const comm::Communicator& comm,
                            const std::vector<io::StateArray>& layout, const std::vector<Column>& columns,
                            std::int64_t natoms, const comm::Box3& box, std::int64_t ntypes,
                            const io::StateArray* arr[]) {
  std::string bad = check_datasets(st, layout, natoms, comm.size(), comm.rank(), arr);
  if (bad.empty()) bad = check_atoms(columns, arr, box, ntypes);
  comm.agree<InputError>(bad.empty(), bad);
  bad = check_block_order(comm, arr[checkpoint_index(AtomFieldId::id)]);
  comm.agree<InputError>(bad.empty(), bad);
}

// Sends every atom of this rank's block to the rank that owned it at the last neighbour build (by x_build);
// returns the records received, refused on every rank where one would own more atoms than it can hold.
std::vector<double> send_to_build_owners(const comm::Communicator& comm, comm::Transport& transport,
                                         const comm::ProcessGrid& grid, const std::vector<Column>& columns,
                                         const io::StateArray* const arr[], int rec) {
  std::vector<double> got;
  {
    const std::uint64_t rows = arr[0]->rows;
    std::vector<double> recs(rows * rec);
    std::vector<int> dest(rows);
    for (std::uint64_t k = 0; k < rows; ++k) {
      double* r = &recs[k * rec];
      row_to_record(columns, arr, k, r);
      dest[k] = grid.owner_of(&r[record_slot(AtomFieldId::x_build)]);
    }
    got = exchange_records(comm, transport, std::move(recs), dest, rec);
  }
  const std::size_t received = got.size() / rec;
  comm.agree<InputError>(static_cast<std::int64_t>(received) <= k_max_atoms_per_rank,
                         "rank " + std::to_string(comm.rank()) + " would own " + std::to_string(received) +
                             " atoms of the checkpoint, more than the " + std::to_string(k_max_atoms_per_rank) +
                             " one rank can hold; use more ranks");
  return got;
}

// The nl atoms received (got): every field that moves with its atom (the table: id, x, v, image, type, ...),
// but x: the positions of the last build, from which the rebuild makes the same lists in the same order.
// Returns the record of each atom id.
std::unordered_map<std::int64_t, int> unpack_received(const std::vector<double>& got, const RecordLayout& rl,
                                                      AtomStore& atoms, int nl) {
  const int rec = rl.total;
  HostAtoms host = host_atoms(atoms, k_migrates, false);
  std::unordered_map<std::int64_t, int> rec_of;
  rec_of.reserve(nl);
  for (int i = 0; i < nl; ++i) {
    const double* r = &got[static_cast<std::size_t>(i) * rec];
    unpack_record(r, rl, host, i, k_migrates);
    for (int d = 0; d < 3; ++d) host.x(i, d) = r[record_slot(AtomFieldId::x_build) + d];
    rec_of[host.id(i)] = i;
  }
  copy_to_atoms(host, atoms, k_migrates);
  return rec_of;
}

// After the rebuild: the current positions and forces of the nl local atoms, by atom id.
void restore_positions_and_forces(AtomStore& atoms, const std::vector<double>& got,
                                  const std::unordered_map<std::int64_t, int>& rec_of, int rec, int nl) {
  auto cx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
  auto cid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.id);
  auto cf = Kokkos::create_mirror_view(atoms.f);
  for (int i = 0; i < nl; ++i) {
    const double* r = &got[static_cast<std::size_t>(rec_of.at(cid(i))) * rec];
    for (int d = 0; d < 3; ++d) {
      cx(i, d) = r[record_slot(AtomFieldId::x) + d];
      cf(i, d) = r[record_slot(AtomFieldId::f) + d];
    }
  }
  Kokkos::deep_copy(atoms.x, cx);
  Kokkos::deep_copy(atoms.f, cf);
}

// The barostat's own state from the checkpoint's (b: made from the deck's settings).
void restore_barostat(MtkBarostat& b, const Scalars& s) {
  b.omega() = s.omega;
  b.omega_dot() = s.omega_dot;
  b.fixedpoint() = s.fixedpoint;
  b.vol0() = s.vol0;
  b.mtk_term2() = s.mtk_term2;
  b.etap() = s.etap;
  b.etap_dot() = s.etap_dot;
  b.etap_dot().push_back(0.0);  // the chain's always-zero last member
  b.etap_dotdot() = s.etap_dotdot;
  b.restore(s.t_target);
}

// The Nose-Hoover chain of the deck's settings with the checkpoint's state.
NoseHooverChain restored_thermostat(const MdConfig& cfg, const Scalars& s, std::int64_t natoms) {
  NoseHooverChain nhc(cfg.tchain, cfg.temperature, cfg.damp, cfg.dt, cfg.unit().boltz);
  for (int k = 0; k < cfg.tchain; ++k) {
    nhc.eta()[k] = s.eta[k];
    nhc.eta_dot()[k] = s.eta_dot[k];
    nhc.eta_dotdot()[k] = s.eta_dotdot[k];
  }
  nhc.restore(s.t_current, 3.0 * static_cast<double>(natoms) - 3.0);
  return nhc;
}

}  // namespace

void MdSolver::restore(const io::SolverState& st) {
  // Every verdict below is agreed by all ranks before the next collective, and the atoms are checked
  // before they are exchanged: a damaged or crafted checkpoint ends in an InputError on every rank.
  // 1. Scalars (the same on every rank) and what the deck fixes.
  restore_stage(st);  // [[run.stage]]: the settings of the checkpoint's stage
  const Scalars s = agreed_scalars(st, m_cfg, m_comm);
  // The bonded styles: the deck's over the coefficients the checkpoint recorded; the ghosts reach as far as
  // they did (the same lists, so a resume on as many ranks is bitwise).
  std::string bad;
  try {
    m_bonded_setup = restore_bonded_setup(st);
    m_bonded.setup(m_bonded_setup);
  } catch (const InputError& e) {
    bad = e.what();
  }
  m_comm.agree<InputError>(bad.empty(), bad);
  const auto reach = st.reals.find("md.ghost_cutoff");
  // Constant pressure: the lists are rebuilt in the box of their build (from x_build), then the box is the current
  // one; as in the run that wrote the checkpoint.
  const bool npt = barostatted(m_cfg.ensemble);
  m_prefer_dims = checkpoint_grid(st);
  if (npt) m_kspace_restore = checkpoint_pppm(st);
  init_domain(npt ? s.build_box : s.box, s.masses, "the checkpoint", reach == st.reals.end() ? 0.0 : reach->second,
              static_cast<double>(s.natoms));
  if (npt) check_shrink_stop(st, m_comm, *m_grid, s.box, m_ghost_cutoff);
  m_natoms = s.natoms;

  // 2. The lengths of the list fields (the checkpoint's: 0 where it has none), this rank's block of every
  //    dataset, then its atoms, then the ids where blocks meet.
  read_list_widths(st, m_comm, m_atoms);
  m_lists_from_checkpoint = false;
  const RecordLayout rl = m_atoms.record_layout();
  const int rec = rl.total;
  const std::vector<Column> columns = checkpoint_columns(rl);
  const io::StateArray* arr[k_natom_fields] = {};
  check_checkpoint_atoms(st, m_comm, state_layout(), columns, s.natoms, m_box, static_cast<std::int64_t>(s.masses.size()),
                         arr);

  // 3. Send every atom to the rank that owned it at the last neighbour build (by x_build).
  const std::vector<double> got = send_to_build_owners(m_comm, m_transport, *m_grid, columns, arr, rec);
  const int nl = static_cast<int>(got.size() / rec);
  m_atoms.reserve(nl);
  m_atoms.nlocal = nl;
  m_atoms.nghost = 0;
  const std::unordered_map<std::int64_t, int> rec_of = unpack_received(got, rl, m_atoms, nl);
  setup_kspace();  // from the restored charges, before any force

  m_step = s.step;
  m_time = clock_time();  // equal to the checkpoint's, checked above
  m_dangerous_builds = s.dangerous_builds;
  m_moved_too_far = false;
  rebuild();
  if (m_atoms.nlocal != nl) throw std::logic_error("MdSolver::restore: atoms moved during the rebuild");
  restore_positions_and_forces(m_atoms, got, rec_of, rec, nl);
  if (npt) set_box(s.box);
  m_halo->update_positions(m_atoms);
  if (npt) {
    m_baro = MtkBarostat(barostat_settings());
    restore_barostat(m_baro, s);
    m_t_current = s.baro_t_current;
    m_virial_sum = s.virial;
    m_virial_diagonal = s.virial_diagonal;
  }
  if (thermostatted(m_cfg.ensemble)) m_nhc = restored_thermostat(m_cfg, s, m_natoms);
  m_since_build = static_cast<int>(s.since_build);
  m_moved_too_far = s.moved_too_far != 0;
  m_tally_valid = false;
  m_setup_done = true;
  m_restored = true;
  restore_minimizer(st);
}

}  // namespace spotrun::md
