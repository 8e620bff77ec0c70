#!/usr/bin/env bash
# Shared by the command-line test drivers (cli_test.sh, hostile_test.sh); sourced, not run.
# Expects: CASE NP SPOTRUN MPIEXEC NPFLAG W set by the driver from its arguments
#   DRIVER CASE NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR
# Each run goes through `timeout` (a hang fails the test) and a per-rank wrapper that records every
# rank's exit code, so "exit 2" is checked on every rank, not only on the one mpiexec reports.

# shellcheck source=../support/test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/test_lib.sh"

CASE="$1"
NP="$2"
SPOTRUN="$3"
MPIEXEC="$4"
NPFLAG="$5"
W="$6"
TIMEOUT=60

rm -rf "$W"
mkdir -p "$W"
cd "$W" || exit 1

FAILED=0
fail() {
    echo "FAIL [$CASE np$NP]: $*" >&2
    FAILED=1
}

# The per-rank wrapper (an mpiexec program before "$SPOTRUN" ARGS): runs them, writes their exit code to
# $W/rc/rank.RANK and exits 0. ranks_begin before a run through it empties $W/rc and sets OUT and ERR (the
# files the run's stdout and stderr go to); ranks_end after it sets RANK_RCS.
RANK_WRAPPER=(sh -c '
        dir="$1"; shift
        "$@"; rc=$?
        r="${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-x}}}"
        echo "$rc" > "$dir/rank.$r"
        exit 0' sh "$W/rc")
ranks_begin() {
    rm -rf "$W/rc" && mkdir -p "$W/rc"
    OUT="$W/stdout.txt"
    ERR="$W/stderr.txt"
}
ranks_end() { RANK_RCS="$(cat "$W"/rc/rank.* 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//')"; }

# run NP ARGS...: runs spotrun on NP ranks; sets RC (of mpiexec), RANK_RCS (the sorted exit codes of
# the ranks), OUT, ERR. The wrapper exits 0 so that mpiexec does not kill the other ranks when the first
# one exits non-zero (they would then never report their own code); RC is non-zero only on MPI_Abort,
# a crash or a timeout.
run() {
    local np="$1"
    shift
    ranks_begin
    timeout "$TIMEOUT" "$MPIEXEC" --oversubscribe "$NPFLAG" "$np" "${RANK_WRAPPER[@]}" "$SPOTRUN" "$@" >"$OUT" 2>"$ERR"
    RC=$?
    ranks_end
    if [[ $RC -eq 124 ]]; then
        fail "spotrun $* did not finish within ${TIMEOUT}s (hang?)"
    fi
}

# run_direct NP ARGS...: the same without the wrapper; sets RC to the exit code of mpiexec itself.
run_direct() {
    local np="$1"
    shift
    timeout "$TIMEOUT" "$MPIEXEC" --oversubscribe "$NPFLAG" "$np" "$SPOTRUN" "$@" >"$W/direct.out" 2>"$W/direct.err"
    RC=$?
    [[ $RC -ne 124 ]] || fail "spotrun $* did not finish within ${TIMEOUT}s (hang?)"
}

# expect_exit CODE: every one of NP ranks exited with CODE.
expect_exit() {
    local want="$1" expected=""
    for ((r = 0; r < NP; ++r)); do expected+="$want "; done
    expected="${expected% }"
    [[ "$RANK_RCS" == "$expected" ]] || fail "per-rank exit codes '$RANK_RCS', expected '$expected' (mpiexec: $RC)"
}

# expect_in FILE TEXT: TEXT (fixed string) appears in FILE.
expect_in() {
    grep -qF -- "$2" "$1" || fail "'$2' not in $(basename "$1"):"$'\n'"$(cat "$1")"
}

# expect_count FILE TEXT N: TEXT appears on exactly N lines of FILE.
expect_count() {
    local n
    n=$(grep -cF -- "$2" "$1")
    [[ $n -eq $3 ]] || fail "'$2' on $n lines of $(basename "$1"), expected $3:"$'\n'"$(cat "$1")"
}

# An input error: exit 2 on every rank, one message (from rank 0), no abort.
expect_input_error() {
    expect_exit 2
    expect_count "$ERR" "ERROR" 1
    if grep -q "MPI_ABORT\|MPI_Abort" "$ERR"; then fail "MPI_Abort instead of a clean exit"; fi
}

# good_deck FILE: the small liquid of test_lib.sh (runs at 1-4 ranks, 20 steps) at temperature 3.0.
good_deck() { write_deck "$1" "${LIQUID_DECK[@]}" md.lattice.temperature=3.0; }

data_header() {  # data_header NATOMS
    printf 'spotrun test data\n\n%s atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n' "$1"
}


# finish: prints the last run's output on a failure; exits 1 on a failure, else prints PASS.
finish() {
    if [[ $FAILED -ne 0 ]]; then
        echo "--- stdout of the last run:" >&2
        cat "$OUT" >&2 2>/dev/null
        echo "--- stderr of the last run:" >&2
        cat "$ERR" >&2 2>/dev/null
        exit 1
    fi
    echo "PASS [$CASE np$NP]"
}
