#!/usr/bin/env bash
# Loss campaign (not in CI): N random node losses under spotrun launch, on nodes in network namespaces
# (tests/cli/launch_test.sh: a head namespace that runs launch and mpirun and whose file system -- this
# machine's -- holds the output directory, and three worker nodes a, b, c, each with its own host name and
# its own sshd, one rank each). The kinds come in shuffled rounds of three, so they are drawn evenly; each
# run picks the node lost (a, b or c) and the moment (0 to 0.8 s after checkpoint 100) at random:
#   silent     the node's link goes down, then every process on it is killed (case netns)
#   noisy      the node's processes are killed, then its link goes down (case noisy)
#   partition  the node (holding rank 0 and the run's lock) is cut off and frozen, the run moves on to the
#              other two, then the partition heals; the old attempt must write nothing (case partition)
# A run is "lost" when its case fails (launch gave up, a final energy off by more than 1e-6 from an
# uninterrupted 3-rank run, a process of the old attempt left, a write after the heal), "hung" when it does
# not end within 240 s. Needs root and a build with the tests: the cases run the test program
# BUILD_DIR/tests/spotrun-test (launch_test.sh paces its runs with a test hook, docs/layout.md).
# usage: tools/loss_campaign.sh N [BUILD_DIR] [SEED]
#   LOSS_NODES=2|3 (default 3): worker nodes; LOSS_STALL_TIMEOUT=S|default (default 8): launch's
#   --stall-timeout ("default": none given, launch's own rule). Prints one line per run and a table.
set -u
N=${1:?usage: loss_campaign.sh N [BUILD_DIR] [SEED]}
BUILD=${2:-build}
RANDOM=${3:-$$}
here=$(cd "$(dirname "$0")/.." && pwd)
SPOTRUN="$BUILD/tests/spotrun-test"
[[ -x "$SPOTRUN" ]] || { echo "ERROR: $SPOTRUN is not built (a build with SPOTRUN_BUILD_TESTS)" >&2; exit 2; }
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "ERROR: N must be a whole number of runs >= 1, not '$N'" >&2; exit 2; }
nodes=${LOSS_NODES:-3}
[[ "$nodes" == 2 || "$nodes" == 3 ]] || { echo "ERROR: LOSS_NODES must be 2 or 3, not '$nodes'" >&2; exit 2; }
stall=${LOSS_STALL_TIMEOUT:-8}
[[ "$stall" == default || "$stall" =~ ^[0-9]+$ ]] || { echo "ERROR: LOSS_STALL_TIMEOUT must be seconds or 'default'" >&2; exit 2; }
SPOTRUN=$(cd "$(dirname "$SPOTRUN")" && pwd)/spotrun-test
work=$(mktemp -d /tmp/loss_campaign.XXXXXX)
kinds=(silent noisy partition)
names=(a b c)
declare -A runs ok lost hung secs rel relmax
for k in "${kinds[@]}"; do runs[$k]=0 ok[$k]=0 lost[$k]=0 hung[$k]=0 secs[$k]=0 rel[$k]=0 relmax[$k]=0; done
echo "loss campaign: $N runs on $nodes worker nodes, --stall-timeout $stall, seed ${3:-$$}, work $work"
round=()
for ((i = 1; i <= N; ++i)); do
    if [[ ${#round[@]} -eq 0 ]]; then  # a new round: the three kinds in a random order
        round=("${kinds[@]}")
        for ((j = 2; j > 0; --j)); do r=$((RANDOM % (j + 1))); t=${round[j]}; round[j]=${round[r]}; round[r]=$t; done
    fi
    kind=${round[0]}
    round=("${round[@]:1}")
    case $kind in silent) case=netns ;; *) case=$kind ;; esac
    victim=${names[RANDOM % nodes]}
    delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.8 * r / 32767 }')
    t0=$SECONDS
    SPOTRUN_LOSS_NODES=$nodes SPOTRUN_LOSS_VICTIM=$victim SPOTRUN_LOSS_DELAY=$delay SPOTRUN_LOSS_STALL_TIMEOUT=$stall \
        timeout 240 bash "$here/tests/cli/launch_test.sh" "$case" 2 "$SPOTRUN" mpiexec -n "$work/run$i" >"$work/run$i.log" 2>&1
    rc=$?
    dt=$((SECONDS - t0))
    runs[$kind]=$((runs[$kind] + 1))
    secs[$kind]=$((secs[$kind] + dt))
    # How long after the loss attempt 2 started (the case prints it).
    started=$(sed -n 's/.*attempt 2 started after \([0-9.]*\) s.*/\1/p' "$work/run$i.log" | head -1)
    if [[ $rc -eq 0 ]]; then ok[$kind]=$((ok[$kind] + 1)); verdict=finished
    elif [[ $rc -eq 124 ]]; then hung[$kind]=$((hung[$kind] + 1)); verdict=HUNG
    elif [[ $rc -eq 77 ]]; then echo "SKIP: $(grep -m1 SKIP "$work/run$i.log")"; exit 77
    elif grep -q "summary: finished at step [0-9]*. 1 attempt (0 restarts)" "$work/run$i"/*/launch.log 2>/dev/null; then
        verdict="finished before the loss (not counted)"; runs[$kind]=$((runs[$kind] - 1)); secs[$kind]=$((secs[$kind] - dt))
    else lost[$kind]=$((lost[$kind] + 1)); verdict=LOST; fi
    if [[ $verdict == finished && -n "$started" ]]; then
        rel[$kind]=$(awk -v a="${rel[$kind]}" -v b="$started" 'BEGIN { print a + b }')
        relmax[$kind]=$(awk -v a="${relmax[$kind]}" -v b="$started" 'BEGIN { print (b > a ? b : a) }')
    fi
    printf 'run %3d: %-9s node %s, loss %.2f s after checkpoint 100: %s (%d s; attempt 2 started %s s after the loss)%s\n' \
        "$i" "$kind" "$victim" "$delay" "$verdict" "$dt" "${started:-?}" \
        "$([[ $verdict == LOST || $verdict == HUNG ]] && echo "; log: $work/run$i.log")"
    [[ $verdict != LOST && $verdict != HUNG ]] && rm -rf "$work/run$i"
done
echo
printf '| Loss | Runs | Finished right | Lost | Hung | Loss to relaunch: mean, max | Mean time per run |\n'
printf '|---|---|---|---|---|---|---|\n'
for k in "${kinds[@]}"; do
    [[ ${runs[$k]} -gt 0 ]] || continue
    printf '| %s | %d | %d | %d | %d | %s s, %s s | %d s |\n' "$k" "${runs[$k]}" "${ok[$k]}" "${lost[$k]}" "${hung[$k]}" \
        "$(awk -v a="${rel[$k]}" -v n="${ok[$k]}" 'BEGIN { printf "%.1f", (n > 0 ? a / n : 0) }')" "${relmax[$k]}" \
        $((secs[$k] / runs[$k]))
done
