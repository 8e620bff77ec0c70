# The timeline of `spotrun report --png` (docs/report.md), embedded in spotrun at build time from this
# file (cmake/SpotrunEmbedText.cmake): nothing beside the binary is needed, in a bundle too; spotrun
# writes it to /tmp and runs it with /usr/bin/python3. One bar per attempt (set-up, then the time loop;
# redone work hatched at its start), checkpoints as ticks, how each attempt ended as a marker; below it
# the step reached against time; then the thermo of OUTDIR/thermo.csv against the step (energies,
# temperature, pressure: the panels of the columns the file has), each attempt's first step marked.
# argv: REPORT.json PNG THERMO.csv.
# Every failure is one line on stderr and an exit code, never a traceback: 2, the PNG cannot be written;
# 3, no matplotlib; 4, anything else.
import sys

def die(code, msg):
    sys.stderr.write("ERROR: spotrun report: %s\n" % msg)
    sys.exit(code)

png = sys.argv[2]
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D
except Exception as e:
    die(3, "--png %s: /usr/bin/python3 has no matplotlib (Debian: python3-matplotlib): %s" % (png, e))

def thermo_rows(path):
    # The columns of thermo.csv by name, as floats; a row that does not parse is skipped.
    try:
        lines = open(path).read().split("\n")
    except OSError:
        return {}
    names = lines[0].strip().split(",") if lines else []
    cols = {n: [] for n in names}
    for line in lines[1:]:
        f = line.strip().split(",")
        if len(f) != len(names):
            continue
        try:
            v = [float(x) for x in f]
        except ValueError:
            continue
        for n, x in zip(names, v):
            cols[n].append(x)
    return cols if cols.get("step") else {}

def draw(r, thermo):
    att = r["attempts"]
    if not att:
        die(4, "--png %s: no attempt recorded" % png)
    # The thermo panels: energies (LAMMPS names, then the fluid's), temperature, pressure.
    groups = [("energy", [c for c in ("etotal", "pe", "ke", "econserve", "energy") if c in thermo]),
              ("temperature", [c for c in ("temp",) if c in thermo]),
              ("pressure", [c for c in ("press",) if c in thermo])]
    groups = [g for g in groups if g[1]]
    t0 = att[0]["start_unix"]
    span = max(a["end_unix"] for a in att) - t0
    scale, unit = (3600.0, "h") if span > 7200 else ((60.0, "min") if span > 120 else (1.0, "s"))
    heights = [max(1, len(att)), 3] + [2.2] * len(groups)
    fig = plt.figure(figsize=(11, 2.2 + 0.45 * len(att) + 3 + 2.2 * len(groups)))
    gs = fig.add_gridspec(len(heights), 1, height_ratios=heights)
    ax = fig.add_subplot(gs[0])
    bx = fig.add_subplot(gs[1], sharex=ax)
    for i, a in enumerate(att):
        y = len(att) - i
        s = (a["start_unix"] - t0) / scale
        sec = a["seconds"]
        setup = sec["setup"] / scale
        end = (a["end_unix"] - t0) / scale
        ax.barh(y, setup, left=s, color="0.7", height=0.6)
        ax.barh(y, max(0.0, end - s - setup), left=s + setup, color="tab:green", height=0.6)
        red = a.get("redone_seconds", 0.0) / scale
        if red > 0:
            ax.barh(y, red, left=s + setup, color="none", edgecolor="tab:red", hatch="///", height=0.6)
        for c in a["checkpoints"]:
            x = s + c["at"] / scale
            ax.plot([x, x], [y - 0.35, y + 0.35], color="tab:blue" if c["ok"] else "tab:orange", lw=1.5)
        fin = a["exit_code"] == 0
        ax.plot(end, y, marker="o" if fin else "X", color="black" if fin else "tab:red", ms=9)
        ax.text(end, y + 0.38, " " + a["exit_cause"], fontsize=7, va="bottom")
        bx.plot([s + setup, end], [a["start_step"], a["end_step"]], color="tab:green", lw=2)
        if a["steps_redone"] > 0:
            bx.fill_between([s + setup, s + setup + red], a["start_step"], a["start_step"] + a["steps_redone"],
                            color="tab:red", alpha=0.3)
    ax.set_yticks([len(att) - i for i in range(len(att))])
    ax.set_yticklabels(["attempt %d" % a["attempt"] for a in att])
    ax.legend(handles=[Patch(color="0.7", label="set-up"), Patch(color="tab:green", label="time loop"),
                       Patch(facecolor="none", edgecolor="tab:red", hatch="///", label="redone work"),
                       Line2D([], [], color="tab:blue", label="checkpoint"),
                       Line2D([], [], marker="X", color="tab:red", ls="", label="stopped / preempted"),
                       Line2D([], [], marker="o", color="black", ls="", label="finished")],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    t = r["totals"]
    title = "%s: %d attempt(s), %.4g s wall, %d steps redone" % (r["output_dir"], len(att), t["wall_seconds"], t["steps_redone"])
    if "gpu_hours" in t:
        title += ", %.3g GPU-hours" % t["gpu_hours"]
    if "cost" in t:
        title += ", cost %.2f" % t["cost"]
    ax.set_title(title, fontsize=9)
    bx.set_ylabel("step")
    bx.set_xlabel("time since the first attempt started (%s)" % unit)
    first = None
    for k, (label, cols) in enumerate(groups):
        tx = fig.add_subplot(gs[2 + k], sharex=first)
        first = first or tx
        for c in cols:
            tx.plot(thermo["step"], thermo[c], lw=1, label=c)
        for i, a in enumerate(att):
            tx.axvline(a["start_step"], color="0.4", ls=":", lw=1)
            if k == 0:
                tx.text(a["start_step"], 1.0, " attempt %d" % a["attempt"], transform=tx.get_xaxis_transform(),
                        fontsize=7, va="bottom", color="0.3")
        tx.set_ylabel(label)
        if len(cols) > 1:
            tx.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        if k == len(groups) - 1:
            tx.set_xlabel("step (dotted: where each attempt started)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)

try:
    import json
    r = json.load(open(sys.argv[1]))
    thermo = thermo_rows(sys.argv[3])
except Exception as e:
    die(4, "--png %s: cannot read the report: %s" % (png, e))
try:
    draw(r, thermo)
except SystemExit:
    raise
except OSError as e:
    die(2, "--png %s: cannot write the PNG: %s" % (png, e.strerror or e))
except Exception as e:
    die(4, "--png %s: drawing the timeline failed: %s: %s" % (png, type(e).__name__, e))
