#!/usr/bin/env bash
# End-to-end: an energy minimisation ([md.minimize], run.steps = 0) stopped by SIGTERM half-way writes a
# stop checkpoint with the minimiser's state (exit 75); the same command resumes it, and it ends at the
# minimum of the run done in one go: the same energy (1e-10 per atom; bit for bit at the same rank count),
# iterations and force evaluations. Then dynamics after a minimisation (run.steps > 0): they continue the
# step counter from the minimisation's last step.
# usage: minimize_test.sh SPOTRUN_TEST STYLE NP   (spotrun-test: SPOTRUN_TEST_FORCE_SLOWDOWN stretches the run)
set -uo pipefail
SPOTRUN=$1
STYLE=$2
NP=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
WORK=$(mktemp -d /tmp/spotrun-minimize.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=../support/test_lib.sh
source "$(dirname "$0")/../support/test_lib.sh"
DATA=$(cd "$(dirname "$0")/../data" && pwd)/lj-small.data

fail() { echo "FAIL: $*"; exit 1; }
# The minimisation's stats line KEY of a run's log: its figures.
stat() { grep "^  $2 = " "$1" | tail -1 | sed "s/^  $2 = //"; }

cat >"$WORK/deck.toml" <<DECK
[run]
solver = "md"
steps = 0
thermo_every = 10
[md]
cutoff = 2.5
[md.initial]
lammps_data = "$DATA"
[md.minimize]
style = "$STYLE"
etol = 1e-6
ftol = 0.0
DECK

[ "$(run_deck "$NP" "$WORK/ref")" = 0 ] || fail "reference run failed: $(tail -5 "$WORK/ref.log")"
iters=$(stat "$WORK/ref.log" "Iterations, force evaluations")
energy=$(stat "$WORK/ref.log" "Energy initial, next-to-last, final" | awk '{print $3}')
[ -n "$iters" ] || fail "no Minimization stats in the log"
grep -q "Stopping criterion = energy tolerance" "$WORK/ref.log" || fail "the reference did not stop on etol"
last=$(echo "$iters" | awk '{print $1}')
grep -q "Finished at step $last:" "$WORK/ref.log" || fail "the run did not end at the minimisation's last step $last"
tail -1 "$WORK/ref/thermo.csv" | grep -q "^$last," || fail "thermo.csv has no row of the last iteration $last"
echo "reference: $iters iterations and evaluations, E = $energy"

# SIGTERM half-way (the force kernel slowed down so that the minimisation takes seconds).
export SPOTRUN_TEST_FORCE_SLOWDOWN=40
mpirun -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/a" --verbose >"$WORK/a.log" 2>&1 &
pid=$!
# Once the thermo row of iteration 20 is out.
for wait in $(seq 1 1200); do
  awk -F, 'NR > 1 && $1 >= 20 { found = 1 } END { exit !found }' "$WORK/a/thermo.csv" 2>/dev/null && break
  sleep 0.05
done
pkill -TERM -P "$pid" -x spotrun-test
wait $pid
code=$?
[ "$code" = 75 ] || fail "SIGTERM gave exit $code, expected 75: $(tail -5 "$WORK/a.log")"
stopped=$(grep -o "Stopping at step [0-9]*" "$WORK/a.log" | tail -1 | awk '{print $4}')
[ -n "$stopped" ] && [ "$stopped" -lt "$last" ] || fail "stopped at step ${stopped:-?}, not within the minimisation (0..$last)"
unset SPOTRUN_TEST_FORCE_SLOWDOWN
[ "$(run_deck "$NP" "$WORK/a")" = 0 ] || fail "resume failed: $(tail -5 "$WORK/a.log")"
grep -q "Resuming from .* at step $stopped" "$WORK/a.log" || fail "did not resume at step $stopped"
got=$(stat "$WORK/a.log" "Iterations, force evaluations")
got_energy=$(stat "$WORK/a.log" "Energy initial, next-to-last, final" | awk '{print $3}')
[ "$got" = "$iters" ] || fail "resumed: $got iterations and evaluations, the run in one go $iters"
awk -v a="$energy" -v b="$got_energy" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-10) }' ||
  fail "resumed minimum E = $got_energy, the run in one go $energy"
h5diff -q "$WORK/ref/final.h5" "$WORK/a/final.h5" /md/x || fail "resumed minimum: other positions than the run in one go"
echo "SIGTERM at step $stopped, resumed: $got, E = $got_energy (positions bit for bit)"

# Dynamics after the minimisation: 30 steps from step $last.
[ "$(run_deck "$NP" "$WORK/b" --set run.steps=30)" = 0 ] || fail "minimise and run failed: $(tail -5 "$WORK/b.log")"
grep -q "Finished at step $((last + 30)):" "$WORK/b.log" || fail "minimise + 30 steps did not end at step $((last + 30))"
echo "PASS: minimize $STYLE at np $NP"
