#!/usr/bin/env bash
# The relocatable bundle (tools/make_bundle.sh) runs where none of the libraries it replaces is installed.
#
# usage: bundle_test.sh SOURCE_DIR BUILD_DIR MPIEXEC WORKDIR
#
# 1. make_bundle.sh refuses a build directory without spotrun, from another current directory.
# 2. It makes the bundle of BUILD_DIR (with its tarball), which is then unpacked elsewhere and the folder it
#    was made in deleted: the bundle runs from a path it was not made at.
# 3. Reference runs of a small MD deck with the normal build: 1 rank, and 2 ranks under MPIEXEC.
# 4. In a private mount namespace (unshare --mount --propagation private) the system's library folder
#    (/usr/lib/x86_64-linux-gnu, and /lib/x86_64-linux-gnu where it is another folder) is replaced by one
#    that holds only glibc's libraries and libtinfo (for bash); /usr/local/lib, /etc/openmpi and
#    /usr/share/openmpi are replaced by empty folders. Open MPI, PMIx, hwloc, HDF5, FFTW, Kokkos,
#    libstdc++ and every other library are gone; the CUDA toolkit (outside these folders) stays, as the
#    node's would. Inside, the normal build's spotrun and the system's mpirun must fail to start (the proof
#    that the hiding works), then the bundle runs the deck alone, under its mpirun -np 2, through PATH
#    after `source env.sh`, and under its mpirun on two nodes (a hostfile with a second node name and a
#    stand-in for ssh that runs the remote command here in an empty environment: mpirun must start the
#    bundle's orted there); it runs a test program under its mpirun, ompi_info, and spotrun submit
#    --dry-run (the job script must run the bundle's spotrun wrapper). Where the machine has NCCL
#    (libnccl.so.2 in the loader's cache), that file is replaced by an empty one: spotrun loads NCCL at run
#    time, so every run above still starts, and comm.transport = "nccl" exits 2 naming the library.
# 5. Where a test program takes CUDA libraries from the node (a build with cuFFT), a second namespace moves
#    their folder elsewhere: the program must say that they are missing and which CUDA and driver the
#    bundle needs, exit 2 (not the loader's 127), and run with SPOTRUN_CUDA_LIBS.
# 6. Outside again: the bundle's thermo.csv equal the reference ones byte for byte, and the normal build
#    reads the bundle's checkpoints.
#
# Needs root (a mount namespace); where unshare cannot make one the test is skipped (exit 77), and with
# SPOTRUN_REQUIRE_BUNDLE=1 that is a failure.
set -uo pipefail
SRC=$(realpath "$1")
BUILD=$(realpath "$2")
MPIEXEC=$3
WORK=$4
T0=$SECONDS
# shellcheck source=../support/test_lib.sh
source "$SRC/tests/support/test_lib.sh"

fail() { echo "FAIL: $*"; exit 1; }
skip() {
    if [[ "${SPOTRUN_REQUIRE_BUNDLE:-0}" == 1 ]]; then
        echo "FAIL (SPOTRUN_REQUIRE_BUNDLE=1): $*"
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}

if [[ $(id -u) -ne 0 ]]; then skip "not root: no mount namespace to hide the system's libraries in"; fi
if ! unshare --mount --propagation private true 2>/dev/null; then
    skip "unshare --mount fails here (a container without CAP_SYS_ADMIN?)"
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# cuda-moved/N were mount points inside the namespace only; never rm -rf through them.
rmdir "$WORK"/cuda-moved/* "$WORK/cuda-moved" 2>/dev/null
[[ ! -e "$WORK/cuda-moved" ]] || fail "$WORK/cuda-moved is not empty (a mount left over?); remove it by hand"
rm -rf "$WORK"
mkdir -p "$WORK" || fail "cannot create $WORK"
cd "$WORK" || fail "cannot enter $WORK"

# --- 1. refusal ------------------------------------------------------------------------------------------
mkdir -p empty-build
if (cd / && bash "$SRC/tools/make_bundle.sh" --build-dir "$WORK/empty-build" --output "$WORK/never") >refuse.log 2>&1; then
    fail "make_bundle.sh accepted a build directory without spotrun"
fi
grep -q "has no launcher/spotrun" refuse.log || fail "no clear refusal: $(cat refuse.log)"
[[ ! -e "$WORK/never" ]] || fail "make_bundle.sh wrote a bundle from a build without spotrun"

# --- 2. the bundle, made in one place and run from another ---------------------------------------------
t=$SECONDS
(cd / && bash "$SRC/tools/make_bundle.sh" --build-dir "$BUILD" --output "$WORK/made/spotrun-bundle" --tar --max-mib 0) \
    >make.log 2>&1 || fail "make_bundle.sh failed: $(tail -n 20 make.log)"
echo "bundle made in $((SECONDS - t)) s: $(grep -E 'wrote .*(MiB)' make.log | sed 's/^make_bundle.sh: //')"
mkdir -p node/opt && tar -C node/opt -xzf made/spotrun-bundle.tar.gz || fail "cannot unpack the tarball"
rm -rf made
BUNDLE="$WORK/node/opt/spotrun-bundle"
for f in bin/spotrun bin/mpirun bin/orted env.sh libexec/spotrun lib/openmpi share/openmpi etc/openmpi; do
    [[ -e "$BUNDLE/$f" ]] || fail "the bundle has no $f"
done

# --- 3. reference runs with the normal build -----------------------------------------------------------
write_deck deck.toml "${LIQUID_DECK[@]}" run.steps=50
"$BUILD/launcher/spotrun" run deck.toml --output-dir ref1 --resume never >ref1.log 2>&1 ||
    fail "reference run (1 rank) failed: $(tail -n 20 ref1.log)"
timeout 60 "$MPIEXEC" --oversubscribe -np 2 "$BUILD/launcher/spotrun" run deck.toml --output-dir ref2 \
    --resume never >ref2.log 2>&1 || fail "reference run (2 ranks) failed: $(tail -n 20 ref2.log)"

# --- 4. and 5. in mount namespaces without the system's libraries ------------------------------------
# The folder that replaces the system's library folder: glibc's libraries and libtinfo (bash), nothing else.
LIBDIR=$(dirname "$(readlink -f /lib64/ld-linux-x86-64.so.2 2>/dev/null || readlink -f /lib/ld-linux-aarch64.so.1)")
[[ -d "$LIBDIR" ]] || fail "cannot find the system's library folder"
mkdir -p skeleton
for f in "$LIBDIR"/*; do
    case "$(basename "$f")" in
        ld-linux-*.so.*|libc.so.6|libm.so.6|libmvec.so.1|libdl.so.2|libpthread.so.0|librt.so.1|libresolv.so.2|\
        libutil.so.1|libanl.so.1|libnss_files.so.2|libnss_dns.so.2|libtinfo.so.6)
            cp -L "$f" skeleton/ || fail "cannot copy $f" ;;
    esac
done
HIDE_LIBDIRS=("$LIBDIR")
if [[ -d /lib/x86_64-linux-gnu && "$(readlink -f /lib/x86_64-linux-gnu)" != "$LIBDIR" ]]; then
    HIDE_LIBDIRS+=(/lib/x86_64-linux-gnu)
fi

# A stand-in for ssh: runs the "remote" command here, in an empty environment as a non-interactive ssh
# session would start it, and logs it. With a hostfile naming a second node, mpirun starts an orted there.
cat >fakessh <<'SSH'
#!/usr/bin/env bash
host=$1; shift
echo "to $host: $*" >>"$(dirname "$0")/fakessh.log"
exec env -i HOME="$HOME" PATH=/usr/bin:/bin OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 bash -c "$*"
SSH
chmod 755 fakessh
# The second node's name resolves (through /etc/hosts in the namespace) to an address that is not this
# machine's, so Open MPI takes it for another node.
NODE2=spotrun-bundle-node2
{ cat /etc/hosts; echo "198.51.100.77 $NODE2"; } >hosts
printf 'localhost slots=1\n%s slots=1\n' "$NODE2" >hostfile

# The CUDA libraries the bundle's programs take from the node, where this build has any: their folders are
# moved (bind-mounted elsewhere, hidden where they were) in a second namespace.
CUDA_PROGRAM=""
CUDA_DIRS=()
# test_fft first: it uses cuFFT itself and needs no tool of the system (test_checkpoint runs h5dump).
for w in "$BUNDLE"/bin/test_fft "$BUNDLE"/bin/test_*; do
    [[ -f "$w" ]] || continue
    needs=$(sed -n 's/^SPOTRUN_BUNDLE_NEEDS="\(.*\)".*/\1/p' "$w")
    [[ -n "$needs" ]] || continue
    CUDA_PROGRAM=$(basename "$w")
    for lib in $needs; do
        d=$(ldd "$BUILD/tests/$CUDA_PROGRAM" | awk -v l="$lib" '$1 == l { print $3 }')
        [[ -n "$d" && -e "$d" ]] && CUDA_DIRS+=("$(dirname "$(readlink -f "$d")")")
    done
    break
done
mapfile -t CUDA_DIRS < <(printf '%s\n' ${CUDA_DIRS[@]+"${CUDA_DIRS[@]}"} | sort -u | grep .)

cat >inner.sh <<'INNER'
# Runs inside the namespace. After the library folder is replaced only bash, its builtins and programs
# that need glibc alone (readlink, dirname, env) can start, besides the bundle.
MODE=$1 WORK=$2 BUILD=$3 BUNDLE=$4; shift 4
cd "$WORK" || exit 1
mount --bind "$WORK/hosts" /etc/hosts || exit 1
for d in /etc/openmpi /usr/share/openmpi /usr/local/lib; do
    [[ -d "$d" ]] && { mount -t tmpfs -o size=1m none "$d" || exit 1; }
done
if [[ $MODE == cuda ]]; then
    n=0
    for d in $CUDA_LIST; do
        mkdir -p "cuda-moved/$n" && mount --bind "$d" "cuda-moved/$n" && mount -t tmpfs -o size=1m none "$d" || exit 1
        MOVED+="${MOVED:+:}$WORK/cuda-moved/$n"; n=$((n + 1))
    done
fi
if [[ $MODE == main && -n "$NCCL_FILE" ]]; then
    : >"$WORK/empty-nccl" && mount --bind "$WORK/empty-nccl" "$NCCL_FILE" || exit 1
    echo "hidden NCCL: $NCCL_FILE"
fi
for d in $HIDE_LIST; do mount --bind "$WORK/skeleton" "$d" || exit 1; done
echo "hidden: $HIDE_LIST (only glibc and libtinfo left), /etc/openmpi, /usr/share/openmpi, /usr/local/lib"

if [[ $MODE == cuda ]]; then
    echo "moved: $CUDA_LIST"
    "$BUNDLE/bin/$CUDA_PROGRAM" --gtest_list_tests >cuda-missing.log 2>&1; echo "$CUDA_PROGRAM without CUDA exit $?"
    SPOTRUN_CUDA_LIBS="$MOVED" "$BUNDLE/bin/$CUDA_PROGRAM" --gtest_color=no >cuda-moved.log 2>&1
    echo "$CUDA_PROGRAM with SPOTRUN_CUDA_LIBS exit $?"
    exit 0
fi

# The proof that the hiding works: the normal build and the system's launcher cannot start.
"$BUILD/launcher/spotrun" --version >sys-spotrun.log 2>&1
echo "system spotrun exit $?"
mpirun --version >sys-mpirun.log 2>&1
echo "system mpirun exit $?"
for f in libmpi.so.40 libhdf5_openmpi.so.103 libfftw3.so.3 libstdc++.so.6 openmpi; do
    [[ -e "${HIDE_LIST%% *}/$f" ]] && echo "system $f still visible"
done
[[ -e /etc/openmpi/openmpi-mca-params.conf ]] && echo "system /etc/openmpi still visible"

"$BUNDLE/bin/spotrun" --version >b-version.log 2>&1; echo "bundle spotrun --version exit $?"
"$BUNDLE/bin/spotrun" run deck.toml --output-dir b1 --resume never >b1.log 2>&1; echo "bundle 1 rank exit $?"
"$BUNDLE/bin/mpirun" -np 2 "$BUNDLE/bin/spotrun" run deck.toml --output-dir b2 --resume never >b2.log 2>&1
echo "bundle mpirun -np 2 exit $?"
(source "$BUNDLE/env.sh" && echo "PATH mpirun: $(type -P mpirun)" &&
 mpirun -np 2 spotrun run deck.toml --output-dir b2path --resume never >b2path.log 2>&1; echo "PATH mpirun -np 2 exit $?")
"$BUNDLE/bin/mpirun" --mca plm_rsh_agent "$WORK/fakessh" --hostfile hostfile -np 2 \
    "$BUNDLE/bin/spotrun" run deck.toml --output-dir b2nodes --resume never >b2nodes.log 2>&1
echo "bundle mpirun on 2 nodes exit $?"
"$BUNDLE/bin/mpirun" -np 2 "$BUNDLE/bin/test_process_grid" --gtest_color=no >b-gtest.log 2>&1
echo "bundle test_process_grid -np 2 exit $?"
"$BUNDLE/bin/ompi_info" --path all --parsable >b-ompi-info.log 2>&1; echo "bundle ompi_info exit $?"
"$BUNDLE/bin/spotrun" submit deck.toml --dry-run >b-submit.log 2>&1; echo "bundle spotrun submit --dry-run exit $?"
if [[ -n "$NCCL_FILE" ]]; then
    "$BUNDLE/bin/mpirun" -np 2 "$BUNDLE/bin/spotrun" run deck.toml --output-dir b-nccl --resume never \
        --set comm.transport=nccl >b-nccl.log 2>&1
    echo "bundle comm.transport=nccl without NCCL exit $?"
fi
INNER
# NCCL where the dynamic loader finds it (the CUDA toolkit's): hidden in the namespace.
NCCL_FILE=$(/sbin/ldconfig -p 2>/dev/null | awk '$1 == "libnccl.so.2" { print $NF; exit }')
[[ -n "$NCCL_FILE" ]] && NCCL_FILE=$(readlink -f "$NCCL_FILE")
export HIDE_LIST="${HIDE_LIBDIRS[*]}" CUDA_LIST="${CUDA_DIRS[*]}" CUDA_PROGRAM NCCL_FILE
t=$SECONDS
timeout 120 unshare --mount --propagation private bash inner.sh main "$WORK" "$BUILD" "$BUNDLE" >inner.log 2>&1
rc=$?
sed 's/^/  ns: /' inner.log
[[ $rc -eq 0 ]] || fail "the namespace script exited $rc"
if [[ -n "$CUDA_PROGRAM" && ${#CUDA_DIRS[@]} -gt 0 && " ${CUDA_DIRS[*]} " != *" $LIBDIR "* ]]; then
    timeout 60 unshare --mount --propagation private bash inner.sh cuda "$WORK" "$BUILD" "$BUNDLE" >inner-cuda.log 2>&1
    rc=$?
    sed 's/^/  ns (CUDA moved): /' inner-cuda.log
    [[ $rc -eq 0 ]] || fail "the namespace script (CUDA moved) exited $rc"
else
    echo "no bundled test program takes CUDA libraries from a folder of their own: SPOTRUN_CUDA_LIBS not tried"
fi
echo "namespace runs took $((SECONDS - t)) s"

# --- 6. verdicts ---------------------------------------------------------------------------------------
expect_line() { grep -qxF "$1" "${3:-inner.log}" || fail "expected '$1' in the namespace; $2"; }
grep -q "^hidden:" inner.log || fail "the namespace did not hide the libraries"
grep -q "still visible" inner.log && fail "the system's libraries are still visible in the namespace: $(grep 'still visible' inner.log)"
grep -q "system spotrun exit 0" inner.log && fail "the normal build's spotrun started without the system's libraries"
grep -q "error while loading shared libraries" sys-spotrun.log ||
    fail "the normal build's spotrun did not fail for a missing library: $(cat sys-spotrun.log)"
grep -q "system mpirun exit 0" inner.log && fail "the system's mpirun started without the system's libraries"
expect_line "bundle spotrun --version exit 0" "$(cat b-version.log)"
expect_line "bundle 1 rank exit 0" "$(tail -n 20 b1.log)"
expect_line "bundle mpirun -np 2 exit 0" "$(tail -n 20 b2.log)"
expect_line "PATH mpirun: $BUNDLE/bin/mpirun" "env.sh does not put the bundle's mpirun first on PATH"
expect_line "PATH mpirun -np 2 exit 0" "$(tail -n 20 b2path.log)"
expect_line "bundle mpirun on 2 nodes exit 0" "$(tail -n 20 b2nodes.log)"
grep -q "^to $NODE2: .*$BUNDLE/bin/orted " fakessh.log ||
    fail "mpirun did not start the bundle's orted on the second node: $(cat fakessh.log 2>/dev/null)"
expect_line "bundle test_process_grid -np 2 exit 0" "$(tail -n 20 b-gtest.log)"
grep -q "PASSED" b-gtest.log || fail "test_process_grid did not pass: $(tail -n 20 b-gtest.log)"
expect_line "bundle ompi_info exit 0" "$(tail -n 20 b-ompi-info.log)"
grep -qx "path:prefix:$BUNDLE" b-ompi-info.log || fail "Open MPI's prefix is not the bundle: $(grep '^path:prefix' b-ompi-info.log)"
grep -qx "path:sysconfdir:$BUNDLE/etc/openmpi" b-ompi-info.log ||
    fail "Open MPI's configuration folder is not the bundle's: $(grep '^path:sysconfdir' b-ompi-info.log)"
expect_line "bundle spotrun submit --dry-run exit 0" "$(tail -n 20 b-submit.log)"
grep -qxF "SPOTRUN='$BUNDLE/bin/spotrun'" b-submit.log ||
    fail "spotrun submit from the bundle does not name the bundle's wrapper: $(grep '^SPOTRUN=' b-submit.log)"
if [[ -n "$NCCL_FILE" ]]; then
    grep -q "^hidden NCCL: " inner.log || fail "NCCL was not hidden"
    expect_line "bundle comm.transport=nccl without NCCL exit 2" "$(tail -n 20 b-nccl.log)"
    grep -q "libnccl.so.2 cannot be loaded" b-nccl.log || fail "the refusal does not name libnccl.so.2: $(tail -n 5 b-nccl.log)"
    echo "without NCCL the bundle runs (MPI transport) and refuses comm.transport = \"nccl\" naming libnccl.so.2"
else
    echo "no libnccl.so.2 on this machine: running without NCCL not tried"
fi
"$BUILD/launcher/spotrun" --version | cmp -s - b-version.log || fail "the bundle's spotrun is another version: $(cat b-version.log)"
if [[ -f inner-cuda.log ]]; then
    expect_line "$CUDA_PROGRAM with SPOTRUN_CUDA_LIBS exit 0" "$(tail -n 20 cuda-moved.log)" inner-cuda.log
    grep -q "found in none of" cuda-missing.log ||
        fail "no warning naming the missing CUDA library: $(tail -n 5 cuda-missing.log)"
    grep -q "$CUDA_PROGRAM without CUDA exit 0" inner-cuda.log &&
        fail "$CUDA_PROGRAM started with its CUDA libraries moved away (are they elsewhere on this machine?)"
    # The wrapper refuses with exit 2 and names what the bundle needs, never the loader's exit 127.
    expect_line "$CUDA_PROGRAM without CUDA exit 2" "$(tail -n 5 cuda-missing.log)" inner-cuda.log
    grep -q "this bundle needs CUDA [0-9]* libraries and a Linux driver >= " cuda-missing.log ||
        fail "the warning does not say which CUDA and driver the bundle needs: $(tail -n 5 cuda-missing.log)"
fi

for run in "1 b1 ref1" "2 b2 ref2" "2 b2path ref2" "2 b2nodes ref2"; do
    read -r np got want <<<"$run"
    [[ -s "$got/thermo.csv" ]] || fail "$got: no thermo.csv"
    cmp -s "$got/thermo.csv" "$want/thermo.csv" ||
        fail "$got/thermo.csv (bundle, $np ranks) differs from the normal build's: $(diff "$got/thermo.csv" "$want/thermo.csv" | head -n 6)"
    [[ $(wc -l <"$got/thermo.csv") -eq 7 ]] || fail "$got/thermo.csv has not 6 rows: $(cat "$got/thermo.csv")"
    ck=$(ls "$got"/*.h5 2>/dev/null | head -n 1)
    [[ -n "$ck" ]] || fail "$got: the bundle wrote no checkpoint"
    "$BUILD/launcher/spotrun" inspect "$ck" >"$got-inspect.log" 2>&1 ||
        fail "the normal build cannot read the bundle's checkpoint $ck: $(tail -n 5 "$got-inspect.log")"
done
echo "thermo.csv of the bundle (1 rank; 2 ranks on one node, through PATH, on two nodes) equal the normal build's byte for byte; its checkpoints read back"
rmdir "$WORK"/cuda-moved/* "$WORK/cuda-moved" 2>/dev/null
rm -rf "$WORK/node" "$WORK/skeleton" "$WORK"/{b1,b2,b2path,b2nodes,ref1,ref2}  # the logs stay
echo "PASS in $((SECONDS - T0)) s"
