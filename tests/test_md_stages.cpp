// Stages of an MD run ([[run.stage]], docs/md.md "Stages") at 1-4 ranks, from a deck as spotrun run reads it:
// Nose-Hoover NVT, then NVE, then NVT at another temperature, chain length and time step, against LAMMPS's
// `fix nvt; run; unfix; fix nve; run; unfix; fix nvt; timestep; run` (tests/data/lammps/in.stages-ref); a
// checkpoint inside every stage and at both stage boundaries resumed bitwise at the same rank count and within
// rounding at others; what a stage may not change refused, naming the key and its line.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/errors.hpp"
#include "comm/transport.hpp"
#include "launcher/deck/deck.hpp"
#include "solvers/md/md_registration.hpp"
#include "solvers/md/md_stage.hpp"
#include "solvers/registry.hpp"
#include "support/input_error.hpp"
#include "support/md_helpers.hpp"
#include "support/md_resume.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3, 4);

using namespace spotrun;

namespace {

const std::string k_data = std::string(SPOTRUN_TEST_DATA_DIR) + "/ka-small.data";

// The Kob-Andersen mixture of tests/data/ka-small.data as in.stages-ref runs it: stage 1 keeps [md]'s NVT,
// stage 2 is NVE, stage 3 NVT at T 1.2 (damp 0.5, tchain 4) with dt 0.004.
std::string stages_deck(const std::string& extra = "") {
  return R"([run]
solver = "md"
thermo_every = 10
[md]
dt = 0.005
cutoff = 2.5
skin = 0.3
ensemble = "nvt"
temperature = 0.8
damp = 0.25
[[md.types]]
name = "A"
[[md.types]]
name = "B"
[[md.pair.coeff]]
types = ["A", "A"]
epsilon = 1.0
sigma = 1.0
cutoff = 2.5
[[md.pair.coeff]]
types = ["B", "B"]
epsilon = 0.5
sigma = 0.88
cutoff = 2.2
[[md.pair.coeff]]
types = ["A", "B"]
epsilon = 1.5
sigma = 0.8
cutoff = 2.0
[md.initial]
lammps_data = ")" + k_data + R"("
[[run.stage]]
steps = 100
[[run.stage]]
steps = 100
[run.stage.md]
ensemble = "nve"
[[run.stage]]
steps = 100
[run.stage.md]
ensemble = "nvt"
temperature = 1.2
damp = 0.5
tchain = 4
dt = 0.004
)" + extra;
}

launcher::Deck read_deck(const std::string& text) {
  launcher::Deck d = launcher::Deck::parse(text, "stages.toml");
  d.validate();
  launcher::derive_run_steps(d);
  return d;
}

// The solver of a deck, made as spotrun run makes it (the registration reads the configuration).
struct DeckRun {
  explicit DeckRun(const io::Deck& deck, const comm::Communicator& comm = test::world())
      : transport(comm::make_transport("auto", comm)) {
    const solvers::SolverRegistration& r = solvers::solver_named("md", "test");
    const solvers::SolverContext ctx{comm, *transport, deck, "stages.toml", [](double, const std::string&) {}};
    const solvers::SolverInputs in = r.read_inputs(ctx);
    made = r.make(ctx, &in);
    solver = dynamic_cast<md::MdSolver*>(made.get());
  }
  std::unique_ptr<comm::Transport> transport;
  std::unique_ptr<Solver> made;
  md::MdSolver* solver = nullptr;
};

}  // namespace

// The deck's stages: run.steps their sum, the configuration of each, the time across a change of md.dt.
TEST(MdStages, DeckGivesTheStages) {
  const launcher::Deck d = read_deck(stages_deck());
  EXPECT_EQ(d.get_int("run.steps"), 300);
  const md::MdConfig c = md::run_config_from_deck(d);
  ASSERT_EQ(c.stages.size(), 3u);
  EXPECT_EQ(c.ensemble, md::Ensemble::Nvt);  // the first stage's
  EXPECT_EQ(c.stages[0].config.ensemble, md::Ensemble::Nvt);
  EXPECT_EQ(c.stages[1].config.ensemble, md::Ensemble::Nve);
  EXPECT_EQ(c.stages[1].config.dt, 0.005);  // kept from [md]
  EXPECT_EQ(c.stages[2].config.ensemble, md::Ensemble::Nvt);
  EXPECT_EQ(c.stages[2].config.temperature, 1.2);
  EXPECT_EQ(c.stages[2].config.tchain, 4);
  EXPECT_EQ(c.stages[2].config.dt, 0.004);
  EXPECT_EQ(c.stages[2].steps, 100);
  EXPECT_FALSE(c.stages[2].minimises());
  // The resolved deck shows the stages.
  const std::string resolved = d.resolved();
  EXPECT_NE(resolved.find("stage = ["), std::string::npos) << resolved;
  EXPECT_NE(resolved.find("{md = {damp = 0.5, dt = 0.004, ensemble = \"nvt\", tchain = 4, temperature = 1.2}, steps = 100}"), std::string::npos) << resolved;
  EXPECT_NE(resolved.find("steps = 300"), std::string::npos) << resolved;
  // run.steps may stop the stages early, not run past them.
  const std::string more = test::input_error([&] {
    launcher::Deck x = launcher::Deck::parse(stages_deck(), "stages.toml");
    x.apply_set("run.steps=301");
    x.validate();
  });
  EXPECT_NE(more.find("'run.steps' = 301 is more than the 300 steps of the 3 stages"), std::string::npos) << more;
}

// NVT, NVE, NVT(T 1.2, tchain 4, dt 0.004) against LAMMPS: every thermo column within 1e-9.
TEST(MdStages, AgreeWithLammps) {
  const launcher::Deck d = read_deck(stages_deck());
  DeckRun run(d);
  ASSERT_NE(run.solver, nullptr);
  const auto rows = test::run_thermo(*run.solver, 300, 10);
  EXPECT_EQ(run.solver->stage(), 2u);
  EXPECT_EQ(rows[15][1], 150 * 0.005);  // md.dt unchanged so far: step x dt exactly
  EXPECT_DOUBLE_EQ(rows[25][1], 1.0 + 50 * 0.004);  // then accumulated from the change
  EXPECT_EQ(run.solver->thermostat().chain(), 4);
  std::string where;
  const auto ref = test::read_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-ka-small-stages.csv");
  ASSERT_EQ(ref.size(), 31u);
  const double diff = test::max_thermo_diff(rows, ref, &where);
  EXPECT_LE(diff, 1e-9) << where;
  test::report("lammps-ka-small-stages.csv (nvt 0.8, nve, nvt 1.2 tchain 4 dt 0.004; 3 x 100 steps) at " +
               std::to_string(test::nranks()) + " ranks: max relative difference to LAMMPS " + test::sci(diff) + " (" +
               where + ")");
  // Without the stage boundaries' set-up (one NVT run throughout) the run leaves LAMMPS's: the test can fail.
  std::string text = stages_deck();
  text.replace(text.find("ensemble = \"nve\""), 16, "ensemble = \"nvt\"");
  DeckRun other(read_deck(text));
  const auto rows_nvt = test::run_thermo(*other.solver, 300, 10);
  EXPECT_GT(test::max_thermo_diff(rows_nvt, ref), 1e-6);
}

// A checkpoint in every stage and at both boundaries (steps 50, 100, 150, 200, 250): the state restored into a
// solver of the same deck continues in the checkpoint's stage, bitwise at this rank count, within rounding at
// others (N -> M).
TEST(MdStages, ResumeInEveryStage) {
  const launcher::Deck d = read_deck(stages_deck());
  const md::MdConfig cfg = md::run_config_from_deck(d);
  auto stage_at = [](std::int64_t step) { return step <= 100 ? 0 : step <= 200 ? 1 : 2; };
  std::vector<double> want;
  {
    DeckRun run(d);
    run.solver->setup();
    for (int n = 0; n < 300; ++n) run.solver->step(n + 1 == 300);
    const auto t = run.solver->thermo();
    want.assign(t.begin(), t.end());
  }
  for (const std::int64_t stop : {50, 100, 150, 200, 250}) {
    DeckRun run(d);
    run.solver->setup();
    for (std::int64_t n = 0; n < stop; ++n) run.solver->step(false);
    const io::SolverState st = run.solver->state();
    EXPECT_EQ(st.integers.at("md.stage"), stage_at(stop));
    const auto checks = test::restore_at_rank_counts(cfg, st, stop, run.solver->time(),
                                                     [&](md::MdSolver& restored, const comm::Communicator&) {
      std::vector<double> out{static_cast<double>(restored.stage())};
      for (std::int64_t n = stop; n < 300; ++n) restored.step(n + 1 == 300);
      const auto t = restored.thermo();
      out.insert(out.end(), t.begin(), t.end());
      return out;
    });
    for (const auto& r : checks) {
      ASSERT_TRUE(r.error.empty()) << "stop at " << stop << ", " << r.ranks << " ranks: " << r.error;
      ASSERT_EQ(r.values.size(), want.size() + 1);
      EXPECT_EQ(r.values[0], static_cast<double>(stage_at(stop))) << "stop at " << stop;
      double worst = 0;
      for (std::size_t k = 0; k < want.size(); ++k) {
        if (r.ranks == test::nranks()) {
          EXPECT_EQ(r.values[k + 1], want[k]) << "stop at " << stop << ", column " << k << ": not bitwise";
        }
        worst = std::max(worst, test::rel_diff(r.values[k + 1], want[k]));
      }
      EXPECT_LE(worst, 1e-8) << "stop at " << stop << ", resumed at " << r.ranks << " ranks";
      test::report("checkpoint at step " + std::to_string(stop) + " (stage " +
                   std::to_string(stage_at(stop) + 1) + ") on " + std::to_string(test::nranks()) +
                   " ranks, resumed on " + std::to_string(r.ranks) + ": step 300 thermo max relative difference " +
                   test::sci(worst));
    }
  }
}

// A protocol with constant pressure: NVT at 0.8, NPT iso (p 1, Pdamp 0.5), NVE, 100 steps each, against LAMMPS's
// `fix nvt; run; unfix; fix npt; run; unfix; fix nve; run` (tests/data/lammps/in.protocol-ref), the volume too;
// checkpoints inside the NPT stage, at its end and inside the NVE stage after it, resumed bitwise at the same
// rank count and within rounding at others.
TEST(MdStages, ProtocolWithNptAgreesWithLammps) {
  std::string text = stages_deck();
  const auto third = text.find("[[run.stage]]", text.find("ensemble = \"nve\""));
  text.erase(third);
  text.replace(text.find("ensemble = \"nve\""), 16,
               "ensemble = \"npt\"\npressure = 1.0\npressure_damp = 0.5\n[[run.stage]]\nsteps = 100\n[run.stage.md]\n"
               "ensemble = \"nve\"");
  text.insert(text.find("[md]\n") + 5, "thermo_style = [\"step\", \"time\", \"temp\", \"pe\", \"ke\", \"etotal\", "
                                       "\"press\", \"vol\"]\n");
  const launcher::Deck d = read_deck(text);
  const md::MdConfig cfg = md::run_config_from_deck(d);
  ASSERT_EQ(cfg.stages.size(), 3u);
  ASSERT_EQ(cfg.stages[1].config.ensemble, md::Ensemble::Npt);
  const test::Csv ref = test::read_named_csv(std::string(SPOTRUN_TEST_DATA_DIR) + "/lammps-ka-small-protocol.csv");
  ASSERT_EQ(ref.rows.size(), 31u);
  std::vector<std::vector<double>> rows;
  {
    DeckRun run(d);
    run.solver->setup();
    for (int n = 0; n <= 300; ++n) {
      if (n > 0) run.solver->step(n % 10 == 0);
      if (n % 10) continue;
      std::vector<double> r{static_cast<double>(run.solver->step_index())};
      for (const double v : run.solver->thermo()) r.push_back(v);
      rows.push_back(r);
    }
  }
  double worst = 0;
  std::string where;
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < ref.header.size(); ++c) {
      const double dd = test::rel_diff(rows[r][c], ref.rows[r][c]);
      if (dd > worst) {
        worst = dd;
        where = "step " + std::to_string(static_cast<long long>(rows[r][0])) + " " + ref.header[c];
      }
    }
  EXPECT_LE(worst, 1e-9) << where;
  EXPECT_GT(rows[20][7], 800.0);             // the NPT stage grew the box from 720
  EXPECT_EQ(rows[30][7], rows[20][7]);       // and the NVE stage kept it
  test::report("lammps-ka-small-protocol.csv (nvt, npt iso, nve; 3 x 100 steps) at " + std::to_string(test::nranks()) +
               " ranks: max relative difference to LAMMPS " + test::sci(worst) + " (" + where + ")");
  const std::vector<double> want(rows.back().begin() + 1, rows.back().end());
  for (const std::int64_t stop : {150, 200, 250}) {
    DeckRun run(d);
    run.solver->setup();
    for (std::int64_t n = 0; n < stop; ++n) run.solver->step(false);
    const io::SolverState st = run.solver->state();
    const auto checks = test::restore_at_rank_counts(cfg, st, stop, run.solver->time(),
                                                     [&](md::MdSolver& restored, const comm::Communicator&) {
      for (std::int64_t n = stop; n < 300; ++n) restored.step(n + 1 == 300);
      return restored.thermo();
    });
    for (const auto& r : checks) {
      ASSERT_TRUE(r.error.empty()) << "stop at " << stop << ", " << r.ranks << " ranks: " << r.error;
      ASSERT_EQ(r.values.size(), want.size());
      double far = 0;
      for (std::size_t k = 0; k < want.size(); ++k) {
        if (r.ranks == test::nranks()) {
          EXPECT_EQ(r.values[k], want[k]) << "stop at " << stop << ", column " << k;
        }
        far = std::max(far, test::rel_diff(r.values[k], want[k]));
      }
      EXPECT_LE(far, 1e-8) << "stop at " << stop << ", resumed at " << r.ranks << " ranks";
    }
  }
}

// A checkpoint whose md.stage is not the stage of its step is refused (on every rank).
TEST(MdStages, CheckpointOfAnotherStageRefused) {
  const launcher::Deck d = read_deck(stages_deck());
  const md::MdConfig cfg = md::run_config_from_deck(d);
  DeckRun run(d);
  run.solver->setup();
  for (int n = 0; n < 120; ++n) run.solver->step(false);
  io::SolverState st = run.solver->state();
  st.integers["md.stage"] = 0;
  const auto checks = test::restore_at_rank_counts(cfg, st, 120, run.solver->time(),
                                                   [](md::MdSolver&, const comm::Communicator&) {
    return std::vector<double>{};
  });
  for (const auto& r : checks)
    EXPECT_NE(r.error.find("checkpoint md.stage = 0 and md.stage_start = 100 at step 120, but stage 1 of the deck begins "
                           "at step 0"),
              std::string::npos)
        << r.ranks << " ranks: " << r.error;
}

// What a stage may not change is refused naming the key and its line; a stage's values pass [md]'s checks.
TEST(MdStages, PhysicsKeysRefused) {
  const std::string cutoff = test::input_error([] { read_deck(stages_deck("cutoff = 3.0\n")); });
  EXPECT_NE(cutoff.find("stages.toml:46: 'run.stage[2].md.cutoff': 'md.cutoff' defines the system and may not "
                        "change between stages; a stage sets steps and md.ensemble, md.temperature, md.damp, "
                        "md.tchain, md.dt, md.seed"),
            std::string::npos)
      << cutoff;
  const std::string pair = test::input_error([] { read_deck(stages_deck("[run.stage.md.pair]\nstyle = \"morse\"\n")); });
  EXPECT_NE(pair.find("stages.toml:46: 'run.stage[2].md.pair': [md.pair] defines the system and may not change between stages"),
            std::string::npos)
      << pair;
  const std::string units = test::input_error([] { read_deck(stages_deck("units = \"real\"\n")); });
  EXPECT_NE(units.find("'md.units' defines the system"), std::string::npos) << units;
  const std::string range = test::input_error([] { read_deck(stages_deck("seed = 0\n")); });
  EXPECT_NE(range.find("stages.toml:46: key 'run.stage[2].md.seed' = 0: out of range"), std::string::npos)
      << range;
  const std::string npt = test::input_error([] { read_deck(stages_deck("").replace(
      stages_deck("").find("ensemble = \"nve\""), 16, "ensemble = \"npq\"")); });
  EXPECT_NE(npt.find("run.stage[1].md.ensemble"), std::string::npos) << npt;
  const std::string steps = test::input_error([] { read_deck(stages_deck("[[run.stage]]\n[run.stage.md]\ndt = 0.001\n")); });
  EXPECT_NE(steps.find("has no key 'steps'"), std::string::npos) << steps;
  // A stage's deck under [md]'s rules: ecouple with a Langevin stage.
  const std::string rules = test::input_error([] {
    read_deck(stages_deck("[[run.stage]]\nsteps = 10\n[run.stage.md]\nensemble = \"langevin\"\n")
                  .replace(0, 0, "")
                  .insert(stages_deck().find("[md]\n") + 5, "thermo_style = [\"step\", \"temp\", \"econserve\"]\n"));
  });
  EXPECT_NE(rules.find("in stage 4"), std::string::npos) << rules;
  EXPECT_NE(rules.find("econserve"), std::string::npos) << rules;
  // A stage's constant pressure under [md]'s rules: Ewald is refused there too.
  std::string ewald_text = stages_deck("[md.kspace]\nstyle = \"ewald\"\n");
  ewald_text.replace(ewald_text.find("ensemble = \"nve\""), 16, "ensemble = \"npt\"");
  const std::string ewald = test::input_error([&] { read_deck(ewald_text); });
  EXPECT_NE(ewald.find("with [md.kspace] style = \"ewald\" is not supported"), std::string::npos) << ewald;
  // [md.minimize] with stages: not yet.
  const std::string min = test::input_error([] { read_deck(stages_deck() + "[md.minimize]\nstyle = \"cg\"\n"); });
  EXPECT_NE(min.find("[md.minimize] with [[run.stage]] is not supported yet"), std::string::npos) << min;
}

namespace {

// NVT for 50 steps, a conjugate-gradient minimisation (a stage of [run.stage.md.minimize]), NVE for 50 steps.
std::string minimise_deck() {
  std::string text = stages_deck();
  text = text.substr(0, text.find("[[run.stage]]"));
  return text + R"([[run.stage]]
steps = 50
[[run.stage]]
[run.stage.md.minimize]
style = "cg"
etol = 1e-8
ftol = 0.0
max_iterations = 400
[[run.stage]]
steps = 50
[run.stage.md]
ensemble = "nve"
)";
}

// Steps as the launcher's loop takes them: until run.steps (`steps`) after the minimisations' iterations
// (Solver::preamble_end()), a minimisation under way counting as no end.
void run_to_end(md::MdSolver& s, std::int64_t steps) {
  for (;;) {
    const std::int64_t pre = s.preamble_end();
    if (pre >= 0 && s.step_index() >= pre + steps) return;
    s.step(true);
  }
}

}  // namespace

// A stage that minimises: its iterations are steps beyond run.steps (the 100 steps of the two dynamics stages),
// the next stage starts from the minimum; checkpoints before, at the start, inside and at the end of the
// minimisation and in the stage after it resume bitwise at this rank count, and in the right stage at others.
TEST(MdStages, MinimisationStage) {
  const launcher::Deck d = read_deck(minimise_deck());
  EXPECT_EQ(d.get_int("run.steps"), 100);
  const md::MdConfig cfg = md::run_config_from_deck(d);
  ASSERT_EQ(cfg.stages.size(), 3u);
  EXPECT_TRUE(cfg.stages[1].minimises());
  EXPECT_FALSE(cfg.stages[2].minimises());  // [md.minimize] is the stage's own
  EXPECT_EQ(cfg.stages[2].config.ensemble, md::Ensemble::Nve);
  EXPECT_EQ(cfg.stages[1].config.ensemble, md::Ensemble::Nvt);
  DeckRun run(d);
  run.solver->setup();
  for (int n = 0; n < 50; ++n) run.solver->step(n == 49);
  const double pe50 = run.solver->thermo()[2];
  EXPECT_EQ(run.solver->preamble_end(), -1);  // the minimisation is due: the run does not end here
  run.solver->step(true);
  EXPECT_EQ(run.solver->stage(), 1u);
  ASSERT_NE(run.solver->minimizer(), nullptr);
  while (run.solver->preamble_end() < 0) run.solver->step(true);
  const std::int64_t iterations = run.solver->preamble_end();
  EXPECT_EQ(run.solver->step_index(), 50 + iterations);
  EXPECT_EQ(run.solver->minimizer()->stats().iterations, iterations);
  EXPECT_GT(iterations, 10);
  const double pe_min = run.solver->thermo()[2];
  EXPECT_LT(pe_min, pe50 - 0.5) << "the minimisation lowers the energy per atom";
  run_to_end(*run.solver, 100);
  EXPECT_EQ(run.solver->step_index(), 100 + iterations);
  EXPECT_EQ(run.solver->stage(), 2u);
  const auto t = run.solver->thermo();
  const std::vector<double> want(t.begin(), t.end());
  test::report("minimisation stage at " + std::to_string(test::nranks()) + " ranks: " + std::to_string(iterations) +
               " cg iterations (steps 51-" + std::to_string(50 + iterations) + "), pe per atom " + test::sci(pe50) +
               " -> " + test::sci(pe_min));

  for (const std::int64_t stop : {std::int64_t{30}, std::int64_t{50}, 50 + iterations / 2, 50 + iterations, 70 + iterations}) {
    DeckRun part(d);
    part.solver->setup();
    while (part.solver->step_index() < stop) part.solver->step(false);
    const io::SolverState st = part.solver->state();
    const std::size_t stage = part.solver->stage();
    const auto checks = test::restore_at_rank_counts(cfg, st, stop, part.solver->time(),
                                                     [&](md::MdSolver& restored, const comm::Communicator&) {
      std::vector<double> out{static_cast<double>(restored.stage())};
      run_to_end(restored, 100);
      out.push_back(static_cast<double>(restored.step_index()));
      out.push_back(static_cast<double>(restored.stage()));
      const auto tt = restored.thermo();
      out.insert(out.end(), tt.begin(), tt.end());
      return out;
    });
    for (const auto& r : checks) {
      ASSERT_TRUE(r.error.empty()) << "stop at " << stop << ", " << r.ranks << " ranks: " << r.error;
      ASSERT_EQ(r.values.size(), want.size() + 3);
      EXPECT_EQ(r.values[0], static_cast<double>(stage)) << "stop at " << stop;
      EXPECT_EQ(r.values[2], 2.0) << "stop at " << stop;
      if (r.ranks == test::nranks()) {
        EXPECT_EQ(r.values[1], static_cast<double>(100 + iterations)) << "stop at " << stop;
        for (std::size_t k = 0; k < want.size(); ++k)
          EXPECT_EQ(r.values[k + 3], want[k]) << "stop at " << stop << ", column " << k << ": not bitwise";
      } else {
        // The minimiser may take another number of iterations on another rank count (rounding).
        EXPECT_GT(r.values[1], 110.0) << "stop at " << stop;
      }
    }
    test::report("minimisation stage: checkpoint at step " + std::to_string(stop) + " (stage " +
                 std::to_string(stage + 1) + ") resumed at " + std::to_string(checks.size()) + " rank counts");
  }
  // A stage that minimises takes no steps; one that does not needs them.
  std::string text = minimise_deck();
  text.insert(text.find("[run.stage.md.minimize]"), "steps = 10\n");
  const std::string steps = test::input_error([&] { read_deck(text); });
  EXPECT_NE(steps.find("'run.stage[1].steps': a stage that minimises ([run.stage.md.minimize]) takes no steps"),
            std::string::npos)
      << steps;
}
