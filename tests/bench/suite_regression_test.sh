#!/usr/bin/env bash
# bench/suite.py --compare catches a planted slowdown and does not flag an unchanged build.
# The slowdown: SPOTRUN_TEST_FORCE_SLOWDOWN=16 (a test hook of the test program BUILD/tests/spotrun-test,
# tests/support/spotrun_test_main.cpp, which all three runs measure) runs the MD force kernel 16 times per
# evaluation, about ten times slower in all at one rank. Three runs of the LJ suite
# in its tiny mode at RANKS (5 repeats each, 3 for the slow one): a baseline, the same build again compared with it (must exit
# 0, no REGRESSION), and the slowed build compared with it (must exit 1, lj.spotrun flagged). The machine
# may be shared and noisy, so the test compares with a 50 % threshold: a regression needs the median
# slower by 50 % AND every new sample slower than every old one (the comparison's rule), which noise
# alone does not reach while the planted slowdown exceeds it many times.
#   suite_regression_test.sh SOURCE_DIR BUILD_DIR WORK_DIR RANKS
set -uo pipefail
src=$1 build=$2 work=$3 ranks=$4
rm -rf "$work" && mkdir -p "$work"
suite() { /usr/bin/python3 "$src/bench/suite.py" lj --smoke --no-peers --repeat 5 --ranks "$ranks" --build "$build" \
            --spotrun "$build/tests/spotrun-test" --scratch "$work/scratch" --threshold 0.5 "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

unset SPOTRUN_TEST_FORCE_SLOWDOWN
suite --out "$work/base" > "$work/base.txt" 2>&1 || { cat "$work/base.txt"; fail "baseline run"; }
suite --out "$work/same" --compare "$work/base/results.json" > "$work/same.txt" 2>&1
rc=$?
cat "$work/same.txt" | grep -v '^\['
[[ $rc -eq 0 ]] || fail "the unchanged build: exit $rc, expected 0"
grep -q "^  lj.spotrun/strong/atoms=4000/np=" "$work/same.txt" || fail "the unchanged build: lj.spotrun not compared"
grep -q REGRESSION "$work/same.txt" && fail "the unchanged build flagged"

SPOTRUN_TEST_FORCE_SLOWDOWN=16 suite --repeat 3 --out "$work/slow" --compare "$work/base/results.json" > "$work/slow.txt" 2>&1
rc=$?
cat "$work/slow.txt" | grep -v '^\['
grep -q "SPOTRUN_TEST_FORCE_SLOWDOWN=16: the force kernel runs 16 times" "$work/slow/logs/"*.log ||
  fail "the slowdown hook did not act"
[[ $rc -eq 1 ]] || fail "the planted slowdown: exit $rc, expected 1"
for np in ${ranks//,/ }; do
  grep -q "^  lj.spotrun/strong/atoms=4000/np=$np: .*REGRESSION" "$work/slow.txt" || fail "lj.spotrun at np $np not flagged"
done
grep -q "REGRESSION" "$work/slow/report.md" || fail "report.md does not show the regression"
echo "PASS: --compare flags the planted slowdown and not the unchanged build (ranks $ranks)"
