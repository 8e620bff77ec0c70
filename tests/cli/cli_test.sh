#!/usr/bin/env bash
# Command-line tests of the spotrun binary, one case per ctest (registered by tests/CMakeLists.txt).
# Usage: cli_test.sh CASE NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR
# Each run goes through `timeout` (a hang fails the test) and a per-rank wrapper that records every
# rank's exit code, so "exit 2" is checked on every rank, not only on the one mpiexec reports.
set -u

# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

case "$CASE" in
missing_deck)
    run "$NP" run "$W/no-such-deck.toml"
    expect_input_error
    expect_in "$ERR" "no-such-deck.toml"
    expect_in "$ERR" "does not exist"
    run_direct "$NP" run "$W/no-such-deck.toml"
    [[ $RC -eq 2 ]] || fail "mpiexec exit code $RC, expected 2"
    ;;
malformed_toml)
    printf '[run]\nsteps = 10\n[md]\ndt = = 0.1\n' >bad.toml
    run "$NP" run bad.toml
    expect_input_error
    grep -qE 'bad\.toml:4:[0-9]+' "$ERR" || fail "no 'bad.toml:4:COLUMN' in: $(cat "$ERR")"
    ;;
unknown_key)
    printf '[md]\ndtt = 0.01\n' >typo.toml
    run "$NP" run typo.toml
    expect_input_error
    expect_in "$ERR" "ERROR: typo.toml:2: unknown key 'md.dtt'; did you mean 'md.dt'?"
    # Nothing close: no guess, what the section has instead; an unknown section by its nearest.
    printf '[run]\nsolver = "fluid"\n[fluid]\nreynolds = 1600\n' >far.toml
    run "$NP" run far.toml
    expect_input_error
    expect_in "$ERR" "ERROR: far.toml:4: unknown key 'fluid.reynolds'; [fluid] has the keys n, viscosity, dt, "
    printf '[mdd]\ndt = 0.01\n' >section.toml
    run "$NP" validate section.toml
    expect_input_error
    expect_in "$ERR" "ERROR: section.toml:1: unknown section [mdd]; did you mean [md]?"
    run_direct "$NP" run typo.toml
    [[ $RC -eq 2 ]] || fail "mpiexec exit code $RC, expected 2"
    ;;
out_of_range)
    printf '[md]\ndt = -0.01\n' >range.toml
    run "$NP" run range.toml
    expect_input_error
    expect_in "$ERR" "md.dt"
    expect_in "$ERR" "-0.01"
    expect_in "$ERR" "> 0"
    # The same through --set.
    good_deck ok.toml
    run "$NP" run ok.toml --set md.lattice.cells=[6,0,4] --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "md.lattice.cells"
    ;;
bad_precision)
    # md.precision takes "double" or "mixed" (docs/md.md, Precision); anything else names both.
    good_deck ok.toml
    run "$NP" run ok.toml --set md.precision=single --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "md.precision"
    expect_in "$ERR" "single"
    expect_in "$ERR" '"double", "mixed"'
    ;;
bad_data_file)
    { data_header 3; printf '1 1 1.0 1.0 1.0\n2 1 5.0 5.0\n3 1 8.0 8.0 8.0\n'; } >bad.data
    line=$(grep -n '^2 1 5.0 5.0$' bad.data | cut -d: -f1)
    printf '[run]\nsteps = 1\n[md.initial]\nlammps_data = "bad.data"\n' >deck.toml
    run "$NP" run deck.toml --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "bad.data:$line:"
    expect_in "$ERR" "4 columns"
    # A file the deck names that is not there: its key, the key's line and the path it resolved to (from
    # the deck's directory).
    mkdir -p decks
    printf '[run]\nsteps = 1\n[md.initial]\nlammps_data = "../missing.data"\n' >decks/deck.toml
    run "$NP" run decks/deck.toml --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "ERROR: decks/deck.toml:4: key 'md.initial.lammps_data': LAMMPS data file '$(pwd -P)/missing.data' does not exist"
    run "$NP" run decks/deck.toml --output-dir "$W/out" --set md.initial.lammps_data=bad.data
    expect_input_error
    expect_in "$ERR" "$(pwd -P)/decks/bad.data"
    expect_in "$ERR" "ERROR: decks/deck.toml: --set 'md.initial.lammps_data=bad.data': key 'md.initial.lammps_data': LAMMPS data file"
    ;;
overlapping_atoms)
    { data_header 3; printf '3 1 8.0 8.0 8.0\n7 1 1.0 1.0 1.0\n12 1 1.1 1.05 1.0\n'; } >overlap.data
    printf '[run]\nsteps = 1\n[md.initial]\nlammps_data = "overlap.data"\n' >deck.toml
    run "$NP" run deck.toml --output-dir "$W/out"
    expect_input_error
    grep -qE 'atoms (7 and 12|12 and 7)' "$ERR" || fail "the message does not name atoms 7 and 12: $(cat "$ERR")"
    ;;
too_many_ranks)
    # At 1 rank one fcc cell (1.6796 sigma) is thinner than cutoff + skin = 2.8: the box itself is too
    # small, whatever the ranks. At 3 ranks 3 cells (5.03879) split into sub-boxes of 5.03879 / 3.
    cells=$([[ $NP -eq 1 ]] && echo "[1, 1, 1]" || echo "[3, 3, 3]")
    size=$([[ $NP -eq 1 ]] && echo "1.6796" || echo "5.03879")
    printf '[run]\nsteps = 1\n[md.lattice]\ncells = %s\n' "$cells" >small.toml
    run "$NP" run small.toml --output-dir "$W/out"
    expect_input_error
    if [[ $NP -eq 1 ]]; then
        expect_in "$ERR" "is thinner than cutoff + skin = 2.8 sigma in x, y and z"
        if grep -q "fewer ranks" "$ERR"; then fail "at one rank the advice is 'fewer ranks': $(cat "$ERR")"; fi
    else
        expect_in "$ERR" "$NP ranks"
        expect_in "$ERR" "2.8"
    fi
    expect_in "$ERR" "$size x $size x $size"
    ;;
bad_cli)
    run "$NP" frobnicate
    expect_input_error
    expect_in "$ERR" "ERROR: unknown command 'frobnicate'; the commands are run, inspect, export, validate, info, submit, launch, doctor, report (spotrun --help)"
    # A near miss gets the nearest command (it used to be "A subcommand is required").
    run "$NP" runn good.toml
    expect_input_error
    expect_in "$ERR" "ERROR: unknown command 'runn'; did you mean 'run'? (spotrun --help)"
    run "$NP" validat good.toml
    expect_in "$ERR" "did you mean 'validate'?"
    run "$NP" run
    expect_exit 2
    ;;
validate)
    good_deck good.toml
    run "$NP" validate good.toml --set md.dt=0.002
    expect_exit 0
    expect_count "$OUT" "good.toml: valid" 1
    expect_in "$OUT" "[md.lattice]"
    expect_in "$OUT" "dt = 0.002"
    expect_in "$OUT" "cells = [6, 4, 4]"
    # validate rejects what run rejects, without running.
    printf '[md]\ndtt = 0.01\n' >typo.toml
    run "$NP" validate typo.toml
    expect_input_error
    expect_in "$ERR" "md.dtt"
    # Tables in any order TOML allows: [md] after [[md.types]], [md.pair] after [[md.pair.coeff]].
    printf '[[md.types]]\nname = "A"\n[[md.pair.coeff]]\ntypes = ["A", "A"]\nepsilon = 1.0\nsigma = 1.0\n[md.pair]\nmix = "geometric"\n[md]\ndt = 0.002\n[md.lattice]\ncells = [6, 4, 4]\n[run]\nsteps = 1\n' >order.toml
    run "$NP" validate order.toml
    expect_exit 0
    expect_count "$OUT" "order.toml: valid" 1
    expect_in "$OUT" "dt = 0.002"
    # The bonded sections ([md.bond], [md.angle], [md.dihedral] and their coefficient tables,
    # [md.special_bonds]) are checked and shown in the resolved deck.
    good_deck bonded.toml
    printf '[md.bond]\nstyle = "fene"\n[[md.bond.coeff]]\ntype = 1\nk = 30.0\nr0 = 1.5\nepsilon = 1.0\nsigma = 1.0\n[md.angle]\nstyle = "harmonic"\n[[md.angle.coeff]]\ntype = 1\nk = 2.0\ntheta0 = 180.0\n[md.dihedral]\nstyle = "opls"\n[[md.dihedral.coeff]]\ntype = 1\nk1 = 1.0\nk2 = -0.5\nk3 = 0.25\nk4 = 0.0\n[md.special_bonds]\nlj = [0.0, 1.0, 1.0]\n' >>bonded.toml
    run "$NP" validate bonded.toml
    expect_exit 0
    expect_count "$OUT" "bonded.toml: valid" 1
    expect_in "$OUT" "[md.bond]"
    expect_in "$OUT" "  {epsilon = 1.0, k = 30.0, r0 = 1.5, sigma = 1.0, type = 1},"
    expect_in "$OUT" "  {k = 2.0, theta0 = 180.0, type = 1},"
    expect_in "$OUT" "style = \"opls\""
    expect_in "$OUT" "[md.special_bonds]"
    expect_in "$OUT" "lj = [0.0, 1.0, 1.0]"
    # An unknown style and a coefficient of another style name the key and what is allowed.
    run "$NP" validate bonded.toml --set md.bond.style=morse
    expect_input_error
    expect_in "$ERR" "key 'md.bond.style' = \"morse\": allowed: one of \"harmonic\", \"fene\""
    run "$NP" validate bonded.toml --set md.bond.style=harmonic
    expect_input_error
    expect_in "$ERR" "md.bond.coeff[0].epsilon: not a coefficient of bond style \"harmonic\" (md.bond.style); its coefficients: k, r0"
    ;;
version)
    run "$NP" --version
    expect_exit 0
    grep -qE '^spotrun [0-9]+\.[0-9]+\.[0-9]+' "$OUT" || fail "no version line: $(cat "$OUT")"
    expect_count "$OUT" "spotrun" 1
    ;;
info)
    run "$NP" info
    expect_exit 0
    expect_count "$OUT" "MPI ranks: $NP " 1
    expect_in "$OUT" "Kokkos"
    # One line per rank with its host, node-local rank and device (docs/gpu.md).
    expect_count "$OUT" ", local rank " "$NP"
    for ((r = 0; r < NP; ++r)); do expect_in "$OUT" "  rank $r: host "; done
    if grep -qF "Kokkos CUDA no" "$OUT"; then
        expect_count "$OUT" "no GPU (CPU build)" "$NP"
    fi
    # --version, --help and info never start Kokkos (so they work on a GPU node without a driver): an
    # option Kokkos cannot read (it throws from its start-up) does not touch them. A command that
    # computes reports the failed start-up on every rank and exits 2 (before, an abort: exit 134).
    for args in "--version" "--help" "info"; do
        # shellcheck disable=SC2086
        run "$NP" $args --kokkos-threads=abc
        expect_exit 0
    done
    good_deck good.toml
    run "$NP" run good.toml --output-dir "$W/out" --kokkos-threads=abc
    expect_exit 2
    expect_count "$ERR" "ERROR: cannot start Kokkos' " "$NP"
    [[ ! -e "$W/out" ]] || fail "the output directory was made although Kokkos did not start"
    ;;
good_run)
    good_deck good.toml
    run "$NP" run good.toml --output-dir "$W/out"
    expect_exit 0
    # The header in OUTDIR/spotrun.log names the transport of comm.transport (default "auto").
    LOG="$W/out/spotrun.log"
    expect_count "$LOG" "Transport: " 1
    expect_in "$LOG" "transport = \"auto\""
    # auto: at one rank every halo is a local copy (never NCCL); from two ranks the build decides.
    if [[ $NP -eq 1 ]]; then
        expect_in "$LOG" "one rank: every halo is a local copy"
    else
        if grep -q "one rank:" "$LOG"; then fail "at $NP ranks the transport says 'one rank': $(grep Transport "$LOG")"; fi
    fi
    if [[ ! -f "$W/out/thermo.csv" ]]; then
        fail "no OUTDIR/thermo.csv"
    else
        header=$(head -n 1 "$W/out/thermo.csv")
        [[ "$header" == "step,time,temp,pe,ke,etotal,press" ]] || fail "thermo.csv header '$header'"
        steps=$(tail -n +2 "$W/out/thermo.csv" | cut -d, -f1 | tr '\n' ' ')
        [[ "$steps" == "0 10 20 " ]] || fail "thermo.csv steps '$steps', expected '0 10 20 '"
        awk -F, 'NR > 1 && NF != 7 { bad = 1 } END { exit bad }' "$W/out/thermo.csv" || fail "thermo.csv rows without 7 columns"
        # Step 0: the lattice at T = 3 exactly, pe -6.7733680532529573 per atom.
        awk -F, 'NR == 2 { t = $3 - 3; p = $4 + 6.7733680532529573; if (t < 0) t = -t; if (p < 0) p = -p;
                           exit !(t < 1e-12 && p < 1e-11) }' "$W/out/thermo.csv" ||
            fail "step 0 is not T = 3, pe = -6.77336805: $(sed -n 2p "$W/out/thermo.csv")"
    fi
    # --set overrides the deck.
    run "$NP" run good.toml --output-dir "$W/out2" --set run.steps=30 --set run.thermo_every=15
    expect_exit 0
    steps=$(tail -n +2 "$W/out2/thermo.csv" 2>/dev/null | cut -d, -f1 | tr '\n' ' ')
    [[ "$steps" == "0 15 30 " ]] || fail "with --set: thermo.csv steps '$steps', expected '0 15 30 '"
    # Every kind of comm.transport runs; another is refused with the kinds allowed.
    for kind in mpi mpi-host; do
        run "$NP" run good.toml --output-dir "$W/out-$kind" --set comm.transport=$kind --verbose
        expect_exit 0
        expect_count "$OUT" "Transport: " 1
    done
    run "$NP" run good.toml --output-dir "$W/out3" --set comm.transport=carrier-pigeon
    expect_input_error
    expect_in "$ERR" "'comm.transport'"
    expect_in "$ERR" "\"auto\", \"mpi\", \"mpi-host\", \"nccl\""
    # NCCL needs a CUDA build: a CPU build refuses it on every rank, before anything is written.
    run "$NP" info
    if grep -qF "Kokkos CUDA no" "$OUT"; then
        run "$NP" run good.toml --output-dir "$W/out-nccl" --set comm.transport=nccl
        expect_input_error
        expect_in "$ERR" "comm.transport = \"nccl\""
        [[ ! -e "$W/out-nccl/thermo.csv" ]] || fail "a refused transport wrote thermo.csv"
    fi
    ;;
progress)
    # run.progress_seconds: the root rank reports to stderr (stdout stays thermo and summary) and keeps
    # OUTDIR/progress.json; 0 turns both off.
    good_deck good.toml
    run "$NP" run good.toml --output-dir "$W/out" --set run.steps=400 --set run.progress_seconds=0.02
    expect_exit 0
    grep -qE '^Progress: step [0-9]+ of 400 \([0-9]+\.[0-9]%\), [0-9.e+]+ steps/s \([0-9.e+]+ atom-steps/s\), [0-9]+ (s|min [0-9]+ s) left, ends at 20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} UTC$' "$ERR" ||
        fail "no progress line on stderr: $(head -3 "$ERR")"
    ! grep -q "^Progress:" "$OUT" || fail "progress on stdout"
    # Only the root rank reports: each step once, in increasing order.
    grep -o '^Progress: step [0-9]*' "$ERR" | awk '{ if ($3 <= last) bad = 1; last = $3 } END { exit bad }' ||
        fail "progress lines repeat or go back (more than one rank reporting?)"
    /usr/bin/python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["step"] == 400 and p["steps"] == 400 and p["finished"] is True and p["percent"] == 100.0, p
assert p["steps_per_second"] > 0 and p["work_unit"] == "atom-steps/s" and p["remaining_seconds"] == 0, p
assert p["expected_end_utc"].endswith("Z") and p["elapsed_seconds"] > 0, p
' "$W/out/progress.json" || fail "progress.json: $(cat "$W/out/progress.json")"
    [[ ! -e "$W/out/progress.json.tmp" ]] || fail "progress.json.tmp left behind"
    run "$NP" run good.toml --output-dir "$W/off" --set run.steps=400 --set run.progress_seconds=0
    expect_exit 0
    ! grep -q "^Progress:" "$ERR" || fail "progress with run.progress_seconds = 0"
    [[ ! -e "$W/off/progress.json" ]] || fail "progress.json with run.progress_seconds = 0"
    ;;
thermo_rank_independence)
    good_deck deck.toml
    for np in 1 2 3 4; do
        run "$np" run deck.toml --output-dir "$W/np$np" --set run.steps=100
        want=$(printf '0 %.0s' $(seq "$np")); want="${want% }"
        [[ "$RANK_RCS" == "$want" && $RC -eq 0 ]] || fail "run at $np ranks: exit codes '$RANK_RCS': $(cat "$ERR")"
    done
    for np in 2 3 4; do
        if ! paste -d, "$W/np1/thermo.csv" "$W/np$np/thermo.csv" | awk -F, -v np="$np" '
            NR == 1 { if ($0 != "step,time,temp,pe,ke,etotal,press,step,time,temp,pe,ke,etotal,press") { print "header differs"; bad = 1 }; next }
            { rows++
              if (NF != 14) { print "row " NR ": " NF " columns"; bad = 1; next }
              if ($1 != $8) { print "row " NR ": step " $1 " vs " $8; bad = 1 }
              for (i = 2; i <= 7; i++) {
                  a = $i + 0; b = $(i + 7) + 0; d = a - b; if (d < 0) d = -d
                  s = (a < 0 ? -a : a); t = (b < 0 ? -b : b); if (t > s) s = t
                  r = (s > 0 ? d / s : 0); if (r > m) m = r
                  if (r > 1e-10) { print "row " NR " column " i ": " $i " (np 1) vs " $(i + 7) " (np " np ")"; bad = 1 } } }
            END { printf "np %s vs np 1: %d rows, max relative difference %.3g\n", np, rows, m
                  if (rows != 11) { print "expected 11 rows"; bad = 1 }
                  exit bad }'; then
            fail "thermo.csv at $np ranks differs from 1 rank"
        fi
    done
    ;;
cpu_binding)
    # The CPU binding near each rank's GPU (comm/cpu_binding.hpp, docs/gpu.md "CPU binding"), with
    # spotrun-test's stand-in for the GPU's local CPUs (SPOTRUN_TEST_GPU_CPUS): the first two CPUs this
    # test may run on. Each rank's line of `spotrun info` names the CPUs it runs on, read back from the OS.
    cpus=()
    for part in $(taskset -pc $$ | sed 's/.*: //' | tr ',' ' '); do
        if [[ $part == *-* ]]; then
            for ((c = ${part%-*}; c <= ${part#*-}; ++c)); do cpus+=("$c"); done
        else
            cpus+=("$part")
        fi
    done
    A=${cpus[0]}
    B=${cpus[1]:-${cpus[0]}}
    list() { if [[ $1 == "$2" ]]; then echo "$1"; elif [[ $2 -eq $(($1 + 1)) ]]; then echo "$1-$2"; else echo "$1,$2"; fi; }
    AB=$(list "$A" "$B")
    # auto, not bound by mpirun: the ranks near A and B split them (one rank: both).
    OMPI_MCA_hwloc_base_binding_policy=none SPOTRUN_TEST_GPU_CPUS="$AB" run "$NP" info
    expect_exit 0
    if [[ $NP -eq 1 ]]; then
        expect_in "$OUT" "rank 0: host "
        expect_in "$OUT" "; CPUs $AB (bound near its GPU: share 1 of 1 of CPUs $AB)"
    else
        expect_in "$OUT" "; CPUs $A (bound near its GPU: share 1 of 2 of CPUs $AB)"
        [[ $A == "$B" ]] || expect_in "$OUT" "; CPUs $B (bound near its GPU: share 2 of 2 of CPUs $AB)"
        # Each rank near its own GPU's CPUs.
        OMPI_MCA_hwloc_base_binding_policy=none SPOTRUN_TEST_GPU_CPUS="$A;$B" run "$NP" info
        expect_exit 0
        expect_in "$OUT" "; CPUs $A (bound near its GPU: share 1 of 1 of CPUs $A)"
        expect_in "$OUT" "; CPUs $B (bound near its GPU: share 1 of 1 of CPUs $B)"
    fi
    # auto keeps the launcher's binding; gpu replaces it.
    OMPI_MCA_hwloc_base_binding_policy=core SPOTRUN_TEST_GPU_CPUS="$AB" run "$NP" info
    expect_exit 0
    expect_count "$OUT" ": kept (SPOTRUN_CPU_BIND=gpu replaces it)" "$NP"
    OMPI_MCA_hwloc_base_binding_policy=core SPOTRUN_CPU_BIND=gpu SPOTRUN_TEST_GPU_CPUS="$AB" run "$NP" info
    expect_exit 0
    expect_count "$OUT" "(bound near its GPU: share " "$NP"
    if [[ $NP -eq 1 && $A != "$B" ]]; then
        # The GPU near B alone: the rank moves to B, wherever mpirun had put it.
        OMPI_MCA_hwloc_base_binding_policy=core SPOTRUN_CPU_BIND=gpu SPOTRUN_TEST_GPU_CPUS="$B" run "$NP" info
        expect_exit 0
        expect_in "$OUT" "; CPUs $B (bound near its GPU: share 1 of 1 of CPUs $B)"
    fi
    # none binds nothing and says so.
    OMPI_MCA_hwloc_base_binding_policy=none SPOTRUN_CPU_BIND=none SPOTRUN_TEST_GPU_CPUS="$AB" run "$NP" info
    expect_exit 0
    expect_count "$OUT" "(not bound: SPOTRUN_CPU_BIND=none)" "$NP"
    # A bad value: exit 2 on every rank, one message naming the variable, the value and the choices.
    SPOTRUN_CPU_BIND=cores run "$NP" info
    expect_input_error
    expect_count "$ERR" 'SPOTRUN_CPU_BIND="cores": expected auto, gpu or none' 1
    # Without a GPU (the hook unset) a CPU build says nothing of CPUs.
    run "$NP" info
    expect_exit 0
    expect_count "$OUT" "; CPUs " 0
    ;;
*)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac

finish
