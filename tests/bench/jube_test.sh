#!/usr/bin/env bash
# bench/jube/spotrun.xml through JUBE in the suite's tiny mode (tag smoke): every suite deck at 1 and 2
# ranks, one workpackage each; then the result table must hold a complete row with a ratio for each, and
# every workpackage's outputs must pass tests/bench/check_results.py.
#   jube_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
command -v jube >/dev/null || { echo "jube not found (Debian: jube)"; exit 1; }
lammps=no
command -v "${LMP:-lmp}" >/dev/null 2>&1 && lammps=yes
cd "$work"
SPOTRUN_BUILD="$build" jube run "$src/bench/jube/spotrun.xml" --tag smoke --outpath "$work/jube" --hide-animation --error
jube result "$work/jube" --only suite_csv --style csv > "$work/table.csv"
cat "$work/table.csv"
/usr/bin/python3 - "$work" "$src" "$lammps" <<'PY'
import csv, glob, json, os, subprocess, sys
work, src, lammps = sys.argv[1:]
rows = [r for r in csv.DictReader(l for l in open(os.path.join(work, "table.csv")) if l.count(",") > 5)]
want = {(s, r) for s in ("lj", "lj-weak", "chain", "charged", "npt", "minimize", "fluid", "fluid-weak", "fft",
                          "checkpoint", "halo", "halo-weak")
        for r in ("1", "2")}
got = {(r["suite"], r["ranks"]) for r in rows}
problems = [f"no row for {x}" for x in sorted(want - got)]
for r in rows:
    if r["status"] != "complete" or r["mode"] != "smoke" or int(r["records_cnt"] or 0) < 2:
        problems.append(f"row {r}: not complete")
    if not (r["suite"].split("-")[0] in ("lj", "chain", "charged", "minimize") and lammps == "no") and not float(r["ratio_first"] or "nan") > 0:
        problems.append(f"row {r}: no ratio")
dirs = glob.glob(os.path.join(work, "jube", "*", "*", "work", "result"))
if len(dirs) != len(want):
    problems.append(f"{len(dirs)} workpackage results, expected {len(want)}")
for d in dirs:
    meta = json.load(open(os.path.join(d, "results.json")))["meta"]
    rc = subprocess.run(["/usr/bin/python3", os.path.join(src, "tests", "bench", "check_results.py"), d, "--suites",
                         ",".join(meta["suites"]), "--ranks", ",".join(map(str, meta["ranks"])), "--lammps", lammps])
    if rc.returncode:
        problems.append(f"{d}: check_results failed")
for p in problems:
    print("PROBLEM:", p)
sys.exit(1 if problems else 0)
PY
echo "PASS: JUBE ran the benchmark suite (smoke) and its table is complete"
