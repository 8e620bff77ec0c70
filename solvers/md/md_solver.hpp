#pragma once
// Lennard-Jones molecular dynamics over a 3D spatial decomposition (LAMMPS `units lj` conventions).
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "atom_sort.hpp"
#include "atoms.hpp"
#include "bonded/bonded_coeffs.hpp"
#include "bonded/bonded_terms.hpp"
#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"
#include "comm/transport.hpp"
#include "force.hpp"
#include "halo.hpp"
#include "io/h5md_trajectory.hpp"
#include "kspace/ewald.hpp"
#include "kspace/pppm.hpp"
#include "io/lammps_data.hpp"
#include "io/lammps_dump.hpp"
#include "md_config.hpp"
#include "minimize/minimizer.hpp"
#include "neighbor.hpp"
#include "barostat.hpp"
#include "nose_hoover.hpp"
#include "pair.hpp"
#include "solvers/solver.hpp"

namespace spotrun::md {

struct Thermo {
  double temp, pe, ke, etotal, press;  // energies per atom in lj units, totals in real and metal (units.hpp)
  double evdwl, ebond, eangle, edihed;  // the parts of pe (evdwl: the pair style's, special pairs scaled)
  double ecoul;                         // the Coulomb part of a charged pair style (its real-space part)
  double elong;                         // the k-space part of a long-range Coulomb sum ([md.kspace])
};

// The box and type masses of a fresh run, from the data file or the lattice of the configuration: InputError
// for masses of md.types that the data file's Masses contradict, or a lattice type that is not known.
struct FreshDomain {
  comm::Box3 box;
  std::vector<double> masses;  // by type, type 1 first
  std::string source;          // where the types come from, for messages ("the data file")
  double bonded_reach = 0;     // how far the ghosts must reach for the bonded interactions (0: none)
  double natoms = 0;           // the atoms of the system (the data file's, or the lattice's)
};
FreshDomain fresh_domain(const MdConfig& cfg, const io::LammpsData* data);

// The bonded types and interactions of each kind (bond, angle, dihedral) of a system.
struct BondedCounts {
  std::array<int, 3> ntypes{0, 0, 0};
  std::array<std::size_t, 3> count{0, 0, 0};
};
BondedCounts bonded_counts(const io::LammpsData& d);
// The bonded styles and coefficients of a run: the deck's over the rows of `rows` (the data file's or the
// checkpoint's Coeffs of bonds, angles, dihedrals; nullptr: none), named `source` in messages. InputError
// (resolve_bonded_coeffs()).
bonded::BondedSetup resolve_bonded(const MdConfig& cfg, const BondedCounts& counts, const io::LammpsCoeffs* const rows[3],
                                   const std::string& source);
// [md.kspace]: the solver's options from the configuration, and the InputError of a long-range pair style
// without a solver or a solver without one (md_kspace.cpp).
kspace::KspaceOptions kspace_options(const MdConfig& cfg);
void check_kspace(const MdConfig& cfg, const PairStyleInfo& style);
// InputError for what the data file holds that the MD does not simulate (impropers, charges).
void check_topology(const io::LammpsData& d, const MdConfig& cfg);
// How far the ghosts must reach for the bonded interactions of d, whose longest (minimum image) is `span`
// (> 0): 1.2 x span + md.skin (molecules stretch as they move); where FENE bonds are the only bonded
// interactions, no further than their largest R0 (nor less than span): a FENE bond is always shorter (a
// longer one stops the run, LAMMPS's "bad FENE bond"), so at every rebuild its partner lies within R0 of the
// owner's sub-box. InputError as resolve_bonded().
double bonded_ghost_reach(const MdConfig& cfg, const io::LammpsData& d, double span);

// The domain of a run on nranks: the pair coefficients of the types (InputError: a [[md.pair.coeff]] names an
// unknown type or a pair twice, md.types counts other types than `source`; the pair style is not registered
// or refuses them, check_pair_style()), the rank grid (InputError: the box
// is thinner than cutoff + skin, or no grid of nranks gives sub-boxes that thick) and the neighbour bins a
// sub-box needs (InputError: more than an int indexes). The solver's set-up (fresh or restored) and
// check_fresh_start() decide with it.
struct DomainPlan {
  PairCoeffs coeffs;
  std::array<int, 3> dims{};
  double cutneigh = 0;  // the largest pair cutoff + md.skin
  double cutghost = 0;  // how far the ghosts reach: cutneigh, or further for the bonded interactions
};
// bonded_reach: FreshDomain::bonded_reach, or the checkpoint's ghost reach.
DomainPlan plan_domain(const MdConfig& cfg, const comm::Box3& box, const std::vector<double>& masses,
                       const std::string& source, int nranks, double bonded_reach = 0);

// What the constructor of a fresh run checks before it allocates the atoms, on nranks ranks: fresh_domain()
// and plan_domain(). `spotrun validate` (and run, before it makes the solver) call it. InputError.
void check_fresh_start(const MdConfig& cfg, const io::LammpsData* data, int nranks);

// The thermo keywords md.thermo_style may list (LAMMPS thermo_style custom): step time temp pe ke etotal press
// vol density ecouple econserve evdwl ebond eangle edihed ecoul elong.
std::vector<std::string> thermo_keywords();

class MdSolver final : public SolverBase {
 public:
  // data: atoms read from a LAMMPS data file (same on every rank; each keeps the ones in its sub-box),
  // or nullptr to build the lattice of the configuration. restoring: make no atoms; restore() follows.
  MdSolver(const MdConfig& config, const comm::Communicator& comm, comm::Transport& transport,
           const io::LammpsData* data, bool restoring = false);

  // name() "md", work_unit() "atom-steps" (SolverBase).
  SPOTRUN_SOLVER_OVERRIDES;
  // state() in the arrays of `spare` and in buffers this solver keeps between calls (md_state.cpp).
  io::SolverState state_reusing(io::SolverState&& spare) override;
  double work_per_step() const override { return static_cast<double>(m_natoms); }
  // [md.trajectory], [md.dump]: frames of OUTDIR/trajectory.h5md and OUTDIR/dump.lammpstrj at the steps they
  // ask for, and OUTDIR/topology.data at the start (md_trajectory.cpp).
  void write_outputs(const std::string& outdir, std::int64_t step) override;
  bool writes_outputs_at(std::int64_t step) const override;
  // atoms and types, box, ensemble and its targets (md_describe.cpp).
  std::vector<std::string> describe() const override;
  // The energies of the current positions when the last step ran without them (rebuilds the lists).
  void prepare_thermo() override;
  // [md.minimize] (md_minimize.cpp): the minimisation's steps come first (Solver::preamble_end()).
  std::int64_t preamble_end() const override;
  // md.ensemble = "npt" / "nph" (md_npt.cpp): a stop (with a checkpoint) before the box shrinks below what the
  // rank grid allows.
  std::string stop_request() const override;
  // The minimiser of [md.minimize] (nullptr without), for tests and diagnostics.
  const Minimizer* minimizer() const { return m_min.get(); }
  // [[run.stage]] (md_stage.cpp): the index of the stage of the steps now run (0 without stages).
  std::size_t stage() const { return m_stage; }

  // For tests and diagnostics.
  Thermo compute_thermo();
  std::int64_t natoms() const { return m_natoms; }
  const AtomStore& atoms() const { return m_atoms; }
  AtomStore& atoms() { return m_atoms; }
  const comm::ProcessGrid& grid() const { return *m_grid; }
  // The ghost plan of the current atoms (benchmarks send forces back through it, Halo::reverse_forces).
  Halo& halo() { return *m_halo; }
  const Halo& halo() const { return *m_halo; }
  long long dangerous_builds() const { return m_dangerous_builds; }
  long long neighbor_builds() const { return m_neighbor.builds(); }
  // Whether the forces on ghosts go back to their owners every step (NeighborList::newton()).
  bool newton() const { return m_neighbor.newton(); }
  // Rows of this rank's neighbour list computed while the halo moves (md.halo_overlap): the interior rows
  // done while the ghost positions arrive, and those done while the forces on ghosts go back.
  std::array<int, 2> overlap_rows() const { return {m_neighbor.interior_rows(), m_neighbor.deferred_rows()}; }
  // Whether this solver uses a full neighbour list (MdConfig::neighbor_list; by default on a GPU).
  bool full_neighbor_list() const;
  // LAMMPS `velocity create` keyed by atom id (public: CUDA lambdas may not live in private members).
  void create_velocities(double temperature, std::uint64_t seed);
  // Reverses every velocity (time-reversal tests).
  void reverse_velocities();
  // Recomputes forces (and energy/virial) for the current positions, rebuilding lists.
  void recompute_forces();
  // Nose-Hoover NVT (md_nvt.cpp; public: CUDA lambdas may not live in private members): the temperature
  // as LAMMPS compute temp (collective), every velocity times factor.
  double current_temperature();
  // The temperature of the ranks' summed m v^2 (LAMMPS compute temp: times mvv2e / (dof boltz)).
  double temperature_of(double mv2) const;
  // Sum of m v^2 over this rank's owned atoms (for the thermo's kinetic energy and the thermostat's
  // temperature; public for the same reason).
  double local_mv2() const;
  // The mass of every atom (collective; summed once), for the thermo's density (public for the same reason).
  double total_mass();
  void scale_velocities(double factor);
  // Constant pressure (md_npt.cpp; public for the same reason): the positions and velocities of a barostat's
  // first half-step (velocity scaling by fac, half-kick, the box from box0 over box1 to box2 around the
  // drift); this rank's virial of the last force call; the scalar pressure at temperature t with the ranks'
  // summed virial; the barostat.
  void npt_move_atoms(const std::array<double, 3>& fac, const comm::Box3& box0, const comm::Box3& box1,
                      const comm::Box3& box2);
  // The barostat's second half-step on the velocities: the half-kick, then every component scaled twice by fac.
  void npt_kick_and_scale(const std::array<double, 3>& fac);
  double local_virial() const;
  // md.barostat = "aniso": this rank's diagonal of the virial tensor of the last force call (under Newton from
  // its x . f pass, otherwise a pass over the pair list of its own), and the ranks' kinetic tensor diagonal
  // (mvv2e sum m v_a^2).
  std::array<double, 3> local_virial_diagonal() const;
  std::array<double, 3> kinetic_diagonal();
  // This rank's sums of m v_a^2 (a = x, y, z) and of m v^2 (as local_mv2()) in one pass.
  std::array<double, 4> local_kinetic_sums() const;
  // The pressure the barostat sees: iso, the scalar pressure at temperature t three times; aniso, the diagonal
  // of the pressure tensor with the kinetic diagonal ke. With the ranks' summed virial of the last force call.
  std::array<double, 3> pressure_now(double t, const std::array<double, 3>& ke) const;
  const MtkBarostat& barostat() const { return m_baro; }
  const comm::Box3& box() const { return m_box; }
  const NoseHooverChain& thermostat() const { return m_nhc; }
  // The bonded styles of the run and its bonded terms (the gather lists of the last neighbour build).
  const bonded::BondedSetup& bonded_setup() const { return m_bonded_setup; }
  const bonded::BondedTerms& bonded_terms() const { return m_bonded; }
  // How far the ghost atoms reach (cutoff + skin, or further for the bonded interactions).
  double ghost_cutoff() const { return m_ghost_cutoff; }

 private:
  // source: where the types come from, for messages ("the data file F", "checkpoint F").
  // natoms: the system's atoms (the density that shapes the neighbour bins).
  void init_domain(const comm::Box3& box, const std::vector<double>& masses, const std::string& source,
                   double bonded_reach, double natoms);
  void create_lattice();
  void load_data(const io::LammpsData& data);
  // Molecules (md_bonded.cpp): the list fields of the owned atoms (mine: their places in data), the gather
  // lists and special exclusions after a neighbour build, the bonded forces of a step, the stop on a broken
  // FENE bond (collective: broken_anywhere is the ranks' agreed flag), the checkpoint's bonded scalars.
  void load_topology(const io::LammpsData& data, const std::vector<std::size_t>& mine);
  void build_bonded();
  // [md.kspace] (md_kspace.cpp): the solver of the long-range Coulomb sum, chosen once the charges are in
  // place (its g_ewald goes into the pair evaluators), and its part of a force call.
  void setup_kspace();
  void compute_kspace(bool ev);
  // The bonds, angles and dihedrals of a force call (under Newton before the ghosts' forces go back), and the
  // scaled special pairs (on the owned atoms, at its end).
  void compute_bonded_terms(bool ev);
  void compute_special_pairs(bool ev);
  void check_broken_bonds(bool broken_anywhere);
  void put_bonded_state(io::SolverState& st) const;
  bonded::BondedSetup restore_bonded_setup(const io::SolverState& st);
  void rebuild();
  void sort_owned_atoms();
  // ev: the energies and the virial (thermo); virial: the virial alone (constant pressure), where the pair
  // loop can leave the energies out.
  void compute_forces(bool ev, bool virial = false);
  void check_atom_count(const char* where);
  void check_close_atoms();
  // md.ensemble = "nvt": the chain's set-up (a fresh run) and one half-step update (before the first
  // half-kick, or after the second: then with the temperature measured first). No-ops otherwise.
  void setup_thermostat();
  // [md.minimize] (md_minimize.cpp): the minimiser of a fresh run (after the set-up's forces) or of a restored
  // one (its scalars from the checkpoint), one iteration as a step, and its energy evaluation.
  void start_minimizer();
  void restore_minimizer(const io::SolverState& st);
  void minimize_step();
  double minimize_energy_force(double local_maxsq);
  void thermostat_half_step(bool after_kick);
  // md.ensemble = "npt" / "nph" (md_npt.cpp): the barostat's set-up (a fresh run), its half-steps, the box of
  // every rank's grid and halo, the displacement that triggers a rebuild (LAMMPS's, less the box corners'
  // movement since the last build), the neighbour bins of a changed box (and the check of its sub-boxes).
  void setup_barostat();
  MtkBarostat::Settings barostat_settings() const;  // the barostat of the configuration's ensemble
  void npt_initial_integrate();
  void npt_final_integrate();
  void set_box(const comm::Box3& box);
  double rebuild_trigger_sq() const;
  void box_for_rebuild();
  // The ranks' summed virial of the last force call (aniso: its diagonal).
  void sum_virial();
  // [[run.stage]] (md_stage.cpp): stage k's settings in m_cfg; at a stage's end, the next stage set up as LAMMPS
  // sets up a run; the stage of a checkpoint's step (checked against its md.stage) before anything is restored;
  // md.stage in a checkpoint; the stages for describe().
  // The clock: the time at m_step, from the step where md.dt last changed (m_clock_step, m_clock_time; 0 and 0
  // without stages: step x md.dt exactly). preamble_end() with stages: the minimisations' iterations so far.
  void enter_stage(std::size_t k);
  bool stage_done() const;
  void begin_stage_if_due();
  void restore_stage(const io::SolverState& st);
  void put_stage_state(io::SolverState& st) const;
  std::vector<std::string> describe_stages() const;
  double clock_time() const;
  std::int64_t stages_preamble_end() const;
  std::size_t m_stage = 0;
  std::int64_t m_stage_start = 0;  // the step at which the current stage began
  std::int64_t m_clock_step = 0;
  double m_clock_time = 0;

  MdConfig m_cfg;
  const comm::Communicator& m_comm;
  comm::Transport& m_transport;
  comm::Box3 m_box;
  std::unique_ptr<comm::ProcessGrid> m_grid;
  std::unique_ptr<Halo> m_halo;
  AtomStore m_atoms;
  NeighborList m_neighbor;
  AtomSorter m_sorter;  // sort_owned_atoms(): canonical order after each rebuild
  PairCoeffs m_coeffs;  // by type pair (host), for set-up and messages
  AnyPair m_pair;       // the evaluators of every type pair, where the kernels run
  ForceScatter m_scatter;
  // The force array m_scatter was made for: the scatter is made anew when the array is reallocated. (A
  // duplicating scatter view, OpenMP's, holds copies of its own, so its subview() is no such array.)
  Vec3View m_scatter_of{"md::scatter_of", 0};
  std::int64_t m_natoms = 0;
  double m_total_mass = -1;  // of every atom, for the thermo's density; < 0: not summed yet
  // m_step, m_time (SolverBase): m_time is always step * md.dt (restore() checks a checkpoint's time against it).
  int m_since_build = 0;
  bool m_moved_too_far = false;  // an atom moved > skin/2 while the current list was in use
  // The largest squared displacement since the last build, of the step just integrated, and whether an
  // atom moved > skin/2 on a step that did not rebuild: kept where the kernels run, read on the host only
  // when a rebuild is decided or made (no scalar returns to the host on other steps).
  Kokkos::View<double, MemSpace> m_maxsq{"md::maxsq"};
  Kokkos::View<int, MemSpace> m_far{"md::moved_too_far"};
  // m_moved_too_far or'ed with the device flag, which is then cleared (a host read).
  bool collect_moved_too_far();
  long long m_dangerous_builds = 0;
  // Wall time per phase (seconds), reported in summary() as LAMMPS reports its timing breakdown.
  enum Phase { k_pair, k_bond, k_kspace, k_neigh, k_comm, k_integrate, k_nphase };
  double m_phase_time[k_nphase] = {};
  std::unique_ptr<io::H5mdTrajectory> m_trajectory;  // opened at the first write_outputs()
  std::unique_ptr<io::LammpsDump> m_dump;              // [md.dump]: opened at the first write_outputs()
  NoseHooverChain m_nhc;  // md.ensemble = "nvt", "npt"
  // md.ensemble = "npt", "nph": the barostat, the temperature after the last step (FixNH::t_current; nph), the
  // ranks' summed virial of the last force call, the box of the last neighbour build and of the bins, the
  // neighbour cutoff (cutoff + skin), the sub-box thickness at the last stop_request().
  MtkBarostat m_baro;
  double m_t_current = 0;
  double m_virial_sum = 0;
  std::array<double, 3> m_virial_diagonal{0, 0, 0};
  comm::Box3 m_build_box, m_neighbor_box;
  double m_cutneigh = 0;
  std::array<int, 3> m_prefer_dims{0, 0, 0};  // restore(): the rank grid of the checkpoint's run (npt, nph)
  std::array<double, 4> m_kspace_restore{0, 0, 0, 0};  // restore(): its PPPM mesh and g_ewald (npt, nph)
  mutable std::int64_t m_stop_checked = -1;
  mutable double m_last_thickness = 0;
  // The thinnest sub-box when stop_request() asked for a stop (0: it did not): a resume needs thicker ones.
  mutable double m_shrink_stop = 0;
  std::unique_ptr<Minimizer> m_min;  // [md.minimize]
  PairTally m_tally;
  // Under Newton: the diagonal of the pair virial of the last force call with a virial, from x . f after the
  // loop (m_tally.virial is its sum); m_fdotr_valid says that call had one.
  std::array<double, 3> m_fdotr_diagonal{0, 0, 0};
  bool m_fdotr_valid = false;
  // Molecules: the styles and coefficients, the terms, what the last force call tallied, the first FENE bond
  // found broken on this rank (step -1: none), the reach of the ghosts.
  bonded::BondedSetup m_bonded_setup;
  bonded::BondedTerms m_bonded;
  bonded::BondedEnergies m_bonded_energy;
  PairTally m_special_tally;
  std::int64_t m_broken_at = -1;
  std::int64_t m_broken[2] = {0, 0};
  double m_ghost_cutoff = 0;
  // [md.kspace]: one of the two solvers, what its last call tallied on this rank, and its choice in words.
  std::unique_ptr<kspace::Pppm> m_pppm;
  std::unique_ptr<kspace::Ewald> m_ewald;
  kspace::KspaceResult m_kspace;
  std::vector<std::string> m_kspace_lines;
  bool m_tally_valid = false;
  bool m_setup_done = false;
  bool m_restored = false;
  // A solver made to restore: the list fields' lengths are the checkpoint's, unknown until restore() reads them
  // (state_layout() leaves them open).
  bool m_lists_from_checkpoint = false;
  std::vector<double> m_masses;  // by type - 1
  // state_reusing(): the atoms' records sent to the ranks that own their rows and those received (none on one
  // rank), the destinations and the record of each row, kept from one checkpoint to the next (their memory,
  // not their contents).
  std::vector<double> m_state_records;
  std::vector<double> m_state_received;
  std::vector<int> m_state_dest;
  std::vector<std::uint64_t> m_state_record_of_row;
 public:
  const PairCoeffs& pair_coeffs() const { return m_coeffs; }
  const std::vector<double>& masses() const { return m_masses; }
};

}  // namespace spotrun::md
