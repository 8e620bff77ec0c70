#!/usr/bin/env bash
# tools/cuda_runtimes.sh against small programs built here with the C compiler: a stand-in for the shared
# CUDA runtime (a library with libcudart's soname) and for the static one (an object that defines the
# runtime's entry points, as cudart_static does inside whatever links it). No CUDA toolkit is needed.
# Oracles: a program with one runtime (shared or static) passes with that one copy listed; a program that
# defines the runtime and also loads libcudart, or loads a library of its own that defines it, fails (exit 1)
# naming both copies; a vendor library's private copy (NCCL, cuFFT) is not counted.
# Usage: cuda_runtimes_test.sh SOURCE_DIR WORKDIR
set -u
SRC=$1
W=$2
TOOL="$SRC/tools/cuda_runtimes.sh"
CC=${CC:-cc}
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }
command -v "$CC" >/dev/null || { echo "SKIP: no C compiler ($CC)"; exit 77; }

cat >rt.c <<'C'
int cudaGetDeviceCount(int* n) { *n = 0; return 0; }
void** __cudaRegisterFatBinary(void* p) { return (void**)p; }
C
cat >use.c <<'C'
int cudaGetDeviceCount(int* n);
int use_runtime(void) { int n = 1; cudaGetDeviceCount(&n); return n; }
C
cat >main.c <<'C'
int use_runtime(void);
int main(void) { return use_runtime(); }
C
cat >main_direct.c <<'C'
int cudaGetDeviceCount(int* n);
int main(void) { int n = 1; cudaGetDeviceCount(&n); return n; }
C
build() { "$CC" "$@" || { echo "FAIL: $CC $*"; exit 1; }; }
build -shared -fPIC rt.c -Wl,-soname,libcudart.so.13 -o libcudart.so.13          # the shared runtime
build -shared -fPIC rt.c use.c -Wl,-soname,libmine.so -o libmine.so             # a library with a static copy
build -shared -fPIC rt.c use.c -Wl,-soname,libnccl.so.2 -o libnccl.so.2         # a vendor library's private copy
build -shared -fPIC use.c -Wl,-soname,libuser.so -L. -l:libcudart.so.13 -Wl,-rpath,"$W" -o libuser.so
build main_direct.c -Wl,--no-as-needed -L. -l:libcudart.so.13 -Wl,-rpath,"$W" -o shared_only
build main_direct.c rt.c -o static_only
build main.c rt.c use.c -Wl,--no-as-needed -L. -luser -Wl,-rpath,"$W" -o static_and_shared
build main.c -Wl,--no-as-needed -L. -luser -lmine -Wl,-rpath,"$W" -o lib_and_shared
build main.c -Wl,--no-as-needed -L. -luser -l:libnccl.so.2 -Wl,-rpath,"$W" -o vendor_and_shared

# check PROGRAM RC EXPECTED_LINES...: the tool's exit code and the copies it lists, in order.
check() {
    local prog=$1 want_rc=$2 out rc
    shift 2
    out=$("$TOOL" "./$prog" 2>err.txt)
    rc=$?
    [[ $rc -eq $want_rc ]] || fail "$prog: exit $rc, expected $want_rc ($(cat err.txt))"
    local want
    want=$(printf '%s\n' "$@")
    [[ "$out" == "$want" ]] || fail "$prog: listed '$out', expected '$want'"
    if [[ $want_rc -eq 1 ]]; then
        grep -q "would hold $# CUDA runtimes in one process" err.txt || fail "$prog: no verdict on stderr: $(cat err.txt)"
    fi
}
check shared_only 0 "shared $W/libcudart.so.13"
check static_only 0 "static ./static_only"
check static_and_shared 1 "static ./static_and_shared" "shared $W/libcudart.so.13"
check lib_and_shared 1 "static $W/libmine.so" "shared $W/libcudart.so.13"
check vendor_and_shared 0 "shared $W/libcudart.so.13"
# Several programs at once: every line names its program; one bad program fails the whole call.
out=$("$TOOL" ./shared_only ./static_and_shared ./static_only 2>err.txt)
rc=$?
[[ $rc -eq 1 ]] || fail "three programs, one with two runtimes: exit $rc"
want="./shared_only: shared $W/libcudart.so.13
./static_and_shared: static ./static_and_shared
./static_and_shared: shared $W/libcudart.so.13
./static_only: static ./static_only"
[[ "$out" == "$want" ]] || fail "three programs: listed '$out'"
grep -q "static_and_shared would hold 2 CUDA runtimes" err.txt || fail "three programs: $(cat err.txt)"
"$TOOL" ./shared_only ./static_only >/dev/null 2>&1 || fail "two programs with one runtime each failed"
"$TOOL" "$W/no-such-file" >/dev/null 2>err.txt
[[ $? -eq 2 ]] && grep -q "no-such-file' is not a readable file" err.txt || fail "a missing program: $(cat err.txt)"
"$TOOL" rt.c >/dev/null 2>err.txt
[[ $? -eq 2 ]] && grep -q "is not an ELF file" err.txt || fail "a text file: $(cat err.txt)"

[[ $FAILED -eq 0 ]] && echo "PASS: one CUDA runtime per process" || exit 1
