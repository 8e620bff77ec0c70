#!/usr/bin/env bash
# The run report end to end (docs/report.md): one CPU run stopped by SIGTERM twice and resumed, three
# attempts in one output directory. The newest checkpoint is removed after the first stop, so the second
# attempt resumes from an older one and redoes steps; report.json is damaged before the third.
# Checked against what the logs say (stop and resume steps): the attempts, their exit causes, the steps
# redone (exactly), the time parts adding up to each attempt's wall time (2 %), each rank's own wall
# time with the root's equal to its start-to-end span, no GPU fields on this
# machine, the damaged report rebuilt with a warning; then an attempt killed by SIGKILL (recorded as lost)
# and one more to the end; `spotrun report` (text, --json, --png); an attempt killed while it starts up
# (lost where the run stood, not from step 0).
# usage: report_test.sh SPOTRUN MPIEXEC NP WORKDIR
set -uo pipefail
SPOTRUN=$1
MPIEXEC=$2
NP=$3
WORK=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
rm -rf "$WORK"
mkdir -p "$WORK"
OUT="$WORK/out"
fail() { echo "FAIL: $*"; exit 1; }

cat >"$WORK/deck.toml" <<DECK
[run]
steps = 10000000
thermo_every = 50
[md.lattice]
cells = [6, 6, 6]
[checkpoint]
every_steps = 40
keep = 4
[report]
sample_seconds = 0.2
DECK

# attempt LOG CHECKPOINTS: starts spotrun in the background and sends SIGTERM once LOG shows CHECKPOINTS
# more periodic checkpoints than it had; returns spotrun's exit code.
attempt() {
  local log=$1 want=$2 pid code n0
  n0=$(grep -c "(every_steps)" "$log" 2>/dev/null)
  "$MPIEXEC" -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$OUT" --verbose >>"$log" 2>&1 &
  pid=$!
  # (A bound on a hang, not on speed: 3 ranks on a busy 2-core machine can take half a minute to start.)
  local deadline=$((SECONDS + 240))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(grep -c "(every_steps)" "$log")" -ge $((n0 + want)) ] && break
    sleep 0.05
  done
  pkill -TERM -P "$pid" -x spotrun
  wait "$pid"
  return $?
}

# newest_checkpoint: the step of the newest ckpt-STEP.h5 in the run's checkpoint directory (one still being
# written ends in .tmp).
newest_checkpoint() {
  ls "$OUT/checkpoints" | sed -n 's/^ckpt-\([0-9]*\)\.h5$/\1/p' | sort -n | tail -1
}

# Attempt 1: SIGTERM after two periodic checkpoints.
attempt "$WORK/a1.log" 2
code=$?
[ "$code" = 75 ] || fail "attempt 1 exited $code: $(tail -5 "$WORK/a1.log")"
S1=$(grep -o "Stopping at step [0-9]*" "$WORK/a1.log" | awk '{print $4}')
[ -n "$S1" ] || fail "attempt 1: no stop message"
grep -q "GPU sampling: no GPU" "$WORK/a1.log" || fail "attempt 1: the header does not say 'GPU sampling: no GPU'"
# The stop checkpoint is lost: the next attempt resumes from an older one and redoes the steps since.
rm -f "$OUT/checkpoints/ckpt-$S1.h5"
P1=$(newest_checkpoint)
[ -n "$P1" ] && [ "$P1" -lt "$S1" ] || fail "no older checkpoint than step $S1 to resume from"

# Attempt 2: resumes from P1, SIGTERM after one periodic checkpoint.
attempt "$WORK/a2.log" 1
code=$?
[ "$code" = 75 ] || fail "attempt 2 exited $code: $(tail -5 "$WORK/a2.log")"
grep -q "Resuming from .*ckpt-$P1.h5 at step $P1" "$WORK/a2.log" || fail "attempt 2 did not resume from step $P1"
S2=$(grep -o "Stopping at step [0-9]*" "$WORK/a2.log" | awk '{print $4}')

# report.json damaged between attempts: rebuilt with a warning, the run goes on.
head -c 100 "$OUT/report.json" >"$OUT/report.json.part" && mv "$OUT/report.json.part" "$OUT/report.json"
# Attempt 3: to the end (60 steps more).
E3=$((S2 + 60))
"$MPIEXEC" -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$OUT" --verbose --set run.steps=$E3 >"$WORK/a3.log" 2>&1
code=$?
[ "$code" = 0 ] || fail "attempt 3 exited $code: $(tail -5 "$WORK/a3.log")"
grep -q "WARNING: run report: .*report.json is damaged (.*): rebuilt from .*attempts.jsonl and the checkpoint files" \
  "$WORK/a3.log" || fail "no warning about the damaged report.json"
grep -q "Run report of $OUT (3 attempt(s)" "$WORK/a3.log" || fail "attempt 3 printed no summary of 3 attempts"
echo "stops at $S1 (resumed from $P1) and $S2, end $E3"

# The oracle: steps redone from the stop and resume steps of the logs.
/usr/bin/python3 - "$OUT" "$NP" "$S1" "$P1" "$S2" "$E3" <<'PY' || exit 1
import json, sys
out, np, s1, p1, s2, e3 = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:])
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
r = json.load(open(out + "/report.json"))
ledger = [json.loads(l) for l in open(out + "/attempts.jsonl")]
a = r["attempts"]
if len(a) != 3 or len(ledger) != 3: fail("%d attempts in report.json, %d in the ledger" % (len(a), len(ledger)))
want = [(0, s1, 75, "signal SIGTERM"), (p1, s2, 75, "signal SIGTERM"), (s2, e3, 0, "finished")]
redone = [0, max(0, min(s2, s1) - p1), max(0, min(e3, max(s1, s2)) - s2)]
for k, (x, w) in enumerate(zip(a, want)):
    got = (x["start_step"], x["end_step"], x["exit_code"], x["exit_cause"])
    if got != w: fail("attempt %d: %s, expected %s" % (k + 1, got, w))
    if x["steps_redone"] != redone[k]: fail("attempt %d: %d steps redone, expected %d" % (k + 1, x["steps_redone"], redone[k]))
    if x["ranks"] != np: fail("attempt %d: %d ranks" % (k + 1, x["ranks"]))
    s = x["seconds"]
    parts = [s[p] for p in ("setup", "compute", "communication", "checkpoint", "idle")]
    # The parts are disjoint intervals of each rank's time: idle (the rest) is never negative.
    if min(parts[:4]) < 0 or s["idle"] < -1e-3: fail("attempt %d: a negative time part %s" % (k + 1, s))
    if abs(sum(parts) - s["wall"]) > 0.02 * s["wall"]: fail("attempt %d: parts %s do not add up to %g" % (k + 1, parts, s["wall"]))
    # Each rank's own wall time (from its own start: under mpirun the ranks start at different times);
    # "wall" is their mean, and the root rank's equals its start-to-end span (start_unix, end_unix).
    walls = x["wall_seconds_per_rank"]
    if len(walls) != np or min(walls) <= 0: fail("attempt %d: per-rank walls %s" % (k + 1, walls))
    if abs(sum(walls) / np - s["wall"]) > 1e-5 + 1e-9 * s["wall"]: fail("attempt %d: wall %g s is not the mean of %s" % (k + 1, s["wall"], walls))
    span = x["end_unix"] - x["start_unix"]
    if abs(span - walls[0]) > 0.005 * walls[0] + 0.01: fail("attempt %d: root wall %g s, start to end %g s" % (k + 1, walls[0], span))
    if s["compute"] <= 0 or s["checkpoint"] <= 0: fail("attempt %d: no compute or checkpoint time: %s" % (k + 1, s))
    if len(x["cpu_seconds"]) != np or min(x["cpu_seconds"]) <= 0: fail("attempt %d: CPU seconds %s" % (k + 1, x["cpu_seconds"]))
    # No GPU here: no GPU field at all.
    for f in ("gpus", "gpu", "gpu_hours"):
        if f in x: fail("attempt %d has '%s' without a GPU" % (k + 1, f))
    if x["state"] != "ended": fail("attempt %d: state %s" % (k + 1, x["state"]))
t = r["totals"]
for f in ("gpu_hours", "cost", "spot_saving"):
    if f in t: fail("totals have '%s' without a GPU" % f)
if t["steps_redone"] != sum(redone): fail("total redone %d, expected %d" % (t["steps_redone"], sum(redone)))
if abs(t["wall_seconds"] - sum(x["seconds"]["wall"] for x in a)) > 1e-9: fail("total wall")
adv = r["checkpoint_advice"]
if adv.get("interruptions") != 2 or not adv.get("optimal_interval_seconds", 0) > 0: fail("advice: %s" % adv)
print("redone", redone, "walls", [round(x["seconds"]["wall"], 3) for x in a])
PY

# Attempt 4 killed (SIGKILL) after a periodic checkpoint: it records no end and becomes "lost" when attempt 5
# starts; attempt 5 finishes.
"$MPIEXEC" -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$OUT" --verbose --set run.steps=100000 >"$WORK/a4.log" 2>&1 &
pid=$!
deadline=$((SECONDS + 240))
while [ $SECONDS -lt $deadline ]; do grep -q "(every_steps)" "$WORK/a4.log" && break; sleep 0.05; done
pkill -KILL -P "$pid" -x spotrun
wait "$pid"
# (On a busy machine attempt 4 may step well past its first checkpoint before the kill lands: attempt 5 ends
# 200 steps after the newest checkpoint attempt 4 left, wherever that is.)
P4=$(newest_checkpoint)
[ -n "$P4" ] && [ "$P4" -gt "$E3" ] || fail "attempt 4 left no checkpoint after step $E3"
E5=$((P4 + 200))
"$MPIEXEC" -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$OUT" --verbose --set run.steps=$E5 >"$WORK/a5.log" 2>&1 ||
  fail "attempt 5 failed: $(tail -5 "$WORK/a5.log")"
/usr/bin/python3 - "$OUT" "$E3" "$E5" <<'PY' || exit 1
import json, sys
out, e3, e5 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = json.load(open(out + "/report.json"))
a = r["attempts"]
if len(a) != 5: sys.exit("FAIL: %d attempts after the kill" % len(a))
if a[3]["state"] != "lost" or not a[3]["exit_cause"].startswith("lost") or a[3]["start_step"] != e3:
    sys.exit("FAIL: the killed attempt: %s %s from %d" % (a[3]["state"], a[3]["exit_cause"], a[3]["start_step"]))
if a[4]["exit_cause"] != "finished" or a[4]["end_step"] != e5: sys.exit("FAIL: attempt 5: %s" % a[4]["exit_cause"])
if r["checkpoint_advice"]["interruptions"] != 3: sys.exit("FAIL: interruptions %s" % r["checkpoint_advice"])
if not any("attempt 4 ended without a record" in w for w in r["warnings"]): sys.exit("FAIL: no warning on attempt 4")
PY

# spotrun report: the summary, the JSON and the timeline.
"$SPOTRUN" report "$OUT" >"$WORK/report.txt" 2>&1 || fail "spotrun report failed: $(cat "$WORK/report.txt")"
grep -q "Run report of $OUT (5 attempt(s)" "$WORK/report.txt" || fail "spotrun report: no summary"
grep -q "GPUs: none" "$WORK/report.txt" || fail "spotrun report: GPUs not said absent"
"$SPOTRUN" report "$OUT" --json >"$WORK/report.json" 2>&1 || fail "spotrun report --json failed"
/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert len(r['attempts'])==5" "$WORK/report.json" ||
  fail "spotrun report --json: not a report of 5 attempts"
"$SPOTRUN" report "$OUT" --png "$WORK/timeline.png" >"$WORK/png.log" 2>&1 || fail "--png failed: $(cat "$WORK/png.log")"
[ "$(head -c 8 "$WORK/timeline.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "--png wrote no PNG"
"$SPOTRUN" report "$WORK/nothing-here" >"$WORK/bad.log" 2>&1
[ $? = 2 ] && grep -q "is not a directory" "$WORK/bad.log" || fail "spotrun report of a missing directory: $(cat "$WORK/bad.log")"
"$SPOTRUN" report "$WORK" >"$WORK/bad.log" 2>&1
[ $? = 2 ] && grep -q "holds no attempts.jsonl" "$WORK/bad.log" || fail "spotrun report of a directory without a run"
# Attempt 6 killed while it starts up (SIGKILL as soon as its ledger record appears, mostly before it has
# read its checkpoint): no end record, and where the run stood (the end of attempt 5), not from step 0.
n5=$(wc -l <"$OUT/attempts.jsonl")
"$MPIEXEC" -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$OUT" --verbose --set run.steps=$((E5 + 100000)) >"$WORK/a6.log" 2>&1 &
pid=$!
deadline=$((SECONDS + 240))
while [ $SECONDS -lt $deadline ] && [ "$(wc -l <"$OUT/attempts.jsonl")" -le "$n5" ]; do sleep 0.01; done
pkill -KILL -P "$pid" -x spotrun
wait "$pid"
grep -q "Resuming from" "$WORK/a6.log" && echo "attempt 6 was killed after its resume" || echo "attempt 6 was killed before its resume"
"$SPOTRUN" report "$OUT" --json >"$WORK/report6.json" 2>/dev/null || fail "spotrun report after attempt 6 failed"
/usr/bin/python3 - "$WORK/report6.json" "$E5" <<'PY' || exit 1
import json, sys
a = json.load(open(sys.argv[1]))["attempts"]
e5 = int(sys.argv[2])
# ("running" to `spotrun report`: no later attempt has started that would call it lost.)
if len(a) != 6 or a[5]["state"] not in ("running", "lost") or a[5]["start_step"] != e5 or a[5]["end_step"] < e5:
    sys.exit("FAIL: attempt 6, killed while starting: %s from %d to %d (attempt 5 ended at %d)"
             % (a[-1]["state"], a[-1]["start_step"], a[-1]["end_step"], e5))
PY
echo "PASS: report at np $NP"
