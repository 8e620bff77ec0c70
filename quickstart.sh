#!/usr/bin/env bash
# Builds spotrun on Debian 12 and runs an example or the test suite.
#
# Usage:
#   ./quickstart.sh run [DECK]   build, then run DECK (default: inputs/lj-melt.toml) afresh on one process
#   ./quickstart.sh test         build, then run the whole test suite with ctest
#
# `run` installs the Debian packages the build and a run need when any is missing (apt-get, with sudo
# when not root; lammps-examples too for a deck that reads its data), configures build/ (`cmake
# -DCMAKE_BUILD_TYPE=Release`), builds the spotrun program only; `test` adds the tests' packages, builds all.
set -euo pipefail

CALLER_DIR="$PWD"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

# What the build of spotrun and a run need: the compiler and CMake, Open MPI, parallel HDF5, Kokkos, the
# header libraries, FFTW, xxHash, hwloc, libcurl (spot notices), OpenBLAS (doctor's probe) and rclone
# (the durable checkpoint tier).
RUN_PACKAGES=(
    cmake g++ make pkg-config git
    libopenmpi-dev openmpi-bin libhdf5-openmpi-dev
    libtrilinos-kokkos-dev libcli11-dev libtoml11-dev nlohmann-json3-dev libspdlog-dev
    libfftw3-dev libxxhash-dev libhwloc-dev libcurl4-openssl-dev libopenblas-dev
    rclone
)
# What a deck that reads LAMMPS's example data adds (inputs/chain.toml: the in.chain data file under
# /usr/share/lammps/examples/): Debian's lammps-examples, installed by `run` for such a deck only.
EXAMPLE_PACKAGES=(lammps-examples)
# What the tests and benchmarks add: GoogleTest and Google Benchmark, the HDF5 tools, LAMMPS and its
# reference runs, the LAMMPS examples (the in.chain data of inputs/chain.toml and the chain benchmark),
# Python with numpy, h5py, matplotlib and MDAnalysis, a private Slurm, sshd for the simulated nodes, JUBE.
TEST_PACKAGES=(
    hdf5-tools libgtest-dev libbenchmark-dev
    python3-numpy python3-scipy
    slurm-wlm munge
    libfftw3-mpi-dev lammps "${EXAMPLE_PACKAGES[@]}" jube python3-matplotlib
    python3-h5py python3-mdanalysis
    openssh-server
)
# Node.js and npm (for s3rver, the stand-in S3 server of the durable-tier tests) are taken as the machine
# has them: an image may carry another Node.js (NodeSource's bundles npm and conflicts with Debian's npm
# package). Debian's are installed only where there is no npm at all.

usage() {
    sed -n '2,10p' "$ROOT/quickstart.sh" | sed 's/^# \{0,1\}//'
}

log() { echo "quickstart: $*" >&2; }

install_packages() {
    local missing=() p
    for p in "$@"; do
        if [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)" != ii* ]]; then
            missing+=("$p")
        fi
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    command -v apt-get >/dev/null 2>&1 || { log "missing packages (${missing[*]}) and no apt-get: install them by hand"; exit 1; }
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || { log "missing packages (${missing[*]}); run as root or install sudo"; exit 1; }
        sudo=(sudo env DEBIAN_FRONTEND=noninteractive)
    fi
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" apt-get install -y -q "${missing[@]}"
}

# build [all|spotrun]: configures build/ (Release) and builds everything, or only the spotrun program.
# A first configuration for `run` leaves the tests and benchmarks out (their packages may be missing);
# `test` switches them on.
build() {
    local what="$1" opts=(-DCMAKE_BUILD_TYPE=Release)
    if [[ "$what" == all ]]; then
        opts+=(-DSPOTRUN_BUILD_TESTS=ON -DSPOTRUN_BUILD_BENCH=ON)
    elif [[ ! -f build/CMakeCache.txt ]]; then
        opts+=(-DSPOTRUN_BUILD_TESTS=OFF -DSPOTRUN_BUILD_BENCH=OFF)
    fi
    log "configuring and building into build/ (${what})"
    cmake -S . -B build "${opts[@]}"
    if [[ "$what" == all ]]; then
        cmake --build build -j"$(nproc)"
    else
        cmake --build build -j"$(nproc)" --target spotrun
    fi
}

mpi_env() {
    # Open MPI refuses to run as root unless told to; allow more ranks than cores for the MPI tests.
    if [[ $(id -u) -eq 0 ]]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    export OMPI_MCA_rmaps_base_oversubscribe=1
    # Containers often forbid the cross-process memory copies (CMA) of Open MPI's shared-memory
    # transport; plain copies work everywhere.
    export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"
}

cmd="${1:-}"
case "$cmd" in
    run)
        [[ $# -le 2 ]] || { usage >&2; exit 2; }
        deck="${2:-inputs/lj-melt.toml}"
        # A deck given on the command line is relative to the caller's directory.
        if [[ $# -eq 2 && "$deck" != /* ]]; then deck="$CALLER_DIR/$deck"; fi
        install_packages "${RUN_PACKAGES[@]}"
        if grep -q '/usr/share/lammps/examples/' "$deck" 2>/dev/null; then
            install_packages "${EXAMPLE_PACKAGES[@]}"
        fi
        build spotrun
        mpi_env
        # A fresh run every time (a second run would otherwise resume from runs/<deck>/final.h5).
        exec build/launcher/spotrun run "$deck" --resume never
        ;;
    test)
        [[ $# -eq 1 ]] || { usage >&2; exit 2; }
        install_packages "${RUN_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
        build all
        mpi_env
        # The durable-tier tests run against s3rver (npm) on 127.0.0.1. Without the npm registry they
        # skip, saying so (CI sets SPOTRUN_REQUIRE_DURABLE=1: there a skip is a failure).
        if [[ ! -x build/npm/node_modules/.bin/s3rver ]] && ! command -v npm >/dev/null 2>&1; then
            log "installing nodejs and npm (Debian) for the durable-tier tests"
            { [[ $(id -u) -eq 0 ]] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm; } ||
                log "WARNING: could not install nodejs and npm"
        fi
        if [[ ! -x build/npm/node_modules/.bin/s3rver ]] && command -v npm >/dev/null 2>&1; then
            log "installing s3rver (npm) into build/npm for the durable-tier tests"
            npm install --prefix build/npm --no-audit --no-fund s3rver ||
                log "WARNING: npm could not install s3rver: the durable-tier tests (resume.durable.*) will skip"
        fi
        exec ctest --test-dir build --output-on-failure -j"$(nproc)"
        ;;
    -h|--help|help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac
