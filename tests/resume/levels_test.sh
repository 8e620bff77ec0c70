#!/usr/bin/env bash
# Multilevel checkpoints (checkpoint.local_dir, checkpoint.partner) on simulated nodes: every rank runs in
# a UTS and mount namespace of its own (unshare), with its own host name and its own directory bound at
# the same local_dir path, as on nodes that share no file system. The output directory is shared (it is
# rank 0's, which stays).
# usage: levels_test.sh SPOTRUN SCENARIO
#   node_loss  3 nodes (NVE, 864 atoms); node B's rank is killed mid-run and its local directory deleted; the run resumes
#              on nodes A and C (2 ranks) from B's partner copy, and ends with the thermo of a run stopped
#              at the same step with a shared checkpoint and resumed on 2 ranks (bitwise: the same rank
#              history run by hand), and with the total energy of an uninterrupted 3-rank run to 1e-6. Then
#              a level set resumed on 3 nodes (A, C and a new node D) ends bitwise as an uninterrupted run.
#   damage     a corrupt partner copy with its node lost, a half-written own copy, a stale own copy of an
#              earlier run: each refused by the manifest with a message naming the file; inspect and export
#              read a level set; bad settings (a local_dir that cannot be written, a relative one, a partner
#              on one node) are exit 2 naming the key
#   async      checkpoint.async (sets written in the background): thermo bitwise the same with and without it,
#              on 1 node and on 3 nodes with partner copies; on 1 node trajectory frames wait for a set held in its
#              background write and are the same as without async; all 3 ranks killed while the set of step 100 is
#              held in its background write (SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE) after the loop went past
#              it: that set is not committed, the resume starts from the set of step 50 and ends bitwise as
#              an uninterrupted run; a stop (SIGTERM) during a background write waits for that set, writes
#              the stop checkpoint and exits 75, and its resume ends bitwise as an uninterrupted run
# Exit 77 (skipped) where namespaces cannot be made (not root); with SPOTRUN_REQUIRE_NETNS=1 (.ci/run) a
# failure.
set -uo pipefail
SPOTRUN=$1
SCENARIO=$2
# shellcheck source=../support/test_lib.sh
source "$(dirname "$0")/../support/test_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if ! unshare --uts --mount true 2>/dev/null; then
  if [ "${SPOTRUN_REQUIRE_NETNS:-0}" = 1 ]; then
    echo "FAIL (SPOTRUN_REQUIRE_NETNS=1): cannot make UTS and mount namespaces (unshare --uts --mount)"
    exit 1
  fi
  echo "SKIP: cannot make UTS and mount namespaces (unshare --uts --mount; run as root)"
  exit 77
fi
WORK=$(mktemp -d /tmp/spotrun-levels.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
LOCAL=$WORK/local   # the checkpoint.local_dir every node sees, bound to $WORK/nodes/<host>
mkdir -p "$LOCAL" "$WORK/nodes"

fail() { echo "FAIL: $*"; exit 1; }
last_row() { tail -1 "$1/thermo.csv"; }
etotal() { tail -1 "$1/thermo.csv" | cut -d, -f6; }

# 864 atoms, NVE (NVE864_DECK of test_lib.sh), checkpoints on the nodes with a partner copy.
write_deck "$WORK/deck.toml" "${NVE864_DECK[@]}" "checkpoint.local_dir=\"$LOCAL\"" checkpoint.partner=true
RUN="run $WORK/deck.toml --output-dir $WORK/out"

if [ "$SCENARIO" = node_loss ]; then
  # The levels run on nodes A, B, C; B is killed once checkpoint 100 is committed.
  eval "timeout 300 mpirun $(sim_node nodeA $RUN) : $(sim_node nodeB $RUN) : $(sim_node nodeC $RUN)" >"$WORK/a.log" 2>&1 &
  mp=$!
  for _ in $(seq 1 30000); do [ -e "$WORK/out/checkpoints/ckpt-100.levels" ] && break; sleep 0.01; done
  [ -e "$WORK/out/checkpoints/ckpt-100.levels" ] || { cat "$WORK/a.log"; fail "no checkpoint 100"; }
  kill -KILL "$(cat "$WORK/nodeB.pid")"
  wait $mp
  rc=$?
  [ $rc -ne 0 ] || fail "the run finished before node B was killed (raise run.steps)"
  rm -rf "$WORK/nodes/nodeB"   # node B is gone, its disk with it
  # Resume on the survivors, 2 ranks.
  rc=$(on_nodes "$WORK/b.log" "nodeA $RUN" "nodeC $RUN")
  [ "$rc" = 0 ] || { cat "$WORK/b.log"; fail "resume on nodes A and C: exit $rc"; }
  grep -q "partner copy on host nodeC" "$WORK/b.log" || { cat "$WORK/b.log"; fail "node B's file not read from its partner copy"; }
  step=$(sed -n 's/^Resuming from .*ckpt-\([0-9]*\)\.levels at step.*/\1/p' "$WORK/b.log")
  [ -n "$step" ] || { cat "$WORK/b.log"; fail "no resume from a level set"; }
  echo "resumed on 2 nodes from the level set of step $step"
  # By hand: 3 ranks to that step with a shared checkpoint (final.h5), then 2 ranks to the end.
  rc=$(on_nodes "$WORK/c.log" "h1 run $WORK/deck.toml --output-dir $WORK/hand --set checkpoint.local_dir= --set run.steps=$step" \
                              "h2 run $WORK/deck.toml --output-dir $WORK/hand --set checkpoint.local_dir= --set run.steps=$step" \
                              "h3 run $WORK/deck.toml --output-dir $WORK/hand --set checkpoint.local_dir= --set run.steps=$step")
  [ "$rc" = 0 ] || { cat "$WORK/c.log"; fail "by hand, part 1: exit $rc"; }
  rc=$(on_nodes "$WORK/c.log" "h1 run $WORK/deck.toml --output-dir $WORK/hand --set checkpoint.local_dir=" \
                              "h2 run $WORK/deck.toml --output-dir $WORK/hand --set checkpoint.local_dir=")
  [ "$rc" = 0 ] || { cat "$WORK/c.log"; fail "by hand, part 2: exit $rc"; }
  grep -q "Resuming from $WORK/hand/final.h5 at step $step" "$WORK/c.log" || fail "by hand: not resumed from final.h5"
  [ "$(last_row "$WORK/out")" = "$(last_row "$WORK/hand")" ] ||
    fail "level resume != shared resume of step $step: $(last_row "$WORK/out") vs $(last_row "$WORK/hand")"
  cmp -s "$WORK/out/thermo.csv" "$WORK/hand/thermo.csv" || fail "thermo.csv of the level resume differs from the shared resume"
  # Uninterrupted on 3 ranks: the total energy to 1e-6.
  rc=$(on_nodes "$WORK/d.log" "u1 run $WORK/deck.toml --output-dir $WORK/ref --set checkpoint.local_dir=" \
                              "u2 run $WORK/deck.toml --output-dir $WORK/ref --set checkpoint.local_dir=" \
                              "u3 run $WORK/deck.toml --output-dir $WORK/ref --set checkpoint.local_dir=")
  [ "$rc" = 0 ] || { cat "$WORK/d.log"; fail "uninterrupted run: exit $rc"; }
  python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-6 * abs(b))" \
    "$(etotal "$WORK/out")" "$(etotal "$WORK/ref")" || fail "etotal $(etotal "$WORK/out") vs uninterrupted $(etotal "$WORK/ref")"
  # Same rank count: stop the levels run of 3 nodes at step 500 (a final state), lose node B, resume on A, C
  # and a new node D: bitwise the uninterrupted 3-rank run.
  R3="run $WORK/deck.toml --output-dir $WORK/same"
  rc=$(on_nodes "$WORK/e.log" "nodeA $R3 --set run.steps=500" "nodeB $R3 --set run.steps=500" "nodeC $R3 --set run.steps=500")
  [ "$rc" = 0 ] || { cat "$WORK/e.log"; fail "3 nodes to step 500: exit $rc"; }
  rm -rf "$WORK/nodes/nodeB"
  rc=$(on_nodes "$WORK/e.log" "nodeA $R3" "nodeC $R3" "nodeD $R3")
  [ "$rc" = 0 ] || { cat "$WORK/e.log"; fail "resume on A, C, D: exit $rc"; }
  grep -q "Resuming from $WORK/same/final.levels at step 500" "$WORK/e.log" || { cat "$WORK/e.log"; fail "not resumed from final.levels"; }
  cmp -s "$WORK/same/thermo.csv" "$WORK/ref/thermo.csv" || fail "3 ranks after a node loss != uninterrupted 3 ranks (thermo.csv)"
  echo "PASS: levels $SCENARIO"
  exit 0
fi

if [ "$SCENARIO" = damage ]; then
  R="run $WORK/deck.toml --output-dir $WORK/out --set run.steps=200"
  rc=$(on_nodes "$WORK/a.log" "nodeA $R" "nodeB $R" "nodeC $R")
  [ "$rc" = 0 ] || { cat "$WORK/a.log"; fail "first run: exit $rc"; }
  [ -e "$WORK/out/final.levels" ] || fail "no final.levels"
  ls "$WORK/out" | grep -q '\.h5$' && fail "a checkpoint file in the output directory"
  ls "$WORK/out/checkpoints" | grep -q '\.h5$' && fail "a checkpoint file in the output directory"
  dir=$(sed -n 's/^directory //p' "$WORK/out/final.levels" | sed "s|^$LOCAL|.|")
  # inspect and export of the set, on the nodes; inspect of one node file.
  rc=$(on_nodes "$WORK/i.log" "nodeA inspect $WORK/out/final.levels" "nodeB inspect $WORK/out/final.levels" "nodeC inspect $WORK/out/final.levels")
  [ "$rc" = 0 ] && grep -q "OK: every byte and checksum verified, the state restores" "$WORK/i.log" || { cat "$WORK/i.log"; fail "inspect of the set"; }
  "$SPOTRUN" inspect "$WORK/nodes/nodeA/$dir/final.nodeA.h5" >"$WORK/i1.log" 2>&1 || { cat "$WORK/i1.log"; fail "inspect of a node file"; }
  grep -q "level: node 0 of 3" "$WORK/i1.log" || fail "inspect does not say which node file"
  rc=$(on_nodes "$WORK/x.log" "nodeA export $WORK/out/final.levels --xyz $WORK/out.xyz" "nodeC export $WORK/out/final.levels --xyz $WORK/out.xyz" "nodeD export $WORK/out/final.levels --xyz $WORK/out.xyz")
  [ "$rc" = 0 ] || { cat "$WORK/x.log"; fail "export of the set on nodes A, C, D: exit $rc"; }
  [ "$(head -1 "$WORK/out.xyz")" = 864 ] || fail "export: $(head -1 "$WORK/out.xyz") atoms, expected 864"
  cp -a "$WORK/nodes" "$WORK/pristine"
  restore() { rm -rf "$WORK/nodes"; cp -a "$WORK/pristine" "$WORK/nodes"; }
  R="run $WORK/deck.toml --output-dir $WORK/out --set run.steps=250"
  # (1) node B lost and its partner copy (on C) corrupt: the final set is incomplete, skipped naming the file;
  # the run resumes from checkpoint 150.
  printf '\xff' | dd of="$WORK/nodes/nodeC/$dir/partner/final.nodeB.h5" bs=1 seek=5000 conv=notrunc status=none
  rm -rf "$WORK/nodes/nodeB"
  rc=$(on_nodes "$WORK/d1.log" "nodeA $R" "nodeC $R")
  [ "$rc" = 0 ] || { cat "$WORK/d1.log"; fail "(1) exit $rc"; }
  grep -q "WARNING: skipping checkpoint $WORK/out/final.levels: .*incomplete" "$WORK/d1.log" &&
    grep -q "node file final.nodeB.h5 of host nodeB; own copy (host nodeB): its host nodeB is not a node of this run; partner copy (host nodeC): on host nodeC: refused: .*do not match the manifest" "$WORK/d1.log" ||
    { cat "$WORK/d1.log"; fail "(1) the corrupt partner copy is not named"; }
  grep -q "Resuming from $WORK/out/checkpoints/ckpt-150.levels at step 150" "$WORK/d1.log" || { cat "$WORK/d1.log"; fail "(1) not resumed from 150"; }
  # (2) a half-written own copy (truncated): refused, its partner copy read.
  restore
  # A new run (another seed) into the same output directory: its node files take the same names.
  R="$R --set md.lattice.seed=4242"
  rc=$(on_nodes "$WORK/a2.log" "nodeA $R --resume never --set run.steps=200" "nodeB $R --resume never --set run.steps=200" \
                               "nodeC $R --resume never --set run.steps=200")
  [ "$rc" = 0 ] || { cat "$WORK/a2.log"; fail "(2) fresh run: exit $rc"; }
  f="$WORK/nodes/nodeA/$dir/final.nodeA.h5"
  truncate -s $(($(stat -c %s "$f") / 2)) "$f"
  rc=$(on_nodes "$WORK/d2.log" "nodeA $R" "nodeB $R" "nodeC $R")
  [ "$rc" = 0 ] || { cat "$WORK/d2.log"; fail "(2) exit $rc"; }
  grep -q "WARNING: checkpoint $WORK/out/final.levels: final.nodeA.h5: own copy on host nodeA skipped: .*truncated" "$WORK/d2.log" &&
    grep -q "final.nodeA.h5 (node 0 of 3, host nodeA): partner copy on host nodeB" "$WORK/d2.log" &&
    grep -q "Resuming from $WORK/out/final.levels at step 200" "$WORK/d2.log" || { cat "$WORK/d2.log"; fail "(2) half-written copy"; }
  # (3) a stale own copy: node C's file of the earlier run (before --resume never, the same name) put back.
  cp "$WORK/pristine/nodeC/$dir/final.nodeC.h5" "$WORK/nodes/nodeC/$dir/final.nodeC.h5"
  rc=$(on_nodes "$WORK/d3.log" "nodeA $R --set run.steps=300" "nodeB $R --set run.steps=300" "nodeC $R --set run.steps=300")
  [ "$rc" = 0 ] || { cat "$WORK/d3.log"; fail "(3) exit $rc"; }
  grep -q "WARNING: checkpoint $WORK/out/final.levels: final.nodeC.h5: own copy on host nodeC skipped: .*not the file the index recorded" "$WORK/d3.log" ||
    { cat "$WORK/d3.log"; fail "(3) the stale file is not named"; }
  # Bad settings: exit 2 on every rank, naming the key.
  touch "$WORK/afile"
  rc=$(on_nodes "$WORK/b1.log" "nodeA run $WORK/deck.toml --output-dir $WORK/bad --set checkpoint.local_dir=$WORK/afile/x" \
                               "nodeB run $WORK/deck.toml --output-dir $WORK/bad --set checkpoint.local_dir=$WORK/afile/x")
  [ "$rc" = 2 ] && grep -q "ERROR: checkpoint.local_dir = \"$WORK/afile/x\" on host node[AB]: cannot create" "$WORK/b1.log" ||
    { cat "$WORK/b1.log"; fail "an unwritable local_dir: exit $rc"; }
  rc=$(on_nodes "$WORK/b2.log" "nodeA run $WORK/deck.toml --output-dir $WORK/bad --set checkpoint.local_dir=rel/dir")
  [ "$rc" = 2 ] && grep -q "checkpoint.local_dir.*must be an absolute path" "$WORK/b2.log" || { cat "$WORK/b2.log"; fail "a relative local_dir: exit $rc"; }
  rc=$(on_nodes "$WORK/b3.log" "nodeA run $WORK/deck.toml --output-dir $WORK/bad")
  [ "$rc" = 2 ] && grep -q "ERROR: checkpoint.partner = true needs at least 2 nodes" "$WORK/b3.log" || { cat "$WORK/b3.log"; fail "a partner on one node: exit $rc"; }
  echo "PASS: levels $SCENARIO"
  exit 0
fi
if [ "$SCENARIO" = async ]; then
  S="--set run.steps=400"
  thermo_at() { grep -q "^$2," "$1/thermo.csv" 2>/dev/null; }
  # Bitwise with and without the background write: 1 node (no partner), then 3 nodes with partner copies.
  # On 1 node with trajectory frames every 10 steps: the set of step 100 held 5 s in its background write, the
  # frame of step 110 waits for it (HDF5 from one thread at a time); the frames are the same without async.
  for a in true false; do
    [ $a = true ] && export SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE=100=5
    rc=$(on_nodes "$WORK/one-$a.log" "nodeA run $WORK/deck.toml --output-dir $WORK/one-$a $S --set checkpoint.partner=false --set checkpoint.async=$a --set md.trajectory.every=10")
    unset SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE
    [ "$rc" = 0 ] || { cat "$WORK/one-$a.log"; fail "1 node, async=$a: exit $rc"; }
    rc=$(on_nodes "$WORK/three-$a.log" "nodeA run $WORK/deck.toml --output-dir $WORK/three-$a $S --set checkpoint.async=$a" \
                                       "nodeB run $WORK/deck.toml --output-dir $WORK/three-$a $S --set checkpoint.async=$a" \
                                       "nodeC run $WORK/deck.toml --output-dir $WORK/three-$a $S --set checkpoint.async=$a")
    [ "$rc" = 0 ] || { cat "$WORK/three-$a.log"; fail "3 nodes, async=$a: exit $rc"; }
  done
  for n in one three; do
    grep -q "^Snapshot for checkpoint $WORK/$n-true/checkpoints/ckpt-100.levels at step 100" "$WORK/$n-true.log" &&
      grep -q "^Checkpoint $WORK/$n-true/checkpoints/ckpt-100.levels at step 100 .*in the background" "$WORK/$n-true.log" ||
      { cat "$WORK/$n-true.log"; fail "$n: no checkpoint written in the background"; }
    grep -q "MPI_THREAD_MULTIPLE" "$WORK/$n-true.log" && { cat "$WORK/$n-true.log"; fail "$n: written synchronously"; }
    grep -q "^Snapshot" "$WORK/$n-false.log" && fail "$n: checkpoint.async = false wrote in the background"
    cmp -s "$WORK/$n-true/thermo.csv" "$WORK/$n-false/thermo.csv" || fail "$n: thermo.csv differs with and without async"
    [ "$(wc -l <"$WORK/$n-true/thermo.csv")" -ge 9 ] || fail "$n: a short thermo.csv"
    [ -e "$WORK/$n-true/final.levels" ] && [ -e "$WORK/$n-true/checkpoints/ckpt-350.levels" ] || fail "$n: sets missing"
  done
  grep -q "^Waited .* for checkpoint $WORK/one-true/checkpoints/ckpt-100.levels (step 100, written in the background): trajectory or field frames" "$WORK/one-true.log" ||
    { cat "$WORK/one-true.log"; fail "the trajectory frame did not wait for the set written in the background"; }
  /usr/bin/python3 - "$WORK/one-true/trajectory.h5md" "$WORK/one-false/trajectory.h5md" <<'PY' || fail "trajectory.h5md differs with and without async"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
a["particles"].visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
assert names, "no datasets under /particles"
for n in names:
    x, y = a["particles"][n][()], b["particles"][n][()]
    assert x.shape == y.shape and np.array_equal(x, y), n
assert a["particles"]["all/position/value"].shape[0] >= 40, a["particles"]["all/position/value"].shape
PY
  # Killed while the set of step 100 is held in its background write, after the loop went past it.
  K="run $WORK/deck.toml --output-dir $WORK/kill $S"
  export SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE=100=120
  eval "timeout 300 mpirun $(sim_node nodeA "$K") : $(sim_node nodeB "$K") : $(sim_node nodeC "$K")" >"$WORK/kill.log" 2>&1 &
  mp=$!
  for _ in $(seq 1 30000); do thermo_at "$WORK/kill" 150 && break; sleep 0.01; done
  thermo_at "$WORK/kill" 150 || { cat "$WORK/kill.log"; fail "the loop did not go on past a checkpoint written in the background"; }
  [ -e "$WORK/kill/checkpoints/ckpt-100.levels" ] && fail "the set of step 100 committed during its paused write"
  for h in nodeA nodeB nodeC; do kill -KILL "$(cat "$WORK/$h.pid")"; done
  wait $mp
  unset SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE
  [ -e "$WORK/kill/checkpoints/ckpt-50.levels" ] || fail "the set of step 50 is missing after the kill"
  [ -e "$WORK/kill/checkpoints/ckpt-100.levels" ] && fail "the killed set of step 100 was committed"
  rc=$(on_nodes "$WORK/kill2.log" "nodeA $K" "nodeB $K" "nodeC $K")
  [ "$rc" = 0 ] || { cat "$WORK/kill2.log"; fail "resume after the kill: exit $rc"; }
  grep -q "Resuming from $WORK/kill/checkpoints/ckpt-50.levels at step 50" "$WORK/kill2.log" ||
    { cat "$WORK/kill2.log"; fail "not resumed from the set of step 50"; }
  cmp -s "$WORK/kill/thermo.csv" "$WORK/three-false/thermo.csv" || fail "resume after a kill in a background write != uninterrupted"
  echo "killed during a background write: resumed from step 50, bitwise"
  # A stop during a background write: the set in flight is committed, then the stop checkpoint; exit 75.
  # The pair forces 300 times per step (about 1.3 s for 100 steps on an idle machine, where the loop
  # otherwise runs from step 100 to 200, the next set due, in 0.05 s: before the signal arrives).
  T="run $WORK/deck.toml --output-dir $WORK/stop $S --set checkpoint.every_steps=100"
  export SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE=100=10 SPOTRUN_TEST_FORCE_SLOWDOWN=300
  eval "timeout 300 mpirun $(sim_node nodeA "$T") : $(sim_node nodeB "$T") : $(sim_node nodeC "$T")" >"$WORK/stop.log" 2>&1 &
  mp=$!
  for _ in $(seq 1 30000); do grep -q "pausing" "$WORK/stop.log" && break; sleep 0.01; done
  grep -q "pausing" "$WORK/stop.log" || { cat "$WORK/stop.log"; fail "no paused background write"; }
  for h in nodeA nodeB nodeC; do kill -TERM "$(cat "$WORK/$h.pid")"; done
  wait $mp
  rc=$?
  unset SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE SPOTRUN_TEST_FORCE_SLOWDOWN
  [ "$rc" = 75 ] || { cat "$WORK/stop.log"; fail "stop during a background write: exit $rc, expected 75"; }
  grep -q "^Waited .* for checkpoint $WORK/stop/checkpoints/ckpt-100.levels (step 100, written in the background): the run stops" "$WORK/stop.log" ||
    { cat "$WORK/stop.log"; fail "the stop did not wait for the set in flight"; }
  step=$(sed -n 's/^Stopping at step \([0-9]*\):.*/\1/p' "$WORK/stop.log")
  [ -n "$step" ] && [ "$step" -gt 100 ] && [ "$step" -lt 200 ] || { cat "$WORK/stop.log"; fail "stopped at step '$step', expected 101..199"; }
  [ -e "$WORK/stop/checkpoints/ckpt-100.levels" ] && [ -e "$WORK/stop/checkpoints/ckpt-$step.levels" ] ||
    { ls "$WORK/stop/checkpoints"; fail "the set of step 100 or the stop checkpoint of step $step is missing"; }
  rc=$(on_nodes "$WORK/stop2.log" "nodeA $T" "nodeB $T" "nodeC $T")
  [ "$rc" = 0 ] || { cat "$WORK/stop2.log"; fail "resume after the stop: exit $rc"; }
  grep -q "Resuming from $WORK/stop/checkpoints/ckpt-$step.levels at step $step" "$WORK/stop2.log" || { cat "$WORK/stop2.log"; fail "not resumed from the stop checkpoint"; }
  cmp -s "$WORK/stop/thermo.csv" "$WORK/three-false/thermo.csv" || fail "resume after a stop in a background write != uninterrupted"
  echo "stopped during a background write at step $step: exit 75, resumed bitwise"
  echo "PASS: levels $SCENARIO"
  exit 0
fi
fail "unknown scenario $SCENARIO"
