#!/usr/bin/env bash
# Loss campaign (not in CI): N random node losses under spotrun launch, on nodes in network namespaces
# (tests/cli/launch_test.sh: a head namespace running launch and mpirun, worker nodes a and b, each
# with its own sshd). Each run picks one kind of loss at random and a random moment (0 to 3 s after
# checkpoint 100):
#   silent     node b's link goes down, then every process on it is killed (case netns)
#   noisy      node b's processes are killed, then its link goes down (case noisy)
#   partition  node b (running the whole attempt) is cut off and frozen, the run moves to node a, then
#              the partition heals; the old attempt must write nothing (case partition)
# A run is "lost" when its case fails (launch gave up, a wrong final energy, an old attempt's process
# left, a write after the heal), "hung" when it does not end within 240 s. Needs root and a build.
# usage: tools/loss_campaign.sh N [BUILD_DIR] [SEED]
set -u
N=${1:?usage: loss_campaign.sh N [BUILD_DIR] [SEED]}
BUILD=${2:-build}
RANDOM=${3:-$$}
here=$(cd "$(dirname "$0")/.." && pwd)
SPOTRUN="$BUILD/launcher/spotrun"
[[ -x "$SPOTRUN" ]] || { echo "ERROR: $SPOTRUN is not built" >&2; exit 2; }
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "ERROR: N must be a whole number of runs >= 1, not '$N'" >&2; exit 2; }
SPOTRUN=$(cd "$(dirname "$SPOTRUN")" && pwd)/spotrun
work=$(mktemp -d /tmp/loss_campaign.XXXXXX)
kinds=(silent noisy partition)
declare -A runs ok lost hung secs
for k in "${kinds[@]}"; do runs[$k]=0 ok[$k]=0 lost[$k]=0 hung[$k]=0 secs[$k]=0; done
for ((i = 1; i <= N; ++i)); do
    kind=${kinds[RANDOM % 3]}
    case $kind in silent) case=netns ;; *) case=$kind ;; esac
    delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.8 * r / 32767 }')
    t0=$SECONDS
    SPOTRUN_LOSS_DELAY=$delay timeout 240 bash "$here/tests/cli/launch_test.sh" "$case" 2 "$SPOTRUN" mpiexec -n \
        "$work/run$i" >"$work/run$i.log" 2>&1
    rc=$?
    dt=$((SECONDS - t0))
    runs[$kind]=$((runs[$kind] + 1))
    secs[$kind]=$((secs[$kind] + dt))
    if [[ $rc -eq 0 ]]; then ok[$kind]=$((ok[$kind] + 1)); verdict=finished
    elif [[ $rc -eq 124 ]]; then hung[$kind]=$((hung[$kind] + 1)); verdict=HUNG
    elif [[ $rc -eq 77 ]]; then echo "SKIP: $(grep -m1 SKIP "$work/run$i.log")"; exit 77
    elif grep -q "summary: finished at step 400. 1 attempt (0 restarts)" "$work/run$i"/*/launch.log 2>/dev/null; then
        verdict="finished before the loss (not counted)"; runs[$kind]=$((runs[$kind] - 1)); secs[$kind]=$((secs[$kind] - dt))
    else lost[$kind]=$((lost[$kind] + 1)); verdict=LOST; fi
    printf 'run %2d: %-9s loss %.2f s after checkpoint 100: %s (%d s)%s\n' "$i" "$kind" "$delay" "$verdict" "$dt" \
        "$([[ $verdict == LOST || $verdict == HUNG ]] && echo "; log: $work/run$i.log")"
    [[ $verdict != LOST && $verdict != HUNG ]] && rm -rf "$work/run$i"
done
echo
printf '| Loss | Runs | Finished right | Lost | Hung | Mean time per run |\n|---|---|---|---|---|---|\n'
for k in "${kinds[@]}"; do
    [[ ${runs[$k]} -gt 0 ]] || continue
    printf '| %s | %d | %d | %d | %d | %d s |\n' "$k" "${runs[$k]}" "${ok[$k]}" "${lost[$k]}" "${hung[$k]}" $((secs[$k] / runs[$k]))
done
