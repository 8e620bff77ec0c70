#include "registry.hpp"

#include <set>
#include <stdexcept>

#include "comm/errors.hpp"

namespace spotrun::solvers {

// The built-in solvers, generated from SPOTRUN_SOLVERS (solvers/solver_list.cpp.in).
std::vector<SolverRegistration> builtin_registrations();

namespace {

bool is_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

void check(const SolverRegistration& r, const std::deque<SolverRegistration>& others) {
  auto fail = [&](const std::string& why) {
    throw std::logic_error("solver registration '" + r.name + "': " + why);
  };
  if (!is_name(r.name)) fail("the name must be a lower-case TOML bare name (a-z, 0-9, _ and -)");
  for (const auto& o : others)
    if (o.name == r.name) fail("a solver of this name is registered already");
  if (r.units.empty()) fail("no unit system");
  if (!r.key_active || !r.check_rules || !r.memory || !r.checkpoint_bytes_per_work_unit || !r.read_inputs || !r.make)
    fail("a function is missing");
  std::set<std::string> seen;
  for (const auto& k : r.keys) {
    if (k.key.rfind(r.name + ".", 0) != 0) fail("key '" + k.key + "' is not under '" + r.name + ".'");
    if (!seen.insert(k.key).second) fail("key '" + k.key + "' is given twice");
    if (k.unit.empty() || k.help.empty()) fail("key '" + k.key + "' has no unit or no help");
  }
}

std::deque<SolverRegistration>& registry() {
  static std::deque<SolverRegistration> all = [] {
    std::deque<SolverRegistration> r;
    for (auto& reg : builtin_registrations()) {
      check(reg, r);
      r.push_back(std::move(reg));
    }
    return r;
  }();
  return all;
}

}  // namespace

const std::deque<SolverRegistration>& registered_solvers() { return registry(); }

const SolverRegistration* find_solver(const std::string& name) {
  for (const auto& r : registry())
    if (r.name == name) return &r;
  return nullptr;
}

const SolverRegistration& solver_named(const std::string& name, const std::string& where) {
  if (const auto* r = find_solver(name)) return *r;
  std::string known;
  for (const auto& n : solver_names()) known += (known.empty() ? "\"" : ", \"") + n + "\"";
  throw InputError(where + ": run.solver " + io::quote_for_message(name) +
                   " is not a solver of this spotrun; registered solvers: " + known);
}

const SolverRegistration* solver_of_key(const std::string& key) {
  for (const auto& r : registry())
    if (key.size() > r.name.size() && key.compare(0, r.name.size(), r.name) == 0 && key[r.name.size()] == '.')
      return &r;
  return nullptr;
}

std::vector<std::string> solver_names() {
  std::vector<std::string> names;
  for (const auto& r : registry()) names.push_back(r.name);
  return names;
}

void register_solver(SolverRegistration registration) {
  check(registration, registry());
  registry().push_back(std::move(registration));
}

}  // namespace spotrun::solvers
