#!/usr/bin/env bash
# Command-line tests of `spotrun doctor`, one case per ctest (registered by tests/CMakeLists.txt).
# Usage: doctor_test.sh CASE NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR CHECK_REPORT
# Every run uses --quick (seconds) and goes through cli_lib.sh's `run`: a hang fails the test, and the
# exit code of every rank is checked. CHECK_REPORT (tests/doctor/check_report.cpp) checks the JSON report.
set -u

# shellcheck source=../cli/cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli/cli_lib.sh"
CHECK="$7"

# check_report FILE CHECK...: the report is valid for NP ranks and passes the checks.
check_report() {
    local file="$1"
    shift
    [[ -s "$file" ]] || { fail "no report $file"; return; }
    "$CHECK" "$file" "$NP" "$@" >"$W/check.txt" 2>&1 || fail "the report fails its checks:"$'\n'"$(cat "$W/check.txt")"
}

# no_leftovers DIR: the doctor left no file of its own in DIR.
no_leftovers() {
    if compgen -G "$1/.spotrun-doctor-*" >/dev/null; then fail "files left in $1: $(ls -a "$1")"; fi
}

# read_only_dir DIR: DIR exists and cannot be written, even by root (a read-only tmpfs when mount
# works, else a directory without write permission, which binds only a user that is not root).
# Sets UNMOUNT when it mounted.
UNMOUNT=""
read_only_dir() {
    mkdir -p "$1"
    if [[ $(id -u) -eq 0 ]]; then
        if mount -t tmpfs -o ro,size=1m tmpfs "$1" 2>/dev/null; then
            UNMOUNT="$1"
            trap 'umount -l "$UNMOUNT" 2>/dev/null' EXIT
            return 0
        fi
        return 1
    fi
    chmod 555 "$1"
}

case "$CASE" in
healthy)
    # Valid report with every CPU, MPI and disk figure, exit 0, the table, nothing left behind. A
    # generous --slow-factor (1/50): a loaded test machine must not make a rank look slow (a rank that
    # shares its core with busy neighbours measured 0.18 x its peer at 0.2).
    run "$NP" doctor --quick --slow-factor 0.02 --json "$W/report.json" --output-dir "$W/ckpt"
    expect_exit 0
    check_report "$W/report.json" healthy
    expect_in "$OUT" "spotrun doctor: $NP rank"
    expect_in "$OUT" "HEALTHY"
    expect_in "$OUT" "DGEMM GFLOP/s"
    expect_count "$OUT" "spotrun doctor:" 1
    [[ ! -e "$W/ckpt" ]] || fail "the checkpoint directory the doctor made is still there: $(ls -a "$W/ckpt")"
    # Into an existing directory: it stays, with nothing of the doctor's in it.
    mkdir -p "$W/existing"
    touch "$W/existing/keep-me"
    SPOTRUN_DOCTOR_QUICK=1 run "$NP" doctor --slow-factor 0.02 --output-dir "$W/existing"
    expect_exit 0
    [[ -e "$W/existing/keep-me" ]] || fail "a file of the directory is gone"
    no_leftovers "$W/existing"
    ;;
slow_rank)
    # The test hook makes rank 1's CPU figures ten times slower: named slow, exit 1 on every rank.
    SPOTRUN_DOCTOR_SLOW_RANK=1 run "$NP" doctor --quick --json "$W/report.json" --output-dir "$W/ckpt"
    expect_exit 1
    check_report "$W/report.json" slow-rank=1
    expect_in "$OUT" "SLOW"
    expect_in "$OUT" "rank 1 (host"
    expect_in "$OUT" "NOT HEALTHY (exit 1): failing hosts:"
    # A rank that is not in the run: bad usage.
    SPOTRUN_DOCTOR_SLOW_RANK=$NP run "$NP" doctor --quick --output-dir "$W/ckpt"
    expect_input_error
    expect_in "$ERR" "SPOTRUN_DOCTOR_SLOW_RANK"
    ;;
expect)
    # An impossible minimum and an impossible maximum are flagged; exit 1.
    printf '{"cpu.dgemm_gflops": 1e9, "disk.fsync_ms": 1e-9}\n' >expect.json
    run "$NP" doctor --quick --slow-factor 0.02 --expect expect.json --json "$W/report.json" --output-dir "$W/ckpt"
    expect_exit 1
    check_report "$W/report.json" expected=cpu.dgemm_gflops
    expect_in "$OUT" "below the expected minimum 1e+09 GFLOP/s"
    expect_in "$OUT" "above the expected maximum 1e-09 ms"
    # Reachable values pass (MPI figures need two ranks).
    if [[ $NP -ge 2 ]]; then
        printf '{"cpu.dgemm_gflops": 1e-6, "mpi.latency_us": 1e9, "mpi.bandwidth_gbs": 1e-6, "disk.free_gib": 1e-6}\n' >fine.json
    else
        printf '{"cpu.dgemm_gflops": 1e-6, "cpu.triad_gbs": 1e-6, "disk.write_mbs": 1e-6, "disk.free_gib": 1e-6}\n' >fine.json
    fi
    run "$NP" doctor --quick --slow-factor 0.02 --expect fine.json --json "$W/report.json" --output-dir "$W/ckpt"
    expect_exit 0
    check_report "$W/report.json" healthy
    # A figure expected but not measured is named: a GPU figure on a CPU build (on a GPU, 1e12 is out of
    # reach), an MPI figure at one rank.
    printf '{"gpu.dgemm_gflops": 1e12, "mpi.latency_us": 1e9}\n' >gpu.json
    run "$NP" doctor --quick --slow-factor 0.02 --expect gpu.json --output-dir "$W/ckpt"
    expect_exit 1
    expect_count "$OUT" "EXPECTED  rank 0 (host" 1
    expect_in "$OUT" "gpu.dgemm_gflops"
    if [[ $NP -eq 1 ]]; then expect_in "$OUT" "mpi.latency_us was not measured (one rank"; fi
    # Bad --expect files and options: exit 2, before anything is measured.
    printf '{"cpu.dgemm_gflop": 10}\n' >typo.json
    run "$NP" doctor --quick --expect typo.json
    expect_input_error
    expect_in "$ERR" "'cpu.dgemm_gflop' is not a figure of spotrun doctor"
    printf '[1, 2]\n' >array.json
    run "$NP" doctor --quick --expect array.json
    expect_input_error
    printf '{"cpu.dgemm_gflops": "fast"}\n' >word.json
    run "$NP" doctor --quick --expect word.json
    expect_input_error
    expect_in "$ERR" "must be a number"
    run "$NP" doctor --quick --expect "$W/none.json"
    expect_input_error
    run "$NP" doctor --quick --slow-factor 2
    expect_exit 2
    run "$NP" doctor --quick --json "$W/no/such/dir/report.json"
    expect_input_error
    expect_in "$ERR" "--json"
    ;;
read_only)
    # A checkpoint directory that cannot be written is broken: named for every node, exit 1.
    if ! read_only_dir "$W/ro"; then
        echo "SKIP: root without mount: no directory root cannot write"
        echo "PASS [$CASE np$NP]"
        exit 0
    fi
    run "$NP" doctor --quick --slow-factor 0.02 --json "$W/report.json" --output-dir "$W/ro"
    expect_exit 1
    check_report "$W/report.json" broken-disk
    expect_in "$OUT" "BROKEN"
    grep -qE "Read-only file system|Permission denied" "$OUT" || fail "no cause named: $(cat "$OUT")"
    # A directory that cannot be made (under a regular file).
    printf x >plain
    run "$NP" doctor --quick --slow-factor 0.02 --json "$W/report.json" --output-dir "$W/plain/ckpt"
    expect_exit 1
    check_report "$W/report.json" broken-disk
    expect_in "$OUT" "cannot create"
    ;;
deck)
    # --deck: the deck's output directory and its checkpoint size (10 x 10 x 10 fcc cells: 4000 atoms of
    # 144 bytes); a file system with less room than checkpoint.keep + 1 checkpoints is broken.
    printf '[run]\noutput_dir = "%s/deck-out"\n[md.lattice]\ncells = [10, 10, 10]\n' "$W" >deck.toml
    run "$NP" doctor --quick --slow-factor 0.02 --deck deck.toml --json "$W/report.json"
    expect_exit 0
    check_report "$W/report.json" healthy checkpoint=576000
    expect_in "$OUT" "Checkpoint directory $W/deck-out"
    [[ ! -e "$W/deck-out" ]] || fail "the deck's output directory the doctor made is still there"
    # A data file deck: the size comes from the file (3 atoms).
    { data_header 3; printf '1 1 1.0 1.0 1.0\n2 1 5.0 5.0 5.0\n3 1 8.0 8.0 8.0\n'; } >three.data
    printf '[md.initial]\nlammps_data = "three.data"\n' >data.toml
    run "$NP" doctor --quick --slow-factor 0.02 --deck data.toml --output-dir "$W/data-out" --json "$W/report.json"
    expect_exit 0
    check_report "$W/report.json" checkpoint=432
    # --set applies to the deck, and the fluid solver sizes its checkpoint too (16^3 points).
    printf '[run]\nsolver = "fluid"\n[fluid]\nn = [8, 8, 8]\n' >fluid.toml
    run "$NP" doctor --quick --slow-factor 0.02 --deck fluid.toml --set 'fluid.n=[16,16,16]' --output-dir "$W/f" --json "$W/report.json"
    expect_exit 0
    check_report "$W/report.json" checkpoint=$((16 * 16 * 16 * 8 * 3 + 16 * 16 * 9 * 8 * 6))
    # A bad deck: exit 2.
    printf '[md]\ndtt = 1\n' >bad.toml
    run "$NP" doctor --quick --deck bad.toml
    expect_input_error
    expect_in "$ERR" "md.dtt"
    # Too little space: a 4 MiB file system for 3 checkpoints of 32000 atoms (4.35 MB each).
    mkdir -p "$W/small"
    if [[ $(id -u) -eq 0 ]] && mount -t tmpfs -o size=4m tmpfs "$W/small" 2>/dev/null; then
        UNMOUNT="$W/small"
        trap 'umount -l "$UNMOUNT" 2>/dev/null' EXIT
        run "$NP" doctor --quick --slow-factor 0.02 --deck deck.toml --set 'md.lattice.cells=[20,20,20]' \
            --output-dir "$W/small" --json "$W/report.json"
        expect_exit 1
        check_report "$W/report.json" no-space checkpoint=4608000
        expect_in "$OUT" "too little free space"
        no_leftovers "$W/small"
    else
        echo "note: cannot mount a small tmpfs (needs root); the too-little-space case is not checked"
    fi
    ;;
*)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac
finish
