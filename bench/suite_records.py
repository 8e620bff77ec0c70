"""Records of the spotrun benchmark suite (bench/suite.py): statistics, the record schema and its checks,
the results file (rewritten atomically after every record) and the regression comparison.

Every measurement is one record (a JSON object, schema "spotrun-bench-record/1", fields in SCHEMA below).
A record that has a reference (a peer such as LAMMPS, or a floor such as raw FFTW or a raw write of the
same bytes) names that record's id, copies its value, and stores ratio = value / reference value, both in
the units of the two records (the same unit).

One measurement may be compared with two references (LJ: LAMMPS and LAMMPS -sf opt). Each pair is then a
record of its own; the second record repeats the samples of the first and names it in details.samples_of
(checked: the same samples, size and rank count), and the regression comparison judges those samples once,
in the first record.
"""
import json
import math
import os
import statistics
import tempfile

RECORD_SCHEMA = "spotrun-bench-record/1"
RESULTS_SCHEMA = "spotrun-bench-results/1"

# field -> (types, required); None allowed where the type tuple holds type(None).
NUMBER = (int, float)
SCHEMA = {
    "schema": ((str,), True),
    "id": ((str,), True),            # name/scaling/size/np: unique in a results file
    "suite": ((str,), True),         # lj, lj-weak, fluid, ...
    "name": ((str,), True),          # lj.spotrun, lj.lammps, lj.spotrun-vs-opt, fluid.step, ...
    "role": ((str,), True),          # measurement (spotrun's own), peer, floor
    "program": ((str,), True),
    "metric": ((str,), True),        # throughput, time, bandwidth
    "unit": ((str,), True),
    "better": ((str,), True),        # higher or lower
    "value": (NUMBER, True),         # median of samples
    "spread": ((dict,), True),       # min, q1, q3, max of samples
    "samples": ((list,), True),
    "repeats": ((int,), True),
    "reference": ((dict, type(None)), True),  # {id, name, role, value} or null
    "ratio": (NUMBER + (type(None),), True),  # value / reference.value, or null
    "ranks": ((int,), True),
    "size": (NUMBER, True),
    "size_unit": ((str,), True),     # atoms, grid points
    "per_rank": (NUMBER, True),
    "scaling": ((str,), True),       # strong or weak
    "git_hash": ((str,), True),
    "build_flags": ((str,), True),
    "kokkos_backend": ((str,), True),
    "device": ((str,), True),
    "date": ((str,), True),          # ISO 8601, UTC, when the measurement ended
    "host": ((str,), True),
    "load": ((list,), True),         # 1, 5, 15 minute load averages before the measurement
    "oversubscribed": ((bool,), True),
    "command": ((str,), True),
    "details": ((dict,), False),     # free-form: steps, grid, bytes per atom, samples_of (an id), ...
}
ROLES = ("measurement", "peer", "floor")


def stats(samples):
    """Median and spread (min, quartiles, max) of a list of numbers."""
    if not samples:
        raise ValueError("no samples")
    s = sorted(float(v) for v in samples)
    if len(s) >= 2:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
    else:
        q1 = q3 = s[0]
    return statistics.median(s), {"min": s[0], "q1": q1, "q3": q3, "max": s[-1]}


def make_record(base, *, suite, name, role, program, metric, unit, better, samples, size, size_unit, scaling,
                command, reference=None, details=None):
    """A record from its samples; reference: another record (a dict) or None."""
    value, spread = stats(samples)
    rec = dict(base)
    ranks = rec["ranks"]
    size_key = "atoms" if size_unit == "atoms" else "points"
    rec.update({
        "schema": RECORD_SCHEMA,
        "id": f"{name}/{scaling}/{size_key}={int(size)}/np={ranks}",
        "suite": suite, "name": name, "role": role, "program": program,
        "metric": metric, "unit": unit, "better": better,
        "value": value, "spread": spread, "samples": [float(v) for v in samples], "repeats": len(samples),
        "reference": None, "ratio": None,
        "size": size, "size_unit": size_unit, "per_rank": size / ranks, "scaling": scaling,
        "command": command,
    })
    if reference is not None:
        if reference["unit"] != unit:
            raise ValueError(f"{rec['id']}: reference {reference['id']} is in {reference['unit']}, not {unit}")
        rec["reference"] = {"id": reference["id"], "name": reference["name"], "role": reference["role"],
                            "value": reference["value"]}
        rec["ratio"] = value / reference["value"]
    if details:
        rec["details"] = details
    return rec


def _close(a, b, rel=1e-12):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def check_records(records, min_repeats=3):
    """Problems with a list of records (empty when sound): the schema (required fields and their types,
    allowed values), the statistics (value = median of the samples, spread = their min, quartiles and max),
    the ratios (every ratio recomputed from its two records equals the recorded one) and every
    details.samples_of (another record of the file with the same samples, role, size, ranks and unit)."""
    problems = []
    by_id = {}
    for k, r in enumerate(records):
        where = f"record {k} ({r.get('id', '?') if isinstance(r, dict) else '?'})"
        if not isinstance(r, dict):
            problems.append(f"{where}: not an object")
            continue
        for field, (types, required) in SCHEMA.items():
            if field not in r:
                if required:
                    problems.append(f"{where}: field '{field}' missing")
                continue
            v = r[field]
            if isinstance(v, bool) and bool not in types:
                problems.append(f"{where}: field '{field}' is a boolean")
            elif not isinstance(v, types):
                problems.append(f"{where}: field '{field}' has type {type(v).__name__}")
        for field in r:
            if field not in SCHEMA:
                problems.append(f"{where}: unknown field '{field}'")
        if problems and problems[-1].startswith(where):
            continue
        if r["schema"] != RECORD_SCHEMA:
            problems.append(f"{where}: schema '{r['schema']}', expected '{RECORD_SCHEMA}'")
        if r["role"] not in ROLES:
            problems.append(f"{where}: role '{r['role']}' not one of {ROLES}")
        if r["better"] not in ("higher", "lower"):
            problems.append(f"{where}: better '{r['better']}'")
        if r["scaling"] not in ("strong", "weak"):
            problems.append(f"{where}: scaling '{r['scaling']}'")
        if r["id"] in by_id:
            problems.append(f"{where}: duplicate id")
        by_id[r["id"]] = r
        samples = r["samples"]
        if not all(isinstance(v, NUMBER) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in samples):
            problems.append(f"{where}: samples must be finite positive numbers")
            continue
        if r["repeats"] != len(samples) or len(samples) < min_repeats:
            problems.append(f"{where}: {len(samples)} samples, repeats {r['repeats']} (at least {min_repeats})")
        if r["ranks"] < 1:
            problems.append(f"{where}: ranks {r['ranks']}")
        if not _close(r["per_rank"], r["size"] / max(1, r["ranks"])):
            problems.append(f"{where}: per_rank {r['per_rank']} != size / ranks")
        if samples:
            median, spread = stats(samples)
            if not _close(r["value"], median):
                problems.append(f"{where}: value {r['value']} is not the median of the samples ({median})")
            for key in ("min", "q1", "q3", "max"):
                if not isinstance(r["spread"].get(key), NUMBER) or not _close(r["spread"][key], spread[key]):
                    problems.append(f"{where}: spread.{key} {r['spread'].get(key)} != {spread[key]} from the samples")
        if len(r["load"]) != 3:
            problems.append(f"{where}: load must hold 3 numbers")
    for r in records:
        if not isinstance(r, dict) or "reference" not in r or "ratio" not in r:
            continue
        where = f"record {r.get('id')}"
        ref = r["reference"]
        if ref is None:
            if r["ratio"] is not None:
                problems.append(f"{where}: a ratio without a reference")
            continue
        other = by_id.get(ref.get("id"))
        if other is None:
            problems.append(f"{where}: reference '{ref.get('id')}' is not a record of this file")
            continue
        if other["unit"] != r["unit"]:
            problems.append(f"{where}: reference in {other['unit']}, record in {r['unit']}")
        if ref.get("value") != other["value"]:
            problems.append(f"{where}: reference.value {ref.get('value')} != {other['id']} value {other['value']}")
        if r["ratio"] is None or not _close(r["ratio"], r["value"] / other["value"]):
            problems.append(f"{where}: ratio {r['ratio']} != {r['value']} / {other['value']} = {r['value'] / other['value']}")
        if ref.get("role") != other["role"] or ref.get("name") != other["name"]:
            problems.append(f"{where}: reference name/role differ from record {other['id']}")
        if (other["ranks"], other["size"], other["scaling"]) != (r["ranks"], r["size"], r["scaling"]):
            problems.append(f"{where}: reference {other['id']} is of another size or rank count")
    for r in by_id.values():  # the records of a sound schema
        if not isinstance(r.get("details"), dict) or "samples_of" not in r["details"]:
            continue
        where = f"record {r.get('id')}"
        other = by_id.get(r["details"]["samples_of"])
        if other is None or other is r:
            problems.append(f"{where}: samples_of '{r['details']['samples_of']}' is not another record of this file")
            continue
        if other.get("samples") != r.get("samples") or other.get("role") != r.get("role") or (
                other.get("details") or {}).get("samples_of"):
            problems.append(f"{where}: samples_of {other['id']}, but its samples or role differ (or it repeats a third)")
        if (other["ranks"], other["size"], other["scaling"], other["unit"]) != (r["ranks"], r["size"], r["scaling"],
                                                                                 r["unit"]):
            problems.append(f"{where}: samples_of {other['id']} is of another size, rank count or unit")
    return problems


class ResultsFile:
    """results.json: {"schema", "meta", "records"}, rewritten through a temporary file and a rename after
    every record, so that a reader (or an interrupted run) never sees a half-written file."""

    def __init__(self, path, meta):
        self.path = path
        self.doc = {"schema": RESULTS_SCHEMA, "meta": dict(meta), "records": []}
        self._write()

    def add(self, record):
        self.doc["records"].append(record)
        self._write()

    def set_meta(self, **kw):
        self.doc["meta"].update(kw)
        self._write()

    @property
    def records(self):
        return self.doc["records"]

    def _write(self):
        directory = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".results.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.doc, f, indent=1)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def load_records(path):
    """The records of a results.json (or of a plain JSON list of records)."""
    with open(path) as f:
        doc = json.load(f)
    if isinstance(doc, list):
        return doc
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        raise ValueError(f"{path}: neither a results file nor a list of records")
    return doc["records"]


def compare(old_records, new_records, threshold=0.10):
    """Changes from old to new, matched by id. Returns (rows, regressions).

    For each record present in both, the slowdown factor is new time / old time: new / old median for a
    lower-is-better metric (a time), old / new for a higher-is-better one (a throughput). A change is
    significant when the two ranges [min, max] of samples do not overlap. A regression is a measurement of
    spotrun's own (role "measurement") whose slowdown exceeds 1 + threshold AND is significant (the new
    range lies entirely on the slow side of the old one). Peers and floors are shown, never flagged: they
    tell whether the machine itself changed. A record that repeats the samples of another (details.samples_of:
    the same measurement against a second reference) is shown and not flagged: its samples are judged once,
    in the record it names."""
    old_by_id = {r["id"]: r for r in old_records}
    rows, regressions = [], []
    for new in new_records:
        old = old_by_id.get(new["id"])
        if old is None:
            continue
        if old["unit"] != new["unit"] or old["better"] != new["better"]:
            rows.append({"id": new["id"], "verdict": "not comparable (unit or direction changed)", "old": old, "new": new,
                         "slowdown": None, "significant": False, "regression": False})
            continue
        o, n = old["value"], new["value"]
        slowdown = n / o if new["better"] == "lower" else o / n
        om, oM = old["spread"]["min"], old["spread"]["max"]
        nm, nM = new["spread"]["min"], new["spread"]["max"]
        if new["better"] == "lower":
            slower_apart, faster_apart = nm > oM, nM < om
        else:
            slower_apart, faster_apart = nM < om, nm > oM
        significant = slower_apart if slowdown > 1 else faster_apart
        samples_of = (new.get("details") or {}).get("samples_of")
        regression = new["role"] == "measurement" and not samples_of and slowdown > 1 + threshold and slower_apart
        pct = (slowdown - 1) * 100
        if regression:
            verdict = f"REGRESSION: slower by {pct:.1f} % (> {threshold * 100:.0f} %), ranges apart"
        elif slowdown > 1:
            verdict = f"slower by {pct:.1f} %, " + ("ranges apart" if significant else "within noise (ranges overlap)")
        elif slowdown < 1:
            verdict = f"faster by {(1 / slowdown - 1) * 100:.1f} %, " + (
                "ranges apart" if significant else "within noise (ranges overlap)")
        else:
            verdict = "unchanged"
        if new["role"] != "measurement" and slowdown != 1:
            verdict += f" ({new['role']}: not flagged)"
        elif samples_of and slowdown != 1:
            verdict += f" (the samples of {samples_of}: judged there)"
        row = {"id": new["id"], "old": old, "new": new, "slowdown": slowdown, "significant": significant,
               "regression": regression, "verdict": verdict}
        rows.append(row)
        if regression:
            regressions.append(row)
    return rows, regressions


def format_comparison(rows, threshold):
    lines = [f"Comparison (regression: a measurement slower by more than {threshold * 100:.0f} % whose range of "
             f"samples does not overlap the old one)"]
    if not rows:
        lines.append("  no record of the old results matches one of the new")
    for row in rows:
        o, n = row["old"], row["new"]
        lines.append(f"  {row['id']}: {o['value']:.4g} [{o['spread']['min']:.4g}, {o['spread']['max']:.4g}] -> "
                     f"{n['value']:.4g} [{n['spread']['min']:.4g}, {n['spread']['max']:.4g}] {n['unit']}: {row['verdict']}")
    return "\n".join(lines)
