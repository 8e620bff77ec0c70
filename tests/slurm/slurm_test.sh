#!/usr/bin/env bash
# End-to-end tests of spotrun under Slurm: the batch scripts of slurm/, `spotrun submit`, the time limit
# read from Slurm. Every scenario but `scripts` starts a private one-node Slurm (tests/slurm/cluster.sh)
# under a temporary directory and tears it down afterwards.
#
# usage: slurm_test.sh SPOTRUN SOURCE_DIR SCENARIO
#   complete    decks run to completion under sbatch: 1 rank through `spotrun submit` from a directory
#               with a hostile name, 2 ranks through slurm/spotrun-cpu.sbatch, 2 ranks on 2 stand-in GPUs
#               through `spotrun submit --gpus-per-node 2` (one GPU per rank); a bad deck ends the job
#               with exit code 2 and no requeue
#   preempt     a job of a higher-priority partition preempts a running spotrun job: spotrun checkpoints
#               on SIGUSR1, the job requeues itself, resumes and ends bit-identical (h5diff /md/x, /md/v)
#               to an uninterrupted run
#   time_limit  --time with --signal=B:USR1@50: checkpoint on the signal, requeue, finish; --time without
#               a signal: spotrun stops before the job's end time (read from squeue), requeue, finish
#   scripts     no Slurm needed: `spotrun submit --dry-run` writes valid bash, refuses hostile Slurm names
#               and quotes hostile paths (srun, replaced by a stub, receives them intact and nothing
#               runs); the job body forwards signals, requeues on exit 75 within the limit, passes other
#               codes through; slurm/*.sbatch carry the same body as the scripts spotrun submit writes
#
# Needs root and the Debian packages slurm-wlm and munge (plus hdf5-tools for h5diff, openmpi-bin).
# Where Slurm cannot run here the scenario is skipped (exit 77) with the reason; with
# SPOTRUN_REQUIRE_SLURM=1 that is a failure (exit 1).
set -uo pipefail
SPOTRUN=$(realpath "$1")
SRC=$(realpath "$2")
SCENARIO=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=cluster.sh
source "$HERE/cluster.sh" || { echo "FAIL: cannot read $HERE/cluster.sh"; exit 1; }
# shellcheck source=../support/test_lib.sh
source "$HERE/../support/test_lib.sh" || { echo "FAIL: cannot read $HERE/../support/test_lib.sh"; exit 1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# Run outside any surrounding Slurm job: its variables would mislead spotrun and the batch scripts.
for v in $(compgen -e | grep '^SLURM_'); do unset "$v"; done

WORK=$(mktemp -d /tmp/spotrun-slurm.XXXXXX)
chmod 0755 "$WORK"
T0=$SECONDS
cleanup() {
  slurm_cluster_stop
  rm -rf "$WORK"
}
trap cleanup EXIT

JOBS=()  # job ids, for diagnostics
LOGS=()  # job logs, for diagnostics
fail() {
  echo "FAIL: $*"
  local id l
  for id in "${JOBS[@]}"; do scontrol show job "$id" 2>/dev/null | sed 's/^/  /'; done
  for l in "${LOGS[@]}"; do [ -f "$l" ] && { echo "--- $l (last 40 lines)"; tail -n 40 "$l"; }; done
  [ -n "${SLURM_TEST_DIR:-}" ] && { echo "--- slurmctld.log (last 30 lines)"; tail -n 30 "$SLURM_TEST_DIR/log/slurmctld.log"; }
  exit 1
}
skip() {
  if [ "${SPOTRUN_REQUIRE_SLURM:-0}" = 1 ]; then
    echo "FAIL (SPOTRUN_REQUIRE_SLURM=1): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
elapsed() { echo "$((SECONDS - T0)) s"; }

start_cluster() {
  local why
  why=$(slurm_cluster_usable) || skip "$why"
  command -v h5diff >/dev/null || skip "h5diff missing (Debian package hdf5-tools)"
  slurm_cluster_start "$WORK/cluster" || fail "could not start the test cluster"
}

# make_deck FILE STEPS [EVERY_STEPS]: the MD deck of tests/resume (Langevin, 2048 atoms).
make_deck() { write_deck "$1" "${LANGEVIN_DECK[@]}" "run.steps=$2" "checkpoint.every_steps=${3:-0}"; }

# submit_job ARGS...: `spotrun submit ARGS`; prints the job id.
submit_job() {
  local out
  out=$("$SPOTRUN" submit "$@" 2>&1) || fail "spotrun submit $* failed: $out"
  sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' <<<"$out"
}

# wait_for ID SECONDS STATE...: like wait_job, failing the test on timeout.
wait_for() {
  local id=$1 secs=$2 s
  shift 2
  s=$(wait_job "$id" "$secs" "$@") || fail "job $id is '$s' after ${secs} s, expected one of: $*"
  echo "$s"
}

expect_field() {  # expect_field ID FIELD VALUE
  local v
  v=$(job_field "$1" "$2")
  [ "$v" = "$3" ] || fail "job $1: $2=$v, expected $3"
}

same_state() {  # exact comparison of positions and velocities
  h5diff -q "$1" "$2" /md/x && h5diff -q "$1" "$2" /md/v
}

no_pwned() {  # no file made by injected shell code
  local found
  found=$(find "$WORK" /tmp -maxdepth 6 -name 'PWNED*' 2>/dev/null | head -5)
  [ -z "$found" ] || fail "injected shell code ran: $found"
  [ ! -e /tmp/pwned ] || fail "injected shell code ran: /tmp/pwned exists"
}

# Hostile names: command substitutions, backquotes, quotes, semicolons, spaces, globs, dollars.
HOSTILE=(
  "\$(touch PWNED1)"
  "\`touch PWNED2\`"
  "a'; touch PWNED3; echo '"
  "a\"; touch PWNED4; echo \""
  "x;touch PWNED5;y"
  "\$HOME \${PATH} * ? [a] \\\\ ~"
  "-leading dash && touch PWNED6 | cat"
  "\$(touch /tmp/pwned)"
)

case "$SCENARIO" in
# ------------------------------------------------------------------------------------------------------
scripts)
  make_deck "$WORK/deck.toml" 100
  mkdir -p "$WORK/stub" "$WORK/cwd"
  # A stand-in srun: records its arguments, then behaves as the ranks would (STUB_MODE).
  cat >"$WORK/stub/srun" <<'STUB'
#!/bin/bash
printf '%s\0' "$@" >"$STUB_ARGS"
out=""
prev=""
for a in "$@"; do [ "$prev" = --output-dir ] && out=$a; prev=$a; done
case "${STUB_MODE:-finish}" in
  finish) mkdir -p -- "$out" && touch -- "$out/final.h5"; exit 0 ;;
  nofinal) exit 0 ;;
  fail) exit 3 ;;
  stop)  # wait for a stop signal, then "checkpoint" and exit 75
    trap 'echo USR1 >>"$STUB_SIGNALS"; sleep 0.3; exit 75' USR1
    trap 'echo USR2 >>"$STUB_SIGNALS"; sleep 0.3; exit 75' USR2
    trap 'echo TERM >>"$STUB_SIGNALS"; sleep 0.3; exit 75' TERM
    echo started >"$STUB_SIGNALS"
    sleep 30 & wait $!
    exit 9 ;;
esac
STUB
  cat >"$WORK/stub/scontrol" <<'STUB'
#!/bin/bash
echo "scontrol $*" >>"$STUB_SCONTROL"
case "$1" in
  show) echo "JobId=$3 JobName=x"; echo "   JobState=${STUB_JOB_STATE:-RUNNING} Reason=None" ;;
  requeue) exit 0 ;;
esac
STUB
  cat >"$WORK/stub/scancel" <<'STUB'
#!/bin/bash
echo "scancel $*" >>"$STUB_SCONTROL"
exit 1
STUB
  chmod +x "$WORK/stub/"*
  export STUB_ARGS="$WORK/args" STUB_SIGNALS="$WORK/signals" STUB_SCONTROL="$WORK/scontrol.log"

  args_are() {  # args_are EXPECTED...: the stub srun got exactly these arguments
    local got=() a
    while IFS= read -r -d '' a; do got+=("$a"); done <"$STUB_ARGS"
    [ "${#got[@]}" = "$#" ] || { echo "srun got ${#got[@]} arguments: $(printf '<%s> ' "${got[@]}")"; return 1; }
    local k=0
    for a in "$@"; do
      [ "${got[$k]}" = "$a" ] || { echo "srun argument $k: <${got[$k]}>, expected <$a>"; return 1; }
      k=$((k + 1))
    done
  }
  run_script() {  # run_script SCRIPT [ARGS...]: runs a batch script with the stubs, in $WORK/cwd
    (cd "$WORK/cwd" && PATH="$WORK/stub:$PATH" bash "$@")
  }

  # spotrun takes a second or so to start (MPI singleton): independent checks run side by side.
  PIDS=()
  in_background() { "$@" & PIDS+=($!); }
  join_background() {
    local p bad=0
    for p in "${PIDS[@]}"; do wait "$p" || bad=1; done
    PIDS=()
    [ "$bad" = 0 ] || fail "$1"
  }

  # 1. Hostile deck paths, output directories and --set values: valid bash, quoted, passed on intact.
  check_hostile() {  # check_hostile N NAME
    local n=$1 name=$2
    local dir="$WORK/h$n/$name" outdir="$WORK/o$n/$name" setval="run.output_dir=$name" deck script
    export STUB_ARGS="$WORK/args$n"
    mkdir -p -- "$dir" || fail "cannot make directory <$dir>"
    deck="$dir/${name//\//_}.toml"
    cp "$WORK/deck.toml" "$deck"
    script=$(cd "$WORK/cwd" && "$SPOTRUN" submit "$deck" --dry-run --output-dir "$outdir" --set "$setval" \
      --set run.thermo_every=10 --max-requeues 3 2>"$WORK/err$n") || fail "dry run refused <$name>: $(cat "$WORK/err$n")"
    bash -n <<<"$script" || fail "the script for <$name> is not valid bash"
    printf '%s\n' "$script" >"$WORK/job$n.sh"
    run_script "$WORK/job$n.sh" >"$WORK/job$n.log" 2>&1 || fail "the script for <$name> failed: $(tail -3 "$WORK/job$n.log")"
    args_are --mpi=pmix "$SPOTRUN" run "$deck" --output-dir "$outdir" --set "$setval" --set run.thermo_every=10 ||
      fail "srun did not get the arguments intact for <$name>"
    grep -q "exit=0 finished" "$outdir/slurm-history.log" || fail "no history line for <$name>"
  }
  n=0
  for name in "${HOSTILE[@]}"; do
    n=$((n + 1))
    in_background check_hostile "$n" "$name"
  done
  join_background "hostile paths (see above)"
  no_pwned
  echo "hostile paths: quoted and passed on intact (${#HOSTILE[@]} names) [$(elapsed)]"

  # 2. Refused: control characters in paths and --set values, hostile Slurm names and times.
  check_refused() {  # check_refused ARGS...: spotrun submit ARGS --dry-run exits 2 and prints no script
    local out code err
    err=$(mktemp "$WORK/err.XXXXXX")
    out=$(cd "$WORK/cwd" && "$SPOTRUN" submit "$@" --dry-run 2>"$err")
    code=$?
    [ "$code" = 2 ] || fail "spotrun submit $(printf '<%s> ' "$@") exited $code, expected 2"
    [ -z "$out" ] || fail "spotrun submit printed a script for refused input $(printf '<%s> ' "$@")"
    grep -q "ERROR" "$err" || fail "no error message for $(printf '<%s> ' "$@")"
  }
  refused() { in_background check_refused "$@"; }
  nl_dir="$WORK/nl"$'\n'"touch PWNED7"
  mkdir -p -- "$nl_dir" && cp "$WORK/deck.toml" "$nl_dir/deck.toml"
  refused "$nl_dir/deck.toml"
  refused "$WORK/deck.toml" --output-dir "$WORK/out"$'\n'"touch PWNED8"
  refused "$WORK/deck.toml" --set "run.output_dir=a"$'\n'"touch PWNED9"
  # (The Slurm names share one check, so a few suffice for account and job name.)
  for name in "${HOSTILE[@]}" "gpu,\$(id)" "a b" "a"$'\n'"b"; do refused "$WORK/deck.toml" --partition "$name"; done
  refused "$WORK/deck.toml" --account "${HOSTILE[0]}"
  refused "$WORK/deck.toml" --account "x y"
  refused "$WORK/deck.toml" --job-name "${HOSTILE[2]}"
  refused "$WORK/deck.toml" --job-name "-x"
  for t in "1:00; touch PWNED10" "\$(touch PWNED11)" "1 2" "0"; do refused "$WORK/deck.toml" --time "$t"; done
  refused "$WORK/deck.toml" --time 1 --signal-lead 30  # the signal would come at the start of the job
  refused "$WORK/deck.toml" --gpus-per-node 4 --ntasks-per-node 2
  refused "$WORK/deck.toml" --nodes 0
  refused "$WORK/missing.toml"
  join_background "refusals (see above)"
  no_pwned
  echo "hostile Slurm names, times and control characters: refused [$(elapsed)]"

  # 3. The GPU variant: one rank per GPU.
  gpu=$(cd "$WORK/cwd" && "$SPOTRUN" submit "$WORK/deck.toml" --dry-run --gpus-per-node 4 --nodes 2 --time 2:00:00 --partition gpu \
    --account proj.a-1 --cpus-per-task 8 2>/dev/null) || fail "GPU dry run failed"
  bash -n <<<"$gpu" || fail "the GPU script is not valid bash"
  for line in "--nodes=2" "--ntasks-per-node=4" "--gpus-per-node=4" "--cpus-per-task=8" "--time=2:00:00" \
    "--partition=gpu" "--account=proj.a-1" "--requeue" "--signal=B:USR1@120" "--open-mode=append"; do
    grep -qx -- "#SBATCH $line" <<<"$gpu" || fail "GPU script lacks #SBATCH $line"
  done
  printf '%s\n' "$gpu" >"$WORK/gpu.sh"
  run_script "$WORK/gpu.sh" >"$WORK/gpu.log" 2>&1 || fail "GPU script failed: $(tail -3 "$WORK/gpu.log")"
  args_are --mpi=pmix --cpu-bind=none "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/cwd/runs/deck" ||
    fail "GPU script: wrong srun arguments"
  SPOTRUN_SRUN_MPI='' SPOTRUN_GPU_BIND=closest SPOTRUN_SRUN_CPU_BIND=cores run_script "$WORK/gpu.sh" >/dev/null 2>&1
  args_are --gpu-bind=closest --cpu-bind=cores "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/cwd/runs/deck" ||
    fail "GPU script: SPOTRUN_SRUN_MPI/SPOTRUN_GPU_BIND/SPOTRUN_SRUN_CPU_BIND not honoured"
  echo "GPU variant: valid, one rank per GPU [$(elapsed)]"

  # 4. slurm/*.sbatch: valid bash, the same job body as spotrun submit writes, arguments passed on.
  body() { sed -n '/^# ---- spotrun job body/,$p' "$1"; }
  printf '%s\n' "$gpu" >"$WORK/rendered.sh"
  [ -n "$(body "$WORK/rendered.sh")" ] || fail "no job body marker in the rendered script"
  for s in "$SRC"/slurm/spotrun-cpu.sbatch "$SRC"/slurm/spotrun-gpu.sbatch; do
    bash -n "$s" || fail "$s is not valid bash"
    diff <(body "$WORK/rendered.sh") <(body "$s") >"$WORK/body.diff" ||
      fail "$s: job body differs from spotrun submit's (both are made from slurm/spotrun.sbatch.in: rebuild spotrun; write the scripts with cmake -P cmake/SpotrunSbatch.cmake): $(head -20 "$WORK/body.diff")"
    grep -q '^#SBATCH --requeue' "$s" || fail "$s: no --requeue"
    grep -q '^#SBATCH --signal=B:USR1@' "$s" || fail "$s: no --signal=B:USR1@..."
  done
  SPOTRUN="$SPOTRUN" SPOTRUN_OUTPUT_DIR="$WORK/static out" run_script "$SRC/slurm/spotrun-cpu.sbatch" \
    "$WORK/deck.toml" --set "run.steps=7" >"$WORK/static.log" 2>&1 || fail "spotrun-cpu.sbatch failed: $(tail -3 "$WORK/static.log")"
  args_are --mpi=pmix "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/static out" --set run.steps=7 ||
    fail "spotrun-cpu.sbatch: wrong srun arguments"
  echo "slurm/*.sbatch: valid bash, same job body [$(elapsed)]"

  # 5. The job body's decisions, with stand-ins for srun and scontrol.
  printf '%s\n' "$("$SPOTRUN" submit "$WORK/deck.toml" --dry-run --output-dir "$WORK/b" --max-requeues 2 2>/dev/null)" \
    >"$WORK/b.sh"
  body_run() {  # body_run SIGNAL RESTARTS: runs b.sh as job 4242, sends SIGNAL to it once srun runs; prints rc
    rm -f "$STUB_SIGNALS" "$STUB_SCONTROL"
    (cd "$WORK/cwd" && SLURM_JOB_ID=4242 SLURM_RESTART_COUNT=$2 STUB_MODE=stop PATH="$WORK/stub:$PATH" \
      exec bash "$WORK/b.sh") >>"$WORK/b.log" 2>&1 &
    local pid=$! k
    for k in $(seq 1 100); do [ -s "$STUB_SIGNALS" ] && break; sleep 0.05; done
    kill -s "$1" "$pid"
    wait "$pid"
    echo $?
  }
  [ "$(body_run USR1 0)" = 75 ] || fail "USR1: expected exit 75"
  grep -qx USR1 "$STUB_SIGNALS" || fail "USR1 was not forwarded to the step"
  grep -qx "scontrol requeue 4242" "$STUB_SCONTROL" || fail "USR1 + exit 75 did not requeue the job"
  tail -1 "$WORK/b/slurm-history.log" | grep -q "job=4242 run=1 .*exit=75 requeued" || fail "no history line 'requeued'"
  [ "$(body_run USR1 2)" = 75 ] || fail "USR1 at the requeue limit: expected exit 75"
  ! grep -qs "requeue" "$STUB_SCONTROL" || fail "requeued beyond --max-requeues"
  tail -1 "$WORK/b/slurm-history.log" | grep -q "not requeued: requeued 2 times already" || fail "no history line for the limit"
  [ "$(body_run USR2 0)" = 75 ] || fail "USR2: expected exit 75"
  grep -qx USR2 "$STUB_SIGNALS" || fail "USR2 was not forwarded"
  ! grep -qs "requeue" "$STUB_SCONTROL" || fail "requeued after USR2"
  # TERM: forwarded through scancel --signal=TERM (the stand-in fails, so as USR1 to srun).
  [ "$(body_run TERM 0)" = 75 ] || fail "TERM: expected exit 75"
  grep -qx "scancel --signal=TERM 4242" "$STUB_SCONTROL" || fail "TERM was not forwarded with scancel"
  grep -qx USR1 "$STUB_SIGNALS" || fail "TERM: no fallback to USR1 when scancel fails"
  [ "$(STUB_JOB_STATE=CANCELLED body_run USR1 0)" = 75 ] || fail "cancelled: expected exit 75"
  ! grep -qs "requeue" "$STUB_SCONTROL" || fail "requeued a cancelled job"
  # Other exit codes pass through; exit 0 without final.h5 (srun failed to start the ranks) is a failure.
  for mode_code in fail:3 nofinal:1; do
    mode=${mode_code%:*}
    want=${mode_code#*:}
    rm -f "$WORK/b/final.h5"
    (cd "$WORK/cwd" && SLURM_JOB_ID=4242 STUB_MODE=$mode PATH="$WORK/stub:$PATH" bash "$WORK/b.sh") >>"$WORK/b.log" 2>&1
    code=$?
    [ "$code" = "$want" ] || fail "srun stand-in mode $mode: job exited $code, expected $want"
  done
  echo "job body: forwards signals, requeues on 75 within the limit, passes other codes through [$(elapsed)]"
  ;;
# ------------------------------------------------------------------------------------------------------
complete)
  start_cluster
  make_deck "$WORK/deck.toml" 200 50
  # 1 rank, through spotrun submit, from a directory and deck file with hostile names.
  hostile="$WORK/it's \$(touch PWNED1) \`touch PWNED2\`; \"q\" & x"
  mkdir -p "$hostile/sub"
  cp "$WORK/deck.toml" "$hostile/deck \$(touch PWNED3).toml"
  a=$(cd "$hostile/sub" && submit_job "$hostile/deck \$(touch PWNED3).toml" --output-dir "$hostile/out 1" --max-requeues 2)
  [ -n "$a" ] || fail "no job id from spotrun submit"
  JOBS+=("$a")
  LOGS+=("$hostile/sub/slurm-spotrun-deck__touch_PWNED3_-$a.out")
  # 2 ranks, through the static script.
  b=$(cd "$WORK" && SPOTRUN="$SPOTRUN" SPOTRUN_OUTPUT_DIR="$WORK/b" sbatch --parsable --ntasks-per-node=2 \
    "$SRC/slurm/spotrun-cpu.sbatch" "$WORK/deck.toml" --set run.thermo_every=10) || fail "sbatch failed"
  JOBS+=("$b")
  LOGS+=("$WORK/slurm-spotrun-$b.out")
  # A deck that does not exist: exit 2, passed through, not requeued.
  c=$(cd "$WORK" && SPOTRUN="$SPOTRUN" SPOTRUN_OUTPUT_DIR="$WORK/c" sbatch --parsable --ntasks-per-node=1 \
    "$SRC/slurm/spotrun-cpu.sbatch" "$WORK/missing.toml") || fail "sbatch failed"
  JOBS+=("$c")
  LOGS+=("$WORK/slurm-spotrun-$c.out")
  # 2 ranks on 2 (stand-in) GPUs, through spotrun submit --gpus-per-node: a wrapper reports the GPUs each rank sees.
  cat >"$WORK/gpu-wrap.sh" <<WRAP
#!/bin/bash
echo "rank \${SLURM_PROCID:-?} CUDA_VISIBLE_DEVICES=\${CUDA_VISIBLE_DEVICES:-unset}"
exec "$SPOTRUN" "\$@"
WRAP
  chmod +x "$WORK/gpu-wrap.sh"
  g=$(submit_job "$WORK/deck.toml" --gpus-per-node 2 --spotrun "$WORK/gpu-wrap.sh" --output-dir "$WORK/g")
  JOBS+=("$g")
  LOGS+=("$WORK/g/slurm-$g.out")
  wait_for "$a" 120 COMPLETED FAILED >/dev/null
  wait_for "$b" 120 COMPLETED FAILED >/dev/null
  wait_for "$c" 60 COMPLETED FAILED >/dev/null
  wait_for "$g" 120 COMPLETED FAILED >/dev/null
  for j in "$a" "$b" "$g"; do
    expect_field "$j" JobState COMPLETED
    expect_field "$j" ExitCode 0:0
    expect_field "$j" Restarts 0
  done
  [ -f "$hostile/out 1/final.h5" ] || fail "1 rank: no final.h5 in the hostile output directory"
  [ -f "$WORK/b/final.h5" ] || fail "2 ranks: no final.h5"
  grep -q "MPI ranks: 2 on 1 node" "$WORK/slurm-spotrun-$b.out" || fail "2 ranks: spotrun did not run on 2 ranks"
  grep -q "MPI ranks: 2 on 1 node" "$WORK/g/slurm-$g.out" || fail "GPU job: spotrun did not run on 2 ranks"
  # Every rank sees both GPUs of the node (srun binds none: spotrun puts each rank on the GPU of its
  # node-local rank and binds it to cores near that GPU, docs/gpu.md).
  for r in 0 1; do
    grep -q "^rank $r CUDA_VISIBLE_DEVICES=0,1\$" "$WORK/g/slurm-$g.out" || fail "GPU job: rank $r does not see both GPUs of its node: $(grep "^rank " "$WORK/g/slurm-$g.out")"
  done
  grep -q "exit=0 finished" "$hostile/out 1/slurm-history.log" || fail "1 rank: no history line"
  grep -q "exit=0 finished" "$WORK/b/slurm-history.log" || fail "2 ranks: no history line"
  expect_field "$c" JobState FAILED
  expect_field "$c" ExitCode 2:0
  expect_field "$c" Restarts 0
  grep -q "spotrun ended with exit code 2: not requeued" "$WORK/slurm-spotrun-$c.out" || fail "bad deck: no message"
  no_pwned
  echo "complete: 1 rank (hostile paths), 2 ranks, 2 ranks on 2 GPUs finished; bad deck exit 2, not requeued [$(elapsed)]"
  ;;
# ------------------------------------------------------------------------------------------------------
preempt)
  STEPS=${SPOTRUN_SLURM_PREEMPT_STEPS:-4000}  # long enough that preemption lands mid-run on a fast, idle machine
  make_deck "$WORK/deck.toml" "$STEPS" 50
  # The reference: the same deck on 2 ranks in one go, outside Slurm.
  timeout 300 mpirun -np 2 "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/ref" >"$WORK/ref.log" 2>&1 ||
    fail "reference run failed: $(tail -5 "$WORK/ref.log")"
  echo "reference run done [$(elapsed)]"
  SLURM_TEST_GRACE=60 start_cluster
  low=$(submit_job "$WORK/deck.toml" --ntasks-per-node 2 --output-dir "$WORK/p" --max-requeues 3)
  JOBS+=("$low")
  LOGS+=("$WORK/p/slurm-$low.out")
  wait_for "$low" 60 RUNNING >/dev/null
  # Preempt once the run is under way (thermo rows past step 60), well before its end.
  for k in $(seq 1 600); do
    last=$(tail -n 1 "$WORK/p/thermo.csv" 2>/dev/null | cut -d, -f1)
    [ -n "$last" ] && [ "$last" -ge 60 ] 2>/dev/null && break
    sleep 0.1
  done
  [ "${last:-0}" -ge 60 ] 2>/dev/null || fail "the job made no progress"
  high=$(sbatch --parsable --partition=high --exclusive -o "$WORK/high.out" --wrap "sleep 2") || fail "sbatch high failed"
  JOBS+=("$high")
  echo "preempting job $low at step $last with job $high [$(elapsed)]"
  wait_for "$high" 120 COMPLETED >/dev/null
  echo "high-priority job done [$(elapsed)]"
  wait_for "$low" 180 COMPLETED FAILED >/dev/null
  expect_field "$low" JobState COMPLETED
  expect_field "$low" ExitCode 0:0
  expect_field "$low" Restarts 1
  log="$WORK/p/slurm-$low.out"
  stop=$(sed -n 's/^Stopping at step \([0-9]*\): signal SIGUSR1.*/\1/p' "$log" | head -1)
  [ -n "$stop" ] || fail "spotrun did not stop on SIGUSR1"
  [ "$stop" -lt "$STEPS" ] || fail "preempted after the end (step $stop): make the deck longer"
  grep -q "received SIGUSR1" "$log" || fail "the batch shell did not report SIGUSR1"
  grep -q "requeueing job $low" "$log" || fail "the job did not requeue itself"
  grep -q "Resuming from .* at step $stop" "$log" || fail "the requeued job did not resume from step $stop"
  grep -q "spotrun finished" "$log" || fail "the requeued job did not finish"
  grep -c . "$WORK/p/slurm-history.log" | grep -qx 2 || fail "history should have 2 lines: $(cat "$WORK/p/slurm-history.log")"
  head -1 "$WORK/p/slurm-history.log" | grep -q "run=1 .*exit=75 requeued" || fail "history line 1"
  tail -1 "$WORK/p/slurm-history.log" | grep -q "run=2 .*exit=0 finished" || fail "history line 2"
  same_state "$WORK/ref/final.h5" "$WORK/p/final.h5" || fail "preempted and resumed run is not bit-identical"
  echo "preempt: stopped at step $stop on SIGUSR1, requeued itself, resumed, bit-identical [$(elapsed)]"
  ;;
# ------------------------------------------------------------------------------------------------------
time_limit)
  start_cluster
  # Decks too long to finish: once spotrun reports its stop, the test shortens them (run.steps may change
  # on resume) so that the requeued job finishes.
  make_deck "$WORK/sig.toml" 100000000
  make_deck "$WORK/own.toml" 100000000
  # 2 minutes with SIGUSR1 50 s before the end (Slurm sends it up to 60 s early): the signal stops it.
  sig=$(submit_job "$WORK/sig.toml" --time 2 --signal-lead 50 --output-dir "$WORK/sig" --max-requeues 4)
  # 1 minute without a signal: spotrun stops before the end time it reads from squeue.
  own=$(submit_job "$WORK/own.toml" --time 1 --signal-lead 0 --output-dir "$WORK/own" --max-requeues 4)
  JOBS+=("$sig" "$own")
  LOGS+=("$WORK/sig/slurm-$sig.out" "$WORK/own/slurm-$own.out")
  grep -q "^#SBATCH --signal" "$WORK/own/spotrun-job.sbatch" && fail "--signal-lead 0 still asks for a signal"
  declare -A stopped=()
  deadline=$((SECONDS + 300))
  while :; do
    for j in sig own; do
      id=${!j}
      [ -n "${stopped[$j]:-}" ] && continue
      s=$(sed -n 's/^Stopping at step \([0-9]*\).*/\1/p' "$WORK/$j/slurm-$id.out" 2>/dev/null | head -1)
      if [ -n "$s" ]; then
        stopped[$j]=$s
        sed -i "s/^steps = .*/steps = $((s + 200))/" "$WORK/$j.toml"
        echo "job $j ($id) stopped at step $s; deck shortened to $((s + 200)) steps [$(elapsed)]"
      fi
    done
    done_jobs=0
    for j in sig own; do
      st=$(job_field "${!j}" JobState)
      case "$st" in COMPLETED | FAILED | TIMEOUT | CANCELLED) done_jobs=$((done_jobs + 1)) ;; esac
    done
    [ "$done_jobs" = 2 ] && break
    [ $SECONDS -lt $deadline ] || fail "the jobs did not end within 300 s"
    sleep 0.2
  done
  for j in sig own; do
    id=${!j}
    log="$WORK/$j/slurm-$id.out"
    expect_field "$id" JobState COMPLETED
    expect_field "$id" ExitCode 0:0
    r=$(job_field "$id" Restarts)
    [ "$r" -ge 1 ] || fail "job $j was not requeued"
    s=${stopped[$j]:-}
    [ -n "$s" ] || fail "job $j: spotrun never stopped"
    grep -q "requeueing job $id" "$log" || fail "job $j did not requeue itself"
    grep -q "Resuming from .* at step $s" "$log" || fail "job $j did not resume from step $s"
    grep -q "Final state .* at step $((s + 200))" "$log" || fail "job $j did not finish at step $((s + 200))"
    dups=$(cut -d, -f1 "$WORK/$j/thermo.csv" | tail -n +2 | sort -n | uniq -d | wc -l)
    [ "$dups" = 0 ] || fail "job $j: thermo.csv has repeated steps"
    tail -1 "$WORK/$j/slurm-history.log" | grep -q "exit=0 finished" || fail "job $j: history does not end finished"
    echo "job $j: requeued $r time(s); history:"
    sed 's/^/  /' "$WORK/$j/slurm-history.log"
  done
  grep -q "Stopping at step ${stopped[sig]}: signal SIGUSR1" "$WORK/sig/slurm-$sig.out" ||
    fail "the --signal job did not stop on SIGUSR1"
  grep -q "Slurm job $own ends in" "$WORK/own/spotrun.log" || fail "spotrun did not read the job's end time (spotrun.log)"
  grep -q "Stopping at step ${stopped[own]}: time limit" "$WORK/own/slurm-$own.out" ||
    fail "the job without a signal did not stop on its time limit"
  echo "time_limit: SIGUSR1 before the limit and the end time from squeue both checkpoint, requeue, finish [$(elapsed)]"
  ;;
*)
  fail "unknown scenario $SCENARIO"
  ;;
esac
echo "PASS: $SCENARIO ($(elapsed))"
