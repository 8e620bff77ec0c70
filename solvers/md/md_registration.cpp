// The MD solver's registration: its deck keys ([md], [md.pair], [md.bond], [md.angle], [md.dihedral],
// [md.special_bonds], [md.lattice], [md.initial], [md.minimize]; docs/decks.md
// documents the same keys), its configuration reader, the rules between its sections, its memory and
// checkpoint sizes, the LAMMPS data file it may start from, and its factory.
#include "md_registration.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <sstream>

#include "bonded/bonded_coeffs.hpp"
#include "bonded/bonded_params.hpp"
#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "io/input_file.hpp"
#include "io/lammps_data.hpp"
#include "io/lammps_dump.hpp"
#include "md_export.hpp"
#include "md_memory.hpp"
#include "md_solver.hpp"
#include "md_stage.hpp"
#include "pair.hpp"
#include "solvers/registry.hpp"

namespace spotrun::md {

using io::Deck;
using io::KeySpec;
using io::KeyType;

namespace {

// The registered style called name, or nullptr (the deck's own check names the allowed ones).
const PairStyleInfo* style_info(const std::string& name) {
  static const std::vector<PairStyleInfo> infos = pair_style_infos();
  for (const auto& i : infos)
    if (i.name == name) return &i;
  return nullptr;
}

// The coefficient a key of [md.pair] or [[md.pair.coeff]] gives ("md.pair.coeff.3.d0", "md.pair.coeff.d0",
// "md.pair.epsilon": its name), or "" for another key.
std::string pair_param_key(const std::string& key) {
  static const char* pair = "md.pair.";
  if (key.rfind(pair, 0) != 0) return "";
  std::string rest = key.substr(std::char_traits<char>::length(pair));
  const std::string coeff = "coeff.";
  const bool field = rest.rfind(coeff, 0) == 0;
  if (field) {
    rest = rest.substr(coeff.size());
    if (const auto dot = rest.find('.'); dot != std::string::npos) rest = rest.substr(dot + 1);  // "3.d0"
  }
  for (const auto& info : pair_style_infos())
    for (const auto& p : info.params)
      if (rest == p.name && (field || p.type_default)) return rest;
  return "";
}

// The coefficients of each [[md.pair.coeff]] table and the [md.pair] defaults against md.pair.style's:
// InputError at the first key of another style's, or the first table without one of the style's.
void check_pair_coeff_keys(const Deck& d) {
  const PairStyleInfo* style = style_info(d.get_string("md.pair.style"));
  if (!style) return;  // the deck's own check of md.pair.style names the styles
  const std::string of = "pair style \"" + style->name + "\" (md.pair.style)";
  auto refuse_other = [&](const std::string& key, const std::string& shown, const std::string& name) {
    if (d.has(key) && style->index(name) < 0)
      throw InputError(d.where(key) + ": " + shown + ": not a coefficient of " + of + "; its coefficients: " +
                       style->names(true));
  };
  for (const auto& info : pair_style_infos())
    for (const auto& p : info.params)
      if (p.type_default) refuse_other(std::string("md.pair.") + p.name, std::string("md.pair.") + p.name, p.name);
  for (std::size_t k = 0; k < d.count("md.pair.coeff"); ++k) {
    const std::string at = "md.pair.coeff." + std::to_string(k);
    const std::string shown = "md.pair.coeff[" + std::to_string(k) + "]";
    for (const auto& info : pair_style_infos())
      for (const auto& p : info.params) refuse_other(at + "." + p.name, shown + "." + p.name, p.name);
    for (const auto& p : style->params)
      if (!d.has(at + "." + p.name))
        throw InputError(d.where(at) + ": '" + shown + "' has no key '" + p.name + "' (" + p.help + " of the pair; " +
                         of + ")");
  }
}

// The [[md.bond.coeff]] tables (and those of angles and dihedrals) against the deck's style, as
// resolve_bonded_coeffs() checks them, with the lines of the deck: InputError at the first coefficient of
// another style, the first table without one of the style's, the first value the style does not take, or
// a type given twice. Without a deck style the tables wait for the data file's (resolve_bonded_coeffs()).
void check_bonded_coeff_keys(const Deck& d, const MdConfig& c) {
  const BondedKeyWhere where = [&d](const std::string& key) { return d.where(key); };
  for (const BondedKind kind : k_bonded_kinds) {
    check_bonded_types_unique(c, kind, where);
    const BondedStyleConfig& b = c.bonded(kind);
    const BondedStyleInfo* style = find_bonded_style(kind, b.style);
    if (!style) continue;  // none given; an unknown one the deck's own check names with the allowed ones
    const std::string source = std::string(bonded_kind_info(kind).key) + ".style";
    for (std::size_t k = 0; k < b.coeffs.size(); ++k) bonded_table_values(*style, b.coeffs[k], k, source, where);
  }
}

}  // namespace

MdConfig config_from_deck(const Deck& d) {
  MdConfig c;
  c.units = unit_style_from_name(d.get_string("md.units"));
  c.dt = d.get_float("md.dt");
  c.cutoff = d.get_float("md.cutoff");
  c.skin = d.get_float("md.skin");
  c.neighbor_every = static_cast<int>(d.get_int("md.neighbor_every"));
  c.neighbor_check = d.get_bool("md.neighbor_check");
  c.halo_overlap = d.get_bool("md.halo_overlap");
  const std::string ensemble = d.get_string("md.ensemble");
  c.ensemble = ensemble == "langevin" ? Ensemble::Langevin
               : ensemble == "nvt"    ? Ensemble::Nvt
               : ensemble == "npt"    ? Ensemble::Npt
               : ensemble == "nph"    ? Ensemble::Nph
                                      : Ensemble::Nve;
  if (thermostatted(c.ensemble)) c.tchain = static_cast<int>(d.get_int("md.tchain"));
  if (barostatted(c.ensemble)) {
    c.pressure = d.get_float("md.pressure");
    c.pressure_damp = d.get_float("md.pressure_damp");
    c.pchain = static_cast<int>(d.get_int("md.pchain"));
    c.barostat = d.get_string("md.barostat") == "aniso" ? Barostat::Aniso : Barostat::Iso;
  }
  c.temperature = d.get_float("md.temperature");
  c.damp = d.get_float("md.damp");
  c.seed = static_cast<std::uint64_t>(d.get_int("md.seed"));
  c.precision = d.get_string("md.precision") == "mixed" ? Precision::Mixed : Precision::Double;
  c.pair_style = d.get_string("md.pair.style");
  const PairStyleInfo* style = style_info(c.pair_style);
  c.pair_defaults.clear();
  if (style)
    for (const auto& p : style->params)
      if (p.type_default) c.pair_defaults.emplace_back(p.name, d.get_float(std::string("md.pair.") + p.name));
  c.shift = d.get_bool("md.pair.shift");
  if (d.has("md.pair.coulomb_cutoff")) c.coulomb_cutoff = d.get_float("md.pair.coulomb_cutoff");
  if (d.has("md.kspace")) {
    const std::string style = d.get_string("md.kspace.style");
    c.kspace.style = style == "pppm" ? KspaceStyle::Pppm : style == "ewald" ? KspaceStyle::Ewald : KspaceStyle::None;
    c.kspace.accuracy = d.get_float("md.kspace.accuracy");
    c.kspace.order = static_cast<int>(d.get_int("md.kspace.order"));
    if (d.has("md.kspace.mesh")) c.kspace.mesh = d.get_int3("md.kspace.mesh");
    if (d.has("md.kspace.g_ewald")) c.kspace.g_ewald = d.get_float("md.kspace.g_ewald");
  }
  c.mix = d.has("md.pair.mix") && d.get_string("md.pair.mix") == "arithmetic" ? PairMix::Arithmetic : PairMix::Geometric;
  for (std::size_t k = 0; k < d.count("md.types"); ++k) {
    const std::string at = "md.types." + std::to_string(k) + ".";
    AtomTypeSpec t;
    t.name = d.get_string(at + "name");
    t.mass = d.get_float(at + "mass");
    t.mass_given = d.has(at + "mass");
    t.fraction = d.get_float(at + "fraction");
    c.types.push_back(t);
  }
  for (std::size_t k = 0; k < d.count("md.pair.coeff"); ++k) {
    const std::string at = "md.pair.coeff." + std::to_string(k) + ".";
    PairCoeffSpec p;
    const auto names = d.get_strings(at + "types");
    p.type_a = names.at(0);
    p.type_b = names.at(1);
    // The coefficients given, by name: resolve_pair_coeffs() checks them against the style's.
    for (const auto& info : pair_style_infos())
      for (const auto& param : info.params)
        if (d.has(at + param.name) && std::none_of(p.values.begin(), p.values.end(),
                                                     [&](const auto& v) { return v.first == param.name; }))
          p.values.emplace_back(param.name, d.get_float(at + param.name));
    p.cutoff = d.has(at + "cutoff") ? d.get_float(at + "cutoff") : 0.0;
    c.pair_coeffs.push_back(p);
  }
  for (const BondedKind kind : k_bonded_kinds) {
    const std::string key = bonded_kind_info(kind).key;
    BondedStyleConfig& b = c.bonded(kind);
    b.style = d.get_string(key + ".style");  // "" when not given
    for (std::size_t k = 0; k < d.count(key + ".coeff"); ++k) {
      const std::string at = key + ".coeff." + std::to_string(k) + ".";
      BondedCoeffSpec spec;
      spec.type = static_cast<int>(d.get_int(at + "type"));
      // The coefficients given, by name: check_rules and resolve_bonded_coeffs() check them against the style's.
      for (const auto& name : bonded_coeff_names(kind))
        if (d.has(at + name)) spec.values.emplace_back(name, d.get_float(at + name));
      b.coeffs.push_back(spec);
    }
  }
  c.special_lj = d.get_float3("md.special_bonds.lj");
  c.special_coul = d.get_float3("md.special_bonds.coul");
  c.trajectory_every = d.get_int("md.trajectory.every");
  c.trajectory_fields = d.get_strings("md.trajectory.fields");
  c.dump_every = d.get_int("md.dump.every");
  c.dump_columns = d.get_strings("md.dump.columns");
  c.thermo_style = d.get_strings("md.thermo_style");
  if (d.has("md.lattice.type_seed")) c.type_seed = static_cast<std::uint64_t>(d.get_int("md.lattice.type_seed"));
  c.from_lattice = !d.has("md.initial.lammps_data");
  c.lattice_type = d.get_string("md.lattice.type");
  c.density = d.get_float("md.lattice.density");
  c.cells = d.get_int3("md.lattice.cells");
  c.lattice_temperature = d.get_float("md.lattice.temperature");
  c.lattice_seed = static_cast<std::uint64_t>(d.get_int("md.lattice.seed"));
  if (d.has("md.minimize")) {
    MinimizeConfig& m = c.minimize;
    m.enabled = true;
    m.style = d.get_string("md.minimize.style") == "fire" ? MinStyle::Fire : MinStyle::Cg;
    m.etol = d.get_float("md.minimize.etol");
    m.ftol = d.get_float("md.minimize.ftol");
    m.max_iterations = d.get_int("md.minimize.max_iterations");
    m.max_evaluations = d.get_int("md.minimize.max_evaluations");
    m.dmax = d.get_float("md.minimize.dmax");
  }
  return c;
}

MdConfig run_config_from_deck(const Deck& d) {
  MdConfig c = config_from_deck(d);
  c.stages = read_stages(d, config_from_deck);
  if (!c.stages.empty()) apply_stage(c, c.stages.front().config);
  return c;
}

namespace {

// resumable: keys that may change between a checkpoint and its resume (neighbour list tuning); every
// other key defines the physics and must not change.
// The keys of the registered pair styles' coefficients (pair_params.hpp), each name once: md.pair.NAME (the
// default of a type's own pair, for coefficients that have one) after md.pair.style, md.pair.coeff.NAME
// before md.pair.coeff.cutoff. A coefficient field is optional in the schema: which are required depends on
// md.pair.style (MdDefinition::check_rules, resolve_pair_coeffs).
void insert_pair_style_keys(std::vector<KeySpec>& keys) {
  std::vector<KeySpec> defaults, fields;
  auto listed = [](const std::vector<KeySpec>& v, const std::string& key) {
    return std::any_of(v.begin(), v.end(), [&](const KeySpec& k) { return k.key == key; });
  };
  for (const auto& style : pair_style_infos())
    for (const auto& p : style.params) {
      const std::string of = " (pair style " + style.name + ")";
      if (p.type_default && !listed(defaults, std::string("md.pair.") + p.name))
        defaults.push_back({std::string("md.pair.") + p.name, KeyType::Float, p.type_default, p.unit,
                            std::string(p.help) + " of a type's own pair not in [[md.pair.coeff]]" + of, p.min, p.max,
                            true});
      if (!listed(fields, std::string("md.pair.coeff.") + p.name)) {
        KeySpec f{std::string("md.pair.coeff.") + p.name, KeyType::Float, "", p.unit,
                  std::string(p.help) + " of the pair" + of, p.min, p.max, true};
        f.optional = true;
        fields.push_back(f);
      }
    }
  auto at = [&](const char* key) {
    return std::find_if(keys.begin(), keys.end(), [&](const KeySpec& k) { return k.key == key; });
  };
  keys.insert(at("md.pair.coeff.cutoff"), fields.begin(), fields.end());
  keys.insert(at("md.pair.shift"), defaults.begin(), defaults.end());
}

// The keys of [md.bond], [md.angle], [md.dihedral] from the registered bonded styles (bonded_params.hpp):
// the style (its choices the registered ones), the [[...coeff]] tables and their fields, `type` and every
// coefficient name of the kind's styles once. A coefficient shared by styles gets the loosest of their
// ranges here; check_rules and resolve_bonded_coeffs() check each value against its style's range. The
// fields are optional in the schema: which are required depends on the style.
std::vector<KeySpec> bonded_keys() {
  std::vector<KeySpec> keys;
  for (const BondedKind kind : k_bonded_kinds) {
    const BondedKindInfo& info = bonded_kind_info(kind);
    const std::string key = info.key, name = info.name, section = info.section;
    std::string styles;
    for (const auto& st : bonded_styles(kind)) styles += "; " + st.name + ": " + st.energy;
    std::string capital = name;
    capital[0] = static_cast<char>(capital[0] - 'a' + 'A');
    keys.push_back({key + ".style", KeyType::String, "", "-",
                    capital + " style (LAMMPS " + name + "_style)" + styles + "; default: the style the data file's '" +
                        section + " # STYLE' names",
                    -1e300, 1e300, false, bonded_style_names(kind)});
    keys.push_back({key + ".coeff", KeyType::TableArray, "", "-",
                    "Coefficients of one " + name + " type ([[" + key + ".coeff]] blocks, LAMMPS " + info.command +
                        "): type and the coefficients of " + key + ".style; a type not given takes its row of the "
                        "data file's " + section,
                    0, 1000});
    keys.push_back({key + ".coeff.type", KeyType::Int, "", "-",
                    capital + " type of the coefficients (1-based, as the data file numbers them)", 1, 1e6});
    for (const auto& field : bonded_coeff_names(kind)) {
      std::vector<std::pair<const BondedStyleInfo*, const BondedParam*>> of;
      for (const auto& st : bonded_styles(kind))
        if (st.index(field) >= 0) of.emplace_back(&st, &st.params[static_cast<std::size_t>(st.index(field))]);
      KeySpec f{key + ".coeff." + field, KeyType::Int, "", "", "", 1e300, -1e300, true};
      std::vector<std::string> units;
      std::string helps, names;
      bool same_help = true;
      for (const auto& [st, p] : of) {
        if (p->value == BondedValue::Real) f.type = KeyType::Float;
        if (p->min < f.min) f.min_exclusive = p->min_exclusive;
        else if (p->min == f.min) f.min_exclusive = f.min_exclusive && p->min_exclusive;
        f.min = std::min(f.min, p->min);
        f.max = std::max(f.max, p->max);
        if (std::find(units.begin(), units.end(), p->unit) == units.end()) units.push_back(p->unit);
        same_help = same_help && std::string(p->help) == of.front().second->help;
        helps += (helps.empty() ? "" : "; ") + st->name + ": " + p->help;
        names += (names.empty() ? "" : ", ") + st->name;
      }
      for (const auto& u : units) f.unit += (f.unit.empty() ? "" : " or ") + u;
      f.help = (same_help ? std::string(of.front().second->help) : helps) + " (" + name + " style" +
               (of.size() > 1 ? "s " : " ") + names + ")";
      f.optional = true;
      keys.push_back(f);
    }
  }
  keys.push_back({"md.special_bonds.lj", KeyType::Float3, "[0.0, 0.0, 0.0]", "-",
                  "Factors of the pair interaction between 1-2, 1-3 and 1-4 neighbours along the bonds (LAMMPS "
                  "special_bonds lj): 0 leaves the pair out, 1 keeps it whole",
                  0, 1});
  keys.push_back({"md.special_bonds.coul", KeyType::Float3, "[0.0, 0.0, 0.0]", "-",
                  "Factors of the Coulomb interaction between 1-2, 1-3 and 1-4 neighbours (LAMMPS special_bonds coul)",
                  0, 1});
  return keys;
}

// [md.minimize]: the energy minimisation's keys (minimize/min_config.hpp; LAMMPS's minimize has no defaults).
std::vector<KeySpec> minimize_keys() {
  return {
      {"md.minimize.style", KeyType::String, "\"cg\"", "-",
       "Energy minimisation before the dynamics (LAMMPS min_style): cg (Polak-Ribiere conjugate gradient, quadratic "
       "line search) or fire (FIRE 2.0)",
       -1e300, 1e300, false, {"cg", "fire"}},
      {"md.minimize.etol", KeyType::Float, "1e-8", "-",
       "Stopping tolerance of the relative energy change between iterations (LAMMPS minimize etol); 0: none", 0, 1},
      {"md.minimize.ftol", KeyType::Float, "1e-10", "epsilon/sigma",
       "Stopping tolerance of the 2-norm of the global force vector (LAMMPS minimize ftol); 0: none", 0, 1e300},
      {"md.minimize.max_iterations", KeyType::Int, "1000", "iterations",
       "Most iterations of the minimisation (LAMMPS minimize maxiter); each is a step", 0, 1e15},
      {"md.minimize.max_evaluations", KeyType::Int, "10000", "evaluations",
       "Most force evaluations of the minimisation (LAMMPS minimize maxeval)", 1, 1e15},
      {"md.minimize.dmax", KeyType::Float, "0.1", "sigma",
       "Largest move of any coordinate in one line search or FIRE step (LAMMPS min_modify dmax)", 0, 1e3, true},
  };
}

// [md]: units, integration, neighbour lists, thermostat and barostat, output columns.
std::vector<KeySpec> md_section_keys() {
  return {
      {"md.units", KeyType::String, "\"lj\"", "-",
       "Unit style of every md key, the data file and the output (LAMMPS units): lj (sigma, epsilon, mass, tau), "
       "real (Angstrom, kcal/mol, g/mol, fs, K, atm) or metal (Angstrom, eV, g/mol, ps, K, bar); real and metal "
       "need md.dt",
       -1e300, 1e300, false, unit_style_names()},
      {"md.dt", KeyType::Float, "0.005", "tau", "Time step", 0, 1e3, true},
      {"md.cutoff", KeyType::Float, "2.5", "sigma", "Pair cutoff radius", 0, 1e3, true},
      {"md.skin", KeyType::Float, "0.3", "sigma", "Neighbour list skin (LAMMPS neighbor SKIN bin)", 0, 1e3, false, {},
       true},
      {"md.neighbor_every", KeyType::Int, "1", "steps", "Consider a neighbour list rebuild every this many steps", 1, 1e9,
       false, {}, true},
      {"md.neighbor_check", KeyType::Bool, "true", "-",
       "Rebuild only if an atom moved more than skin/2 since the last build (LAMMPS neigh_modify check yes)", -1e300,
       1e300, false, {}, true},
      {"md.halo_overlap", KeyType::Bool, "true", "-",
       "Compute the pair forces of atoms with no ghost neighbour while the ghost positions are exchanged (false: "
       "exchange first); the same results either way",
       -1e300, 1e300, false, {}, true},
      {"md.ensemble", KeyType::String, "\"nve\"", "-",
       "Integrator: velocity Verlet (nve), with a Langevin thermostat (langevin), with a Nose-Hoover chain "
       "(nvt, LAMMPS fix nvt), with a Nose-Hoover chain and a Martyna-Tobias-Klein barostat (npt, LAMMPS fix npt) or "
       "with the barostat alone (nph, LAMMPS fix nph)",
       -1e300, 1e300, false, {"nve", "langevin", "nvt", "npt", "nph"}},
      {"md.temperature", KeyType::Float, "1.0", "epsilon/k_B", "Target temperature of the thermostat (langevin, nvt)", 0,
       1e9},
      {"md.damp", KeyType::Float, "1.0", "tau",
       "Damping time of the thermostat: Langevin friction time; Nose-Hoover Tdamp (fix nvt temp T T Tdamp)", 0, 1e9,
       true},
      {"md.tchain", KeyType::Int, "3", "-", "Nose-Hoover chain length (LAMMPS fix nvt tchain); nvt and npt only", 1, 100},
      {"md.pressure", KeyType::Float, "1.0", "epsilon/sigma^3",
       "Target pressure of the barostat (LAMMPS fix npt iso/aniso Pstart = Pstop); npt and nph only", -1e9, 1e9},
      {"md.pressure_damp", KeyType::Float, "1.0", "tau",
       "Damping time of the barostat (LAMMPS fix npt Pdamp; about 1000 time steps is LAMMPS's advice); npt and nph "
       "only",
       0, 1e9, true},
      {"md.pchain", KeyType::Int, "3", "-",
       "Nose-Hoover chain length on the barostat (LAMMPS fix npt pchain; 0: none); npt and nph only", 0, 100},
      {"md.barostat", KeyType::String, "\"iso\"", "-",
       "What the barostat couples: iso (one strain rate for the three box lengths, driven by the scalar pressure; "
       "LAMMPS fix npt iso) or aniso (one per length, driven by the pressure tensor's diagonal; LAMMPS aniso); npt and "
       "nph only",
       -1e300, 1e300, false, {"iso", "aniso"}},
      {"md.seed", KeyType::Int, "12345", "-", "Seed of the Langevin random forces", 1, 9.2e18},
      {"md.precision", KeyType::String, "\"double\"", "-",
       "Arithmetic of the pair forces: double, or mixed (each pair's distance, force and energy in float from a "
       "double separation; sums over pairs, positions, velocities and integration in double); may change on resume",
       -1e300, 1e300, false, {"double", "mixed"}, true},
      {"md.thermo_style", KeyType::Strings, "[\"step\", \"time\", \"temp\", \"pe\", \"ke\", \"etotal\", \"press\"]",
       "-",
       "Thermo columns (LAMMPS thermo_style custom keywords; energies per atom in lj units, totals in real and "
       "metal), \"step\" first; ecouple and "
       "econserve: nve or nvt; may change on resume only with OUTDIR/thermo.csv moved away",
       1, 11, false, thermo_keywords(), true},
  };
}

// [[md.types]]: the atom types.
std::vector<KeySpec> types_keys() {
  return {
      {"md.types", KeyType::TableArray, "", "-",
       "Atom types in type order (type 1 first): [[md.types]] blocks with name, mass, fraction; default: one type "
       "\"1\" of mass 1 (lattice) or the data file's types, named \"1\", \"2\", ...",
       0, 100},
      {"md.types.name", KeyType::String, "", "-", "Name of the type (unique)"},
      {"md.types.mass", KeyType::Float, "1.0", "mass",
       "Mass of the type (a data file's Masses must agree when both are given)", 0, 1e9, true},
      {"md.types.fraction", KeyType::Float, "0.0", "-",
       "Lattice starts with several types: the share of the sites of this type (the shares add up to 1; each "
       "site draws its type, keyed by md.lattice.type_seed)", 0, 1},
  };
}

// [md.pair], [md.kspace], [[md.pair.coeff]]: the pair potential and the long-range Coulomb solver
// (insert_pair_style_keys adds the coefficients of the registered pair styles).
std::vector<KeySpec> pair_keys() {
  std::vector<KeySpec> keys = {
      // The choices: the registered pair styles (pair.hpp).
      {"md.pair.style", KeyType::String, "\"lj/cut\"", "-", "Pair potential", -1e300, 1e300, false,
       pair_style_names()},
      {"md.pair.shift", KeyType::Bool, "false", "-", "Shift the pair energy to zero at the cutoff (pair_modify shift yes)"},
      {"md.pair.mix", KeyType::String, "\"geometric\"", "-",
       "Coefficients of unlike type pairs not given in [[md.pair.coeff]] (LAMMPS pair_modify mix): epsilon = "
       "sqrt(eps_i eps_j); sigma and cutoff = sqrt(s_i s_j) (geometric) or (s_i + s_j)/2 (arithmetic)",
       -1e300, 1e300, false, {"geometric", "arithmetic"}},
      {"md.pair.coulomb_cutoff", KeyType::Float, "", "sigma",
       "Cutoff of the Coulomb part of a charged pair style (LAMMPS's cut_coul of lj/cut/coul/cut and "
       "lj/cut/coul/long, the cutoff of coul/long; coul/cut takes md.cutoff); default md.cutoff",
       0, 1e3, true},
      // [md.kspace]
      {"md.kspace.style", KeyType::String, "\"none\"", "-",
       "Long-range Coulomb solver of a long-range pair style (LAMMPS kspace_style): pppm (particle-particle "
       "particle-mesh on spotrun's distributed FFT) or ewald (the direct k-space sum)",
       -1e300, 1e300, false, {"none", "pppm", "ewald"}},
      {"md.kspace.accuracy", KeyType::Float, "1e-5", "-",
       "Relative RMS force accuracy the solver's g_ewald and mesh are chosen for (LAMMPS kspace_style ACCURACY)", 0,
       1, true},
      {"md.kspace.mesh", KeyType::Int3, "", "points", "PPPM mesh [nx, ny, nz]; default: the smallest that meets the "
       "accuracy (LAMMPS kspace_modify mesh)", 2, 16384},
      {"md.kspace.order", KeyType::Int, "5", "-", "PPPM charge assignment order (LAMMPS kspace_modify order)", 2, 7},
      {"md.kspace.g_ewald", KeyType::Float, "", "sigma^-1",
       "Ewald splitting parameter; default: chosen from the accuracy and md.pair.coulomb_cutoff (LAMMPS "
       "kspace_modify gewald)", 0, 1e3, true},
      {"md.pair.coeff", KeyType::TableArray, "", "-",
       "Coefficients of one pair of atom types ([[md.pair.coeff]] blocks, LAMMPS pair_coeff); a type's own pair "
       "not given has md.pair.epsilon, md.pair.sigma and md.cutoff, an unlike pair is mixed (md.pair.mix)",
       0, 5050},
      {"md.pair.coeff.types", KeyType::Strings, "", "-", "The two type names of the pair (md.types; numbers \"1\", "
       "\"2\", ... without md.types)", 2, 2},
      {"md.pair.coeff.cutoff", KeyType::Float, "", "sigma", "Cutoff of the pair; default md.cutoff", 0, 1e3, true},
  };
  for (auto& k : keys)
    if (k.key == "md.pair.coeff.cutoff") k.optional = true;
  insert_pair_style_keys(keys);
  return keys;
}

// [md.lattice]: a lattice start.
std::vector<KeySpec> lattice_keys() {
  return {
      {"md.lattice.type", KeyType::String, "\"fcc\"", "-", "Lattice type", -1e300, 1e300, false, {"fcc"}},
      {"md.lattice.density", KeyType::Float, "0.8442", "sigma^-3", "Reduced number density (LAMMPS lattice fcc RHO)", 0,
       1e3, true},
      {"md.lattice.cells", KeyType::Int3, "[10, 10, 10]", "unit cells", "Unit cells [nx, ny, nz] (4 atoms each)", 1, 1e5},
      {"md.lattice.temperature", KeyType::Float, "1.0", "epsilon/k_B", "Initial temperature of the velocities", 0, 1e9},
      {"md.lattice.seed", KeyType::Int, "87287", "-", "Seed of the initial velocities", 1, 9.2e18},
      {"md.lattice.type_seed", KeyType::Int, "4321", "-",
       "Seed of the type of each lattice site (with more than one of md.types)", 1, 9.2e18},
  };
}

// [md.trajectory], [md.dump]: the frames written during a run.
std::vector<KeySpec> output_keys() {
  return {
      {"md.trajectory.every", KeyType::Int, "0", "steps",
       "Write a trajectory frame (OUTDIR/trajectory.h5md, H5MD) every this many steps; 0 = none", 0, 1e15, false, {},
       true},
      {"md.trajectory.fields", KeyType::Strings, "[\"position\", \"image\", \"species\"]", "-",
       "Fields of the trajectory frames", 1, 5, false, {"position", "image", "velocity", "force", "species"}, true},
      // [md.dump]
      {"md.dump.every", KeyType::Int, "0", "steps",
       "Write a frame of OUTDIR/dump.lammpstrj (LAMMPS dump custom, for OVITO and VMD) every this many steps; 0 = none",
       0, 1e15, false, {}, true},
      {"md.dump.columns", KeyType::Strings, "[\"id\", \"type\", \"x\", \"y\", \"z\", \"ix\", \"iy\", \"iz\"]", "-",
       "Columns of the dump frames (LAMMPS dump custom names; xu yu zu: unwrapped positions)", 1, 17, false,
       io::k_dump_columns, true},
  };
}

// [md.initial]: a start from a LAMMPS data file.
std::vector<KeySpec> initial_keys() {
  return {
      {"md.initial.lammps_data", KeyType::String, "", "path",
       "LAMMPS data file to start from (relative paths: to the deck's directory)"},
      {"md.initial.atom_style", KeyType::String, "", "-",
       "LAMMPS atom style of the data file's Atoms section, for a file that does not name it ('Atoms # full'); "
       "default: the file's comment, else atomic",
       -1e300, 1e300, false, io::atom_style_names()},
  };
}

// The MD keys, the lists of its sections one after another (the bonded kinds' before [md.lattice], the
// minimiser's before [md.initial]).
std::vector<KeySpec> md_keys() {
  std::vector<KeySpec> keys = md_section_keys();
  for (auto* part : {types_keys, pair_keys, bonded_keys, lattice_keys, output_keys, minimize_keys, initial_keys}) {
    std::vector<KeySpec> more = part();
    keys.insert(keys.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return keys;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The MD solver as the registry reads it (solvers/registry.hpp: make_registration<Definition>()).
struct MdDefinition {
  using Config = MdConfig;
  static constexpr const char* name = "md";
  static constexpr const char* units = "lj";  // the default of md.units
  static std::string units_of(const MdConfig& cfg) { return cfg.unit().name; }
  static std::vector<KeySpec> keys() { return md_keys(); }
  // [[run.stage]] (md_stage.hpp): the keys a stage may set; the configuration is the first stage's, with every
  // stage's.
  static std::vector<KeySpec> stage_keys() { return md::stage_keys(md_keys()); }
  static MdConfig read_config(const Deck& d) { return run_config_from_deck(d); }

  // The atoms come from [md.lattice] unless [md.initial] names a data file, and then its keys apply
  // instead. Compatibility: before solvers registered, the deck engine applied these two sections to every
  // deck, so fluid decks resolve them too (the [md.lattice] defaults, or [md.initial] when given) and fluid
  // checkpoints hold them in their physics lines, which a resume compares. They stay active for fluid
  // decks; decks of solvers registered since do not get them.
  static bool key_active(const Deck& d, const std::string& key) {
    const std::string solver = d.get_string("run.solver");
    // The coefficient keys apply to the decks of a style that has them.
    if (const std::string param = pair_param_key(key); !param.empty()) {
      const PairStyleInfo* style = style_info(d.get_string("md.pair.style"));
      return solver == "md" && style && style->index(param) >= 0;
    }
    const bool source_keys = solver == "md" || solver == "fluid";
    const bool from_data = d.has("md.initial.lammps_data");
    // Keys of several atom types: active when the deck has types or pair coefficients, so that the physics of a
    // single-type deck (and of its checkpoints) stays as it was before types existed.
    const bool typed = d.count("md.types") > 0 || d.count("md.pair.coeff") > 0;
    if (key == "md.lattice.type_seed") return solver == "md" && !from_data && typed;
    if (key == "md.pair.mix") return solver == "md" && typed;
    // md.units: active when it names another style than lj, so that the physics of an lj deck (and of its
    // checkpoints) stays as it was before the key existed; a resume with other units then differs in it.
    if (key == "md.units") return solver == "md" && d.get_string("md.units") != "lj";
    if (key == "md.tchain") return solver == "md" && (d.get_string("md.ensemble") == "nvt" || d.get_string("md.ensemble") == "npt");
    // The barostat's keys: active under npt and nph (the physics of other decks stays as it was).
    if (key == "md.pressure" || key == "md.pressure_damp" || key == "md.pchain" || key == "md.barostat")
      return solver == "md" && (d.get_string("md.ensemble") == "npt" || d.get_string("md.ensemble") == "nph");
    // The special-bond factors: active in decks with bonded sections or [md.special_bonds], so that the
    // physics of a deck without them (and of its checkpoints) stays as it was before they existed.
    if (starts_with(key, "md.special_bonds."))
      return solver == "md" &&
             (d.has("md.bond") || d.has("md.angle") || d.has("md.dihedral") || d.has("md.special_bonds"));
    // The long-range solver's keys: active in decks with [md.kspace] (the physics of other decks stays as it was).
    if (starts_with(key, "md.kspace.")) return solver == "md" && d.has("md.kspace");
    // The minimisation's keys: active in decks with [md.minimize] (the physics of other decks stays as it was).
    if (starts_with(key, "md.minimize.")) return solver == "md" && d.has("md.minimize");
    if (starts_with(key, "md.lattice.")) return source_keys && !from_data;
    if (starts_with(key, "md.initial.")) return source_keys && from_data;
    return solver == "md";
  }

  static void check_rules(const Deck& d, const MdConfig& c) {
    check_deck_rules(d, c);
    if (c.stages.empty()) return;
    // [[run.stage]]: not after a minimisation yet; each stage's deck under the same rules.
    if (d.has("md.minimize"))
      throw InputError(d.where("md.minimize") + ": [md.minimize] with [[run.stage]] is not supported yet: minimise "
                       "in a run of its own (run.steps = 0), then start the stages from its final state");
    std::vector<Deck> decks;
    const std::vector<MdStage> stages = read_stages(d, config_from_deck, &decks);
    for (std::size_t k = 0; k < stages.size(); ++k) {
      // A stage runs its steps, or minimises for as many iterations as that takes.
      const std::string at = "run.stage." + std::to_string(k);
      const std::string shown = "run.stage[" + std::to_string(k) + "]";
      if (stages[k].minimises() && d.has(at + ".steps"))
        throw InputError(d.where(at + ".steps") + ": '" + shown + ".steps': a stage that minimises ([run.stage.md."
                         "minimize]) takes no steps: its iterations are steps, at most md.minimize.max_iterations");
      // The integrators a stage can start (md_stage.hpp), also when the stage keeps [md]'s.
      const std::string ensemble = decks[k].get_string("md.ensemble");
      const auto& allowed = stage_ensembles();
      if (std::find(allowed.begin(), allowed.end(), ensemble) == allowed.end())
        throw InputError(d.where(d.has(at + ".md.ensemble") ? at + ".md.ensemble" : "md.ensemble") + ": stage " +
                         std::to_string(k + 1) + " ([[run.stage]] " + std::to_string(k + 1) + ") runs md.ensemble = \"" +
                         ensemble + "\", which stages do not support yet; a stage runs nve, langevin, nvt, npt or nph, or "
                         "minimises");
      if (!stages[k].minimises() && !d.has(at + ".steps"))
        throw InputError(d.where(at) + ": '" + shown + "' has no key 'steps' (Number of time steps of the stage; a "
                         "stage with [run.stage.md.minimize] minimises instead)");
      try {
        check_deck_rules(decks[k], stages[k].config);
      } catch (const InputError& e) {
        throw InputError(d.where("run.stage." + std::to_string(k)) + ": in stage " + std::to_string(k + 1) +
                         " ([[run.stage]] " + std::to_string(k + 1) + ", its keys set over [md]): " + e.what());
      }
    }
  }

  static void check_deck_rules(const Deck& d, const MdConfig& c) {
    // The default time step is lj's (0.005 tau): in real and metal units the deck gives its own.
    if (c.units != UnitStyle::Lj && !d.has("md.dt"))
      throw InputError(d.where("md.units") + ": md.units = \"" + c.unit().name + "\" needs md.dt, the time step in " +
                       c.unit().time + " (the default 0.005 is lj's; LAMMPS's default in " + c.unit().name +
                       " units is " + significant(c.unit().dt, 6) + " " + c.unit().time + ")");
    check_pair_coeff_keys(d);
    check_bonded_coeff_keys(d, c);
    for (std::size_t i = 0; i < c.types.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (c.types[i].name == c.types[j].name)
          throw InputError(d.where("md.types." + std::to_string(i) + ".name") + ": md.types[" + std::to_string(i) + "].name = \"" + c.types[i].name +
                           "\" is also the name of md.types[" + std::to_string(j) + "]; type names must be unique");
    if (c.from_lattice && c.types.size() > 1) {
      double sum = 0;
      for (const auto& t : c.types) sum += t.fraction;
      if (std::abs(sum - 1.0) > 1e-9)
        throw InputError(d.where("md.types") + ": the md.types fractions add up to " + std::to_string(sum) +
                         "; a lattice start with several types needs shares that add up to 1");
    }
    // md.thermo_style: "step" first (OUTDIR/thermo.csv rows start with it), each column once, and a
    // conserved energy only where the integrator keeps one.
    if (c.thermo_style.front() != "step")
      throw InputError(d.name() + ": md.thermo_style starts with \"" + c.thermo_style.front() +
                       "\"; the first column must be \"step\"");
    for (std::size_t i = 1; i < c.thermo_style.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j)
        if (c.thermo_style[i] == c.thermo_style[j])
          throw InputError(d.name() + ": md.thermo_style names \"" + c.thermo_style[i] + "\" twice");
      if ((c.thermo_style[i] == "ecouple" || c.thermo_style[i] == "econserve") && c.ensemble == Ensemble::Langevin)
        throw InputError(d.name() + ": md.thermo_style column \"" + c.thermo_style[i] +
                         "\" needs md.ensemble = \"nve\", \"nvt\", \"npt\" or \"nph\" (the Langevin thermostat's energy is not "
                         "tallied)");
    }
    // Constant pressure: the box changes every step; PPPM follows it (its influence function anew every step),
    // Ewald keeps the k-vectors of the box it was set up for.
    if (barostatted(c.ensemble) && c.kspace.style == KspaceStyle::Ewald)
      throw InputError(d.where("md.ensemble") + ": md.ensemble = \"" + d.get_string("md.ensemble") +
                       "\" with [md.kspace] style = \"ewald\" is not supported: Ewald keeps the k-vectors of the box "
                       "it was set up for; use style = \"pppm\"");
    if (d.has("md.initial") && d.has("md.lattice"))
      throw InputError(d.where("md.initial") + ": give either [md.lattice] or [md.initial], not both");
    if (d.has("md.initial") && !d.has("md.initial.lammps_data"))
      throw InputError(d.where("md.initial") + ": [md.initial] needs key 'lammps_data'");
  }

  static solvers::MemoryEstimate memory(const MdConfig& cfg, double natoms, int nranks) {
    const double n = natoms >= 0 ? natoms : lattice_atoms(cfg);
    std::ostringstream what;
    what << "the MD system of " << n << " atoms";
    return solvers::MemoryEstimate::of(estimated_memory(cfg, n, nranks), what.str());
  }

  // state() writes, per atom, 8 bytes per component of every checkpointed field of the per-atom field table
  // (atom_fields.hpp): id, x (3), v (3), f (3), image (3), x_build (3) and type.
  static double checkpoint_bytes_per_work_unit(const MdConfig&) { return record_slots() * 8; }

  // `spotrun export` (md_export.cpp).
  static std::vector<io::StateArray> export_arrays() { return md::export_arrays(); }
  static solvers::ExportedSystem export_system(const io::SolverState& st, const Deck* deck) {
    return md::export_system(st, deck);
  }

  // The lattice's atoms; a data file's are known once it is read.
  static double deck_work_units(const MdConfig& cfg) { return cfg.from_lattice ? lattice_atoms(cfg) : -1.0; }

  // A fresh run from [md.initial] reads the LAMMPS data file. Every rank holds its text and parses it:
  // twice its size per rank, checked before it is read.
  static solvers::SolverInputs read_inputs(const MdConfig& cfg, const solvers::SolverContext& ctx) {
    if (cfg.from_lattice) return {};
    std::filesystem::path p = ctx.deck.get_string("md.initial.lammps_data");
    if (p.is_relative()) p = std::filesystem::path(ctx.deck_path).parent_path() / p;
    // A file that cannot be read is named by its key, the key's line and the path it resolved to.
    std::error_code ec;
    if (const auto absolute = std::filesystem::absolute(p, ec); !ec) p = absolute.lexically_normal();
    const std::string what = ctx.deck.where("md.initial.lammps_data") + ": key 'md.initial.lammps_data': LAMMPS data file";
    const std::uint64_t bytes = io::input_file_size(ctx.comm, p.string(), what);
    ctx.check_memory(2.0 * static_cast<double>(bytes), "reading LAMMPS data file '" + p.string() + "'");
    std::string text = io::read_input_file(ctx.comm, p.string(), what, bytes);
    std::optional<io::AtomStyle> declared;
    if (ctx.deck.has("md.initial.atom_style"))
      declared = io::atom_style_from_name(ctx.deck.get_string("md.initial.atom_style"));
    auto data = std::make_shared<const io::LammpsData>(io::parse_lammps_data(text, p.string(), declared));
    text.clear();
    solvers::SolverInputs in;
    in.work_units = static_cast<double>(data->natoms());
    in.data = data;
    return in;
  }

  static void check_fresh(const MdConfig& cfg, const solvers::SolverContext& ctx, const solvers::SolverInputs& inputs) {
    check_fresh_start(cfg, static_cast<const io::LammpsData*>(inputs.data.get()), ctx.comm.size());
  }

  static std::unique_ptr<Solver> make(const MdConfig& cfg, const solvers::SolverContext& ctx,
                                      const solvers::SolverInputs* inputs) {
    const auto* data = inputs ? static_cast<const io::LammpsData*>(inputs->data.get()) : nullptr;
    MdConfig run = cfg;
    run.trajectory_author = ctx.user;
    return std::make_unique<MdSolver>(run, ctx.comm, ctx.transport, data, inputs == nullptr);
  }
};

}  // namespace
}  // namespace spotrun::md

namespace spotrun::solvers {

SolverRegistration registration_md() { return make_registration<md::MdDefinition>(); }

}  // namespace spotrun::solvers
