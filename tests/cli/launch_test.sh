#!/usr/bin/env bash
# `spotrun launch` and OUTDIR/status.json, on this machine only (hostfiles name localhost).
# usage: launch_test.sh CASE NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR
#   status       status.json after runs that finished, stopped (SIGTERM in the loop and in start-up), failed
#                (exit 1, exit 2, a signal before the loop); launch's bad usage exits 2
#   kill         a rank SIGKILLed mid-run: launch relaunches and final.h5 is bit-identical to a run in one go
#   shrink       the hostfile loses a slot (3 -> 2) and names a host that never answers its probe: the
#                relaunch runs on 2 ranks, the energy matches an uninterrupted run to 1e-6
#   give_up      a failure that repeats without progress stops launch (exit 1) after 2 attempts, not after
#                --max-restarts; --max-restarts 0 and --min-ranks are kept
#   ctrl_c       SIGINT to launch: exit 75 with a checkpoint, no relaunch; launch again resumes and finishes
#   notice       a loopback metadata service serves an AWS spot notice to one host: the run stops with a
#                checkpoint (exit 75) before the deadline, launch relaunches without that host and finishes
#   stall        one rank of three "hosts" SIGSTOPped (a node lost silently): launch --stall-timeout 8 sees
#                the step stop and that host's heartbeat stop, kills every process of the attempt (a decoy
#                left in a session of its own, as on a remote node, too), relaunches, and final.h5 is
#                bit-identical to a run in one go
#   watchdog     the same under a plain mpirun (no launch): the rank left running exits 76 by itself,
#                naming its rank and host, after SPOTRUN_STALL_TIMEOUT
#   netns        two nodes in network namespaces reached through a real sshd: node b's link goes down,
#                then its processes are killed; launch declares the stall, the fence leaves out node b (no
#                answer), the relaunch on node a alone ends with the energy of an uninterrupted 2-rank run
#                to 1e-6. Skipped (exit 77) without root, `ip netns`, `unshare --pid`, a bridge, or sshd.
#   doctor       launch --doctor: spotrun doctor before the attempt names a planted slow rank's host, the
#                attempt runs without it
#   noisy        (netns nodes) node b's processes killed, then its link down: relaunched on node a
#   partition    (netns nodes) node b cut off and frozen, the run moves on, the partition heals: the old
#                attempt's rank stops without writing (fenced, exit 77)
#   ckpt_loss    (netns nodes) node b lost while a checkpoint is half written: resumed from the one before
#   grow         --grow on loopback "hosts": a host named again by --hosts-command is grown onto
#   regrow       (netns nodes) node b's link goes down: relaunched on node a; the link comes back and
#                --hosts-command names b again: launch fences what attempt 1 left on b and grows back
#   levels       (three netns nodes, each with its own checkpoint.local_dir, partner copies, no shared
#                checkpoint) node b lost silently after checkpoint 100, its disk with it: the stall is seen
#                in node a's heartbeat (the others' stay on their disks); the relaunch on a and c
#                resumes b's file from its partner copy on c; thermo.csv and the final state equal the rank
#                history 3 then 2 run by hand with shared checkpoints, the energy a 3-rank run's to 1e-6
# The watchdog case also checks that ranks on simulated nodes of one machine (UTS namespaces with their own
# host names, under one mpirun) write one heartbeat file per host name (exit 77 without unshare --uts).
# Knobs of tools/loss_campaign.sh (unset in CI): SPOTRUN_LOSS_NODES=3 runs netns, noisy and partition on
# three worker nodes a, b, c (one rank each; default two, a and b); SPOTRUN_LOSS_VICTIM (a, b or c; default
# b) is the node lost; SPOTRUN_LOSS_DELAY the seconds from checkpoint 100 to the loss (default 0);
# SPOTRUN_LOSS_STALL_TIMEOUT launch's --stall-timeout (default 8; "default": none given, launch's own rule).
# (usage: ... WORKDIR HTTP_SERVER, the loopback test server spotrun_test_http_server.)
# Only this test's processes are signalled: they are found by their unique --output-dir.
#
# Several hosts on one machine (shrink, notice, doctor): the hostfiles name 127.0.0.2, 127.0.0.3, ...,
# loopback addresses that Open MPI takes for other nodes (none is the address of an interface), and
# `-- --mca plm_rsh_agent $W/fake-ssh` makes Open MPI start its daemon on each "host" through fake-ssh
# (written below) instead of ssh: it runs the daemon here, with SPOTRUN_TEST_HOST_NAME set to the host's
# name (the name spotrun's ranks on it report: comm::host_name()) and SPOTRUN_TEST_DMI_DIR set to a DMI
# folder that says Amazon EC2 for the host named in $W/aws-host, none for the others, and TMPDIR set to a
# folder of the host's own (Open MPI's session folders, apart as on real nodes). A host listed in
# $W/down refuses the connection, as a host that is gone does. The ranks of different "hosts" talk over
# TCP, as across real nodes; they are not bound to cores (--bind-to none), since each daemon would bind
# its rank to the first core of "its" host, this machine's. launch's probes (mpirun -H HOST nproc) go
# through fake-ssh too, since launch passes --mca options on to them.
source "$(dirname "$0")/cli_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Pacing: the 1500-step runs below last about 0.3 s of stepping on an idle 2-core machine, too short for a
# signal sent after the first checkpoint to find them still running. Every force evaluation runs the pair
# kernel 6 times (the extra passes are discarded: results are unchanged), which makes them last a few
# seconds. Exported, so it reaches every rank, the fake hosts' too. This and the other SPOTRUN_TEST_*
# variables here are test hooks of the program these tests run, spotrun-test (docs/layout.md, "Test hooks").
export SPOTRUN_TEST_FORCE_SLOWDOWN=6
SERVER="${7:-}"
OUT="$W/stdout.txt"
ERR="$W/stderr.txt"
T0=$SECONDS

# 864 atoms (NVE864_DECK of test_lib.sh): runs on different rank counts stay within 1e-6 in energy.
write_deck "$W/deck.toml" "${NVE864_DECK[@]}" run.thermo_every=20 checkpoint.every_steps=100

# The program's name, as its processes have it (spotrun-test: the test hooks, docs/layout.md).
PROGRAM_NAME=$(basename "$SPOTRUN")
# The ranks (not mpirun, not launch) of the run writing into output directory $1.
ranks_of() {
    local p
    for p in $(pgrep -f "$PROGRAM_NAME run .*--output-dir $1( |\$)"); do
        [[ "$(cat "/proc/$p/comm" 2>/dev/null)" == "$PROGRAM_NAME" ]] && echo "$p"
    done
}
# wait_for FILE [SECONDS]: until FILE exists.
wait_for() {
    local k
    for ((k = 0; k < ${2:-60} * 50; ++k)); do
        [[ -e "$1" ]] && return 0
        sleep 0.02
    done
    fail "$1 did not appear within ${2:-60} s"
    return 1
}
# status_has DIR TEXT: OUTDIR/status.json holds TEXT (its fields are written without spaces).
status_has() {
    grep -qF -- "$2" "$1/status.json" 2>/dev/null || fail "status.json of $(basename "$1") lacks '$2': $(cat "$1/status.json" 2>&1)"
}
valid_json() {
    if command -v python3 >/dev/null; then
        python3 -m json.tool "$1/status.json" >/dev/null || fail "$1/status.json is not valid JSON"
    fi
}
# mpirun_run NP DIR ARGS...: spotrun run, plain mpirun; RC. Not paced (the runs by hand and the references
# need no time to be signalled in, and the pacing changes no result).
mpirun_run() {
    local np=$1 dir=$2
    shift 2
    SPOTRUN_TEST_FORCE_SLOWDOWN=1 timeout "$TIMEOUT" "$MPIEXEC" "$NPFLAG" "$np" "$SPOTRUN" run "$W/deck.toml" --output-dir "$dir" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}
# launch DIR ARGS...: spotrun launch in the background; LAUNCH_PID.
launch_bg() {
    local dir=$1
    shift
    timeout 100 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$dir" "$@" >"$dir.out" 2>"$dir.err" &
    LAUNCH_PID=$!
    OUT="$dir.out"
    ERR="$dir.err"
}
kill_a_rank() {
    local victim
    victim=$(ranks_of "$1" | tail -1)
    if [[ -z "$victim" ]]; then
        fail "no rank of $1 left to kill (did the run end already?)"
        return
    fi
    kill -KILL "$victim"
}
# stop_while_paused PHASE DIR NAME: a 2-rank run into DIR that pauses 10 s in PHASE (SPOTRUN_TEST_PAUSE),
# SIGTERMed once both ranks pause; RC is its exit code, OUT and ERR ($W/NAME.out, .err) its output.
stop_while_paused() {
    local pid k
    OUT="$W/$3.out" ERR="$W/$3.err"
    SPOTRUN_TEST_PAUSE="$1=10" "$MPIEXEC" "$NPFLAG" 2 "$SPOTRUN" run "$W/deck.toml" --output-dir "$2" >"$OUT" 2>"$ERR" &
    pid=$!
    for ((k = 0; k < 3000; ++k)); do [[ $(grep -c "pausing" "$ERR" 2>/dev/null) -eq 2 ]] && break; sleep 0.02; done
    kill -TERM $(ranks_of "$2") || fail "no rank to signal"
    wait $pid
    RC=$?
}
# attempt_procs ID: the processes whose environment holds SPOTRUN_LAUNCH_ATTEMPT=ID.
attempt_procs() {
    local d
    for d in /proc/[0-9]*; do
        tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qxF "SPOTRUN_LAUNCH_ATTEMPT=$1" && echo "${d#/proc/}"
    done
}
# rank_on HOST DIR: the rank of the run into DIR on fake host HOST.
rank_on() {
    local p
    for p in $(ranks_of "$2"); do
        tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SPOTRUN_TEST_HOST_NAME=$1" && echo "$p"
    done
}
last_etotal() { tail -1 "$1/thermo.csv" | cut -d, -f6; }

# fake_hosts: writes $W/fake-ssh (see the top of this file); FAKE is the mpirun option that uses it.
fake_hosts() {
    mkdir -p "$W/dmi-aws" "$W/dmi-none"
    echo "Amazon EC2" >"$W/dmi-aws/sys_vendor"
    echo "m5.large" >"$W/dmi-aws/product_name"
    : >"$W/down"
    : >"$W/aws-host"
    cat >"$W/fake-ssh" <<EOF
#!/bin/sh
# Stands in for ssh: [OPTIONS] HOST COMMAND... runs COMMAND here as host HOST.
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1
shift
if grep -qxF "\$host" "$W/down"; then
    echo "ssh: connect to host \$host port 22: Connection refused" >&2
    exit 255
fi
SPOTRUN_TEST_HOST_NAME=\$host
SPOTRUN_TEST_DMI_DIR=$W/dmi-none
grep -qxF "\$host" "$W/aws-host" && SPOTRUN_TEST_DMI_DIR=$W/dmi-aws
# Each host its own temporary folder, as on real nodes: Open MPI's session folders of daemons on
# different "hosts" must not meet in this machine's /tmp.
TMPDIR=$W/tmp-\$host
mkdir -p "\$TMPDIR"
export SPOTRUN_TEST_HOST_NAME SPOTRUN_TEST_DMI_DIR TMPDIR
exec sh -c "\$*"
EOF
    chmod +x "$W/fake-ssh"
    # Each "host" has this machine's cores: unbound ranks, or every daemon would bind its rank to core 0.
    FAKE=(-- --mca plm_rsh_agent "$W/fake-ssh" --bind-to none)
}

# --- Nodes in network namespaces (netns, noisy, partition, ckpt_loss) -------------------------------------
# netns_nodes NODE...: namespaces $NS-h (launch, mpirun: 10.77.0.1) and one per node (a: 10.77.0.2, b: .3,
# c: .4), each node with its own host name (a UTS namespace: ranks and heartbeat files name node-a, ...),
# its own processes (a PID namespace with its own /proc: a fence run on node a sees node a's processes
# only, as on separate machines) and its own sshd (Debian's openssh-server), joined by a bridge in a namespace of its own ($NS-sw, the
# switch), so that this machine's own network is not touched. Skips (exit 77) without root, ip netns, a
# bridge, veth pairs or sshd (with SPOTRUN_REQUIRE_NETNS=1, as .ci/run sets, a skip is a failure). Sets NET,
# the mpirun options that reach the nodes through real ssh. NODE_MOUNTS, when set, names a function that
# prints, for a node, the commands (mount --bind ...) run in its mount namespace (--mount-proc makes one,
# private: the head and the other nodes do not see its mounts) before its sshd starts (the levels case).
skip() {
    if [[ "${SPOTRUN_REQUIRE_NETNS:-0}" == 1 ]]; then echo "FAIL (SPOTRUN_REQUIRE_NETNS=1): $*"; exit 1; fi
    echo "SKIP: $*"
    exit 77
}
node_addr() { case $1 in h) echo 10.77.0.1 ;; a) echo 10.77.0.2 ;; b) echo 10.77.0.3 ;; c) echo 10.77.0.4 ;; esac; }
netns_cleanup() {
    local p n
    for n in a b c h sw; do
        for p in $(ip netns pids "$NS-$n" 2>/dev/null); do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
        ip netns del "$NS-$n" 2>/dev/null
    done
}
netns_nodes() {
    local n init
    [[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces)"
    for t in ip unshare ssh ssh-keygen /usr/sbin/sshd; do command -v "$t" >/dev/null || skip "$t is not installed"; done
    unshare --uts --pid --fork --mount-proc true 2>/dev/null || skip "unshare --uts --pid --mount-proc fails here"
    NS="spt$$"
    trap netns_cleanup EXIT
    ip netns add "$NS-sw" 2>/dev/null || skip "ip netns add fails here"
    { ip -n "$NS-sw" link add br0 type bridge && ip -n "$NS-sw" link set br0 up; } || skip "no bridge in a namespace"
    for n in h "$@"; do
        { ip netns add "$NS-$n" && ip link add "v$n$$" netns "$NS-sw" type veth peer name eth0 netns "$NS-$n"; } ||
            skip "no veth pair between namespaces"
        ip -n "$NS-sw" link set "v$n$$" master br0 up
        ip -n "$NS-$n" addr add "$(node_addr "$n")/24" dev eth0
        ip -n "$NS-$n" link set eth0 up
        ip -n "$NS-$n" link set lo up
    done
    { ssh-keygen -q -t ed25519 -N '' -f "$W/key" && ssh-keygen -q -t ed25519 -N '' -f "$W/hostkey"; } || fail "ssh-keygen failed"
    cp "$W/key.pub" "$W/authorized_keys"
    : >"$W/empty-bashrc"
    mkdir -p /run/sshd
    for n in "$@"; do
        mkdir -p "$W/tmp-$n"
        {
            echo "ListenAddress $(node_addr "$n")"
            echo "HostKey $W/hostkey"
            echo "AuthorizedKeysFile $W/authorized_keys"
            echo "PermitRootLogin prohibit-password"
            echo "PasswordAuthentication no"
            echo "KbdInteractiveAuthentication no"
            echo "UsePAM no"
            echo "StrictModes no"
            echo "PidFile $W/sshd-$n.pid"
            echo "SetEnv OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR=$W/tmp-$n"
        } >"$W/sshd-$n.conf"
        # A node starts its ssh sessions without this machine's ~/.bashrc (bash reads it for every command
        # sshd runs): a shell set-up that starts tens of programs per session made each ssh take seconds
        # on a busy machine, past the tests' --probe-timeout.
        init=""
        [[ -f "$HOME/.bashrc" ]] && init="mount --bind '$W/empty-bashrc' '$HOME/.bashrc' && "
        [[ -n "${NODE_MOUNTS:-}" ]] && init+="$("$NODE_MOUNTS" "$n") && "
        (ip netns exec "$NS-$n" unshare --uts --pid --fork --mount-proc sh -c "hostname node-$n && ${init}exec /usr/sbin/sshd -D -f '$W/sshd-$n.conf' -E '$W/sshd-$n.log'" &)
    done
    printf '#!/bin/sh\nexec ssh -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR "$@"\n' \
        "$W/key" >"$W/ssh"
    chmod +x "$W/ssh"
    for n in "$@"; do
        for ((k = 0; k < 250; ++k)); do [[ -s "$W/sshd-$n.pid" ]] && break; sleep 0.02; done
        ip netns exec "$NS-h" "$W/ssh" "$(node_addr "$n")" hostname >"$W/hostname.txt" 2>&1 ||
            skip "sshd of node $n does not answer: $(cat "$W/hostname.txt")"
    done
    NET=(-- --mca plm_rsh_agent "$W/ssh" --bind-to none --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24)
}
# What can happen to a node: its link goes down or up; every process on it is killed, stopped or continued.
link_down() { ip -n "$NS-sw" link set "v$1$$" down; }
link_up() { ip -n "$NS-sw" link set "v$1$$" up; }
node_signal() { kill "-$2" $(ip netns pids "$NS-$1") 2>/dev/null; }
# netns_launch DIR ARGS...: spotrun launch in namespace h (the head, with a PID namespace of its own too:
# launch's sweep of its own machine must not see the nodes' processes), in the background; LAUNCH_PID,
# OUT, ERR.
netns_launch() {
    local dir=$1
    shift
    OUT="$dir.out" ERR="$dir.err"
    timeout "${LAUNCH_LIMIT:-140}" ip netns exec "$NS-h" unshare --pid --kill-child --mount-proc "$SPOTRUN" launch "$W/deck.toml" --output-dir "$dir" "$@" "${NET[@]}" >"$OUT" 2>"$ERR" &
    LAUNCH_PID=$!
}
# wait_launch CODE [WHAT]: waits for the launch in the background (LAUNCH_PID); RC, a failure unless CODE.
wait_launch() {
    wait $LAUNCH_PID
    RC=$?
    [[ $RC -eq $1 ]] || fail "${2:-launch}: exit $RC, expected $1"
}
# attempt_id DIR: the launch attempt that DIR/status.json names.
attempt_id() { grep -o '"attempt":"[^"]*"' "$1/status.json" | cut -d'"' -f4; }
# reference_run NP DIR ARGS...: mpirun_run, a failure unless it exits 0.
reference_run() {
    mpirun_run "$@"
    [[ $RC -eq 0 ]] || fail "reference run failed: $RC"
}
# loss_setup [FIRST]: the nodes, the victim and the hostfile of netns, noisy and partition (the knobs at
# the top). NODES: the worker nodes; VICTIM: the node lost; KEPT: the others, in hostfile order; $W/hosts:
# one slot per node, FIRST (a node) first when given (its rank is rank 0); SURVIVORS: the placement
# launch.log names for the relaunch ("10.77.0.2:1 10.77.0.4:1"); STALL: the --stall-timeout option.
loss_setup() {
    local n
    NODES=(a b)
    [[ "${SPOTRUN_LOSS_NODES:-2}" == 3 ]] && NODES=(a b c)
    VICTIM=${SPOTRUN_LOSS_VICTIM:-b}
    [[ " ${NODES[*]} " == *" $VICTIM "* ]] || { fail "SPOTRUN_LOSS_VICTIM=$VICTIM is not one of ${NODES[*]}"; finish; }
    KEPT=() SURVIVORS=""
    : >"$W/hosts"
    [[ -n "${1:-}" ]] && echo "$(node_addr "$1") slots=1" >>"$W/hosts"
    for n in "${NODES[@]}"; do
        [[ "$n" == "${1:-}" ]] || echo "$(node_addr "$n") slots=1" >>"$W/hosts"
    done
    for n in $(cut -d' ' -f1 "$W/hosts"); do
        case $n in 10.77.0.2) n=a ;; 10.77.0.3) n=b ;; 10.77.0.4) n=c ;; esac
        [[ "$n" == "$VICTIM" ]] && continue
        KEPT+=("$n")
        SURVIVORS+="${SURVIVORS:+ }$(node_addr "$n"):1"
    done
    STALL=(--stall-timeout "${SPOTRUN_LOSS_STALL_TIMEOUT:-8}")
    [[ "${SPOTRUN_LOSS_STALL_TIMEOUT:-8}" == default ]] && STALL=() LAUNCH_LIMIT=240
}
# loss_launch NREF DIR ARGS...: after loss_setup, its nodes, the reference run into $W/ref (NREF ranks,
# LOSS_STEPS steps), then launch into DIR on $W/hosts with ARGS, as many steps, until checkpoint 100;
# attempt1: its attempt. LOSS_STEPS leaves the test time to act after checkpoint 100 (find the victim's
# rank, cut its link, stop it) before the run ends by itself, on a busy machine too: at 400 steps (0.3 s
# of stepping after checkpoint 100) a busy machine once saw the run finish first.
LOSS_STEPS=1500
loss_launch() {
    local nref=$1 dir=$2
    shift 2
    netns_nodes "${NODES[@]}"
    reference_run "$nref" "$W/ref" --set run.steps=$LOSS_STEPS
    netns_launch "$dir" --hostfile "$W/hosts" "$@" --set run.steps=$LOSS_STEPS
    wait_for "$dir/checkpoints/ckpt-100.h5"
    attempt1=$(attempt_id "$dir")
}
# expect_relaunched DIR: after loss_launch, launch relaunched once on the nodes kept (SURVIVORS), finished at
# step LOSS_STEPS, and no process of attempt 1 is left.
expect_relaunched() {
    expect_in "$1/launch.log" "attempt 2: start: ${#KEPT[@]} rank$([[ ${#KEPT[@]} -gt 1 ]] && echo s) on $SURVIVORS,"
    expect_in "$1/launch.log" "summary: finished at step $LOSS_STEPS. 2 attempts (1 restart)"
    [[ -n "$attempt1" ]] || fail "no attempt id in status.json"
    no_attempt_left "$attempt1"
}
# rank_in NODE DIR: the rank of the run into DIR in NODE's namespace.
rank_in() {
    local p
    for p in $(ranks_of "$2"); do [[ "$(ip netns identify "$p" 2>/dev/null)" == "$NS-$1" ]] && echo "$p"; done
}
# relaunch_times DIR LOST: how long after LOST (date +%s.%N) launch noticed the end of attempt 1 (its stall
# line, else its end line), started attempt 2, and attempt 2's time loop started (status.json).
relaunch_times() {
    local noticed started loop
    noticed=$(grep -m1 "attempt 1: stall: \|attempt 1: end after" "$1/launch.log" | cut -d' ' -f1)
    started=$(grep -m1 "attempt 2: start: " "$1/launch.log" | cut -d' ' -f1)
    loop=$(grep -o '"loop_started":"[^"]*"' "$1/status.json" | cut -d'"' -f4)
    awk -v l="$2" -v n="$(date -u -d "${noticed:-now}" +%s.%N)" -v s="$(date -u -d "${started:-now}" +%s.%N)" \
        -v t="$(date -u -d "${loop:-now}" +%s.%N)" 'BEGIN { printf "%.1f %.1f %.1f", n - l, s - l, t - l }'
}
# same_energy REF DIR WHAT: the last total energy of DIR equals REF's to 1e-6 relative.
same_energy() {
    local a b
    a=$(last_etotal "$1")
    b=$(last_etotal "$2")
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; s = a < 0 ? -a : a; exit !(a != "" && d <= 1e-6 * s) }' ||
        fail "final etotal $b ($3) differs from $a by more than 1e-6 relative"
    echo "final etotal: $a (reference) vs $b ($3)"
}
# no_attempt_left ID: no process of attempt ID on any node (they share this kernel), waiting up to 30 s.
no_attempt_left() {
    local until=$((SECONDS + 30))
    while ((SECONDS < until)); do [[ -z "$(attempt_procs "$1")" ]] && return 0; sleep 0.2; done
    fail "processes of attempt '$1' left: $(attempt_procs "$1")"
}
# Thermo rows in order: every step once, rising (two attempts writing at once would interleave them).
thermo_in_order() {
    awk -F, 'NR > 1 { if (NR > 2 && $1 + 0 <= last + 0) { print "row " NR ": step " $1 " after " last; bad = 1 } last = $1 } END { exit bad }' "$1/thermo.csv" ||
        fail "thermo.csv of $(basename "$1") is out of order"
}

# levels_mounts NODE (NODE_MOUNTS of the levels case): NODE's own folder at the common checkpoint.local_dir
# path; nodes other than a (rank 0's) get a folder of their own at the output directory's path too.
levels_mounts() {
    printf "mount --bind '%s' '%s'" "$W/node-$1/local" "$W/local"
    [[ "$1" == a ]] || printf " && mount --bind '%s' '%s'" "$W/node-$1/out" "$W/L"
}

case "$CASE" in
status)
    d="$W/s"
    mpirun_run 2 "$d" --set run.steps=200
    [[ $RC -eq 0 ]] || fail "run failed: $RC"
    status_has "$d" '"state":"finished","exit_code":0,"step":200,"final":"'"$d"'/final.h5"'
    status_has "$d" '"attempt":null'
    status_has "$d" '"ranks":2,"nodes":1'
    status_has "$d" '"start_step":0,"resumed_from":null,"loop_started":"20'
    valid_json "$d"
    # Stopped by SIGTERM in the time loop: the checkpoint it wrote, the step it resumed from.
    "$MPIEXEC" "$NPFLAG" 2 "$SPOTRUN" run "$W/deck.toml" --output-dir "$d" --set run.steps=100000 >"$OUT" 2>"$ERR" &
    pid=$!
    for ((k = 0; k < 3000; ++k)); do grep -q '"state":"running","step":200' "$d/status.json" && break; sleep 0.02; done
    sleep 0.3
    kill -TERM $(ranks_of "$d") || fail "no rank to signal"
    wait $pid
    RC=$?
    [[ $RC -eq 75 ]] || fail "SIGTERM in the loop: exit $RC, expected 75"
    step=$(grep -o 'Stopping at step [0-9]*' "$OUT" | awk '{print $4}')
    status_has "$d" '"state":"stopped","exit_code":75,"step":'"$step"',"reason":"signal SIGTERM","checkpoint":{"path":"'"$d/checkpoints/ckpt-$step.h5"'","step":'"$step"'}'
    status_has "$d" '"start_step":200,"resumed_from":"'"$d"'/final.h5"'
    [[ -f "$d/checkpoints/ckpt-$step.h5" ]] || fail "the checkpoint status.json names is missing"
    valid_json "$d"
    # Failed, exit 2: the physics changed (the lock is taken, then the resume is refused).
    mpirun_run 2 "$d" --set md.dt=0.001
    [[ $RC -eq 2 ]] || fail "changed physics: exit $RC, expected 2"
    status_has "$d" '"state":"failed","exit_code":2,"step":null,"reason":"'
    status_has "$d" 'the physics changed since checkpoint'
    valid_json "$d"
    # Failed, exit 1: an unstable system.
    mpirun_run 2 "$W/s1" --set md.dt=0.5
    [[ $RC -eq 1 ]] || fail "unstable run: exit $RC, expected 1"
    status_has "$W/s1" '"state":"failed","exit_code":1,'
    status_has "$W/s1" 'atoms lost at step'
    # A stop signal outside the time loop ends the process at once; the signal handler writes the record.
    stop_while_paused "reading a checkpoint" "$d" pause1
    [[ $RC -eq 75 ]] || fail "SIGTERM while reading a checkpoint: exit $RC, expected 75"
    status_has "$d" '"state":"stopped","exit_code":75,"step":null,"reason":"signal SIGTERM during reading a checkpoint","checkpoint":null'
    valid_json "$d"
    stop_while_paused "setting up the run" "$W/s2" pause2
    [[ $RC -eq 143 ]] || fail "SIGTERM while setting up a fresh run: exit $RC, expected 143"
    status_has "$W/s2" '"state":"failed","exit_code":143,"step":null,"reason":"signal SIGTERM during setting up the run"'
    valid_json "$W/s2"
    # launch: bad usage and bad input exit 2 before anything runs.
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/u" --no-such-option >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch with an unknown option did not exit 2"
    timeout 30 "$SPOTRUN" launch "$W/missing.toml" --output-dir "$W/u" >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch of a missing deck did not exit 2"
    expect_in "$ERR" "deck '$W/missing.toml' does not exist"
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/u" --set md.no_such_key=1 >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch of a deck with an unknown key did not exit 2"
    printf 'localhost slots=two\n' >"$W/bad-hosts"
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/u" --hostfile "$W/bad-hosts" >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch with a bad hostfile did not exit 2"
    expect_in "$ERR" "bad-hosts:1: slots must be a whole number"
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/u" -np 2 --min-ranks 3 >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch with --min-ranks above -np did not exit 2"
    # --hosts-command that fails, or prints a line that is not a host: exit 2, naming the command.
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/u" --hosts-command "echo gone >&2; exit 3" >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch with a failing --hosts-command did not exit 2"
    expect_in "$ERR" "--hosts-command 'echo gone >&2; exit 3' failed (exit 3): gone; it must print the hosts"
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/u" --hosts-command "echo 'node-a cores=4'" >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch with a malformed --hosts-command line did not exit 2"
    expect_in "$ERR" ":1: unknown word 'cores=4' (expected slots=N or max_slots=N)"
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/u" --grow >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch --grow without hosts did not exit 2"
    expect_in "$ERR" "--grow needs --hostfile or --hosts-command"
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/u" --hostfile "$W/bad-hosts" --hosts-command true >"$OUT" 2>"$ERR"
    [[ $? -eq 2 ]] || fail "launch with --hostfile and --hosts-command did not exit 2"
    [[ ! -e "$W/u/launch.log" ]] || fail "launch started although its usage was bad"
    ;;
kill)
    reference_run 2 "$W/ref" --set run.steps=600
    launch_bg "$W/k" -np 2 --max-restarts 3 --set run.steps=600
    wait_for "$W/k/checkpoints/ckpt-100.h5"
    # Past the checkpoint, so that steps are redone.
    for ((k = 0; k < 3000; ++k)); do [[ $(tail -1 "$W/k/thermo.csv" | cut -d, -f1) -ge 140 ]] && break; sleep 0.02; done
    kill_a_rank "$W/k"
    wait_launch 0
    expect_in "$W/k/launch.log" "attempt 1: end after"
    expect_in "$W/k/launch.log" "killed: ended without a record (killed)"
    expect_in "$W/k/launch.log" "exited on signal 9"
    expect_count "$W/k/launch.log" ": start: 2 ranks on localhost:2" 2
    expect_in "$W/k/launch.log" "summary: finished at step 600. 2 attempts (1 restart)"
    expect_in "$W/k.out" "Resuming from $W/k/checkpoints/ckpt-"
    # Steps redone = the step reached minus the checkpoint step the relaunch resumed from.
    line=$(grep "attempt 1: end after" "$W/k/launch.log")
    reached=$(grep -o "reached step [0-9]*" <<<"$line" | grep -o "[0-9]*$")
    newest=$(grep -o "newest checkpoint: step [0-9]*" <<<"$line" | grep -o "[0-9]*$")
    redone=$(grep -o "[0-9]* steps\? redone" <<<"$line" | grep -o "^[0-9]*")
    resumed=$(grep -o "attempt 2: end after .*started at step [0-9]*" "$W/k/launch.log" | grep -o "[0-9]*$")
    [[ -n "$reached" && "$reached" -ge 140 ]] || fail "attempt 1 did not reach step 140: $line"
    [[ "$newest" == "$resumed" ]] || fail "attempt 2 resumed from step $resumed, not the newest checkpoint $newest"
    [[ "$redone" -eq $((reached - newest)) ]] || fail "steps redone $redone, expected $reached - $newest: $line"
    expect_in "$W/k/launch.log" "summary: finished at step 600. 2 attempts (1 restart), $redone step"
    status_has "$W/k" '"state":"finished","exit_code":0,"step":600'
    grep -q '"attempt":"[0-9]*-[0-9]*/2"' "$W/k/status.json" || fail "status.json is not attempt 2's"
    # Every dataset and attribute of final.h5 (h5diff without a tolerance: values compared exactly; the
    # files' bytes differ in HDF5's own metadata, such as object times), and /md/x and /md/v by name.
    h5diff "$W/ref/final.h5" "$W/k/final.h5" && h5diff -q "$W/ref/final.h5" "$W/k/final.h5" /md/x &&
        h5diff -q "$W/ref/final.h5" "$W/k/final.h5" /md/v ||
        fail "final.h5 after a SIGKILL and a relaunch is not bit-identical to the run in one go"
    ;;
shrink)
    reference_run 3 "$W/ref" --set run.steps=600
    # Three hosts of one slot and a fourth that is gone (its probe fails before every attempt).
    fake_hosts
    echo 127.0.0.5 >"$W/down"
    printf '# three hosts; the fourth is gone\n127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n127.0.0.5 slots=2\n' >"$W/hosts"
    launch_bg "$W/h" --hostfile "$W/hosts" --min-ranks 2 --probe-timeout 10 --set run.steps=600 "${FAKE[@]}"
    wait_for "$W/h/checkpoints/ckpt-100.h5"
    # The hostfile loses 127.0.0.4 while the run goes on; then a rank is killed.
    printf '127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.5 slots=2\n' >"$W/hosts"
    kill_a_rank "$W/h"
    wait_launch 0
    expect_count "$W/h/launch.log" "host 127.0.0.5 left out: its probe failed" 2
    expect_in "$W/h/launch.log" "attempt 1: start: 3 ranks on 127.0.0.2:1 127.0.0.3:1 127.0.0.4:1"
    expect_in "$W/h/launch.log" "attempt 2: start: 2 ranks on 127.0.0.2:1 127.0.0.3:1"
    expect_in "$W/h/launch.log" "summary: finished at step 600. 2 attempts (1 restart)"
    status_has "$W/h" '"ranks":2,"nodes":2'
    a=$(last_etotal "$W/ref")
    b=$(last_etotal "$W/h")
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; s = a < 0 ? -a : a; exit !(d <= 1e-6 * s) }' ||
        fail "final etotal $b (3 -> 2 ranks) differs from $a (3 ranks throughout) by more than 1e-6 relative"
    echo "final etotal: $a (3 ranks) vs $b (3 -> 2 ranks)"
    ;;
notice)
    # The metadata service (loopback) serves IMDSv2; the node 127.0.0.3 says Amazon EC2 in its DMI folder, so
    # with cloud.provider = "auto" only its node-local rank 0 polls it.
    [[ -x "$SERVER" ]] || fail "no test server given"
    mkdir -p "$W/imds/latest/api" "$W/imds/latest/meta-data/spot"
    printf TESTTOKEN >"$W/imds/latest/api/token"
    "$SERVER" --root "$W/imds" --port-file "$W/port" --log "$W/requests.log" --lifetime 110 &
    srv=$!
    for ((k = 0; k < 100; ++k)); do [[ -s "$W/port" ]] && break; sleep 0.05; done
    url="http://127.0.0.1:$(cat "$W/port")"
    fake_hosts
    echo 127.0.0.3 >"$W/aws-host"
    printf '127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n' >"$W/hosts"
    launch_bg "$W/n" --hostfile "$W/hosts" --set run.steps=400 --set cloud.provider=auto \
        --set "cloud.metadata_url=$url" --set cloud.poll_seconds=0.2 "${FAKE[@]}"
    wait_for "$W/n/checkpoints/ckpt-100.h5"
    deadline_epoch=$(($(date +%s) + 90))
    deadline=$(date -u -d "@$deadline_epoch" +%Y-%m-%dT%H:%M:%SZ)
    printf '{"action": "terminate", "time": "%s"}' "$deadline" >"$W/imds/latest/meta-data/spot/instance-action.tmp"
    mv "$W/imds/latest/meta-data/spot/instance-action.tmp" "$W/imds/latest/meta-data/spot/instance-action"
    for ((k = 0; k < 3000; ++k)); do grep -q "attempt 1: end after" "$W/n/launch.log" && break; sleep 0.02; done
    stopped=$(date +%s)
    wait $LAUNCH_PID
    RC=$?
    kill $srv 2>/dev/null
    wait $srv 2>/dev/null
    [[ $RC -eq 0 ]] || fail "launch: exit $RC, expected 0"
    [[ $stopped -lt $deadline_epoch ]] || fail "attempt 1 ended after the notice's deadline"
    expect_in "$W/n.out" ": spot notice (aws: terminate at $deadline, "
    expect_in "$W/n/launch.log" "attempt 1: start: 3 ranks on 127.0.0.2:1 127.0.0.3:1 127.0.0.4:1"
    grep "attempt 1: end after" "$W/n/launch.log" | grep -qF "stopped (exit 75): spot notice (aws: terminate at $deadline" ||
        fail "attempt 1 did not end stopped by the notice: $(grep 'attempt 1: end' "$W/n/launch.log")"
    expect_in "$W/n/launch.log" "attempt 1: host 127.0.0.3 is not used again: it got a spot notice"
    expect_in "$W/n/launch.log" "host 127.0.0.3 left out: it failed in an earlier attempt"
    expect_in "$W/n/launch.log" "attempt 2: start: 2 ranks on 127.0.0.2:1 127.0.0.4:1"
    expect_in "$W/n/launch.log" "summary: finished at step 400. 2 attempts (1 restart), 0 steps redone"
    step=$(sed -n 's/^Stopping at step \([0-9]*\): spot notice.*/\1/p' "$W/n.out")
    expect_in "$W/n.out" "Resuming from $W/n/checkpoints/ckpt-$step.h5 at step $step"
    status_has "$W/n" '"state":"finished","exit_code":0,"step":400'
    echo "notice served $((deadline_epoch - 90)), attempt 1 ended by $stopped (deadline $deadline_epoch)"
    ;;
doctor)
    # spotrun doctor before the attempt, on three hosts, rank 2 (on 127.0.0.4) planted 10 times slower
    # (SPOTRUN_DOCTOR_SLOW_RANK): 127.0.0.4 is left out, and the attempt runs on the hosts the doctor
    # passed. --doctor-slow-factor 0.2: a figure is slow at a fifth of its peers' median, which the planted
    # rank always is. The other figures of three "nodes" sharing this machine's cores with whatever else
    # runs can still be that far apart (MPI latency over TCP is the worst); if the doctor names every
    # host, launch must give up with its clear message, which is checked instead of the run.
    fake_hosts
    printf '127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n' >"$W/hosts"
    export SPOTRUN_DOCTOR_SLOW_RANK=2 SPOTRUN_DOCTOR_QUICK=1
    launch_bg "$W/d" --hostfile "$W/hosts" --doctor-slow-factor 0.2 --set run.steps=200 "${FAKE[@]}"
    wait $LAUNCH_PID
    RC=$?
    expect_in "$W/d/launch.log" "attempt 1: doctor: spotrun doctor on 3 hosts"
    expect_in "$W/d/launch.log" "attempt 1: doctor: not healthy after"
    # The verdict names one figure per rank: the planted rank is slow in every CPU figure, and which one
    # it names first depends on what else the machine runs.
    expect_in "$W/d/launch.log" "rank 2 (host 127.0.0.4): cpu."
    left=$(grep "attempt 1: doctor: not healthy" "$W/d/launch.log" | sed -n 's/.*; hosts left out of this attempt: //p')
    [[ ", $left," == *", 127.0.0.4,"* ]] || fail "the doctor's verdict did not leave out 127.0.0.4: '$left'"
    /usr/bin/python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$W/d/doctor.json" ||
        fail "doctor.json is not valid JSON"
    if [[ "$left" == "127.0.0.2, 127.0.0.3, 127.0.0.4" ]]; then
        [[ $RC -eq 1 ]] || fail "launch --doctor with every host failing: exit $RC, expected 1"
        expect_in "$W/d/launch.log" "gave up: only 0 ranks fit on the hosts spotrun doctor passed, fewer than --min-ranks 1"
        echo "the doctor named every host (noise on this machine): launch gave up as it must"
    else
        [[ $RC -eq 0 ]] || fail "launch --doctor: exit $RC, expected 0"
        start=$(grep "attempt 1: start: " "$W/d/launch.log")
        for h in 127.0.0.2 127.0.0.3 127.0.0.4; do
            if [[ ", $left," == *", $h,"* ]]; then
                [[ "$start" != *" $h:"* ]] || fail "attempt 1 runs on $h, which the doctor failed: $start"
            else
                [[ "$start" == *" $h:1"* ]] || fail "attempt 1 does not run on $h, which the doctor passed: $start"
            fi
        done
        expect_in "$W/d/launch.log" "summary: finished at step 200. 1 attempt (0 restarts)"
        echo "left out by the doctor: $left"
    fi
    ;;
stall)
    reference_run 3 "$W/ref" --set run.steps=300
    fake_hosts
    printf '127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n' >"$W/hosts"
    launch_bg "$W/t" --hostfile "$W/hosts" --stall-timeout 8 --max-restarts 2 --set run.steps=300 "${FAKE[@]}"
    wait_for "$W/t/checkpoints/ckpt-100.h5"
    wait_for "$W/t/heartbeats/127.0.0.3.json"
    attempt1=$(attempt_id "$W/t")
    victim=$(rank_on 127.0.0.3 "$W/t")
    [[ -n "$attempt1" && -n "$victim" ]] || fail "no attempt id ($attempt1) or no rank on 127.0.0.3 ($victim)"
    # A process of the attempt outside mpirun's process group here (on a real node, ssh's session holds
    # them): only the fence, by attempt id, ends it.
    setsid env "SPOTRUN_LAUNCH_ATTEMPT=$attempt1" sleep 300 >/dev/null 2>&1 &
    decoy=$!
    kill -STOP "$victim"
    stopped=$(date +%s.%N)
    # launch.log names the stall; status.json says "stalled" until attempt 2 replaces it.
    saw_status=0
    for ((k = 0; k < 3000; ++k)); do
        grep -q '"state":"stalled"' "$W/t/status.json" 2>/dev/null && saw_status=1 && break
        sleep 0.02
    done
    noticed=$(grep -m1 "attempt 1: stall: " "$W/t/launch.log" | cut -d' ' -f1)
    wait $LAUNCH_PID
    RC=$?
    kill -KILL "$victim" 2>/dev/null && fail "the stopped rank (PID $victim) was still there after launch ended"
    kill -0 "$decoy" 2>/dev/null && [[ "$(cut -d' ' -f3 "/proc/$decoy/stat" 2>/dev/null)" != Z ]] &&
        fail "the decoy of attempt $attempt1 (PID $decoy) was not killed"
    kill -KILL "$decoy" 2>/dev/null
    wait "$decoy" 2>/dev/null
    [[ $RC -eq 0 ]] || fail "launch: exit $RC, expected 0"
    [[ $saw_status -eq 1 ]] || fail "status.json never said stalled"
    [[ -n "$noticed" ]] || fail "launch.log names no stall"
    took=$(awk -v a="$stopped" -v b="$(date -u -d "$noticed" +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    echo "stall noticed $took s after the SIGSTOP (--stall-timeout 8)"
    awk -v t="$took" 'BEGIN { exit !(t >= 4 && t <= 25) }' || fail "stall noticed after $took s, expected 8 s (+ a few)"
    # Either the step or 127.0.0.3's heartbeat is seen to stop first; both name that host.
    grep "attempt 1: stall: " "$W/t/launch.log" | grep -q "heartbeat stopped: 127.0.0.3;\|the heartbeat of 127.0.0.3 stopped" ||
        fail "the stall does not name 127.0.0.3's heartbeat: $(grep 'attempt 1: stall' "$W/t/launch.log")"
    expect_in "$W/t/launch.log" "attempt 1: fence: host 127.0.0.2: "
    fenced=$(grep -o "attempt 1: fence: host [0-9.]*: [0-9]* process" "$W/t/launch.log" | awk '{ n += $6 } END { print n + 0 }')
    [[ $fenced -ge 1 ]] || fail "the fence killed no process"
    grep "attempt 1: end after" "$W/t/launch.log" | grep -q ": stalled: " || fail "attempt 1 did not end stalled"
    [[ -z "$(attempt_procs "$attempt1")" ]] || fail "processes of attempt $attempt1 left: $(attempt_procs "$attempt1")"
    expect_in "$W/t/launch.log" "attempt 2: start: 3 ranks on 127.0.0.2:1 127.0.0.3:1 127.0.0.4:1"
    expect_in "$W/t/launch.log" "summary: finished at step 300. 2 attempts (1 restart)"
    h5diff "$W/ref/final.h5" "$W/t/final.h5" && h5diff -q "$W/ref/final.h5" "$W/t/final.h5" /md/x ||
        fail "final.h5 after a stall and a relaunch is not bit-identical to the run in one go"
    # The report: attempt 1 lost, its steps up to the last step a heartbeat reported.
    reached=$(grep -o "attempt 1: end after .*reached step [0-9]*" "$W/t/launch.log" | grep -o "[0-9]*$")
    head -1 "$W/t/attempts.jsonl" | grep -q '"state":"lost"' || fail "attempt 1 is not lost in the ledger"
    head -1 "$W/t/attempts.jsonl" | grep -q "\"end_step\":$reached," ||
        fail "the ledger's attempt 1 does not end at the last heartbeat's step $reached: $(head -1 "$W/t/attempts.jsonl")"
    ;;
watchdog)
    # Two ranks under one mpirun, each in a UTS namespace of its own with its own host name (node-w0,
    # node-w1), as the checkpoint-levels tests make simulated nodes: Open MPI sees one node, the heartbeats
    # must see two (one file per host name). Without unshare --uts the watchdog is checked alone, and the
    # case ends skipped (exit 77).
    uts=(sh -c 'exec "$@"' sh)
    if unshare --uts true 2>/dev/null; then
        uts=(unshare --uts sh -c 'hostname "node-w$OMPI_COMM_WORLD_RANK" && exec "$@"' sh)
    fi
    SPOTRUN_STALL_TIMEOUT=6 "$MPIEXEC" "$NPFLAG" 2 "${uts[@]}" "$SPOTRUN" run "$W/deck.toml" --output-dir "$W/w" >"$OUT" 2>"$ERR" &
    pid=$!
    wait_for "$W/w/checkpoints/ckpt-100.h5"
    if [[ ${uts[0]} == unshare ]]; then
        wait_for "$W/w/heartbeats/node-w0.json"
        wait_for "$W/w/heartbeats/node-w1.json"
        grep -q '"host":"node-w1",' "$W/w/heartbeats/node-w1.json" && grep -q '"rank":1,' "$W/w/heartbeats/node-w1.json" ||
            fail "node-w1's heartbeat is not rank 1's: $(cat "$W/w/heartbeats/node-w1.json")"
        [[ $(ls "$W/w/heartbeats" | grep -c '\.json$') -eq 2 ]] || fail "heartbeat files: $(ls "$W/w/heartbeats")"
    fi
    victim=$(ranks_of "$W/w" | tail -1)
    kill -STOP "$victim"
    stopped=$SECONDS
    ( sleep 60; kill -KILL "$victim" 2>/dev/null ) >/dev/null 2>&1 &
    guard=$!
    wait $pid
    RC=$?
    kill $guard 2>/dev/null
    kill -KILL "$victim" 2>/dev/null
    echo "mpirun ended $((SECONDS - stopped)) s after the SIGSTOP, exit $RC"
    [[ $((SECONDS - stopped)) -lt 55 ]] || fail "the run did not end by itself"
    [[ $RC -eq 76 ]] || fail "mpirun: exit $RC, expected 76 (a rank's watchdog)"
    grep -q "ERROR: spotrun watchdog: rank [01] on host .*: no step progress for [0-9]* s (stall timeout 6 s" "$ERR" ||
        fail "no watchdog message: $(tail -5 "$ERR")"
    if [[ ${uts[0]} != unshare && $FAILED -eq 0 ]]; then
        skip "the watchdog passed; heartbeats per host name not checked (unshare --uts fails here)"
    fi
    ;;
netns)
    # A node (b; SPOTRUN_LOSS_VICTIM) is lost silently: its link goes down, then everything on it ends (its
    # sshd too).
    loss_setup
    loss_launch ${#NODES[@]} "$W/L" "${STALL[@]}" --probe-timeout 8
    wait_for "$W/L/heartbeats/node-$VICTIM.json"
    sleep "${SPOTRUN_LOSS_DELAY:-0}"  # tools/loss_campaign.sh: a random moment
    link_down "$VICTIM"
    node_signal "$VICTIM" KILL
    lost=$(date +%s.%N)
    wait_launch 0
    stall=$(grep -m1 "attempt 1: stall: " "$W/L/launch.log")
    [[ -n "$stall" ]] || fail "launch.log names no stall"
    timeout=$(grep -o "stall timeout [0-9]* s" <<<"$stall" | head -1 | grep -o "[0-9]*")
    read -r took started loop <<<"$(relaunch_times "$W/L" "$lost")"
    echo "node $VICTIM lost: stall noticed after $took s (stall timeout ${timeout:-?} s), attempt 2 started after $started s, its time loop after $loop s"
    # The stall cannot be seen before the timeout (less the heartbeat in flight), and is seen soon after.
    awk -v t="$took" -v s="${timeout:-0}" 'BEGIN { exit !(s > 0 && t >= s - 3 && t <= s + 17) }' ||
        fail "stall noticed after $took s, expected about the stall timeout (${timeout:-none named})"
    grep -q "node-$VICTIM" <<<"$stall" || fail "the stall does not name node-$VICTIM: $stall"
    for n in "${KEPT[@]}"; do expect_in "$W/L/launch.log" "attempt 1: fence: host $(node_addr "$n"): "; done
    expect_in "$W/L/launch.log" "attempt 1: fence: host $(node_addr "$VICTIM") did not answer"
    expect_relaunched "$W/L"
    same_energy "$W/ref" "$W/L" "${#NODES[@]} -> ${#KEPT[@]} ranks"
    head -1 "$W/L/attempts.jsonl" | grep -q "\"ended_by\":\"stall: heartbeat stopped on node-$VICTIM\"" ||
        fail "the ledger does not say attempt 1 ended by a stall: $(head -1 "$W/L/attempts.jsonl")"
    ;;
noisy)
    # A node (b; SPOTRUN_LOSS_VICTIM) is lost noisily: its processes are killed (their connections reset),
    # then its link goes down.
    loss_setup
    loss_launch ${#NODES[@]} "$W/L" "${STALL[@]}" --probe-timeout 5
    sleep "${SPOTRUN_LOSS_DELAY:-0}"  # tools/loss_campaign.sh: a random moment
    node_signal "$VICTIM" KILL
    link_down "$VICTIM"
    lost=$(date +%s.%N)
    wait_launch 0
    read -r took started loop <<<"$(relaunch_times "$W/L" "$lost")"
    echo "node $VICTIM lost: attempt 1 ended after $took s, attempt 2 started after $started s, its time loop after $loop s"
    expect_in "$W/L/launch.log" "attempt 1: end after"
    expect_relaunched "$W/L"
    same_energy "$W/ref" "$W/L" "${#NODES[@]} -> ${#KEPT[@]} ranks"
    thermo_in_order "$W/L"
    echo "attempt 1: $(grep -o 'attempt 1: end after .*; mpirun [^;]*' "$W/L/launch.log")"
    ;;
partition)
    # Attempt 1's rank 0 runs on the victim node (b; SPOTRUN_LOSS_VICTIM), alone with two nodes (-np 1),
    # with the other two with three. The victim is partitioned and frozen (its link down, every process on
    # it stopped, as a node cut off from the network and its shared file system: NFS writes block), launch
    # declares the stall, the fence gets no answer from it, attempt 2 runs on the other node(s). Then the
    # partition heals: the victim's processes go on. The watchdog is off (SPOTRUN_STALL_TIMEOUT=0, passed
    # on by launch as it is), so only the fence stops its rank, which would otherwise write its heartbeat
    # at once, then (alone) thermo rows, checkpoints and status.json into the run. It must stop without
    # writing (exit 77).
    loss_setup "${SPOTRUN_LOSS_VICTIM:-b}"
    export SPOTRUN_STALL_TIMEOUT=0
    np=(-np 1) nref=1
    [[ ${#NODES[@]} -eq 3 ]] && np=() nref=3
    loss_launch $nref "$W/P" "${np[@]}" "${STALL[@]}" --probe-timeout 4
    wait_for "$W/P/heartbeats/node-$VICTIM.json"
    old=$(rank_in "$VICTIM" "$W/P")
    [[ -n "$attempt1" && -n "$old" ]] || fail "no attempt id ($attempt1) or rank on node $VICTIM ($old) of attempt 1"
    sleep "${SPOTRUN_LOSS_DELAY:-0}"  # tools/loss_campaign.sh: a random moment
    link_down "$VICTIM"
    node_signal "$VICTIM" STOP
    lost=$(date +%s.%N)
    # Attempt 2's rank 0 finds the lock held by attempt 1's (frozen): it waits for it, fenced.
    for ((k = 0; k < 6000; ++k)); do grep -q "no longer the current one: waiting" "$ERR" && break; sleep 0.02; done
    expect_in "$ERR" "is held by attempt $attempt1 ("
    [[ "$(cat "$W/P/attempt")" == "${attempt1%/1}/2" ]] || fail "OUTDIR/attempt does not name attempt 2: $(cat "$W/P/attempt")"
    beat=$(cksum <"$W/P/heartbeats/node-$VICTIM.json")
    # The partition heals.
    link_up "$VICTIM"
    node_signal "$VICTIM" CONT
    for ((k = 0; k < 1500; ++k)); do kill -0 $old 2>/dev/null || break; sleep 0.02; done
    kill -0 $old 2>/dev/null && fail "attempt 1's rank (PID $old) still runs 30 s after the partition healed"
    [[ "$(cksum <"$W/P/heartbeats/node-$VICTIM.json")" == "$beat" ]] || fail "attempt 1's rank wrote its heartbeat after the heal"
    wait_launch 0
    read -r took started loop <<<"$(relaunch_times "$W/P" "$lost")"
    echo "node $VICTIM cut off: stall noticed after $took s, attempt 2 started after $started s"
    expect_in "$W/P/launch.log" "attempt 1: fence: host $(node_addr "$VICTIM") did not answer"
    expect_relaunched "$W/P"
    expect_in "$ERR" "took the lock of output directory '$W/P' once fenced attempt $attempt1 let go of it"
    thermo_in_order "$W/P"
    grep -q "\"attempt\":\"${attempt1%/1}/2\"" "$W/P/status.json" || fail "status.json is not attempt 2's: $(cat "$W/P/status.json")"
    [[ $(grep -c '"launch_attempt"' "$W/P/attempts.jsonl") -eq 2 ]] || fail "the ledger does not hold the two attempts"
    if [[ $nref -eq 1 ]]; then
        # Same rank count (1) throughout: bit-identical to the run in one go.
        h5diff "$W/ref/final.h5" "$W/P/final.h5" || fail "final.h5 after the partition is not bit-identical to the run in one go"
    fi
    same_energy "$W/ref" "$W/P" "$nref -> ${#KEPT[@]} rank(s), node $VICTIM partitioned"
    ;;
ckpt_loss)
    # Node b is lost (link down, its processes killed) while checkpoint 200 is being written, its temporary
    # file half written (SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE): the relaunch on node a resumes from
    # checkpoint 100, the half-written file is removed, and the energy is that of an uninterrupted run.
    netns_nodes a b
    reference_run 2 "$W/ref" --set run.steps=400
    export SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE=200=4
    printf '10.77.0.2 slots=1\n10.77.0.3 slots=1\n' >"$W/hosts"
    netns_launch "$W/C" --hostfile "$W/hosts" --stall-timeout 8 --probe-timeout 4 --set run.steps=400
    wait_for "$W/C/checkpoints/ckpt-200.h5.tmp"
    attempt1=$(attempt_id "$W/C")
    link_down b
    node_signal b KILL
    wait_launch 0
    grep "attempt 2: start: 1 rank on 10.77.0.2:1," "$W/C/launch.log" | grep -q "newest checkpoint: step 100" ||
        fail "attempt 2 does not start on node a alone from checkpoint 100"
    expect_in "$W/C/spotrun.log" "Removing incomplete checkpoint $W/C/checkpoints/ckpt-200.h5.tmp"
    expect_in "$W/C.out" "Resuming from $W/C/checkpoints/ckpt-100.h5 at step 100"
    expect_in "$W/C/launch.log" "summary: finished at step 400. 2 attempts (1 restart)"
    [[ -n "$attempt1" ]] || fail "no attempt id in status.json"
    no_attempt_left "$attempt1"
    same_energy "$W/ref" "$W/C" "2 -> 1 ranks, node lost in a checkpoint write"
    ;;
levels)
    # Three worker nodes a, b, c (one rank each) and no file system shared for the checkpoints:
    # checkpoint.local_dir = $W/local on every node, bound in its mount namespace to a folder of its own
    # ($W/node-<n>/local), checkpoint.partner = true. The output directory lives on rank 0's node, a (the
    # first host), as docs/checkpoints.md says: the head, which runs launch, sees it too (launch would run
    # there); nodes b and c get a folder of their own bound at its path, so nothing they write there
    # reaches the run (nor launch: their heartbeats stay on their disks). After checkpoint 100 node b is lost
    # silently (its link down, then its processes killed, its local directory deleted with its disk):
    # launch sees the step stop in node a's heartbeat, fences (b does not answer) and relaunches on a and
    # c, which resume from the newest set, node b's file read from its partner copy on node c (the next
    # host name).
    # Oracles: thermo.csv and the final state (spotrun export --lammps-data of final.levels, on a and c:
    # every position, velocity and image, %.17g) equal the same rank history run by hand with shared
    # checkpoints (3 ranks to that step, then 2); the final total energy equals an uninterrupted 3-rank
    # run's to 1e-6 relative; no process of attempt 1 is left on any node.
    mkdir -p "$W/local" "$W/L"
    for n in a b c; do mkdir -p "$W/node-$n/local" "$W/node-$n/out"; done
    unshare --mount sh -c "mount --bind '$W/node-a/local' '$W/local'" 2>"$W/mount.err" ||
        skip "mount --bind in a mount namespace fails here: $(cat "$W/mount.err")"
    NODE_MOUNTS=levels_mounts
    netns_nodes a b c
    printf '10.77.0.2 slots=1\n10.77.0.3 slots=1\n10.77.0.4 slots=1\n' >"$W/hosts"
    LEVELS=(--set "checkpoint.local_dir=$W/local" --set checkpoint.partner=true)
    netns_launch "$W/L" --hostfile "$W/hosts" --stall-timeout 8 --probe-timeout 5 --set run.steps=600 "${LEVELS[@]}"
    wait_for "$W/L/checkpoints/ckpt-100.levels" 100
    attempt1=$(grep -o '"attempt":"[^"]*"' "$W/L/status.json" | cut -d'"' -f4)
    link_down b
    node_signal b KILL
    rm -rf "$W/node-b/local"  # node b's disk is gone with it, before the relaunch
    wait $LAUNCH_PID
    RC=$?
    [[ $RC -eq 0 ]] || fail "launch: exit $RC, expected 0"
    grep "start: \|end after\|summary: " "$W/L/launch.log" | cut -d' ' -f2- | cut -c1-200
    expect_in "$W/L/launch.log" "attempt 1: start: 3 ranks on 10.77.0.2:1 10.77.0.3:1 10.77.0.4:1,"
    expect_in "$W/L/launch.log" "summary: finished at step 600. 2 attempts (1 restart)"
    # Only node a's heartbeat reaches the output directory: the stall is the step's, and says so.
    expect_in "$W/L/launch.log" "attempt 1: stall: step "
    expect_in "$W/L/launch.log" "heartbeats seen from 1 of the 3 hosts (node-a), none stopped; the others' do not reach $W/L/heartbeats"
    expect_in "$W/L/launch.log" "attempt 1: fence: host 10.77.0.3 did not answer"
    # The set the relaunch resumed from: launch.log's newest checkpoint, the run's output, and which copy of
    # each node file it read.
    step=$(grep -o "attempt 2: start: 2 ranks on 10.77.0.2:1 10.77.0.4:1, .*newest checkpoint: step [0-9]*" "$W/L/launch.log" | grep -o "[0-9]*$")
    [[ -n "$step" ]] || fail "attempt 2 did not start on nodes a and c from a checkpoint: $(grep "attempt 2: start" "$W/L/launch.log")"
    step=${step:-0}
    grep "^Resuming from \|^  node file " "$W/L/spotrun.log"
    expect_in "$W/L.out" "Resuming from $W/L/checkpoints/ckpt-$step.levels at step $step"
    expect_in "$W/L/spotrun.log" "node file ckpt-$step.node-a.h5 (node 0 of 3, host node-a): own copy on host node-a,"
    expect_in "$W/L/spotrun.log" "node file ckpt-$step.node-b.h5 (node 1 of 3, host node-b): partner copy on host node-c, $W/local/"
    expect_in "$W/L/spotrun.log" "node file ckpt-$step.node-c.h5 (node 2 of 3, host node-c): own copy on host node-c,"
    [[ -n "$attempt1" ]] || fail "no attempt id in status.json"
    no_attempt_left "$attempt1"
    thermo_in_order "$W/L"
    status_has "$W/L" '"state":"finished","exit_code":0,"step":600,"final":"'"$W/L"'/final.levels"'
    # No checkpoint file in the output directory; nothing at the common local path outside the nodes;
    # node b's disk not needed (gone); nodes b and c wrote nothing of the run into their own folder at the
    # output directory's path but their heartbeats.
    [[ -z "$(find "$W/L" -name '*.h5*')" ]] || fail "a checkpoint file in the output directory: $(find "$W/L" -name '*.h5*')"
    [[ -z "$(ls -A "$W/local")" ]] || fail "the head's $W/local is not empty: $(ls -A "$W/local")"
    [[ ! -e "$W/node-b/local" ]] || fail "node b's local directory came back"
    ls "$W"/node-c/local/spotrun-*/partner/final.node-b.h5 >/dev/null 2>&1 &&
        fail "node c holds a partner copy of node b's final file (node b was not in attempt 2)"
    ls "$W"/node-c/local/spotrun-*/final.node-c.h5 >/dev/null 2>&1 || fail "no final.node-c.h5 in node c's own local directory"
    for n in b c; do
        left=$(find "$W/node-$n/out" -mindepth 1 -not -path "*/heartbeats*")
        [[ -z "$left" ]] || fail "node $n wrote into its own folder at the output directory's path: $left"
        [[ -f "$W/node-$n/out/heartbeats/node-$n.json" ]] || fail "node $n's heartbeat is not in its own folder"
    done
    [[ "$(ls "$W/L/heartbeats")" == node-a.json ]] || fail "heartbeats in the output directory: $(ls "$W/L/heartbeats")"
    # By hand, with shared checkpoints (no local_dir): 3 ranks to the step resumed from, then 2 to the end.
    mpirun_run 3 "$W/hand" --set run.steps=$step && [[ $RC -eq 0 ]] &&
        mpirun_run 2 "$W/hand" --set run.steps=600 && [[ $RC -eq 0 ]] || fail "the runs by hand failed: $RC"
    expect_in "$OUT" "Resuming from $W/hand/final.h5 at step $step"
    cmp "$W/hand/thermo.csv" "$W/L/thermo.csv" || fail "thermo.csv after the node loss differs from the rank history 3 ($step) 2 by hand"
    # The final state: final.levels read on nodes a and c (node b's final file never existed), exported exactly.
    ip netns exec "$NS-h" timeout 60 "$MPIEXEC" -np 2 --host 10.77.0.2:1,10.77.0.4:1 "${NET[@]:1}" \
        "$SPOTRUN" export "$W/L/final.levels" --lammps-data "$W/levels.data" >"$W/export.out" 2>&1 ||
        fail "spotrun export of final.levels on nodes a and c failed: $(cat "$W/export.out")"
    "$SPOTRUN" export "$W/hand/final.h5" --lammps-data "$W/hand.data" >"$W/export-hand.out" 2>&1 ||
        fail "spotrun export of the hand run's final.h5 failed: $(cat "$W/export-hand.out")"
    # The files' first line names the file exported; the rest is the state.
    expect_in "$W/levels.data" "spotrun export of $W/L/final.levels (step 600,"
    cmp <(tail -n +2 "$W/hand.data") <(tail -n +2 "$W/levels.data") ||
        fail "the final state after the node loss differs from the rank history by hand"
    mpirun_run 3 "$W/ref" --set run.steps=600
    [[ $RC -eq 0 ]] || fail "reference run failed: $RC"
    same_energy "$W/ref" "$W/L" "3 -> 2 ranks, node b's file from its partner copy"
    ;;
grow)
    # One of two hosts at first (--hosts-command prints them); after checkpoint 100 the second comes back.
    # At the next checkpoint launch measures the relaunch cost and the saving, stops the run with a
    # checkpoint (SIGUSR1) and relaunches on 2 ranks (the machine's 2 cores: no oversubscription). Oracle:
    # the same rank history run by hand (1 rank to the stop step, then 2) ends bit-identical; a 2-rank run
    # in one go within 1e-6. A slower pair kernel (results unchanged: 120 passes, about 0.02 s a step) makes
    # the saving worth a relaunch even when the second host is seen late: at 30 passes (0.005 s a step) a
    # busy machine once saw it only at step 300, where the saving (0.77 s) fell below the start-up (0.81 s).
    fake_hosts
    export SPOTRUN_TEST_FORCE_SLOWDOWN=120
    printf '127.0.0.2 slots=1\n' >"$W/hosts-now"
    launch_bg "$W/g" --hosts-command "cat $W/hosts-now" --grow --set run.steps=600 "${FAKE[@]}"
    wait_for "$W/g/checkpoints/ckpt-100.h5"
    printf '127.0.0.2 slots=1\n127.0.0.3 slots=1 # back\n' >"$W/hosts-now.tmp"
    mv "$W/hosts-now.tmp" "$W/hosts-now"
    wait_launch 0
    expect_in "$W/g/launch.log" "attempt 1: start: 1 rank on 127.0.0.2:1"
    expect_in "$W/g/launch.log" "attempt 1: grow: at step "
    expect_in "$W/g/launch.log" "2 ranks fit with 127.0.0.3 (1 slot) instead of 1: relaunch cost "
    expect_in "$W/g/launch.log" "stopping with a checkpoint to relaunch on 2 ranks"
    expect_in "$W/g/launch.log" "attempt 2: start: 2 ranks on 127.0.0.2:1 127.0.0.3:1"
    expect_in "$W/g/launch.log" "summary: finished at step 600. 2 attempts (0 restarts)"
    grep "attempt 1: grow: \|attempt [12]: end after" "$W/g/launch.log" | cut -d' ' -f2-
    step=$(grep -o '"start_step":[0-9]*' "$W/g/status.json" | grep -o '[0-9]*$')
    [[ -n "$step" && $step -gt 100 ]] || fail "attempt 2 did not start from the stop checkpoint: $(cat "$W/g/status.json")"
    sed -n 1p "$W/g/attempts.jsonl" | grep '"ranks":1,' | grep -q '"ended_by":"grow: 1 -> 2 ranks"' ||
        fail "the ledger does not say attempt 1 (1 rank) ended to grow: $(sed -n 1p "$W/g/attempts.jsonl")"
    sed -n 2p "$W/g/attempts.jsonl" | grep '"ranks":2,' | grep -q '"ended_by":"finished"' ||
        fail "the ledger's attempt 2 does not have 2 ranks: $(sed -n 2p "$W/g/attempts.jsonl")"
    # By hand: 1 rank to the stop step, then 2 ranks from there.
    unset SPOTRUN_TEST_FORCE_SLOWDOWN
    mpirun_run 1 "$W/hand" --set run.steps=$step
    [[ $RC -eq 0 ]] || fail "hand run to step $step failed: $RC"
    mpirun_run 2 "$W/hand" --set run.steps=600
    [[ $RC -eq 0 ]] || fail "hand run from step $step failed: $RC"
    h5diff "$W/hand/final.h5" "$W/g/final.h5" || fail "final.h5 after growing is not bit-identical to the same rank history by hand"
    reference_run 2 "$W/ref" --set run.steps=600
    same_energy "$W/ref" "$W/g" "1 -> 2 ranks"
    ;;
regrow)
    # Node b's link goes down (it stays up, cut off): launch declares the stall, gets no answer from b's
    # fence and relaunches on node a alone; --hosts-command stops naming b, as a cloud API does for an
    # instance it lost. Then b's link comes back and the command names it again: at attempt 2's next
    # checkpoint launch probes b, fences what attempt 1 left there (its rank ended itself, fenced, once
    # attempt 2 started: the output directory is shared), weighs a relaunch and grows back onto 2 ranks.
    # Oracle: the same rank history run by hand (2 ranks, 1, then 2) ends bit-identical; a 2-rank run in one
    # go within 1e-6. A slower pair kernel (results unchanged: 200 passes, about 0.03 s a step at 1 rank) makes
    # the saving worth a relaunch even when b is probed late: on a busy machine b once answered only at step
    # 500, where 60 passes (0.008 s a step) saved 2.0 s against a start-up of 2.4 s and no relaunch came.
    netns_nodes a b
    export SPOTRUN_TEST_FORCE_SLOWDOWN=200
    printf '10.77.0.2 slots=1\n10.77.0.3 slots=1\n' >"$W/hosts-now"
    netns_launch "$W/R" --hosts-command "cat $W/hosts-now" --grow --stall-timeout 8 --probe-timeout 4 --set run.steps=1000
    wait_for "$W/R/checkpoints/ckpt-100.h5"
    attempt1=$(attempt_id "$W/R")
    link_down b
    printf '10.77.0.2 slots=1\n' >"$W/hosts-now.tmp" && mv "$W/hosts-now.tmp" "$W/hosts-now"
    # Attempt 2 runs (its record in status.json): b comes back.
    for ((k = 0; k < 6000; ++k)); do grep -q "\"attempt\":\"${attempt1%/1}/2\"" "$W/R/status.json" 2>/dev/null && break; sleep 0.02; done
    link_up b
    printf '10.77.0.2 slots=1\n10.77.0.3 slots=1\n' >"$W/hosts-now.tmp" && mv "$W/hosts-now.tmp" "$W/hosts-now"
    wait_launch 0
    grep "stall: \|fence: \|grow: \|start: \|end after" "$W/R/launch.log" | cut -d' ' -f2-
    expect_in "$W/R/launch.log" "attempt 1: start: 2 ranks on 10.77.0.2:1 10.77.0.3:1"
    expect_in "$W/R/launch.log" "attempt 1: fence: host 10.77.0.3 did not answer"
    expect_in "$W/R/launch.log" "attempt 2: start: 1 rank on 10.77.0.2:1,"
    expect_in "$W/R/launch.log" "attempt 2: grow: host 10.77.0.3 answers again: "
    expect_in "$W/R/launch.log" " process(es) of attempt $attempt1 killed there"
    expect_in "$W/R/launch.log" "2 ranks fit with 10.77.0.3 (1 slot) instead of 1: relaunch cost "
    expect_in "$W/R/launch.log" "attempt 3: start: 2 ranks on 10.77.0.2:1 10.77.0.3:1,"
    expect_in "$W/R/launch.log" "summary: finished at step 1000. 3 attempts (1 restart)"
    [[ -n "$attempt1" ]] || fail "no attempt id in status.json"
    no_attempt_left "$attempt1"
    no_attempt_left "${attempt1%/1}/2"
    sed -n 3p "$W/R/attempts.jsonl" | grep -q '"ranks":2,' || fail "the ledger's attempt 3 does not have 2 ranks"
    # The rank history: attempt 2 resumed from checkpoint c1 (1 rank), attempt 3 from the stop checkpoint s.
    c1=$(grep -o "attempt 2: end after .*started at step [0-9]*" "$W/R/launch.log" | grep -o "[0-9]*$")
    s=$(grep -o '"start_step":[0-9]*' "$W/R/status.json" | grep -o '[0-9]*$')
    [[ -n "$c1" && -n "$s" && $s -gt $c1 ]] || fail "no rank history: attempt 2 from step '$c1', attempt 3 from '$s'"
    mpirun_run 2 "$W/hand" --set run.steps=$c1 && [[ $RC -eq 0 ]] &&
        mpirun_run 1 "$W/hand" --set run.steps=$s && [[ $RC -eq 0 ]] &&
        mpirun_run 2 "$W/hand" --set run.steps=1000 && [[ $RC -eq 0 ]] || fail "the runs by hand failed: $RC"
    h5diff "$W/hand/final.h5" "$W/R/final.h5" ||
        fail "final.h5 after the loss and the grow is not bit-identical to the rank history 2 ($c1) 1 ($s) 2 by hand"
    reference_run 2 "$W/ref" --set run.steps=1000
    same_energy "$W/ref" "$W/R" "2 -> 1 -> 2 ranks"
    ;;
give_up)
    # The system blows up at step 4 every time: two attempts, then launch stops.
    launch_bg "$W/g" -np 2 --max-restarts 5 --set md.dt=0.5
    wait_launch 1 "launch of an unstable deck"
    expect_count "$W/g/launch.log" ": start: " 2
    expect_in "$W/g/launch.log" "summary: gave up: attempt 2 failed, as attempt 1 did, without a new checkpoint in between"
    expect_in "$W/g.err" "the failure repeats without progress"
    status_has "$W/g" '"state":"failed","exit_code":1,'
    # --max-restarts 0: one rank killed after a checkpoint ends the launch.
    launch_bg "$W/m" -np 2 --max-restarts 0
    wait_for "$W/m/checkpoints/ckpt-100.h5"
    kill_a_rank "$W/m"
    wait_launch 1 "launch --max-restarts 0 after a kill"
    expect_in "$W/m/launch.log" "summary: gave up after 0 restarts (--max-restarts 0)"
    expect_count "$W/m/launch.log" ": start: " 1
    # --min-ranks: fewer slots than that left: no attempt.
    printf 'localhost slots=1\n' >"$W/one-slot"
    launch_bg "$W/n" --hostfile "$W/one-slot" --min-ranks 2
    wait_launch 1 "launch with fewer slots than --min-ranks"
    expect_in "$W/n/launch.log" "gave up: only 1 rank fit on the hosts left, fewer than --min-ranks 2"
    ;;
ctrl_c)
    # A run far longer than the test (so that it is still running when SIGINT comes, however fast the
    # machine); the resume then sets the run's end (run.steps may change on resume).
    launch_bg "$W/c" -np 2 --set run.steps=1000000
    wait_for "$W/c/checkpoints/ckpt-100.h5"
    # One launch per output directory.
    timeout 30 "$SPOTRUN" launch "$W/deck.toml" --output-dir "$W/c" -np 2 >"$W/second.out" 2>"$W/second.err"
    [[ $? -eq 2 ]] || fail "a second launch into the same output directory did not exit 2"
    expect_in "$W/second.err" "is supervised by another spotrun launch"
    # SIGINT to launch itself: `timeout` (LAUNCH_PID) would pass it on to launch and to its whole process
    # group, so launch could see two requests (the second one escalates to SIGTERM).
    launch_child=$(pgrep -P $LAUNCH_PID -x "$PROGRAM_NAME")
    [[ -n "$launch_child" ]] || fail "no spotrun launch process under $LAUNCH_PID"
    kill -INT $launch_child
    wait_launch 75 "SIGINT to launch"
    expect_count "$W/c/launch.log" ": start: " 1
    expect_in "$W/c/launch.log" "SIGINT: stopping the run with a checkpoint (SIGUSR1 to mpirun"
    expect_in "$W/c/launch.log" "summary: stopped on request with a checkpoint at step"
    status_has "$W/c" '"state":"stopped","exit_code":75,'
    status_has "$W/c" '"reason":"signal SIGUSR1","checkpoint":{"path":"'"$W/c/checkpoints/ckpt-"
    step=$(grep -o '"checkpoint":{"path":"[^"]*","step":[0-9]*' "$W/c/status.json" | grep -o '[0-9]*$')
    [[ -n "$step" && -f "$W/c/checkpoints/ckpt-$step.h5" ]] || fail "no stop checkpoint"
    [[ -z "$(ranks_of "$W/c")" ]] || fail "ranks still running after launch exited"
    # The same command resumes and finishes.
    end=$((step + 200 > 1500 ? step + 200 : 1500))
    launch_bg "$W/c" -np 2 --set run.steps=$end
    wait_launch 0 "launch after the stop"
    expect_in "$W/c.out" "Resuming from $W/c/checkpoints/ckpt-$step.h5 at step $step"
    status_has "$W/c" '"state":"finished","exit_code":0,"step":'"$end"
    status_has "$W/c" "\"start_step\":$step,"
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
echo "case $CASE took $((SECONDS - T0)) s"
finish
