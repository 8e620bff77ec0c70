#!/usr/bin/env bash
# Shared by the shell test drivers (tests/*/*_test.sh, and through tests/cli/cli_lib.sh the command-line
# ones); sourced, not run. It only defines functions and deck key lists: sourcing it runs nothing, reads no
# argument and sets no shell option.

# --- decks -------------------------------------------------------------------------------------------------

# write_deck FILE SECTION.KEY=VALUE...: writes to FILE the TOML deck of those keys, one table per SECTION in
# the order the SECTIONs first appear, each key where it first appears with the last value given to it: a
# list below followed by changes is a deck of its own (write_deck F "${LANGEVIN_DECK[@]}" run.steps=60).
# VALUE is TOML as written in the deck (a string in double quotes).
write_deck() {
    local file=$1 arg key section
    shift
    local -a keys=() sections=()
    local -A value=()
    for arg in "$@"; do
        key=${arg%%=*}
        [[ -v "value[$key]" ]] || keys+=("$key")
        value[$key]=${arg#*=}
    done
    for key in "${keys[@]}"; do
        [[ " ${sections[*]} " == *" ${key%.*} "* ]] || sections+=("${key%.*}")
    done
    {
        for section in "${sections[@]}"; do
            echo "[$section]"
            for key in "${keys[@]}"; do
                [[ ${key%.*} == "$section" ]] && echo "${key##*.} = ${value[$key]}"
            done
        done
    } >"$file"
}

# The small liquid (no [checkpoint]): 6x4x4 fcc cells (384 atoms, box 10.08 x 6.72 x 6.72), runs at 1-4 ranks.
LIQUID_DECK=(run.steps=20 run.thermo_every=10 md.dt=0.005 md.neighbor_every=1 md.neighbor_check=true
             'md.lattice.cells=[6, 4, 4]')

# 864 atoms, NVE with dt 0.002: runs on different rank counts stay within 1e-6 in energy over 1500 steps.
NVE864_DECK=(run.steps=1500 run.thermo_every=50 md.dt=0.002 md.neighbor_every=4 md.neighbor_check=true
             'md.lattice.cells=[6, 6, 6]' md.lattice.temperature=1.5 checkpoint.every_steps=50 checkpoint.keep=3)

# 2048 atoms under the Langevin thermostat (dt 0.005), 400 steps: the deck of tests/resume and tests/slurm.
LANGEVIN_DECK=(run.steps=400 run.thermo_every=20 md.neighbor_every=4 md.neighbor_check=true
               'md.ensemble="langevin"' md.temperature=1.2 md.damp=0.5 'md.lattice.cells=[8, 8, 8]'
               md.lattice.temperature=1.5 checkpoint.every_steps=50 checkpoint.keep=3)

# ka_deck FILE STEPS THERMO_EVERY: [run] and the [md] part of tests/data/ka-lattice-nvt.toml (a Kob-Andersen
# mixture, 864 atoms, Nose-Hoover NVT); a test appends what it adds (cat >>FILE).
ka_deck() {
    write_deck "$1" "run.steps=$2" "run.thermo_every=$3"
    cat "$(dirname "${BASH_SOURCE[0]}")/../data/ka-lattice-nvt.toml" >>"$1"
}

# --- runs --------------------------------------------------------------------------------------------------

# run_deck NP OUTDIR [ARGS...]: spotrun run $WORK/deck.toml --output-dir OUTDIR ARGS on NP ranks under mpirun
# (at most 300 s), its output appended to OUTDIR.log; prints the exit code. Needs SPOTRUN and WORK. With
# --verbose: the tests read the checkpoint lines and the rest that a run prints beside thermo and summary.
run_deck() {
    local np=$1 out=$2
    shift 2
    timeout 300 mpirun -np "$np" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$out" --verbose "$@" >>"$out.log" 2>&1
    echo $?
}

# Simulated nodes: each rank in UTS and mount namespaces of its own (unshare), with its own host name and its
# own folder $WORK/nodes/HOST bound at $LOCAL (the checkpoint.local_dir every node sees), as on nodes that
# share no file system; $WORK/HOST.pid holds its PID. Needs SPOTRUN, WORK and LOCAL; NODES_TIMEOUT (default
# 300 s) limits one on_nodes.
# sim_node HOST ARGS...: the mpirun app context of one rank of spotrun ARGS on simulated node HOST (a run
# with --verbose, as run_deck).
sim_node() {
    local host=$1
    shift
    local args="$*"
    [[ "$args" == "run "* ]] && args+=" --verbose"
    mkdir -p "$WORK/nodes/$host"
    printf -- "-np 1 unshare --uts --mount sh -c 'hostname %s && mount --bind %s %s && echo \$\$ > %s && exec %s %s' " \
        "$host" "$WORK/nodes/$host" "$LOCAL" "$WORK/$host.pid" "$SPOTRUN" "$args"
}
# on_nodes LOG "HOST ARGS" ...: one mpirun over the simulated nodes, output appended to LOG; prints the exit code.
on_nodes() {
    local log=$1 cmd="" spec
    shift
    for spec in "$@"; do cmd+="$(sim_node $spec) : "; done
    eval "timeout ${NODES_TIMEOUT:-300} mpirun ${cmd% : }" >>"$log" 2>&1
    echo $?
}

# --- requirements ------------------------------------------------------------------------------------------

# need_python MODULE...: PY is /usr/bin/python3; exits 77 (skipped) unless it imports every MODULE.
need_python() {
    PY=/usr/bin/python3
    "$PY" -c "import $(IFS=,; echo "$*")" 2>/dev/null && return 0
    echo "SKIP: $PY has no $(IFS=/; echo "$*") (Debian: $(printf 'python3-%s ' "$@" | sed 's/ $//'))"
    exit 77
}
