#!/usr/bin/env bash
# Copies the job body of the scripts `spotrun submit` writes (launcher/submit.cpp, the text after
# "# ---- spotrun job body") into slurm/spotrun-cpu.sbatch and slurm/spotrun-gpu.sbatch, whose settings
# above that line are kept. Run it after changing the body in submit.cpp; the test slurm.scripts fails
# while they differ.
# usage: tests/slurm/update_scripts.sh BUILD/launcher/spotrun
set -euo pipefail
SPOTRUN=$(realpath "$1")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/deck.toml"
(cd "$tmp" && "$SPOTRUN" submit deck.toml --dry-run --output-dir out 2>/dev/null) |
  sed -n '/^# ---- spotrun job body/,$p' >"$tmp/body"
[ -s "$tmp/body" ] || { echo "no job body in the output of $SPOTRUN submit --dry-run" >&2; exit 1; }
for s in "$ROOT/slurm/spotrun-cpu.sbatch" "$ROOT/slurm/spotrun-gpu.sbatch"; do
  { sed '/^# ---- spotrun job body/,$d' "$s"; cat "$tmp/body"; } >"$tmp/new"
  if cmp -s "$tmp/new" "$s"; then
    echo "$s: up to date"
  else
    cat "$tmp/new" >"$s"
    echo "$s: updated"
  fi
done
