"""report.md and the plots of a benchmark suite run (bench/suite.py): throughput against ranks with ideal
scaling drawn, the speed ratio to the peer, the fraction of the floor. Plots need python3-matplotlib (Agg,
no display); without it the report says so and has the tables only."""
import os
from collections import defaultdict

# What a suite's ratio column means (ratio = value / reference value, as recorded).
RATIO_MEANING = {
    "lj.spotrun": "spotrun / LAMMPS atom-steps/s (> 1: spotrun faster)",
    "lj.spotrun-vs-opt": "spotrun / LAMMPS -sf opt (its OPT package) atom-steps/s, the samples of lj.spotrun "
                         "(> 1: spotrun faster)",
    "lj.spotrun-mixed": "spotrun with md.precision = \"mixed\" / LAMMPS atom-steps/s (> 1: spotrun faster)",
    "lj.spotrun-mixed-vs-opt": "spotrun mixed / LAMMPS -sf opt atom-steps/s, the samples of lj.spotrun-mixed "
                               "(> 1: spotrun faster)",
    "chain.spotrun": "spotrun / LAMMPS atom-steps/s, in.chain in NVE (> 1: spotrun faster)",
    "chain.spotrun-vs-opt": "spotrun / LAMMPS -sf opt (lj/cut/opt, bond fene) atom-steps/s, the samples of "
                            "chain.spotrun (> 1: spotrun faster)",
    "chain.bond_time": "spotrun's Time Bond (slowest rank) / its Loop time, the same runs: the bonded terms' share "
                       "of the loop (target <= 0.15)",
    "charged.spotrun": "spotrun / LAMMPS atom-steps/s, charged LJ fluid with PPPM 1e-5 (> 1: spotrun faster)",
    "charged.kspace_time": "spotrun's k-space time per computation (Time Kspace, slowest rank, over steps + 1) / the "
                           "FFT floor, the transforms of one PPPM step (1 r2c + 3 c2r of its mesh) alone (1 = at the "
                           "floor; target <= 1.3)",
    "charged.kspace_share": "the same k-space time per computation / spotrun's Loop time per step, the same runs: the "
                            "k-space part's share of the step (reported)",
    "npt.spotrun": "spotrun's NPT atom-steps/s (md.ensemble = \"npt\", iso barostat) / its NVT atom-steps/s (the same "
                   "thermostat, no barostat), the same program and run settings in the same repetition (target >= "
                   "1/1.1: the NPT step within 1.1 x the NVT step)",
    "npt.lammps": "LAMMPS fix npt / LAMMPS fix nvt atom-steps/s, the same settings (LAMMPS's own cost of the "
                  "barostat, beside npt.spotrun; not drawn in peer_ratio.png)",
    "npt.spotrun-vs-lammps": "spotrun NPT / LAMMPS fix npt atom-steps/s, the samples of npt.spotrun (> 1: spotrun faster)",
    "minimize.spotrun": "spotrun's force evaluations / LAMMPS's to the same minimum (cg, the same data file and "
                        "stopping criteria; < 1: spotrun needs fewer; target <= 1)",
    "minimize.time": "spotrun's minimisation loop time / LAMMPS's (< 1: spotrun faster; reported)",
    "fluid.step": "step time / FFT floor (36 transforms; 1 = at the floor)",
    "fft.transform": "spotrun / raw FFTW time per transform (< 1: spotrun faster)",
    "checkpoint.write": "write / raw write MB/s (1 = at the disk floor)",
    "checkpoint.read": "read / raw read MB/s (1 = at the floor)",
    "checkpoint.read-vs-new": "read / raw read into newly allocated memory MB/s, the samples of checkpoint.read "
                              "(1 = at that floor)",
    "checkpoint.async_blocking": "shared write MB/s over the MB/s of the loop's blocking time for a background set "
                                 "(>= 4: blocked at most 25 % of the shared write)",
    "checkpoint.step_background": "synthetic step during the background write of the level set (writer at nice 10) "
                                  "/ the same steps after it; --quick: over at most the first details.async_window_s "
                                  "seconds of each write",
    "checkpoint.step_durable": "synthetic step during the durable flush (rclone at nice 19) / the same steps right "
                               "after it; --quick: at the smallest size only, over at most the flush's first "
                               "details.durable_window_s seconds (a flush still running then is cancelled: "
                               "details.flush_complete false)",
    "halo.update": "update time / memory-bandwidth floor (52 bytes per ghost)",
    "md.integrate": "integrate time / memory-bandwidth floor (224 bytes per atom)",
}


# Records whose ratio is the share of the reference that the measurement is a part of (the bonded terms' time in
# the loop's), not a speed against a peer or floor: left out of peer_ratio.png and floor_fraction.png.
SHARES = {"chain.bond_time", "charged.kspace_share"}
# Records whose ratio is a peer's against another peer (LAMMPS's fix npt against its fix nvt): not spotrun's speed,
# left out of peer_ratio.png.
PEER_AGAINST_PEER = {"npt.lammps"}


def speed(rec, value=None):
    """Work per second: the value of a throughput or bandwidth, size / value for a time."""
    v = rec["value"] if value is None else value
    return v if rec["better"] == "higher" else rec["size"] / v


def speed_unit(rec):
    if rec["better"] == "higher":
        return rec["unit"]
    per = rec["unit"].split("/", 1)[1] if "/" in rec["unit"] else rec["unit"]
    return f"{rec['size_unit']} x {per} / s"


def relative_speed(rec):
    """How fast against the reference: ratio for higher-is-better, 1 / ratio for times."""
    return rec["ratio"] if rec["better"] == "higher" else 1.0 / rec["ratio"]


def g(v):
    return f"{v:.4g}"


def size_label(rec):
    grid = (rec.get("details") or {}).get("grid")
    if grid:
        return "x".join(map(str, grid)) if len(set(grid)) > 1 else f"{grid[0]}^3"
    return f"{int(rec['size']):,}"


def efficiency_table(recs):
    """Parallel efficiency of each record against the smallest rank count of the same name, size and scaling
    (weak: of the same per-rank size): speed(r) / speed(r0) / (r / r0)."""
    eff = {}
    groups = defaultdict(list)
    for r in recs:
        key = (r["name"], r["scaling"], r["per_rank"] if r["scaling"] == "weak" else r["size"])
        groups[key].append(r)
    for group in groups.values():
        first = min(group, key=lambda r: r["ranks"])
        for r in group:
            # a count (force evaluations) is no speed: no efficiency
            eff[r["id"]] = (None if r["metric"] == "count" else
                            speed(r) / speed(first) / (r["ranks"] / first["ranks"]))
    return eff


def tables(records, titles):
    lines = []
    by_suite = defaultdict(list)
    for r in records:
        by_suite[r["suite"]].append(r)
    eff = efficiency_table(records)
    for suite, recs in by_suite.items():
        lines += [f"### {titles.get(suite, suite)} (`{suite}`)", ""]
        lines += ["| quantity | size | ranks | median | min - max | unit | reference (median) | ratio | parallel eff. |",
                  "|----------|-----:|------:|-------:|----------:|------|-------------------:|------:|--------------:|"]
        for r in sorted(recs, key=lambda r: (r["name"], r["size"], r["ranks"])):
            ref = r["reference"]
            ref_s = f"{ref['name']} {g(ref['value'])}" if ref else ""
            ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else ""
            over = " (oversubscribed)" if r["oversubscribed"] else ""
            lines.append(f"| {r['name']} ({r['role']}) | {size_label(r)} | {r['ranks']}{over} | {g(r['value'])} | "
                         f"{g(r['spread']['min'])} - {g(r['spread']['max'])} | {r['unit']} | {ref_s} | {ratio} | "
                         f"{'-' if eff[r['id']] is None else format(eff[r['id']], '.2f')} |")
        meanings = sorted({r["name"] for r in recs if r["name"] in RATIO_MEANING})
        lines.append("")
        for name in meanings:
            lines.append(f"- ratio of `{name}`: {RATIO_MEANING[name]}")
        lines.append("")
    return lines


def summary_table(records):
    """Every measurement that has a peer or floor, beside it: the table docs/performance.md quotes."""
    recs = [r for r in records if r["reference"] is not None]
    if not recs:
        return []
    lines = ["## Summary: each measurement against its peer or floor", "",
             "| suite | quantity | size | ranks | median (min - max) | unit | against | its median | ratio |",
             "|-------|----------|-----:|------:|-------------------:|------|---------|-----------:|------:|"]
    for r in recs:
        over = " (over)" if r["oversubscribed"] else ""
        lines.append(f"| {r['suite']} | {r['name']} | {size_label(r)} | {r['ranks']}{over} | {g(r['value'])} "
                     f"({g(r['spread']['min'])} - {g(r['spread']['max'])}) | {r['unit']} | {r['reference']['name']} "
                     f"({r['reference']['role']}) | {g(r['reference']['value'])} | {r['ratio']:.3f} |")
    return lines + ["", "Ratios: see each suite's table below for what they mean.", ""]


def targets_table(records):
    """Every record with a target ratio (details.target_ratio: bench/suite.py LJ_TARGETS and COMM_SHARE_TARGET
    for lj, CHAIN_TARGETS and BOND_SHARE_TARGET for chain, CHARGED_TARGETS and KSPACE_FLOOR_TARGET for charged,
    NPT_TARGET for npt, MINIMIZE_TARGET for minimize,
    BLOCKING_TARGET and STEP_DURABLE_TARGET for
    checkpoint, the deck's `targets` for fluid): met or not. A ratio meets its target from the side its record calls better: at
    most the target where lower is better (a time over its floor), at least it where higher is (a rate over
    its peer's)."""
    recs = [r for r in records if r["ratio"] is not None and (r.get("details") or {}).get("target_ratio")]
    if not recs:
        return []
    lines = ["## Targets", "",
             "| suite | quantity | size | ranks | against | ratio (min - max) | target | verdict |",
             "|-------|----------|-----:|------:|---------|------------------:|-------:|---------|"]
    missed = 0
    for r in sorted(recs, key=lambda r: (r["suite"], r["name"], r["size"], r["ranks"])):
        t = r["details"]["target_ratio"]
        ref = r["reference"]["value"]
        lo, hi = r["spread"]["min"] / ref, r["spread"]["max"] / ref
        lower = r.get("better") == "lower"
        met = r["ratio"] <= t if lower else r["ratio"] >= t
        missed += not met
        by = (r["ratio"] / t - 1) if lower else (1 - r["ratio"] / t)
        verdict = "met" if met else f"missed by {100 * by:.0f} %"
        over = " (over)" if r.get("oversubscribed") else ""
        lines.append(f"| {r['suite']} | {r['name']} | {size_label(r)} | {r['ranks']}{over} | {r['reference']['name']} | "
                     f"{r['ratio']:.3f} ({lo:.2f} - {hi:.2f}) | {'<=' if lower else '>='} {t:.4g} | {verdict} |")
    windowed = [r for r in recs if (r.get("details") or {}).get("durable_window_s")]
    if windowed:
        w = windowed[0]["details"]["durable_window_s"]
        lines += ["", f"checkpoint.step_durable in --quick: the steps during at most the first {w:g} s of the durable "
                  "flush (rclone at nice 19, as in the full run, where the whole flush is timed), against as many steps "
                  "after it; the rows flushed at the smallest quick size only."]
    lines += ["", f"{len(recs) - missed} of {len(recs)} met (the median ratio against the target; the range: the "
              "extreme samples over the median of the reference). Where the time goes, and why a target is "
              "missed: docs/performance.md.", ""]
    return lines


def duration(seconds):
    s = int(round(seconds))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def budget_verdicts(meta):
    """The --quick budget check (bench/suite.py QUICK_BUDGET_S and each deck's quick_budget): per suite run,
    (suite, seconds, share or None, seconds over the share or 0), and the whole run's (None, seconds, total,
    over). Empty where the run was not a --quick run judged against the shares."""
    budget = meta.get("quick_budget") or {}
    if meta.get("mode") != "quick" or not budget.get("judged"):
        return []
    seconds = meta.get("suite_seconds") or {}
    shares = budget.get("shares") or {}
    rows = []
    for suite, t in seconds.items():
        share = shares.get(suite)
        rows.append((suite, t, share, max(0.0, t - share) if share else 0.0))
    total, whole = sum(seconds.values()), budget.get("total_s")
    if whole:
        rows.append((None, total, whole, max(0.0, total - whole)))
    return rows


def budget_warnings(meta):
    """One sentence per suite (and for the whole run) that ran past its share of the --quick budget."""
    out = []
    for suite, t, share, over in budget_verdicts(meta):
        if over > 0:
            what = f"suite {suite}" if suite else "the whole --quick run"
            out.append(f"{what} took {duration(t)}, past its share of the quick budget ({duration(share)}) by "
                       f"{duration(over)}; load average at the start {meta.get('load_start')}, at the end "
                       f"{meta.get('load_end')} (work beside the suite slows it)")
    return out


def durations_table(meta):
    """The measured duration of each suite; in a judged --quick run its share of the budget and the verdict."""
    seconds = meta.get("suite_seconds")
    if not seconds:
        return []
    counts = meta.get("suite_measurements") or {}
    verdicts = {row[0]: row for row in budget_verdicts(meta)}
    budget = meta.get("quick_budget") or {}
    lines = ["## Duration per suite", ""]
    warnings = budget_warnings(meta)
    if warnings:
        lines += [f"**Warning: {w}.**" for w in warnings] + [""]
    if verdicts:
        lines += [f"The --quick budget: {duration(budget['total_s'])} on 2 cores (bench/suite.py QUICK_BUDGET_S), "
                  "each suite's share its deck's `quick_budget`. A suite past its share is a warning, not a "
                  "failure: the share is for an otherwise idle machine.", ""]
    elif meta.get("mode") == "quick":
        lines += [f"Not judged against the --quick budget: {budget.get('not_judged_because') or 'no budget recorded'}.",
                  ""]
    quick = meta.get("mode") == "quick"
    shares = budget.get("shares") or {}
    if quick:
        lines += ["| suite | measurements | duration | share of the quick budget | verdict |",
                  "|-------|-------------:|---------:|--------------------------:|---------|"]
    else:
        lines += ["| suite | measurements | duration |", "|-------|-------------:|---------:|"]

    def row(suite, n, t, share):
        if not quick:
            return f"| {suite} | {n} | {duration(t)} |"
        v = verdicts.get(None if suite == "(all)" else suite)
        if not share:
            verdict = "no share (no quick_budget in its deck)"
        elif v is None:
            verdict = "not judged"
        else:
            verdict = f"**past its share by {duration(v[3])}**" if v[3] > 0 else "within its share"
        return f"| {suite} | {n} | {duration(t)} | {duration(share) if share else ''} | {verdict} |"

    for suite, t in seconds.items():
        lines.append(row(suite, counts.get(suite, ""), t, shares.get(suite)))
    lines.append(row("(all)", sum(counts.values()) if counts else "", sum(seconds.values()), budget.get("total_s")))
    return lines + [""]


def plots(out, records):
    """Writes the three PNGs; returns their file names, or raises ImportError without matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    # 1. throughput against ranks, ideal scaling from the smallest rank count, one panel per quantity (a record
    # that repeats another's samples against a second reference is drawn once, as the record it names).
    groups = defaultdict(list)
    for r in records:
        # counts (force evaluations) are no throughput: in the tables, not drawn against ranks
        if not (r.get("details") or {}).get("samples_of") and r["metric"] != "count":
            groups[(r["suite"], r["name"])].append(r)
    keys = sorted(groups)
    if keys:
        cols = min(3, len(keys))
        rows = (len(keys) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
        for ax, key in zip(axes.flat, keys):
            recs = groups[key]
            by_size = defaultdict(list)
            for r in recs:
                by_size[r["per_rank"] if r["scaling"] == "weak" else r["size"]].append(r)
            for size, rs in sorted(by_size.items()):
                rs.sort(key=lambda r: r["ranks"])
                x = [r["ranks"] for r in rs]
                y = [speed(r) for r in rs]
                lo = [speed(r) - speed(r, r["spread"]["min" if r["better"] == "higher" else "max"]) for r in rs]
                hi = [speed(r, r["spread"]["max" if r["better"] == "higher" else "min"]) - speed(r) for r in rs]
                label = size_label(rs[0]) + (" per rank" if rs[0]["scaling"] == "weak" else "")
                line = ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=label)
                ideal = [y[0] * xi / x[0] for xi in x]
                ax.plot(x, ideal, linestyle="--", color=line[0].get_color(), alpha=0.5)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("MPI ranks")
            ax.set_ylabel(speed_unit(recs[0]), fontsize=8)
            ax.set_title(f"{key[1]} ({recs[0]['scaling']}, {recs[0]['role']})", fontsize=9)
            ax.legend(fontsize=7, title="dashed: ideal", title_fontsize=7)
        for ax in list(axes.flat)[len(keys):]:
            ax.axis("off")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "throughput.png"), dpi=90)
        plt.close(fig)
        files.append("throughput.png")

    # 2. and 3.: relative speed against the peer, fraction of the floor.
    for role, fname, ylabel, title in (
            ("peer", "peer_ratio.png", "spotrun speed / peer speed", "Speed relative to the peer (1 = parity)"),
            ("floor", "floor_fraction.png", "floor time / spotrun time", "Fraction of the floor (1 = at the floor)")):
        recs = [r for r in records if r["reference"] and r["reference"]["role"] == role
                and r["name"] not in SHARES | PEER_AGAINST_PEER]
        if not recs:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        series = defaultdict(list)
        for r in recs:
            series[(r["name"], r["scaling"], size_label(r) if r["scaling"] == "strong" else f"{r['per_rank']:g}/rank")].append(r)
        for (name, scaling, size), rs in sorted(series.items()):
            rs.sort(key=lambda r: r["ranks"])
            ax.plot([r["ranks"] for r in rs], [relative_speed(r) for r in rs], marker="o",
                    label=f"{name} {size}" + (" weak" if scaling == "weak" else ""))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("MPI ranks")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, fname), dpi=90)
        plt.close(fig)
        files.append(fname)
    return files


def write_report(out, doc, comparison):
    meta, records = doc["meta"], doc["records"]
    lines = ["# spotrun benchmark suite", ""]
    lines += [f"- command: `{meta.get('command', '?')}`",
              f"- status: {meta.get('status', '?')}, {len(records)} records, started {meta.get('started', '?')}, "
              f"{meta.get('seconds', '?')} s",
              f"- git {meta.get('git_hash', '?')}; build {meta.get('build_flags', '?')}; Kokkos {meta.get('kokkos_backend', '?')}",
              f"- device: {meta.get('device', '?')} ({meta.get('host', '?')})",
              f"- load average (1, 5, 15 min) at the start {meta.get('load_start')}, at the end {meta.get('load_end')}",
              f"- repetitions per measurement: {meta.get('repeat')}; peer: {meta.get('lammps')}"
              + (f", and with {meta['lammps_opt']}" if meta.get("lammps_opt", "not run") != "not run" else ""),
              ""]
    if any(r["oversubscribed"] for r in records):
        lines += ["Runs marked oversubscribed had more ranks than cores: not scaling figures.", ""]
    lines += ["Values are medians of the repetitions; ratio = value / reference value (both medians); parallel "
              "efficiency is speed(r) / speed(r0) / (r / r0) against the smallest rank count r0 of the same size "
              "(weak: the same size per rank). See bench/README.md for what each quantity measures.", ""]
    lines += durations_table(meta)
    lines += summary_table(records)
    lines += targets_table(records)
    lines += tables(records, meta.get("suite_titles") or {})
    if comparison is not None:
        rows, threshold, old_path = comparison
        lines += [f"## Comparison with {old_path}", "",
                  f"A regression is a measurement of spotrun's own slower by more than {threshold * 100:.0f} % whose "
                  f"range of samples lies entirely on the slow side of the old range.", "",
                  "| id | old median [min, max] | new median [min, max] | unit | verdict |",
                  "|----|----------------------:|----------------------:|------|---------|"]
        for row in rows:
            o, n = row["old"], row["new"]
            lines.append(f"| {row['id']} | {g(o['value'])} [{g(o['spread']['min'])}, {g(o['spread']['max'])}] | "
                         f"{g(n['value'])} [{g(n['spread']['min'])}, {g(n['spread']['max'])}] | {n['unit']} | {row['verdict']} |")
        lines.append("")
    try:
        files = plots(out, records) if records else []
        if files:
            lines += ["## Plots", ""] + [f"![{f}]({f})" for f in files] + [""]
    except ImportError:
        lines += ["(No plots: python3-matplotlib is not installed.)", ""]
    write_atomically(os.path.join(out, "report.md"), "\n".join(lines))
    write_atomically(os.path.join(out, "summary.txt"), summary(doc))


def summary(doc):
    """One line per record, for tools that read text (bench/jube/spotrun.xml):
    RECORD <name> suite=<suite> role=<role> size=<size> ranks=<ranks> value=<median> unit=<unit> ratio=<ratio or nan>"""
    lines = [f"# spotrun benchmark suite: {doc['meta'].get('command', '?')}; status {doc['meta'].get('status', '?')}"]
    for r in doc["records"]:
        ratio = f"{r['ratio']:.6g}" if r["ratio"] is not None else "nan"
        lines.append(f"RECORD {r['name']} suite={r['suite']} role={r['role']} size={int(r['size'])} ranks={r['ranks']} "
                     f"value={r['value']:.6g} unit={r['unit']} ratio={ratio}")
    return "\n".join(lines) + "\n"


def write_atomically(path, text):
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
