# Copyright: gpufleet contributors
# Apache-2.0
"""Sliced audits: one slice report per slice (AWX job slicing, ``--limit`` shards), merged into one report.

Stdlib only, Python >= 3.9, pure except ``read_slices`` (reads the files). A slice report is the report of
report.build.build_report for the slice's hosts plus ``slice: {number, count}`` (1 <= number <= count),
written as ``gpufleet-audit.slice-<number>-of-<count>.json``. ``merge_reports`` combines them into the
report a single run over every host would have written (same schema, same host entries, summary counted
again), plus ``merge``: which slices were merged, hosts found in several slices, hosts of the inventory in
no slice (reported as failed hosts), hosts in a slice but not in the inventory, slice numbers missing.

It refuses (MergeError, one line): a file that is not a gpufleet-audit slice report, slices of another
schema version than this code writes, slices of different slice counts, the same slice number twice, and a
host audited against another baseline than the one the merge run's inventory gives it (the slice was made
from another inventory or baseline: rerun it).
"""

from __future__ import annotations

import glob
import json
import os

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.drift import validate_baseline
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.build import (
    SCHEMA,
    SCHEMA_VERSION,
    gc_paused,
    host_entry,
    report_baseline,
    report_of,
)

SLICE_GLOB = "gpufleet-audit.slice-*-of-*.json"
SHOWN = 5  # host names quoted in an error or a note before "and N more"


class MergeError(ValueError):
    """The slice reports cannot be merged; the message says which file and why."""


def _listed(names):
    names = list(names)
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def check_slice(number, count):
    """(number, count) as ints when they name a slice, None when the run is not sliced (count <= 1)."""
    try:
        number, count = int(number), int(count)
    except (TypeError, ValueError):
        raise MergeError(
            f"slice {number!r} of {count!r}: give whole numbers (gpufleet_audit_slice, gpufleet_audit_slices)"
        ) from None
    if count <= 1:
        return None
    if not 1 <= number <= count:
        raise MergeError(f"slice {number} of {count}: the slice number goes from 1 to {count}")
    return number, count


def slice_file_name(number, count):
    width = len(str(count))
    return f"gpufleet-audit.slice-{number:0{width}d}-of-{count}.json"


def slice_report(report, number, count):
    """The report of one slice: the report and which slice it is."""
    checked = check_slice(number, count)
    if checked is None:
        raise MergeError(f"slice {number} of {count}: a run of one slice writes the fleet report itself")
    return dict(report, slice={"number": checked[0], "count": checked[1]})


def read_slices(directory):
    """[(file name, slice report)] of every slice report in ``directory``, in slice order."""
    paths = sorted(glob.glob(os.path.join(glob.escape(directory), SLICE_GLOB)))
    if not paths:
        raise MergeError(f"no slice reports ({SLICE_GLOB}) in {directory}: run playbooks/audit.yml per slice")
    out = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                out.append((os.path.basename(path), json.load(fh)))
        except (OSError, ValueError) as exc:
            raise MergeError(f"{path}: not a readable slice report ({exc})") from None
    return out


def _check_one(source, report):
    if (
        not isinstance(report, dict)
        or report.get("schema") != SCHEMA
        or not isinstance(report.get("hosts"), list)
    ):
        raise MergeError(f"{source}: not a {SCHEMA} report")
    if report.get("schema_version") != SCHEMA_VERSION:
        raise MergeError(
            f"{source}: schema_version {report.get('schema_version')!r}, this gpufleet writes and merges "
            f"{SCHEMA_VERSION}: make every slice with the same gpufleet version"
        )
    part = report.get("slice")
    if (
        not isinstance(part, dict)
        or not isinstance(part.get("number"), int)
        or not isinstance(part.get("count"), int)
    ):
        raise MergeError(f"{source}: no slice number and count (a fleet report, not a slice report)")
    return part["number"], part["count"]


def check_slices(slices):
    """{slice number: (source, report)}; MergeError for a wrong file, mixed schemas or slice counts."""
    if not slices:
        raise MergeError("no slice reports to merge")
    by_number, counts = {}, {}
    for source, report in slices:
        number, count = _check_one(source, report)
        counts.setdefault(count, source)
        if number in by_number:
            raise MergeError(
                f"{source}: slice {number} again (also {by_number[number][0]}): keep one of them"
            )
        by_number[number] = (source, report)
    if len(counts) > 1:
        (a, first), (b, second) = sorted(counts.items())[:2]
        raise MergeError(
            f"slices of different runs: {first} is one of {a}, {second} one of {b}: "
            "keep the slice files of one run in the directory"
        )
    return dict(sorted(by_number.items()))


def _pick(hosts, seen, entry, number):
    """Keep one entry per host: an audited one over an unreachable/failed one, else the lower slice."""
    name = entry["name"]
    seen.setdefault(name, []).append(number)
    current = hosts.get(name)
    if current is None or (current["status"] != "ok" and entry["status"] == "ok"):
        hosts[name] = entry


def _check_baselines(hosts, baselines, seen):
    """Every host's baseline in its slice equals the one the merge run's inventory gives it."""
    wrong = []
    for name, entry in hosts.items():
        if name not in baselines:
            continue
        expected = report_baseline(
            validate_baseline(baselines[name], name=f"gpufleet_baseline (host {name})")
        )
        if entry.get("baseline") != expected:
            wrong.append(f"{name} (slice {seen[name][0]}: {entry.get('baseline')}, inventory: {expected})")
    if wrong:
        raise MergeError(
            f"slices audited {len(wrong)} host(s) against another baseline than the inventory's: "
            f"{_listed(wrong)}; rerun those slices with this inventory"
        )


def _not_in_any(name, baselines, count):
    record = {
        "name": name,
        "status": "failed",
        "message": f"in no slice report (merged slices of {count})",
        "baseline": (baselines or {}).get(name),
    }
    return host_entry(record, None, True)


def _merge_note(by_number, count, seen, expected, missing):
    return {
        "slices": [
            {
                "number": number,
                "count": count,
                "source": source,
                "hosts": len(report["hosts"]),
                "generated_at": report.get("generated_at"),
            }
            for number, (source, report) in by_number.items()
        ],
        "missing_slices": [n for n in range(1, count + 1) if n not in by_number],
        "duplicates": {name: numbers for name, numbers in sorted(seen.items()) if len(numbers) > 1},
        "missing": missing,
        "not_in_inventory": sorted(set(seen) - set(expected)) if expected is not None else [],
    }


def merge_reports(slices, expected=None, baselines=None, generated_at=None, generator="gpufleet.nvidia"):
    """One fleet report from slice reports ``[(source, report)]``.

    ``expected``: the host names the fleet report must cover (the merge run's inventory), or None;
    ``baselines``: {host: gpufleet_baseline as the inventory gives it}, checked against each slice's.
    ``generated_at``: default the newest of the slices'.
    """
    by_number = check_slices(slices)
    count = next(iter(by_number.values()))[1]["slice"]["count"]
    hosts, seen = {}, {}
    with gc_paused():
        for number, (_source, report) in by_number.items():
            for entry in report["hosts"]:
                _pick(hosts, seen, entry, number)
        if baselines is not None:
            _check_baselines(hosts, baselines, seen)
        missing = sorted(set(expected) - set(hosts)) if expected is not None else []
        for name in missing:
            hosts[name] = _not_in_any(name, baselines, count)
        stamps = [str(r.get("generated_at")) for _source, r in by_number.values() if r.get("generated_at")]
        merged = report_of(
            [hosts[name] for name in sorted(hosts)], generated_at or max(stamps, default=None), generator
        )
    merged["merge"] = _merge_note(by_number, count, seen, expected, missing)
    return merged


def merge_lines(merged):
    """What the merge found, one line each (printed after the summary table); empty when all is well."""
    note = merged.get("merge") or {}
    lines = []
    if note.get("missing_slices"):
        lines.append(f"slices missing: {', '.join(map(str, note['missing_slices']))}")
    if note.get("duplicates"):
        dup = [f"{name} (slices {', '.join(map(str, n))})" for name, n in note["duplicates"].items()]
        lines.append(f"{len(dup)} host(s) in several slices (the audited entry is kept): {_listed(dup)}")
    if note.get("missing"):
        lines.append(
            f"{len(note['missing'])} host(s) in no slice (reported as failed): {_listed(note['missing'])}"
        )
    if note.get("not_in_inventory"):
        lines.append(
            f"{len(note['not_in_inventory'])} host(s) in a slice but not in this inventory: "
            f"{_listed(note['not_in_inventory'])}"
        )
    return lines
