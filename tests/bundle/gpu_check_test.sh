#!/usr/bin/env bash
# tools/gpu-check.sh on the CPU bundle (--cpu): the only run the script gets before a GPU node does.
#
# usage: gpu_check_test.sh SOURCE_DIR BUILD_DIR WORKDIR
#
# 1. make_bundle.sh makes the bundle of BUILD_DIR with the CPU references (--references BUILD_DIR) and its
#    .tar.gz; gpu-check.sh --cpu is given the .tar.gz (it unpacks it into the scratch folder) and must pass
#    within 5 minutes: every planned row in the table, gpu-check.md and gpu-check.json, the GPU-only rows
#    SKIPPED (cpu), the others PASS (INFO for the one CPU benchmark), exit 0; --out holds exactly
#    gpu-check.md, gpu-check.json and gpu-check-logs.tar.gz (what a device tool returns: at most 8 files,
#    each under 16 MiB), the tarball the logs and no .h5; the default scratch folder is gone afterwards.
# 2. A planted wrong reference: energy of the fluid reference off by 1e-8 relative and pe of the MD one by
#    1e-7 relative must make those rows FAIL (exit 1); divmax moved by 1e-14 absolute (O(1) relatively)
#    must still PASS (it is compared absolutely).
# 3. --deadline 10: the runs do not fit (their rows SKIPPED (time)), nothing FAIL, exit 3, done within the
#    deadline, and still the table and the JSON.
# 4. SIGTERM in the middle: the rows left say SKIPPED (killed), and the table and the JSON are written.
# 5. GPU mode on the CPU bundle with a stand-in nvidia-smi (driver 535, CUDA 12.2, two GPUs): the preflight
#    finds the driver, the two GPUs and NCCL, fails the bundle (not a CUDA build) and the driver (too old for
#    CUDA 13), and every later row says SKIPPED (preflight: ...); exit 1.
# 6. The preflight's refusals with stand-ins (--only preflight: the other rows SKIPPED (not selected)):
#    a getconf that reports glibc 2.31 (the bundle needs the build machine's), the toolkit's stub libcuda.so.1
#    first on the path (SPOTRUN_CUDA_LIBS) while a stand-in nvidia-smi answers, and a driver (570) that
#    claims CUDA 13.0 but is older than NVIDIA's smallest for it: each row FAILs naming its fix. Then the
#    same with the real glibc, a stand-in driver library and a new driver: those rows PASS.
# 7. NCCL hidden (a mount namespace where the CUDA folder lacks libnccl*): pre.nccl FAILs naming where it
#    looked and the fix; with the library in a stand-in Python wheel (PYTHONPATH/nvidia/nccl/lib) env.sh
#    finds it there and pre.nccl PASSes. Skipped without mount namespaces (a failure with
#    SPOTRUN_REQUIRE_BUNDLE=1).
set -uo pipefail
SRC=$(realpath "$1")
BUILD=$(realpath "$2")
WORK=$3
T0=$SECONDS
fail() { echo "FAIL: $*"; exit 1; }

export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
rm -rf "$WORK"
mkdir -p "$WORK" && cd "$WORK" || fail "cannot make $WORK"

t=$SECONDS
bash "$SRC/tools/make_bundle.sh" --build-dir "$BUILD" --output "$WORK/spotrun-bundle" --tar --max-mib 0 --references "$BUILD" \
    >make.log 2>&1 || fail "make_bundle.sh failed: $(tail -n 20 make.log)"
echo "bundle with references made in $((SECONDS - t)) s: $(grep -E 'tar.gz: ' make.log | sed 's/^make_bundle.sh: //')"
for f in lj-32k.csv tgv-64.csv made-by.txt; do
    [[ -s spotrun-bundle/share/spotrun/gpu-check/$f ]] || fail "the bundle has no gpu-check reference $f"
done
[[ -x spotrun-bundle/gpu-check.sh ]] || fail "the bundle has no gpu-check.sh"

# check_report DIR EXPECT...: the JSON parses, names every row the bundle plans in order, each once, the
# table (gpu-check.md) has the same rows; EXPECT is ID=VERDICT (ID may end in *: every row it starts).
check_report() {
    local dir=$1
    shift
    [[ -s "$dir/gpu-check.json" ]] || fail "$dir: no gpu-check.json"
    [[ -s "$dir/gpu-check.md" ]] || fail "$dir: no gpu-check.md"
    python3 - "$dir" "$WORK/spotrun-bundle" "$@" <<'PY' || fail "$dir: the report is not what it should be (above)"
import json, os, sys, fnmatch
d, bundle, expect = sys.argv[1], sys.argv[2], sys.argv[3:]
j = json.load(open(os.path.join(d, "gpu-check.json")))
ids = [c["id"] for c in j["checks"]]
tests = sorted(n for n in os.listdir(os.path.join(bundle, "bin")) if n.startswith("test_") and n != "test_support_selftest")
want = ["pre.glibc", "pre.bundle", "pre.driver", "pre.cuda", "pre.libcuda", "pre.ldd", "pre.modules", "pre.nccl",
        "pre.gpus", "pre.mig", "pre.cpus", "pre.refs"]
want += ["md.col." + c for c in ("time", "temp", "pe", "ke", "etotal", "press")]
want += ["md.pppm." + c for c in ("temp", "pe", "ecoul", "elong", "etotal", "press")] + ["md.repeat", "md.resume"]
want += ["fluid.col." + c for c in ("time", "energy", "dissipation", "enstrophy", "divmax", "cfl")]
want += ["comm.nccl", "comm.nccl_bytes", "comm.mpi2"] + ["unit." + t for t in tests]
want += ["bench.lj.%d" % c for c in (20, 40, 80, 160)] + ["bench.fluid.%d" % n for n in (128, 256, 512)]
want += ["bench.fluid_errors"]
errors = []
# The unit rows: every test program once, the device-relevant ones first, the host-only ones last.
units = [i for i in ids if i.startswith("unit.")]
by_id = {c["id"]: c for c in j["checks"]}
if sorted(units) != sorted("unit." + t for t in tests):
    errors.append("unit rows %s, expected the programs %s" % (units, tests))
host = [i for i in units if by_id[i]["check"].endswith(", host-only)")]
if not host or units[len(units) - len(host):] != host:
    errors.append("the host-only unit rows %s are not the last of %s" % (host, units))
for first in ("unit.test_device", "unit.test_fft"):
    if first in units and units.index(first) > 1:
        errors.append(first + " is not among the first unit rows: %s" % units)
if [i for i in ids if not i.startswith("unit.")] != [i for i in want if not i.startswith("unit.")]:
    errors.append("rows %s, expected %s" % (ids, want))
if not j["complete"]:
    errors.append("complete is false")
table = [l.split("|")[1:-1] for l in open(os.path.join(d, "gpu-check.md")) if l.startswith("| ") and not l.startswith("| group")]
if len(table) != len(want):
    errors.append("the table has %d rows, the JSON %d" % (len(table), len(want)))
for e in expect:
    pat, verdict = e.split("=", 1)
    hit = [i for i in ids if fnmatch.fnmatchcase(i, pat)]
    if not hit:
        errors.append("no row " + pat)
    for i in hit:
        if by_id[i]["verdict"] != verdict:
            errors.append("%s: %s (%s), expected %s" % (i, by_id[i]["verdict"], by_id[i]["value"], verdict))
for c in j["checks"]:
    if c["verdict"] == "PENDING":
        errors.append(c["id"] + " still PENDING")
    if c["id"].startswith(("md.col.", "fluid.col.")) and not c["norm"].startswith(("rel <=", "abs <=")):
        errors.append(c["id"] + " states no norm: " + c["norm"])
if by_id["fluid.col.divmax"]["norm"] != "abs <= 1e-12" or by_id["fluid.col.energy"]["norm"] != "rel <= 1e-10":
    errors.append("fluid norms: divmax %s, energy %s" % (by_id["fluid.col.divmax"]["norm"], by_id["fluid.col.energy"]["norm"]))
print("\n".join(errors))
sys.exit(1 if errors else 0)
PY
}
GPU_ROWS=(pre.driver="SKIPPED (cpu)" pre.cuda="SKIPPED (cpu)" pre.libcuda="SKIPPED (cpu)" pre.nccl="SKIPPED (cpu)" pre.gpus="SKIPPED (cpu)"
          pre.mig="SKIPPED (cpu)" pre.cpus="SKIPPED (cpu)" comm.nccl*="SKIPPED (cpu)" bench.lj.40="SKIPPED (cpu)" bench.lj.80="SKIPPED (cpu)"
          bench.lj.160="SKIPPED (cpu)" bench.fluid.256="SKIPPED (cpu)" bench.fluid.512="SKIPPED (cpu)")

# --- 1. the CPU bundle against its own references, from the .tar.gz ---------------------------------------
t=$SECONDS
mkdir -p tmp
TMPDIR="$WORK/tmp" timeout 300 bash spotrun-bundle/gpu-check.sh --cpu --bundle "$WORK/spotrun-bundle.tar.gz" --out run \
    >run.log 2>&1
rc=$?
took=$((SECONDS - t))
echo "gpu-check --cpu: exit $rc in $took s"
[[ $rc -eq 0 ]] || fail "gpu-check --cpu exited $rc: $(tail -n 70 run.log)"
(( took <= 300 )) || fail "gpu-check --cpu took $took s, more than its 5 minutes"
check_report run "${GPU_ROWS[@]}" pre.glibc=PASS pre.bundle=PASS pre.ldd=PASS pre.modules=PASS pre.refs=PASS "md.*=PASS" \
    "fluid.*=PASS" comm.mpi2=PASS "unit.*=PASS" bench.lj.20=INFO bench.fluid.128=INFO bench.fluid_errors=PASS
# bench_fluid's figures at the smallest size: step, floor, ratio and the FFT launches of a step
python3 -c 'import json, sys; c = {r["id"]: r for r in json.load(open(sys.argv[1]))["checks"]}
v = c["bench.fluid.128"]["value"].split(); assert len(v) == 4 and float(v[0]) > 0 and int(v[3]) > 0, v' run/gpu-check.json ||
    fail "bench.fluid.128 does not hold step, floor, ratio and launches: $(grep 'fluid 128' run/gpu-check.md)"
# What comes back: the report only, at most 8 files, each under 16 MiB, no folder; the scratch folder
# (the unpacked bundle, the runs) was under TMPDIR and is gone.
returned=$(cd run && find . -mindepth 1 | sort | tr '\n' ' ')
[[ "$returned" == "./gpu-check-logs.tar.gz ./gpu-check.json ./gpu-check.md " ]] ||
    fail "--out holds '$returned', not gpu-check.md, gpu-check.json and gpu-check-logs.tar.gz"
for f in run/*; do
    (( $(stat -c %s "$f") < 16 * 1048576 )) || fail "$f is $(stat -c %s "$f") bytes, over 16 MiB"
done
logs=$(tar -tzf run/gpu-check-logs.tar.gz) || fail "gpu-check-logs.tar.gz does not list"
for f in info.txt ldd.txt lj-a.log lj-a/thermo.csv tgv.log test_fft.log; do
    grep -qx "$f" <<<"$logs" || fail "gpu-check-logs.tar.gz lacks $f: $(tr '\n' ' ' <<<"$logs" | cut -c1-300)"
done
grep -E '\.h5$|^bundle/' <<<"$logs" && fail "gpu-check-logs.tar.gz holds checkpoints or the bundle"
[[ -z "$(ls -A tmp)" ]] || fail "the scratch folder was left in TMPDIR: $(ls -A tmp)"
echo "returned: $(cd run && stat -c '%n %s' * | tr '\n' ' ')"
grep -q "^  md  *in.lj 32k, 100 steps: CPU vs CPU reference: pe  *rel <= 1e-9 " run.log ||
    fail "the printed table lacks the md pe row with its norm: $(grep -m3 'md ' run.log)"
sed -n '/check ended/,$p' run.log

# --- 2. a planted wrong reference must fail; divmax is compared absolutely --------------------------------
B2="$WORK/planted"
cp -al "$WORK/spotrun-bundle" "$B2"
R2="$B2/share/spotrun/gpu-check"
# new files (not written through the hard links into the first bundle)
awk -F, -v OFS=, 'NR == 4 { $3 = sprintf("%.17g", $3 * (1 + 1e-8)) } NR > 1 { $6 = sprintf("%.17g", $6 + 1e-14) } 1' \
    "$WORK/spotrun-bundle/share/spotrun/gpu-check/tgv-64.csv" >tgv.csv && rm "$R2/tgv-64.csv" && mv tgv.csv "$R2/tgv-64.csv"
head -n 1 "$R2/tgv-64.csv" | grep -qx 'step,time,energy,dissipation,enstrophy,divmax,cfl' ||
    fail "the fluid reference's columns are not the expected ones: $(head -n 1 "$R2/tgv-64.csv")"
awk -F, -v OFS=, 'NR == 5 { $4 = sprintf("%.17g", $4 * (1 + 1e-7)) } 1' \
    "$WORK/spotrun-bundle/share/spotrun/gpu-check/lj-32k.csv" >lj.csv && rm "$R2/lj-32k.csv" && mv lj.csv "$R2/lj-32k.csv"
head -n 1 "$R2/lj-32k.csv" | grep -qx 'step,time,temp,pe,ke,etotal,press' ||
    fail "the MD reference's columns are not the expected ones: $(head -n 1 "$R2/lj-32k.csv")"
cmp -s "$R2/tgv-64.csv" "$WORK/spotrun-bundle/share/spotrun/gpu-check/tgv-64.csv" && fail "the planted reference did not change"
t=$SECONDS
timeout 200 bash "$B2/gpu-check.sh" --cpu --out planted-run >planted.log 2>&1
rc=$?
echo "gpu-check --cpu with a planted reference: exit $rc in $((SECONDS - t)) s"
[[ $rc -eq 1 ]] || fail "a wrong reference did not fail the check (exit $rc): $(tail -n 70 planted.log)"
check_report planted-run "${GPU_ROWS[@]}" fluid.col.energy=FAIL md.col.pe=FAIL fluid.col.divmax=PASS \
    fluid.col.time=PASS md.col.temp=PASS md.repeat=PASS comm.mpi2=PASS
grep -E '^  (md|fluid) .*(: pe|: energy|: divmax) ' planted.log | tail -n 3

# --- 3. a deadline too short: SKIPPED (time), still a table and a JSON ---------------------------------
t=$SECONDS
timeout 60 bash spotrun-bundle/gpu-check.sh --cpu --deadline 10 --out short >short.log 2>&1
rc=$?
echo "gpu-check --cpu --deadline 10: exit $rc in $((SECONDS - t)) s"
[[ $rc -eq 3 ]] || fail "--deadline 10 did not exit 3 (nothing failed, checks left out): exit $rc: $(tail -n 70 short.log)"
(( SECONDS - t <= 30 )) || fail "--deadline 10 took $((SECONDS - t)) s"
check_report short "md.*=SKIPPED (time)" "fluid.*=SKIPPED (time)" "bench.lj.20=SKIPPED (time)" pre.driver="SKIPPED (cpu)"
grep -q "SKIPPED (time)" short/gpu-check.md || fail "no SKIPPED (time) in the table"

# --- 4. killed: SKIPPED (killed), still a table and a JSON -------------------------------------------------
bash spotrun-bundle/gpu-check.sh --cpu --out killed >killed.log 2>&1 &
pid=$!
for _ in $(seq 1 120); do
    grep -q '^\[.*\] md:' killed.log 2>/dev/null && break
    sleep 0.5
done
kill -TERM "$pid"
wait "$pid"
rc=$?
[[ $rc -eq 3 ]] || fail "gpu-check killed by SIGTERM exited $rc: $(tail -n 40 killed.log)"
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["ended"] == "killed (SIGTERM)", j["ended"]
v = [c["verdict"] for c in j["checks"]]; assert "SKIPPED (killed)" in v and "PENDING" not in v, v' killed/gpu-check.json ||
    fail "the JSON after SIGTERM: $(cat killed/gpu-check.json)"
grep -q "SKIPPED (killed)" killed/gpu-check.md || fail "no SKIPPED (killed) in the table after SIGTERM"
echo "killed by SIGTERM: exit 3, $(grep -c 'SKIPPED (killed)' killed/gpu-check.md) rows SKIPPED (killed)"

# --- 5. GPU mode on this CPU bundle, with a stand-in nvidia-smi of an old driver: the preflight says why -----
cat >fake-nvidia-smi <<'SMI'
#!/usr/bin/env bash
case "$*" in
    "") printf '| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |\n' ;;
    -L) printf 'GPU 0: NVIDIA H200 (UUID: GPU-0)\nGPU 1: NVIDIA H200 (UUID: GPU-1)\n' ;;
    *driver_version*) printf '535.104.05\n535.104.05\n' ;;
    *name*) printf 'NVIDIA H200\nNVIDIA H200\n' ;;
    *mig.mode.current*) printf 'Disabled\nDisabled\n' ;;
    *) exit 2 ;;
esac
SMI
chmod 755 fake-nvidia-smi
SPOTRUN_GPU_CHECK_NVIDIA_SMI="$WORK/fake-nvidia-smi" timeout 60 bash spotrun-bundle/gpu-check.sh --scratch oldgpu-scratch \
    --out oldgpu >oldgpu.log 2>&1
rc=$?
[[ $rc -eq 1 ]] || fail "GPU mode on a CPU bundle with an old driver exited $rc: $(tail -n 40 oldgpu.log)"
check_report oldgpu pre.bundle=FAIL pre.driver=PASS pre.cuda=FAIL pre.gpus=PASS pre.mig=PASS pre.nccl=PASS pre.ldd=PASS \
    pre.libcuda=FAIL \
    "pre.cpus=SKIPPED (preflight)" \
    "md.*=SKIPPED (preflight: not a CUDA build)" \
    "unit.*=SKIPPED (preflight: not a CUDA build)"
python3 -c 'import json, sys; c = {r["id"]: r for r in json.load(open(sys.argv[1]))["checks"]}
assert c["pre.cuda"]["value"] == "needs CUDA 13 (driver >= 580.65.06), driver 535.104.05 supports 12.2: update the driver to >= 580.65.06", c["pre.cuda"]
assert c["pre.libcuda"]["value"].startswith("not found although the driver is installed (nvidia-smi answers): set SPOTRUN_CUDA_LIBS"), c["pre.libcuda"]
assert c["pre.gpus"]["value"].startswith("2 x NVIDIA H200"), c["pre.gpus"]' oldgpu/gpu-check.json ||
    fail "the preflight's diagnosis of an old driver: $(grep preflight oldgpu.log | head -n 9)"
grep '^  preflight' oldgpu.log | head -n 3

# --- 6. the preflight's refusals, with stand-ins ---------------------------------------------------------
# smi NAME DRIVER CUDA: a stand-in nvidia-smi of one H200 with that driver, answering what gpu-check asks.
smi() {
    cat >"$1" <<SMI
#!/usr/bin/env bash
case "\$*" in
    "") printf '| NVIDIA-SMI $2   Driver Version: $2   CUDA Version: $3 |\\n' ;;
    -L) printf 'GPU 0: NVIDIA H200 (UUID: GPU-0)\\n' ;;
    *driver_version*) printf '$2\\n' ;;
    *name*) printf 'NVIDIA H200\\n' ;;
    *mig.mode.current*) printf 'Disabled\\n' ;;
    *) exit 2 ;;
esac
SMI
    chmod 755 "$1"
}
smi smi-570 570.86.10 13.0   # claims CUDA 13.0, older than NVIDIA's smallest driver for it (580.65.06)
smi smi-580 580.82.07 13.0
mkdir -p old-glibc stub-dir driver-dir
printf '#!/bin/sh\n[ "$1" = GNU_LIBC_VERSION ] && { echo "glibc 2.31"; exit 0; }\nexec /usr/bin/getconf "$@"\n' >old-glibc/getconf
chmod 755 old-glibc/getconf
stub=""
for c in /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/targets/*/lib/stubs/libcuda.so; do [[ -z "$stub" && -f "$c" ]] && stub=$c; done
[[ -n "$stub" ]] || fail "no CUDA toolkit stub libcuda.so (/usr/local/cuda/lib64/stubs) to stand in for a misplaced stub"
cp "$stub" stub-dir/libcuda.so.1          # the toolkit's stub, in a folder whose name does not say so
head -c $((6 * 1048576)) /dev/zero >driver-dir/libcuda.so.1   # the driver's size: a stand-in, never loaded
# preflight NAME EXPECTED_RC ENV...: gpu-check --only preflight in GPU mode with ENV; the report in NAME/.
preflight() {
    local name=$1 want=$2 rc
    shift 2
    env "$@" timeout 120 bash spotrun-bundle/gpu-check.sh --only preflight --scratch "$name-scratch" --out "$name" \
        >"$name.log" 2>&1
    rc=$?
    [[ $rc -eq $want ]] || fail "$name: gpu-check exited $rc, not $want: $(tail -n 30 "$name.log")"
    sed -n '/check ended/,$p' "$name.log" | grep -E '^  preflight .*(glibc|libcuda|CUDA|NCCL)' | cut -c1-200
}
preflight refused 1 PATH="$WORK/old-glibc:$PATH" SPOTRUN_GPU_CHECK_NVIDIA_SMI="$WORK/smi-570" SPOTRUN_CUDA_LIBS="$WORK/stub-dir"
check_report refused pre.glibc=FAIL pre.cuda=FAIL pre.libcuda=FAIL pre.driver=PASS "md.*=SKIPPED (preflight: not a CUDA build)"
python3 -c 'import json, sys; c = {r["id"]: r for r in json.load(open(sys.argv[1]))["checks"]}
v = c["pre.glibc"]["value"]; assert v.startswith("node 2.31 < ") and "use an image with glibc >= " in v, v
v = c["pre.cuda"]["value"]; assert v == "needs CUDA 13 (driver >= 580.65.06), driver 570.86.10 supports 13.0: update the driver to >= 580.65.06", v
v = c["pre.libcuda"]["value"]; assert v.startswith(sys.argv[2] + "/libcuda.so.1 is the toolkit\x27s stub although the driver is installed (nvidia-smi answers)") and "set SPOTRUN_CUDA_LIBS" in v, v' \
    refused/gpu-check.json "$WORK/stub-dir" || fail "the preflight's refusals: $(cat refused/gpu-check.md)"
preflight accepted 1 SPOTRUN_GPU_CHECK_NVIDIA_SMI="$WORK/smi-580" SPOTRUN_CUDA_LIBS="$WORK/driver-dir"
check_report accepted pre.glibc=PASS pre.cuda=PASS pre.libcuda=PASS pre.driver=PASS pre.nccl=PASS pre.gpus=PASS \
    pre.bundle=FAIL "unit.*=SKIPPED (preflight: not a CUDA build)"
python3 -c 'import json, sys; c = {r["id"]: r for r in json.load(open(sys.argv[1]))["checks"]}
assert c["pre.libcuda"]["value"] == sys.argv[2] + "/libcuda.so.1", c["pre.libcuda"]' accepted/gpu-check.json "$WORK/driver-dir" ||
    fail "pre.libcuda with the stand-in driver library: $(grep libcuda accepted/gpu-check.md)"
# --only: the groups not named are not run, and that is no reason for exit 3
timeout 120 bash spotrun-bundle/gpu-check.sh --cpu --only preflight,fluid --out only >only.log 2>&1
rc=$?
[[ $rc -eq 0 ]] || fail "--cpu --only preflight,fluid exited $rc: $(tail -n 30 only.log)"
check_report only "fluid.*=PASS" "md.*=SKIPPED (not selected)" "unit.*=SKIPPED (not selected)" "bench.lj.20=SKIPPED (not selected)"

# --- 7. NCCL hidden, then in a stand-in Python wheel ---------------------------------------------------------
NCCL_DIR=$(dirname "$(readlink -f "$(/sbin/ldconfig -p 2>/dev/null | awk '$1 == "libnccl.so.2" { print $NF; exit }')" 2>/dev/null)" 2>/dev/null)
if [[ ! -e "$NCCL_DIR/libnccl.so.2" ]]; then
    msg="no libnccl.so.2 in the linker cache to hide"
elif ! unshare --mount --propagation private true 2>/dev/null; then
    msg="unshare --mount fails here (not root, or no CAP_SYS_ADMIN)"
else
    msg=""
    MNT=$(mktemp -d)   # outside WORK: nothing under WORK is a mount point when WORK is deleted
    unshare --mount --propagation private bash -c '
        set -u
        mnt=$1 nccl=$2 work=$3
        mkdir -p "$mnt/orig" "$mnt/shadow" "$mnt/wheels/nvidia/nccl/lib"
        mount --bind "$nccl" "$mnt/orig" || exit 90
        for f in "$mnt"/orig/*; do
            case $(basename "$f") in libnccl*) ;; *) ln -s "$f" "$mnt/shadow/$(basename "$f")" ;; esac
        done
        mount --bind "$mnt/shadow" "$nccl" || exit 90
        [[ ! -e "$nccl/libnccl.so.2" ]] || exit 91
        cd "$work"
        SPOTRUN_GPU_CHECK_NVIDIA_SMI="$work/smi-580" SPOTRUN_CUDA_LIBS="$work/driver-dir" timeout 120             bash spotrun-bundle/gpu-check.sh --only preflight --scratch hidden-scratch --out hidden >hidden.log 2>&1
        echo "hidden: exit $?"
        ln -s "$mnt/orig/libnccl.so.2" "$mnt/wheels/nvidia/nccl/lib/libnccl.so.2"
        PYTHONPATH="$mnt/wheels" SPOTRUN_GPU_CHECK_NVIDIA_SMI="$work/smi-580" SPOTRUN_CUDA_LIBS="$work/driver-dir" timeout 120             bash spotrun-bundle/gpu-check.sh --only preflight --scratch wheel-scratch --out wheel >wheel.log 2>&1
        echo "wheel: exit $?"
        echo "$mnt/wheels/nvidia/nccl/lib" >wheel-dir.txt
        umount "$nccl" "$mnt/orig"
    ' _ "$MNT" "$NCCL_DIR" "$WORK" >nccl-ns.log 2>&1
    rc=$?
    rm -rf "$MNT"
    [[ $rc -eq 0 ]] || fail "the namespace that hides NCCL: exit $rc: $(cat nccl-ns.log)"
    check_report hidden pre.nccl=FAIL pre.libcuda=PASS
    python3 -c 'import json, sys; c = {r["id"]: r for r in json.load(open(sys.argv[1]))["checks"]}
v = c["pre.nccl"]["value"]; assert "cannot be loaded" in v and "NVIDIA\x27s Python wheels" in v and "set SPOTRUN_CUDA_LIBS" in v, v' \
        hidden/gpu-check.json || fail "pre.nccl with NCCL hidden: $(grep nccl hidden/gpu-check.md)"
    check_report wheel pre.nccl=PASS
    python3 -c 'import json, sys; c = {r["id"]: r for r in json.load(open(sys.argv[1]))["checks"]}
v = c["pre.nccl"]["value"]; assert v.startswith("libnccl.so.2, NCCL ") and v.endswith("(" + sys.argv[2] + "/libnccl.so.2)"), v' \
        wheel/gpu-check.json "$(realpath -m "$(cat wheel-dir.txt)")" || fail "pre.nccl with NCCL in a wheel: $(grep nccl wheel/gpu-check.md)"
    grep -h 'NCCL library' hidden/gpu-check.md wheel/gpu-check.md | cut -c1-200
fi
if [[ -n "$msg" ]]; then
    [[ "${SPOTRUN_REQUIRE_BUNDLE:-0}" == 1 ]] && fail "NCCL hidden: $msg (SPOTRUN_REQUIRE_BUNDLE=1)"
    echo "SKIPPED 7 (NCCL hidden): $msg"
fi

rm -rf "$WORK/spotrun-bundle" "$WORK/planted" "$WORK"/*-scratch "$WORK"/driver-dir "$WORK"/*/lj-*/ "$WORK"/*/tgv/ \
    "$WORK"/*/bench-lj-*/  # the reports and logs stay
echo "PASS in $((SECONDS - T0)) s"
