# Copyright: gpufleet contributors
# Apache-2.0
"""Rows and short texts of the fleet report, shared by every renderer (CSV, Markdown, HTML, summary table).

Stdlib only, Python >= 3.9. Reads only the report dict of report.build.build_report.
- ``host_cells``: one host's cells of the hosts table (Markdown, HTML, the summary printed at the end);
- ``component_rows``: one row per host x component (CSV, the HTML components table); the toolkit and cuDNN
  rows carry their owner (``owner``: its words, ``owner_kind``), the one report.owner.owner_shown made;
- ``owner_rows``: one row per toolkit and cuDNN copy with its owner and a toolkit's holds (the Markdown
  owners list);
- ``finding_groups``: each distinct finding once with its hosts, errors first, then warnings, then info, and
  within a severity the finding on most hosts first (the one order of every findings list: Markdown, HTML).
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import consumers as report_consumers
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.findings import SEVERITIES
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.words import NONE, UNKNOWN

CSV_COLUMNS = (
    "host",
    "status",
    "component",
    "name",
    "version",
    "cuda_major",
    "source",
    "path",
    "active",
    "detail",
    "drift",
    "owner",
    "owner_kind",
)
# the host table's columns (Markdown and HTML); the summary table spells the CUDA/cuDNN ones shorter
HOST_COLUMNS = (
    "host",
    "status",
    "GPUs",
    "driver",
    "CUDA (* default)",
    "cuDNN (* loader)",
    "drift",
    "findings",
)
NO_BASELINE = "no baseline set"  # a host without gpufleet_baseline: nothing was compared, in every format
DRIFT_LABELS = {"none": NONE, "no_baseline": NO_BASELINE, "unknown": UNKNOWN}
GROUP_HOSTS = 20  # host names shown after a drift or findings group; the rest are counted


def count_values(values):
    """{value: occurrences}, most frequent first, then by value."""
    out = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


# -- short texts: the report's words (report.words) for every format ---------------------------------------
def gpu_text(h):
    if h["status"] != "ok":
        return UNKNOWN
    if not h["gpu_count"]:
        return NONE
    models = count_values(g["name"] for g in h["gpus"])
    return ", ".join(f"{n}x {m}" for m, n in models.items()) or f"{h['gpu_count']} GPU"


def driver_text(h):
    d = h.get("driver")
    if h["status"] != "ok" or not d:
        return UNKNOWN
    if d["version"] == NONE:
        return NONE
    return f"{d['version']} ({d['kernel_module']}, {d['install_method']})"


def cuda_text(h):
    if h["status"] != "ok":
        return UNKNOWN
    toolkits = h["cuda"]["toolkits"]
    if not toolkits:
        return NONE
    return ", ".join(t["version"] + ("*" if t["default"] else "") for t in toolkits)


def cudnn_text(h):
    if h["status"] != "ok":
        return UNKNOWN
    if not h["cudnn"]:
        return NONE
    return ", ".join(
        f"{c['version']} {c['source']}"
        + (f"/cu{c['cuda_major']}" if c["cuda_major"] else "")
        + ("*" if c["resolved"] else "")
        for c in h["cudnn"]
    )


def status_text(h):
    """``ok``, ``unreachable`` or ``failed``, as the JSON and Prometheus say it (no GPU: the GPUs say so)."""
    return h["status"]


def drift_text(h, count=str):
    """The drift cell: ``none``, ``no baseline set`` (nothing compared), ``unknown`` (not audited), else
    ``count(number of drift items)``."""
    return DRIFT_LABELS.get(h["drift_status"], count(len(h["drift"])))


def drift_overview(report, names=True):
    """One sentence on the fleet's drift that says when there was nothing to compare (no baseline set);
    ``names``: the first hosts without a baseline too."""
    audited = [h for h in report["hosts"] if h["status"] == "ok"]
    unset = [h["name"] for h in audited if h["drift_status"] == "no_baseline"]
    if audited and len(unset) == len(audited):
        return f"{NO_BASELINE} on any audited host (gpufleet_baseline): nothing compared"
    with_drift = sum(bool(h["drift"]) for h in audited)
    items = sum(len(h["drift"]) for h in audited)
    text = f"{items} item(s) on {with_drift} of the {len(audited) - len(unset)} host(s) with a baseline"
    listed = f": {hosts_text(unset)}" if names else ""
    return text + (f"; {NO_BASELINE} on {len(unset)} host(s){listed}" if unset else "")


def findings_count(h, severities=("error", "warning")):
    return sum(f["severity"] in severities for f in h["findings"])


def findings_text(h):
    """``1 error, 2 warning, 3 info``: the host's findings per severity (every table, the printed summary)."""
    return ", ".join(f"{findings_count(h, (severity,))} {severity}" for severity in SEVERITIES)


def host_cells(h, drift, findings):
    """One host's cells, in HOST_COLUMNS order (the caller formats the drift and findings cells)."""
    return (
        h["name"],
        status_text(h),
        gpu_text(h),
        driver_text(h),
        cuda_text(h),
        cudnn_text(h),
        drift,
        findings,
    )


# -- rows: one per host x component (CSV, HTML table) ------------------------------------------------------
def _drift_for(h, component, path=None):
    """The drift cell of a component row: its drift messages; ``no baseline set``: nothing was compared."""
    if h["drift_status"] == "no_baseline":
        return NO_BASELINE
    return "; ".join(
        d["message"]
        for d in h["drift"]
        if d["component"] == component and (path is None or d.get("path") == path)
    )


def drifted(row):
    """Whether a component row (CSV, HTML) shows drift: a message, not ``no baseline set`` or ``unknown``."""
    return bool(row["drift"]) and row["drift"] not in (NO_BASELINE, DRIFT_LABELS["unknown"])


def _row(h, **cells):
    r = dict.fromkeys(CSV_COLUMNS, "")
    r.update({"host": h["name"], "status": status_text(h)})
    r.update({k: "" if v is None else v for k, v in cells.items()})
    return r


def _gpu_rows(h):
    if not h["gpus"]:
        return [_row(h, component="gpu", name=NONE, detail="no NVIDIA GPU found")]
    rows = []
    for g in h["gpus"]:
        mem = f", {g['memory_mib']} MiB" if g.get("memory_mib") else ""
        rows.append(
            _row(
                h,
                component="gpu",
                name=g["name"],
                version=g["compute_capability"],
                source=g["architecture"],
                path=g["pci_bus_id"],
                detail=f"index {g['index']}{mem}, MIG {g['mig_mode']}",
            )
        )
    return rows


def _driver_row(h):
    d = h["driver"]
    pkg = d.get("package") or {}
    if d["version"] == NONE:
        detail = "no NVIDIA driver"
    else:
        detail = f"branch {d['branch']}, {d['kernel_module']} module, CUDA {d['cuda_driver_version']}"
    return _row(
        h,
        component="driver",
        name=pkg.get("name") or "nvidia",
        version=d["version"],
        source=d["install_method"],
        active="loaded" if d.get("loaded") else "",
        detail=detail,
        drift=_drift_for(h, "driver"),
    )


def _package_name(item, default):
    """The row's name: the deb/rpm package that owns the tree, else the facts' package, else ``default``."""
    owner = item.get("owner") or {}
    if owner.get("kind") == "package" and owner.get("name"):
        return owner["name"]
    return (item.get("package") or {}).get("name") or default


def _owner_cells(item):
    owner = item.get("owner") or {}
    return {"owner": owner.get("words"), "owner_kind": owner.get("kind")}


def _cuda_rows(h):
    return [
        _row(
            h,
            component="cuda",
            name=_package_name(t, "cuda"),
            version=t["version"],
            cuda_major=t["major_minor"].split(".")[0],
            source=t["source"],
            path=t["path"],
            active="default" if t["default"] else "",
            detail=f"{'nvcc' if t.get('nvcc') else 'no nvcc'}, packages {t.get('hold', UNKNOWN)}",
            drift=_drift_for(h, "cuda", t["path"]),
            **_owner_cells(t),
        )
        for t in h["cuda"]["toolkits"]
    ]


def _cudnn_detail(c):
    detail = []
    if c.get("python_env"):
        detail.append(f"env {c['python_env']}")
    if c.get("held"):
        detail.append("held")
    if c.get("mismatch"):
        detail.append(f"header {c.get('header_version')} != library {c.get('library_version')}")
    return ", ".join(detail)


def _cudnn_rows(h):
    return [
        _row(
            h,
            component="cudnn",
            name=_package_name(c, "cudnn"),
            version=c["version"],
            cuda_major=c["cuda_major"],
            source=c["source"],
            path=c["path"],
            active="resolved" if c["resolved"] else "",
            detail=_cudnn_detail(c),
            drift=_drift_for(h, "cudnn", c["path"]),
            **_owner_cells(c),
        )
        for c in h["cudnn"]
    ]


def _expected_rows(h):
    """A row for each drift item that has no component row (something the baseline expects is missing)."""
    return [
        _row(
            h,
            component=dr["component"],
            name="(expected)",
            version=dr["actual"],
            detail=dr["key"],
            drift=dr["message"],
        )
        for dr in h["drift"]
        if dr["component"] != "driver" and not dr.get("path")
    ]


def host_component_rows(h):
    if h["status"] != "ok":
        return [_row(h, component="host", name=h["status"], detail=h["message"] or "", drift=drift_text(h))]
    rows = _gpu_rows(h) + [_driver_row(h)] + _cuda_rows(h) + _cudnn_rows(h) + _expected_rows(h)
    return rows + report_consumers.csv_rows(h, CSV_COLUMNS)


def component_rows(report):
    """One row per host x component: GPUs, driver, CUDA toolkits, cuDNN copies, drift with no row."""
    return [r for h in report["hosts"] for r in host_component_rows(h)]


def owner_rows(report):
    """(host, "CUDA <version>" or "cuDNN <version>", path, owner, hold) of every toolkit and cuDNN copy;
    hold: the toolkit's packages' hold words (report.words.hold_words), "" for a cuDNN copy (its detail says
    held)."""
    out = []
    for h in report["hosts"]:
        if h["status"] != "ok":
            continue
        out += [
            (h["name"], f"CUDA {t['version']}", t["path"], t["owner"], t.get("hold", UNKNOWN))
            for t in h["cuda"]["toolkits"]
        ]
        out += [(h["name"], f"cuDNN {c['version']}", c["path"], c["owner"], "") for c in h["cudnn"]]
    return out


# -- findings and drift grouped by message (Markdown, HTML) --------------------------------------------------
def finding_groups(report, severities=SEVERITIES):
    """[(severity, code, message, [host names])] of the findings of ``severities``, each distinct finding
    once: errors first, then warnings, then info; within one severity, the finding on most hosts first (then
    in the order first seen, hosts by name)."""
    groups = {}
    for h in report["hosts"]:
        for f in h["findings"]:
            if f["severity"] in severities:
                groups.setdefault((f["severity"], f["code"], f["message"]), []).append(h["name"])
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    ordered = sorted(groups.items(), key=lambda kv: (rank.get(kv[0][0], len(rank)), -len(kv[1])))
    return [(severity, code, message, names) for (severity, code, message), names in ordered]


def hosts_text(names, limit=GROUP_HOSTS):
    """The first ``limit`` host names, then how many more."""
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more
