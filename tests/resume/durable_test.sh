#!/usr/bin/env bash
# The durable tier of multilevel checkpoints (checkpoint.durable) against an S3 endpoint on this machine:
# s3rver (npm) on 127.0.0.1, reached through rclone's S3 backend configured by RCLONE_CONFIG_S3T_* variables.
# Every rank runs on a simulated node of its own (UTS and mount namespaces, as in levels_test.sh).
# usage: durable_test.sh SPOTRUN SCENARIO NPM_PREFIX
#   bucket  2 nodes flush to the bucket; once a durable set is there every node is lost with its local disk and
#           the output directory; the run resumes on 2 fresh nodes from the bucket alone and ends bitwise as an
#           uninterrupted 2-rank run (its uploads at nice 19, checkpoint.durable_nice, its downloads at the
#           loop's 0); status.json and report.json say the final state is durable
#   outage  the S3 endpoint is killed while an upload is in flight: the flush fails with a warning, the run goes
#           on and finishes; its final state is on the nodes (inspect reads it), not in the bucket
#   half    a node file object cut to half its size (final), and a set without its index: both skipped on a
#           resume from the bucket, which resumes from the newest sound durable set and ends bitwise as an
#           uninterrupted run
# Needs node, npm (s3rver is installed into NPM_PREFIX when missing), rclone, and root (namespaces). Exit 77
# (skipped) when one is missing; with SPOTRUN_REQUIRE_DURABLE=1 a skip is a failure (.ci/run sets it).
set -uo pipefail
SPOTRUN=$1
SCENARIO=$2
NPM_PREFIX=$3
# shellcheck source=../support/test_lib.sh
source "$(dirname "$0")/../support/test_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
skip() {
  if [ "${SPOTRUN_REQUIRE_DURABLE:-0}" = 1 ]; then echo "FAIL (SPOTRUN_REQUIRE_DURABLE=1): $*"; exit 1; fi
  echo "SKIP: $*"
  exit 77
}
unshare --uts --mount true 2>/dev/null || skip "cannot make UTS and mount namespaces (unshare --uts --mount; run as root)"
command -v rclone >/dev/null || skip "rclone is not installed (apt-get install rclone)"
command -v node >/dev/null && command -v npm >/dev/null || skip "node and npm are not installed (apt-get install nodejs npm)"
S3RVER=$NPM_PREFIX/node_modules/.bin/s3rver
if [ ! -x "$S3RVER" ]; then
  mkdir -p "$NPM_PREFIX"
  timeout 600 npm install --prefix "$NPM_PREFIX" --no-audit --no-fund s3rver >"$NPM_PREFIX/install.log" 2>&1 ||
    skip "cannot install s3rver with npm into $NPM_PREFIX (see $NPM_PREFIX/install.log)"
fi
# rclone refuses to start while AWS_CA_BUNDLE is set (for plain HTTP to the local endpoint); spotrun never sets it.
unset AWS_CA_BUNDLE
WORK=$(mktemp -d /tmp/spotrun-durable.XXXXXX)
: >"$WORK/rclone.conf"
export RCLONE_CONFIG=$WORK/rclone.conf   # no configuration file but the variables below (and no notice about it)
S3PID=""
cleanup() {
  [ -n "$S3PID" ] && kill "$S3PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

start_s3rver() {
  mkdir -p "$WORK/s3"
  "$S3RVER" -d "$WORK/s3" -a 127.0.0.1 -p 0 --configure-bucket spotrun-test >"$WORK/s3rver.log" 2>&1 &
  S3PID=$!
  local port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/s3rver.log" | head -1)
    [ -n "$port" ] && break
    kill -0 $S3PID 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$WORK/s3rver.log"; fail "s3rver did not start"; }
  export RCLONE_CONFIG_S3T_TYPE=s3 RCLONE_CONFIG_S3T_PROVIDER=Other RCLONE_CONFIG_S3T_ENDPOINT=http://127.0.0.1:$port
  export RCLONE_CONFIG_S3T_ACCESS_KEY_ID=S3RVER RCLONE_CONFIG_S3T_SECRET_ACCESS_KEY=S3RVER
  rclone lsf s3t:spotrun-test >/dev/null 2>&1 || fail "rclone cannot list the s3rver bucket"
}
start_s3rver

LOCAL=$WORK/local
mkdir -p "$LOCAL" "$WORK/nodes"
NODES_TIMEOUT=600   # on_nodes of test_lib.sh
# The durable sets in the bucket, by their index objects (s3rver keeps each object as files in its directory).
durable_indexes() { rclone lsf -R s3t:spotrun-test 2>/dev/null | grep '\.levels$' || true; }
wait_for_durable() {  # wait_for_durable LOG PID: until the run says a ckpt set is durable (index confirmed)
  for _ in $(seq 1 3000); do
    grep -q "^Durable checkpoint s3t:spotrun-test/runs/spotrun-out-.*/ckpt-[0-9]*\.levels at step" "$1" && return 0
    kill -0 "$2" 2>/dev/null || { cat "$1"; fail "the run ended before a durable checkpoint"; }
    sleep 0.1
  done
  cat "$1"
  fail "no durable checkpoint in the bucket"
}
# Every thermo row of the resumed run is the uninterrupted run's row of that step, and both end alike.
same_rows() {  # same_rows RESUMED REFERENCE
  [ "$(tail -1 "$1/thermo.csv")" = "$(tail -1 "$2/thermo.csv")" ] ||
    fail "last row $(tail -1 "$1/thermo.csv") != uninterrupted $(tail -1 "$2/thermo.csv")"
  local extra
  extra=$(tail -n +2 "$1/thermo.csv" | grep -vxFf "$2/thermo.csv")
  [ -z "$extra" ] || fail "rows of the resumed run not in the uninterrupted run: $extra"
}

# The uploads run at the loop's priority (checkpoint.durable_nice = 0): each scenario needs a flush to end
# while the run computes, and at the default (nice 19) the two ranks, which busy-wait in MPI on this machine's
# cores, leave rclone about 1.5 % of a core: a short run would end before its first flush does.
write_deck "$WORK/deck.toml" "${NVE864_DECK[@]}" "checkpoint.local_dir=\"$LOCAL\"" checkpoint.partner=true \
  'checkpoint.durable="s3t:spotrun-test/runs"' checkpoint.durable_interval=0 checkpoint.durable_wait=120 \
  checkpoint.durable_nice=0
OUT=$WORK/out
RUN="run $WORK/deck.toml --output-dir $OUT"
reference() {  # reference STEPS: the uninterrupted run on 2 ranks, one shared checkpoint file, no durable tier
  local rc
  rc=$(on_nodes "$WORK/ref.log" "r1 run $WORK/deck.toml --output-dir $WORK/ref --set checkpoint.local_dir= --set checkpoint.durable= --set checkpoint.partner=false --set run.steps=$1" \
                                "r2 run $WORK/deck.toml --output-dir $WORK/ref --set checkpoint.local_dir= --set checkpoint.durable= --set checkpoint.partner=false --set run.steps=$1")
  [ "$rc" = 0 ] || { cat "$WORK/ref.log"; fail "uninterrupted run: exit $rc"; }
}

if [ "$SCENARIO" = bucket ]; then
  eval "timeout 600 mpirun $(sim_node nodeA $RUN) : $(sim_node nodeB $RUN)" >"$WORK/a.log" 2>&1 &
  mp=$!
  wait_for_durable "$WORK/a.log" $mp
  # Every node lost at once, with its disk and the output directory.
  kill -KILL "$(cat "$WORK/nodeA.pid")" "$(cat "$WORK/nodeB.pid")"
  wait $mp
  [ $? -ne 0 ] || fail "the run finished before its nodes were lost (raise run.steps)"
  durable_indexes | grep -q 'ckpt-[0-9]*\.levels$' || fail "the run said a set is durable, the bucket has no index"
  rm -rf "$WORK/nodes" "$OUT"
  # The resumed run uploads at the lowest priority (checkpoint.durable_nice = 19): a stand-in for rclone notes
  # the nice value each rclone starts with. Its final state's flush, when the loop no longer runs, still ends.
  cat >"$WORK/rclone-nice" <<SH
#!/bin/sh
echo "\$(cut -d' ' -f19 /proc/\$\$/stat) \$*" >>"$WORK/rclone-nice.log"
exec rclone "\$@"
SH
  chmod +x "$WORK/rclone-nice"
  rc=$(SPOTRUN_RCLONE=$WORK/rclone-nice on_nodes "$WORK/b.log" "nodeC $RUN --set checkpoint.durable_nice=19" \
                                                 "nodeD $RUN --set checkpoint.durable_nice=19")
  [ "$rc" = 0 ] || { cat "$WORK/b.log"; fail "resume on fresh nodes: exit $rc"; }
  # Uploads (copyto from a local file) at 19; the resume's downloads (copyto from the bucket), made by the
  # loop's thread before the loop, at its priority, 0.
  up=$(awk '$2 == "copyto" && $4 ~ /^\// { print $1 }' "$WORK/rclone-nice.log" | sort -u | tr '\n' ' ')
  down=$(awk '$2 == "copyto" && $4 ~ /^s3t:/ { print $1 }' "$WORK/rclone-nice.log" | sort -u | tr '\n' ' ')
  [ "$up" = "19 " ] && [ "$down" = "0 " ] ||
    { cat "$WORK/rclone-nice.log"; fail "nice values of rclone: uploads '$up' (want 19), downloads '$down' (want 0)"; }
  echo "the resumed run's uploads ran at nice 19 ($(awk '$2 == "copyto" && $4 ~ /^\// ' "$WORK/rclone-nice.log" | wc -l) copies), its downloads at 0"
  step=$(sed -n 's/^Resuming from s3t:spotrun-test\/runs\/.*ckpt-\([0-9]*\)\.levels at step.*/\1/p' "$WORK/b.log")
  [ -n "$step" ] || { cat "$WORK/b.log"; fail "not resumed from the bucket"; }
  grep -q "node file ckpt-$step.nodeA.h5 (node 0 of 2, host nodeA): durable copy on host node[CD]" "$WORK/b.log" ||
    { cat "$WORK/b.log"; fail "node A's file not read from a durable copy"; }
  echo "resumed on fresh nodes from the durable set of step $step"
  reference 1500
  same_rows "$OUT" "$WORK/ref"
  cmp -s <(tail -1 "$OUT/thermo.csv") <(tail -1 "$WORK/ref/thermo.csv") || fail "not bitwise"
  # status.json and the report: the final state reached the durable tier.
  /usr/bin/python3 - "$OUT" <<'PY' || fail "status.json or report.json do not say the final state is durable"
import json, sys
out = sys.argv[1]
s = json.load(open(out + "/status.json"))
assert s["state"] == "finished", s
lv = s["levels"]
assert lv["local"] == 1500 and lv["partner"] == 1500 and lv["durable"] == 1500, lv
assert lv["durable_location"].startswith("s3t:spotrun-test/runs/spotrun-out-"), lv
r = json.load(open(out + "/attempts.jsonl".replace("attempts.jsonl", "report.json")))
cps = [c for a in r["attempts"] for c in a["checkpoints"]]
final = [c for c in cps if c["reason"] == "final"]
assert final and final[-1]["levels"] == "local+partner" and final[-1]["durable"] == "durable", final
PY
  durable_indexes | grep -q "final\.levels$" || fail "no final.levels in the bucket"
  echo "PASS: durable $SCENARIO"
  exit 0
fi

if [ "$SCENARIO" = outage ]; then
  # An rclone that waits before each upload once $WORK/slow exists, so that the endpoint dies mid-flush.
  cat >"$WORK/rclone-slow" <<SH
#!/bin/sh
if [ "\$1" = copyto ] && [ -e "$WORK/slow" ]; then touch "$WORK/uploading"; sleep 2; fi
exec rclone "\$@"
SH
  chmod +x "$WORK/rclone-slow"
  export SPOTRUN_RCLONE=$WORK/rclone-slow
  R="$RUN --set checkpoint.durable_wait=60"
  eval "timeout 600 mpirun $(sim_node nodeA $R) : $(sim_node nodeB $R)" >"$WORK/a.log" 2>&1 &
  mp=$!
  wait_for_durable "$WORK/a.log" $mp
  touch "$WORK/slow"
  for _ in $(seq 1 3000); do [ -e "$WORK/uploading" ] && break; sleep 0.01; done
  [ -e "$WORK/uploading" ] || fail "no upload started after the first durable checkpoint"
  kill -KILL "$S3PID"   # the bucket is gone while an upload is in flight
  S3PID=""
  wait $mp
  rc=$?
  [ $rc = 0 ] || { cat "$WORK/a.log"; fail "the run did not finish after the outage: exit $rc"; }
  grep -q "WARNING: durable checkpoint .* (step [0-9]*): host node[AB]: .*the run goes on, its local and partner copies are intact" "$WORK/a.log" ||
    { cat "$WORK/a.log"; fail "no warning for the failed flush"; }
  grep -q "WARNING: checkpoint final at step 1500 did not reach the durable tier" "$WORK/a.log" ||
    { cat "$WORK/a.log"; fail "no warning for the final state's flush"; }
  [ "$(tail -1 "$OUT/thermo.csv" | cut -d, -f1)" = 1500 ] || fail "the run did not reach step 1500"
  # The local and partner copies are intact: inspect reads the final set on both nodes.
  rc=$(on_nodes "$WORK/i.log" "nodeA inspect $OUT/final.levels" "nodeB inspect $OUT/final.levels")
  [ "$rc" = 0 ] && grep -q "OK: every byte and checksum verified, the state restores" "$WORK/i.log" ||
    { cat "$WORK/i.log"; fail "inspect of the final set after the outage"; }
  /usr/bin/python3 - "$OUT" <<'PY' || fail "status.json or report.json do not record the failed flush"
import json, sys
out = sys.argv[1]
s = json.load(open(out + "/status.json"))
lv = s["levels"]
assert s["state"] == "finished" and lv["local"] == 1500 and lv["durable"] is not None and lv["durable"] < 1500, lv
r = json.load(open(out + "/report.json"))
cps = [c for a in r["attempts"] for c in a["checkpoints"]]
assert any(c.get("durable", "").startswith("failed") for c in cps), cps
PY
  echo "PASS: durable $SCENARIO"
  exit 0
fi

if [ "$SCENARIO" = half ]; then
  R="$RUN --set run.steps=300"
  # The steps are made 40 times the force work (the same results): a checkpoint set's upload must be
  # confirmed before the final state's flush, which cancels one still under way, and a loaded machine
  # slows rclone as much as the run.
  rc=$(SPOTRUN_TEST_FORCE_SLOWDOWN=40 on_nodes "$WORK/a.log" "nodeA $R" "nodeB $R")
  [ "$rc" = 0 ] || { cat "$WORK/a.log"; fail "first run: exit $rc"; }
  prefix=$(sed -n 's/^Durable checkpoint \(s3t:.*\)\/final\.levels at step 300.*/\1/p' "$WORK/a.log")
  [ -n "$prefix" ] || { cat "$WORK/a.log"; fail "the final state did not reach the bucket"; }
  newest=$(rclone lsf "$prefix" | sed -n 's/^ckpt-\([0-9]*\)\.levels$/\1/p' | sort -n | tail -1)
  [ -n "$newest" ] || fail "no durable ckpt set besides final"
  # final's node file of node A cut to half its size: a half-uploaded object.
  rclone cat "$prefix/final/final.nodeA.h5" >"$WORK/whole.h5"
  head -c $(($(stat -c %s "$WORK/whole.h5") / 2)) "$WORK/whole.h5" >"$WORK/half.h5"
  rclone copyto "$WORK/half.h5" "$prefix/final/final.nodeA.h5" || fail "cannot replace the object"
  # A set whose index never arrived: node files only, at a later step.
  rclone copy "$prefix/final" "$prefix/ckpt-9000" || fail "cannot copy a set"
  rm -rf "$WORK/nodes" "$OUT"
  R="$RUN --set run.steps=400"
  rc=$(on_nodes "$WORK/b.log" "nodeC $R" "nodeD $R")
  [ "$rc" = 0 ] || { cat "$WORK/b.log"; fail "resume from the bucket: exit $rc"; }
  grep -q "WARNING: skipping checkpoint $prefix/final.levels: durable checkpoint $prefix/final.levels: node file $prefix/final/final.nodeA.h5 has [0-9]* bytes, the index says [0-9]* (a half-uploaded or damaged object)" "$WORK/b.log" ||
    { cat "$WORK/b.log"; fail "the half-uploaded object is not named"; }
  grep -q "ckpt-9000" "$WORK/b.log" && { cat "$WORK/b.log"; fail "a set without its index was considered"; }
  grep -q "^Resuming from $prefix/ckpt-$newest.levels at step $newest" "$WORK/b.log" ||
    { cat "$WORK/b.log"; fail "not resumed from the newest sound durable set (ckpt-$newest)"; }
  reference 400
  same_rows "$OUT" "$WORK/ref"
  echo "PASS: durable $SCENARIO"
  exit 0
fi
fail "unknown scenario $SCENARIO"
