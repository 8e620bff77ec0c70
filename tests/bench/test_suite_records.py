#!/usr/bin/python3
"""Unit tests of the benchmark suite's records (bench/suite_records.py), decks and command line
(bench/suite.py) that run no benchmark: statistics, the schema and honesty checks, the atomic results
file, the regression comparison, suite-deck errors and bad usage.

  /usr/bin/python3 tests/bench/test_suite_records.py
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import suite as suite_py  # noqa: E402
import suite_records as sr  # noqa: E402

BASE = {"ranks": 2, "git_hash": "abc", "build_flags": "Release", "kokkos_backend": "Serial", "device": "cpu",
        "host": "h", "date": "2026-11-30T00:00:00+00:00", "load": [0.1, 0.2, 0.3], "oversubscribed": False}


def record(name, samples, role="measurement", reference=None, unit="s/step", better="lower", size=4000, base=BASE,
           details=None):
    return sr.make_record(base, suite="x", name=name, role=role, program="p", metric="time", unit=unit, better=better,
                          samples=samples, size=size, size_unit="atoms", scaling="strong", command="cmd",
                          reference=reference, details=details)


def two_peers(old_samples, new_samples):
    """One measurement against two peers, as the LJ suite records it: the second record repeats its samples."""
    recs = []
    for samples in (old_samples, new_samples):
        peer = record("p", [1.0, 1.1, 1.2], role="peer")
        peer2 = record("p2", [0.8, 0.9, 1.0], role="peer")
        own = record("m", samples, reference=peer)
        recs.append([peer, own, peer2, record("m-vs-p2", samples, reference=peer2, details={"samples_of": own["id"]})])
    return recs


class Statistics(unittest.TestCase):
    def test_median_and_quartiles_by_hand(self):
        value, spread = sr.stats([4.0, 1.0, 3.0, 2.0, 5.0])
        self.assertEqual(value, 3.0)
        self.assertEqual(spread, {"min": 1.0, "q1": 2.0, "q3": 4.0, "max": 5.0})
        value, spread = sr.stats([1.0, 2.0, 10.0, 3.0])  # even count: mean of the middle two
        self.assertEqual(value, 2.5)
        self.assertEqual((spread["min"], spread["max"]), (1.0, 10.0))

    def test_no_samples(self):
        with self.assertRaises(ValueError):
            sr.stats([])


class Records(unittest.TestCase):
    def setUp(self):
        self.floor = record("f.floor", [1.0, 1.2, 1.1], role="floor")
        self.meas = record("f.step", [2.0, 2.6, 2.2], reference=self.floor)
        self.good = [self.floor, self.meas]

    def test_sound_records_pass(self):
        self.assertEqual(sr.check_records(self.good), [])
        self.assertAlmostEqual(self.meas["ratio"], 2.2 / 1.1, places=14)
        self.assertEqual(self.meas["id"], "f.step/strong/atoms=4000/np=2")
        self.assertEqual(self.meas["per_rank"], 2000)

    def bad(self, mutate, expected):
        recs = copy.deepcopy(self.good)
        mutate(recs)
        problems = sr.check_records(recs)
        self.assertTrue(any(expected in p for p in problems), f"expected '{expected}' in {problems}")

    def test_dishonest_ratio(self):
        self.bad(lambda r: r[1].update(ratio=r[1]["ratio"] * 1.01), "ratio")

    def test_reference_value_not_the_referenced_record(self):
        self.bad(lambda r: r[1]["reference"].update(value=1.0), "reference.value")

    def test_value_not_the_median(self):
        self.bad(lambda r: r[0].update(value=1.2), "not the median")

    def test_spread_not_from_samples(self):
        self.bad(lambda r: r[0]["spread"].update(max=9.0), "spread.max")

    def test_missing_field(self):
        self.bad(lambda r: r[0].pop("git_hash"), "'git_hash' missing")

    def test_wrong_type(self):
        self.bad(lambda r: r[0].update(ranks="2"), "'ranks' has type str")

    def test_unknown_field(self):
        self.bad(lambda r: r[0].update(colour="red"), "unknown field 'colour'")

    def test_too_few_repeats(self):
        recs = [record("a", [1.0, 2.0])]
        self.assertTrue(any("at least 3" in p for p in sr.check_records(recs)))

    def test_dangling_reference(self):
        self.bad(lambda r: r.pop(0), "is not a record of this file")

    def test_reference_of_another_rank_count(self):
        other = dict(BASE, ranks=1)
        floor1 = record("f.floor", [1.0, 1.2, 1.1], role="floor", base=other)
        meas = record("f.step", [2.0, 2.6, 2.2], reference=floor1)
        self.assertTrue(any("another size or rank count" in p for p in sr.check_records([floor1, meas])))

    def test_unit_mismatch_refused(self):
        with self.assertRaises(ValueError):
            record("m", [1.0, 1.0, 1.0], unit="s/transform", reference=self.floor)

    def test_duplicate_id(self):
        self.bad(lambda r: r.append(copy.deepcopy(r[0])), "duplicate id")

    def test_samples_of_a_second_reference(self):
        recs = two_peers([1.0, 1.1, 1.2], [1.0, 1.1, 1.2])[1]
        self.assertEqual(sr.check_records(recs), [])
        self.assertAlmostEqual(recs[3]["ratio"], 1.1 / 0.9, places=14)
        other = copy.deepcopy(recs)
        other[3]["samples"][0] = 1.05  # not the samples of the record it names (value and spread still agree)
        self.assertTrue(any("samples or role differ" in p for p in sr.check_records(other)), sr.check_records(other))
        other = copy.deepcopy(recs)
        other[3]["details"]["samples_of"] = "nosuch"
        self.assertTrue(any("not another record" in p for p in sr.check_records(other)))


class ResultsFile(unittest.TestCase):
    def test_every_add_leaves_a_whole_file_and_a_failed_write_keeps_the_last(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "results.json")
            f = sr.ResultsFile(path, {"command": "x"})
            f.add(record("a", [1.0, 2.0, 3.0]))
            with open(path) as fh:
                self.assertEqual(len(json.load(fh)["records"]), 1)
            with self.assertRaises(TypeError):
                f.add({"not json": object()})
            with open(path) as fh:
                self.assertEqual(len(json.load(fh)["records"]), 1)  # the file of the last good write
            self.assertEqual(sorted(os.listdir(d)), ["results.json"])  # no temporary file left


class Compare(unittest.TestCase):
    def run_compare(self, old_samples, new_samples, better="lower", role="measurement", threshold=0.10):
        unit = "s/step" if better == "lower" else "atom-steps/s"
        old = [record("m", old_samples, role=role, unit=unit, better=better)]
        new = [record("m", new_samples, role=role, unit=unit, better=better)]
        rows, regressions = sr.compare(old, new, threshold)
        self.assertEqual(len(rows), 1)
        return rows[0], regressions

    def test_slower_beyond_noise_and_threshold_is_a_regression(self):
        row, reg = self.run_compare([1.0, 1.02, 0.98], [1.5, 1.52, 1.48])
        self.assertEqual(len(reg), 1)
        self.assertAlmostEqual(row["slowdown"], 1.5)
        self.assertIn("REGRESSION", row["verdict"])

    def test_slower_but_within_the_spread_is_not(self):
        row, reg = self.run_compare([1.0, 1.5, 0.9], [1.3, 1.4, 1.2])  # 30 % slower, ranges overlap
        self.assertEqual(reg, [])
        self.assertFalse(row["significant"])
        self.assertIn("within noise", row["verdict"])

    def test_slower_apart_but_under_the_threshold_is_not(self):
        row, reg = self.run_compare([1.0, 1.01, 0.99], [1.05, 1.06, 1.04])
        self.assertEqual(reg, [])
        self.assertTrue(row["significant"])

    def test_throughput_direction(self):
        _, reg = self.run_compare([100.0, 101.0, 99.0], [50.0, 51.0, 49.0], better="higher")
        self.assertEqual(len(reg), 1)
        _, reg = self.run_compare([50.0, 51.0, 49.0], [100.0, 101.0, 99.0], better="higher")
        self.assertEqual(reg, [])

    def test_a_slower_floor_is_shown_not_flagged(self):
        row, reg = self.run_compare([1.0, 1.02, 0.98], [2.0, 2.1, 1.9], role="floor")
        self.assertEqual(reg, [])
        self.assertIn("not flagged", row["verdict"])

    def test_samples_of_another_record_judged_once(self):
        old, new = two_peers([1.0, 1.02, 0.98], [1.5, 1.52, 1.48])
        rows, reg = sr.compare(old, new, 0.10)
        self.assertEqual([r["new"]["name"] for r in reg], ["m"])  # the slowdown counted once
        row = next(r for r in rows if r["new"]["name"] == "m-vs-p2")
        self.assertFalse(row["regression"])
        self.assertIn("judged there", row["verdict"])

    def test_command_line_compare_of_two_files(self):
        with tempfile.TemporaryDirectory() as d:
            for name, samples in (("old", [1.0, 1.02, 0.98]), ("same", [1.01, 0.99, 1.0]), ("slow", [1.5, 1.52, 1.48])):
                with open(os.path.join(d, name + ".json"), "w") as f:
                    json.dump({"schema": sr.RESULTS_SCHEMA, "meta": {}, "records": [record("m", samples)]}, f)
            suite = os.path.join(ROOT, "bench", "suite.py")
            run = lambda new: subprocess.run([sys.executable, suite, "--compare", os.path.join(d, "old.json"),
                                              "--against", os.path.join(d, new + ".json")],
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            same, slow = run("same"), run("slow")
            self.assertEqual(same.returncode, 0, same.stdout)
            self.assertEqual(slow.returncode, 1, slow.stdout)
            self.assertIn("REGRESSION", slow.stdout)


class QuickBudget(unittest.TestCase):
    """report.md's duration per suite and the --quick budget check (bench/suite_report.py), on made-up
    durations: no benchmark runs, no timing is judged."""
    META = {"mode": "quick", "load_start": [3.1, 2.0, 1.0], "load_end": [4.0, 3.0, 2.0],
            "suite_seconds": {"lj": 80.0, "checkpoint": 250.0}, "suite_measurements": {"lj": 2, "checkpoint": 4},
            "quick_budget": {"total_s": 600.0, "shares": {"lj": 90.0, "checkpoint": 195.0}, "judged": True,
                             "not_judged_because": ""}}

    def test_a_suite_past_its_share_is_warned(self):
        import suite_report
        warnings = suite_report.budget_warnings(self.META)
        self.assertEqual(len(warnings), 1, warnings)
        self.assertIn("suite checkpoint took 4 min 10 s, past its share of the quick budget (3 min 15 s) by 55 s",
                      warnings[0])
        table = "\n".join(suite_report.durations_table(self.META))
        self.assertIn("| lj | 2 | 1 min 20 s | 1 min 30 s | within its share |", table)
        self.assertIn("| checkpoint | 4 | 4 min 10 s | 3 min 15 s | **past its share by 55 s** |", table)
        self.assertIn("| (all) | 6 | 5 min 30 s | 10 min 00 s | within its share |", table)
        self.assertIn("**Warning: suite checkpoint took", table)

    def test_the_whole_run_past_the_budget_is_warned(self):
        import suite_report
        meta = copy.deepcopy(self.META)
        meta["suite_seconds"] = {"lj": 85.0, "checkpoint": 190.0, "fft": 400.0}
        warnings = suite_report.budget_warnings(meta)
        self.assertEqual(len(warnings), 1, warnings)  # fft has no share: only the whole run's
        self.assertTrue(any("the whole --quick run took 11 min 15 s" in w for w in warnings), warnings)
        self.assertIn("no share", "\n".join(suite_report.durations_table(meta)))

    def test_not_judged_outside_quick(self):
        import suite_report
        for change, line in (({"mode": "full"}, "| checkpoint | 4 | 4 min 10 s |\n"),
                             ({"quick_budget": dict(self.META["quick_budget"], judged=False, not_judged_because="--size")},
                              "| checkpoint | 4 | 4 min 10 s | 3 min 15 s | not judged |")):
            meta = dict(self.META, **change)
            self.assertEqual(suite_report.budget_warnings(meta), [])
            table = "\n".join(suite_report.durations_table(meta)) + "\n"
            self.assertIn(line, table)
            self.assertNotIn("Warning", table)


class Charged(unittest.TestCase):
    """The charged suite's data file (write_charged_data) and its parser of spotrun's output."""

    def test_data_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = suite_py.write_charged_data(os.path.join(d, "c.data"), 500)
            with open(path) as f:
                text = f.read()
        lines = text.splitlines()
        self.assertIn("500 atoms", lines)
        self.assertIn("Atoms # charge", lines)
        a = lines.index("Atoms # charge") + 2
        atoms = [l.split() for l in lines[a:a + 500]]
        self.assertEqual([int(x[0]) for x in atoms], list(range(1, 501)))
        self.assertEqual([float(x[2]) for x in atoms], [1.0 if i % 2 else -1.0 for i in range(1, 501)])
        lo, hi = (float(x) for x in next(l for l in lines if l.endswith("xlo xhi")).split()[:2])
        self.assertAlmostEqual(500 / (hi - lo) ** 3, 0.8442, places=12)
        v0 = lines.index("Velocities") + 2
        vel = [[float(c) for c in l.split()[1:]] for l in lines[v0:v0 + 500]]
        for k in range(3):
            self.assertAlmostEqual(sum(v[k] for v in vel), 0.0, places=9)
        temp = sum(v[0] ** 2 + v[1] ** 2 + v[2] ** 2 for v in vel) / (3 * 500 - 3)
        self.assertAlmostEqual(temp, 1.0, places=9)

    def test_parse_kspace(self):
        out = ("Solver: long-range Coulomb: PPPM: g_ewald 1.1527468, mesh 90 x 90 x 96, order 5, estimated RMS force\n"
               "Loop time: 6.29259 s on 1 ranks for 50 steps\nTime Kspace: 5.47864 s (slowest rank)\n")
        self.assertEqual(suite_py.parse_spotrun_kspace(out, "x"), (6.29259, 5.47864, [90, 90, 96], 1.1527468))
        with self.assertRaises(suite_py.BenchFailure):
            suite_py.parse_spotrun_kspace(out.split("\n", 1)[1], "x")
        self.assertEqual([suite_py.charged_steps(n, m) for n, m in ((4000, "full"), (32000, "full"), (4000, "quick"),
                                                                     (500, "smoke"))],
                         [200, 100, suite_py.CHARGED_QUICK_STEPS, suite_py.CHARGED_SMOKE_STEPS])


class MinimizeAndNpt(unittest.TestCase):
    """The minimize suite's data file and the statistics lines of both programs; the report's count records."""

    def test_perturbed_data_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = suite_py.write_perturbed_fcc_data(os.path.join(d, "p.data"), 256, amplitude=0.05)
            with open(path) as f:
                lines = f.read().splitlines()
        length = float(next(l for l in lines if l.endswith("xlo xhi")).split()[1])
        atoms = [l.split() for l in lines[lines.index("Atoms # atomic") + 2:] if l.strip()]
        self.assertEqual(len(atoms), 256)
        self.assertIn("256 atoms", lines)
        a = (4.0 / 0.8442) ** (1.0 / 3.0)
        self.assertAlmostEqual(length, 4 * a, places=12)
        moved = [0.0, 0.0, 0.0]
        for row in atoms:
            x = [float(v) for v in row[2:5]]
            self.assertTrue(all(0.0 <= v < length for v in x), row)
            for k in range(3):  # the nearest lattice plane: within the amplitude (plus the mean removed)
                off = (x[k] / (a / 2)) % 1.0
                dev = min(off, 1.0 - off) * a / 2
                self.assertLessEqual(dev, 0.1 + 1e-12, row)
                moved[k] = max(moved[k], dev)
        self.assertGreater(min(moved), 0.02)  # displaced
        self.assertAlmostEqual(suite_py.fcc_lattice_energy(), -6.773368053252955, places=12)

    def test_parse_min_stats_of_both_programs(self):
        lammps = ("Minimization stats:\n  Stopping criterion = force tolerance\n"
                  "  Energy initial, next-to-last, final = \n     -6.68410178739783  -6.77336805325422  -6.77336805325492\n"
                  "  Iterations, force evaluations = 82 164\n")
        spotrun = ("Minimization stats (cg):\n  Stopping criterion = energy tolerance\n"
                   "  Energy initial, next-to-last, final = -4.9156495761817 -7.16393458298143 -7.16394161868719\n"
                   "  Iterations, force evaluations = 156 299\n")
        self.assertEqual(suite_py.parse_min_stats(lammps, "l"),
                         {"stop": "force tolerance", "iterations": 82, "evaluations": 164,
                          "energy_initial": -6.68410178739783, "energy_final": -6.77336805325492})
        st = suite_py.parse_min_stats(spotrun, "s")
        self.assertEqual((st["stop"], st["iterations"], st["evaluations"], st["energy_final"]),
                         ("energy tolerance", 156, 299, -7.16394161868719))
        with self.assertRaises(suite_py.BenchFailure):
            suite_py.parse_min_stats("Loop time: 1 s\n", "s")

    def test_count_records_in_the_report(self):
        import suite_report
        peer = sr.make_record(BASE, suite="minimize", name="minimize.lammps", role="peer", program="p", metric="count",
                              unit="evaluations", better="lower", samples=[164, 164, 164], size=4000,
                              size_unit="atoms", scaling="strong", command="c")
        own = sr.make_record(BASE, suite="minimize", name="minimize.spotrun", role="measurement", program="p",
                             metric="count", unit="evaluations", better="lower", samples=[150, 150, 150],
                             size=4000, size_unit="atoms", scaling="strong", command="c", reference=peer,
                             details={"target_ratio": suite_py.MINIMIZE_TARGET})
        text = "\n".join(suite_report.tables([peer, own], {}) + suite_report.targets_table([peer, own]))
        self.assertIn("| minimize.spotrun (measurement) | 4,000 | 2 | 150 |", text)
        self.assertIn("| 0.915 (0.91 - 0.91) | <= 1 | met |", text)
        self.assertNotIn("nan", text)
        self.assertAlmostEqual(suite_py.NPT_TARGET, 1 / 1.1)


class Decks(unittest.TestCase):
    def test_shipped_decks(self):
        suites = suite_py.load_suites()
        self.assertEqual(set(suites), {"lj", "lj-weak", "chain", "charged", "npt", "minimize", "fluid", "fluid-weak",
                                       "fft", "checkpoint", "halo", "halo-weak"})
        self.assertEqual((suites["npt"]["full"], suites["npt"]["quick"], suites["npt"]["smoke"]),
                         ([32000], [32000], [4000]))
        self.assertEqual((suites["minimize"]["full"], suites["minimize"]["quick"], suites["minimize"]["smoke"]),
                         ([4000], [4000], [4000]))
        self.assertEqual((suites["charged"]["full"], suites["charged"]["quick"], suites["charged"]["smoke"]),
                         ([4000, 32000], [4000], [864]))
        self.assertEqual(suites["lj"]["full"], [32000, 256000, 2048000])
        self.assertEqual((suites["chain"]["full"], suites["chain"]["smoke"]), ([32000], [1500]))
        self.assertEqual(suite_py.chain_data(1500), os.path.join(ROOT, "tests", "data", "kg-small.data"))
        self.assertEqual(suites["fluid"]["full"], [64, 128, 256])
        self.assertEqual(suites["checkpoint"]["full"], [256000, 2048000])
        self.assertEqual({s["scaling"] for s in suites.values()}, {"strong", "weak"})

    def test_quick_keeps_every_target_within_the_budget(self):
        # --quick: every shipped deck has a share of the budget, the shares fit in it, and every size with a
        # target in the full run is a quick size too (the same Targets table).
        suites = suite_py.load_suites()
        shares = {name: s["quick_budget"] for name, s in suites.items()}
        self.assertNotIn(None, shares.values(), shares)
        self.assertLessEqual(sum(shares.values()), suite_py.QUICK_BUDGET_S)
        for name, s in suites.items():
            self.assertLessEqual(set(s["targets"]), set(s["quick"]), name)
            self.assertLessEqual(set(s["quick"]), set(s["full"]), name)
        self.assertIn(min(suites["checkpoint"]["quick"]), suites["checkpoint"]["full"])

    def load(self, text):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mine.toml")
            with open(path, "w") as f:
                f.write(text)
            return suite_py.load_suite(path)

    def test_quick_budget_key(self):
        self.assertEqual(self.load(self.GOOD + "quick_budget = 90\n")["quick_budget"], 90.0)
        self.assertIsNone(self.load(self.GOOD)["quick_budget"])
        self.assertIn("quick_budget = 0", self.deck_error(self.GOOD + "quick_budget = 0\n"))
        self.assertIn("quick_budget = 'x'", self.deck_error(self.GOOD + "quick_budget = 'x'\n"))

    def deck_error(self, text):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mine.toml")
            with open(path, "w") as f:
                f.write(text)
            with self.assertRaises(suite_py.DeckError) as e:
                suite_py.load_suite(path)
            self.assertIn(path, str(e.exception))
            return str(e.exception)

    GOOD = 'title = "t"\nprogram = "lj"\nscaling = "strong"\nsizes = [32000]\nquick = [32000]\nsmoke = [4000]\n'

    def test_deck_errors_name_the_key_and_value(self):
        self.assertIn("unknown key 'size'", self.deck_error(self.GOOD + "size = 3\n"))
        self.assertIn("key 'smoke' missing", self.deck_error(self.GOOD.replace("smoke = [4000]\n", "")))
        self.assertIn("program = 'md'", self.deck_error(self.GOOD.replace('"lj"', '"md"')))
        self.assertIn("scaling = 'both'", self.deck_error(self.GOOD.replace('"strong"', '"both"')))
        self.assertIn("5000 atoms is not an fcc lattice", self.deck_error(self.GOOD.replace("[4000]", "[5000]")))
        self.assertIn("quick = []", self.deck_error(self.GOOD.replace("quick = [32000]", "quick = []")))
        self.assertIn("not valid TOML", self.deck_error("title = \n"))
        chain = self.GOOD.replace('"lj"', '"chain"').replace("[4000]", "[1500]")
        self.assertEqual(self.load(chain)["kind"], "chain")
        self.assertIn("4000 beads: the chain suite has data files of 32000 (data.chain), 1500 (kg-small.data) beads only",
                      self.deck_error(chain.replace("[1500]", "[4000]")))
        self.assertIn("scaling = 'weak': program chain", self.deck_error(chain.replace('"strong"', '"weak"')))
        charged = self.GOOD.replace('"lj"', '"charged"').replace("[4000]", "[500]")
        self.assertEqual(self.load(charged)["kind"], "charged")
        self.assertIn("5000 atoms is not an fcc lattice", self.deck_error(charged.replace("[500]", "[5000]")))
        self.assertIn("program charged is strong scaling only", self.deck_error(charged.replace('"strong"', '"weak"')))
        for kind in ("npt", "minimize"):
            deck = self.GOOD.replace('"lj"', f'"{kind}"')
            self.assertEqual(self.load(deck)["kind"], kind)
            self.assertIn("5000 atoms is not an fcc lattice", self.deck_error(deck.replace("[4000]", "[5000]")))
            self.assertIn(f"program {kind} is strong scaling only", self.deck_error(deck.replace('"strong"', '"weak"')))

    def test_bad_usage_exits_2(self):
        suite = os.path.join(ROOT, "bench", "suite.py")
        for argv, text in ((["nosuch"], "unknown suite 'nosuch'"), (["--ranks", "0"], "--ranks"),
                           (["--repeat", "0"], "--repeat"), (["--quick", "--smoke"], "not allowed"),
                           (["lj", "--size", "5000"], "not an fcc lattice"),
                           (["chain", "--size", "4000"], "data files of 32000"),
                           (["charged", "--size", "5000"], "not an fcc lattice"),
                           (["npt", "--size", "5000"], "not an fcc lattice"),
                           (["minimize", "--size", "5000"], "not an fcc lattice"),
                           (["lj", "--build", "/nonexistent"], "not found: build it")):
            r = subprocess.run([sys.executable, suite] + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(r.returncode, 2, f"{argv}: {r.stdout}")
            self.assertIn(text, r.stdout, argv)


if __name__ == "__main__":
    unittest.main()
