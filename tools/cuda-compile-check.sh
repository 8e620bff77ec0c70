#!/usr/bin/env bash
# The CUDA build of every target (docs/gpu.md, "Building for a GPU"), compiled and linked where no GPU is.
#
#   tools/cuda-compile-check.sh [--kokkos-tar F] [--work DIR] [--jobs N] [--arch KOKKOS_ARCH:SM]
#
# 1. Unpacks Kokkos 4.6.01 (default: ../shared/deps/kokkos-4.6.01.tar.gz next to the repository) into DIR
#    (default: ${TMPDIR:-/tmp}/spotrun-cuda-check; never inside the repository), changes the three CUDA
#    runtime calls whose signatures CUDA 13 changed (docs/gpu.md's table) and builds it with the Serial and
#    CUDA backends for the architecture (default HOPPER90:sm_90, an H100/H200). An install of the same
#    tarball, patch and options already in DIR is reused.
# 2. Configures spotrun against it with nvcc_wrapper (tests and benchmarks on) and builds every target.
# Prints the time of each stage, the number of warnings of spotrun's own sources and
# "cuda build: N targets, M errors" alone on a line; exits 0 only when everything compiled and linked.
# Needs nvcc (CUDA_HOME, default /usr/local/cuda). Exit 2: usage, a missing tarball or no nvcc; 1: a build
# failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TAR="$ROOT/../shared/deps/kokkos-4.6.01.tar.gz"
WORK="${TMPDIR:-/tmp}/spotrun-cuda-check"
JOBS="$(nproc 2>/dev/null || echo 2)"
ARCH="HOPPER90:sm_90"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"

usage() { sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --kokkos-tar) TAR="${2:?--kokkos-tar needs a file}"; shift 2 ;;
        --work) WORK="${2:?--work needs a directory}"; shift 2 ;;
        --jobs) JOBS="${2:?--jobs needs a number}"; shift 2 ;;
        --arch) ARCH="${2:?--arch needs KOKKOS_ARCH:SM, e.g. AMPERE80:sm_80}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done

log() { echo "cuda-compile-check: $*"; }
[[ "$ARCH" =~ ^([A-Z]+[0-9]+):(sm_[0-9]+)$ ]] ||
    { log "--arch '$ARCH': expected KOKKOS_ARCH:SM such as HOPPER90:sm_90 or AMPERE80:sm_80"; exit 2; }
KARCH="${BASH_REMATCH[1]}"
SM="${BASH_REMATCH[2]}"
[[ -f "$TAR" ]] || { log "no Kokkos tarball at $TAR (--kokkos-tar F)"; exit 2; }
[[ -x "$CUDA_HOME/bin/nvcc" ]] || { log "no nvcc at $CUDA_HOME/bin/nvcc (set CUDA_HOME)"; exit 2; }
TAR="$(cd "$(dirname "$TAR")" && pwd)/$(basename "$TAR")"
mkdir -p "$WORK" || { log "cannot create $WORK"; exit 2; }
WORK="$(cd "$WORK" && pwd)"
case "$WORK/" in
    "$ROOT"/*) log "the work directory $WORK is inside the repository; choose one outside it (--work DIR)"; exit 2 ;;
esac
export PATH="$CUDA_HOME/bin:$PATH" CUDA_HOME

launcher=()
if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
now() { date +%s; }

# The CUDA 13 signatures: cudaGraphAddDependencies takes edge data, cudaMemAdvise and cudaMemPrefetchAsync
# a cudaMemLocation (and the prefetch flags). Each call is kept for older CUDA behind CUDART_VERSION.
patch_kokkos() {
    local f="$1/core/src/Cuda/Kokkos_Cuda_Instance.hpp"
    [[ -f "$f" ]] || { log "no $f in the tarball"; return 1; }
    perl -0pi -e '
        s{return cudaGraphAddDependencies\(graph, from, to, numDependencies\);}
         {#if CUDART_VERSION >= 13000\n    return cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies);\n#else\n    return cudaGraphAddDependencies(graph, from, to, numDependencies);\n#endif}
         or die "cudaGraphAddDependencies call not found\n";
        s{return cudaMemAdvise\(devPtr, count, advice, device\);}
         {#if CUDART_VERSION >= 13000\n    cudaMemLocation loc{};\n    loc.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;\n    loc.id = device;\n    return cudaMemAdvise(devPtr, count, advice, loc);\n#else\n    return cudaMemAdvise(devPtr, count, advice, device);\n#endif}
         or die "cudaMemAdvise call not found\n";
        s{return cudaMemPrefetchAsync\(devPtr, count, dstDevice,\s*get_input_stream\(stream\)\);}
         {#if CUDART_VERSION >= 13000\n    cudaMemLocation loc{};\n    loc.type = dstDevice == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;\n    loc.id = dstDevice;\n    return cudaMemPrefetchAsync(devPtr, count, loc, 0, get_input_stream(stream));\n#else\n    return cudaMemPrefetchAsync(devPtr, count, dstDevice, get_input_stream(stream));\n#endif}
         or die "cudaMemPrefetchAsync call not found\n";
    ' "$f"
}

# ---- 1. Kokkos (CUDA) ---------------------------------------------------------------------------------
KOKKOS_OPTIONS=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON
                -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON
                "-DKokkos_ARCH_$KARCH=ON" -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF
                -DKokkos_ENABLE_BENCHMARKS=OFF)
stamp="$(sha256sum "$TAR" "${BASH_SOURCE[0]}" | cut -c1-16 | tr '\n' ' ')${KOKKOS_OPTIONS[*]}"
KOKKOS="$WORK/kokkos-install"
t0=$(now)
if [[ -f "$KOKKOS/.spotrun-stamp" && "$(cat "$KOKKOS/.spotrun-stamp")" == "$stamp" ]]; then
    log "Kokkos: reusing $KOKKOS"
else
    log "Kokkos: building $(basename "$TAR") (Serial + CUDA, $KARCH, CUDA 13 calls changed) in $WORK"
    rm -rf "$WORK/kokkos-src" "$WORK/kokkos-build" "$KOKKOS"
    mkdir -p "$WORK/kokkos-src"
    tar -xzf "$TAR" -C "$WORK/kokkos-src" --strip-components=1 || { log "cannot unpack $TAR"; exit 2; }
    patch_kokkos "$WORK/kokkos-src" || { log "the CUDA 13 change does not apply to $(basename "$TAR")"; exit 1; }
    if ! { cmake -S "$WORK/kokkos-src" -B "$WORK/kokkos-build" "${generator[@]}" "${launcher[@]}" \
               -DCMAKE_INSTALL_PREFIX="$KOKKOS" -DCMAKE_CXX_COMPILER="$WORK/kokkos-src/bin/nvcc_wrapper" \
               "-DCMAKE_CXX_FLAGS=-arch=$SM" "${KOKKOS_OPTIONS[@]}" &&
           cmake --build "$WORK/kokkos-build" -j"$JOBS" &&
           cmake --install "$WORK/kokkos-build"; } >"$WORK/kokkos.log" 2>&1; then
        grep -E 'error' "$WORK/kokkos.log" | head -n 20
        tail -n 20 "$WORK/kokkos.log"
        log "the Kokkos build failed (log: $WORK/kokkos.log)"
        echo "cuda build: 0 targets, 1 errors"
        exit 1
    fi
    echo "$stamp" >"$KOKKOS/.spotrun-stamp"
fi
t1=$(now)
log "Kokkos: $((t1 - t0)) s"

# ---- 2. spotrun, every target ------------------------------------------------------------------------
BUILD="$WORK/spotrun-build"
if [[ -f "$BUILD/CMakeCache.txt" ]] &&
   [[ "$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")" != "$ROOT" ]]; then
    log "spotrun: $BUILD was built from another checkout; building anew"
    rm -rf "$BUILD"
fi
if ! cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_PREFIX_PATH="$KOKKOS" -DCMAKE_CXX_COMPILER="$KOKKOS/bin/nvcc_wrapper" \
         "-DCMAKE_CXX_FLAGS=-arch=$SM" -DSPOTRUN_SIMD=AVX2 -DSPOTRUN_BUILD_TESTS=ON \
         -DSPOTRUN_BUILD_BENCH=ON >"$WORK/spotrun-configure.log" 2>&1; then
    tail -n 30 "$WORK/spotrun-configure.log"
    log "configuring spotrun against the CUDA Kokkos failed (log: $WORK/spotrun-configure.log)"
    echo "cuda build: 0 targets, 1 errors"
    exit 1
fi
grep -m1 'spotrun: Kokkos' "$WORK/spotrun-configure.log" | sed 's/^-- /cuda-compile-check: /'
if ! grep -qiE 'spotrun: Kokkos 4\.6.*cuda' "$WORK/spotrun-configure.log"; then
    log "spotrun did not take the CUDA Kokkos 4.6 of $KOKKOS (log: $WORK/spotrun-configure.log)"
    echo "cuda build: 0 targets, 1 errors"
    exit 1
fi
# Every target that can be built is (ninja -k 0, make -k): one error does not hide the others.
keep_going=(-k)
if [[ ${#generator[@]} -gt 0 ]]; then keep_going=(-k 0); fi
cmake --build "$BUILD" -j"$JOBS" -- "${keep_going[@]}" >"$WORK/spotrun-build.log" 2>&1
status=$?
t2=$(now)
log "spotrun: $((t2 - t1)) s"
errors=$(grep -cE '(error|Error)( [0-9]+)?:|undefined reference' "$WORK/spotrun-build.log")
warnings=$(grep -E 'warning' "$WORK/spotrun-build.log" | grep -cE "^$ROOT/|^(comm|io|solvers|launcher|bench|tests)/")
targets=$(cmake --build "$BUILD" --target help 2>/dev/null |
          grep -cE '^(\.\.\. )?(spotrun|test_|bench_|lib)[A-Za-z0-9_]*(: phony)?$')
log "warnings in spotrun's sources: $warnings"
if (( status != 0 )); then
    grep -E '(error|Error)( [0-9]+)?:|undefined reference' "$WORK/spotrun-build.log" | head -n 40
    log "the CUDA build of spotrun failed (log: $WORK/spotrun-build.log)"
    (( errors > 0 )) || errors=1
fi
echo "cuda build: $targets targets, $errors errors"
(( status == 0 ))
