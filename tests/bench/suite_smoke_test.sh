#!/usr/bin/env bash
# The benchmark suite end to end in its tiny mode: every suite deck of bench/suite/ at the given rank
# counts (bench/suite.py --smoke), then its outputs checked (tests/bench/check_results.py: schema, every
# ratio recomputed from its two records, a record per suite and rank count with its peer or floor,
# report.md, summary.txt, the PNG plots). No timing is judged.
#   suite_smoke_test.sh SOURCE_DIR BUILD_DIR WORK_DIR RANKS
set -euo pipefail
src=$1 build=$2 work=$3 ranks=$4
rm -rf "$work" && mkdir -p "$work"
lammps=no
command -v "${LMP:-lmp}" >/dev/null 2>&1 && lammps=yes
/usr/bin/python3 "$src/bench/suite.py" --smoke --ranks "$ranks" --build "$build" --out "$work/out" --scratch "$work/scratch"
/usr/bin/python3 "$src/tests/bench/check_results.py" "$work/out" --ranks "$ranks" --lammps "$lammps"
# The check can fail: the same outputs with one ratio off by 1e-6 must not pass.
cp -r "$work/out" "$work/tampered"
/usr/bin/python3 - "$work/tampered/results.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
r = next(r for r in doc["records"] if r["ratio"] is not None)
r["ratio"] *= 1 + 1e-6
json.dump(doc, open(sys.argv[1], "w"))
PY
if /usr/bin/python3 "$src/tests/bench/check_results.py" "$work/tampered" --ranks "$ranks" --lammps "$lammps" > "$work/tampered.txt"; then
  cat "$work/tampered.txt"; echo "FAIL: a tampered ratio passed the check"; exit 1
fi
grep -q "ratio" "$work/tampered.txt" || { cat "$work/tampered.txt"; echo "FAIL: the tampered ratio not named"; exit 1; }
echo "PASS: benchmark suite smoke run at ranks $ranks (LAMMPS: $lammps)"
