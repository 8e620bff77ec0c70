#!/usr/bin/env bash
# End-to-end: a run in three stages ([[run.stage]]: Nose-Hoover NVT, NVE, NVT at another temperature, chain
# length and time step) of the Kob-Andersen data file. Its thermo.csv against LAMMPS's `fix nvt; run; unfix;
# fix nve; run; unfix; fix nvt; timestep; run` (tests/data/lammps-ka-small-stages.csv, 1e-9); stopped by run
# length inside every stage and at the end of the first two, then resumed by the same command: final.h5 bit for
# bit that of the run done in one go, and the same thermo.csv; validate and inspect show the stages; a stage that
# sets a key of the system's physics is refused (exit 2) naming it. Then a stage that minimises between two
# dynamics stages, stopped by SIGTERM inside the minimisation and resumed: bit for bit the run done in one go.
# usage: stages_test.sh SPOTRUN_TEST NP   (spotrun-test: SPOTRUN_TEST_FORCE_SLOWDOWN stretches the minimisation)
set -uo pipefail
SPOTRUN=$1
NP=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
WORK=$(mktemp -d /tmp/spotrun-stages.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=../support/test_lib.sh
source "$(dirname "$0")/../support/test_lib.sh"
DATA=$(cd "$(dirname "$0")/../data" && pwd)

fail() { echo "FAIL: $*"; exit 1; }
same_state() {  # exact comparison of positions and velocities of two state files
  h5diff -q "$1" "$2" /md/x && h5diff -q "$1" "$2" /md/v && h5diff -q "$1" "$2" /md/id
}

cat >"$WORK/deck.toml" <<DECK
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
[run]
solver = "md"
thermo_every = 10
[md]
dt = 0.005
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
lammps_data = "$DATA/ka-small.data"
DECK

# validate: the stages in the resolved deck, run.steps their sum.
mpirun -np "$NP" "$SPOTRUN" validate "$WORK/deck.toml" >"$WORK/validate.log" 2>&1 || fail "validate failed: $(tail -5 "$WORK/validate.log")"
grep -q '^steps = 300$' "$WORK/validate.log" || fail "validate: run.steps is not the stages' 300"
grep -qF '{md = {damp = 0.5, dt = 0.004, ensemble = "nvt", tchain = 4, temperature = 1.2}, steps = 100},' "$WORK/validate.log" ||
  fail "validate does not show the third stage: $(grep -A4 '^stage' "$WORK/validate.log")"

# The run in one go, against LAMMPS.
[ "$(run_deck "$NP" "$WORK/ref")" = 0 ] || fail "the run failed: $(tail -5 "$WORK/ref.log")"
grep -q "Finished at step 300:" "$WORK/ref.log" || fail "the run did not end at step 300"
diff=$(python3 - "$WORK/ref/thermo.csv" "$DATA/lammps-ka-small-stages.csv" <<'PY'
import csv, sys
a = list(csv.reader(open(sys.argv[1]))); b = list(csv.reader(open(sys.argv[2])))
assert a[0] == b[0], (a[0], b[0])
assert len(a) == len(b), (len(a), len(b))
worst = 0.0
for ra, rb in zip(a[1:], b[1:]):
    assert ra[0] == rb[0], (ra[0], rb[0])
    for x, y in zip(ra[1:], rb[1:]):
        x, y = float(x), float(y)
        worst = max(worst, abs(x - y) / max(abs(y), 1e-300) if y != 0 else abs(x))
print("%.3g" % worst)
PY
) || fail "thermo.csv does not have LAMMPS's rows"
awk -v d="$diff" 'BEGIN { exit !(d <= 1e-9) }' || fail "thermo.csv differs from LAMMPS by $diff (> 1e-9)"
echo "thermo.csv against LAMMPS: max relative difference $diff"

# inspect: the stages, the current one marked.
"$SPOTRUN" inspect "$WORK/ref/final.h5" >"$WORK/inspect.log" 2>&1 || fail "inspect failed: $(tail -5 "$WORK/inspect.log")"
grep -q "stage 2 of 3: 100 steps, nve; dt 0.005 (done)" "$WORK/inspect.log" || fail "inspect does not list stage 2: $(cat "$WORK/inspect.log")"
grep -q "stage 3 of 3: 100 steps, nvt temperature 1.2 damp 0.5 tchain 4; dt 0.004 (current: began at step 200, now step 300)" \
  "$WORK/inspect.log" || fail "inspect does not mark stage 3 as current: $(cat "$WORK/inspect.log")"

# Stops inside every stage and at the ends of the first two, each resumed by the same command.
for stop in 50 100 150 200 250; do
  out="$WORK/s$stop"
  [ "$(run_deck "$NP" "$out" --set run.steps=$stop)" = 0 ] || fail "run to step $stop failed: $(tail -5 "$out.log")"
  [ "$(run_deck "$NP" "$out")" = 0 ] || fail "resume from step $stop failed: $(tail -5 "$out.log")"
  grep -q "Resuming from .*final.h5 at step $stop" "$out.log" || fail "did not resume from step $stop"
  same_state "$WORK/ref/final.h5" "$out/final.h5" || fail "resumed from step $stop: not bit-identical to the run in one go"
  cmp -s "$WORK/ref/thermo.csv" "$out/thermo.csv" || fail "resumed from step $stop: another thermo.csv"
  echo "stopped at step $stop, resumed: final.h5 and thermo.csv bit-identical"
done

# More steps than the stages have: refused.
[ "$(run_deck "$NP" "$WORK/more" --set run.steps=301)" = 2 ] || fail "run.steps = 301 was not refused with exit 2"
grep -q "is more than the 300 steps of the 3 stages" "$WORK/more.log" || fail "no message for run.steps = 301"

# A stage that changes the physics: exit 2 on every rank, the key and its line named.
sed 's/^dt = 0.004$/dt = 0.004\ncutoff = 3.0/' "$WORK/deck.toml" >"$WORK/physics.toml"
timeout 120 mpirun -np "$NP" "$SPOTRUN" run "$WORK/physics.toml" --output-dir "$WORK/physics" >"$WORK/physics.log" 2>&1
code=$?
[ "$code" = 2 ] || fail "a stage with md.cutoff gave exit $code, expected 2"
grep -q "physics.toml:15: 'run.stage\[2\].md.cutoff': 'md.cutoff' defines the system and may not change between stages" \
  "$WORK/physics.log" || fail "no message naming the stage's md.cutoff: $(tail -3 "$WORK/physics.log")"

# A stage that minimises between two dynamics stages: its iterations are steps beyond run.steps (100). SIGTERM
# inside the minimisation (the force kernel slowed down so that it takes seconds), then the same command: the
# final state of the run done in one go, bit for bit.
awk '/^\[\[run.stage\]\]/ && !done { print "[[run.stage]]\nsteps = 50\n[[run.stage]]\n[run.stage.md.minimize]\nstyle = \"cg\"\n" \
       "etol = 1e-8\nftol = 0.0\nmax_iterations = 400\n[[run.stage]]\nsteps = 50\n[run.stage.md]\nensemble = \"nve\""; done = 1 }
     /^\[run\]$/ { keep = 1 } keep' "$WORK/deck.toml" >"$WORK/min.toml"
cp "$WORK/min.toml" "$WORK/deck.toml"
[ "$(run_deck "$NP" "$WORK/mref")" = 0 ] || fail "the run with a minimisation stage failed: $(tail -5 "$WORK/mref.log")"
last=$(grep -o "Finished at step [0-9]*" "$WORK/mref.log" | awk '{print $4}')
[ -n "$last" ] && [ "$last" -gt 110 ] || fail "the run with a minimisation stage ended at step ${last:-?}, not after 100 + its iterations"
export SPOTRUN_TEST_FORCE_SLOWDOWN=40
mpirun -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/m" --verbose >"$WORK/m.log" 2>&1 &
pid=$!
for wait in $(seq 1 1200); do
  awk -F, 'NR > 1 && $1 >= 70 { found = 1 } END { exit !found }' "$WORK/m/thermo.csv" 2>/dev/null && break
  sleep 0.05
done
pkill -TERM -P "$pid" -x "$(basename "$SPOTRUN")"
wait $pid
code=$?
unset SPOTRUN_TEST_FORCE_SLOWDOWN
[ "$code" = 75 ] || fail "SIGTERM gave exit $code, expected 75: $(tail -5 "$WORK/m.log")"
stopped=$(grep -o "Stopping at step [0-9]*" "$WORK/m.log" | tail -1 | awk '{print $4}')
[ -n "$stopped" ] && [ "$stopped" -gt 50 ] && [ "$stopped" -lt $((last - 50)) ] ||
  fail "stopped at step ${stopped:-?}, not within the minimisation (51..$((last - 50)))"
[ "$(run_deck "$NP" "$WORK/m")" = 0 ] || fail "resume inside the minimisation failed: $(tail -5 "$WORK/m.log")"
grep -q "Resuming from .* at step $stopped" "$WORK/m.log" || fail "did not resume at step $stopped"
grep -q "Finished at step $last:" "$WORK/m.log" || fail "the resumed run did not end at step $last"
same_state "$WORK/mref/final.h5" "$WORK/m/final.h5" || fail "resumed inside the minimisation: not bit-identical"
echo "minimisation stage: steps 51-$((last - 50)); SIGTERM at step $stopped, resumed bit-identical"
echo "PASS: stages at np $NP"
