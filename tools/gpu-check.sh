#!/usr/bin/env bash
# The one-command GPU check of spotrun (docs/gpu.md, "The GPU check"). On a machine with NVIDIA GPUs, the
# driver and the CUDA libraries, and nothing else installed, it runs from a bundle made of a CUDA build
# (tools/make_bundle.sh) and ends within a deadline (default 5 minutes: half of a 15-minute device window,
# so that a fixed check can run again) in a verdict per check, in this order:
#   preflight  the node's glibc against the bundle's; spotrun starts from the bundle; the driver and the
#              CUDA version it supports against the CUDA the bundle was built with; libcuda.so.1 is the
#              driver's, not the toolkit's stub; ldd of every program and run-time module through the
#              bundle's environment; NCCL (system, SPOTRUN_CUDA_LIBS, NVIDIA's Python wheels); the GPU
#              count; MIG mode; the CPU references in the bundle. A failure here (no GPU, a driver too
#              old, a library missing) skips what depends on it, naming the fix.
#   md         the 32,000-atom in.lj run against the CPU reference shipped in the bundle, column by column
#              (relative, 1e-9, over 100 steps), two runs bit for bit, 50 + 50 resumed steps bit for bit; the
#              electrolyte of inputs/ (charges, PPPM with cuFFT) against its CPU reference the same way.
#   fluid      the Taylor-Green vortex at 64^3 over 20 steps against the CPU reference, column by column:
#              relative 1e-10, but divmax (round-off, 1e-16 scale) absolute 1e-12.
#   comm       NCCL at one rank with every self-exchange through the transport (bit for bit the default
#              run, 0 bytes of arrays host<->device per step); mpi-host at 2 ranks (1e-10 of one rank).
#   unit       the test programs of the bundle at 1 rank, SPOTRUN_REQUIRE_GPU=1: the device-relevant ones
#              first; the host-only ones (deck parsing, cloud, launch, submit, ...) SKIPPED (host-only).
#   bench      LJ atom-steps/s at 32k, 256k, 2M and 16M atoms; the fluid step against the cuFFT floor at
#              128^3, 256^3 and 512^3, with the FFT launches per step.
# Every step runs under `timeout`, none past the deadline, and every group within its share of it (unless
# --only names the groups); a step with too little time left is not started and its rows say SKIPPED
# (time). The table (gpu-check.md) and gpu-check.json are rewritten after every row, whatever happens:
# failures, the deadline, SIGTERM/SIGINT (SKIPPED (killed)), even a SIGKILL ("complete": false).
#
# Usage: gpu-check.sh [--bundle DIR|FILE.tar.gz] [--out DIR] [--deadline SECONDS] [--only GROUPS] [--quick]
#                     [--cpu] [--scratch DIR] [--keep-scratch]
#   --bundle B    the bundle folder, or its .tar.gz (unpacked into the scratch folder); default: the folder
#                 this script is in (BUNDLE/gpu-check.sh)
#   --out DIR     where the report goes (default: ./gpu-check-<date>): gpu-check.md, gpu-check.json and
#                 gpu-check-logs.tar.gz (every log and thermo file of the check, no .h5, under 15 MiB);
#                 nothing else is written there
#   --scratch DIR the scratch folder (the unpacked bundle, the runs' outputs); default: a new folder under
#                 ${TMPDIR:-/tmp}, deleted at the end unless --keep-scratch
#   --deadline S  the whole check ends within S seconds (or Nm minutes; default 300)
#   --only GROUPS comma-separated groups to run (preflight, md, fluid, comm, unit, bench); the preflight
#                 always runs; the rows of the others say SKIPPED (not selected)
#   --quick       smaller benchmarks (LJ up to 2M atoms, fluid up to 256^3)
#   --cpu         check a CPU bundle: the same stages and table; the GPU-only rows say SKIPPED (cpu), the
#                 unit programs are listed (--gtest_list_tests), not run; the CPU build is compared against
#                 the references it ships (how the script is tested without a GPU: ctest -L gpucheck)
#   gpu-check.sh --make-references CPU_BUILD BUNDLE
#                 run the CPU build on the reference decks and store their thermo in the bundle
#                 (BUNDLE/share/spotrun/gpu-check/), done when the bundle is made; the check compares
#                 against them.
# Environment: SPOTRUN_GPU_CHECK_NVIDIA_SMI names the nvidia-smi to ask (default: nvidia-smi on PATH); the
# node's glibc is what `getconf GNU_LIBC_VERSION` on PATH says.
# Exit status: 0 every check run passed and none was left out for time; 1 a check failed; 2 bad usage;
# 3 nothing failed but checks were left out (deadline, signal).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
BUNDLE_ARG="$HERE"
OUT=""
QUICK=0
CPU=0
DEADLINE=300
RESERVE=5   # seconds kept back for the table, the JSON and the logs' tarball
SCRATCH=""
KEEP_SCRATCH=0
GROUPS_ALL=(preflight md fluid comm unit bench)
ONLY=""
# The share of the deadline each group may take when all run (every group bounded; the preflight and
# the groups before a group may leave it more than its share, never more than the deadline).
declare -A SHARE=([preflight]=20 [md]=15 [fluid]=10 [comm]=15 [unit]=30 [bench]=100)

# The reference decks: (deck, --set arguments). The same for the CPU reference and the checked run.
LJ_DECK="bench/lj-bench.toml"
LJ_SETS=(--set run.steps=100 --set run.thermo_every=10)
ELEC_DECK="inputs/electrolyte.toml"  # charges with PPPM: spreading, the Green's function product, interpolation
ELEC_SETS=(--set run.steps=100 --set run.thermo_every=10)
TGV_DECK="inputs/tgv-re1600.toml"
TGV_SETS=(--set run.steps=20 --set run.thermo_every=1 --set 'fluid.n=[64,64,64]' --set fluid.field_every=0
          --set fluid.spectrum_every=0)
# Their thermo columns after `step`, and the norms: relative (|a-b| / max(|a|,|b|)) for physical values,
# absolute for round-off values (divmax, max |div u|, is 1e-16 scale: relatively FFTW and cuFFT differ
# in it by O(1)).
MD_COLUMNS=(time temp pe ke etotal press)
PPPM_COLUMNS=(temp pe ecoul elong etotal press)
FLUID_COLUMNS=(time energy dissipation enstrophy divmax cfl)
declare -A TOL=([md]=1e-9 [fluid]=1e-10 [fluid.divmax]=1e-12 [mpi2]=1e-10)
declare -A NORM_OF=([fluid.divmax]=abs)
# The smallest driver of each CUDA major version (NVIDIA's CUDA release notes, Linux).
declare -A DRIVER_FOR_CUDA=([11]=450.80.02 [12]=525.60.13 [13]=580.65.06)

ref_dir() { echo "$1/share/spotrun/gpu-check"; }

if [[ "${1:-}" == "--make-references" ]]; then
    CPU_BUILD="${2:?--make-references CPU_BUILD BUNDLE}"
    TARGET="${3:?--make-references CPU_BUILD BUNDLE}"
    SRC="$(cd "$HERE/.." && pwd -P)"
    [[ -x "$CPU_BUILD/launcher/spotrun" ]] || { echo "gpu-check.sh: no $CPU_BUILD/launcher/spotrun" >&2; exit 1; }
    [[ -f "$SRC/$LJ_DECK" ]] || SRC="$TARGET/share/spotrun/source"
    R="$(ref_dir "$TARGET")"
    mkdir -p "$R"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    "$CPU_BUILD/launcher/spotrun" run "$SRC/$LJ_DECK" "${LJ_SETS[@]}" --output-dir "$work/lj" --resume never \
        >"$work/lj.log" 2>&1 || { cat "$work/lj.log" >&2; exit 1; }
    cp "$work/lj/thermo.csv" "$R/lj-32k.csv"
    "$CPU_BUILD/launcher/spotrun" run "$SRC/$ELEC_DECK" "${ELEC_SETS[@]}" --output-dir "$work/elec" --resume never \
        >"$work/elec.log" 2>&1 || { cat "$work/elec.log" >&2; exit 1; }
    cp "$work/elec/thermo.csv" "$R/electrolyte.csv"
    "$CPU_BUILD/launcher/spotrun" run "$SRC/$TGV_DECK" "${TGV_SETS[@]}" --output-dir "$work/tgv" --resume never \
        >"$work/tgv.log" 2>&1 || { cat "$work/tgv.log" >&2; exit 1; }
    cp "$work/tgv/thermo.csv" "$R/tgv-64.csv"
    "$CPU_BUILD/launcher/spotrun" --version >"$R/made-by.txt"
    echo "gpu-check.sh: CPU references written to $R"
    exit 0
fi

usage_error() { echo "gpu-check.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --bundle) BUNDLE_ARG="${2:?--bundle DIR|FILE.tar.gz}"; shift 2 ;;
        --out) OUT="${2:?--out DIR}"; shift 2 ;;
        --deadline)
            d="${2:?--deadline SECONDS}"
            if [[ "$d" =~ ^([0-9]+)m$ ]]; then DEADLINE=$((BASH_REMATCH[1] * 60))
            elif [[ "$d" =~ ^([0-9]+)s?$ ]]; then DEADLINE=${BASH_REMATCH[1]}
            else usage_error "--deadline wants seconds (or Nm), not '$d'"; fi
            shift 2 ;;
        --quick) QUICK=1; shift ;;
        --cpu) CPU=1; shift ;;
        --scratch) SCRATCH="${2:?--scratch DIR}"; shift 2 ;;
        --keep-scratch) KEEP_SCRATCH=1; shift ;;
        --only)
            ONLY="${2:?--only GROUPS}"
            for g in ${ONLY//,/ }; do
                [[ " ${GROUPS_ALL[*]} " == *" $g "* ]] || usage_error "--only: no group '$g' (${GROUPS_ALL[*]})"
            done
            shift 2 ;;
        -h|--help) sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) usage_error "unknown argument '$1' (see --help)" ;;
    esac
done
START=$SECONDS
END=$((START + DEADLINE))
[[ -n "$OUT" ]] || OUT="$PWD/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT" || usage_error "cannot create '$OUT'"
OUT="$(cd "$OUT" && pwd -P)"
# The scratch folder W: everything but the report. Local (TMPDIR), so that the folder the report goes to
# (what a device tool returns) holds the report only.
if [[ -n "$SCRATCH" ]]; then
    mkdir -p "$SCRATCH" || usage_error "cannot create '$SCRATCH'"
    W="$(cd "$SCRATCH" && pwd -P)"
else
    W="$(mktemp -d "${TMPDIR:-/tmp}/spotrun-gpu-check.XXXXXX")" || usage_error "cannot make a scratch folder in ${TMPDIR:-/tmp}"
fi
[[ "$W/" == "$OUT/"* || "$OUT/" == "$W/"* ]] && usage_error "the scratch folder ($W) and --out ($OUT) must not hold one another"
rm -f "$OUT/gpu-check.md" "$OUT/gpu-check.json" "$OUT/gpu-check-logs.tar.gz"
selected() { [[ $1 == preflight || -z "$ONLY" || ",$ONLY," == *",$1,"* ]]; }
PLATFORM=GPU
[[ $CPU == 1 ]] && PLATFORM=CPU

# --- the rows --------------------------------------------------------------------------------------------
# Every row is planned before anything runs (so a table cut short still names every check); a row without
# a verdict at the end says why: SKIPPED (time) past the deadline, SKIPPED (killed) after a signal.
ORDER=()
declare -A GROUP=() CHECK=() NORM=() VALUE=() VERDICT=()
plan() { ORDER+=("$1"); GROUP[$1]=$2; CHECK[$1]=$3; NORM[$1]=${4:--}; VALUE[$1]=""; VERDICT[$1]=""; }
line() { printf '  %-9s %-56s %-20s %-30s %s\n' "$1" "$2" "$3" "$4" "$5"; }
result() {  # result ID VALUE VERDICT
    VALUE[$1]=$2
    VERDICT[$1]=$3
    line "${GROUP[$1]}" "${CHECK[$1]}" "${NORM[$1]}" "$2" "$3"
    write_reports
}
pending() { [[ -z "${VERDICT[$1]}" ]]; }
# skip_rest VERDICT PREFIX...: every row still without a verdict whose id starts with a PREFIX gets VERDICT.
skip_rest() {
    local v=$1 id p
    shift
    for id in "${ORDER[@]}"; do
        pending "$id" || continue
        for p in "$@"; do [[ "$id" == "$p"* ]] && { result "$id" "" "$v"; break; }; done
    done
}
say() { printf '[%4ds] %s\n' $((SECONDS - START)) "$*"; }

# json_str VAR TEXT: VAR = TEXT as a JSON string (no subshell: the reports are rewritten after every row).
json_str() {
    local s=$2
    s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\t'/ }; s=${s//$'\r'/ }; s=${s//$'\n'/ }
    printf -v "$1" '"%s"' "$s"
}
ENDED=running
GPU_NAME=""
write_reports() {
    local id k=0 n=${#ORDER[@]} fails=0 complete=false sep j1 j2 j3 j4 j5 j6 g b v e
    for id in "${ORDER[@]}"; do [[ "${VERDICT[$id]}" == FAIL ]] && fails=$((fails + 1)); done
    [[ $ENDED != running ]] && complete=true
    json_str g "${GPU_NAME:-none}"; json_str b "${BUNDLE:-$BUNDLE_ARG}"; json_str v "${SPOTRUN_VERSION:-}"
    json_str e "$ENDED"
    {
        echo "{"
        echo "  \"platform\": \"$PLATFORM\","
        echo "  \"gpu\": $g,"
        echo "  \"bundle\": $b,"
        echo "  \"spotrun\": $v,"
        echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
        echo "  \"deadline_s\": $DEADLINE,"
        echo "  \"seconds\": $((SECONDS - START)),"
        echo "  \"ended\": $e,"
        echo "  \"complete\": $complete,"
        echo "  \"failed\": $fails,"
        echo "  \"checks\": ["
        for id in "${ORDER[@]}"; do
            k=$((k + 1))
            sep=","; [[ $k -lt $n ]] || sep=""
            json_str j1 "$id"; json_str j2 "${GROUP[$id]}"; json_str j3 "${CHECK[$id]}"; json_str j4 "${NORM[$id]}"
            json_str j5 "${VALUE[$id]}"; json_str j6 "${VERDICT[$id]:-PENDING}"
            printf '    {"id": %s, "group": %s, "check": %s, "norm": %s, "value": %s, "verdict": %s}%s\n' \
                "$j1" "$j2" "$j3" "$j4" "$j5" "$j6" "$sep"
        done
        echo "  ]"
        echo "}"
    } >"$OUT/gpu-check.json.tmp" && mv -f "$OUT/gpu-check.json.tmp" "$OUT/gpu-check.json"
    {
        echo "| group | check | norm / limit | value | verdict |"
        echo "|---|---|---|---|---|"
        for id in "${ORDER[@]}"; do
            echo "| ${GROUP[$id]} | ${CHECK[$id]//|//} | ${NORM[$id]//|//} | ${VALUE[$id]//|//} | ${VERDICT[$id]:-PENDING} |"
        done
    } >"$OUT/gpu-check.md.tmp" && mv -f "$OUT/gpu-check.md.tmp" "$OUT/gpu-check.md"
}
# pack_logs: OUT/gpu-check-logs.tar.gz, every file of the scratch folder but the bundle and .h5 files; a
# file over 2 MiB as its last 2 MiB (truncated/NAME); only the .log and .txt files when that is over
# 15 MiB. What a device tool returns is then the table, the JSON and this one tarball.
pack_logs() {
    local f rel list="$W/.logs-list" big="$W/truncated" tgz="$OUT/gpu-check-logs.tar.gz"
    rm -rf "$big" "$list"
    : >"$list"
    while IFS= read -r -d '' f; do
        rel=${f#"$W"/}
        if (( $(stat -c %s "$f") > 2097152 )); then
            mkdir -p "$big/$(dirname "$rel")" && tail -c 2097152 "$f" >"$big/$rel" && printf '%s\0' "truncated/$rel" >>"$list"
        else
            printf '%s\0' "$rel" >>"$list"
        fi
    done < <(find "$W" -mindepth 1 \( -path "$W/bundle" -o -path "$big" \) -prune -o -type f ! -name '*.h5' \
                  ! -name .logs-list -print0 2>/dev/null)
    tar -C "$W" --null -T "$list" -czf "$tgz.partial" 2>/dev/null
    if (( $(stat -c %s "$tgz.partial" 2>/dev/null || echo 0) > 15 * 1048576 )); then
        tr '\0' '\n' <"$list" | grep -E '\.(log|txt)$' | tr '\n' '\0' >"$list.small"
        tar -C "$W" --null -T "$list.small" -czf "$tgz.partial" 2>/dev/null
    fi
    mv -f "$tgz.partial" "$tgz"
    rm -f "$list" "$list.small"
}

# --- time: every step under `timeout`, none past the deadline ------------------------------------------
STEP_PID=""
WATCHDOG=""
# stage GROUP: GROUP starts; its steps end by STAGE_END, its share of the deadline from now (the deadline
# itself under --only).
STAGE_END=0
stage() {
    STAGE_END=$END
    [[ -n "$ONLY" ]] || STAGE_END=$((SECONDS + DEADLINE * ${SHARE[$1]} / 100))
    (( STAGE_END > END - RESERVE )) && STAGE_END=$((END - RESERVE))
}
# run_step LOG LIMIT NEED CMD...: CMD with its output in W/LOG, for at most LIMIT seconds and never past
# its group's end (stage) or the deadline; not started when less than NEED seconds are left. Sets STEP_RC (its exit status) and
# STEP_STATUS: ran, timeout (its own LIMIT: a hang, a failure), cut (stopped by the deadline) or skipped.
run_step() {
    local log=$1 limit=$2 need=$3 left t t0
    shift 3
    left=$((END - RESERVE - SECONDS))
    (( STAGE_END > 0 && STAGE_END - SECONDS < left )) && left=$((STAGE_END - SECONDS))
    STEP_RC=125
    if (( left < need )); then STEP_STATUS=skipped; return; fi
    t=$(( limit < left ? limit : left ))
    t0=$SECONDS
    # In the background and waited for, so that a signal is answered at once (bash runs a trap only
    # between commands); `timeout` makes its own process group, which the trap ends.
    timeout -k 5 "$t" "$@" >"$W/$log" 2>&1 </dev/null &
    STEP_PID=$!
    wait "$STEP_PID"
    STEP_RC=$?
    STEP_PID=""
    if (( STEP_RC == 124 || STEP_RC == 137 )); then
        if (( t < limit )); then STEP_STATUS=cut; else STEP_STATUS=timeout; fi
        echo "gpu-check: stopped after $((SECONDS - t0)) s (limit $t s)" >>"$W/$log"
    else
        STEP_STATUS=ran
    fi
}
# step_verdict ID: when the last step did not end by itself, gives row ID its verdict and returns 0.
step_verdict() {
    case $STEP_STATUS in
        skipped) result "$1" "${2:-}" "SKIPPED (time)" ;;
        cut) result "$1" "stopped by the deadline (or its group's share)" "SKIPPED (time)" ;;
        timeout) result "$1" "timed out (a hang?)" FAIL ;;
        *) return 1 ;;
    esac
    return 0
}

finish() {  # finish HOW: marks the rows left, writes the table and the JSON, exits
    local how=$1 id fails=0 skipped=0 v
    trap - TERM INT HUP USR1
    # The step ends (timeout's -k 5 at the latest) before its scratch folder is packed and removed.
    [[ -n "$STEP_PID" ]] && { kill -TERM -- "-$STEP_PID" 2>/dev/null || kill -TERM "$STEP_PID" 2>/dev/null; wait "$STEP_PID" 2>/dev/null; }
    [[ -n "$WATCHDOG" ]] && kill "$WATCHDOG" 2>/dev/null
    case $how in
        finished) v="SKIPPED (not run)" ;;
        deadline) v="SKIPPED (time)" ;;
        *) v="SKIPPED (killed)" ;;
    esac
    ENDED=$how
    for id in "${ORDER[@]}"; do pending "$id" && { VALUE[$id]=""; VERDICT[$id]=$v; }; done
    for id in "${ORDER[@]}"; do
        [[ "${VERDICT[$id]}" == FAIL ]] && fails=$((fails + 1))
        [[ "${VERDICT[$id]}" == "SKIPPED (time)" || "${VERDICT[$id]}" == "SKIPPED (killed)" ]] && skipped=$((skipped + 1))
    done
    write_reports
    pack_logs
    [[ $KEEP_SCRATCH == 1 || -n "$SCRATCH" ]] || rm -rf "$W"
    echo
    say "$PLATFORM check ended ($how) in $((SECONDS - START)) s of $DEADLINE: $fails failed, $skipped left out for time or a signal"
    line group check "norm / limit" value verdict
    for id in "${ORDER[@]}"; do line "${GROUP[$id]}" "${CHECK[$id]}" "${NORM[$id]}" "${VALUE[$id]}" "${VERDICT[$id]}"; done
    echo "Table: $OUT/gpu-check.md  JSON: $OUT/gpu-check.json  Logs: $OUT/gpu-check-logs.tar.gz"
    if (( fails > 0 )); then exit 1; elif (( skipped > 0 )); then exit 3; else exit 0; fi
}
trap 'finish "killed (SIGTERM)"' TERM
trap 'finish "killed (SIGINT)"' INT
trap 'finish "killed (SIGHUP)"' HUP
trap 'finish deadline' USR1
# The last resort past the deadline (every step is bounded already): a process that signals this one.
bash -c 'sleep "$1" & s=$!; trap "kill $s 2>/dev/null; exit 0" TERM; wait $s; kill -USR1 "$2"' _ \
    $((DEADLINE + 15)) $$ >/dev/null 2>&1 </dev/null &
WATCHDOG=$!

# --- the bundle ------------------------------------------------------------------------------------------
BUNDLE=""
if [[ -f "$BUNDLE_ARG" && "$BUNDLE_ARG" =~ \.(tar\.gz|tgz)$ ]]; then
    say "unpacking $BUNDLE_ARG into $W/bundle"
    rm -rf "$W/bundle" && mkdir -p "$W/bundle"
    run_step unpack.log 120 5 tar -C "$W/bundle" -xzf "$BUNDLE_ARG"
    top=$(ls -A "$W/bundle")
    [[ $STEP_STATUS == ran && $STEP_RC -eq 0 && -n "$top" && $(wc -l <<<"$top") -eq 1 ]] && BUNDLE="$W/bundle/$top"
elif [[ -d "$BUNDLE_ARG" ]]; then
    BUNDLE="$(cd "$BUNDLE_ARG" && pwd -P)"
fi
SRC="$BUNDLE/share/spotrun/source"
REF="$(ref_dir "$BUNDLE")"
S="$BUNDLE/bin/spotrun"
MPIRUN="$BUNDLE/bin/mpirun"
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
[[ $CPU == 1 ]] || export SPOTRUN_REQUIRE_GPU=1
# A stalled NCCL bootstrap of spotrun (and spotrun-test) fails in a minute instead of SPOTRUN_NCCL_TIMEOUT's
# default 300 s; the unit programs make their transports without it (docs/gpu.md, "Timeout").
export SPOTRUN_NCCL_TIMEOUT=${SPOTRUN_NCCL_TIMEOUT:-60}
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
SMI="${SPOTRUN_GPU_CHECK_NVIDIA_SMI:-nvidia-smi}"
GPU_PARTS="" SPOTRUN_VERSION="" DRIVER="" DRIVER_CUDA=""

# The unit programs: the device-relevant ones first (kernels, FFT, transports, checkpoints of device
# data), then any other, then the host-only ones (deck parsing, cloud metadata, launch plans, job
# scripts, reports: nothing of theirs runs on a GPU), which a GPU check skips and --cpu lists.
DEVICE_FIRST=(test_device test_fft test_fft_batch test_fft_gradient test_fft_grouping test_fluid test_comm test_particles_halo test_neighbor_paths
              test_pair_lj test_pair_styles test_force_rows test_md_physics test_md_precision test_md_energy
              test_md_types test_md_overlap test_kspace test_md_charges test_md_molecules test_bonded_forces
              test_atom_fields test_md_units test_md_minimize test_md_npt test_checkpoint test_restore_validation test_hooks test_inspect
              test_doctor)
HOST_ONLY=(test_deck test_deck_fuzz test_cloud test_launch test_submit test_process_grid test_report
           test_registry test_lammps_data)
TESTS=()
declare -A IS_HOST_ONLY=()
for t in "${HOST_ONLY[@]}"; do IS_HOST_ONLY[$t]=1; done
if [[ -n "$BUNDLE" ]]; then
    present=()
    for t in "$BUNDLE"/bin/test_*; do
        [[ -f "$t" ]] || continue
        # test_support_selftest checks failure reporting (it is meant to fail).
        [[ "$(basename "$t")" == test_support_selftest ]] || present+=("$(basename "$t")")
    done
    declare -A seen=()
    for t in "${DEVICE_FIRST[@]}"; do
        [[ " ${present[*]:-} " == *" $t "* ]] && { TESTS+=("$t"); seen[$t]=1; }
    done
    for t in ${present[@]+"${present[@]}"}; do [[ -n "${seen[$t]:-}${IS_HOST_ONLY[$t]:-}" ]] || TESTS+=("$t"); done
    for t in ${present[@]+"${present[@]}"}; do [[ -n "${IS_HOST_ONLY[$t]:-}" ]] && TESTS+=("$t"); done
fi
CELLS=(20 40 80 160)
SIZES=(128 256 512)
[[ $QUICK == 1 ]] && { CELLS=(20 40 80); SIZES=(128 256); }

plan pre.glibc preflight "the node's glibc (getconf) against the bundle's" ">= bundle-info.txt"
plan pre.bundle preflight "the bundle: spotrun starts, its GPU parts" "$PLATFORM mode"
plan pre.driver preflight "NVIDIA driver (nvidia-smi)" "answers"
plan pre.cuda preflight "driver's CUDA >= the CUDA the bundle was built with" "same major, >= minor"
plan pre.libcuda preflight "libcuda.so.1 through env.sh: the driver's" "not the toolkit's stub"
plan pre.ldd preflight "ldd of every program through env.sh" "no 'not found'"
plan pre.modules preflight "ldd of Open MPI/PMIx/hwloc modules through env.sh" "no 'not found'"
plan pre.nccl preflight "NCCL library (libnccl.so.2)" "found if compiled in"
plan pre.gpus preflight "GPUs visible" ">= 1"
plan pre.mig preflight "MIG mode" "disabled"
plan pre.cpus preflight "CPU binding near the GPU (spotrun info, rank 0)" "bound near its GPU"
plan pre.refs preflight "CPU references in the bundle" "present"
for c in "${MD_COLUMNS[@]}"; do
    plan "md.col.$c" md "in.lj 32k, 100 steps: $PLATFORM vs CPU reference: $c" "rel <= ${TOL[md]}"
done
for c in "${PPPM_COLUMNS[@]}"; do
    plan "md.pppm.$c" md "electrolyte, PPPM, 100 steps: $PLATFORM vs CPU reference: $c" "rel <= ${TOL[md]}"
done
plan md.repeat md "in.lj 32k: two $PLATFORM runs" "bitwise"
plan md.resume md "in.lj 32k: 50 + 50 resumed steps as 100" "bitwise"
for c in "${FLUID_COLUMNS[@]}"; do
    norm=${NORM_OF[fluid.$c]:-rel}
    plan "fluid.col.$c" fluid "TGV 64^3, 20 steps: $PLATFORM vs CPU reference: $c" "$norm <= ${TOL[fluid.$c]:-${TOL[fluid]}}"
done
plan comm.nccl comm "NCCL, 1 rank, self-messages through NCCL: = default" "bitwise"
plan comm.nccl_bytes comm "NCCL, 1 rank: array bytes host<->device per MD step" "= 0"
plan comm.mpi2 comm "mpi-host, 2 ranks (placement in value): vs 1 rank" "rel <= ${TOL[mpi2]}"
for t in ${TESTS[@]+"${TESTS[@]}"}; do
    plan "unit.$t" unit "$t (1 rank$([[ $CPU == 1 ]] && echo ", listed only")$([[ -n "${IS_HOST_ONLY[$t]:-}" ]] && echo ", host-only"))" \
        "$([[ $CPU == 1 ]] && echo "loads, lists" || echo "all pass")"
done
for c in "${CELLS[@]}"; do
    atoms=$((4 * c * c * c))
    if (( atoms >= 1000000 )); then n=">= 3e8"; else n="(info)"; fi
    plan "bench.lj.$c" bench "LJ in.lj $atoms atoms: atom-steps/s" "$n"
done
for n in "${SIZES[@]}"; do
    if (( n >= 256 )); then lim="ratio <= 1.5"; else lim="(info)"; fi
    plan "bench.fluid.$n" bench "fluid ${n}^3: step s, floor s, ratio, FFT launches/step" "$lim"
done
plan bench.fluid_errors bench "bench_fluid: runs, round-trip checks" "exit 0, no ERROR"

say "spotrun $PLATFORM check: bundle ${BUNDLE:-$BUNDLE_ARG}, outputs in $OUT, deadline $DEADLINE s"
line group check "norm / limit" value verdict
write_reports

# --- preflight -------------------------------------------------------------------------------------------
stage preflight
# version_ge A B: A >= B, dotted versions compared field by field.
version_ge() {
    awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, "."); m = split(b, y, "."); k = n > m ? n : m
        for (i = 1; i <= k; i++) { if (x[i] + 0 > y[i] + 0) exit 0; if (x[i] + 0 < y[i] + 0) exit 1 } exit 0 }'
}
# pre.glibc: the node's glibc is at least the newest the bundle's files ask for (bundle-info.txt). Asked
# first: an older one makes the loader refuse every program ("version `GLIBC_2.36' not found").
GLIBC_NEED=$(sed -n 's/^Needs on the node: glibc >= \([0-9][0-9.]*\).*/\1/p' "$BUNDLE/bundle-info.txt" 2>/dev/null | head -n 1)
GLIBC_NODE=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc \([0-9][0-9.]*\).*/\1/p' | head -n 1)
if [[ -z "$GLIBC_NEED" ]]; then
    result pre.glibc "node ${GLIBC_NODE:-?}; the bundle names no glibc (no bundle-info.txt)" WARN
elif [[ -z "$GLIBC_NODE" ]]; then
    result pre.glibc "needs $GLIBC_NEED; getconf GNU_LIBC_VERSION did not say the node's (not glibc?)" FAIL
elif version_ge "$GLIBC_NODE" "$GLIBC_NEED"; then
    result pre.glibc "node $GLIBC_NODE >= $GLIBC_NEED" PASS
else
    result pre.glibc "node $GLIBC_NODE < $GLIBC_NEED: use an image with glibc >= $GLIBC_NEED, or make the bundle on one with glibc <= $GLIBC_NODE (docs/gpu.md)" FAIL
fi
# pre.bundle: spotrun starts (the loader finds every library) and says what it was built with.
if [[ -z "$BUNDLE" || ! -x "$S" ]]; then
    result pre.bundle "'$BUNDLE_ARG' is not a spotrun bundle (no bin/spotrun)" FAIL
else
    run_step info.txt 60 5 "$S" info
    GPU_PARTS=$(sed -n 's/^GPU parts compiled in: //p' "$W/info.txt" | head -n 1)
    # NCCL is loaded at run time (not linked): spotrun info says whether libnccl.so.2 loads.
    NCCL_LINE=$(sed -n 's/^NCCL library: //p' "$W/info.txt" | head -n 1)
    [[ $STEP_STATUS == ran && $STEP_RC -eq 0 ]] && SPOTRUN_VERSION=$(sed -n '1p' "$W/info.txt")
    if step_verdict pre.bundle; then :
    elif [[ $STEP_RC -ne 0 ]]; then
        why=$(grep -m1 -E 'error while loading|not found|ERROR|rror' "$W/info.txt" | cut -c1-100)
        result pre.bundle "exit $STEP_RC: ${why:-see info.txt}" FAIL
    elif [[ $CPU == 0 && "$GPU_PARTS" != *"Kokkos CUDA yes"* ]]; then
        result pre.bundle "not a CUDA build: ${GPU_PARTS:-?}" FAIL
    else
        result pre.bundle "${GPU_PARTS:-?}" PASS
    fi
fi
# The CUDA the bundle was built with: bundle-info.txt (make_bundle.sh), else the libcudart it needs.
CUDA_BUILT=$(sed -n 's/^CUDA runtime: \([0-9][0-9.]*\).*/\1/p' "$BUNDLE/bundle-info.txt" 2>/dev/null | head -n 1)
if [[ -z "$CUDA_BUILT" ]]; then
    CUDA_BUILT=$(grep -ho 'libcudart\.so\.[0-9]*' "$BUNDLE"/bin/* 2>/dev/null | sed -n '1s/libcudart\.so\.//p')
fi

GPU_COUNT=0
if [[ $CPU == 1 ]]; then
    result pre.driver "" "SKIPPED (cpu)"
    result pre.cuda "built with CUDA ${CUDA_BUILT:-none}" "SKIPPED (cpu)"
else
    run_step nvidia-smi.txt 60 5 "$SMI"
    SMI_OK=0
    if [[ $STEP_STATUS == ran && $STEP_RC -eq 0 ]]; then
        SMI_OK=1
        DRIVER=$(timeout 30 "$SMI" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | sed -n '1p')
        DRIVER_CUDA=$(sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' "$W/nvidia-smi.txt" | sed -n '1p')
    fi
    if step_verdict pre.driver; then :
    elif ! command -v "$SMI" >/dev/null 2>&1; then
        result pre.driver "no $SMI: no NVIDIA driver on this node" FAIL
    elif [[ $STEP_RC -ne 0 || -z "$DRIVER" ]]; then
        result pre.driver "exit $STEP_RC: $(grep -m1 . "$W/nvidia-smi.txt" | cut -c1-80)" FAIL
    else
        result pre.driver "$DRIVER (supports CUDA ${DRIVER_CUDA:-?})" PASS
    fi
    if [[ "${VERDICT[pre.driver]}" == SKIPPED* ]]; then
        result pre.cuda "needs CUDA ${CUDA_BUILT:-?}; the driver was not asked" "${VERDICT[pre.driver]}"
    elif [[ -z "$CUDA_BUILT" ]]; then
        result pre.cuda "the bundle names no CUDA runtime (CPU build?)" FAIL
    elif [[ -z "$DRIVER_CUDA" ]]; then
        result pre.cuda "needs CUDA $CUDA_BUILT (driver >= ${DRIVER_FOR_CUDA[${CUDA_BUILT%%.*}]:-?}); the driver's is unknown" FAIL
    else
        bmaj=${CUDA_BUILT%%.*} dmaj=${DRIVER_CUDA%%.*}
        need="needs CUDA $bmaj (driver >= ${DRIVER_FOR_CUDA[$bmaj]:-?}), driver $DRIVER supports $DRIVER_CUDA"
        if [[ -n "${DRIVER_FOR_CUDA[$bmaj]:-}" && "$DRIVER" =~ ^[0-9][0-9.]*$ ]] &&
                ! version_ge "$DRIVER" "${DRIVER_FOR_CUDA[$bmaj]}"; then
            # (a driver that claims the CUDA version but is older than NVIDIA's smallest for it)
            result pre.cuda "$need: update the driver to >= ${DRIVER_FOR_CUDA[$bmaj]}" FAIL
        elif (( dmaj > bmaj )) || { (( dmaj == bmaj )) && awk -v a="$DRIVER_CUDA" -v b="$CUDA_BUILT" \
                'BEGIN { split(a, x, "."); split(b, y, "."); exit !(x[2] + 0 >= y[2] + 0) }'; }; then
            result pre.cuda "built $CUDA_BUILT; driver supports $DRIVER_CUDA" PASS
        elif (( dmaj == bmaj )); then
            result pre.cuda "built $CUDA_BUILT; driver supports $DRIVER_CUDA (minor-version compatibility)" PASS
        else
            result pre.cuda "$need: update the driver to >= ${DRIVER_FOR_CUDA[$bmaj]:-one that supports CUDA $bmaj}" FAIL
        fi
    fi
fi

# ldd through the bundle's environment: what each bin/ wrapper gives its program (env.sh with its
# SPOTRUN_BUNDLE_NEEDS), so that a library missing on this node is named before anything runs.
LDD_MISSING=""
if [[ -n "$BUNDLE" && -f "$BUNDLE/env.sh" ]]; then
    cat >"$W/ldd.sh" <<'LDD'
B=$1; shift
for name in "$@"; do
    needs=$(sed -n 's/^SPOTRUN_BUNDLE_NEEDS="\(.*\)".*/\1/p' "$B/bin/$name")
    echo "== $name (from the node: ${needs:-nothing})"
    ( SPOTRUN_BUNDLE_NEEDS=$needs SPOTRUN_BUNDLE_PROGRAM=$name; source "$B/env.sh" 2>&1; ldd "$B/libexec/$name" 2>&1 )
done
# Where the loader finds the driver's library and NCCL (loaded at run time) through spotrun's environment:
# LD_LIBRARY_PATH in order, then the system's linker cache.
echo "== resolve"
( SPOTRUN_BUNDLE_NEEDS=$(sed -n 's/^SPOTRUN_BUNDLE_NEEDS="\(.*\)".*/\1/p' "$B/bin/spotrun") SPOTRUN_BUNDLE_PROGRAM=spotrun
  source "$B/env.sh" >/dev/null 2>&1
  cache=$( (/sbin/ldconfig -p || ldconfig -p) 2>/dev/null)
  for lib in libcuda.so.1 libnccl.so.2; do
      found=""
      IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
      for d in "${dirs[@]}"; do [[ -z "$found" && -n "$d" && -e "$d/$lib" ]] && found="$d/$lib"; done
      [[ -n "$found" ]] || found=$(awk -v l="$lib" '$1 == l && !f { f = $NF } END { print f }' <<<"$cache")
      [[ -z "$found" || -e "$found" ]] || found=""
      echo "$lib => ${found:-not found}"
  done )
echo "== modules"
( source "$B/env.sh" 2>&1
  for f in "$B"/lib/openmpi/*.so "$B"/lib/pmix/*.so "$B"/lib/hwloc/*.so; do
      [[ -f "$f" ]] || continue
      ldd "$f" 2>&1 | sed -n "s|^\(.*not found.*\)$|${f#$B/}: \1|p"
  done )
LDD
    progs=()
    for w in "$BUNDLE"/bin/*; do
        [[ -f "$BUNDLE/libexec/$(basename "$w")" ]] && grep -q '^SPOTRUN_BUNDLE_NEEDS=' "$w" && progs+=("$(basename "$w")")
    done
    run_step ldd.txt 120 5 bash "$W/ldd.sh" "$BUNDLE" "${progs[@]}"
    if ! step_verdict pre.ldd; then
        LDD_MISSING=$(awk '/^== (modules|resolve)/ { exit } /^== / { p = $2 } /not found/ { m[p] = m[p] " " $1 }
                           END { for (p in m) printf "%s:%s; ", p, m[p] }' "$W/ldd.txt")
        if [[ -n "$LDD_MISSING" ]]; then
            result pre.ldd "missing: ${LDD_MISSING%; }" FAIL
        else
            result pre.ldd "${#progs[@]} programs, every library found" PASS
        fi
    fi
    mods=""
    [[ $STEP_STATUS == ran ]] && mods=$(sed -n '/^== modules/,$p' "$W/ldd.txt" | grep 'not found' | cut -d: -f1 | sort -u | tr '\n' ' ')
    if [[ $STEP_STATUS != ran ]]; then result pre.modules "" "${VERDICT[pre.ldd]}"
    elif [[ -n "$mods" ]]; then result pre.modules "missing libraries of: $mods" FAIL
    else result pre.modules "$(ls "$BUNDLE"/lib/openmpi/*.so "$BUNDLE"/lib/pmix/*.so "$BUNDLE"/lib/hwloc/*.so 2>/dev/null | wc -l) modules, every library found" PASS
    fi
else
    result pre.ldd "no env.sh in the bundle" FAIL
    result pre.modules "" "${VERDICT[pre.ldd]}"
fi

# pre.libcuda: the libcuda.so.1 spotrun's environment gives the loader. Where the node has the driver
# (nvidia-smi answers, or the kernel module's /proc/driver/nvidia/version), the toolkit's stub there, or
# none, means every run exits 2 although the GPU is fine: a fault of the environment, named with its fix.
# The stub: a file in a stubs/ or driver-stub/ folder, or one of under 4 MiB (the driver's libcuda is
# tens of MiB, the toolkit's stub 100 kB).
is_stub() {
    local real
    real=$(readlink -f "$1" 2>/dev/null || echo "$1")
    [[ "$1" == */stubs/* || "$1" == */driver-stub/* || "$real" == */stubs/* ]] ||
        (( $(stat -L -c %s "$1" 2>/dev/null || echo 0) < 4 * 1048576 ))
}
if [[ $CPU == 1 ]]; then
    result pre.libcuda "" "SKIPPED (cpu)"
elif [[ "${VERDICT[pre.ldd]}" == SKIPPED* || ! -s "$W/ldd.txt" ]]; then
    result pre.libcuda "" "${VERDICT[pre.ldd]}"
else
    LIBCUDA=$(sed -n 's/^libcuda.so.1 => //p' "$W/ldd.txt" | head -n 1)
    driver_here=""
    [[ $SMI_OK == 1 ]] && driver_here="nvidia-smi answers"
    [[ -z "$driver_here" && -e /proc/driver/nvidia/version ]] && driver_here="/proc/driver/nvidia/version exists"
    fix="set SPOTRUN_CUDA_LIBS to the folder of the driver's libcuda.so.1 (ldconfig -p | grep libcuda; find / -name 'libcuda.so.1*'), and take any CUDA stubs/ folder off LD_LIBRARY_PATH"
    if [[ -z "$LIBCUDA" || "$LIBCUDA" == "not found" ]]; then
        if [[ -n "$driver_here" ]]; then result pre.libcuda "not found although the driver is installed ($driver_here): $fix" FAIL
        else result pre.libcuda "not found: no NVIDIA driver on this node" FAIL; fi
    elif is_stub "$LIBCUDA"; then
        if [[ -n "$driver_here" ]]; then
            result pre.libcuda "$LIBCUDA is the toolkit's stub although the driver is installed ($driver_here): every run would exit 2; $fix" FAIL
        else
            result pre.libcuda "$LIBCUDA is the toolkit's stub: no NVIDIA driver on this node" FAIL
        fi
    else
        result pre.libcuda "$LIBCUDA" PASS
    fi
fi

if [[ $CPU == 1 ]]; then
    result pre.nccl "${NCCL_LINE:+$NCCL_LINE, not used on a CPU build}" "SKIPPED (cpu)"
    result pre.gpus "" "SKIPPED (cpu)"
    result pre.mig "" "SKIPPED (cpu)"
    result pre.cpus "" "SKIPPED (cpu)"
else
    if [[ "${VERDICT[pre.ldd]}" == SKIPPED* ]]; then
        result pre.nccl "" "${VERDICT[pre.ldd]}"
    elif [[ "$GPU_PARTS" == *"NCCL yes"* ]]; then
        if [[ "$NCCL_LINE" != libnccl.so.2* ]]; then
            result pre.nccl "compiled in, ${NCCL_LINE:-no NCCL line from spotrun info}: libnccl.so.2 is in none of the system's linker paths, SPOTRUN_CUDA_LIBS, CUDA_HOME, /usr/local/cuda, NVIDIA's Python wheels (site-packages/nvidia/*/lib): pip install nvidia-nccl-cu${CUDA_BUILT%%.*}, or set SPOTRUN_CUDA_LIBS to the folder that holds it" FAIL
        else
            result pre.nccl "$NCCL_LINE ($(sed -n 's/^libnccl.so.2 => //p' "$W/ldd.txt" 2>/dev/null | head -n 1))" PASS
        fi
    else
        result pre.nccl "not compiled in (${GPU_PARTS:-?}): NCCL rows skipped" INFO
    fi
    # (asked only of an nvidia-smi that answered: one that hangs would cost 30 s a question)
    GPU_LIST="" MIG=""
    if [[ $SMI_OK == 1 ]]; then
        GPU_LIST=$(timeout 30 "$SMI" -L 2>/dev/null | grep '^GPU ' || true)
        GPU_NAME=$(timeout 30 "$SMI" --query-gpu=name --format=csv,noheader 2>/dev/null | sed -n '1p')
        MIG=$(timeout 30 "$SMI" --query-gpu=mig.mode.current --format=csv,noheader 2>/dev/null | sort -u | tr '\n' ' ')
    fi
    GPU_COUNT=$(grep -c . <<<"$GPU_LIST" || true)
    if [[ $SMI_OK == 0 ]]; then
        result pre.gpus "nvidia-smi did not answer" FAIL
    elif (( GPU_COUNT >= 1 )); then
        result pre.gpus "$GPU_COUNT x ${GPU_NAME:-?}${CUDA_VISIBLE_DEVICES+ (CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES)}" PASS
    else
        result pre.gpus "nvidia-smi lists no GPU" FAIL
    fi
    if [[ $SMI_OK == 0 ]]; then
        result pre.mig "nvidia-smi did not answer" "SKIPPED (preflight)"
    elif [[ "$MIG" == *Enabled* ]]; then
        result pre.mig "enabled: the run sees a MIG instance; benchmarks are of the instance, NCCL refuses two instances of one GPU" WARN
    else
        result pre.mig "${MIG:-unknown}" PASS
    fi
    # The cores rank 0 runs on, read back after spotrun bound it near its GPU (docs/gpu.md, "CPU binding").
    CPUS_LINE=$(sed -n 's/^  rank 0: .*; \(CPUs .*\)$/\1/p' "$W/info.txt" 2>/dev/null | head -n 1)
    if [[ "${VERDICT[pre.bundle]}" != PASS ]]; then
        result pre.cpus "" "SKIPPED (preflight)"
    elif [[ "$CPUS_LINE" == *"(bound near GPU"* ]]; then
        result pre.cpus "$CPUS_LINE" PASS
    else
        result pre.cpus "${CPUS_LINE:-spotrun info names no CPU binding}" WARN
    fi
fi
if [[ -s "$REF/lj-32k.csv" && -s "$REF/tgv-64.csv" && -s "$REF/electrolyte.csv" ]]; then
    result pre.refs "made by $(sed -n '1p' "$REF/made-by.txt" 2>/dev/null)" PASS
else
    result pre.refs "missing in $REF: gpu-check.sh --make-references CPU_BUILD BUNDLE on the build machine" FAIL
fi

# What the preflight rules out: nothing runs without spotrun; on a GPU node, nothing without a GPU that
# the driver can run the bundle's CUDA on.
BLOCK=""
if [[ "${VERDICT[pre.bundle]}" == "SKIPPED (time)" ]]; then
    # The deadline came before spotrun had answered: what is left is left out for time, not for a fault.
    finish deadline
fi
if [[ "${VERDICT[pre.bundle]}" != PASS ]]; then
    BLOCK="spotrun does not start"
    [[ "${VERDICT[pre.glibc]}" == FAIL ]] && BLOCK="the node's glibc is older than the bundle's"
    [[ "${VALUE[pre.bundle]}" == "not a CUDA build"* ]] && BLOCK="not a CUDA build"
fi
if [[ $CPU == 0 && -z "$BLOCK" ]]; then
    [[ "${VERDICT[pre.driver]}" == PASS && "${VERDICT[pre.gpus]}" == PASS ]] || BLOCK="no GPU driver or no GPU"
    [[ -z "$BLOCK" && "${VERDICT[pre.cuda]}" != PASS ]] && BLOCK="the driver is too old for the bundle's CUDA"
    [[ -z "$BLOCK" && "${VERDICT[pre.libcuda]}" != PASS ]] && BLOCK="libcuda.so.1 is not the driver's"
fi
if [[ -n "$BLOCK" ]]; then
    skip_rest "SKIPPED (preflight: $BLOCK)" md. fluid. comm. unit. bench.
    finish finished
fi
for g in md fluid comm unit bench; do selected "$g" || skip_rest "SKIPPED (not selected)" "$g."; done

# --- comparisons -----------------------------------------------------------------------------------------
# thermo_compare REF GOT ABS_COLUMNS: for each column after `step`, "NAME DIFF STEP" (the largest difference
# and where): absolute for the columns named in ABS_COLUMNS (comma-separated), relative for the others;
# "inf" where a value is not a finite number. Or one line "mismatch WHY" when the files do not line up.
thermo_compare() {
    [[ -s "$1" ]] || { echo "mismatch: no reference $(basename "$1")"; return; }
    [[ -s "$2" ]] || { echo "mismatch: no thermo.csv"; return; }
    awk -F, -v abs="$3" '
        function num(s) { return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
        BEGIN { k = split(abs, a, ","); for (i = 1; i <= k; i++) isabs[a[i]] = 1 }
        FNR == NR { if (FNR == 1) { nc = NF; for (i = 1; i <= NF; i++) h[i] = $i } else { ref[FNR] = $0; nr = FNR } next }
        FNR == 1 { if ($0 != hdr()) { bad = "columns differ: " $0; exit } next }
        { got = FNR
          m = split(ref[FNR], r, ",")
          if (m != nc || NF != nc) { bad = "row " FNR " has another number of columns"; exit }
          if (r[1] != $1) { bad = "steps differ: " r[1] " vs " $1; exit }
          for (i = 2; i <= nc; i++) {
              if (!num(r[i]) || !num($i)) { if (r[i] != $i) { d[i] = "inf"; at[i] = $1 } continue }
              x = r[i] + 0; y = $i + 0; e = x - y; if (e < 0) e = -e
              if (!isabs[h[i]]) { s = (x < 0 ? -x : x); t = (y < 0 ? -y : y); if (t > s) s = t; e = (s > 0 ? e / s : 0) }
              if (d[i] != "inf" && e > d[i] + 0) { d[i] = e; at[i] = $1 } } }
        function hdr(   j, s) { s = h[1]; for (j = 2; j <= nc; j++) s = s "," h[j]; return s }
        END { if (!bad && got != nr) bad = "rows: " nr - 1 " in the reference, " (got ? got - 1 : 0) " here"
              if (bad) { print "mismatch: " bad; exit }
              for (i = 2; i <= nc; i++) printf "%s %s %s\n", h[i], (d[i] == "inf" ? "inf" : sprintf("%.3g", d[i] + 0)), (at[i] == "" ? "-" : at[i]) }
    ' "$1" "$2"
}
within() { [[ "$1" != inf ]] && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }
# column_rows PREFIX GROUP REF GOT COLUMNS...: one row per column from thermo_compare.
column_rows() {
    local prefix=$1 group=$2 ref=$3 got=$4 c cmp d at tol norm abs=""
    shift 4
    for c in "$@"; do [[ ${NORM_OF[$group.$c]:-rel} == abs ]] && abs+="${abs:+,}$c"; done
    cmp=$(thermo_compare "$ref" "$got" "$abs")
    for c in "$@"; do
        tol=${TOL[$group.$c]:-${TOL[$group]}}
        if [[ "$cmp" == mismatch* ]]; then result "$prefix.$c" "${cmp#mismatch: }" FAIL; continue; fi
        read -r _ d at <<<"$(grep "^$c " <<<"$cmp")"
        if [[ -z "${d:-}" ]]; then result "$prefix.$c" "no column $c" FAIL
        elif within "$d" "$tol"; then result "$prefix.$c" "$d" PASS
        else result "$prefix.$c" "$d at step $at" FAIL; fi
    done
}
# run_failed ID...: after a spotrun step that did not succeed, gives the rows ID... a verdict; returns 0
# then (nothing left to compare).
run_failed() {
    local log=$1 id
    shift
    if [[ $STEP_STATUS == ran && $STEP_RC -eq 0 ]]; then return 1; fi
    for id in "$@"; do
        pending "$id" || continue
        step_verdict "$id" ||
            result "$id" "exit $STEP_RC: $(grep -m1 -E 'ERROR|rror' "$W/$log" | cut -c1-70)" FAIL
    done
    return 0
}
perf() { sed -n 's/^Performance: \([0-9.e+]*\) .*/\1/p' "$1" | tail -n 1; }
md_rows=(); for c in "${MD_COLUMNS[@]}"; do md_rows+=("md.col.$c"); done
pppm_rows=(); for c in "${PPPM_COLUMNS[@]}"; do pppm_rows+=("md.pppm.$c"); done
fluid_rows=(); for c in "${FLUID_COLUMNS[@]}"; do fluid_rows+=("fluid.col.$c"); done

# --- md --------------------------------------------------------------------------------------------------
if selected md; then
    stage md
    say "md: 32k-atom in.lj against the CPU reference, run to run, resume"
    run_step lj-a.log 120 10 "$S" run "$SRC/$LJ_DECK" "${LJ_SETS[@]}" --output-dir "$W/lj-a" --resume never
    if ! run_failed lj-a.log "${md_rows[@]}" md.repeat md.resume; then
        column_rows md.col md "$REF/lj-32k.csv" "$W/lj-a/thermo.csv" "${MD_COLUMNS[@]}"
        run_step lj-b.log 120 10 "$S" run "$SRC/$LJ_DECK" "${LJ_SETS[@]}" --output-dir "$W/lj-b" --resume never
        if ! run_failed lj-b.log md.repeat; then
            if cmp -s "$W/lj-a/thermo.csv" "$W/lj-b/thermo.csv"; then result md.repeat identical PASS
            else result md.repeat "differ: $(cmp "$W/lj-a/thermo.csv" "$W/lj-b/thermo.csv" 2>&1 | cut -c1-60)" FAIL; fi
        fi
    fi
    say "md: the electrolyte (charges, PPPM) against the CPU reference"
    run_step elec.log 120 10 "$S" run "$SRC/$ELEC_DECK" "${ELEC_SETS[@]}" --output-dir "$W/elec" --resume never
    run_failed elec.log "${pppm_rows[@]}" ||
        column_rows md.pppm md "$REF/electrolyte.csv" "$W/elec/thermo.csv" "${PPPM_COLUMNS[@]}"
    if pending md.resume; then
        run_step lj-whole.log 120 10 "$S" run "$SRC/$LJ_DECK" --set run.steps=100 --set run.thermo_every=1 \
            --output-dir "$W/lj-whole" --resume never
        run_failed lj-whole.log md.resume ||
            run_step lj-resumed-1.log 120 10 "$S" run "$SRC/$LJ_DECK" --set run.steps=50 --set run.thermo_every=1 \
                --output-dir "$W/lj-resumed" --resume never
        pending md.resume && ! run_failed lj-resumed-1.log md.resume &&
            run_step lj-resumed-2.log 120 10 "$S" run "$SRC/$LJ_DECK" --set run.steps=100 --set run.thermo_every=1 \
                --output-dir "$W/lj-resumed"
        if pending md.resume && ! run_failed lj-resumed-2.log md.resume; then
            rows="$(grep -c . "$W/lj-resumed/thermo.csv" 2>/dev/null) rows"
            if cmp -s "$W/lj-whole/thermo.csv" "$W/lj-resumed/thermo.csv"; then result md.resume "$rows, identical" PASS
            else result md.resume "$rows, differ" FAIL; fi
        fi
    fi
fi

# --- fluid -----------------------------------------------------------------------------------------------
if selected fluid; then
    stage fluid
    say "fluid: TGV 64^3 against the CPU reference"
    run_step tgv.log 180 10 "$S" run "$SRC/$TGV_DECK" "${TGV_SETS[@]}" --output-dir "$W/tgv" --resume never
    run_failed tgv.log "${fluid_rows[@]}" ||
        column_rows fluid.col fluid "$REF/tgv-64.csv" "$W/tgv/thermo.csv" "${FLUID_COLUMNS[@]}"
fi

# --- comm ------------------------------------------------------------------------------------------------
if selected comm; then
    stage comm
    say "comm: NCCL at one rank through the transport; mpi-host at 2 ranks"
    if [[ $CPU == 1 ]]; then
        skip_rest "SKIPPED (cpu)" comm.nccl
    elif [[ "$GPU_PARTS" != *"NCCL yes"* ]]; then
        skip_rest "SKIPPED (no NCCL in the build)" comm.nccl
    elif [[ "${VERDICT[pre.nccl]}" != PASS ]]; then
        skip_rest "SKIPPED (preflight: no libnccl)" comm.nccl
    elif [[ ! -s "$W/lj-a/thermo.csv" ]]; then
        skip_rest "SKIPPED (no default run to compare)" comm.nccl
    elif [[ ! -x "$BUNDLE/bin/spotrun-test" ]]; then
        skip_rest "SKIPPED (a bundle without the test programs: no bin/spotrun-test)" comm.nccl
    else
        # spotrun-test: spotrun with its test hooks; SPOTRUN_TEST_ROUTE_SELF=1 routes self-messages through
        # the transport (docs/layout.md, "Test hooks"). spotrun itself reads no such variable.
        run_step lj-nccl.log 150 15 env SPOTRUN_TEST_ROUTE_SELF=1 "$BUNDLE/bin/spotrun-test" run "$SRC/$LJ_DECK" "${LJ_SETS[@]}" \
            --set 'comm.transport="nccl"' --output-dir "$W/lj-nccl" --resume never
        if ! run_failed lj-nccl.log comm.nccl comm.nccl_bytes; then
            tr=$(grep -o '^Transport: [a-z-]*' "$W/lj-nccl.log" | head -n 1)
            if cmp -s "$W/lj-a/thermo.csv" "$W/lj-nccl/thermo.csv"; then result comm.nccl "identical, $tr" PASS
            else result comm.nccl "differ, $tr" FAIL; fi
            bytes=$(sed -n 's/^Memory traffic per step: \([0-9.e+]*\) bytes of arrays.*/\1/p' "$W/lj-nccl.log" | head -n 1)
            if [[ "$bytes" == 0 ]]; then result comm.nccl_bytes 0 PASS; else result comm.nccl_bytes "${bytes:-none reported}" FAIL; fi
        fi
    fi
    if [[ ! -s "$W/lj-a/thermo.csv" ]]; then
        skip_rest "SKIPPED (no 1-rank run to compare)" comm.mpi2
    else
        run_step lj-mpi2.log 180 15 "$MPIRUN" -np 2 "$S" run "$SRC/$LJ_DECK" "${LJ_SETS[@]}" \
            --set 'comm.transport="mpi-host"' --output-dir "$W/lj-mpi2" --resume never
        if ! run_failed lj-mpi2.log comm.mpi2; then
            if [[ $CPU == 1 ]]; then where="2 ranks on the CPU"
            elif grep -q "share GPU" "$W/lj-mpi2.log"; then where="2 ranks sharing one GPU"
            else where="2 ranks on 2 GPUs"; fi
            cmp=$(thermo_compare "$W/lj-a/thermo.csv" "$W/lj-mpi2/thermo.csv" "")
            if [[ "$cmp" == mismatch* ]]; then result comm.mpi2 "$where: ${cmp#mismatch: }" FAIL
            else
                worst=$(sort -g -k2 <<<"$cmp" | tail -n 1)
                read -r wc wd _ <<<"$worst"
                if grep -q ' inf ' <<<"$cmp"; then result comm.mpi2 "$where: not a number in $(grep ' inf ' <<<"$cmp" | cut -d' ' -f1 | head -n 1)" FAIL
                elif within "$wd" "${TOL[mpi2]}"; then result comm.mpi2 "$where: $wd ($wc)" PASS
                else result comm.mpi2 "$where: $wd ($wc)" FAIL; fi
            fi
        fi
    fi
fi

# --- unit ------------------------------------------------------------------------------------------------
if selected unit; then
    stage unit
    say "unit: the test programs at 1 rank$([[ $CPU == 1 ]] && echo ", listed (--cpu)")"
    for name in ${TESTS[@]+"${TESTS[@]}"}; do
        id="unit.$name"
        if [[ $CPU == 1 ]]; then
            run_step "$name.log" 60 3 "$BUNDLE/bin/$name" --gtest_list_tests
            step_verdict "$id" && continue
            n=$(grep -c '^  ' "$W/$name.log")
            if [[ $STEP_RC -eq 0 && $n -gt 0 ]]; then result "$id" "$n tests listed" PASS
            else result "$id" "exit $STEP_RC, $n tests listed: $(grep -m1 -E 'rror|not found' "$W/$name.log" | cut -c1-50)" FAIL; fi
            continue
        fi
        if [[ -n "${IS_HOST_ONLY[$name]:-}" ]]; then result "$id" "nothing of it runs on a GPU (ctest runs it)" "SKIPPED (host-only)"; continue; fi
        # test_checkpoint's h5dump case needs hdf5-tools, which a bare node lacks; test_registry's folder
        # check reads the source tree's solvers/, which the bundle does not carry.
        filter=()
        [[ "$name" == test_checkpoint ]] && filter=(--gtest_filter=-*H5dump*)
        [[ "$name" == test_registry ]] && filter=(--gtest_filter=-*EverySolverFolderIsRegistered*)
        run_step "$name.log" 90 10 "$BUNDLE/bin/$name" --gtest_color=no ${filter[@]+"${filter[@]}"}
        step_verdict "$id" && continue
        ran=$(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$W/$name.log" | head -n 1)
        if [[ $STEP_RC -eq 0 ]]; then result "$id" "$ran" PASS
        else result "$id" "exit $STEP_RC: $(grep -m1 -E 'FAILED|Failure|SKIPPED|rror' "$W/$name.log" | cut -c1-60)" FAIL; fi
    done
fi

# --- bench -----------------------------------------------------------------------------------------------
if selected bench; then
    stage bench
    say "bench"
    for c in "${CELLS[@]}"; do
        id="bench.lj.$c"
        atoms=$((4 * c * c * c))
        if [[ $CPU == 1 ]] && (( atoms > 32000 )); then result "$id" "" "SKIPPED (cpu)"; continue; fi
        # need: about the set-up and 100 steps at 3e8 atom-steps/s, and room for the rest
        run_step "bench-lj-$c.log" 240 $((10 + atoms / 500000)) "$S" run "$SRC/$LJ_DECK" --set run.steps=100 \
            --set run.thermo_every=100 --set "md.lattice.cells=[$c,$c,$c]" --output-dir "$W/bench-lj-$c" --resume never
        step_verdict "$id" && continue
        p=$(perf "$W/bench-lj-$c.log")
        if [[ $STEP_RC -ne 0 || -z "$p" ]]; then
            result "$id" "exit $STEP_RC, no result: $(grep -m1 ERROR "$W/bench-lj-$c.log" | cut -c1-40)" FAIL
        elif (( atoms >= 1000000 )); then
            if awk -v p="$p" 'BEGIN { exit !(p >= 3e8) }'; then result "$id" "$p" PASS; else result "$id" "$p" FAIL; fi
        else
            result "$id" "$p" INFO
        fi
    done
    # The fluid step against the floor, with the FFT launches of a step (bench_fluid's columns: n,
    # decomposition, step, FFT, floor, FFT in step, ratio, median ratio, launches, round trip). A CPU
    # bundle runs the smallest size for its figures (INFO: the targets are a GPU's).
    sizes=$(IFS=,; echo "${SIZES[*]}")
    steps=()
    if [[ $CPU == 1 ]]; then
        skip_rest "SKIPPED (cpu)" bench.fluid.256 bench.fluid.512
        sizes=${SIZES[0]}
        steps=(--steps 2)
    fi
    run_step bench-fluid.log 360 60 "$BUNDLE/bin/bench_fluid" --sizes "$sizes" ${steps[@]+"${steps[@]}"}
    while read -r n step floor ratio launches; do
        pending "bench.fluid.$n" 2>/dev/null || continue
        v=INFO
        (( n >= 256 && CPU == 0 )) && { awk -v r="$ratio" 'BEGIN { exit !(r <= 1.5) }' && v=PASS || v=FAIL; }
        result "bench.fluid.$n" "$step $floor $ratio $launches" "$v"
    done < <(awk '{ sub(/ +ERROR: round trip$/, "") } $1 ~ /^[0-9]+$/ && NF >= 10 { print $1, $(NF - 7), $(NF - 5), $(NF - 3), $(NF - 1) }' \
                 "$W/bench-fluid.log" 2>/dev/null)
    if ! step_verdict bench.fluid_errors; then
        if [[ $STEP_RC -ne 0 ]] || grep -q ERROR "$W/bench-fluid.log"; then
            result bench.fluid_errors "exit $STEP_RC: $(grep -m1 -E 'ERROR|rror' "$W/bench-fluid.log" | cut -c1-50)" FAIL
        else
            result bench.fluid_errors "exit 0" PASS
        fi
    fi
    for n in "${SIZES[@]}"; do
        pending "bench.fluid.$n" || continue
        if [[ $STEP_STATUS == skipped || $STEP_STATUS == cut ]]; then result "bench.fluid.$n" "" "SKIPPED (time)"
        else result "bench.fluid.$n" "no line for ${n}^3 in bench-fluid.log" FAIL; fi
    done
fi

finish finished
