#!/usr/bin/env bash
# What a damaged file, a hostile deck or a careless user does must not crash spotrun, hang it, or let a
# run continue from wrong data: every case ends with a clear message and the documented exit code on
# every rank, within the timeout, and leaves earlier checkpoints and outputs intact.
# Usage: hostile_test.sh CASE NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR (one ctest per case and NP).
set -u

# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# A deck long enough to be signalled while it runs: 1,000,000 steps of the small liquid.
long_deck() {
    good_deck "$1"
    sed -i 's/^steps = 20$/steps = 1000000/' "$1"
    printf '\n[checkpoint]\nevery_steps = 200\n' >>"$1"
}

# start_bg NP ARGS...: starts spotrun on NP ranks in the background (no per-rank wrapper, so signals
# reach spotrun); BG is the PID of mpiexec (or of spotrun at 1 rank), its output in bg.out/bg.err.
start_bg() {
    local np="$1"
    shift
    rm -f "$W/bg.out" "$W/bg.err"  # never read the output of an earlier one
    if [[ $np -eq 1 ]]; then
        "$SPOTRUN" "$@" >"$W/bg.out" 2>"$W/bg.err" &
    else
        "$MPIEXEC" --oversubscribe "$NPFLAG" "$np" "$SPOTRUN" "$@" >"$W/bg.out" 2>"$W/bg.err" &
    fi
    BG=$!
}

# wait_for FILE TEXT: waits (at most 30 s) until TEXT appears in FILE.
wait_for() {
    local i
    for ((i = 0; i < 300; ++i)); do
        grep -qF -- "$2" "$1" 2>/dev/null && return 0
        kill -0 "$BG" 2>/dev/null || break
        sleep 0.1
    done
    grep -qF -- "$2" "$1" 2>/dev/null || fail "'$2' did not appear in $(basename "$1"): $(cat "$1" 2>/dev/null)"
}

# wait_bg: waits for the background run (at most 60 s); BG_RC is its exit code.
wait_bg() {
    local i
    for ((i = 0; i < 600; ++i)); do
        kill -0 "$BG" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$BG" 2>/dev/null; then
        fail "the background run did not end within 60 s (hang?)"
        kill -KILL "$BG" 2>/dev/null
    fi
    wait "$BG"
    BG_RC=$?
}

# swap_paths A B: exchanges A and B in one step (renameat2 with RENAME_EXCHANGE; a directory with a file too).
swap_paths() {
    /usr/bin/python3 - "$1" "$2" <<'PY' || fail "cannot exchange $1 and $2"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, os.fsencode(sys.argv[1]), -100, os.fsencode(sys.argv[2]), 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
    sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
PY
}

# The stop signal of a background run: at 1 rank the process itself gets it; under mpiexec, SIGUSR1 is
# forwarded to every rank as it is.
stop_signal() { [[ $NP -eq 1 ]] && echo "$1" || echo USR1; }
signal_number() { kill -l "$1"; }
# signal_paused SIG: once the background run says it is pausing (SPOTRUN_TEST_PAUSE) and every rank has its
# handlers (the first rank's message can come before another rank has started), SIG to it; waits for it.
signal_paused() {
    wait_for "$W/bg.err" "pausing"
    wait_handlers "$BG" "$NP"
    kill "-$1" "$BG"
    wait_bg
}
# expect_killed_by SIG: the background run exited with 128 + SIG.
expect_killed_by() {
    [[ $BG_RC -eq $((128 + $(signal_number "$1"))) ]] || fail "exit $BG_RC, expected $((128 + $(signal_number "$1")))"
}

# expect_status OUTDIR STATE CODE: OUTDIR/status.json records STATE with exit code CODE.
expect_status() {
    /usr/bin/python3 - "$1/status.json" "$2" "$3" <<'PY' || fail "status.json: $(cat "$1/status.json" 2>/dev/null)"
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if (r["state"], r.get("exit_code")) == (sys.argv[2], int(sys.argv[3])) else 1)
PY
}

# wait_handlers PID NP: waits (at most 30 s) until spotrun (PID at 1 rank, the NP spotrun children of
# mpiexec PID otherwise) has installed its SIGTERM handler (SigCgt of /proc/PID/status).
wait_handlers() {
    local i p pids n
    for ((i = 0; i < 3000; ++i)); do
        if [[ $2 -eq 1 ]]; then pids="$1"; else pids=$(pgrep -P "$1" -x "$(basename "$SPOTRUN")"); fi
        n=0
        for p in $pids; do
            # SIGTERM is signal 15: bit 14 of the mask.
            (( (0x$(awk '/^SigCgt:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0) >> 14) & 1 )) && n=$((n + 1))
        done
        [[ $n -ge $2 ]] && return 0
        sleep 0.01
    done
    fail "spotrun did not install its signal handlers within 30 s"
}

# sha of a file, or "missing".
digest() { [[ -f "$1" ]] && sha256sum "$1" | cut -d' ' -f1 || echo missing; }

# long_path LENGTH: an absolute directory path below $W of exactly LENGTH bytes (components of 199 bytes,
# the last one shorter).
long_path() {
    local d="$W/long" comp
    comp=$(printf 'c%.0s' {1..199})
    while (($1 - ${#d} - 1 > 200)); do d="$d/$comp"; done
    printf '%s/%s' "$d" "$(printf 'd%.0s' $(seq 1 $(($1 - ${#d} - 1))))"
}

# same_as_run WANT TEXT DECK [ARGS...]: `validate DECK ARGS` and `run DECK ARGS` end alike on every rank:
# exit code WANT, and (WANT 2) the same single ERROR line, which contains TEXT. The memory the node has
# available changes between the two (others use the machine): the lines are compared without it.
error_line() { grep "ERROR" "$ERR" | sed -E 's/only [^ ]+ GiB are available/only (some) GiB are available/'; }
same_as_run() {
    local want="$1" text="$2" deck="$3"
    shift 3
    run "$NP" validate "$deck" "$@"
    if [[ $want -eq 2 ]]; then expect_input_error; else expect_exit "$want"; fi
    local validated
    validated=$(error_line)
    run "$NP" run "$deck" "$@" --output-dir "$W/run-$deck"
    if [[ $want -eq 2 ]]; then expect_input_error; else expect_exit "$want"; fi
    [[ "$(error_line)" == "$validated" ]] || fail "validate $deck said '$validated', run said '$(error_line)'"
    [[ -z "$text" ]] || expect_in "$ERR" "$text"
}

case "$CASE" in
long_output_paths)
    # Output directories from a few hundred bytes up to the documented limit (4096 less 128 bytes for the
    # names spotrun writes in it) run end to end, checkpoints included; one byte more is refused up
    # front with exit 2 naming the limit. Open MPI 4's MPI-IO aborted (SIGABRT) at its first checkpoint
    # on paths of more than about 265 bytes.
    good_deck good.toml
    for len in 300 1000 3967; do
        d=$(long_path "$len")
        [[ ${#d} -eq $len ]] || fail "long_path made ${#d} bytes, not $len"
        run "$NP" run good.toml --output-dir "$d" --set run.steps=40 --set checkpoint.every_steps=10
        expect_exit 0
        [[ -f "$d/final.h5" && -f "$d/checkpoints/ckpt-30.h5" && -f "$d/status.json" ]] ||
            fail "$len-byte output directory: missing outputs: $(ls "$d" "$d/checkpoints" 2>&1)"
        run "$NP" run good.toml --output-dir "$d" --set run.steps=60 --set checkpoint.every_steps=10
        expect_exit 0
        expect_in "$OUT" "Resuming from $d/final.h5 at step 40"
        run "$NP" inspect "$d/final.h5"
        expect_exit 0
        run "$NP" run good.toml --output-dir "$d" --resume never --set run.steps=20 --set checkpoint.every_steps=10
        expect_exit 0
        rm -rf "$W/long"
    done
    d=$(long_path 3968)
    run "$NP" run good.toml --output-dir "$d"
    expect_input_error
    expect_in "$ERR" "its absolute path is 3968 bytes long; allowed: at most 3967 bytes"
    [[ ! -e "$d" ]] || fail "the refused output directory was created"
    ;;
not_regular_inputs)
    # A FIFO, a device, a directory, an oversized file: refused at once, never waited on or read.
    mkfifo fifo.toml
    run "$NP" run fifo.toml --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "deck 'fifo.toml' is not a regular file"
    run "$NP" validate /dev/zero
    expect_input_error
    expect_in "$ERR" "not a regular file"
    mkdir dir.toml
    run "$NP" run dir.toml --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "is a directory"
    head -c 2097152 /dev/zero | tr '\0' '#' >big.toml
    run "$NP" validate big.toml
    expect_input_error
    expect_in "$ERR" "more than the 1048576 allowed for a deck"
    mkfifo atoms.data
    printf '[run]\nsteps = 1\n[md.initial]\nlammps_data = "atoms.data"\n' >data.toml
    run "$NP" run data.toml --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "LAMMPS data file"
    expect_in "$ERR" "not a regular file"
    good_deck good.toml
    mkfifo ckpt.h5
    run "$NP" run good.toml --output-dir "$W/out" --resume ckpt.h5
    expect_input_error
    expect_in "$ERR" "not a regular file"
    run "$NP" inspect ckpt.h5 /dev/zero
    expect_exit 2
    expect_count "$OUT" "DAMAGED" 2
    run "$NP" run good.toml --output-dir ""
    expect_input_error
    expect_in "$ERR" "--output-dir"
    ;;
nan_run)
    # A time step far too large: exit 1 on every rank, the step and the likely cause named, no
    # checkpoint and no final state written from the blown-up state.
    good_deck good.toml
    run "$NP" run good.toml --output-dir "$W/dt" --set md.dt=1000 --set checkpoint.every_steps=5
    expect_exit 1
    expect_count "$ERR" "ERROR" 1
    grep -qE "non-finite|atoms lost" "$ERR" || fail "no 'non-finite' or 'atoms lost' in: $(cat "$ERR")"
    grep -qE "md.dt" "$ERR" || fail "the message does not name md.dt: $(cat "$ERR")"
    [[ ! -e "$W/dt/final.h5" ]] || fail "final.h5 written from a non-finite state"
    [[ -z "$(ls "$W/dt/checkpoints" 2>/dev/null)" ]] || fail "checkpoints written: $(ls "$W/dt/checkpoints")"
    run "$NP" run good.toml --output-dir "$W/eps" --set md.pair.epsilon=1e9
    expect_exit 1
    grep -qE "non-finite|atoms lost" "$ERR" || fail "no 'non-finite' or 'atoms lost' in: $(cat "$ERR")"
    [[ ! -e "$W/eps/final.h5" ]] || fail "final.h5 written from a non-finite state"
    if grep -q "MPI_ABORT\|MPI_Abort" "$ERR"; then fail "MPI_Abort instead of a clean exit"; fi
    ;;
one_run_per_directory)
    # A second run into a directory in use is refused (exit 2) naming the holder; the first goes on.
    long_deck long.toml
    start_bg "$NP" run long.toml --output-dir "$W/out"
    wait_for "$W/out/thermo.csv" "200,"
    run "$NP" run long.toml --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "output directory '$W/out' is in use by another spotrun run (host $(hostname)"
    kill -0 "$BG" 2>/dev/null || fail "the first run ended when the second started"
    kill "-$(stop_signal TERM)" "$BG"
    wait_bg
    [[ $BG_RC -eq 75 ]] || fail "the first run exited $BG_RC after a stop signal, expected 75: $(cat "$W/bg.err")"
    rows=$(tail -n +2 "$W/out/thermo.csv" | cut -d, -f1 | sort | uniq -d | wc -l)
    [[ $rows -eq 0 ]] || fail "duplicate rows in thermo.csv"
    # A run killed outright leaves its lock file behind: the next run takes it over with a warning.
    start_bg "$NP" run long.toml --output-dir "$W/out"
    wait_for "$W/bg.out" "Resuming from"
    pkill -KILL -f -- "--output-dir $W/out" 2>/dev/null
    wait "$BG" 2>/dev/null
    [[ -s "$W/out/.spotrun.lock" ]] || fail "the killed run left no lock record"
    run "$NP" run long.toml --output-dir "$W/out" --set run.steps=1
    expect_exit 0
    expect_in "$ERR" "WARNING: taking over the lock of output directory '$W/out' left by a run that ended without releasing it"
    [[ ! -s "$W/out/.spotrun.lock" ]] || fail "the lock file is not emptied at the end of a run"
    ;;
unwritable_outputs)
    # An output that cannot be written, seen by rank 0 only: exit 2 on every rank, never MPI_Abort.
    good_deck good.toml
    mkdir -p "$W/out/thermo.csv"
    run "$NP" run good.toml --output-dir "$W/out"
    expect_input_error
    expect_in "$ERR" "thermo.csv"
    printf 'x' >plain
    run "$NP" run good.toml --output-dir "$W/plain/out"
    expect_input_error
    expect_in "$ERR" "cannot create output directory"
    # thermo.csv replaced by a link to a device before a resume: refused, the link left alone.
    run "$NP" run good.toml --output-dir "$W/dev"
    expect_exit 0
    rm -f "$W/dev/thermo.csv"
    ln -s /dev/zero "$W/dev/thermo.csv"
    run "$NP" run good.toml --output-dir "$W/dev" --set run.steps=40
    expect_input_error
    expect_in "$ERR" "thermo.csv"
    ;;
thermo_disk_full)
    # thermo.csv on a file system that fills up: checkpoint.on_error = "abort" stops with exit 1 on every
    # rank naming the error; "warn" warns once and goes on.
    mkdir -p "$W/small"
    if ! mount -t tmpfs -o size=96k tmpfs "$W/small" 2>/dev/null; then
        echo "SKIP: cannot mount a small tmpfs (needs root); the full-disk case is not checked"
        echo "PASS [$CASE np$NP]"
        exit 0
    fi
    trap 'umount -l "$W/small" 2>/dev/null' EXIT
    good_deck good.toml
    # Room (tmpfs pages of 4 KiB) for the lock file, the run report's ledger (attempts.jsonl) and status.json,
    # each replaced through a temporary file, and the first page of thermo.csv.
    head -c 77824 /dev/zero >"$W/small/filler"
    # 400 rows of about 100 bytes fill the page many times over; more steps only cost time on a busy machine.
    run "$NP" run good.toml --output-dir "$W/small/out" --set run.steps=400 --set run.thermo_every=1 \
        --set checkpoint.on_error='"abort"'
    expect_exit 1
    expect_count "$ERR" "ERROR" 1
    expect_in "$ERR" "thermo.csv' failed: No space left on device (checkpoint.on_error = \"abort\")"
    rm -rf "$W/small/out"
    run "$NP" run good.toml --output-dir "$W/small/out" --set run.steps=400 --set run.thermo_every=1
    expect_count "$ERR" "WARNING: writing the thermo row" 1
    # The run went on to its end, where final.h5 does not fit either: exit 1, said once.
    expect_exit 1
    expect_in "$ERR" "final.h5"
    if grep -q "MPI_ABORT\|MPI_Abort" "$ERR"; then fail "MPI_Abort instead of a clean exit"; fi
    ;;
signal_before_the_loop)
    # A stop signal before the time loop ends the run on every rank with a message and a status.json
    # record: 128 + the signal without a checkpoint, 75 with one (before MPI starts, while the deck is read,
    # while the output directory is prepared, while a checkpoint is read); inspect ends at once.
    good_deck good.toml
    sig=$(stop_signal INT)
    export SPOTRUN_TEST_PAUSE="reading the deck=30"
    start_bg "$NP" run good.toml --output-dir "$W/out"
    signal_paused "$sig"
    expect_in "$W/bg.err" "spotrun: SIG$sig during reading the deck: stopping"
    if [[ $NP -eq 1 ]]; then
        expect_killed_by "$sig"
    else
        [[ $BG_RC -ne 0 && $BG_RC -ne 75 ]] || fail "mpiexec exit $BG_RC"
    fi
    expect_status "$W/out" failed $((128 + $(signal_number "$sig")))
    [[ -z "$(ls "$W/out/checkpoints" 2>/dev/null)" ]] || fail "a checkpoint was written"
    unset SPOTRUN_TEST_PAUSE
    run "$NP" run good.toml --output-dir "$W/out"
    expect_exit 0
    final=$(digest "$W/out/final.h5")
    # With a checkpoint to resume from: 75 in every phase of the start-up.
    for phase in "start-up" "reading the deck" "preparing the output directory" "reading a checkpoint"; do
        export SPOTRUN_TEST_PAUSE="$phase=30"
        start_bg "$NP" run good.toml --output-dir "$W/out" --set run.steps=40
        wait_for "$W/bg.err" "pausing"
        wait_handlers "$BG" "$NP"  # before MPI starts, another rank may still be loading
        kill "-$(stop_signal TERM)" "$BG"
        wait_bg
        [[ $BG_RC -eq 75 ]] || fail "a signal during $phase: exit $BG_RC, expected 75: $(cat "$W/bg.err")"
        expect_in "$W/bg.err" "during $phase: stopping (exit 75"
        expect_status "$W/out" stopped 75
        [[ "$(digest "$W/out/final.h5")" == "$final" ]] || fail "final.h5 changed by a signal during $phase"
    done
    unset SPOTRUN_TEST_PAUSE
    # Unpaused: a signal at any moment after the handlers are in place (read from /proc) stops the run
    # with 75, whatever it was doing (loading, MPI start-up, the deck, the loop).
    for delay in 0 0.1 0.3 0.6 1.0; do
        start_bg "$NP" run good.toml --output-dir "$W/out" --set run.steps=100000
        wait_handlers "$BG" "$NP"
        sleep "$delay"
        kill "-$(stop_signal TERM)" "$BG"
        wait_bg
        [[ $BG_RC -eq 75 ]] || fail "a signal $delay s after the handlers: exit $BG_RC, expected 75: $(cat "$W/bg.err")"
        expect_status "$W/out" stopped 75
    done
    export SPOTRUN_TEST_PAUSE="inspect=30"
    start_bg "$NP" inspect "$W/out/final.h5"
    signal_paused "$sig"
    expect_in "$W/bg.err" "during inspect: stopping"
    unset SPOTRUN_TEST_PAUSE
    ;;
second_signal_during_stop)
    # The first signal stops the run; a second one while the stop checkpoint is written ends it at once,
    # and the previous checkpoint stays valid: the run resumes from it.
    long_deck long.toml
    sig=$(stop_signal TERM)
    export SPOTRUN_TEST_PAUSE="writing the stop checkpoint=30"
    start_bg "$NP" run long.toml --output-dir "$W/out" --verbose
    wait_for "$W/bg.out" "Checkpoint $W/out/checkpoints/ckpt-400.h5"
    kill "-$sig" "$BG"
    signal_paused "$sig"
    expect_in "$W/bg.err" "spotrun: SIG$sig again while writing the stop checkpoint: stopping"
    if [[ $NP -eq 1 ]]; then expect_killed_by "$sig"; fi
    unset SPOTRUN_TEST_PAUSE
    newest=$(ls "$W/out/checkpoints" | grep -E '^ckpt-[0-9]+\.h5$' | sort -t- -k2 -n | tail -n 1)
    run "$NP" inspect "$W/out/checkpoints/$newest"
    expect_exit 0
    step=${newest#ckpt-}
    step=${step%.h5}  # (stripping every non-digit would keep the 5 of .h5: ckpt-400.h5 gave 4005)
    run "$NP" run long.toml --output-dir "$W/out" --set run.steps=$((step + 10))
    expect_exit 0
    expect_in "$OUT" "Resuming from $W/out/checkpoints/$newest"
    ;;
stop_checkpoint_fails)
    # The stop checkpoint cannot be written (its directory is a file): no promise to retry, exit 1 when
    # there is no earlier checkpoint; with an earlier one, exit 75 and the resume starts from it.
    long_deck long.toml
    mkdir -p "$W/out"
    printf 'x' >"$W/out/checkpoints"
    start_bg "$NP" run long.toml --output-dir "$W/out" --set checkpoint.every_steps=0
    wait_for "$W/bg.out" "  200 "
    kill "-$(stop_signal TERM)" "$BG"
    wait_bg
    [[ $NP -gt 1 || $BG_RC -eq 1 ]] || fail "exit $BG_RC, expected 1: $(cat "$W/bg.err")"
    expect_in "$W/bg.err" "ERROR: the stop checkpoint failed: there is no earlier checkpoint"
    if grep -q "retrying" "$W/bg.err"; then fail "a stop checkpoint that failed promises a retry: $(cat "$W/bg.err")"; fi
    rm -f "$W/out/checkpoints"
    start_bg "$NP" run long.toml --output-dir "$W/out" --verbose
    wait_for "$W/bg.out" "ckpt-200.h5"
    # The checkpoint directory becomes a file in one step: a periodic checkpoint between a move and a
    # create would make a new directory there, and the stop checkpoint would succeed.
    printf 'x' >"$W/out/blocker"
    swap_paths "$W/out/checkpoints" "$W/out/blocker"
    kill "-$(stop_signal TERM)" "$BG"
    wait_bg
    swap_paths "$W/out/checkpoints" "$W/out/blocker" && rm -f "$W/out/blocker"
    [[ $BG_RC -eq 75 ]] || fail "exit $BG_RC with an earlier checkpoint, expected 75: $(cat "$W/bg.err")"
    expect_in "$W/bg.err" "the run resumes from its previous checkpoint (the steps since it are lost)"
    run "$NP" run long.toml --output-dir "$W/out" --set run.steps=250
    expect_exit 0
    expect_in "$OUT" "Resuming from $W/out/checkpoints/ckpt-"
    ;;
validate_like_run)
    # validate makes every check run makes before its first step, through the same functions: the data
    # file read and parsed, the pair coefficients, the box against cutoff + skin on this many ranks, the
    # memory estimate. Each deck ends alike under both.
    data_deck() { printf '[run]\nsteps = 1\n[md.initial]\nlammps_data = "%s"\n' "$2" >"$1"; }
    mkfifo fifo.data
    data_deck fifo.toml fifo.data
    same_as_run 2 "LAMMPS data file" fifo.toml
    data_deck zero.toml /dev/zero
    same_as_run 2 "not a regular file" zero.toml
    mkdir dir.data
    data_deck dir.toml dir.data
    same_as_run 2 "is a directory" dir.toml
    data_deck missing.toml missing.data
    same_as_run 2 "does not exist" missing.toml
    : >empty.data
    data_deck empty.toml empty.data
    same_as_run 2 "empty.data" empty.toml
    good_deck unknown.toml
    printf '[[md.pair.coeff]]\ntypes = ["1", "2"]\nepsilon = 1.0\nsigma = 1.0\n' >>unknown.toml
    same_as_run 2 'no atom type named "2"' unknown.toml
    good_deck twice.toml
    printf '[[md.pair.coeff]]\ntypes = ["1", "1"]\nepsilon = 1.0\nsigma = 1.0\n' >>twice.toml
    printf '[[md.pair.coeff]]\ntypes = ["1", "1"]\nepsilon = 2.0\nsigma = 1.0\n' >>twice.toml
    same_as_run 2 "is given twice" twice.toml
    good_deck cells.toml
    same_as_run 2 "thinner than cutoff + skin" cells.toml --set 'md.lattice.cells=[1,1,1]'
    same_as_run 2 "needs about" cells.toml --set 'md.lattice.cells=[1000,1000,1000]'
    # A box 6.7 x 3.4 x 3.4 sigma holds one rank's sub-box, not three: the verdict is that of this rank count.
    if [[ $NP -eq 1 ]]; then
        same_as_run 0 "" cells.toml --set 'md.lattice.cells=[4,2,2]'
        expect_in "$OUT" "Loop time"
    else
        same_as_run 2 "no grid of $NP ranks" cells.toml --set 'md.lattice.cells=[4,2,2]'
    fi
    run "$NP" validate cells.toml
    expect_exit 0
    expect_in "$OUT" "cells.toml: valid on $NP rank(s)"
    ;;
huge_systems)
    # Systems far larger than memory are refused (exit 2 on every rank) before anything is allocated:
    # the runs end at once, and print the estimate.
    printf '[run]\nsteps = 1\n[md.lattice]\ncells = [1300, 1300, 1300]\n' >md.toml
    start=$(date +%s)
    run "$NP" run md.toml --output-dir "$W/md"
    expect_input_error
    expect_in "$ERR" "the MD system of 8.788e+09 atoms needs about"
    expect_in "$ERR" "are available there"
    printf '[run]\nsolver = "fluid"\nsteps = 1\n[fluid]\nn = [4096, 4096, 4096]\n' >fluid.toml
    run "$NP" run fluid.toml --output-dir "$W/fluid"
    expect_input_error
    expect_in "$ERR" "the fluid grid of 4096 x 4096 x 4096 points needs about"
    (( $(date +%s) - start < 30 )) || fail "refusing took $(( $(date +%s) - start )) s"
    ;;
checkpoint_flips)
    # Single-byte flips across a whole checkpoint (its manifest, the HDF5 metadata behind it, the data):
    # inspect calls every copy damaged, and a resume with a damaged newest checkpoint skips it and
    # continues from the previous one, bit for bit as a run that was never stopped.
    good_deck good.toml
    run "$NP" run good.toml --output-dir "$W/ref" --set run.steps=30
    expect_exit 0
    run "$NP" run good.toml --output-dir "$W/base" --set checkpoint.every_steps=10 --set run.steps=25
    expect_exit 0
    ckpt="$W/base/checkpoints/ckpt-20.h5"
    [[ -f "$ckpt" && -f "$W/base/checkpoints/ckpt-10.h5" ]] || fail "no checkpoints at steps 10 and 20"
    rm -f "$W/base/final.h5"
    size=$(stat -c %s "$ckpt")
    offsets=()
    for ((k = 0; k < 100; ++k)); do offsets+=($((k * 3)) $((4096 + k * 81)) $((k * (size - 1) / 99))); done
    mkdir -p "$W/flips"
    flip() {  # flip SRC OFFSET DST: DST is SRC with one bit of the byte at OFFSET changed
        cp "$1" "$3"
        local b
        b=$(od -An -tu1 -j"$2" -N1 "$1" | tr -d ' ')
        printf "$(printf '\\%03o' $(((b ^ (1 << ($2 % 8))) & 255)))" | dd of="$3" bs=1 seek="$2" conv=notrunc status=none
    }
    for off in "${offsets[@]}"; do flip "$ckpt" "$off" "$W/flips/at-$off.h5"; done
    n=$(ls "$W/flips" | wc -l)
    [[ $n -ge 290 ]] || fail "only $n distinct flipped copies"
    run "$NP" inspect "$W"/flips/*.h5
    expect_exit 2
    expect_count "$OUT" "DAMAGED" "$n"
    expect_count "$OUT" "OK:" 0
    # Resumes: 10 flips in each region, each in a fresh copy of the run directory.
    for ((k = 0; k < 30; ++k)); do
        off=${offsets[$((k * 10))]}
        rm -rf "$W/resume"
        cp -r "$W/base" "$W/resume"
        rm -f "$W/resume/.spotrun.lock"
        flip "$ckpt" "$off" "$W/resume/checkpoints/ckpt-20.h5"
        run "$NP" run good.toml --output-dir "$W/resume" --set run.steps=30
        expect_exit 0
        expect_in "$ERR" "WARNING: skipping checkpoint $W/resume/checkpoints/ckpt-20.h5"
        expect_in "$OUT" "Resuming from $W/resume/checkpoints/ckpt-10.h5 at step 10"
        cmp -s "$W/ref/thermo.csv" "$W/resume/thermo.csv" || fail "flip at byte $off: thermo.csv differs from the uninterrupted run"
        [[ $FAILED -eq 0 ]] || break
    done
    ;;
crafted_checkpoints)
    # Crafted checkpoints: one byte changed behind the manifest and the manifest computed anew
    # ($SPOTRUN_CHECKPOINT_FLIP, tests/support/checkpoint_flip.cpp), so that the change reaches the HDF5
    # library: half of the copies changed anywhere, half in the HDF5 metadata. Every copy is inspected
    # (one process for all): OK, DAMAGED or REFUSED, never a crash or a hang. Every fifth copy, and every
    # one that inspect calls OK, is resumed from as the newest checkpoint of a run directory that also
    # holds an intact older one: the run goes on (from the older checkpoint, or from the copy if it was
    # sound) or stops with a message and exit 1 or 2, never a crash.
    [[ -x "${SPOTRUN_CHECKPOINT_FLIP:-}" ]] || { fail "SPOTRUN_CHECKPOINT_FLIP is not set to the checkpoint_flip tool"; finish; }
    cat >small.toml <<'TOML'
[run]
steps = 20
thermo_every = 10

[md]
dt = 0.005

[md.lattice]
cells = [4, 4, 4]
temperature = 1.0
TOML
    run 1 run small.toml --output-dir "$W/base" --set checkpoint.every_steps=10 --set run.steps=25
    expect_exit 0
    ckpt="$W/base/checkpoints/ckpt-20.h5"
    [[ -f "$ckpt" && -f "$W/base/checkpoints/ckpt-10.h5" ]] || fail "no checkpoints at steps 10 and 20"
    rm -f "$W/base/final.h5"
    mkdir -p "$W/flips"
    "$SPOTRUN_CHECKPOINT_FLIP" "$ckpt" "$W/flips" 200 20240611 >"$W/flips.txt" || fail "checkpoint_flip failed"
    mapfile -t copies <"$W/flips.txt"
    [[ ${#copies[@]} -eq 200 ]] || fail "checkpoint_flip made ${#copies[@]} copies, expected 200"
    [[ $FAILED -eq 0 ]] || finish
    verdicts() { grep -cE '^(OK:|DAMAGED|REFUSED:)' "$OUT"; }
    run 1 inspect "${copies[@]}"
    if [[ $RC -ne 0 || ( "$RANK_RCS" != 0 && "$RANK_RCS" != 2 ) || $(verdicts) -ne ${#copies[@]} ]]; then
        # Name the copies that fail on their own.
        for c in "${copies[@]}"; do
            run 1 inspect "$c"
            if [[ $RC -ne 0 || ( "$RANK_RCS" != 0 && "$RANK_RCS" != 2 ) || $(verdicts) -ne 1 ]]; then
                fail "inspect $(basename "$c"): mpiexec $RC, exit '$RANK_RCS', verdicts $(verdicts): $(tail -n 5 "$ERR")"
            fi
        done
        [[ $FAILED -ne 0 ]] || fail "inspect of all copies: mpiexec $RC, exit '$RANK_RCS', $(verdicts) verdicts for ${#copies[@]} copies"
    fi
    cp "$OUT" "$W/inspect.txt"
    echo "inspect: $(grep -c '^OK:' "$W/inspect.txt") OK, $(grep -c '^DAMAGED' "$W/inspect.txt") DAMAGED, $(grep -c '^REFUSED:' "$W/inspect.txt") REFUSED"
    resumed=0
    for ((k = 0; k < ${#copies[@]}; ++k)); do
        c="${copies[$k]}"
        sound=0
        grep -A200 -xF -- "$c" "$W/inspect.txt" | grep -m1 -E '^(OK:|DAMAGED|REFUSED:)' | grep -q '^OK:' && sound=1
        ((k % 5 == 0 || sound)) || continue
        resumed=$((resumed + 1))
        rm -rf "$W/resume"
        cp -r "$W/base" "$W/resume"
        rm -f "$W/resume/.spotrun.lock"
        cp "$c" "$W/resume/checkpoints/ckpt-20.h5"
        run 1 run small.toml --output-dir "$W/resume" --set run.steps=30
        what="resume with $(basename "$c") (inspect: $([[ $sound -eq 1 ]] && echo OK || echo not OK))"
        if [[ $RC -ne 0 ]]; then
            fail "$what: mpiexec exit $RC (a crash or an abort): $(tail -n 5 "$ERR")"
        elif [[ "$RANK_RCS" == 0 ]]; then
            grep -qE "Resuming from $W/resume/checkpoints/ckpt-(10|20).h5" "$OUT" || fail "$what: finished without resuming"
            if [[ $sound -eq 0 ]]; then expect_in "$OUT" "Resuming from $W/resume/checkpoints/ckpt-10.h5"; fi
        elif [[ "$RANK_RCS" == 1 || "$RANK_RCS" == 2 ]]; then
            grep -q "ERROR" "$ERR" || fail "$what: exit $RANK_RCS without a message"
        else
            fail "$what: exit '$RANK_RCS'"
        fi
        [[ $FAILED -eq 0 ]] || break
    done
    echo "resumed from $resumed copies"
    ;;
*)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac

finish
