#!/usr/bin/python3
"""spotrun benchmark suite: strong and weak scaling, with peers and floors measured in the same run.

Usage:
  bench/suite.py [SUITE...] [--ranks 1,2,4] [--quick | --smoke] [--size N] [--repeat N] [--out DIR]
                 [--compare OLD.json] [--threshold 0.10] [--no-peers] [--no-opt] [--build DIR] [--scratch DIR]
  bench/suite.py --compare OLD.json --against NEW.json     compare two results files, run nothing
  bench/suite.py --report RESULTS.json [--out DIR]          remake report.md and the plots of a results file

Suites are the decks in bench/suite/ (SUITE: a deck's name, or a path to a .toml deck; default: every
deck there), each run at every rank count of --ranks (default: 1, 2, 4, ... up to the cores). A deck holds
title, program, scaling (strong: fixed size; weak: fixed size per rank) and the sizes of the full,
--quick and --smoke runs (see bench/README.md). The decks shipped:
  lj          LJ melt (bench/lj-bench.toml, LAMMPS in.lj) at 32k, 256k, 2M atoms (strong), spotrun
              `run` in double and in mixed precision (md.precision) against LAMMPS `lmp` and `lmp -sf opt`
              (its OPT package; two peers) when installed: atom-steps/s, their ratios and the targets of
              the ratios (LJ_TARGETS); from two ranks the Comm share of the loop (lj.comm_share) against
              the same run without the halo overlap (md.halo_overlap = false), target COMM_SHARE_TARGET
  lj-weak     the same at 32k atoms per rank (weak)
  chain       FENE bead-spring polymer melt, LAMMPS in.chain in NVE (bench/chain-bench.toml and
              bench/lammps/in.chain), 32k beads from in.chain's data file (Debian lammps-examples; smoke: 1,500
              beads, tests/data/kg-small.data), 100 steps (strong), spotrun `run` against LAMMPS `lmp` and
              `lmp -sf opt`: atom-steps/s, their ratios and the target CHAIN_TARGETS; the bonded terms' share
              of spotrun's loop (its summary's Time Bond over Loop time: chain.bond_time against
              chain.loop_time), target at most BOND_SHARE_TARGET
  charged     charged LJ fluid with long-range Coulomb (issue 40; bench/charged-bench.toml and
              bench/lammps/in.charged): fcc 0.8442, charges +1 / -1 alternating, lj/cut 2.5 + Coulomb
              real space 3.0, PPPM 1e-5, NVE, from a data file the suite writes into its scratch directory
              (write_charged_data) and both programs read, at 4k and 32k atoms (smoke: 864), 200 / 100 steps
              (--quick: CHARGED_QUICK_STEPS), spotrun `run` against LAMMPS `lmp` (no -sf opt peer):
              atom-steps/s, their ratio and the target CHARGED_TARGETS; spotrun's k-space time per
              computation (its summary's Time Kspace, slowest rank, over steps + 1: the setup's computation is
              in it) against its FFT floor, the transforms PPPM makes per step (1 r2c and the gradient,
              DistributedFft::backward_gradient, of the mesh spotrun chose, parsed from its output) timed alone
              on the same ranks (bench_fluid --pppm-mesh, FLOOR_ROUNDS rounds right after each spotrun run,
              in the same state of the machine), target at most KSPACE_FLOOR_TARGET; beside it in the
              same rounds 1 r2c + 3 c2r (charged.fft_three_c2r, the floor's reference: what the gradient saves,
              reported); the k-space share of the loop (charged.kspace_share against charged.loop_time, reported)
  npt         the LJ melt of lj (bench/lj-bench.toml) at 32k atoms (smoke: 4k; strong), 100 steps under the
              Nose-Hoover thermostat (md.ensemble = "nvt", T 0.72, damp 0.5) and the same with the barostat
              (md.ensemble = "npt", p 1.0, pressure_damp 5.0), each repetition a run of each: NPT atom-steps/s
              against NVT's (npt.spotrun against npt.nvt, the same program), target NPT_TARGET (the NPT step
              within 1.1 x the NVT step); with LAMMPS, fix npt against fix nvt (npt.lammps against
              npt.lammps-nvt, bench/lammps/in.lj-npt) and spotrun's NPT against LAMMPS's (npt.spotrun-vs-lammps)
  minimize    cg energy minimisation ([md.minimize], bench/minimize-bench.toml) of a perturbed fcc crystal of 4k
              atoms (write_perturbed_fcc_data: displacements up to MIN_DISPLACEMENT; ftol MIN_FTOL, etol 0)
              against LAMMPS min_style cg and minimize on the same data file (bench/lammps/in.minimize): the
              force evaluations of each (minimize.spotrun against minimize.lammps, their summaries' "Iterations,
              force evaluations" lines), target MINIMIZE_TARGET (no more than LAMMPS's); the minimisation's loop
              time against LAMMPS's (minimize.time, reported)
  fluid       Taylor-Green RK4 step at 64^3, 128^3, 256^3 (strong) against its FFT floor, 36 of spotrun's
              unpruned distributed transforms of the grid measured in the same run (bench_fluid), with
              the targets of the deck (a "Targets" table in the report)
  fluid-weak  the same at 64^3 points per rank (grids 64 x a, 64 x b, 64 x c)
  fft         spotrun's distributed FFT alone against raw FFTW(-MPI) of the same grid (bench_fluid --fft-only)
  checkpoint  checkpoint write and read at 256k and 2M atoms against a raw write / read of the same bytes
              (bench_checkpoint); the read also against a raw read into newly allocated memory; the level
              set (node files in /dev/shm) against the shared write, written synchronously and in the
              background (checkpoint.async: the loop's blocking time, and a step during the background
              write against one after it); where rclone is installed, the set flushed to a durable tier at
              nice 19 (a step during the flush against one after it)
  halo        the MD halo update alone and the integrate step at 32k, 256k, 2M atoms, against their
              memory-bandwidth floors (bench_halo)
  halo-weak   the same at 32k atoms per rank
--quick runs each deck's quick sizes, --smoke its smoke sizes (tiny: the tests). --size N replaces every
chosen suite's sizes with N (atoms, beads of a chain data file, or n for an n^3 grid; per rank for the weak
suites).

--quick has a budget of 10 minutes on 2 cores (ranks 1 and 2; QUICK_BUDGET_S), each suite a share (its
deck's quick_budget); report.md gives each suite's measured duration and warns when one ran past its
share. It keeps every peer, floor and target of the full run, and drops: lj at 256k atoms (full run only),
charged at 32k atoms (and 180 of the 200 steps at 4k), and the checkpoint suite's durable flush at 2M
atoms; the flush at 256k atoms keeps rclone at nice 19 and times the steps over at most its first
QUICK_DURABLE_WINDOW_S (10) seconds, then cancels it, and the steps beside each background write are timed
over at most its first QUICK_ASYNC_WINDOW_S (5) (bench/README.md).
Measured 2026-12-04 (git 12d21f1): 10 min 52 s for the whole --quick run on a 2-core machine with other
builds and tests running beside it (load average 8-13; docs/performance.md); on the idle machine twice
(git 9135b6f): 4 min 14 s and 4 min 09 s, every suite within its share.

Each measurement is repeated --repeat times (default 3): its median and spread (min, quartiles, max) are
recorded. Output in --out DIR (default runs/bench/<date>-<time>): results.json (every record, rewritten
through a temporary file and a rename after each one), report.md (the tables), throughput.png,
peer_ratio.png, floor_fraction.png, summary.txt (one line per record, read by bench/jube/spotrun.xml) and
logs/ (every program's output).

--compare OLD.json compares the new records with OLD's (matched by id) and exits 1 when a measurement of
spotrun's own got slower by more than --threshold (default 0.10) AND its new range of samples [min, max]
lies entirely on the slow side of the old range (see suite_records.compare).

Exit codes: 0 done (no regression), 1 regression, 2 bad usage, 3 a benchmark program failed (the records
before it are kept).

--no-peers runs no LAMMPS; --no-opt runs plain LAMMPS only, without its `-sf opt` peer.

Environment: MPIRUN (default mpirun), LMP (default lmp; the LAMMPS peers run only when found), CHAIN_DATA (the
chain suite's 32k-bead data file; default /usr/share/lammps/examples/COUPLE/multiple/data.chain),
SPOTRUN_TEST_FORCE_SLOWDOWN is passed to the programs (a test hook of spotrun-test, the program of
--spotrun in the regression test: tests/support/spotrun_test_main.cpp; spotrun itself ignores it).
"""
import argparse
import datetime
import json
import math
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite_records as sr  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LJ_DECK = os.path.join(ROOT, "bench", "lj-bench.toml")
LMP_INPUT = os.path.join(ROOT, "bench", "lammps", "in.lj")
CHAIN_DECK = os.path.join(ROOT, "bench", "chain-bench.toml")
LMP_CHAIN_INPUT = os.path.join(ROOT, "bench", "lammps", "in.chain")
CHARGED_DECK = os.path.join(ROOT, "bench", "charged-bench.toml")
LMP_CHARGED_INPUT = os.path.join(ROOT, "bench", "lammps", "in.charged")
LMP_NPT_INPUT = os.path.join(ROOT, "bench", "lammps", "in.lj-npt")
MINIMIZE_DECK = os.path.join(ROOT, "bench", "minimize-bench.toml")
LMP_MINIMIZE_INPUT = os.path.join(ROOT, "bench", "lammps", "in.minimize")
# The chain suite's data file of each size (beads): in.chain's own (Debian lammps-examples; the environment's
# CHAIN_DATA names another copy), and for the smoke run the 1,500-bead melt cut from it (tests/data/README.md).
CHAIN_DATA = {32000: os.path.abspath(os.environ.get("CHAIN_DATA") or
                                     "/usr/share/lammps/examples/COUPLE/multiple/data.chain"),
              1500: os.path.join(ROOT, "tests", "data", "kg-small.data")}

SUITE_DIR = os.path.join(ROOT, "bench", "suite")
PROGRAMS = ("lj", "chain", "charged", "npt", "minimize", "fluid", "fft", "checkpoint", "halo")
# deck key -> what it holds (all required)
DECK_KEYS = {
    "title": "a string, the report's heading",
    "program": "one of " + ", ".join(PROGRAMS),
    "scaling": "strong (fixed total size) or weak (fixed size per rank)",
    "sizes": "sizes of the full suite: atoms (lj, charged, npt, minimize, checkpoint, halo: 4 c^3), beads (chain: " + ", ".join(map(str, CHAIN_DATA)) +
             ") or n of an n^3 grid (fluid, fft); per rank when weak",
    "quick": "sizes of --quick",
    "smoke": "sizes of --smoke",
}
# optional deck key -> what it holds
OPTIONAL_DECK_KEYS = {
    "targets": "a table size -> the largest ratio to the floor that meets the target (fluid), e.g. { 64 = 1.3 }",
    "quick_budget": "seconds: the suite's share of the --quick budget (QUICK_BUDGET_S on 2 cores); report.md warns "
                    "when a --quick run of the suite took longer",
}
PASSED_ENV = ("SPOTRUN_TEST_FORCE_SLOWDOWN",)
# The programs whose sizes are atoms of an fcc lattice of c^3 unit cells (4 c^3).
LATTICE_KINDS = ("lj", "halo", "charged", "npt", "minimize")
# The programs that run spotrun run (and LAMMPS as a peer where installed).
SPOTRUN_KINDS = ("lj", "chain", "charged", "npt", "minimize")
FFTS_PER_STEP = 36


class BenchFailure(Exception):
    pass


def fmt_duration(s):
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def factor3(r):
    """r = a * b * c with the most cubic (a, b, c), largest first."""
    best = None
    for a in range(1, r + 1):
        if r % a:
            continue
        for b in range(1, r // a + 1):
            if (r // a) % b:
                continue
            c = r // a // b
            key = (max(a, b, c) - min(a, b, c), -min(a, b, c))
            if best is None or key < best[0]:
                best = (key, tuple(sorted((a, b, c), reverse=True)))
    return best[1]


def lj_cells(atoms):
    c = round((atoms / 4) ** (1 / 3))
    if 4 * c ** 3 != atoms:
        raise ValueError(f"{atoms} atoms is not an fcc lattice of c^3 unit cells (4 c^3 atoms: 4000, 32000, 108000, "
                         f"256000, 2048000, ...)")
    return c


def chain_data(beads):
    """The data file of the chain suite's size (beads), or ValueError."""
    if beads not in CHAIN_DATA:
        raise ValueError(f"{beads} beads: the chain suite has data files of " +
                         ", ".join(f"{n} ({os.path.basename(f)})" for n, f in CHAIN_DATA.items()) + " beads only")
    return CHAIN_DATA[beads]


def write_charged_data(path, atoms, density=0.8442, temperature=1.0, seed=87287):
    """The charged suite's system as a LAMMPS data file (atom_style charge), written to path: the fcc lattice
    of 4 c^3 atoms at the LJ density (LAMMPS lattice fcc 0.8442), one atom type of mass 1, charges +1 and -1
    alternating by atom id (the four sites of a unit cell +, -, +, -: neutral), velocities from a Gaussian of
    the seed (Python's random), the total momentum removed and scaled to the temperature with 3N - 3 degrees of
    freedom (as LAMMPS velocity create). The same file for spotrun and LAMMPS: no lattice start of either
    program carries charges."""
    c = lj_cells(atoms)
    a = (4.0 / density) ** (1.0 / 3.0)
    length = c * a
    basis = ((0.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.5, 0.0, 0.5), (0.0, 0.5, 0.5))
    rng = random.Random(seed)
    v = [[rng.gauss(0.0, 1.0) for _ in range(3)] for _ in range(atoms)]
    mean = [sum(x[d] for x in v) / atoms for d in range(3)]
    v = [[x[d] - mean[d] for d in range(3)] for x in v]
    scale = math.sqrt(temperature * (3 * atoms - 3) / sum(x[0] ** 2 + x[1] ** 2 + x[2] ** 2 for x in v))
    lines = [f"LAMMPS data file: charged LJ fluid, fcc {density} of {c}^3 cells, charges +1/-1 alternating, "
             f"T {temperature} (bench/suite.py write_charged_data)", "", f"{atoms} atoms", "1 atom types", "",
             f"0 {length:.16g} xlo xhi", f"0 {length:.16g} ylo yhi", f"0 {length:.16g} zlo zhi", "",
             "Masses", "", "1 1", "", "Atoms # charge", ""]
    i = 0
    for ix in range(c):
        for iy in range(c):
            for iz in range(c):
                for b in basis:
                    i += 1
                    lines.append(f"{i} 1 {1 if i % 2 else -1} {(ix + b[0]) * a:.16g} {(iy + b[1]) * a:.16g} "
                                 f"{(iz + b[2]) * a:.16g}")
    lines += ["", "Velocities", ""]
    lines += [f"{j + 1} {x[0] * scale:.16g} {x[1] * scale:.16g} {x[2] * scale:.16g}" for j, x in enumerate(v)]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def write_perturbed_fcc_data(path, atoms, amplitude=None, density=0.8442, seed=87287):
    """The minimize suite's system as a LAMMPS data file (atom_style atomic), written to path: the fcc lattice of
    4 c^3 atoms at the LJ density (LAMMPS lattice fcc 0.8442; ids as spotrun's [md.lattice] numbers them), one
    atom type of mass 1, every coordinate displaced by a uniform random number in [-amplitude, amplitude]
    (MIN_DISPLACEMENT; Python's random with the seed), the mean displacement removed (the minimum is then the
    perfect crystal where it was), positions wrapped into the box, no velocities. The same file for spotrun and
    LAMMPS: spotrun's lattice start has no displacement."""
    amplitude = MIN_DISPLACEMENT if amplitude is None else amplitude
    c = lj_cells(atoms)
    a = (4.0 / density) ** (1.0 / 3.0)
    length = c * a
    basis = ((0.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.5, 0.0, 0.5), (0.0, 0.5, 0.5))
    rng = random.Random(seed)
    d = [[rng.uniform(-amplitude, amplitude) for _ in range(3)] for _ in range(atoms)]
    mean = [sum(x[k] for x in d) / atoms for k in range(3)]

    def wrap(x):
        x %= length
        return 0.0 if x >= length else x

    lines = [f"LAMMPS data file: fcc {density} of {c}^3 cells, coordinates displaced by up to {amplitude:g} "
             f"(bench/suite.py write_perturbed_fcc_data)", "", f"{atoms} atoms", "1 atom types", "",
             f"0 {length:.16g} xlo xhi", f"0 {length:.16g} ylo yhi", f"0 {length:.16g} zlo zhi", "",
             "Masses", "", "1 1", "", "Atoms # atomic", ""]
    i = 0
    for iz in range(c):
        for iy in range(c):
            for ix in range(c):
                for b in basis:
                    x = [wrap((n + b[k]) * a + d[i][k] - mean[k]) for k, n in enumerate((ix, iy, iz))]
                    i += 1
                    lines.append(f"{i} 1 {x[0]:.16g} {x[1]:.16g} {x[2]:.16g}")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def fcc_lattice_energy(density=0.8442, cutoff=2.5):
    """The energy per atom of the perfect fcc LJ crystal (epsilon = sigma = 1, unshifted, cut at cutoff): the
    minimum the minimize suite's crystal goes back to (tests/test_md_minimize.cpp computes it the same way)."""
    a = (4.0 / density) ** (1.0 / 3.0)
    basis = ((0.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.5, 0.0, 0.5), (0.0, 0.5, 0.5))
    n = int(math.ceil(cutoff / a)) + 1
    e = 0.0
    for i in range(-n, n + 1):
        for j in range(-n, n + 1):
            for k in range(-n, n + 1):
                for b in basis:
                    r2 = (a * (i + b[0])) ** 2 + (a * (j + b[1])) ** 2 + (a * (k + b[2])) ** 2
                    if r2 == 0 or r2 >= cutoff * cutoff:
                        continue
                    s6 = 1.0 / (r2 * r2 * r2)
                    e += 0.5 * 4.0 * (s6 * s6 - s6)
    return e


class DeckError(Exception):
    pass


def load_suite(path):
    """A suite deck (bench/suite/NAME.toml, keys in DECK_KEYS) as a spec; DeckError names the file, key and
    value and what is allowed."""
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise DeckError(f"{path}: cannot read the suite deck: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise DeckError(f"{path}: not valid TOML: {e}")
    for key in data:
        if key not in DECK_KEYS and key not in OPTIONAL_DECK_KEYS:
            raise DeckError(f"{path}: unknown key '{key}' (allowed: {', '.join(list(DECK_KEYS) + list(OPTIONAL_DECK_KEYS))})")
    for key, meaning in DECK_KEYS.items():
        if key not in data:
            raise DeckError(f"{path}: key '{key}' missing ({meaning})")
    if not isinstance(data["title"], str):
        raise DeckError(f"{path}: title = {data['title']!r}: must be a string")
    if data["program"] not in PROGRAMS:
        raise DeckError(f"{path}: program = {data['program']!r}: allowed {', '.join(PROGRAMS)}")
    if data["scaling"] not in ("strong", "weak"):
        raise DeckError(f"{path}: scaling = {data['scaling']!r}: allowed strong, weak")
    for key in ("sizes", "quick", "smoke"):
        v = data[key]
        if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 2 for x in v):
            raise DeckError(f"{path}: {key} = {v!r}: must be a non-empty list of integers >= 2")
        if data["program"] in LATTICE_KINDS:
            for x in v:
                try:
                    lj_cells(x)
                except ValueError as e:
                    raise DeckError(f"{path}: {key}: {e}")
        if data["program"] == "chain":
            for x in v:
                try:
                    chain_data(x)
                except ValueError as e:
                    raise DeckError(f"{path}: {key}: {e}")
    if data["program"] in ("charged", "npt", "minimize") and data["scaling"] != "strong":
        raise DeckError(f"{path}: scaling = {data['scaling']!r}: program {data['program']} is strong scaling only")
    if data["program"] == "chain" and data["scaling"] != "strong":
        raise DeckError(f"{path}: scaling = {data['scaling']!r}: program chain runs its data files as they are "
                        f"(strong only)")
    targets = {}
    if "targets" in data:
        t = data["targets"]
        if data["program"] != "fluid" or not isinstance(t, dict):
            raise DeckError(f"{path}: targets = {t!r}: a table size -> ratio, for program fluid only")
        for k, v in t.items():
            if not k.isdigit() or int(k) < 2 or isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise DeckError(f"{path}: targets: {k} = {v!r}: the key must be a size >= 2, the value a ratio > 0")
            targets[int(k)] = float(v)
    budget = data.get("quick_budget")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0):
        raise DeckError(f"{path}: quick_budget = {budget!r}: must be a number of seconds > 0")
    return dict(name=name, path=path, title=data["title"], kind=data["program"], scaling=data["scaling"],
                full=data["sizes"], quick=data["quick"], smoke=data["smoke"], targets=targets,
                quick_budget=None if budget is None else float(budget))


def load_suites(directory=SUITE_DIR):
    """Every suite deck of the directory, by name (the file name without .toml), in name order."""
    try:
        files = sorted((f for f in os.listdir(directory) if f.endswith(".toml")), key=lambda f: f[:-5])
    except OSError as e:
        raise DeckError(f"{directory}: cannot list the suite decks: {e.strerror}")
    return {os.path.splitext(f)[0]: load_suite(os.path.join(directory, f)) for f in files}


# --- machine, build and program discovery -----------------------------------------------------------------
def read_cmake_cache(build):
    cache = {}
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                m = re.match(r"^([A-Za-z0-9_]+):[A-Z]+=(.*)$", line.rstrip("\n"))
                if m:
                    cache[m.group(1)] = m.group(2)
    except OSError:
        pass
    return cache


def capture(cmd, **kw):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60, **kw).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_meta(build, spotrun):
    cache = read_cmake_cache(build)
    btype = cache.get("CMAKE_BUILD_TYPE", "?")
    compiler = os.path.basename(cache.get("CMAKE_CXX_COMPILER", "c++"))
    version = capture([cache.get("CMAKE_CXX_COMPILER", "c++"), "-dumpfullversion"]).strip()
    flags = " ".join(x for x in (cache.get("CMAKE_CXX_FLAGS", ""), cache.get(f"CMAKE_CXX_FLAGS_{btype.upper()}", "")) if x)
    build_flags = f"{btype}; {compiler} {version}; {flags}".strip()
    git = capture(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"]).strip() or "unknown"
    if capture(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).strip():
        git += "-dirty"
    info = capture([spotrun, "info"])
    m = re.search(r"Kokkos ([0-9.]+), execution space (\w+)", info)
    kokkos = f"{m.group(2)} (Kokkos {m.group(1)})" if m else "unknown"
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 1048576:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    # spotrun info: "  rank 0: host vm, local rank 0, no GPU (CPU build)" or the GPU's name.
    ranks = re.findall(r"^\s*rank \d+: host [^,]*, local rank \d+, (.*)$", info, re.M)
    gpu = ranks[0] if ranks else "GPU unknown"
    device = f"{cpu} ({os.cpu_count()} cores{mem}), {gpu}"
    return {"git_hash": git, "build_flags": build_flags, "kokkos_backend": kokkos, "device": device,
            "host": socket.gethostname()}


def find_lammps():
    lmp = os.environ.get("LMP", "lmp")
    path = shutil.which(lmp)
    return path


# --- running programs ---------------------------------------------------------------------------------------
class Runner:
    def __init__(self, logdir, mpirun):
        self.logdir = logdir
        self.mpirun = mpirun
        self.count = 0
        self.is_openmpi = "Open MPI" in capture([mpirun, "--version"])

    def mpi_argv(self, np, argv):
        cmd = [self.mpirun]
        if self.is_openmpi:
            cmd += ["--oversubscribe"]
            if os.geteuid() == 0:
                cmd += ["--allow-run-as-root"]
            for var in PASSED_ENV:
                if var in os.environ:
                    cmd += ["-x", var]
        return cmd + ["-np", str(np)] + [str(a) for a in argv]

    def run(self, label, np, argv, cwd=None, timeout=3600):
        cmd = self.mpi_argv(np, argv)
        self.count += 1
        log = os.path.join(self.logdir, f"{self.count:04d}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', label)}.log")
        env = dict(os.environ)
        if self.is_openmpi:
            env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        t0 = time.time()
        try:
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env,
                                 timeout=timeout)
            out, rc = res.stdout, res.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
        with open(log, "w") as f:
            f.write("$ " + " ".join(cmd) + "\n" + out + f"\n# exit {rc}, {time.time() - t0:.2f} s\n")
        if rc != 0:
            tail = "\n".join(out.splitlines()[-15:])
            raise BenchFailure(f"{label}: exit {rc} ({' '.join(cmd)}); log {log}:\n{tail}")
        return out, " ".join(cmd)


def parse_samples(out, label):
    """The SAMPLES {json} lines of a bench program, by quantity."""
    found = {}
    for line in out.splitlines():
        if line.startswith("SAMPLES "):
            d = json.loads(line[len("SAMPLES "):])
            found[d["quantity"]] = d
    if not found:
        raise BenchFailure(f"{label}: no SAMPLES lines in the output")
    return found


def spotrun_text(out, outdir):
    """What spotrun run said: its terminal output, then OUTDIR/spotrun.log where the run writes one (the
    summary lines may go there rather than to the terminal; `--verbose` brings them back, and the suite passes
    it where `spotrun run --help` offers it). The parsers below take the last match, so the log, read last,
    decides where both hold a line."""
    log = os.path.join(outdir, "spotrun.log")
    try:
        with open(log, errors="replace") as f:
            return out + "\n" + f.read()
    except OSError:
        return out


def spotrun_progress_rate(outdir):
    """OUTDIR/progress.json's work_per_second of a finished run (atom-steps/s for MD: the same loop time and
    work as the summary's Performance line), or None."""
    try:
        with open(os.path.join(outdir, "progress.json")) as f:
            d = json.load(f)
        if d.get("finished") and d.get("work_unit") == "atom-steps/s" and d.get("work_per_second", 0) > 0:
            return float(d["work_per_second"])
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    return None


def parse_spotrun_comm_share(out, label):
    """Comm time of the slowest rank over the loop time, from spotrun run's summary."""
    loop = re.findall(r"Loop time:\s*([0-9.eE+-]+)\s*s", out)
    comm = re.findall(r"Time Comm:\s*([0-9.eE+-]+)\s*s", out)
    if not loop or not comm:
        raise BenchFailure(f"{label}: no 'Loop time' or 'Time Comm' line")
    return float(comm[-1]) / float(loop[-1])


def parse_spotrun_bond_time(out, label):
    """Loop time and the bonded terms' time (Time Bond, slowest rank) of spotrun run's summary, in seconds; the
    Bond line is there when the system has bonds, angles or dihedrals."""
    loop = re.findall(r"Loop time:\s*([0-9.eE+-]+)\s*s", out)
    bond = re.findall(r"Time Bond:\s*([0-9.eE+-]+)\s*s", out)
    if not loop or not bond:
        raise BenchFailure(f"{label}: no 'Loop time' or 'Time Bond' line")
    return float(loop[-1]), float(bond[-1])


def parse_spotrun_kspace(out, label):
    """Loop time, Time Kspace (slowest rank; it holds the setup's k-space computation as well as the loop's) and
    the PPPM mesh spotrun chose (its 'PPPM: g_ewald G, mesh A x B x C' line, spotrun.log or --verbose) of
    spotrun run's output: (loop s, kspace s, [a, b, c], g_ewald)."""
    loop = re.findall(r"Loop time:\s*([0-9.eE+-]+)\s*s", out)
    kspace = re.findall(r"Time Kspace:\s*([0-9.eE+-]+)\s*s", out)
    mesh = re.findall(r"PPPM: g_ewald ([0-9.eE+-]+), mesh (\d+) x (\d+) x (\d+)", out)
    if not loop or not kspace:
        raise BenchFailure(f"{label}: no 'Loop time' or 'Time Kspace' line")
    if not mesh:
        raise BenchFailure(f"{label}: no 'PPPM: g_ewald ..., mesh A x B x C' line (spotrun.log, --verbose)")
    g, *n = mesh[-1]
    return float(loop[-1]), float(kspace[-1]), [int(x) for x in n], float(g)


def parse_spotrun_rate(out, label, progress_rate=None):
    """The summary's Performance line; without one, OUTDIR/progress.json's rate (progress_rate)."""
    m = re.findall(r"Performance:\s*([0-9.eE+-]+)\s*atom-steps/s", out)
    if not m:
        if progress_rate:
            return progress_rate
        raise BenchFailure(f"{label}: no 'Performance: ... atom-steps/s' line (terminal, OUTDIR/spotrun.log) and no "
                           f"finished OUTDIR/progress.json")
    return float(m[-1])


def parse_lammps_rate(out, label):
    m = re.findall(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", out)
    if not m:
        raise BenchFailure(f"{label}: no 'Loop time of ...' line in the LAMMPS output")
    t, _, steps, atoms = m[-1]
    return int(atoms) * int(steps) / float(t)


def parse_min_stats(out, label):
    """The minimisation statistics of spotrun run's summary or of LAMMPS's output (the same lines: LAMMPS puts the
    energies on the line after their label): {"stop", "iterations", "evaluations", "energy_initial",
    "energy_final"}, the last block of the output."""
    evals = re.findall(r"Iterations, force evaluations = (\d+) (\d+)", out)
    stop = re.findall(r"Stopping criterion = (.+?)\s*$", out, re.M)
    energy = re.findall(r"Energy initial, next-to-last, final =\s*([0-9.eE+-]+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)", out)
    if not evals or not stop or not energy:
        raise BenchFailure(f"{label}: no minimisation statistics ('Stopping criterion', 'Energy initial, next-to-last, "
                           f"final', 'Iterations, force evaluations')")
    return {"stop": stop[-1], "iterations": int(evals[-1][0]), "evaluations": int(evals[-1][1]),
            "energy_initial": float(energy[-1][0]), "energy_final": float(energy[-1][2])}


def parse_spotrun_loop_time(out, label):
    m = re.findall(r"Loop time:\s*([0-9.eE+-]+)\s*s", out)
    if not m:
        raise BenchFailure(f"{label}: no 'Loop time' line")
    return float(m[-1])


def parse_lammps_loop_time(out, label):
    m = re.findall(r"Loop time of ([0-9.eE+-]+) on", out)
    if not m:
        raise BenchFailure(f"{label}: no 'Loop time of ...' line in the LAMMPS output")
    return float(m[-1])


def parse_neighbor_builds(out):
    """'Neighbor list builds = N' (spotrun's summary and LAMMPS's), or None."""
    m = re.findall(r"Neighbor list builds = (\d+)", out)
    return int(m[-1]) if m else None


# --- the plan -------------------------------------------------------------------------------------------------
class Task:
    def __init__(self, suite, kind, scaling, size, ranks, cost, label):
        self.suite, self.kind, self.scaling, self.size, self.ranks, self.cost, self.label = (
            suite, kind, scaling, size, ranks, cost, label)


# The targets of the LJ strong-scaling ratios (on the CPUs of the suite's machine, peers in the same
# run): record name -> the least ratio to its reference. report.md says for each whether it is met.
LJ_TARGETS = {"lj.spotrun": 2.0, "lj.spotrun-mixed": 3.0, "lj.spotrun-mixed-vs-opt": 2.5}
# The same for the chain suite (in.chain in NVE against LAMMPS, in the same run).
CHAIN_TARGETS = {"chain.spotrun": 1.5}
# The chain suite: the bonded terms' share of spotrun's loop (its summary's Time Bond, slowest rank, over the
# Loop time of the same run; chain.bond_time against chain.loop_time) at most this.
BOND_SHARE_TARGET = 0.15
# The chain suite's steps (in.chain's run 100): 26 neighbour list builds at 32,000 beads.
CHAIN_STEPS = 100
# The charged suite (issue 40): spotrun's loop throughput at least this ratio to LAMMPS's (same run), and its
# k-space time per computation at most KSPACE_FLOOR_TARGET x its FFT floor (the transforms of the PPPM mesh per
# step, 1 r2c + the gradient, bench_fluid --pppm-mesh, same mesh and ranks).
CHARGED_TARGETS = {"charged.spotrun": 1.5}
KSPACE_FLOOR_TARGET = 1.3
# Rounds of the k-space floor (bench_fluid --pppm-mesh --steps) after each spotrun run of the charged suite.
FLOOR_ROUNDS = 3
# --quick: the charged suite's steps (the full run: charged_steps). At accuracy 1e-5 PPPM takes a 90^3 mesh at
# 4,000 atoms (LAMMPS and spotrun alike), the k-space part 85-95 % of either program's step, the same work every
# step: 20 steps (21 k-space computations, two list builds) keep 3 repetitions at 1 and 2 ranks within the
# suite's 60 s share (50 steps took 49 s at one rank alone under a load of 8).
CHARGED_QUICK_STEPS = 20
# --smoke (the tests: records, not figures): 864 atoms (6^3 cells, a 50^3 mesh; a box thick enough for the 3
# ranks of bench.suite_smoke.np3), this many steps.
CHARGED_SMOKE_STEPS = 20
# The checkpoint suite's targets (docs/checkpoints.md): the loop blocked for a background set at most 25 % of
# the shared write (checkpoint.async_blocking, MB/s over the write's: at least 4), and the steps during a
# durable flush at most 5 % slower than right after it (checkpoint.step_durable over step_after_durable).
BLOCKING_TARGET = 4.0
STEP_DURABLE_TARGET = 1.05
# --quick: the durable flush at the checkpoint suite's smallest quick size only, its steps timed for at most
# this many seconds of the flush (rclone at nice 19 as in the full run; a flush still running is cancelled).
QUICK_DURABLE_WINDOW_S = 10.0
# --quick: the synthetic step timed over at most this many seconds of each background write (at nice 10 it
# takes 0.2-4 s on an idle 2-core machine, minutes beside other work), which then finishes without steps.
QUICK_ASYNC_WINDOW_S = 5.0
# --quick on 2 cores (ranks 1 and 2): the whole run's budget in seconds; each deck's quick_budget is its share
# (the shipped shares sum to at most this), and report.md warns when a suite or the run took longer.
QUICK_BUDGET_S = 600.0
# The Comm share of the MD loop (double) with the halo overlapped (md.halo_overlap, the default) against the
# same run with the halo exchanged first, from two ranks: at most this ratio (strong scaling).
COMM_SHARE_TARGET = 0.5

# The npt suite (issue 41): the LJ melt of lj-bench.toml under the Nose-Hoover thermostat of NPT_THERMOSTAT (NVT,
# the reference) and with the barostat of NPT_BAROSTAT besides (NPT, the measurement), in the same repetition:
# NPT atom-steps/s at least NPT_TARGET of NVT's (the NPT step within 1.1 x the NVT step). LAMMPS's fix nvt and
# fix npt with the same settings (bench/lammps/in.lj-npt) where installed.
NPT_THERMOSTAT = (("temperature", 0.72), ("damp", 0.5))
NPT_BAROSTAT = (("pressure", 1.0), ("pressure_damp", 5.0))
NPT_TARGET = 1 / 1.1
# The minimize suite (issue 41): the perturbed fcc crystal of write_perturbed_fcc_data (every coordinate displaced
# by up to MIN_DISPLACEMENT sigma), minimised by cg (bench/minimize-bench.toml; LAMMPS bench/lammps/in.minimize)
# with these stopping criteria (etol 0: the force tolerance stops both), in at most MINIMIZE_TARGET x LAMMPS's
# force evaluations.
MIN_DISPLACEMENT = 0.05
MIN_ETOL, MIN_FTOL, MIN_MAXITER, MIN_MAXEVAL = 0.0, 1e-8, 10000, 100000
MINIMIZE_TARGET = 1.0
# Largest difference (per atom) of spotrun's and LAMMPS's minimum energy from the perfect crystal's lattice sum
# before the suite says the two did not find the same minimum (measured: 2e-14 at 4,000 atoms).
MIN_ENERGY_TOLERANCE = 1e-8

# The spotrun runs of an LJ measurement: record name suffix -> md.precision.
LJ_PRECISIONS = (("", "double"), ("-mixed", "mixed"))


def charged_steps(atoms, mode="full"):
    """The charged suite's steps: 200 up to 4,000 atoms, 100 above (the k-space part grows with the mesh, 180^3 at
    32,000 atoms); CHARGED_QUICK_STEPS in --quick, CHARGED_SMOKE_STEPS in --smoke."""
    if mode == "smoke":
        return CHARGED_SMOKE_STEPS
    if mode == "quick":
        return CHARGED_QUICK_STEPS
    return 200 if atoms <= 4000 else 100


def lj_steps(atoms):
    # 2M atoms: 40 steps (two list rebuilds, as 100 steps have five: the same share of rebuild steps).
    return 100 if atoms <= 300000 else 40


def predicted_cost(kind, total, ranks, repeat, peers, cores, durable=None, steps=None):
    """Seconds, a rough model of this 2-core machine; the progress line rescales it by what it measures.
    peers: the LAMMPS runs per spotrun run of an LJ measurement (0, 1 or 2); an LJ measurement runs spotrun
    once per precision (LJ_PRECISIONS), and from two ranks once more without the halo overlap. durable
    (checkpoint): None for no durable flush, 0 for a whole flush, else the window of its timed steps. steps
    (charged): the steps of each run."""
    eff = min(ranks, cores) / max(1.0, ranks / cores) if ranks > cores else ranks
    if kind == "lj":
        per = 1.0 + total * 3e-6 + total * lj_steps(total) / (2.4e6 * eff)
        return repeat * per * (len(LJ_PRECISIONS) + peers + (1 if ranks > 1 else 0))
    if kind == "npt":
        # the NVT and the NPT run (the NPT step about 1.3 x NVT's: the pressure every step), each LAMMPS peer a
        # pair of runs as well
        per = 2 * (1.0 + total * 3e-6) + 2.3 * total * lj_steps(total) / (2.4e6 * eff)
        return repeat * per * (1 + peers)
    if kind == "minimize":
        # about 200 force evaluations of the crystal with lists checked every step, spotrun and LAMMPS alike
        per = 1.0 + total * 200 / (1.5e6 * eff)
        return repeat * per * (1 + peers) + total * 2e-5
    if kind == "chain":
        # the data file read (3 MB at 32,000 beads) and the loop, spotrun and each LAMMPS peer alike
        per = 1.0 + total * 1e-5 + total * CHAIN_STEPS / (4e6 * eff)
        return repeat * per * (1 + peers)
    if kind == "charged":
        # spotrun and LAMMPS alike: about 3e-5 s per atom-step on one core at accuracy 1e-5 (0.12 s per step at
        # 4,000 atoms, a 90^3 mesh; the mesh grows with the box), plus the start; the FFT floor's run after each
        # spotrun run
        per = 1.5 + total * (steps or charged_steps(total)) * 3e-5 / eff
        return repeat * (per * (1 + peers) + 3.0 + total * 1e-4)
    if kind in ("fluid", "fft"):
        step = 1.5e-8 * total * math.log2(max(total, 2)) / eff
        return 1.5 + total * 4e-7 + (repeat + 1) * 2.2 * step
    if kind == "checkpoint":
        mb = total * 128 / 1e6
        # write, read and raw: 0.012 s/MB; a background write at nice 10 and as many steps after it: 0.03 s/MB;
        # a durable flush at nice 19 and as many steps after it: its window twice, or 60 s + 0.5 s/MB.
        flush = 0.0 if durable is None else 2 * durable if durable else 60 + mb * 0.5
        return 2.0 + repeat * (0.5 + mb * 0.042) + flush
    if kind == "halo":
        return 1.5 + total * 4e-6 + repeat * 0.5
    return 10.0


def plan(args, cores, peers):
    tasks = []
    for suite in args.suites:
        spec = args.specs[suite]
        sizes = [args.size] if args.size else spec["smoke" if args.smoke else "quick" if args.quick else "full"]
        for size in sizes:
            for r in args.ranks:
                if spec["kind"] in LATTICE_KINDS + ("checkpoint",):
                    total = size * r if spec["scaling"] == "weak" else size
                    label = f"{suite} {total} atoms np{r}"
                elif spec["kind"] == "chain":
                    total = size
                    label = f"{suite} {total} beads np{r}"
                else:
                    a, b, c = factor3(r) if spec["scaling"] == "weak" else (1, 1, 1)
                    total = size ** 3 * a * b * c
                    label = f"{suite} {size * a}x{size * b}x{size * c} np{r}"
                durable = None
                if spec["kind"] == "checkpoint" and (not args.quick or size == min(sizes)):
                    durable = QUICK_DURABLE_WINDOW_S if args.quick else 0
                cost = predicted_cost(spec["kind"], total, r, args.repeat,
                                      (min(peers, 1) if spec["kind"] in ("charged", "npt", "minimize") else peers)
                                      if spec["kind"] in SPOTRUN_KINDS else 0, cores, durable,
                                      charged_steps(total, "smoke" if args.smoke else "quick" if args.quick else "full")
                                      if spec["kind"] == "charged" else None)
                tasks.append(Task(suite, spec["kind"], spec["scaling"], size, r, cost, label))
    return tasks


class Progress:
    def __init__(self, tasks):
        self.total = sum(t.cost for t in tasks)
        self.done = 0.0
        self.n = len(tasks)
        self.index = 0
        self.t0 = time.time()

    def note(self, task, fraction, detail):
        elapsed = time.time() - self.t0
        done = self.done + task.cost * fraction
        factor = elapsed / done if done > 0 and elapsed > 5 else 1.0
        left = max(0.0, (self.total - done) * factor)
        pct = 100 * done / self.total if self.total else 100
        print(f"[{self.index}/{self.n} {pct:3.0f}%] {task.label}: {detail}  (elapsed {fmt_duration(elapsed)}, "
              f"about {fmt_duration(left)} left)", file=sys.stderr, flush=True)

    def next(self, task):
        self.index += 1
        self.note(task, 0, "starting")

    def finish(self, task):
        self.done += task.cost


# --- the measurements ---------------------------------------------------------------------------------------
class Suite:
    def __init__(self, args, meta, results, runner, progress, lammps, scratch):
        self.args, self.meta, self.results, self.runner = args, meta, results, runner
        self.progress, self.lammps, self.scratch = progress, lammps, scratch
        self.cores = os.cpu_count() or 1
        b = args.build
        self.spotrun = args.spotrun
        # spotrun run's summary (Loop time, Performance, Time Comm) on the terminal: --verbose where the program
        # has it (its summary may otherwise go to OUTDIR/spotrun.log only, which spotrun_text reads as well).
        kinds = {args.specs[x]["kind"] for x in args.suites}
        self.spotrun_verbose = (["--verbose"] if kinds & set(SPOTRUN_KINDS)
                                and "--verbose" in capture([args.spotrun, "run", "--help"]) else [])
        self.bench_fluid = os.path.join(b, "bench", "bench_fluid")
        self.bench_checkpoint = os.path.join(b, "bench", "bench_checkpoint")
        self.bench_halo = os.path.join(b, "bench", "bench_halo")

    def sizes(self, suite):
        """The sizes this run measures of a suite (--size, or the deck's sizes of the mode)."""
        spec = self.args.specs[suite]
        return [self.args.size] if self.args.size else spec["smoke" if self.args.smoke else "quick" if self.args.quick else "full"]

    def base(self, task, load):
        d = dict(self.meta)
        d.update({"ranks": task.ranks, "load": [round(x, 2) for x in load], "oversubscribed": task.ranks > self.cores,
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
        return d

    def add(self, rec):
        self.results.add(rec)
        return rec

    def run_task(self, task):
        load = os.getloadavg()
        getattr(self, "run_" + task.kind)(task, load)

    def run_lj(self, task, load):
        r = task.ranks
        if task.scaling == "weak":
            c = lj_cells(task.size)
            cells = [c * f for f in factor3(r)]
        else:
            c = lj_cells(task.size)
            cells = [c, c, c]
        atoms = 4 * cells[0] * cells[1] * cells[2]
        steps = lj_steps(atoms)
        spot = {suffix: [] for suffix, _ in LJ_PRECISIONS}
        spot_cmd = {suffix: "" for suffix, _ in LJ_PRECISIONS}
        peer, peer_opt = [], []
        lmp_cmd = opt_cmd = ""
        version = ""
        share_on, share_off = [], []  # Comm share of the double runs, with and without the halo overlap
        off_cmd = ""
        runs = len(LJ_PRECISIONS) + (1 if self.lammps else 0) + (1 if self.lammps and not self.args.no_opt else 0) + (
            1 if r > 1 else 0)
        lmp_args = ["-in", LMP_INPUT, "-var", "x", f"{cells[0] / 20:g}", "-var", "y", f"{cells[1] / 20:g}",
                    "-var", "z", f"{cells[2] / 20:g}", "-var", "steps", steps, "-log", "none", "-nocite"]
        for rep in range(self.args.repeat):
            done = 0
            for suffix, precision in LJ_PRECISIONS:
                self.progress.note(task, (rep + done / runs) / self.args.repeat,
                                   f"spotrun run ({precision}) {rep + 1}/{self.args.repeat}")
                outdir = tempfile.mkdtemp(prefix="lj.", dir=self.scratch)
                try:
                    out, spot_cmd[suffix] = self.runner.run(f"lj-spotrun{suffix}-{atoms}-np{r}-{rep}", r, [
                        self.spotrun, "run", LJ_DECK, "--set", f"md.lattice.cells=[{cells[0]},{cells[1]},{cells[2]}]",
                        "--set", f"run.steps={steps}", "--set", f"md.precision={precision}", "--output-dir", outdir,
                        "--resume", "never"] + self.spotrun_verbose)
                    out, rate = spotrun_text(out, outdir), spotrun_progress_rate(outdir)
                finally:
                    shutil.rmtree(outdir, ignore_errors=True)
                spot[suffix].append(parse_spotrun_rate(out, f"spotrun ({precision})", rate))
                if precision == "double" and r > 1:
                    share_on.append(parse_spotrun_comm_share(out, "spotrun (double)"))
                done += 1
            if r > 1:
                # The same double run with the halo exchanged before the pair loop and the forces sent back
                # after it: the Comm share the overlap is judged against.
                self.progress.note(task, (rep + done / runs) / self.args.repeat,
                                   f"spotrun run (no halo overlap) {rep + 1}/{self.args.repeat}")
                outdir = tempfile.mkdtemp(prefix="lj.", dir=self.scratch)
                try:
                    out, off_cmd = self.runner.run(f"lj-spotrun-no-overlap-{atoms}-np{r}-{rep}", r, [
                        self.spotrun, "run", LJ_DECK, "--set", f"md.lattice.cells=[{cells[0]},{cells[1]},{cells[2]}]",
                        "--set", f"run.steps={steps}", "--set", "md.precision=double", "--set", "md.halo_overlap=false",
                        "--output-dir", outdir, "--resume", "never"] + self.spotrun_verbose)
                    out = spotrun_text(out, outdir)
                finally:
                    shutil.rmtree(outdir, ignore_errors=True)
                share_off.append(parse_spotrun_comm_share(out, "spotrun (no halo overlap)"))
                done += 1
            if self.lammps:
                self.progress.note(task, (rep + done / runs) / self.args.repeat, f"LAMMPS run {rep + 1}/{self.args.repeat}")
                out, lmp_cmd = self.runner.run(f"lj-lammps-{atoms}-np{r}-{rep}", r, [self.lammps] + lmp_args,
                                               cwd=self.scratch)
                peer.append(parse_lammps_rate(out, "LAMMPS"))
                m = re.search(r"LAMMPS \(([^)]+)\)", out)
                version = m.group(1) if m else version
                done += 1
            if self.lammps and not self.args.no_opt:
                # The same input and arguments with LAMMPS's OPT package: the suffix switch makes lj/cut lj/cut/opt.
                self.progress.note(task, (rep + done / runs) / self.args.repeat,
                                   f"LAMMPS -sf opt run {rep + 1}/{self.args.repeat}")
                out, opt_cmd = self.runner.run(f"lj-lammps-opt-{atoms}-np{r}-{rep}", r,
                                               [self.lammps, "-sf", "opt"] + lmp_args, cwd=self.scratch)
                peer_opt.append(parse_lammps_rate(out, "LAMMPS -sf opt"))
        base = self.base(task, load)
        details = {"steps": steps, "cells": cells}
        common = dict(suite=task.suite, metric="throughput", unit="atom-steps/s", better="higher", size=atoms,
                      size_unit="atoms", scaling=task.scaling)

        def with_target(name, d):
            if task.scaling == "strong" and name in LJ_TARGETS:
                return dict(d, target_ratio=LJ_TARGETS[name])
            return d

        ref = opt = None
        if peer:
            ref = self.add(sr.make_record(base, name="lj.lammps", role="peer", program=f"LAMMPS {version}".strip(),
                                          samples=peer, command=lmp_cmd, details=details, **common))
        if peer_opt:
            opt = self.add(sr.make_record(base, name="lj.lammps-opt", role="peer",
                                          program=" ".join(x for x in ("LAMMPS", version, "-sf opt") if x),
                                          samples=peer_opt, command=opt_cmd, details=details, **common))
        if share_on and share_off:
            share = dict(common, metric="share", unit="Comm / loop time", better="lower")
            off = self.add(sr.make_record(base, name="lj.comm_share_no_overlap", role="peer",
                                          program="spotrun run (md.halo_overlap = false)", samples=share_off,
                                          command=off_cmd, details=dict(details, precision="double"), **share))
            d = dict(details, precision="double")
            if task.scaling == "strong":
                d["target_ratio"] = COMM_SHARE_TARGET
            self.add(sr.make_record(base, name="lj.comm_share", role="measurement", program="spotrun run (double)",
                                    samples=share_on, command=spot_cmd[""], reference=off, details=d, **share))
        for suffix, precision in LJ_PRECISIONS:
            name = f"lj.spotrun{suffix}"
            d = dict(details, precision=precision)
            own = self.add(sr.make_record(base, name=name, role="measurement", program=f"spotrun run ({precision})",
                                          samples=spot[suffix], command=spot_cmd[suffix], reference=ref,
                                          details=with_target(name, d) if ref else d, **common))
            if opt:
                # The same spotrun samples against the second peer, a record of its own so that its ratio is
                # recorded and checked as every other; samples_of marks the samples as the first record's:
                # --compare judges them there.
                self.add(sr.make_record(base, name=f"{name}-vs-opt", role="measurement",
                                        program=f"spotrun run ({precision})", samples=spot[suffix],
                                        command=spot_cmd[suffix], reference=opt,
                                        details=with_target(f"{name}-vs-opt", dict(d, samples_of=own["id"])), **common))

    def run_chain(self, task, load):
        r, atoms, steps = task.ranks, task.size, CHAIN_STEPS
        data = chain_data(atoms)
        spot, loop, bond = [], [], []  # spotrun: atom-steps/s; Loop time and Time Bond per step of the same runs
        peer, peer_opt = [], []
        spot_cmd = lmp_cmd = opt_cmd = version = ""
        runs = 1 + (1 if self.lammps else 0) + (1 if self.lammps and not self.args.no_opt else 0)
        lmp_args = ["-in", LMP_CHAIN_INPUT, "-var", "data", data, "-var", "steps", steps, "-log", "none", "-nocite"]
        for rep in range(self.args.repeat):
            self.progress.note(task, rep / self.args.repeat, f"spotrun run {rep + 1}/{self.args.repeat}")
            outdir = tempfile.mkdtemp(prefix="chain.", dir=self.scratch)
            try:
                out, spot_cmd = self.runner.run(f"chain-spotrun-{atoms}-np{r}-{rep}", r, [
                    self.spotrun, "run", CHAIN_DECK, "--set", f"md.initial.lammps_data={json.dumps(data)}",
                    "--set", f"run.steps={steps}", "--output-dir", outdir, "--resume", "never"] + self.spotrun_verbose)
                out, rate = spotrun_text(out, outdir), spotrun_progress_rate(outdir)
            finally:
                shutil.rmtree(outdir, ignore_errors=True)
            spot.append(parse_spotrun_rate(out, "spotrun", rate))
            t_loop, t_bond = parse_spotrun_bond_time(out, "spotrun")
            loop.append(t_loop / steps)
            bond.append(t_bond / steps)
            done = 1
            if self.lammps:
                self.progress.note(task, (rep + done / runs) / self.args.repeat, f"LAMMPS run {rep + 1}/{self.args.repeat}")
                out, lmp_cmd = self.runner.run(f"chain-lammps-{atoms}-np{r}-{rep}", r, [self.lammps] + lmp_args,
                                               cwd=self.scratch)
                peer.append(parse_lammps_rate(out, "LAMMPS"))
                m = re.search(r"LAMMPS \(([^)]+)\)", out)
                version = m.group(1) if m else version
                done += 1
            if self.lammps and not self.args.no_opt:
                # The OPT package's lj/cut/opt for the pair (FENE has no OPT style: the same bond_style fene).
                self.progress.note(task, (rep + done / runs) / self.args.repeat,
                                   f"LAMMPS -sf opt run {rep + 1}/{self.args.repeat}")
                out, opt_cmd = self.runner.run(f"chain-lammps-opt-{atoms}-np{r}-{rep}", r,
                                               [self.lammps, "-sf", "opt"] + lmp_args, cwd=self.scratch)
                peer_opt.append(parse_lammps_rate(out, "LAMMPS -sf opt"))
        base = self.base(task, load)
        details = {"steps": steps, "data": data, "ensemble": "nve"}
        common = dict(suite=task.suite, metric="throughput", unit="atom-steps/s", better="higher", size=atoms,
                      size_unit="atoms", scaling=task.scaling)
        ref = opt = None
        if peer:
            ref = self.add(sr.make_record(base, name="chain.lammps", role="peer", program=f"LAMMPS {version}".strip(),
                                          samples=peer, command=lmp_cmd, details=details, **common))
        if peer_opt:
            opt = self.add(sr.make_record(base, name="chain.lammps-opt", role="peer",
                                          program=" ".join(x for x in ("LAMMPS", version, "-sf opt") if x),
                                          samples=peer_opt, command=opt_cmd, details=details, **common))
        target = dict(details, target_ratio=CHAIN_TARGETS["chain.spotrun"])
        own = self.add(sr.make_record(base, name="chain.spotrun", role="measurement", program="spotrun run",
                                      samples=spot, command=spot_cmd, reference=ref,
                                      details=target if ref else details, **common))
        if opt:
            # The same spotrun samples against the second peer (as lj.spotrun-vs-opt): judged in chain.spotrun.
            self.add(sr.make_record(base, name="chain.spotrun-vs-opt", role="measurement", program="spotrun run",
                                    samples=spot, command=spot_cmd, reference=opt,
                                    details=dict(details, samples_of=own["id"]), **common))
        # The bonded terms' share of the loop: Time Bond (slowest rank) against the Loop time of the same runs, its
        # reference (role peer, as lj.comm_share_no_overlap: a spotrun quantity that the measurement is judged
        # by); ratio = the share, target at most BOND_SHARE_TARGET.
        times = dict(common, metric="time", unit="s/step", better="lower")
        whole = self.add(sr.make_record(base, name="chain.loop_time", role="peer", program="spotrun run (Loop time)",
                                        samples=loop, command=spot_cmd, details=details, **times))
        self.add(sr.make_record(base, name="chain.bond_time", role="measurement",
                                program="spotrun run (Time Bond, slowest rank)", samples=bond, command=spot_cmd,
                                reference=whole, details=dict(details, target_ratio=BOND_SHARE_TARGET), **times))

    def charged_data(self, atoms):
        """The charged suite's data file of this size in the scratch directory, written once per run."""
        path = os.path.join(self.scratch, f"charged-{atoms}.data")
        if not os.path.isfile(path):
            write_charged_data(path, atoms)
        return path

    def run_charged(self, task, load):
        r, atoms = task.ranks, task.size
        steps = charged_steps(atoms, "smoke" if self.args.smoke else "quick" if self.args.quick else "full")
        self.progress.note(task, 0.0, "writing the data file")
        data = self.charged_data(atoms)
        spot, loop, kspace, meshes = [], [], [], []  # atom-steps/s; Loop time per step, Time Kspace per computation
        floor_s, three_s, floor_cmd = [], [], ""  # the floor's rounds after each spotrun run: s per step
        peer, lmp_meshes = [], []
        spot_cmd = lmp_cmd = version = ""
        runs = 1 + (1 if self.lammps else 0)
        lmp_args = ["-in", LMP_CHARGED_INPUT, "-var", "data", data, "-var", "steps", steps, "-log", "none", "-nocite"]
        for rep in range(self.args.repeat):
            self.progress.note(task, 0.9 * rep / self.args.repeat, f"spotrun run {rep + 1}/{self.args.repeat}")
            outdir = tempfile.mkdtemp(prefix="charged.", dir=self.scratch)
            try:
                out, spot_cmd = self.runner.run(f"charged-spotrun-{atoms}-np{r}-{rep}", r, [
                    self.spotrun, "run", CHARGED_DECK, "--set", f"md.initial.lammps_data={json.dumps(data)}",
                    "--set", f"run.steps={steps}", "--set", f"run.thermo_every={steps}", "--output-dir", outdir,
                    "--resume", "never"] + self.spotrun_verbose)
                out, rate = spotrun_text(out, outdir), spotrun_progress_rate(outdir)
            finally:
                shutil.rmtree(outdir, ignore_errors=True)
            spot.append(parse_spotrun_rate(out, "spotrun", rate))
            t_loop, t_kspace, mesh, g_ewald = parse_spotrun_kspace(out, "spotrun")
            loop.append(t_loop / steps)
            # Time Kspace times steps + 1 computations: the setup's (step 0's forces) and one per step.
            kspace.append(t_kspace / (steps + 1))
            meshes.append(mesh)
            # The floor right after each spotrun run, in the same state of the machine (its speed drifts within
            # minutes): the transforms of one PPPM step of this mesh (1 r2c + 3 c2r, and 1 r2c + the gradient),
            # FLOOR_ROUNDS rounds of 10 steps each, alone on the same ranks.
            self.progress.note(task, 0.9 * (rep + 0.5 / runs) / self.args.repeat,
                               f"bench_fluid --pppm-mesh {'x'.join(map(str, mesh))} {rep + 1}/{self.args.repeat}")
            out, floor_cmd = self.runner.run(f"charged-fft-floor-{atoms}-np{r}-{rep}", r, [
                self.bench_fluid, "--pppm-mesh", "--sizes", "x".join(map(str, mesh)), "--steps", FLOOR_ROUNDS,
                "--samples"])
            fft_s = parse_samples(out, "bench_fluid --pppm-mesh")
            floor_s += fft_s["pppm_gradient_s"]["values"]
            three_s += fft_s["pppm_fft_s"]["values"]
            if self.lammps:
                self.progress.note(task, 0.9 * (rep + 1 / runs) / self.args.repeat,
                                   f"LAMMPS run {rep + 1}/{self.args.repeat}")
                out, lmp_cmd = self.runner.run(f"charged-lammps-{atoms}-np{r}-{rep}", r, [self.lammps] + lmp_args,
                                               cwd=self.scratch)
                peer.append(parse_lammps_rate(out, "LAMMPS"))
                m = re.search(r"LAMMPS \(([^)]+)\)", out)
                version = m.group(1) if m else version
                m = re.search(r"grid = (\d+) (\d+) (\d+)", out)
                if m:
                    lmp_meshes.append([int(x) for x in m.groups()])
        if any(m != meshes[0] for m in meshes):
            raise BenchFailure(f"charged {atoms} atoms np{r}: spotrun chose different PPPM meshes in its runs: "
                               f"{meshes}")
        mesh = meshes[0]
        base = self.base(task, load)
        details = {"steps": steps, "ensemble": "nve", "mesh": mesh, "g_ewald": g_ewald, "accuracy": 1e-5,
                   "lammps_mesh": lmp_meshes[0] if lmp_meshes else None}
        common = dict(suite=task.suite, metric="throughput", unit="atom-steps/s", better="higher", size=atoms,
                      size_unit="atoms", scaling=task.scaling)
        ref = None
        if peer:
            ref = self.add(sr.make_record(base, name="charged.lammps", role="peer", program=f"LAMMPS {version}".strip(),
                                          samples=peer, command=lmp_cmd, details=details, **common))
        self.add(sr.make_record(base, name="charged.spotrun", role="measurement", program="spotrun run",
                                samples=spot, command=spot_cmd, reference=ref,
                                details=(dict(details, target_ratio=CHARGED_TARGETS["charged.spotrun"]) if ref
                                         else details), **common))
        times = dict(common, metric="time", unit="s/step", better="lower")
        # The floor's reference: the same rounds' 1 r2c + 3 c2r (backward_many), the field made component by
        # component; their ratio is what the gradient saves (reported).
        three = self.add(sr.make_record(base, name="charged.fft_three_c2r", role="floor",
                                        program="bench_fluid --pppm-mesh (spotrun's distributed FFT)", samples=three_s,
                                        command=floor_cmd,
                                        details=dict(details, transforms_per_step="1 r2c + 3 c2r (one batched call)"),
                                        **times))
        floor = self.add(sr.make_record(base, name="charged.fft_floor", role="floor",
                                        program="bench_fluid --pppm-mesh (spotrun's distributed FFT)", samples=floor_s,
                                        command=floor_cmd, reference=three,
                                        details=dict(details, transforms_per_step="1 r2c + the gradient "
                                                     "(backward_gradient: 3 c2r fields, 2 of them along x)"),
                                        **times))
        own = self.add(sr.make_record(base, name="charged.kspace_time", role="measurement",
                                      program="spotrun run (Time Kspace / (steps + 1), slowest rank)", samples=kspace,
                                      command=spot_cmd, reference=floor,
                                      details=dict(details, target_ratio=KSPACE_FLOOR_TARGET), **times))
        # The k-space share of the loop: the same samples against the Loop time per step of the same runs (its
        # reference, role peer as chain.loop_time); ratio = the share, reported (no target).
        whole = self.add(sr.make_record(base, name="charged.loop_time", role="peer", program="spotrun run (Loop time)",
                                        samples=loop, command=spot_cmd, details=details, **times))
        self.add(sr.make_record(base, name="charged.kspace_share", role="measurement",
                                program="spotrun run (Time Kspace / (steps + 1), slowest rank)", samples=kspace,
                                command=spot_cmd, reference=whole, details=dict(details, samples_of=own["id"]),
                                **times))

    def run_npt(self, task, load):
        r, atoms = task.ranks, task.size
        c = lj_cells(atoms)
        cells = [c, c, c]
        steps = lj_steps(atoms)
        thermostat = [f"md.{k}={v:g}" for k, v in NPT_THERMOSTAT]
        barostat = [f"md.{k}={v:g}" for k, v in NPT_BAROSTAT]
        # ensemble -> the --set keys of its spotrun run (the deck's lattice, steps and neighbour settings)
        ensembles = (("nvt", ['md.ensemble="nvt"'] + thermostat),
                     ("npt", ['md.ensemble="npt"'] + thermostat + barostat))
        spot = {e: [] for e, _ in ensembles}
        spot_cmd = {e: "" for e, _ in ensembles}
        builds = {}
        peer = {e: [] for e, _ in ensembles}
        peer_cmd = {e: "" for e, _ in ensembles}
        version = ""
        runs = 2 * (2 if self.lammps else 1)
        lmp_args = ["-in", LMP_NPT_INPUT, "-var", "x", f"{c / 20:g}", "-var", "y", f"{c / 20:g}", "-var", "z",
                    f"{c / 20:g}", "-var", "steps", steps, "-log", "none", "-nocite"]
        for rep in range(self.args.repeat):
            done = 0
            for ens, sets in ensembles:
                self.progress.note(task, (rep + done / runs) / self.args.repeat,
                                   f"spotrun run ({ens}) {rep + 1}/{self.args.repeat}")
                outdir = tempfile.mkdtemp(prefix="npt.", dir=self.scratch)
                argv = [self.spotrun, "run", LJ_DECK, "--set", f"md.lattice.cells=[{cells[0]},{cells[1]},{cells[2]}]",
                        "--set", f"run.steps={steps}"]
                for kv in sets:
                    argv += ["--set", kv]
                try:
                    out, spot_cmd[ens] = self.runner.run(f"npt-spotrun-{ens}-{atoms}-np{r}-{rep}", r, argv + [
                        "--output-dir", outdir, "--resume", "never"] + self.spotrun_verbose)
                    out, rate = spotrun_text(out, outdir), spotrun_progress_rate(outdir)
                finally:
                    shutil.rmtree(outdir, ignore_errors=True)
                spot[ens].append(parse_spotrun_rate(out, f"spotrun ({ens})", rate))
                builds.setdefault(f"spotrun_{ens}", parse_neighbor_builds(out))
                done += 1
            if self.lammps:
                # LAMMPS's fix nvt and fix npt with the same settings, in the same repetition.
                for ens, _ in ensembles:
                    self.progress.note(task, (rep + done / runs) / self.args.repeat,
                                       f"LAMMPS run (fix {ens}) {rep + 1}/{self.args.repeat}")
                    out, peer_cmd[ens] = self.runner.run(f"npt-lammps-{ens}-{atoms}-np{r}-{rep}", r,
                                                         [self.lammps] + lmp_args + ["-var", "ens", ens],
                                                         cwd=self.scratch)
                    peer[ens].append(parse_lammps_rate(out, f"LAMMPS (fix {ens})"))
                    builds.setdefault(f"lammps_{ens}", parse_neighbor_builds(out))
                    m = re.search(r"LAMMPS \(([^)]+)\)", out)
                    version = m.group(1) if m else version
                    done += 1
        base = self.base(task, load)
        details = {"steps": steps, "cells": cells, "neighbor_builds": builds,
                   **{k: v for k, v in NPT_THERMOSTAT}}
        npt_details = dict(details, barostat="iso", pchain=3, **{k: v for k, v in NPT_BAROSTAT})
        common = dict(suite=task.suite, metric="throughput", unit="atom-steps/s", better="higher", size=atoms,
                      size_unit="atoms", scaling=task.scaling)
        # spotrun's own NVT run is the reference (role peer, as lj.comm_share_no_overlap and chain.loop_time: a
        # spotrun quantity that the measurement is judged by); ratio = NPT / NVT atom-steps/s, target NPT_TARGET.
        nvt = self.add(sr.make_record(base, name="npt.nvt", role="peer",
                                      program='spotrun run (md.ensemble = "nvt")', samples=spot["nvt"],
                                      command=spot_cmd["nvt"], details=dict(details, ensemble="nvt"), **common))
        d = dict(npt_details, ensemble="npt")
        if task.scaling == "strong":
            d["target_ratio"] = NPT_TARGET
        own = self.add(sr.make_record(base, name="npt.spotrun", role="measurement",
                                      program='spotrun run (md.ensemble = "npt")', samples=spot["npt"],
                                      command=spot_cmd["npt"], reference=nvt, details=d, **common))
        if peer["nvt"] and peer["npt"]:
            lmp = f"LAMMPS {version}".strip()
            lnvt = self.add(sr.make_record(base, name="npt.lammps-nvt", role="peer", program=f"{lmp} (fix nvt)",
                                           samples=peer["nvt"], command=peer_cmd["nvt"],
                                           details=dict(details, ensemble="nvt"), **common))
            # LAMMPS's own NPT step against its NVT step (a peer's record with a reference: the ratio spotrun's
            # npt.spotrun is read beside; never flagged by --compare, role peer).
            lnpt = self.add(sr.make_record(base, name="npt.lammps", role="peer", program=f"{lmp} (fix npt)",
                                           samples=peer["npt"], command=peer_cmd["npt"], reference=lnvt,
                                           details=dict(npt_details, ensemble="npt"), **common))
            # spotrun's NPT against LAMMPS's fix npt: the samples of npt.spotrun (judged there).
            self.add(sr.make_record(base, name="npt.spotrun-vs-lammps", role="measurement",
                                    program='spotrun run (md.ensemble = "npt")', samples=spot["npt"],
                                    command=spot_cmd["npt"], reference=lnpt,
                                    details=dict(npt_details, ensemble="npt", samples_of=own["id"]), **common))

    def minimize_data(self, atoms):
        """The minimize suite's data file of this size in the scratch directory, written once per run."""
        path = os.path.join(self.scratch, f"perturbed-{atoms}.data")
        if not os.path.isfile(path):
            write_perturbed_fcc_data(path, atoms)
        return path

    def run_minimize(self, task, load):
        r, atoms = task.ranks, task.size
        self.progress.note(task, 0.0, "writing the data file")
        data = self.minimize_data(atoms)
        exact = fcc_lattice_energy()
        spot, spot_time, peer, peer_time = [], [], [], []
        spot_stats = lmp_stats = None
        spot_cmd = lmp_cmd = version = ""
        runs = 1 + (1 if self.lammps else 0)
        criteria = ["-var", "etol", f"{MIN_ETOL:g}", "-var", "ftol", f"{MIN_FTOL:g}", "-var", "maxiter", MIN_MAXITER,
                    "-var", "maxeval", MIN_MAXEVAL]
        lmp_args = ["-in", LMP_MINIMIZE_INPUT, "-var", "data", data] + criteria + ["-log", "none", "-nocite"]
        for rep in range(self.args.repeat):
            self.progress.note(task, rep / self.args.repeat, f"spotrun run {rep + 1}/{self.args.repeat}")
            outdir = tempfile.mkdtemp(prefix="minimize.", dir=self.scratch)
            try:
                out, spot_cmd = self.runner.run(f"minimize-spotrun-{atoms}-np{r}-{rep}", r, [
                    self.spotrun, "run", MINIMIZE_DECK, "--set", f"md.initial.lammps_data={json.dumps(data)}",
                    "--set", f"md.minimize.etol={MIN_ETOL!r}", "--set", f"md.minimize.ftol={MIN_FTOL!r}",
                    "--set", f"md.minimize.max_iterations={MIN_MAXITER}",
                    "--set", f"md.minimize.max_evaluations={MIN_MAXEVAL}",
                    "--output-dir", outdir, "--resume", "never"] + self.spotrun_verbose)
                out = spotrun_text(out, outdir)
            finally:
                shutil.rmtree(outdir, ignore_errors=True)
            st = parse_min_stats(out, "spotrun")
            spot.append(st["evaluations"])
            spot_time.append(parse_spotrun_loop_time(out, "spotrun"))
            spot_stats = spot_stats or st
            if self.lammps:
                self.progress.note(task, (rep + 1 / runs) / self.args.repeat, f"LAMMPS run {rep + 1}/{self.args.repeat}")
                out, lmp_cmd = self.runner.run(f"minimize-lammps-{atoms}-np{r}-{rep}", r, [self.lammps] + lmp_args,
                                               cwd=self.scratch)
                st = parse_min_stats(out, "LAMMPS")
                peer.append(st["evaluations"])
                peer_time.append(parse_lammps_loop_time(out, "LAMMPS"))
                lmp_stats = lmp_stats or st
                m = re.search(r"LAMMPS \(([^)]+)\)", out)
                version = m.group(1) if m else version
        # Fewer evaluations count only at the same minimum: both programs must reach the perfect crystal.
        for who, st in (("spotrun", spot_stats), ("LAMMPS", lmp_stats)):
            if st and abs(st["energy_final"] - exact) > MIN_ENERGY_TOLERANCE:
                raise BenchFailure(f"minimize {atoms} atoms np{r}: {who} ended at E = {st['energy_final']!r} per atom "
                                   f"({st['stop']}), not the crystal's {exact!r} (tolerance {MIN_ENERGY_TOLERANCE:g})")
        base = self.base(task, load)
        details = {"style": "cg", "etol": MIN_ETOL, "ftol": MIN_FTOL, "max_iterations": MIN_MAXITER,
                   "max_evaluations": MIN_MAXEVAL, "displacement": MIN_DISPLACEMENT, "data": os.path.basename(data),
                   "lattice_energy": exact}

        def with_stats(st):
            return dict(details, stop=st["stop"], iterations=st["iterations"], energy_initial=st["energy_initial"],
                        energy_final=st["energy_final"])

        common = dict(suite=task.suite, metric="count", unit="evaluations", better="lower", size=atoms,
                      size_unit="atoms", scaling=task.scaling)
        times = dict(common, metric="time", unit="s/minimisation")
        ref = ref_time = None
        if peer:
            lmp = f"LAMMPS {version}".strip()
            ref = self.add(sr.make_record(base, name="minimize.lammps", role="peer", program=f"{lmp} (min_style cg)",
                                          samples=peer, command=lmp_cmd, details=with_stats(lmp_stats), **common))
            ref_time = self.add(sr.make_record(base, name="minimize.lammps_time", role="peer",
                                               program=f"{lmp} (min_style cg, Loop time)", samples=peer_time,
                                               command=lmp_cmd, details=with_stats(lmp_stats), **times))
        d = with_stats(spot_stats)
        self.add(sr.make_record(base, name="minimize.spotrun", role="measurement", program="spotrun run ([md.minimize] cg)",
                                samples=spot, command=spot_cmd, reference=ref,
                                details=dict(d, target_ratio=MINIMIZE_TARGET) if ref else d, **common))
        self.add(sr.make_record(base, name="minimize.time", role="measurement",
                                program="spotrun run ([md.minimize] cg, Loop time)", samples=spot_time,
                                command=spot_cmd, reference=ref_time, details=d, **times))

    def grid(self, task):
        f = factor3(task.ranks) if task.scaling == "weak" else (1, 1, 1)
        return [task.size * f[0], task.size * f[1], task.size * f[2]]

    def run_fluid(self, task, load):
        g = self.grid(task)
        gname = "x".join(map(str, g))
        self.progress.note(task, 0.05, f"bench_fluid, {self.args.repeat} rounds")
        out, cmd = self.runner.run(f"fluid-{gname}-np{task.ranks}", task.ranks, [
            self.bench_fluid, "--sizes", gname, "--steps", self.args.repeat, "--samples"])
        s = parse_samples(out, "bench_fluid")
        base = self.base(task, load)
        points = g[0] * g[1] * g[2]
        common = dict(suite=task.suite, metric="time", unit="s/step", better="lower", size=points,
                      size_unit="grid points", scaling=task.scaling, command=cmd, program="bench_fluid")
        floor = self.add(sr.make_record(base, name="fluid.fft_floor", role="floor", samples=s["fft_floor_s"]["values"],
                                        details={"grid": g, "ffts_per_step": FFTS_PER_STEP}, **common))
        details = {"grid": g}
        target = self.args.specs[task.suite].get("targets", {}).get(task.size)
        if target is not None:
            details["target_ratio"] = target  # the report says whether the ratio meets it
        self.add(sr.make_record(base, name="fluid.step", role="measurement", samples=s["step_s"]["values"],
                                reference=floor, details=details, **common))

    def run_fft(self, task, load):
        g = self.grid(task)
        gname = "x".join(map(str, g))
        self.progress.note(task, 0.05, f"bench_fluid --fft-only, {self.args.repeat} rounds")
        out, cmd = self.runner.run(f"fft-{gname}-np{task.ranks}", task.ranks, [
            self.bench_fluid, "--fft-only", "--sizes", gname, "--steps", self.args.repeat, "--samples"])
        s = parse_samples(out, "bench_fluid --fft-only")
        base = self.base(task, load)
        common = dict(suite=task.suite, metric="time", unit="s/transform", better="lower", size=g[0] * g[1] * g[2],
                      size_unit="grid points", scaling=task.scaling, command=cmd, details={"grid": g})
        ref = None
        if "fftw_raw_s" in s:
            ref = self.add(sr.make_record(base, name="fft.fftw_raw", role="floor", program="FFTW MPI (bench_fluid)",
                                          samples=s["fftw_raw_s"]["values"], **common))
        self.add(sr.make_record(base, name="fft.transform", role="measurement", program="bench_fluid",
                                samples=s["fft_s"]["values"], reference=ref, **common))

    def run_checkpoint(self, task, load):
        atoms = task.size * task.ranks if task.scaling == "weak" else task.size
        self.progress.note(task, 0.05, f"bench_checkpoint, {self.args.repeat} repetitions")
        d = tempfile.mkdtemp(prefix="ckpt.", dir=self.scratch)
        # The multilevel checkpoint of the same state in the same run (each rank a node: local, + partner from 2
        # ranks), its node files in /dev/shm where there is one, against its peer, the shared synchronous write.
        levels_dir = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else d
        # With rclone: the set then flushed to a durable tier, a directory of the scratch file system (rclone's
        # local backend), at checkpoint.durable_nice's default, 19. The smoke run, which checks the records and not
        # their figures, flushes at the loop's priority: at 19 beside ranks that keep every core busy, rclone's
        # starts alone take tens of seconds.
        # --quick flushes at its smallest size only, at nice 19 still, and times the steps for at most
        # QUICK_DURABLE_WINDOW_S of the flush (a flush still running then is cancelled): beside two busy cores a
        # flush at nice 19 takes 40-150 s, and as many steps after it again.
        durable, durable_dir, rclone_nice = [], os.path.join(d, "durable"), 0 if self.args.smoke else 19
        window = QUICK_DURABLE_WINDOW_S if self.args.quick else None
        flush_here = not self.args.quick or task.size == min(self.sizes(task.suite))
        if flush_here and shutil.which(os.environ.get("SPOTRUN_RCLONE") or "rclone"):
            durable = ["--durable", durable_dir, "--durable-nice", str(rclone_nice)]
            if window:
                durable += ["--durable-window", f"{window:g}"]
        async_window = QUICK_ASYNC_WINDOW_S if self.args.quick else None
        windows = ["--async-window", f"{async_window:g}"] if async_window else []
        try:
            out, cmd = self.runner.run(f"checkpoint-{atoms}-np{task.ranks}", task.ranks, [
                self.bench_checkpoint, "--samples", "--levels", levels_dir] + windows + durable +
                [d, self.args.repeat, atoms])
        finally:
            shutil.rmtree(d, ignore_errors=True)
        s = parse_samples(out, "bench_checkpoint")
        base = self.base(task, load)
        fs = capture(["stat", "-f", "-c", "%T", self.scratch]).strip()
        details = {"MB": s["write_MBps"]["mb"], "directory": self.scratch, "filesystem": fs}
        common = dict(suite=task.suite, metric="bandwidth", unit="MB/s", better="higher", size=atoms, size_unit="atoms",
                      scaling=task.scaling, command=cmd, program="bench_checkpoint", details=details)
        raw_w = self.add(sr.make_record(base, name="checkpoint.raw_write", role="floor",
                                        samples=s["raw_write_MBps"]["values"], **common))
        write = self.add(sr.make_record(base, name="checkpoint.write", role="measurement",
                                        samples=s["write_MBps"]["values"], reference=raw_w, **common))
        if "levels_MBps" in s:
            levels = dict(common, details=dict(details, levels_dir=levels_dir,
                                               levels="local + partner" if task.ranks > 1 else "local"))
            self.add(sr.make_record(base, name="checkpoint.levels", role="measurement",
                                    samples=s["levels_MBps"]["values"], reference=write, **levels))
        # checkpoint.async: the same set written in the background. The loop's blocking time (the snapshot) as
        # MB/s against the shared write (target: ratio >= 4, blocking <= 25 % of the write; in the report's
        # Targets), and a synthetic MD step timed while the set is written against as many steps right after it
        # (the level writer's own cost, no target: the step target is the durable flush's, below).
        if "async_blocking_MBps" in s:
            blocking = dict(levels, details=dict(levels["details"], target_ratio=BLOCKING_TARGET))
            self.add(sr.make_record(base, name="checkpoint.async_blocking", role="measurement",
                                    samples=s["async_blocking_MBps"]["values"], reference=write, **blocking))
        if "step_background_s" in s and "step_idle_s" in s:
            steps = dict(common, metric="time", unit="s/step", better="lower",
                         details=dict(details, levels_dir=levels_dir, async_window_s=async_window,
                                      step="synthetic MD step of bench_checkpoint (20 LJ pairs per atom, an allreduce)"))
            idle = self.add(sr.make_record(base, name="checkpoint.step_idle", role="floor",
                                           samples=s["step_idle_s"]["values"], **steps))
            self.add(sr.make_record(base, name="checkpoint.step_background", role="measurement",
                                    samples=s["step_background_s"]["values"], reference=idle, **steps))
        # checkpoint.step_durable: the synthetic step while the durable flush runs (rclone, no MPI) against as many
        # steps right after it (target: ratio <= 1.05, in the report's Targets).
        if "step_durable_s" in s and "step_after_durable_s" in s:
            flush = s.get("durable_flush_s") or {}
            steps = dict(common, metric="time", unit="s/step", better="lower",
                         details=dict(details, durable=durable_dir, rclone_nice=rclone_nice,
                                      step="synthetic MD step of bench_checkpoint (20 LJ pairs per atom, an allreduce)",
                                      flush_seconds=(flush.get("values") or [None])[0],
                                      flush_complete=flush.get("complete", True),
                                      durable_window_s=window))
            steps_target = dict(steps, details=dict(steps["details"], target_ratio=STEP_DURABLE_TARGET))
            after = self.add(sr.make_record(base, name="checkpoint.step_after_durable", role="floor",
                                            samples=s["step_after_durable_s"]["values"], **steps))
            self.add(sr.make_record(base, name="checkpoint.step_durable", role="measurement",
                                    samples=s["step_durable_s"]["values"], reference=after, **steps_target))
        raw_r = self.add(sr.make_record(base, name="checkpoint.raw_read", role="floor",
                                        samples=s["raw_read_MBps"]["values"], **common))
        read = self.add(sr.make_record(base, name="checkpoint.read", role="measurement", samples=s["read_MBps"]["values"],
                                       reference=raw_r, **common))
        # The same read samples against the raw read into memory allocated in the timed region, as a reader
        # that returns a new state must: what is left of the gap to the raw read is the reader's own work.
        raw_n = self.add(sr.make_record(base, name="checkpoint.raw_read_new", role="floor",
                                        samples=s["raw_read_new_MBps"]["values"], **common))
        self.add(sr.make_record(base, name="checkpoint.read-vs-new", role="measurement",
                                samples=s["read_MBps"]["values"], reference=raw_n,
                                **dict(common, details=dict(details, samples_of=read["id"]))))

    def run_halo(self, task, load):
        c = lj_cells(task.size)
        f = factor3(task.ranks) if task.scaling == "weak" else (1, 1, 1)
        cells = [c * f[0], c * f[1], c * f[2]]
        atoms = 4 * cells[0] * cells[1] * cells[2]
        self.progress.note(task, 0.05, f"bench_halo, {self.args.repeat} repetitions")
        out, cmd = self.runner.run(f"halo-{atoms}-np{task.ranks}", task.ranks, [
            self.bench_halo, "--cells", ",".join(map(str, cells)), "--reps", self.args.repeat, "--samples"])
        s = parse_samples(out, "bench_halo")
        base = self.base(task, load)
        common = dict(suite=task.suite, size=atoms, size_unit="atoms", scaling=task.scaling, command=cmd,
                      program="bench_halo")
        hf = self.add(sr.make_record(base, name="halo.floor", role="floor", metric="time", unit="s/update",
                                     better="lower", samples=s["halo_floor_s"]["values"],
                                     details={"bytes_per_ghost": 52, "ghosts": s["halo_update_s"].get("ghosts")}, **common))
        self.add(sr.make_record(base, name="halo.update", role="measurement", metric="time", unit="s/update",
                                better="lower", samples=s["halo_update_s"]["values"], reference=hf,
                                details={"cells": cells, "ghosts": s["halo_update_s"].get("ghosts")}, **common))
        inf = self.add(sr.make_record(base, name="md.integrate_floor", role="floor", metric="time", unit="s/step",
                                      better="lower", samples=s["integrate_floor_s"]["values"],
                                      details={"bytes_per_atom": s["integrate_floor_s"].get("bytes_per_atom")}, **common))
        self.add(sr.make_record(base, name="md.integrate", role="measurement", metric="time", unit="s/step",
                                better="lower", samples=s["integrate_s"]["values"], reference=inf, **common))
        self.add(sr.make_record(base, name="memory.bandwidth", role="floor", metric="bandwidth", unit="GB/s",
                                better="higher", samples=s["bandwidth_GBps"]["values"],
                                details={"kernel": "a(i) += s * b(i), 24 bytes per element"}, **common))


# --- command line ---------------------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/suite.py", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("suites", nargs="*", metavar="SUITE",
                   help="suites to run (default: every deck in bench/suite/): a deck's name or a path to a .toml")
    p.add_argument("--ranks", help="rank counts, comma-separated (default: 1, 2, 4, ... up to the cores)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help="the decks' quick sizes; budget 10 minutes on 2 cores, each suite's share checked in "
                           "report.md (measured 2026-12-04: 4 min 14 s and 4 min 09 s idle, 10 min 52 s beside other work)")
    mode.add_argument("--smoke", action="store_true", help="tiny sizes (the tests)")
    p.add_argument("--size", type=int, help="only this size (atoms, beads, or n of an n^3 grid; per rank when weak)")
    p.add_argument("--repeat", type=int, default=3, help="repetitions of each measurement (default 3, at least 1)")
    p.add_argument("--out", help="output directory (default runs/bench/<date>-<time>)")
    p.add_argument("--compare", metavar="OLD.json", help="compare with these results; exit 1 on a regression")
    p.add_argument("--against", metavar="NEW.json", help="with --compare: compare this file, run nothing")
    p.add_argument("--report", metavar="RESULTS.json", help="remake report.md and plots of a results file, run nothing")
    p.add_argument("--threshold", type=float, default=0.10, help="regression threshold (default 0.10: 10 %%)")
    p.add_argument("--no-peers", action="store_true", help="do not run LAMMPS")
    p.add_argument("--no-opt", action="store_true", help="run plain LAMMPS only, not LAMMPS -sf opt (its OPT package)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory (default build/)")
    p.add_argument("--scratch", help="directory for checkpoint files and run outputs (default: a new one in $TMPDIR)")
    p.add_argument("--spotrun", metavar="PROGRAM",
                   help="the spotrun program the lj, chain, charged, npt and minimize suites run (default BUILD/launcher/spotrun; the "
                        "regression test gives BUILD/tests/spotrun-test, which has the test hooks)")
    args = p.parse_args(argv)
    args.spotrun = os.path.abspath(args.spotrun) if args.spotrun else os.path.join(args.build, "launcher", "spotrun")
    try:
        known = load_suites()
        specs = {}
        for s in args.suites:
            if s.endswith(".toml"):
                spec = load_suite(os.path.abspath(s))
                specs[spec["name"]] = spec
            elif s in known:
                specs[s] = known[s]
            else:
                p.error(f"unknown suite '{s}' (suites in {SUITE_DIR}: {', '.join(known)}; or a path to a .toml deck)")
    except DeckError as e:
        p.error(str(e))
    args.specs = specs or known
    args.suites = list(args.specs)
    cores = os.cpu_count() or 1
    if args.ranks:
        try:
            args.ranks = [int(x) for x in args.ranks.split(",") if x]
        except ValueError:
            p.error("--ranks takes comma-separated integers")
        if not args.ranks or min(args.ranks) < 1:
            p.error("--ranks takes positive integers")
    else:
        args.ranks = [1]
        while args.ranks[-1] * 2 <= cores:
            args.ranks.append(args.ranks[-1] * 2)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.against and not args.compare:
        p.error("--against needs --compare")
    if args.size is not None and args.size < 1:
        p.error("--size must be positive")
    args.build = os.path.abspath(args.build)
    return args


def main(argv):
    args = parse_args(argv)
    import suite_report

    if args.compare and args.against:
        rows, regressions = sr.compare(sr.load_records(args.compare), sr.load_records(args.against), args.threshold)
        print(sr.format_comparison(rows, args.threshold))
        return 1 if regressions else 0
    if args.report:
        with open(args.report) as f:
            doc = json.load(f)
        out = args.out or os.path.dirname(os.path.abspath(args.report))
        os.makedirs(out, exist_ok=True)
        suite_report.write_report(out, doc, None)
        print(f"report: {os.path.join(out, 'report.md')}")
        return 0

    for suite in args.suites:
        if args.specs[suite]["kind"] in LATTICE_KINDS and args.size:
            try:
                lj_cells(args.size)
            except ValueError as e:
                print(f"bench/suite.py: --size: {e}", file=sys.stderr)
                return 2
        if args.specs[suite]["kind"] == "chain":
            spec = args.specs[suite]
            for size in [args.size] if args.size else spec["smoke" if args.smoke else "quick" if args.quick else "full"]:
                try:
                    data = chain_data(size)
                except ValueError as e:
                    print(f"bench/suite.py: {'--size' if args.size else suite}: {e}", file=sys.stderr)
                    return 2
                if not os.path.isfile(data):
                    print(f"bench/suite.py: {suite}: the data file of {size} beads, {data}, is missing: install "
                          f"Debian's lammps-examples (in ./quickstart.sh test) or name a copy of in.chain's data.chain "
                          f"in CHAIN_DATA", file=sys.stderr)
                    return 2
    needed = {"lj": "launcher/spotrun", "chain": "launcher/spotrun", "charged": "bench/bench_fluid",
              "npt": "launcher/spotrun", "minimize": "launcher/spotrun",
              "fluid": "bench/bench_fluid", "fft": "bench/bench_fluid", "checkpoint": "bench/bench_checkpoint",
              "halo": "bench/bench_halo"}
    for suite in args.suites:
        kind = args.specs[suite]["kind"]
        exes = [args.spotrun] if kind in SPOTRUN_KINDS else []
        if kind not in ("lj", "chain", "npt", "minimize"):
            exes.append(os.path.join(args.build, needed[kind]))
        for exe in exes:
            if not os.access(exe, os.X_OK):
                print(f"bench/suite.py: {exe} not found: build it (cmake --build {args.build})", file=sys.stderr)
                return 2
    old = None
    if args.compare:
        try:
            old = sr.load_records(args.compare)
        except (OSError, ValueError) as e:
            print(f"bench/suite.py: --compare: {e}", file=sys.stderr)
            return 2

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.abspath(args.out or os.path.join(ROOT, "runs", "bench", stamp))
    logdir = os.path.join(out, "logs")
    os.makedirs(logdir, exist_ok=True)
    own_scratch = args.scratch is None
    scratch = tempfile.mkdtemp(prefix="spotrun-bench.") if own_scratch else os.path.abspath(args.scratch)
    os.makedirs(scratch, exist_ok=True)

    lammps = None if args.no_peers else find_lammps()
    cores = os.cpu_count() or 1
    meta = machine_meta(args.build, args.spotrun)
    tasks = plan(args, cores, 0 if lammps is None else 1 if args.no_opt else 2)
    command = " ".join(["bench/suite.py"] + argv)
    results = sr.ResultsFile(os.path.join(out, "results.json"), {
        "command": command, "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "status": "running", "suites": args.suites,
        "suite_titles": {k: v["title"] for k, v in args.specs.items()}, "ranks": args.ranks, "repeat": args.repeat,
        "mode": "smoke" if args.smoke else "quick" if args.quick else "full", "lammps": lammps or "not run",
        "lammps_opt": "-sf opt" if lammps and not args.no_opt else "not run",
        "load_start": [round(x, 2) for x in os.getloadavg()], "cores": cores, **meta})
    runner = Runner(logdir, os.environ.get("MPIRUN", "mpirun"))
    progress = Progress(tasks)
    if max(args.ranks) > cores:
        print(f"bench/suite.py: warning: {max(args.ranks)} ranks on {cores} cores: oversubscribed, the timings of those "
              f"runs are not scaling figures", file=sys.stderr)
    if lammps is None and not args.no_peers and any(args.specs[s]["kind"] in SPOTRUN_KINDS for s in args.suites):
        print("bench/suite.py: LAMMPS (lmp) not found: lj, chain, charged and minimize without their peer, npt "
              "without LAMMPS's fix npt against fix nvt", file=sys.stderr)
    print(f"bench/suite.py: {len(tasks)} measurements, predicted about {fmt_duration(progress.total)}; output {out}",
          file=sys.stderr)
    # The measured duration of each suite (report.md), and in --quick the shares of the budget it is judged by.
    suite_seconds = {s: 0.0 for s in args.suites}
    suite_measurements = {s: 0 for s in args.suites}
    if args.quick:
        judged = not args.size and max(args.ranks) <= 2
        results.set_meta(quick_budget={
            "total_s": QUICK_BUDGET_S, "shares": {s: args.specs[s].get("quick_budget") for s in args.suites},
            "judged": judged,
            "not_judged_because": "" if judged else "--size or more than 2 ranks: the shares are for the decks' quick "
                                                    "sizes at ranks 1 and 2 (2 cores)"})
    suite = Suite(args, meta, results, runner, progress, lammps, scratch)
    t0 = time.time()
    code = 0
    try:
        for i, task in enumerate(tasks):
            progress.next(task)
            ts = time.time()
            try:
                suite.run_task(task)
            finally:
                suite_seconds[task.suite] += time.time() - ts
                suite_measurements[task.suite] += 1
                results.set_meta(suite_seconds={k: round(v, 1) for k, v in suite_seconds.items()},
                                 suite_measurements=dict(suite_measurements))
            progress.finish(task)
            if i + 1 == len(tasks) or tasks[i + 1].suite != task.suite:
                print(f"bench/suite.py: suite {task.suite} done in {fmt_duration(suite_seconds[task.suite])}",
                      file=sys.stderr, flush=True)
        status = "complete"
    except BenchFailure as e:
        print(f"bench/suite.py: FAILED: {e}", file=sys.stderr)
        status, code = "failed", 3
    except KeyboardInterrupt:
        print("bench/suite.py: interrupted", file=sys.stderr)
        status, code = "interrupted", 130
    finally:
        if own_scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    results.set_meta(status=status, finished=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     seconds=round(time.time() - t0, 1), load_end=[round(x, 2) for x in os.getloadavg()])
    comparison = None
    if old is not None:
        rows, regressions = sr.compare(old, results.records, args.threshold)
        comparison = (rows, args.threshold, args.compare)
        print(sr.format_comparison(rows, args.threshold))
        if regressions and code == 0:
            code = 1
    suite_report.write_report(out, results.doc, comparison)
    for warning in suite_report.budget_warnings(results.doc["meta"]):
        print(f"bench/suite.py: warning: {warning}", file=sys.stderr)
    print(f"bench/suite.py: {status} in {fmt_duration(time.time() - t0)}: {len(results.records)} records in "
          f"{os.path.join(out, 'results.json')}, report {os.path.join(out, 'report.md')}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
