#!/usr/bin/env bash
# Makes a relocatable spotrun bundle from a build directory: a folder that runs on a machine with glibc
# (and, for GPU builds, the NVIDIA driver and CUDA libraries) but without Open MPI, HDF5, FFTW, Kokkos or
# any other library the build linked. See docs/gpu.md, "A bundle for bare GPU nodes".
#
# Usage: tools/make_bundle.sh [--build-dir DIR] [--output DIR] [--tar] [--max-mib N] [--max-tar-mib N]
#                             [--references CPU_BUILD] [--no-tests] [--no-bench]
#   --build-dir DIR  the build to pack (default: build/ of this source tree); it must hold launcher/spotrun
#   --output DIR     the bundle folder to write (default: BUILD/spotrun-bundle); an older bundle there is
#                    replaced, any other existing folder is refused
#   --tar            also write OUTPUT.tar.gz (one top folder, the bundle's name)
#   --max-mib N      fail when the bundle folder is larger than N MiB (default 64; 0: no limit)
#   --max-tar-mib N  with --tar, fail when OUTPUT.tar.gz is larger than N MiB (default 64; 0: no limit)
#   --references CPU_BUILD   run tools/gpu-check.sh --make-references CPU_BUILD into the bundle (the CPU
#                    thermo that gpu-check.sh compares a GPU run against)
#   --no-tests, --no-bench   leave out the test programs (BUILD/tests), the benchmarks (BUILD/bench)
#
# Layout of the bundle:
#   bin/        wrapper scripts: spotrun, the test and benchmark programs, mpirun (= mpiexec, orterun),
#               orted, ompi_info. Each sources env.sh and execs its program from libexec/.
#   libexec/    the programs themselves (copies stripped with strip --strip-unneeded)
#   lib/        every shared library the programs and Open MPI's components need, except glibc's, the
#               NVIDIA driver's, CUDA's and the RDMA stack's (rdma-core), which come from the node; the CUDA
#               runtime (libcudart) is packed, the build's one copy
#   lib/driver-stub/  the CUDA toolkit's stub libcuda.so.1 (CUDA builds): env.sh uses it only on a node
#               without the NVIDIA driver, where --version, --help and info then answer and the rest exits 2
#   lib/cxx/    libstdc++ and libgcc_s of the build machine (SPOTRUN_BUNDLE_SYSTEM_CXX=1 leaves them out)
#   lib/openmpi/, share/openmpi/, etc/openmpi/   Open MPI's components (shared memory, TCP and the rest,
#               not the fabric transports: UCX, OFI, openib, PSM), help files and configuration
#   lib/pmix/, share/pmix/, etc/pmix/            PMIx's, when Open MPI uses an external PMIx
#   lib/hwloc/  hwloc's plugins (PCI topology)
#   share/spotrun/source/   the decks (inputs/, bench/*.toml), tests/data and docs/ the programs read
#   gpu-check.sh  tools/gpu-check.sh: the one-command check of a GPU node (docs/gpu.md)
#   env.sh      sets PATH, LD_LIBRARY_PATH (with the node's CUDA folders), OPAL_*, PMIX_*, HWLOC_PLUGINS_PATH,
#               SPOTRUN_TEST_DATA_DIR and SPOTRUN_SOURCE_DIR (the tests' data in share/spotrun/source)
#   bundle-info.txt   what was packed, from where, and what the node must provide (glibc, the CUDA runtime
#               the build used and the smallest driver for it)
#   share/spotrun/gpu-check/   the CPU references of gpu-check.sh (--references)
#
# No pipeline here may end early: under pipefail a reader that stops first (grep -q, head, sed q) makes
# the writer fail with SIGPIPE at random. Outputs are captured into variables and then searched.
set -euo pipefail

SOURCE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD_DIR="$SOURCE_DIR/build"
OUTPUT=""
MAKE_TAR=0
MAX_MIB=64
MAX_TAR_MIB=64
REFERENCES=""
PROGRAM_DIRS=(tests bench)

die() { echo "make_bundle.sh: $*" >&2; exit 1; }
note() { echo "make_bundle.sh: $*"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) BUILD_DIR="${2:?--build-dir needs a folder}"; shift 2 ;;
        --output) OUTPUT="${2:?--output needs a folder}"; shift 2 ;;
        --tar) MAKE_TAR=1; shift ;;
        --max-mib) MAX_MIB="${2:?--max-mib needs a number}"; shift 2 ;;
        --max-tar-mib) MAX_TAR_MIB="${2:?--max-tar-mib needs a number}"; shift 2 ;;
        --references) REFERENCES="${2:?--references needs a CPU build folder}"; shift 2 ;;
        --no-tests) PROGRAM_DIRS=("${PROGRAM_DIRS[@]/tests}"); shift ;;
        --no-bench) PROGRAM_DIRS=("${PROGRAM_DIRS[@]/bench}"); shift ;;
        -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "make_bundle.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$MAX_MIB" =~ ^[0-9]+$ ]] || die "--max-mib wants a whole number of MiB, not '$MAX_MIB'"
[[ "$MAX_TAR_MIB" =~ ^[0-9]+$ ]] || die "--max-tar-mib wants a whole number of MiB, not '$MAX_TAR_MIB'"
if [[ -n "$REFERENCES" ]]; then
    [[ -x "$REFERENCES/launcher/spotrun" ]] || die "--references: '$REFERENCES' has no launcher/spotrun (a CPU build)"
    REFERENCES="$(cd "$REFERENCES" && pwd -P)"
fi

[[ -d "$BUILD_DIR" ]] || die "no build directory '$BUILD_DIR' (configure and build first: cmake -S $SOURCE_DIR -B $BUILD_DIR && cmake --build $BUILD_DIR)"
BUILD_DIR="$(cd "$BUILD_DIR" && pwd -P)"
SPOTRUN_BIN="$BUILD_DIR/launcher/spotrun"
[[ -f "$SPOTRUN_BIN" && -x "$SPOTRUN_BIN" ]] ||
    die "'$BUILD_DIR' has no launcher/spotrun: build it first (cmake --build $BUILD_DIR); nothing was written"
[[ -n "$OUTPUT" ]] || OUTPUT="$BUILD_DIR/spotrun-bundle"
for tool in ldd objdump strip; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed (Debian: binutils, libc-bin)"
done

# --- the output folder: new, or an older bundle (marked by .spotrun-bundle) -----------------------------
# The bundle is made in OUTPUT.partial.PID and takes OUTPUT's place only when it is complete and within
# the size limit (nothing in it depends on where it lies).
mkdir -p "$(dirname "$OUTPUT")"
OUTPUT="$(cd "$(dirname "$OUTPUT")" && pwd -P)/$(basename "$OUTPUT")"
if [[ -e "$OUTPUT" && ! -f "$OUTPUT/.spotrun-bundle" ]]; then
    die "'$OUTPUT' exists and is not a spotrun bundle; refusing to replace it (choose another --output)"
fi
B="$OUTPUT.partial.$$"
trap 'rm -rf "$B"' EXIT
mkdir -p "$B"/{bin,libexec,lib/cxx,lib/openmpi,share,etc}
touch "$B/.spotrun-bundle"

# --- classes of libraries --------------------------------------------------------------------------------
# glibc: never packed (a libc must match its loader and the kernel interface; the node has its own).
is_glibc() {
    [[ "$1" =~ ^(ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1|libc\.so\.6|libm\.so\.6|libmvec\.so\.1|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1|libnsl\.so\.1|libBrokenLocale\.so\.1|libthread_db\.so\.1|libc_malloc_debug\.so\.0|libnss_[a-z0-9_]+\.so\.2|linux-vdso\.so\.1)$ ]]
}
# The NVIDIA driver and the CUDA toolkit (math libraries, NCCL): taken from the node (the CUDA runtime,
# libcudart, is packed: see resolve_deps). is_cuda SONAME, from tools/cuda_libraries.sh.
# shellcheck source=cuda_libraries.sh
source "$SOURCE_DIR/tools/cuda_libraries.sh"
# rdma-core (verbs, rdmacm, EFA, the NIC providers): paired with the node's kernel drivers, taken from the
# node where it has them. Only the optional Open MPI transports (UCX, OFI, openib) need them.
is_rdma() {
    [[ "$1" =~ ^lib(ibverbs|rdmacm|efa|mlx4|mlx5|ibumad|ibmad|ibnetdisc|hns|bnxt_re|cxgb4|irdma|mana|qedr|vmw_pvrdma|siw|rxe)\.so ]] ||
        [[ "$1" =~ -rdmav[0-9]+\.so$ ]]
}
# Fabric stacks (UCX, libfabric, PSM, HCOLL, MXM, Portals): the Open MPI components that need them (and
# rdma-core) are left out; the bundle's MPI runs over shared memory and TCP.
is_fabric() {
    is_rdma "$1" || [[ "$1" =~ ^lib(ucp|uct|ucs|ucm|fabric|psm2|psm_infinipath|infinipath|hcoll|mxm|portals|ocoms|sharp_coll)\.so ]]
}
is_cxx() { [[ "$1" =~ ^(libstdc\+\+\.so\.6|libgcc_s\.so\.1)$ ]]; }

declare -A PACKED=()        # soname -> the file it was copied from
declare -A NODE_LIBS=()     # soname -> 1: taken from the node by something packed
FAILED_DEPS=""              # set by resolve_deps: the libraries it could not find
CUDART_PATH=""              # set by resolve_deps: where this machine has the CUDA runtime the programs need

# resolve_deps FILE: lists in FOUND_DEPS every library FILE needs (ldd: the whole closure) except glibc's
# and the node's, as soname=path; commit_deps then packs them. Sets NODE_NEEDS (the node-provided sonames
# FILE needs) and FAILED_DEPS (the libraries ldd could not find on this machine).
NODE_NEEDS=""
FOUND_DEPS=()
# ldd_of FILE: ldd's output for FILE (stderr too) in LDD_OUT; ldd runs once per file. (Captured whole:
# `ldd | grep -q` fails at random under pipefail, when grep stops reading before ldd has written everything.)
declare -A LDD_TEXT=()
LDD_OUT=""
ldd_of() {
    [[ -n "${LDD_TEXT[$1]+x}" ]] || LDD_TEXT[$1]="$(ldd "$1" 2>&1 || true)"
    LDD_OUT="${LDD_TEXT[$1]}"
}
resolve_deps() {
    local soname arrow path rest
    FAILED_DEPS=""
    NODE_NEEDS=""
    FOUND_DEPS=()
    ldd_of "$1"
    while read -r soname arrow path rest; do
        [[ "$arrow" == "=>" ]] || continue
        is_glibc "$soname" && continue
        # The CUDA runtime is packed (one copy, the build's: the node then needs the driver and the math
        # libraries only); the rest of CUDA comes from the node.
        if [[ "$soname" == libcudart.so.* && -e "$path" ]]; then
            CUDART_PATH="$path"
            FOUND_DEPS+=("$soname=$path")
            continue
        fi
        if is_cuda "$soname" || is_rdma "$soname"; then
            NODE_NEEDS+="${NODE_NEEDS:+ }$soname"
            continue
        fi
        if [[ "$path" == "not" ]]; then FAILED_DEPS+=" $soname"; continue; fi
        FOUND_DEPS+=("$soname=$path")
    done <<<"$LDD_OUT"
}
commit_deps() {
    local dep
    for dep in $NODE_NEEDS; do NODE_LIBS[$dep]=1; done
    for dep in ${FOUND_DEPS[@]+"${FOUND_DEPS[@]}"}; do
        [[ -n "${PACKED[${dep%%=*}]:-}" ]] || PACKED[${dep%%=*}]="${dep#*=}"
    done
}

# copy_elf SRC DEST: a stripped copy (a plain copy where strip refuses the file).
copy_elf() {
    if ! strip --strip-unneeded -o "$2" "$1" 2>/dev/null; then
        cp -L "$1" "$2"
    fi
    chmod u+w "$2"
}

is_elf() { [[ -f "$1" && "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" == '177ELF' ]]; }

# --- programs: spotrun, the test programs (tests/), the benchmarks (bench/) --------------------------------
PROGRAMS=("$SPOTRUN_BIN")
for dir in "${PROGRAM_DIRS[@]}"; do
    [[ -n "$dir" && -d "$BUILD_DIR/$dir" ]] || continue
    for f in "$BUILD_DIR/$dir"/*; do
        [[ -x "$f" && ! -d "$f" ]] && is_elf "$f" && PROGRAMS+=("$f")
    done
done

# --- Open MPI: the launcher, the daemon, ompi_info and the run-time tree ----------------------------------
ldd_of "$SPOTRUN_BIN"
SPOTRUN_LDD="$LDD_OUT"
if [[ "$SPOTRUN_LDD" != *"libmpi.so.40 "* ]]; then
    die "spotrun is not linked with Open MPI 4 (libmpi.so.40); the bundle packs Open MPI 4 only"
fi
MPIEXEC="$(sed -n 's/^MPIEXEC_EXECUTABLE:FILEPATH=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)"
OMPI_INFO=""
[[ -n "$MPIEXEC" && -e "$MPIEXEC" ]] && OMPI_INFO="$(dirname "$(readlink -f "$MPIEXEC")")/ompi_info"
[[ -x "$OMPI_INFO" ]] || OMPI_INFO="$(command -v ompi_info || true)"
[[ -n "$OMPI_INFO" && -x "$OMPI_INFO" ]] || die "Open MPI's ompi_info not found (next to $MPIEXEC or on PATH)"
# first_line PATTERN TEXT: the first line of TEXT that sed's s/PATTERN// changes, changed (reads all of TEXT).
first_line() { sed -n "s/$1//p" <<<"$2" | awk 'NR == 1'; }
ompi_path() { first_line "^path:$1:" "$("$OMPI_INFO" --path "$1" --parsable 2>/dev/null || true)"; }
OMPI_BINDIR="$(ompi_path bindir)"
OMPI_PKGLIBDIR="$(ompi_path pkglibdir)"
OMPI_PKGDATADIR="$(ompi_path pkgdatadir)"
OMPI_SYSCONFDIR="$(ompi_path sysconfdir)"
OMPI_VERSION="$(first_line '^ompi:version:full:' "$("$OMPI_INFO" --parsable 2>/dev/null || true)")"
for tool in orterun orted; do
    [[ -x "$OMPI_BINDIR/$tool" ]] || die "no $OMPI_BINDIR/$tool: the bundle packs Open MPI 4 (orterun, orted)"
done
[[ -d "$OMPI_PKGLIBDIR" ]] || die "Open MPI's component folder $OMPI_PKGLIBDIR does not exist"

# The wrappers: bin/NAME sources env.sh, says which libraries the program takes from the node, and execs it.
write_wrapper() {
    local name="$1" target="$2" needs="$3" exec_as="${4:-}"
    {
        echo '#!/usr/bin/env bash'
        echo "# spotrun bundle: runs libexec/$target with the bundle's libraries (see env.sh)."
        echo "SPOTRUN_BUNDLE_NEEDS=\"$needs\"  # libraries this program takes from the node"
        echo 'SPOTRUN_BUNDLE_PROGRAM="'"$name"'"'
        echo 'source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../env.sh" || exit 127'
        [[ -z "$needs" ]] || echo '[[ -z "${SPOTRUN_BUNDLE_MISSING:-}" ]] || exit 2  # env.sh said what is missing'
        if [[ "$name" == spotrun ]]; then
            echo "# spotrun submit writes a job script that runs the spotrun it was started as: this wrapper, not"
            echo "# libexec/spotrun, which needs the environment set here."
            echo 'if [[ "${1:-}" == submit && " $* " != *" --spotrun"* ]]; then set -- "$@" --spotrun "$SPOTRUN_BUNDLE/bin/spotrun"; fi'
        fi
        if [[ -n "$exec_as" ]]; then
            echo "# An absolute argv[0] under the bundle makes Open MPI take the bundle as --prefix: remote"
            echo "# daemons are then started as BUNDLE/bin/orted."
            echo "exec -a \"\$SPOTRUN_BUNDLE/bin/$exec_as\" \"\$SPOTRUN_BUNDLE/libexec/$target\" \"\$@\""
        else
            echo "exec \"\$SPOTRUN_BUNDLE/libexec/$target\" \"\$@\""
        fi
    } >"$B/bin/$name"
    chmod 755 "$B/bin/$name"
}

# One CUDA runtime per process: a program that would hold two (the static one linked in somewhere, the
# shared libcudart loaded too) is refused; tools/cuda_runtimes.sh says which files.
RUNTIMES_ERR="$("$SOURCE_DIR/tools/cuda_runtimes.sh" "${PROGRAMS[@]}" 2>&1 >/dev/null)" || die "$RUNTIMES_ERR"
INFO_PROGRAMS=""
N_PROGRAMS=0
for p in "${PROGRAMS[@]}"; do
    name="$(basename "$p")"
    resolve_deps "$p"
    [[ -z "$FAILED_DEPS" ]] || die "$p needs libraries that are not on this machine:$FAILED_DEPS"
    commit_deps
    copy_elf "$p" "$B/libexec/$name"
    write_wrapper "$name" "$name" "$NODE_NEEDS"
    INFO_PROGRAMS+="  $name  (from $p)${NODE_NEEDS:+; from the node: $NODE_NEEDS}"$'\n'
    N_PROGRAMS=$((N_PROGRAMS + 1))
done
for tool in orterun orted ompi_info; do
    resolve_deps "$OMPI_BINDIR/$tool"
    [[ -z "$FAILED_DEPS" ]] || die "$OMPI_BINDIR/$tool needs libraries that are not on this machine:$FAILED_DEPS"
    commit_deps
    copy_elf "$OMPI_BINDIR/$tool" "$B/libexec/$tool"
done
write_wrapper mpirun orterun "" mpirun
write_wrapper mpiexec orterun "" mpiexec
write_wrapper orterun orterun "" orterun
write_wrapper orted orted ""
write_wrapper ompi_info ompi_info ""

# pack_plugin SRC DESTDIR: a run-time loaded module, packed with its libraries; left out (and said so)
# when one of them is missing on this machine or belongs to a fabric stack.
SKIPPED=""
PLUGIN_PACKED=0
pack_plugin() {
    PLUGIN_PACKED=0
    local src="$1" dest="$2" dep fabric=""
    resolve_deps "$src"
    if [[ -n "$FAILED_DEPS" ]]; then
        SKIPPED+="  $(basename "$src"): needs$FAILED_DEPS, not on this machine"$'\n'
        return 0
    fi
    for dep in $NODE_NEEDS ${FOUND_DEPS[@]+"${FOUND_DEPS[@]}"}; do
        is_fabric "${dep%%=*}" && fabric+=" ${dep%%=*}"
    done
    if [[ -n "$fabric" ]]; then
        SKIPPED+="  $(basename "$src"): a fabric transport (needs$fabric)"$'\n'
        return 0
    fi
    commit_deps
    copy_elf "$src" "$dest/$(basename "$src")"
    PLUGIN_PACKED=1
}

# Open MPI's components, except OpenSHMEM's (spotrun does not use OpenSHMEM, and they pull in liboshmem).
N_COMPONENTS=0
for f in "$OMPI_PKGLIBDIR"/*.so; do
    case "$(basename "$f")" in
        mca_atomic_*|mca_memheap_*|mca_scoll_*|mca_spml_*|mca_sshmem_*) continue ;;
    esac
    pack_plugin "$f" "$B/lib/openmpi"
    N_COMPONENTS=$((N_COMPONENTS + PLUGIN_PACKED))
done
[[ -d "$OMPI_PKGDATADIR" ]] && cp -R "$OMPI_PKGDATADIR" "$B/share/openmpi"
mkdir -p "$B/etc/openmpi"
[[ -d "$OMPI_SYSCONFDIR" ]] && cp -R "$OMPI_SYSCONFDIR/." "$B/etc/openmpi/"

# PMIx (an external PMIx, as Debian's Open MPI uses): its components, help files and configuration. Its
# configuration may name the build machine's component folder; env.sh sets the bundle's instead.
PMIX_LIB="${PACKED[libpmix.so.2]:-}"
if [[ -n "$PMIX_LIB" ]]; then
    pmix_libdir="$(dirname "$(readlink -f "$PMIX_LIB")")"
    pmix_prefix=""
    for cand in "$pmix_libdir/pmix2" "$(dirname "$pmix_libdir")"; do
        if [[ -d "$cand/lib/pmix" ]]; then pmix_prefix="$cand"; break; fi
    done
    if [[ -n "$pmix_prefix" ]]; then
        mkdir -p "$B/lib/pmix" "$B/etc/pmix"
        for f in "$pmix_prefix"/lib/pmix/*.so; do pack_plugin "$f" "$B/lib/pmix"; done
        [[ -d "$pmix_prefix/share/pmix" ]] && cp -R "$pmix_prefix/share/pmix" "$B/share/pmix"
        for conf in "$pmix_prefix"/share/pmix-mca-params.conf "$pmix_prefix"/etc/pmix-mca-params.conf; do
            [[ -f "$conf" ]] || continue
            sed "s|^\([^#].*$pmix_prefix.*\)$|# (a path of the build machine; env.sh sets the bundle's) \1|" \
                "$conf" >"$B/etc/pmix/pmix-mca-params.conf"
        done
    else
        SKIPPED+="  PMIx components: no lib/pmix folder found near $pmix_libdir"$'\n'
    fi
fi

# hwloc's plugins: PCI (and CUDA/NVML where the build machine's hwloc has them), not the X11 display,
# OpenCL or libxml2 ones (libxml2 alone pulls in 30 MB of ICU; hwloc has its own XML reader).
HWLOC_LIB="${PACKED[libhwloc.so.15]:-}"
if [[ -n "$HWLOC_LIB" && -d "$(dirname "$(readlink -f "$HWLOC_LIB")")/hwloc" ]]; then
    mkdir -p "$B/lib/hwloc"
    for f in "$(dirname "$(readlink -f "$HWLOC_LIB")")"/hwloc/hwloc_*.so; do
        case "$(basename "$f")" in hwloc_gl.so|hwloc_opencl.so|hwloc_xml_libxml.so) continue ;; esac
        pack_plugin "$f" "$B/lib/hwloc"
    done
fi

# --- the libraries ---------------------------------------------------------------------------------------
for soname in "${!PACKED[@]}"; do
    if is_cxx "$soname"; then dest="$B/lib/cxx/$soname"; else dest="$B/lib/$soname"; fi
    copy_elf "${PACKED[$soname]}" "$dest"
done

# --- the source files programs read at run time ----------------------------------------------------------
# The tests read tests/data, inputs/ and docs/ (through SPOTRUN_TEST_DATA_DIR and SPOTRUN_SOURCE_DIR, which
# env.sh points here), tools/gpu-check.sh reads the decks of inputs/ and bench/ and runs from the bundle.
S="$B/share/spotrun/source"
mkdir -p "$S/tests" "$S/bench" "$S/docs"
cp -R "$SOURCE_DIR/inputs" "$S/inputs"
cp -R "$SOURCE_DIR/tests/data" "$S/tests/data"
cp "$SOURCE_DIR"/docs/*.md "$S/docs/"
cp "$SOURCE_DIR"/bench/*.toml "$S/bench/"
[[ -d "$SOURCE_DIR/bench/suite" ]] && cp -R "$SOURCE_DIR/bench/suite" "$S/bench/suite"
[[ -f "$SOURCE_DIR/tools/gpu-check.sh" ]] && cp "$SOURCE_DIR/tools/gpu-check.sh" "$B/gpu-check.sh"

# --- env.sh ----------------------------------------------------------------------------------------------
cat >"$B/env.sh" <<'ENV'
# spotrun bundle environment. The programs in bin/ source it; `source BUNDLE/env.sh` in a bash shell of
# its own sets up the same for commands run by hand (ompi_info, a debugger). It sets:
#   PATH             BUNDLE/bin first (so mpirun is the bundle's Open MPI launcher)
#   LD_LIBRARY_PATH  BUNDLE/lib/cxx (unless SPOTRUN_BUNDLE_SYSTEM_CXX=1), BUNDLE/lib, then the node's CUDA
#                    folders in this order: SPOTRUN_CUDA_LIBS (folders separated by ':'), $CUDA_HOME/lib64,
#                    $CUDA_HOME/lib, /usr/local/cuda/lib64, /usr/local/cuda/lib; then the LD_LIBRARY_PATH it
#                    was given. The system's linker paths (ld.so.conf: the driver's libcuda) come after all
#                    of these. When a library the program needs from the node, or one the bundle's programs
#                    load at run time (SPOTRUN_BUNDLE_DLOPENS: NCCL), is in none of them, the lib folders of
#                    NVIDIA's Python wheels (site-packages/nvidia/*/lib of python3) are added last; when a
#                    needed one is still missing, a warning says where it was looked for.
#   OPAL_*, PMIX_*, HWLOC_PLUGINS_PATH  Open MPI's, PMIx's and hwloc's folders inside the bundle
SPOTRUN_BUNDLE="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
export SPOTRUN_BUNDLE

# The environment before the bundle first changed it (kept, so that a program started by the bundle's
# mpirun recomputes the same paths instead of stacking them).
if [[ "${SPOTRUN_BUNDLE_ENV_OF:-}" != "$SPOTRUN_BUNDLE" ]]; then
    export SPOTRUN_BUNDLE_ENV_OF="$SPOTRUN_BUNDLE"
    export SPOTRUN_BUNDLE_BASE_LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
    export SPOTRUN_BUNDLE_BASE_PATH="${PATH:-/usr/bin:/bin}"
fi
export PATH="$SPOTRUN_BUNDLE/bin:$SPOTRUN_BUNDLE_BASE_PATH"

_sb_dirs=()
if [[ -n "${SPOTRUN_CUDA_LIBS:-}" ]]; then
    IFS=: read -r -a _sb_user <<<"$SPOTRUN_CUDA_LIBS"
    _sb_dirs+=("${_sb_user[@]}")
fi
[[ -n "${CUDA_HOME:-}" ]] && _sb_dirs+=("$CUDA_HOME/lib64" "$CUDA_HOME/lib")
_sb_dirs+=(/usr/local/cuda/lib64 /usr/local/cuda/lib)
_sb_cuda=""
for _sb_d in "${_sb_dirs[@]}"; do
    [[ -n "$_sb_d" && -d "$_sb_d" && ":$_sb_cuda:" != *":$_sb_d:"* ]] && _sb_cuda+="${_sb_cuda:+:}$_sb_d"
done

# _sb_find SONAME DIRS: true when a folder of DIRS (':'-separated) or the system's linker cache has SONAME.
_sb_find() {
    local d line
    IFS=: read -r -a _sb_list <<<"$2"
    for d in "${_sb_list[@]}"; do [[ -n "$d" && -e "$d/$1" ]] && return 0; done
    if [[ -z "${_sb_ldcache+x}" ]]; then
        _sb_ldcache="$( (/sbin/ldconfig -p || ldconfig -p) 2>/dev/null)"
    fi
    while IFS= read -r line; do
        [[ "$line" == *"$1 ("* && -e "${line##*=> }" ]] && return 0
    done <<<"$_sb_ldcache"
    return 1
}
_sb_missing=""
_sb_optional=""
_sb_stub=""
unset SPOTRUN_BUNDLE_MISSING
for _sb_lib in ${SPOTRUN_BUNDLE_NEEDS:-}; do
    _sb_find "$_sb_lib" "$_sb_cuda:$SPOTRUN_BUNDLE_BASE_LD_LIBRARY_PATH" || _sb_missing+=" $_sb_lib"
done
# Loaded at run time (not needed to start): looked for in the same places and in the wheels; where it is
# in none, the program says so itself when it would use it.
for _sb_lib in ${SPOTRUN_BUNDLE_DLOPENS:-}; do
    _sb_find "$_sb_lib" "$_sb_cuda:$SPOTRUN_BUNDLE_BASE_LD_LIBRARY_PATH" || _sb_optional+=" $_sb_lib"
done
_sb_wheels=""
if [[ -n "$_sb_missing$_sb_optional" ]]; then
    for _sb_py in "$(command -v python3 2>/dev/null)" /usr/bin/python3; do
        [[ -n "$_sb_py" && -x "$_sb_py" ]] || continue
        while IFS= read -r _sb_d; do
            [[ -n "$_sb_d" && ":$_sb_wheels:" != *":$_sb_d:"* ]] && _sb_wheels+="${_sb_wheels:+:}$_sb_d"
        done < <("$_sb_py" -c 'import glob, os, sys
for p in sys.path:
    for d in sorted(glob.glob(os.path.join(p or ".", "nvidia", "*", "lib"))):
        print(os.path.realpath(d))' 2>/dev/null)
    done
    _sb_still=""
    for _sb_lib in $_sb_missing; do
        _sb_find "$_sb_lib" "$_sb_wheels" || _sb_still+=" $_sb_lib"
    done
    # No NVIDIA driver at all: the toolkit's stub libcuda.so.1 (lib/driver-stub, shipped when a program
    # needs the driver) lets the program start; it answers --version, --help and info, and the commands
    # that start Kokkos' device backend exit 2 saying that no usable GPU or driver is there.
    # Where the driver's kernel module is loaded but its libcuda.so.1 was not found, the stub still lets
    # the program start, but that is a fault of the environment, not a node without a GPU: said so, with
    # the fix (gpu-check.sh's preflight fails on it).
    if [[ " $_sb_still " == *" libcuda.so.1 "* && -e "$SPOTRUN_BUNDLE/lib/driver-stub/libcuda.so.1" ]]; then
        _sb_stub="$SPOTRUN_BUNDLE/lib/driver-stub"
        _sb_still="$(echo " $_sb_still " | sed 's/ libcuda\.so\.1 / /; s/^ *//; s/ *$//')"
        _sb_still="${_sb_still:+ $_sb_still}"
        if [[ -e /proc/driver/nvidia/version ]]; then
            echo "spotrun bundle: the NVIDIA driver is loaded (/proc/driver/nvidia/version) but its libcuda.so.1 is in" \
                 "none of the folders searched: ${SPOTRUN_BUNDLE_PROGRAM:-this program} starts with the CUDA toolkit's" \
                 "stub driver and what needs the GPU exits 2. Set SPOTRUN_CUDA_LIBS to the folder of the driver's" \
                 "libcuda.so.1 (find / -name 'libcuda.so.1*')." >&2
        else
            echo "spotrun bundle: no NVIDIA driver on this node (libcuda.so.1 not found): ${SPOTRUN_BUNDLE_PROGRAM:-this program}" \
                 "starts with the CUDA toolkit's stub driver; what needs the GPU exits 2. This bundle needs" \
                 "${SPOTRUN_BUNDLE_DRIVER_NEED:-an NVIDIA driver}." >&2
        fi
    fi
    if [[ -n "$_sb_still" ]]; then
        echo "spotrun bundle: ${SPOTRUN_BUNDLE_PROGRAM:-this program} needs$_sb_still from the node, found in none of:" \
             "SPOTRUN_CUDA_LIBS='${SPOTRUN_CUDA_LIBS:-}', CUDA_HOME='${CUDA_HOME:-}' (lib64, lib)," \
             "/usr/local/cuda/lib64, /usr/local/cuda/lib, LD_LIBRARY_PATH, the system's linker cache," \
             "NVIDIA's Python wheels. Install them (this bundle needs ${SPOTRUN_BUNDLE_DRIVER_NEED:-the CUDA" \
             "libraries of its build}) or set SPOTRUN_CUDA_LIBS to the folder that holds them." >&2
        # The wrappers exit 2 instead of starting a program the dynamic loader would refuse (exit 127).
        export SPOTRUN_BUNDLE_MISSING="${_sb_still# }"
    fi
fi

_sb_ld="$SPOTRUN_BUNDLE/lib"
[[ "${SPOTRUN_BUNDLE_SYSTEM_CXX:-0}" == 1 ]] || _sb_ld="$SPOTRUN_BUNDLE/lib/cxx:$_sb_ld"
_sb_ld+="${_sb_cuda:+:$_sb_cuda}${SPOTRUN_BUNDLE_BASE_LD_LIBRARY_PATH:+:$SPOTRUN_BUNDLE_BASE_LD_LIBRARY_PATH}"
_sb_ld+="${_sb_wheels:+:$_sb_wheels}${_sb_stub:+:$_sb_stub}"
export LD_LIBRARY_PATH="$_sb_ld"

# Open MPI: OPAL_PREFIX relocates the tree; the folders named one by one as well, because a distribution's
# Open MPI may keep some outside its prefix (Debian: sysconfdir /etc/openmpi), where the node could hold
# another Open MPI's configuration.
export OPAL_PREFIX="$SPOTRUN_BUNDLE" OPAL_EXEC_PREFIX="$SPOTRUN_BUNDLE" OPAL_BINDIR="$SPOTRUN_BUNDLE/bin" \
       OPAL_LIBDIR="$SPOTRUN_BUNDLE/lib" OPAL_LIBEXECDIR="$SPOTRUN_BUNDLE/libexec" \
       OPAL_PKGLIBDIR="$SPOTRUN_BUNDLE/lib/openmpi" OPAL_DATAROOTDIR="$SPOTRUN_BUNDLE/share" \
       OPAL_DATADIR="$SPOTRUN_BUNDLE/share" OPAL_PKGDATADIR="$SPOTRUN_BUNDLE/share/openmpi" \
       OPAL_SYSCONFDIR="$SPOTRUN_BUNDLE/etc/openmpi"
if [[ -d "$SPOTRUN_BUNDLE/lib/pmix" ]]; then
    export PMIX_PKGLIBDIR="$SPOTRUN_BUNDLE/lib/pmix" PMIX_PKGDATADIR="$SPOTRUN_BUNDLE/share/pmix" \
           PMIX_SYSCONFDIR="$SPOTRUN_BUNDLE/etc/pmix" PMIX_MCA_mca_base_component_path="$SPOTRUN_BUNDLE/lib/pmix"
fi
export HWLOC_PLUGINS_PATH="$SPOTRUN_BUNDLE/lib/hwloc"
# The tests' data and the source files they read, shipped in share/spotrun/source.
export SPOTRUN_TEST_DATA_DIR="$SPOTRUN_BUNDLE/share/spotrun/source/tests/data" \
       SPOTRUN_SOURCE_DIR="$SPOTRUN_BUNDLE/share/spotrun/source"
unset _sb_dirs _sb_user _sb_d _sb_cuda _sb_stub _sb_missing _sb_optional _sb_wheels _sb_py _sb_still _sb_lib _sb_ld _sb_list _sb_ldcache
unset -f _sb_find
ENV

# --- bundle-info.txt, size, tarball ----------------------------------------------------------------------
VERSION="$("$SPOTRUN_BIN" --version 2>/dev/null || true)"
VERSION="$(awk 'NR == 1' <<<"$VERSION")"
[[ -n "$VERSION" ]] || VERSION="spotrun (version unknown)"
# newest_version PREFIX TEXT: the highest PREFIXx.y.z named in TEXT, without PREFIX.
newest_version() {
    grep -o "$1[0-9][0-9.]*" <<<"$2" | sed "s/^$1//" | sort -u -t. -k1,1n -k2,2n -k3,3n | awk 'END { print }'
}
GLIBC_MIN="$(newest_version GLIBC_ "$(find "$B/libexec" "$B/lib" -type f -exec objdump -T {} + 2>/dev/null || true)" || true)"
CXX_MIN="$(newest_version GLIBCXX_ "$(objdump -T "$B/lib/cxx/libstdc++.so.6" 2>/dev/null || true)" || true)"
# The CUDA runtime the programs take from the node: its version is in the file name ldd found here
# (libcudart.so.13 -> libcudart.so.13.0.96). A driver must support that CUDA version (same major at least).
CUDA_RT=""
CUDA_LINE="CUDA runtime: none (no program takes libcudart from the node)"
if [[ -n "$CUDART_PATH" ]]; then
    CUDA_RT="$(basename "$(readlink -f "$CUDART_PATH")" | sed -n 's/^libcudart\.so\.\([0-9][0-9]*\.[0-9.]*\)$/\1/p')"
    # A toolkit whose libcudart has no full version in its name (libcudart.so.13 only): CUDART_VERSION of
    # the header next to it (13000 = 13.0).
    for h in "$(dirname "$CUDART_PATH")"/../include/cuda_runtime_api.h "$(dirname "$CUDART_PATH")"/../targets/*/include/cuda_runtime_api.h; do
        [[ -z "$CUDA_RT" && -f "$h" ]] || continue
        CUDA_RT="$(awk '$1 == "#define" && $2 == "CUDART_VERSION" { v = $3 } END { if (v) printf "%d.%d", v / 1000, (v % 1000) / 10 }' "$h")"
    done
    [[ -n "$CUDA_RT" ]] || CUDA_RT="$(basename "$CUDART_PATH" | sed -n 's/^libcudart\.so\.//p')"
    case "${CUDA_RT%%.*}" in
        11) min_driver=450.80.02 ;; 12) min_driver=525.60.13 ;; 13) min_driver=580.65.06 ;; *) min_driver="?" ;;
    esac
    CUDA_LINE="CUDA runtime: $CUDA_RT (from $CUDART_PATH): the node needs CUDA ${CUDA_RT%%.*} libraries and a driver that supports CUDA ${CUDA_RT%%.*} (Linux driver >= $min_driver)"
    # What env.sh names when something is missing on the node.
    sed -i "s|^export SPOTRUN_BUNDLE\$|&\nexport SPOTRUN_BUNDLE_DRIVER_NEED=\"CUDA ${CUDA_RT%%.*} libraries and a Linux driver >= $min_driver\"|" "$B/env.sh"
fi
# Libraries the programs load at run time rather than link (NCCL: comm/nccl_library.hpp): env.sh looks for
# them too (the wheels included), so that a node whose NCCL is in a Python wheel gets it.
DLOPENS=""
if grep -rqa --include='*.so*' 'libnccl\.so\.2' "$B/lib" 2>/dev/null || grep -rqa 'libnccl\.so\.2' "$B/libexec" 2>/dev/null; then
    DLOPENS="libnccl.so.2"
    sed -i "s|^export SPOTRUN_BUNDLE\$|&\nSPOTRUN_BUNDLE_DLOPENS=\"$DLOPENS\"|" "$B/env.sh"
fi
# The toolkit's stub driver, for a node without the NVIDIA driver (env.sh): spotrun then answers --version,
# --help and info, and exits 2 on what needs the GPU, instead of the loader's exit 127.
DRIVER_STUB_LINE=""
if [[ -n "${NODE_LIBS[libcuda.so.1]:-}" ]]; then
    stub=""
    for c in ${CUDART_PATH:+"$(dirname "$CUDART_PATH")/stubs/libcuda.so"} ${CUDA_HOME:+"$CUDA_HOME/lib64/stubs/libcuda.so"} \
             /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/targets/*/lib/stubs/libcuda.so; do
        [[ -z "$stub" && -f "$c" ]] && stub="$c"
    done
    [[ -n "$stub" ]] || die "the programs need the NVIDIA driver (libcuda.so.1) but the CUDA toolkit's stubs/libcuda.so was not found (CUDA_HOME, /usr/local/cuda)"
    mkdir -p "$B/lib/driver-stub"
    cp -L "$stub" "$B/lib/driver-stub/libcuda.so.1"
    DRIVER_STUB_LINE="NVIDIA driver stub: lib/driver-stub/libcuda.so.1 (from $stub), used only where the node has no libcuda.so.1"
fi
node_libs="$(printf ' %s' "${!NODE_LIBS[@]}" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/^ *//; s/ *$//')"
{
    echo "$VERSION"
    echo "Made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m) from $BUILD_DIR"
    echo "Open MPI $OMPI_VERSION (components from $OMPI_PKGLIBDIR)"
    echo "Needs on the node: glibc >= $GLIBC_MIN (the build machine's: $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown))"
    echo "From the node (not packed): glibc${node_libs:+, $node_libs} (bin/PROGRAM says which it needs)"
    echo "$CUDA_LINE"
    [[ -z "$DRIVER_STUB_LINE" ]] || echo "$DRIVER_STUB_LINE"
    echo "libstdc++ packed in lib/cxx/ (up to GLIBCXX_${CXX_MIN:-?}); SPOTRUN_BUNDLE_SYSTEM_CXX=1 uses the node's"
    echo
    echo "Programs (bin/ wrappers, libexec/ binaries):"
    printf '%s' "$INFO_PROGRAMS" | sort -u
    echo
    echo "Libraries (lib/, lib/cxx/):"
    for s in "${!PACKED[@]}"; do echo "  $s  (from ${PACKED[$s]})"; done | sort
    if [[ -n "$SKIPPED" ]]; then
        echo
        echo "Left out:"
        printf '%s' "$SKIPPED"
    fi
} >"$B/bundle-info.txt"

# --- the CPU references of gpu-check.sh ------------------------------------------------------------------
if [[ -n "$REFERENCES" ]]; then
    bash "$SOURCE_DIR/tools/gpu-check.sh" --make-references "$REFERENCES" "$B" >/dev/null ||
        die "gpu-check.sh --make-references $REFERENCES failed; nothing was written"
    note "CPU references of gpu-check.sh made with $REFERENCES"
fi

size_bytes="$(du -sb "$B" | cut -f1)"
size_mib="$(awk -v b="$size_bytes" 'BEGIN { printf "%.1f", b / 1048576 }')"
[[ -z "$SKIPPED" ]] || printf 'make_bundle.sh: left out:\n%s' "$SKIPPED"
if (( MAX_MIB > 0 && size_bytes > MAX_MIB * 1048576 )); then
    du -sh "$B/libexec" "$B/lib" | sed "s|$B/||" >&2
    die "the bundle would be $size_mib MiB, over the limit of $MAX_MIB MiB (--max-mib; 0 lifts it when the .tar.gz is what is carried; --no-tests and --no-bench leave out the test programs and benchmarks); nothing was written"
fi
# The tarball is made from the finished folder before either takes its place, so that a tarball over its
# limit leaves nothing written either. Its one top folder has the bundle's name.
TARBALL_PARTIAL="$OUTPUT.tar.gz.partial.$$"
if [[ $MAKE_TAR == 1 ]]; then
    trap 'rm -rf "$B" "$TARBALL_PARTIAL"' EXIT
    tar -C "$(dirname "$B")" --transform "s|^$(basename "$B")|$(basename "$OUTPUT")|" -czf "$TARBALL_PARTIAL" "$(basename "$B")"
    tar_bytes="$(stat -c %s "$TARBALL_PARTIAL")"
    tar_mib="$(awk -v b="$tar_bytes" 'BEGIN { printf "%.1f", b / 1048576 }')"
    if (( MAX_TAR_MIB > 0 && tar_bytes > MAX_TAR_MIB * 1048576 )); then
        die "the .tar.gz would be $tar_mib MiB (the folder $size_mib MiB), over the limit of $MAX_TAR_MIB MiB (--max-tar-mib); nothing was written"
    fi
fi
rm -rf "$OUTPUT"
mv "$B" "$OUTPUT"
if [[ $MAKE_TAR == 1 ]]; then mv -f "$TARBALL_PARTIAL" "$OUTPUT.tar.gz"; fi
trap - EXIT
note "wrote $OUTPUT: $N_PROGRAMS programs, ${#PACKED[@]} libraries, $N_COMPONENTS Open MPI components, $size_mib MiB"
note "the node needs glibc >= $GLIBC_MIN${node_libs:+, and $node_libs}"
[[ -z "$CUDA_RT" ]] || note "CUDA runtime ${CUDA_LINE#CUDA runtime: }"
[[ $MAKE_TAR == 0 ]] || note "wrote $OUTPUT.tar.gz: $tar_mib MiB"
