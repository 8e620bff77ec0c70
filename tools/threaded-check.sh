#!/usr/bin/env bash
# The threaded leg (docs/gpu.md, "The threaded check"): spotrun's device kernels on more than one thread,
# under the Kokkos of the CUDA build, before any GPU runs them.
#
#   tools/threaded-check.sh [--kokkos-tar F] [--work DIR] [--jobs N]
#
# 1. Builds Kokkos 4.6.01 from its release tarball (default: ../shared/deps/kokkos-4.6.01.tar.gz next to
#    the repository) with the Serial and OpenMP backends, bounds checking (Kokkos_ENABLE_DEBUG_BOUNDS_CHECK)
#    and shared libraries, into DIR (default: ${TMPDIR:-/tmp}/spotrun-threaded-check; never inside the
#    repository). An install of the same tarball and options already in DIR is reused.
# 2. Builds spotrun's libraries and the device-relevant test programs against it
#    (-DCMAKE_PREFIX_PATH=DIR/kokkos-install).
# 3. Runs them (ctest) with OMP_NUM_THREADS=2 under the device build's rules (SPOTRUN_TEST_DEVICE_RULES=1:
#    transports and FFT backends chosen as on a GPU): MD forces, neighbour lists (the device build too),
#    halos, migration, FFTs, the fluid, the transports, checkpoint round trips.
# Prints the time of each stage and "N passed, M failed" alone on a line; exits 0 only when every test
# passed (a skipped test counts as failed: this leg runs everything it lists). ccache is used where
# installed. Exit 2: usage or a missing tarball; 1: a build or a test failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TAR="$ROOT/../shared/deps/kokkos-4.6.01.tar.gz"
WORK="${TMPDIR:-/tmp}/spotrun-threaded-check"
JOBS="$(nproc 2>/dev/null || echo 2)"

usage() { sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --kokkos-tar) TAR="${2:?--kokkos-tar needs a file}"; shift 2 ;;
        --work) WORK="${2:?--work needs a directory}"; shift 2 ;;
        --jobs) JOBS="${2:?--jobs needs a number}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

log() { echo "threaded-check: $*"; }
[[ -f "$TAR" ]] || { log "no Kokkos tarball at $TAR (--kokkos-tar F)"; exit 2; }
TAR="$(cd "$(dirname "$TAR")" && pwd)/$(basename "$TAR")"
mkdir -p "$WORK" || { log "cannot create $WORK"; exit 2; }
WORK="$(cd "$WORK" && pwd)"
case "$WORK/" in
    "$ROOT"/*) log "the work directory $WORK is inside the repository; choose one outside it (--work DIR)"; exit 2 ;;
esac

# The device-relevant test programs and the ctest names they run under (rank counts 1 and 2; comm at 3
# too, for a rank with two neighbours in one direction).
TARGETS=(test_pair_lj test_pair_morse test_bonded_styles test_atom_map test_bonded_forces test_md_molecules test_md_minimize test_md_npt test_atom_fields test_md_charges test_kspace test_force_rows test_neighbor_paths test_md_physics test_md_types test_md_overlap
         test_md_energy test_comm test_particles_halo test_fft test_fft_batch test_fft_gradient test_fluid test_checkpoint
         test_restore_validation)
TESTS='^(pair_lj|pair_morse\.np[13]|bonded_styles|atom_map|bonded_forces|md_molecules\.np[12]|md_minimize\.np[12]|md_npt\.np[12]|atom_fields\.np[12]|md_charges\.np[12]|kspace\.np[12]|force_rows|neighbor_paths\.np[12]|md_physics\.np[12]|md_types\.np[12]|md_overlap\.np[12]|md_energy\.np[12]|comm\.np[123]|particles_halo\.np[12]|fft\.np[12]|fft_batch\.np[12]|fft_gradient\.np[12]|fluid\.np[12]|checkpoint\.np[12]|restore_validation\.np[12])$'

launcher=()
if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
now() { date +%s; }

# ---- 1. Kokkos ----------------------------------------------------------------------------------------
KOKKOS_OPTIONS=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON
                -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_DEBUG_BOUNDS_CHECK=ON
                -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF -DKokkos_ENABLE_BENCHMARKS=OFF)
stamp="$(sha256sum "$TAR" | cut -c1-16) ${KOKKOS_OPTIONS[*]}"
KOKKOS="$WORK/kokkos-install"
t0=$(now)
if [[ -f "$KOKKOS/.spotrun-stamp" && "$(cat "$KOKKOS/.spotrun-stamp")" == "$stamp" ]]; then
    log "Kokkos: reusing $KOKKOS"
else
    log "Kokkos: building $(basename "$TAR") (Serial + OpenMP, bounds checking) in $WORK"
    rm -rf "$WORK/kokkos-src" "$WORK/kokkos-build" "$KOKKOS"
    mkdir -p "$WORK/kokkos-src"
    tar -xzf "$TAR" -C "$WORK/kokkos-src" --strip-components=1 || { log "cannot unpack $TAR"; exit 2; }
    if ! { cmake -S "$WORK/kokkos-src" -B "$WORK/kokkos-build" "${generator[@]}" "${launcher[@]}" \
               -DCMAKE_INSTALL_PREFIX="$KOKKOS" "${KOKKOS_OPTIONS[@]}" &&
           cmake --build "$WORK/kokkos-build" -j"$JOBS" &&
           cmake --install "$WORK/kokkos-build"; } >"$WORK/kokkos.log" 2>&1; then
        tail -n 40 "$WORK/kokkos.log"
        log "the Kokkos build failed (log: $WORK/kokkos.log)"
        echo "0 passed, 1 failed"
        exit 1
    fi
    echo "$stamp" >"$KOKKOS/.spotrun-stamp"
fi
t1=$(now)
log "Kokkos: $((t1 - t0)) s"

# ---- 2. spotrun against it -----------------------------------------------------------------------------
BUILD="$WORK/spotrun-build"
# A build of another checkout (the work folder outlives it: the default one is shared by every clone on
# the machine) is made anew; CMake refuses a cache of another source folder.
if [[ -f "$BUILD/CMakeCache.txt" ]] &&
   [[ "$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")" != "$ROOT" ]]; then
    log "spotrun: $BUILD was built from another checkout; building anew"
    rm -rf "$BUILD"
fi
# --bind-to none: each rank's two OpenMP threads may use both cores (Open MPI binds one core per rank at
# two ranks or fewer).
if ! { cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
           -DCMAKE_PREFIX_PATH="$KOKKOS" -DSPOTRUN_BUILD_TESTS=ON -DSPOTRUN_BUILD_BENCH=OFF \
           "-DMPIEXEC_PREFLAGS=--bind-to;none" &&
       cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}"; } >"$WORK/spotrun-build.log" 2>&1; then
    grep -E 'error|Error' "$WORK/spotrun-build.log" | head -n 40
    tail -n 20 "$WORK/spotrun-build.log"
    log "the spotrun build against Kokkos 4.6 failed (log: $WORK/spotrun-build.log)"
    echo "0 passed, 1 failed"
    exit 1
fi
if ! grep -q 'spotrun: Kokkos 4\.6' "$WORK/spotrun-build.log"; then
    grep 'spotrun: Kokkos' "$WORK/spotrun-build.log"
    log "spotrun did not take the Kokkos 4.6 of $KOKKOS (log: $WORK/spotrun-build.log)"
    echo "0 passed, 1 failed"
    exit 1
fi
grep -m1 'spotrun: Kokkos' "$WORK/spotrun-build.log" | sed 's/^-- /threaded-check: /'
t2=$(now)
log "spotrun: $((t2 - t1)) s"

# ---- 3. the tests, threaded, under the device build's rules -------------------------------------------
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false OMP_WAIT_POLICY=passive SPOTRUN_TEST_DEVICE_RULES=1
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"
ctest --test-dir "$BUILD" -R "$TESTS" --output-on-failure -j1 >"$WORK/ctest.log" 2>&1
cat "$WORK/ctest.log"
t3=$(now)
log "tests: $((t3 - t2)) s; total $((t3 - t0)) s (Kokkos $((t1 - t0)) s, spotrun $((t2 - t1)) s)"

# Every test line of ctest: "Test #N: name ....   Passed" (or ***Failed, ***Timeout, ***Skipped, ...).
passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed +[0-9.]+ sec' "$WORK/ctest.log")
total=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$WORK/ctest.log")
failed=$((total - passed))
expected=$(ctest --test-dir "$BUILD" -R "$TESTS" -N 2>/dev/null | grep -cE '^ *Test +#')
if (( total < expected )); then failed=$((failed + expected - total)); fi
if (( expected == 0 )); then
    log "no test matched: the build has none of the listed tests"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
(( failed == 0 ))
