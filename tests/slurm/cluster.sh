# shellcheck shell=bash
# A private one-node Slurm cluster for tests, from Debian 12's packages: slurm-wlm (slurmctld, slurmd,
# the client commands) and munge. Source this file, then:
#
#   slurm_cluster_usable || exit 77          # prints why not (not root, packages missing)
#   slurm_cluster_start "$WORK/cluster"      # configuration, state, logs and munge socket in that dir
#   ... sbatch / squeue / scontrol (SLURM_CONF is exported) ...
#   slurm_cluster_stop                       # kills the daemons and every process of this cluster's jobs
#
# The cluster: one node with SLURM_TEST_CPUS CPUs (default 4, whatever the machine has: slurmd is
# told to trust the configuration) and SLURM_TEST_GPUS stand-in GPUs (default 2: gres/gpu devices that
# are links to /dev/null, enough for Slurm to bind one "GPU" per task and set CUDA_VISIBLE_DEVICES);
# partitions "debug" (default, preemptible: PreemptMode=REQUEUE, GraceTime SLURM_TEST_GRACE seconds,
# default 30) and "high" (higher PriorityTier: its jobs preempt debug jobs; preempted jobs get their
# --signal first, SlurmctldParameters=preempt_send_user_signal); MpiDefault=pmix; no accounting (use
# `scontrol show job`, not sacct). Daemons run in the foreground in their own sessions and are stopped
# by PID; ports are picked at random among free ones and job ids start at a random number, so several
# clusters can run side by side. Needs root (slurmd starts jobs as their user).
#
# Measured behaviour this relies on (Debian 12, Slurm 22.05): the node is idle ~0.5 s after slurmd
# starts; cred_expire=10 lets a requeued job start again within seconds (the default 120 delays it
# ~150 s); PID 1 may reap orphans late, so liveness is read from /proc/PID/stat, not kill -0;
# slurmstepd outlives slurmd, so teardown also kills this cluster's slurmstepd and job processes.

SLURM_TEST_PACKAGES="slurm-wlm munge"

# slurm_cluster_usable: 0 if a private cluster can be started here; else prints the reason, returns 1.
slurm_cluster_usable() {
  if [ "$(id -u)" != 0 ]; then
    echo "Slurm tests need root (slurmd runs jobs as their user); not root"
    return 1
  fi
  local b missing=()
  for b in munged slurmctld slurmd sbatch squeue scontrol scancel srun; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || missing+=("$b")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "Slurm tests need the Debian packages: $SLURM_TEST_PACKAGES (missing: ${missing[*]})"
    return 1
  fi
  if [ ! -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] && ! ls /usr/lib/*/slurm-wlm/mpi_pmix.so >/dev/null 2>&1; then
    echo "Slurm tests need Slurm's PMIx plugin (mpi_pmix.so, package slurm-wlm-basic-plugins)"
    return 1
  fi
  return 0
}

_slurm_bin() { command -v "$1" 2>/dev/null || echo "/usr/sbin/$1"; }

# A TCP port no socket uses, below the kernel's ephemeral range (ip_local_port_range, 32768.. by default):
# a port in that range can be taken by any outgoing connection (MPI, sshd, the S3 stand-in of other tests)
# between this choice and the daemon's bind, which then fails with "Address already in use".
_slurm_free_port() {
  local p used lo=20000 hi eph
  eph=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
  hi=$(( ${eph:-32768} - 1 ))
  (( hi > lo + 1000 )) || { lo=10000; hi=19999; }
  used=$(ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
  while :; do
    p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
    grep -qx "$p" <<<"$used" || { echo "$p"; return; }
  done
}

# _slurm_alive PID: the process exists and is not a zombie.
_slurm_alive() {
  local s
  s=$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}

# PIDs of every live process of this cluster: the daemons (marked with SPOTRUN_SLURM_TEST_CLUSTER),
# slurmstepd and job processes (this cluster's SLURM_CONF, and a SLURM_JOB_ID unless slurmstepd).
_slurm_cluster_pids() {
  local f pid
  {
    grep -lzxF "SPOTRUN_SLURM_TEST_CLUSTER=$SLURM_TEST_DIR" /proc/[0-9]*/environ 2>/dev/null
    # slurmstepd does not inherit the marker, but has this cluster's SLURM_CONF; job processes too.
    grep -lzxF "SLURM_CONF=$SLURM_TEST_DIR/etc/slurm.conf" /proc/[0-9]*/environ 2>/dev/null | while read -r f; do
      { grep -qx slurmstepd "${f%/environ}/comm" 2>/dev/null || grep -qz "^SLURM_JOB_ID=" "$f" 2>/dev/null; } && echo "$f"
    done
  } | sort -u | while read -r f; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    [ "$pid" = "$$" ] && continue
    _slurm_alive "$pid" && echo "$pid"
  done
}

_slurm_wait_dead() {  # _slurm_wait_dead SECONDS PID...: 0 when all are gone
  local deadline=$((SECONDS + $1)) p left
  shift
  while :; do
    left=0
    for p in "$@"; do _slurm_alive "$p" && left=1; done
    [ $left = 0 ] && return 0
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.1
  done
}

# slurm_cluster_start DIR: starts munged, slurmctld and slurmd with everything under DIR (created).
# Exports SLURM_CONF, SLURM_TEST_DIR, SLURM_TEST_NODE. Returns 1 (after printing the logs) on failure.
slurm_cluster_start() {
  SLURM_TEST_DIR=$(mkdir -p "$1" && cd "$1" && pwd)
  local d=$SLURM_TEST_DIR cpus=${SLURM_TEST_CPUS:-4} gpus=${SLURM_TEST_GPUS:-2} grace=${SLURM_TEST_GRACE:-30}
  mkdir -p "$d/etc" "$d/munge" "$d/state" "$d/spool" "$d/log" "$d/run" "$d/tmp" "$d/dev"
  chmod 0755 "$d" "$d/munge"
  chmod 1777 "$d/tmp"
  # munged insists that every directory above its socket is searchable by all.
  local up=$d
  while [ "$up" != / ]; do
    up=$(dirname "$up")
    [ "$(( $(stat -c %#a "$up") & 1 ))" = 1 ] || { echo "slurm_cluster_start: $up must be searchable by all (chmod o+x)"; return 1; }
  done
  SLURM_TEST_NODE="spotrun$((RANDOM % 9000 + 1000))"
  local ctld_port slurmd_port host
  ctld_port=$(_slurm_free_port)
  slurmd_port=$(_slurm_free_port)
  while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(_slurm_free_port); done
  host=$(hostname -s)
  head -c 1024 /dev/urandom >"$d/munge/munge.key"
  chmod 0400 "$d/munge/munge.key"
  local gres="" k
  if [ "$gpus" -gt 0 ]; then
    gres="Gres=gpu:$gpus"
    echo "AutoDetect=off" >"$d/etc/gres.conf"
    for k in $(seq 0 $((gpus - 1))); do
      ln -sf /dev/null "$d/dev/nvidia$k"
      echo "NodeName=$SLURM_TEST_NODE Name=gpu File=$d/dev/nvidia$k" >>"$d/etc/gres.conf"
    done
  fi
  cat >"$d/etc/slurm.conf" <<CONF
ClusterName=spotrun-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket.2,cred_expire=10
MailProg=/bin/true
MpiDefault=pmix
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=1
SlurmdParameters=config_overrides
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
TmpFS=$d/tmp
FirstJobId=$((RANDOM % 900 * 1000 + 1000))
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=600
KillWait=30
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
SlurmctldParameters=preempt_send_user_signal
GresTypes=gpu
NodeName=$SLURM_TEST_NODE NodeHostname=$host NodeAddr=127.0.0.1 Port=$slurmd_port CPUs=$cpus RealMemory=1000 $gres State=UNKNOWN
PartitionName=debug Nodes=$SLURM_TEST_NODE Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime=$grace
PartitionName=high Nodes=$SLURM_TEST_NODE MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
CONF
  # PMIx directories per job step in this cluster's tmp (the default /tmp/spmix_appdir_<uid>_<job>.<step>
  # would collide between clusters, and a killed step leaves it behind).
  echo "PMIxCliTmpDirBase=$d/tmp" >"$d/etc/mpi.conf"
  export SLURM_CONF=$d/etc/slurm.conf
  # The marker lets teardown find the daemons' slurmstepd (which inherit the environment).
  SPOTRUN_SLURM_TEST_CLUSTER=$d setsid "$(_slurm_bin munged)" -F --socket="$d/munge/munge.socket.2" \
    --key-file="$d/munge/munge.key" --pid-file="$d/run/munged.pid" --log-file="$d/log/munged.log" \
    --seed-file="$d/munge/munged.seed" </dev/null >>"$d/log/munged.out" 2>&1 &
  SLURM_TEST_MUNGED_PID=$!
  disown "$SLURM_TEST_MUNGED_PID"  # no "Killed" report from bash should teardown need SIGKILL
  local _
  for _ in $(seq 1 50); do [ -S "$d/munge/munge.socket.2" ] && break; sleep 0.1; done
  if [ ! -S "$d/munge/munge.socket.2" ]; then
    echo "munged did not start:"; cat "$d/log/munged.log" "$d/log/munged.out" 2>/dev/null
    slurm_cluster_stop; return 1
  fi
  SPOTRUN_SLURM_TEST_CLUSTER=$d setsid "$(_slurm_bin slurmctld)" -D -i -f "$SLURM_CONF" </dev/null \
    >>"$d/log/slurmctld.out" 2>&1 &
  SLURM_TEST_SLURMCTLD_PID=$!
  disown "$SLURM_TEST_SLURMCTLD_PID"
  SPOTRUN_SLURM_TEST_CLUSTER=$d setsid "$(_slurm_bin slurmd)" -D -N "$SLURM_TEST_NODE" -f "$SLURM_CONF" </dev/null \
    >>"$d/log/slurmd.out" 2>&1 &
  SLURM_TEST_SLURMD_PID=$!
  disown "$SLURM_TEST_SLURMD_PID"
  export SLURM_TEST_DIR SLURM_TEST_NODE
  local state=""
  for _ in $(seq 1 200); do
    state=$(sinfo -h -n "$SLURM_TEST_NODE" -o %T 2>/dev/null | head -1)
    case "$state" in idle | idle~ | mixed) break ;; esac
    if ! _slurm_alive "$SLURM_TEST_SLURMCTLD_PID" || ! _slurm_alive "$SLURM_TEST_SLURMD_PID"; then break; fi
    sleep 0.1
  done
  if [ "$state" != idle ]; then
    echo "the test cluster did not come up (node state '${state}'):"
    tail -n 30 "$d/log/slurmctld.log" "$d/log/slurmctld.out" "$d/log/slurmd.log" "$d/log/slurmd.out" 2>/dev/null
    slurm_cluster_stop; return 1
  fi
  echo "test cluster up: node $SLURM_TEST_NODE, $cpus CPUs, $gpus stand-in GPUs, ports $ctld_port/$slurmd_port, in $d"
}

# slurm_cluster_stop: stops the daemons by PID and kills this cluster's slurmstepd and job processes.
slurm_cluster_stop() {
  [ -n "${SLURM_TEST_DIR:-}" ] || return 0
  local pids p
  for p in ${SLURM_TEST_SLURMD_PID:-} ${SLURM_TEST_SLURMCTLD_PID:-}; do kill -TERM "$p" 2>/dev/null; done
  # shellcheck disable=SC2086  # empty when not started
  _slurm_wait_dead 5 ${SLURM_TEST_SLURMD_PID:-} ${SLURM_TEST_SLURMCTLD_PID:-} || true
  # Everything left of this cluster (slurmstepd outlives slurmd; job steps outlive slurmstepd).
  pids=$(_slurm_cluster_pids | grep -vx "${SLURM_TEST_MUNGED_PID:-x}")
  for p in $pids ${SLURM_TEST_SLURMD_PID:-} ${SLURM_TEST_SLURMCTLD_PID:-}; do kill -KILL "$p" 2>/dev/null; done
  # shellcheck disable=SC2086  # lists of PIDs
  _slurm_wait_dead 5 $pids ${SLURM_TEST_SLURMD_PID:-} ${SLURM_TEST_SLURMCTLD_PID:-} ||
    echo "WARNING: processes of the test cluster survived SIGKILL: $pids"
  if [ -n "${SLURM_TEST_MUNGED_PID:-}" ]; then
    kill -TERM "$SLURM_TEST_MUNGED_PID" 2>/dev/null
    _slurm_wait_dead 5 "$SLURM_TEST_MUNGED_PID" || kill -KILL "$SLURM_TEST_MUNGED_PID" 2>/dev/null
  fi
  SLURM_TEST_MUNGED_PID=''
  SLURM_TEST_SLURMCTLD_PID=''
  SLURM_TEST_SLURMD_PID=''
}

# --- job helpers -------------------------------------------------------------------------------------
# job_field ID FIELD: one field of `scontrol show job` (JobState, Restarts, ExitCode, Reason, ...).
job_field() {
  scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# wait_job ID SECONDS STATE...: waits until the job is in one of the states; prints the state reached.
# Returns 1 on timeout.
wait_job() {
  local id=$1 deadline=$((SECONDS + $2)) s
  shift 2
  while :; do
    s=$(job_field "$id" JobState)
    for want in "$@"; do [ "$s" = "$want" ] && { echo "$s"; return 0; }; done
    if [ $SECONDS -ge $deadline ]; then echo "$s"; return 1; fi
    sleep 0.2
  done
}
