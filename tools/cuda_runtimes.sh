#!/usr/bin/env bash
# Lists the copies of the CUDA runtime that one process of a program would hold, and fails where there is
# more than one: a build whose compiler driver links the static runtime (nvcc's default, cudart_static)
# into some files while others link the shared libcudart gets two runtimes, each with its own contexts,
# streams and error state, in one process. tools/make_bundle.sh refuses such a build.
#
# Usage: tools/cuda_runtimes.sh PROGRAM...
# Prints one line per copy: "shared PATH" (a libcudart.so the program loads) or "static FILE" (the program
# or a library it loads that defines the runtime's entry points itself); with several programs each line
# starts with "PROGRAM: " (a library shared by them is read once). The vendor's own libraries
# (libcudart, cuFFT, cuBLAS, NCCL, ...) are not counted: they keep their private copies hidden by design;
# nor are the system's packaged libraries (/lib, /usr/lib: no CUDA code of the build is there).
# Exit 0: at most one copy in each program; 1: more than one in some program (named on stderr); 2: bad usage
# or an unreadable program.
# Needs ldd and readelf.
set -euo pipefail

die() { echo "cuda_runtimes.sh: $*" >&2; exit 2; }
[[ $# -ge 1 ]] || die "usage: cuda_runtimes.sh PROGRAM..."
for tool in ldd readelf; do command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed (Debian: libc-bin, binutils)"; done
for p in "$@"; do
    [[ -f "$p" && -r "$p" ]] || die "'$p' is not a readable file"
    readelf -h "$p" >/dev/null 2>&1 || die "'$p' is not an ELF file"
done

# The vendor's libraries (is_cuda): their private runtimes are hidden and do not count.
# shellcheck source=cuda_libraries.sh
source "$(dirname "${BASH_SOURCE[0]}")/cuda_libraries.sh"

# defines_runtime FILE: FILE defines (not merely uses) the runtime's registration entry point or
# cudaGetDeviceCount, in its static or dynamic symbol table; remembered per file. (Outputs are captured
# before they are searched: no pipeline may end early.)
declare -A DEFINES=()
defines_runtime() {
    if [[ -z "${DEFINES[$1]:-}" ]]; then
        local syms
        syms="$(readelf -sW "$1" 2>/dev/null || true)"
        if awk '$7 != "UND" && ($8 ~ /^__cudaRegisterFatBinary(@|$)/ || $8 ~ /^cudaGetDeviceCount(@|$)/) { found = 1 }
                END { exit !found }' <<<"$syms"; then
            DEFINES[$1]=yes
        else
            DEFINES[$1]=no
        fi
    fi
    [[ "${DEFINES[$1]}" == yes ]]
}

RC=0
PREFIX=""
for PROGRAM in "$@"; do
    [[ $# -eq 1 ]] || PREFIX="$PROGRAM: "
    COPIES=()
    LDD="$(ldd "$PROGRAM" 2>/dev/null || true)"
    defines_runtime "$PROGRAM" && COPIES+=("static $PROGRAM")
    while read -r soname arrow path rest; do
        [[ "$arrow" == "=>" && -e "$path" ]] || continue
        path="$(readlink -f "$path")"
        if [[ "$soname" == libcudart.so* ]]; then
            COPIES+=("shared $path")
        elif [[ "$path" != /lib/* && "$path" != /usr/lib/* ]] && ! is_cuda "$soname" && defines_runtime "$path"; then
            COPIES+=("static $path")
        fi
    done <<<"$LDD"
    for c in ${COPIES[@]+"${COPIES[@]}"}; do echo "$PREFIX$c"; done
    if [[ ${#COPIES[@]} -gt 1 ]]; then
        {
            echo "cuda_runtimes.sh: $PROGRAM would hold ${#COPIES[@]} CUDA runtimes in one process:"
            for c in "${COPIES[@]}"; do echo "  $c"; done
            echo "  link one runtime everywhere: the shared libcudart (nvcc -cudart shared, CUDA::cudart) or the static one alone"
        } >&2
        RC=1
    fi
done
exit $RC
