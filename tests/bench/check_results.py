#!/usr/bin/python3
"""Checks the outputs of a benchmark suite run (bench/suite.py --out DIR): prints each problem and exits 1
when there is any.

  check_results.py DIR [--suites a,b] [--ranks 1,2] [--lammps yes|no]

- results.json: status complete; the schema and the honesty checks of bench/suite_records.check_records;
  and, independently of it, every ratio recomputed here from the medians of the samples of its two records;
- every suite of --suites measured at every rank count of --ranks, each with its reference (LAMMPS for
  lj when --lammps yes, raw FFTW for fft, the floors for fluid, checkpoint and halo); lj with --lammps yes
  also against LAMMPS -sf opt (lj.spotrun-vs-opt: the samples of lj.spotrun, and every -sf opt run's log
  shows the pair style lj/cut/opt), without LAMMPS no such record; the same for md.precision = "mixed"
  (lj.spotrun-mixed, lj.spotrun-mixed-vs-opt); lj strong records against a peer carry their target;
  from two ranks lj.comm_share against lj.comm_share_no_overlap (the halo overlap on and off); chain the
  same against LAMMPS and LAMMPS -sf opt (chain.spotrun, chain.spotrun-vs-opt; target on chain.spotrun),
  and always chain.bond_time against chain.loop_time (the bonded share of the loop, with its target);
  charged: charged.spotrun against LAMMPS (with its target), charged.kspace_time against charged.fft_floor
  (with its target), charged.kspace_share (the samples of charged.kspace_time) against charged.loop_time and
  charged.fft_floor (1 r2c + the gradient) against charged.fft_three_c2r (1 r2c + 3 c2r);
  npt: npt.spotrun against npt.nvt (spotrun's own NVT run, with its target 1/1.1), with LAMMPS also
  npt.lammps (fix npt) against npt.lammps-nvt (fix nvt) and npt.spotrun-vs-lammps (the samples of
  npt.spotrun) against npt.lammps, without it neither; minimize: minimize.spotrun (force evaluations, with its
  target 1.0) and minimize.time against LAMMPS's, every minimisation at the perfect crystal's energy and, with
  LAMMPS, stopped by the same criterion as LAMMPS;
- report.md: a table per suite, and each suite's measured duration (meta.suite_seconds); summary.txt: one
  line per record; the three plots are PNG images.
"""
import argparse
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))
import suite_records as sr  # noqa: E402

# suite kind -> [(measurement name, name of its reference record)]
# measured only against a peer: absent without LAMMPS; their samples are those of the measurement named
PEER_ONLY = {"lj.spotrun-vs-opt": "lj.spotrun", "lj.spotrun-mixed-vs-opt": "lj.spotrun-mixed",
             "chain.spotrun-vs-opt": "chain.spotrun", "npt.spotrun-vs-lammps": "npt.spotrun"}
# records of LAMMPS measured against LAMMPS: absent without it (their samples are their own)
LAMMPS_ONLY = {"npt.lammps"}
# the measurements whose reference is LAMMPS: without it, no reference
LAMMPS_REFERENCED = ({"lj.spotrun", "lj.spotrun-mixed", "chain.spotrun", "charged.spotrun", "minimize.spotrun",
                      "minimize.time"} | set(PEER_ONLY) | LAMMPS_ONLY)
EXPECTED = {
    "lj": [("lj.spotrun", "lj.lammps"), ("lj.spotrun-vs-opt", "lj.lammps-opt"), ("lj.spotrun-mixed", "lj.lammps"),
           ("lj.spotrun-mixed-vs-opt", "lj.lammps-opt")],
    "chain": [("chain.spotrun", "chain.lammps"), ("chain.spotrun-vs-opt", "chain.lammps-opt"),
              ("chain.bond_time", "chain.loop_time")],
    "charged": [("charged.spotrun", "charged.lammps"), ("charged.kspace_time", "charged.fft_floor"),
                ("charged.kspace_share", "charged.loop_time"), ("charged.fft_floor", "charged.fft_three_c2r")],
    "npt": [("npt.spotrun", "npt.nvt"), ("npt.spotrun-vs-lammps", "npt.lammps"), ("npt.lammps", "npt.lammps-nvt")],
    "minimize": [("minimize.spotrun", "minimize.lammps"), ("minimize.time", "minimize.lammps_time")],
    "fluid": [("fluid.step", "fluid.fft_floor")],
    "fft": [("fft.transform", "fft.fftw_raw")],
    "checkpoint": [("checkpoint.write", "checkpoint.raw_write"), ("checkpoint.read", "checkpoint.raw_read"),
                   ("checkpoint.async_blocking", "checkpoint.write"), ("checkpoint.step_background", "checkpoint.step_idle")]
    # the durable flush's records where rclone is installed (bench/suite.py runs it then)
    + ([("checkpoint.step_durable", "checkpoint.step_after_durable")]
       if shutil.which(os.environ.get("SPOTRUN_RCLONE") or "rclone") else []),
    "halo": [("halo.update", "halo.floor"), ("md.integrate", "md.integrate_floor")],
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--suites",
                   default="lj,lj-weak,chain,charged,npt,minimize,fluid,fluid-weak,fft,checkpoint,halo,halo-weak")
    p.add_argument("--ranks", default="1,2")
    p.add_argument("--lammps", choices=("yes", "no"), default="yes")
    a = p.parse_args()
    problems = []
    with open(os.path.join(a.dir, "results.json")) as f:
        doc = json.load(f)
    records = doc["records"]
    if doc.get("schema") != sr.RESULTS_SCHEMA:
        problems.append(f"results schema {doc.get('schema')}")
    if doc["meta"].get("status") != "complete":
        problems.append(f"status {doc['meta'].get('status')}")
    problems += sr.check_records(records)
    by_id = {r["id"]: r for r in records}
    for r in records:  # the ratios, recomputed here from the samples of both records
        if r.get("reference"):
            other = by_id.get(r["reference"]["id"])
            if other is None:
                continue
            ratio = statistics.median(r["samples"]) / statistics.median(other["samples"])
            if abs(ratio - r["ratio"]) > 1e-12 * abs(ratio):
                problems.append(f"{r['id']}: ratio {r['ratio']} but the samples give {ratio}")
    ranks = [int(x) for x in a.ranks.split(",")]
    for suite in a.suites.split(","):
        kind = suite.split("-")[0]
        for name, ref_name in EXPECTED[kind]:
            for np in ranks:
                found = [r for r in records if r["suite"] == suite and r["name"] == name and r["ranks"] == np]
                if (name in PEER_ONLY or name in LAMMPS_ONLY) and a.lammps == "no":
                    if found:
                        problems.append(f"suite {suite}: {name} record at {np} ranks without LAMMPS")
                    continue
                if not found:
                    problems.append(f"suite {suite}: no {name} record at {np} ranks")
                for r in found:
                    want_ref = not (name in LAMMPS_REFERENCED and a.lammps == "no")
                    got = r["reference"]["name"] if r["reference"] else None
                    if (got == ref_name) != want_ref:
                        problems.append(f"{r['id']}: reference {got}, expected {ref_name if want_ref else None}")
                    if r["repeats"] < 3:
                        problems.append(f"{r['id']}: {r['repeats']} repeats")
                    if r["scaling"] != ("weak" if suite.endswith("-weak") else "strong"):
                        problems.append(f"{r['id']}: scaling {r['scaling']}")
                    if name in PEER_ONLY:  # the same samples as the measurement it repeats, checked here too
                        own = by_id.get(f"{PEER_ONLY[name]}/{r['scaling']}/atoms={int(r['size'])}/np={np}")
                        if own is None or own["samples"] != r["samples"]:
                            problems.append(f"{r['id']}: samples are not those of {PEER_ONLY[name]} at the same size")
    for suite in a.suites.split(","):  # the Comm share with and without the halo overlap: from two ranks
        if suite.split("-")[0] != "lj":
            continue
        for np in ranks:
            found = [r for r in records if r["suite"] == suite and r["name"] == "lj.comm_share" and r["ranks"] == np]
            if np == 1 and found:
                problems.append(f"suite {suite}: lj.comm_share at one rank")
            if np > 1 and (len(found) != 1 or not found[0]["reference"] or
                           found[0]["reference"]["name"] != "lj.comm_share_no_overlap" or found[0]["repeats"] < 3):
                problems.append(f"suite {suite}: no lj.comm_share against lj.comm_share_no_overlap at {np} ranks")
    # The checkpoint targets (bench/suite.py): blocking at most 25 % of the shared write, steps during a durable
    # flush at most 5 % slower; the chain targets: 1.5 x LAMMPS, the bonded terms at most 15 % of the loop; the
    # charged targets: 1.5 x LAMMPS, the k-space time at most 1.3 x its FFT floor.
    fixed_targets = {"checkpoint.async_blocking": 4.0, "checkpoint.step_durable": 1.05, "chain.spotrun": 1.5,
                     "chain.bond_time": 0.15, "charged.spotrun": 1.5, "charged.kspace_time": 1.3,
                     "npt.spotrun": 1 / 1.1, "minimize.spotrun": 1.0}
    for r in records:  # the LJ, chain and checkpoint targets: on the strong-scaling records with a reference
        want = r["reference"] is not None and (
            (r["suite"] == "lj" and r["name"] in ("lj.spotrun", "lj.spotrun-mixed", "lj.spotrun-mixed-vs-opt", "lj.comm_share"))
            or (r["suite"] in ("checkpoint", "chain", "charged", "npt", "minimize") and r["name"] in fixed_targets))
        got = (r.get("details") or {}).get("target_ratio")
        if want != (got is not None):
            problems.append(f"{r['id']}: target_ratio {'missing' if want else 'unexpected'}")
        elif r["suite"] in ("checkpoint", "chain", "charged", "npt", "minimize") and want and got != fixed_targets[r["name"]]:
            problems.append(f"{r['id']}: target_ratio {got}, expected {fixed_targets[r['name']]}")
    # The minimize suite: fewer force evaluations count only at the same minimum, so every minimisation ends at
    # the perfect crystal's lattice energy and, against LAMMPS, stopped by the same criterion as LAMMPS.
    for r in records:
        if r["name"] not in ("minimize.spotrun", "minimize.lammps"):
            continue
        d = r.get("details") or {}
        if not isinstance(d.get("energy_final"), (int, float)) or not isinstance(d.get("lattice_energy"), (int, float)) \
                or abs(d["energy_final"] - d["lattice_energy"]) > 1e-8:
            problems.append(f"{r['id']}: final energy {d.get('energy_final')} is not the crystal's "
                            f"{d.get('lattice_energy')}")
        other = by_id.get(r["reference"]["id"]) if r["reference"] else None
        if other is not None and (other.get("details") or {}).get("stop") != d.get("stop"):
            problems.append(f"{r['id']}: stopped by '{d.get('stop')}', LAMMPS by "
                            f"'{(other.get('details') or {}).get('stop')}'")
    for kind in ("lj", "chain"):
        if a.lammps != "yes" or not any(suite.split("-")[0] == kind for suite in a.suites.split(",")):
            continue
        logs = [os.path.join(a.dir, "logs", f) for f in sorted(os.listdir(os.path.join(a.dir, "logs")))]
        opt_logs = [f for f in logs if f"-{kind}-lammps-opt-" in os.path.basename(f)]
        plain_logs = [f for f in logs if f"-{kind}-lammps-" in os.path.basename(f) and f not in opt_logs]
        if len(opt_logs) != len(plain_logs):
            problems.append(f"logs: {len(opt_logs)} LAMMPS -sf opt runs of {kind} for {len(plain_logs)} plain LAMMPS runs")
        for f in opt_logs:
            with open(f) as fh:
                if "pair lj/cut/opt" not in fh.read():
                    problems.append(f"{f}: no 'pair lj/cut/opt': the -sf opt switch did not act")
    with open(os.path.join(a.dir, "report.md")) as f:
        report = f.read()
    if any("target_ratio" in (r.get("details") or {}) for r in records) and "## Targets" not in report:
        problems.append("report.md: no Targets section")
    for suite in a.suites.split(","):
        if f"(`{suite}`)" not in report:
            problems.append(f"report.md: no table of suite {suite}")
    # The measured duration of every suite (meta.suite_seconds), in report.md's "Duration per suite".
    seconds = doc["meta"].get("suite_seconds") or {}
    if "## Duration per suite" not in report:
        problems.append("report.md: no Duration per suite section")
    for suite in a.suites.split(","):
        if not isinstance(seconds.get(suite), (int, float)) or seconds[suite] < 0:
            problems.append(f"results.json: meta.suite_seconds has no duration of suite {suite}")
        elif f"| {suite} | " not in report.split("## Duration per suite", 1)[-1]:
            problems.append(f"report.md: no duration of suite {suite}")
    with open(os.path.join(a.dir, "summary.txt")) as f:
        lines = [l for l in f if l.startswith("RECORD ")]
    if len(lines) != len(records):
        problems.append(f"summary.txt: {len(lines)} lines for {len(records)} records")
    kinds = {suite.split("-")[0] for suite in a.suites.split(",")}
    pngs = ["throughput.png"] + (["floor_fraction.png"] if kinds - {"lj", "chain", "npt", "minimize"} else []) + (
        ["peer_ratio.png"] if (a.lammps == "yes" and kinds & {"lj", "chain", "charged", "minimize"}) or "npt" in kinds
        else [])
    for png in pngs:
        try:
            with open(os.path.join(a.dir, png), "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    problems.append(f"{png}: not a PNG image")
        except OSError:
            problems.append(f"{png}: missing")
        if f"]({png})" not in report:
            problems.append(f"report.md does not show {png}")
    for line in problems:
        print("PROBLEM:", line)
    print(f"check_results: {len(records)} records, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
