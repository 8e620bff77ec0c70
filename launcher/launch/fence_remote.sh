# The remote half of fencing, 2 (launcher/launch/fence.hpp): `spotrun launch` runs this on each host of an
# attempt through mpirun, as /bin/sh -c SCRIPT fence NAME=VALUE (embedded in spotrun at build time). It
# kills every process of the host whose environment holds NAME=VALUE exactly (the attempt's
# SPOTRUN_LAUNCH_ATTEMPT=<id>; never a process chosen by its name) and prints "fenced N", N the processes
# it killed: a host that prints no such line did not answer the fence.
n=0
for d in /proc/[0-9]*; do
  if tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qxF "$1"; then
    kill -KILL "${d#/proc/}" 2>/dev/null && n=$((n+1))
  fi
done
echo "fenced $n"
