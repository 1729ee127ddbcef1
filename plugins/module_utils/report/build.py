# Copyright: gpufleet contributors
# Apache-2.0
"""The fleet report of the audit: built from ``ansible_facts.nvidia`` of every host, findings and drift.

Stdlib only, Python >= 3.9 (runs on the controller inside the ``nvidia_fleet_report`` action plugin; kept
in module_utils so it is plain, importable, unit-tested Python).

Flow: ``build_report(records)`` -> report dict (the JSON schema documented in docs/audit.md, versioned by
``schema_version``) -> ``render_json`` / ``render_csv`` / ``render_markdown`` / ``render_prometheus`` /
``report.html.render_html`` / ``summary_lines``. Every renderer reads only the report dict, whose values are
the report's words (report.words: ``none`` for what is not there, ``unknown`` for what is not known), so that
every format says the same thing about a host.

A record is ``{"name": host, "status": "ok"|"unreachable"|"failed", "facts": ansible_facts.nvidia|None,
"message": str|None, "baseline": gpufleet_baseline|None}``.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import gc
import io
import json
import os
import re
import tempfile

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as plan_compat
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.drift import (
    compute_drift,
    validate_baseline,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import consumers as report_consumers
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import html as report_html
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.failure import (
    failure_message,
    unreachable_message,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.findings import (
    SEVERITIES,
    host_findings,
    kb_findings,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.options import FORMATS
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.owner import owner_shown
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.rows import (
    CSV_COLUMNS,
    HOST_COLUMNS,
    component_rows,
    count_values,
    cuda_text,
    cudnn_text,
    drift_overview,
    drift_text,
    drifted,
    driver_text,
    finding_groups,
    findings_text,
    gpu_text,
    host_cells,
    hosts_text,
    owner_rows,
    status_text,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.words import driver_words, hold_words

# the row texts live in report.rows (shared with report.html); re-exported for the callers of this module
__all__ = [
    "CSV_COLUMNS",
    "FILE_NAMES",
    "FORMATS",
    "STATUSES",
    "build_report",
    "check_report_dir",
    "component_rows",
    "cuda_text",
    "cudnn_text",
    "distributions",
    "drift_lines",
    "drift_overview",
    "drifted",
    "driver_text",
    "gc_paused",
    "gpu_text",
    "host_entry",
    "host_textfiles",
    "normalize_host",
    "record_from_result",
    "remembered_check",
    "render",
    "render_csv",
    "render_json",
    "render_markdown",
    "render_prometheus",
    "report_baseline",
    "report_of",
    "status_text",
    "summary_lines",
    "write_atomic",
    "write_reports",
]

SCHEMA = "gpufleet-audit"
SCHEMA_VERSION = 1
STATUSES = ("ok", "unreachable", "failed")
FILE_NAMES = {
    "json": "gpufleet-audit.json",
    "csv": "gpufleet-audit.csv",
    "md": "gpufleet-audit.md",
    "html": "gpufleet-audit.html",
    "prom": "gpufleet.prom",
}
UNKNOWN = "unknown"


# -- normalization: ansible_facts.nvidia (docs/facts.md, schema 1) -> report host entry --------------------
def _d(value):
    return value if isinstance(value, dict) else {}


def _l(value):
    return value if isinstance(value, list) else []


def _s(value, default=UNKNOWN):
    if value is None or value == "":
        return default
    return str(value)


def _gpu(g):
    g = _d(g)
    return {
        "index": g.get("index"),
        "name": _s(g.get("name")),
        "architecture": _s(g.get("architecture")),
        "compute_capability": _s(g.get("compute_capability")),
        "memory_mib": g.get("memory_mib"),
        "pci_bus_id": _s(g.get("pci_bus_id")),
        "device_id": g.get("device_id"),
        "subsystem_device_id": g.get("subsystem_device_id"),
        "subsystem_vendor_id": g.get("subsystem_vendor_id"),
        "mig_mode": _s(g.get("mig_mode")),
        "uuid": g.get("uuid"),
    }


def _driver(d):
    """The driver of the host entry; its version, branch, kernel module, install method and CUDA version in
    the report's words (report.words.driver_words: ``none`` without a driver), as every format shows them."""
    d = _d(d)
    pkg = d.get("package") if isinstance(d.get("package"), dict) else None
    shown = driver_words(d)
    return {
        "installed": d.get("installed"),
        "version": shown["version"],
        "branch": shown["branch"],
        "kernel_module": shown["kernel_module"],
        "loaded": d.get("loaded"),
        "install_method": shown["install_method"],
        "package": pkg,
        "cuda_driver_version": shown["cuda_driver_version"],
        "secure_boot": _s(d.get("secure_boot")),
    }


def _cuda(c):
    c = _d(c)
    default = c.get("default") if isinstance(c.get("default"), dict) else None
    toolkits = []
    for raw in _l(c.get("toolkits")):
        t = _d(raw)
        version = _s(t.get("version"))
        mm = t.get("major_minor") or ".".join(version.split(".")[:2])
        toolkits.append(
            {
                "version": version,
                "major_minor": _s(mm),
                "path": _s(t.get("path")),
                "source": _s(t.get("source")),
                "package": t.get("package") if isinstance(t.get("package"), dict) else None,
                "nvcc": t.get("nvcc"),
                "default": False,
                "owner": owner_shown("cuda", t),
                # its packages' holds (dpkg hold, dnf versionlock), in the report's words
                "hold": hold_words(t),
            }
        )
    norm_default = None
    if default:
        target = default.get("target")
        version = default.get("version")
        for t in toolkits:
            if target and t["path"] == target:
                t["default"] = True
                version = version or t["version"]
        norm_default = {
            "path": _s(default.get("path")),
            "target": target,
            "version": version,
            "via": default.get("via"),
        }
    return {"toolkits": toolkits, "default": norm_default}


def _cudnn(c):
    c = _d(c)
    pkg = c.get("package") if isinstance(c.get("package"), dict) else None
    return {
        "version": _s(c.get("version")),
        "major": c.get("major"),
        "cuda_major": c.get("cuda_major") if isinstance(c.get("cuda_major"), int) else None,
        "source": _s(c.get("source")),
        "path": _s(c.get("path")),
        "python_env": c.get("python_env"),
        "package": pkg,
        "held": c.get("held"),
        "header": c.get("header"),
        "header_version": c.get("header_version"),
        "library": c.get("library"),
        "library_version": c.get("library_version"),
        "mismatch": c.get("mismatch"),
        "resolved": bool(c.get("resolved")),
        "owner": owner_shown("cudnn", c),
    }


def _copies(cudnn):
    """The cuDNN copies: ``cudnn`` is their list (docs/facts.md); ``{copies: [...]}`` is read the same way."""
    return _l(cudnn.get("copies")) if isinstance(cudnn, dict) else _l(cudnn)


_NOT_AUDITED = {
    "gpu_count": None,
    "gpus": [],
    "driver": None,
    "cuda": None,
    "cudnn": [],
    "cudnn_resolved": [],
    "host": None,
    "probes": {},
    "warnings": [],
    "facts_schema_version": None,
    "consumers": {"ld_library_path": {}, "environments": [], "library_dirs": []},
    "driver_runtime": None,
    "cuda_compat": [],
}
_RESOLVED_KEYS = ("soname", "major", "path", "real_path", "copy_path", "version")


def _host(h):
    """The host context; driver_managed_externally[_reason] are the facts' own (the one definition)."""
    h = _d(h)
    return {
        "container": _s(h.get("container")),
        "vm": _s(h.get("vm")),
        # the CPU architecture (uname -m): a fleet of x86_64 nodes and Arm servers (aarch64, NVIDIA's sbsa)
        "machine": h.get("machine") or None,
        "driver_managed_externally": h.get("driver_managed_externally"),
        "driver_managed_externally_reason": h.get("driver_managed_externally_reason") or "",
    }


def _audited(facts):
    facts = _d(facts)
    gpus = [_gpu(g) for g in _l(facts.get("gpus"))]
    count = facts.get("gpu_count")
    return {
        "facts_schema_version": facts.get("schema_version"),
        "host": _host(facts.get("host")),
        "gpu_count": count if isinstance(count, int) else len(gpus),
        "gpus": gpus,
        "driver": _driver(facts.get("driver")),
        "cuda": _cuda(facts.get("cuda")),
        "cudnn": [_cudnn(c) for c in _copies(facts.get("cudnn"))],
        "cudnn_resolved": [
            {k: _d(r).get(k) for k in _RESOLVED_KEYS} for r in _l(facts.get("cudnn_resolved"))
        ],
        "probes": {k: _d(v).get("state", UNKNOWN) for k, v in _d(facts.get("probes")).items()},
        "warnings": [str(w) for w in _l(facts.get("warnings"))],
        # what each program loads, the driver loaded vs installed, the next boot, cuda-compat (schema 2)
        **report_consumers.normalize(facts),
    }


def normalize_host(name, status, facts=None, message=None):
    """A report host entry (without findings/drift) from one host's ``ansible_facts.nvidia``."""
    if status not in STATUSES:
        raise ValueError(f"status: {status!r} is not one of {', '.join(STATUSES)}")
    entry = {"name": str(name), "status": status, "message": message}
    entry.update(_audited(facts) if status == "ok" else dict(_NOT_AUDITED))
    return entry


def _result_status(result):
    """(status, message) of a registered task result that is not a success, else None; a failed module's
    message carries its own words (stderr, exception, stdout: report.failure), not only Ansible's."""
    if result.get("unreachable"):
        return "unreachable", unreachable_message(result)
    if result.get("failed") or result.get("skipped"):
        return "failed", failure_message(result)
    return None


def record_from_result(name, result, baseline=None):
    """A report record from one host's registered nvidia_facts task result.

    ``result`` is what ``register:`` holds: ``{"unreachable": true, "msg": ...}``, ``{"failed": true, "msg":
    ...}`` or ``{"ansible_facts": {"nvidia": {...}}, ...}``; an already-shaped ``{status, facts, message}``
    is accepted as is. Anything else (no result at all) is a failed host.
    """
    rec = {"name": name, "baseline": baseline, "facts": None, "message": None}
    if not isinstance(result, dict) or not result:
        return dict(
            rec, status="failed", message="no audit result (the host left the play before nvidia_facts)"
        )
    if result.get("status") in STATUSES:
        return dict(rec, status=result["status"], facts=result.get("facts"), message=result.get("message"))
    not_ok = _result_status(result)
    if not_ok:
        return dict(rec, status=not_ok[0], message=not_ok[1])
    nvidia = _d(result.get("ansible_facts")).get("nvidia")
    if not isinstance(nvidia, dict):
        return dict(rec, status="failed", message="nvidia_facts returned no ansible_facts.nvidia")
    return dict(rec, status="ok", facts=nvidia)


# -- the report ---------------------------------------------------------------------------------------
def distributions(hosts):
    """Version distributions across reachable hosts (what the charts draw)."""
    ok = [h for h in hosts if h["status"] == "ok"]
    return {
        "gpu_model": count_values(g["name"] for h in ok for g in h["gpus"]),
        "driver": count_values(
            h["driver"]["version"] for h in ok if h["driver"] and h["driver"].get("installed")
        ),
        "cuda": count_values(t["major_minor"] for h in ok for t in h["cuda"]["toolkits"]),
        "cudnn": count_values(f"{c['version']} ({c['source']})" for h in ok for c in h["cudnn"]),
    }


def report_baseline(baseline):
    """The baseline as the report shows it: set keys only, cudnn_versions keyed by strings (JSON)."""
    if not baseline:
        return baseline
    out = {k: v for k, v in baseline.items() if v is not None}
    if "cudnn_versions" in out:
        out["cudnn_versions"] = {str(k): v for k, v in baseline["cudnn_versions"].items()}
    return out


def _baseline_of(rec, checked):
    """The record's baseline validated; ``checked`` ({repr: validated}) remembers the ones already valid
    (a fleet has a few baselines, from group_vars, shared by thousands of hosts)."""
    raw, name = rec.get("baseline"), rec.get("name")
    if checked is None:
        return validate_baseline(raw, name=f"gpufleet_baseline (host {name})")
    key = repr(raw)
    if key not in checked:
        checked[key] = validate_baseline(raw, name=f"gpufleet_baseline (host {name})")
    return checked[key]


def host_entry(rec, compat, use_compat, checked=None):
    """One host's report entry from its record: normalized facts, baseline, findings and drift."""
    name = rec.get("name")
    baseline = _baseline_of(rec, checked)
    entry = normalize_host(name, rec.get("status", "ok"), rec.get("facts"), rec.get("message"))
    entry["baseline"] = report_baseline(baseline)
    if entry["status"] == "ok":
        entry["findings"] = host_findings(entry, compat=compat, use_compat=use_compat)
        entry["drift"] = compute_drift(entry, baseline)
        entry["drift_status"] = ("drift" if entry["drift"] else "none") if baseline else "no_baseline"
    else:
        entry["findings"] = [
            {
                "severity": "error",
                "code": entry["status"],
                "message": f"host {entry['status']}: {entry['message'] or 'no details'}",
            }
        ]
        entry["drift"] = []
        entry["drift_status"] = "unknown"
    return entry


def _summary(hosts):
    sev = {"error": 0, "warning": 0, "info": 0}
    for h in hosts:
        for f in h["findings"]:
            sev[f["severity"]] = sev.get(f["severity"], 0) + 1
    return {
        "hosts": len(hosts),
        "ok": sum(h["status"] == "ok" for h in hosts),
        "unreachable": sum(h["status"] == "unreachable" for h in hosts),
        "failed": sum(h["status"] == "failed" for h in hosts),
        "no_gpu": sum(h["status"] == "ok" and h["gpu_count"] == 0 for h in hosts),
        "gpus": sum(h["gpu_count"] or 0 for h in hosts),
        "hosts_with_drift": sum(bool(h["drift"]) for h in hosts),
        "no_baseline": sum(h["drift_status"] == "no_baseline" for h in hosts),
        "drift_items": sum(len(h["drift"]) for h in hosts),
        "findings": sev,
        "distributions": distributions(hosts),
    }


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection inside: building and rendering allocate millions of small objects
    (no cycles among them), and the collector's passes over them cost a third of the time at 10,000 hosts."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def remembered_check(check=None):
    """plan.compat.check that answers each distinct question once per report.

    A fleet has few distinct stacks (GPU model, driver, toolkit, cuDNN copy): 10,000 hosts ask the same
    handful of questions, and the rules are pure, so the answer of the first host stands for the others.
    A question whose answer raised is asked again (and raises again), never remembered.
    """
    check = check or plan_compat.check
    answers = {}

    def remembered(**plan):
        key = repr(plan)  # the plans are built key by key in one order (findings._check_plans)
        if key not in answers:
            answers[key] = check(**plan)
        return answers[key]

    return remembered


def build_report(records, generated_at=None, compat=None, use_compat=True, generator="gpufleet.nvidia"):
    """The fleet report (a dict, JSON-serializable). Raises drift.BaselineError for a malformed baseline.

    ``compat``: the compatibility rules, a function host entry -> findings (default: findings.kb_findings,
    which asks plan.compat.check, each distinct question once: remembered_check); ``use_compat=False``:
    the driver's own CUDA version decides instead.
    """
    if compat is None:
        compat = functools.partial(kb_findings, check=remembered_check())
    checked = {}
    with gc_paused():
        hosts = [
            host_entry(rec, compat, use_compat, checked)
            for rec in sorted(records, key=lambda r: str(r.get("name")))
        ]
        return report_of(hosts, generated_at, generator)


def report_of(hosts, generated_at=None, generator="gpufleet.nvidia"):
    """The report around finished host entries (sorted by name): the summary is counted from them."""
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "generator": generator,
        "generated_at": generated_at,
        "summary": _summary(hosts),
        "hosts": hosts,
    }


# -- renderers -------------------------------------------------------------------------------------------
def render_json(report):
    """The report as JSON: top-level keys one per line, each host entry compact on its own line.

    Valid JSON that stays diff- and grep-friendly (one host per line) and is written by json's C encoder
    (``indent`` would switch to the pure-Python one, 3-4x slower on a 10,000-host report); one encoder for
    every line.
    """
    encode = json.JSONEncoder(default=str).encode
    parts = []
    for key, value in report.items():
        if key == "hosts" and isinstance(value, list):
            text = "[\n" + ",\n".join("    " + encode(h) for h in value) + "\n  ]" if value else "[]"
        else:
            text = encode(value)
        parts.append(f"  {encode(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def render_csv(report):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows([r[c] for c in CSV_COLUMNS] for r in component_rows(report))
    return buf.getvalue()


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_header(report):
    s = report["summary"]
    return [
        "# gpufleet audit",
        "",
        f"Generated {report['generated_at']} by {report['generator']} (schema {report['schema']} "
        f"v{report['schema_version']}).",
        "",
        f"- hosts: {s['hosts']} ({s['ok']} audited, {s['unreachable']} unreachable, {s['failed']} failed, "
        f"{s['no_gpu']} without GPU)",
        f"- GPUs: {s['gpus']}",
        f"- drift: {drift_overview(report)}",
        f"- findings: {s['findings']['error']} error(s), {s['findings']['warning']} warning(s), "
        f"{s['findings']['info']} info",
        "",
    ]


def _md_hosts_table(report):
    lines = [
        "| " + " | ".join(HOST_COLUMNS) + " |",
        "| " + " | ".join("---" for _column in HOST_COLUMNS) + " |",
    ]
    for h in report["hosts"]:
        cells = host_cells(h, drift_text(h, count=lambda n: f"**{n}**"), findings_text(h))
        lines.append("| " + " | ".join(_md(x) for x in cells) + " |")
    return lines


def _md_lists(report):
    lines = []
    drift = [(h, d) for h in report["hosts"] for d in h["drift"]]
    if drift:
        lines += ["", "## Drift", ""]
        lines += [f"- **{_md(h['name'])}**: {_md(d['message'])}" for h, d in drift]
    noisy = finding_groups(report, ("error", "warning"))
    if noisy:
        lines += ["", "## Findings", "", "Errors, then warnings, each by number of hosts (info: JSON, HTML)."]
        lines.append("")
        lines += [
            f"- {severity} `{code}` on {len(names)} host(s) ({_md(hosts_text(names))}): {_md(message)}"
            for severity, code, message, names in noisy
        ]
    return lines


_DISTRIBUTION_TITLES = (
    ("gpu_model", "GPU models"),
    ("driver", "Drivers"),
    ("cuda", "CUDA toolkits"),
    ("cudnn", "cuDNN copies"),
)


def _md_owners(report):
    rows = owner_rows(report)
    if not rows:
        return []
    return ["", "## Owners", ""] + [
        f"- **{_md(name)}** {_md(what)} at {_md(path)}: {_md(owner['words'])} (owner_kind `{owner['kind']}`)"
        + (f", packages {_md(hold)}" if hold else "")
        for name, what, path, owner, hold in rows
    ]


def render_markdown(report):
    dist = report["summary"]["distributions"]
    lines = _md_header(report) + _md_hosts_table(report) + _md_lists(report) + _md_owners(report)
    lines += report_consumers.markdown_lines(report)
    lines += ["", "## Versions", ""]
    for key, title in _DISTRIBUTION_TITLES:
        items = ", ".join(f"{_md(k)} x{v}" for k, v in dist[key].items()) or "none"
        lines.append(f"- {title}: {items}")
    return "\n".join(lines) + "\n"


_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _label_value(value):
    return str("" if value is None else value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class _Exposition:
    """Sample lines of the text format; label names checked once, escaped label values remembered.

    A fleet repeats the same versions, paths and names on thousands of hosts: each distinct value is
    escaped once per render.
    """

    def __init__(self):
        self.names, self.values = set(), {}

    def label(self, key, value):
        if key not in self.names:
            if not _LABEL_NAME.match(key):
                raise ValueError(f"invalid label name {key!r}")
            self.names.add(key)
        if not isinstance(value, str):  # 1, True and 1.0 are one dict key: only strings are remembered
            return f'{key}="{_label_value(value)}"'
        text = self.values.get(value)
        if text is None:
            text = self.values[value] = _label_value(value)
        return f'{key}="{text}"'

    def sample(self, name, labels, value):
        inner = "{" + ",".join(self.label(k, v) for k, v in labels.items()) + "}" if labels else ""
        return f"{name}{inner} {value}"


METRICS = (
    ("gpufleet_audit_host_up", "1 when the audit could read the host, 0 when it was unreachable or failed."),
    ("gpufleet_gpus", "NVIDIA GPUs found on the host (0: no GPU)."),
    ("gpufleet_gpu_info", "One series per GPU: model, architecture, compute capability, PCI bus id."),
    ("gpufleet_driver_info", "The NVIDIA driver on the host (version none when not installed)."),
    (
        "gpufleet_cuda_toolkit_info",
        "One series per CUDA toolkit tree; default=true for /usr/local/cuda; owner_kind: who installed it; "
        "hold: its packages' holds (held, partly held (M of N), not held, none).",
    ),
    (
        "gpufleet_cudnn_info",
        "One series per cuDNN copy; resolved=true for the one the loader picks; owner_kind: who owns it.",
    ),
    (
        "gpufleet_baseline",
        "1 when the host has a gpufleet_baseline, 0: no baseline set (nothing compared, no gpufleet_drift).",
    ),
    ("gpufleet_drift", "Number of differences between the host and its gpufleet_baseline (only with one)."),
    ("gpufleet_drift_info", "One series per difference between the host and its gpufleet_baseline."),
    ("gpufleet_findings", "Audit findings per host and severity."),
    ("gpufleet_audit_timestamp_seconds", "When the report was generated (Unix time)."),
)


def _gpu_series(host, g):
    labels = {
        "host": host,
        "index": "" if g["index"] is None else g["index"],
        "name": g["name"],
        "architecture": g["architecture"],
        "compute_capability": g["compute_capability"],
        # NVML's form, as in gpufleet_gpu_stack_info and dcgm-exporter, so the series join on it
        "pci_bus_id": report_consumers.nvml_bus_id(g["pci_bus_id"]),
    }
    return labels, 1


def _driver_series(host, d):
    labels = {
        "host": host,
        "version": d["version"],
        "branch": d["branch"],
        "kernel_module": d["kernel_module"],
        "install_method": d["install_method"],
        "cuda_version": d["cuda_driver_version"],
    }
    return labels, 1


def _toolkit_series(host, t):
    labels = {
        "host": host,
        "version": t["version"],
        "path": t["path"],
        "source": t["source"],
        "default": "true" if t["default"] else "false",
        "owner_kind": t["owner"]["kind"],
        "hold": t.get("hold", UNKNOWN),
    }
    return labels, 1


def _cudnn_series(host, c):
    labels = {
        "host": host,
        "version": c["version"],
        "cuda_major": c["cuda_major"] or "",
        "source": c["source"],
        "path": c["path"],
        "python_env": c.get("python_env") or "",
        "resolved": "true" if c["resolved"] else "false",
        "owner_kind": c["owner"]["kind"],
    }
    return labels, 1


def _drift_series(host, drift):
    out, seen = [], set()
    for dr in drift:
        labels = {
            "host": host,
            "component": dr["component"],
            "key": dr["key"],
            "expected": dr["expected"],
            "actual": dr["actual"],
            "path": dr.get("path") or "",
        }
        key = tuple(labels.values())
        if key not in seen:
            seen.add(key)
            out.append((labels, 1))
    return out


def _host_series(series, h):
    """Add one audited host's samples to ``series`` ({metric: [(labels, value)]})."""
    host = h["name"]
    series["gpufleet_gpus"].append(({"host": host}, h["gpu_count"] or 0))
    series["gpufleet_gpu_info"].extend(_gpu_series(host, g) for g in h["gpus"])
    series["gpufleet_driver_info"].append(_driver_series(host, h["driver"]))
    series["gpufleet_cuda_toolkit_info"].extend(_toolkit_series(host, t) for t in h["cuda"]["toolkits"])
    series["gpufleet_cudnn_info"].extend(_cudnn_series(host, c) for c in h["cudnn"])
    series["gpufleet_baseline"].append(({"host": host}, 0 if h["drift_status"] == "no_baseline" else 1))
    if h["drift_status"] != "no_baseline":
        series["gpufleet_drift"].append(({"host": host}, len(h["drift"])))
    series["gpufleet_drift_info"].extend(_drift_series(host, h["drift"]))


def _findings_series(series, h):
    """gpufleet_findings of every host, audited or not (a host not audited has its error finding)."""
    for sev in SEVERITIES:
        series["gpufleet_findings"].append(
            ({"host": h["name"], "severity": sev}, sum(f["severity"] == sev for f in h["findings"]))
        )


def render_prometheus(report, timestamp=None, hosts=None):
    """Prometheus text exposition format (node_exporter textfile collector); ``hosts``: only the series of
    these hosts (a node's own file: the same lines as its rows of the fleet's file)."""
    metrics = METRICS + report_consumers.METRICS
    series = {name: [] for name, _help in metrics}
    for h in report["hosts"] if hosts is None else [h for h in report["hosts"] if h["name"] in hosts]:
        series["gpufleet_audit_host_up"].append(
            ({"host": h["name"], "status": h["status"]}, 1 if h["status"] == "ok" else 0)
        )
        if h["status"] == "ok":
            _host_series(series, h)
            for name, labels, value in report_consumers.metric_series(h):
                series[name].append((labels, value))
        _findings_series(series, h)
    if timestamp is not None:
        series["gpufleet_audit_timestamp_seconds"].append(({}, int(timestamp)))
    lines, exposition = [], _Exposition()
    for name, help_text in metrics:
        if not series[name]:
            continue
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        lines.extend(exposition.sample(name, labels, value) for labels, value in series[name])
    return "\n".join(lines) + "\n"


SUMMARY_COLUMNS = HOST_COLUMNS  # the hosts table's columns and cells (report.rows.host_cells)


def summary_lines(report):
    """A fixed-width table for the end of the run (one line per host) and a totals line."""
    table = []
    for h in report["hosts"]:
        table.append(host_cells(h, drift_text(h), findings_text(h)))
    widths = [min(max([len(c)] + [len(str(r[i])) for r in table]), 60) for i, c in enumerate(SUMMARY_COLUMNS)]

    def fmt(r):
        return "  ".join(str(v)[: widths[i]].ljust(widths[i]) for i, v in enumerate(r)).rstrip()

    s = report["summary"]
    out = [fmt(SUMMARY_COLUMNS), fmt(["-" * w for w in widths])] + [fmt(r) for r in table]
    out.append(
        f"{s['hosts']} host(s): {s['ok']} audited, {s['unreachable']} unreachable, {s['failed']} failed, "
        f"{s['no_gpu']} without GPU; drift: {drift_overview(report, names=False)}; "
        f"{s['findings']['error']} error(s), {s['findings']['warning']} warning(s)"
    )
    return out


def host_textfiles(report, directories, timestamp=None):
    """{host: {directory, content}}: each audited host's own Prometheus series, for the hosts that have a
    textfile directory (``directories``: {host: node_exporter's textfile directory on that host})."""
    return {
        h["name"]: {
            "directory": directories[h["name"]],
            "content": render_prometheus(report, timestamp=timestamp, hosts={h["name"]}),
        }
        for h in report["hosts"]
        if h["status"] == "ok" and directories.get(h["name"])
    }


def drift_lines(report):
    return [f"{h['name']}: {d['message']}" for h in report["hosts"] for d in h["drift"]]


# -- files -----------------------------------------------------------------------------------------------
def write_atomic(path, text, mode=0o644):
    """Write ``text`` to ``path`` atomically (temp file in the same directory, fsync, rename)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _check_creatable(directory, path):
    """Check mode: the nearest existing parent of ``path`` must be a writable directory."""
    parent = os.path.dirname(path)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f"gpufleet_audit_report_dir: cannot create {directory}: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"gpufleet_audit_report_dir: cannot create {directory}: {parent} is not writable"
    return None


def _check_writable(directory, path):
    try:
        fd, tmp = tempfile.mkstemp(prefix=".gpufleet-write-test-", dir=path)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        return f"gpufleet_audit_report_dir: {directory} is not writable: {exc.strerror}"
    return None


def check_report_dir(directory, create=True):
    """Return None when ``directory`` can receive the reports, else a one-line reason."""
    if not directory:
        return "gpufleet_audit_report_dir is empty: give a directory for the reports"
    path = os.path.abspath(directory)
    if os.path.exists(path) and not os.path.isdir(path):
        return f"gpufleet_audit_report_dir: {directory} exists and is not a directory"
    if not os.path.exists(path):
        if not create:
            return _check_creatable(directory, path)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            return f"gpufleet_audit_report_dir: cannot create {directory}: {exc.strerror}"
    return _check_writable(directory, path)


_RENDERERS = {
    "json": render_json,
    "csv": render_csv,
    "md": render_markdown,
    "html": report_html.render_html,
}


def render(report, fmt, timestamp=None):
    """The text of one format."""
    if fmt != "prom" and fmt not in _RENDERERS:
        raise ValueError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    with gc_paused():
        if fmt == "prom":
            return render_prometheus(report, timestamp=timestamp)
        return _RENDERERS[fmt](report)


def write_reports(report, directory, formats=FORMATS, timestamp=None):
    """Render and write each format atomically; returns {format: path}."""
    paths = {}
    for fmt in formats:
        path = os.path.join(directory, FILE_NAMES[fmt])
        write_atomic(path, render(report, fmt, timestamp=timestamp))
        paths[fmt] = path
    return paths
