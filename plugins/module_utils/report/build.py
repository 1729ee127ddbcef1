# Copyright: gpufleet contributors
# Apache-2.0
"""The fleet report of the audit: built from ``ansible_facts.nvidia`` of every host, findings and drift.

Stdlib only, Python >= 3.9 (runs on the controller inside the ``nvidia_fleet_report`` action plugin; kept
in module_utils so it is plain, importable, unit-tested Python).

Flow: ``build_report(records)`` -> report dict (the JSON schema documented in docs/audit.md, versioned by
``schema_version``) -> ``render_json`` / ``render_csv`` / ``render_markdown`` / ``render_prometheus`` /
``report_html.render_html`` / ``summary_lines``. Every renderer reads only the report dict.

A record is ``{"name": host, "status": "ok"|"unreachable"|"failed", "facts": ansible_facts.nvidia|None,
"message": str|None, "baseline": gpufleet_baseline|None}``.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
import re
import tempfile

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.drift import (
    compute_drift,
    validate_baseline,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.findings import host_findings

SCHEMA = "gpufleet-audit"
SCHEMA_VERSION = 1
STATUSES = ("ok", "unreachable", "failed")
FORMATS = ("json", "csv", "md", "html", "prom")
FILE_NAMES = {
    "json": "gpufleet-audit.json",
    "csv": "gpufleet-audit.csv",
    "md": "gpufleet-audit.md",
    "html": "gpufleet-audit.html",
    "prom": "gpufleet.prom",
}
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
)
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
    d = _d(d)
    pkg = d.get("package") if isinstance(d.get("package"), dict) else None
    return {
        "installed": d.get("installed"),
        "version": _s(d.get("version")),
        "branch": _s(d.get("branch")),
        "kernel_module": _s(d.get("kernel_module")),
        "loaded": d.get("loaded"),
        "install_method": _s(d.get("install_method")),
        "package": pkg,
        "cuda_driver_version": d.get("cuda_driver_version")
        if d.get("cuda_driver_version") != UNKNOWN
        else None,
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
    }


def normalize_host(name, status, facts=None, message=None):
    """A report host entry (without findings/drift) from one host's ``ansible_facts.nvidia``."""
    if status not in STATUSES:
        raise ValueError(f"status: {status!r} is not one of {', '.join(STATUSES)}")
    entry = {"name": str(name), "status": status, "message": message}
    if status != "ok":
        entry.update(
            {
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
            }
        )
        return entry
    facts = _d(facts)
    gpus = [_gpu(g) for g in _l(facts.get("gpus"))]
    count = facts.get("gpu_count")
    if not isinstance(count, int):
        count = len(gpus)
    host = _d(facts.get("host"))
    entry.update(
        {
            "facts_schema_version": facts.get("schema_version"),
            "host": {
                "container": _s(host.get("container")),
                "vm": _s(host.get("vm")),
                "driver_managed_externally": host.get("driver_managed_externally"),
            },
            "gpu_count": count,
            "gpus": gpus,
            "driver": _driver(facts.get("driver")),
            "cuda": _cuda(facts.get("cuda")),
            "cudnn": [_cudnn(c) for c in _l(facts.get("cudnn"))],
            "cudnn_resolved": [
                {k: _d(r).get(k) for k in ("soname", "major", "path", "real_path", "copy_path", "version")}
                for r in _l(facts.get("cudnn_resolved"))
            ],
            "probes": {k: _d(v).get("state", UNKNOWN) for k, v in _d(facts.get("probes")).items()},
            "warnings": [str(w) for w in _l(facts.get("warnings"))],
        }
    )
    return entry


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
    if result.get("unreachable"):
        return dict(rec, status="unreachable", message=str(result.get("msg") or "unreachable"))
    if result.get("failed") or result.get("skipped"):
        return dict(rec, status="failed", message=str(result.get("msg") or "nvidia_facts failed"))
    nvidia = _d(result.get("ansible_facts")).get("nvidia")
    if not isinstance(nvidia, dict):
        return dict(rec, status="failed", message="nvidia_facts returned no ansible_facts.nvidia")
    return dict(rec, status="ok", facts=nvidia)


# -- the report ---------------------------------------------------------------------------------------
def _count(values):
    out = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def distributions(hosts):
    """Version distributions across reachable hosts (what the charts draw)."""
    ok = [h for h in hosts if h["status"] == "ok"]
    return {
        "gpu_model": _count(g["name"] for h in ok for g in h["gpus"]),
        "driver": _count(h["driver"]["version"] for h in ok if h["driver"] and h["driver"].get("installed")),
        "cuda": _count(t["major_minor"] for h in ok for t in h["cuda"]["toolkits"]),
        "cudnn": _count(f"{c['version']} ({c['source']})" for h in ok for c in h["cudnn"]),
    }


def build_report(records, generated_at=None, compat=None, use_compat=True, generator="gpufleet.nvidia"):
    """The fleet report (a dict, JSON-serializable). Raises drift.BaselineError for a malformed baseline."""
    hosts = []
    for rec in sorted(records, key=lambda r: str(r.get("name"))):
        name = rec.get("name")
        baseline = validate_baseline(rec.get("baseline"), name=f"gpufleet_baseline (host {name})")
        entry = normalize_host(name, rec.get("status", "ok"), rec.get("facts"), rec.get("message"))
        entry["baseline"] = baseline and {k: v for k, v in baseline.items() if v is not None}
        if entry.get("baseline") and "cudnn_versions" in entry["baseline"]:
            entry["baseline"]["cudnn_versions"] = {str(k): v for k, v in baseline["cudnn_versions"].items()}
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
        hosts.append(entry)
    sev = {"error": 0, "warning": 0, "info": 0}
    for h in hosts:
        for f in h["findings"]:
            sev[f["severity"]] = sev.get(f["severity"], 0) + 1
    summary = {
        "hosts": len(hosts),
        "ok": sum(h["status"] == "ok" for h in hosts),
        "unreachable": sum(h["status"] == "unreachable" for h in hosts),
        "failed": sum(h["status"] == "failed" for h in hosts),
        "no_gpu": sum(h["status"] == "ok" and h["gpu_count"] == 0 for h in hosts),
        "gpus": sum(h["gpu_count"] or 0 for h in hosts),
        "hosts_with_drift": sum(bool(h["drift"]) for h in hosts),
        "drift_items": sum(len(h["drift"]) for h in hosts),
        "findings": sev,
        "distributions": distributions(hosts),
    }
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "generator": generator,
        "generated_at": generated_at,
        "summary": summary,
        "hosts": hosts,
    }


# -- short texts shared by the renderers ------------------------------------------------------------------
def gpu_text(h):
    if h["status"] != "ok":
        return "-"
    if not h["gpu_count"]:
        return "no GPU"
    models = _count(g["name"] for g in h["gpus"])
    return ", ".join(f"{n}x {m}" for m, n in models.items()) or f"{h['gpu_count']} GPU"


def driver_text(h):
    d = h.get("driver")
    if h["status"] != "ok" or not d:
        return "-"
    if d.get("installed") is False:
        return "none"
    return f"{d['version']} ({d['kernel_module']}, {d['install_method']})"


def cuda_text(h):
    if h["status"] != "ok":
        return "-"
    toolkits = h["cuda"]["toolkits"]
    if not toolkits:
        return "none"
    return ", ".join(t["version"] + ("*" if t["default"] else "") for t in toolkits)


def cudnn_text(h):
    if h["status"] != "ok":
        return "-"
    if not h["cudnn"]:
        return "none"
    return ", ".join(
        f"{c['version']} {c['source']}"
        + (f"/cu{c['cuda_major']}" if c["cuda_major"] else "")
        + ("*" if c["resolved"] else "")
        for c in h["cudnn"]
    )


def status_text(h):
    if h["status"] == "ok" and not h["gpu_count"]:
        return "ok (no GPU)"
    return h["status"]


# -- rows: one per host x component (CSV, HTML table) ------------------------------------------------------
def _drift_for(h, component, path=None):
    return "; ".join(
        d["message"]
        for d in h["drift"]
        if d["component"] == component and (path is None or d.get("path") == path)
    )


def component_rows(report):
    """One row per host x component: GPUs, driver, CUDA toolkits, cuDNN copies, drift with no row."""
    rows = []
    for h in report["hosts"]:
        base = {"host": h["name"], "status": status_text(h)}

        def row(base=base, **kw):
            r = dict.fromkeys(CSV_COLUMNS, "")
            r.update(base)
            r.update({k: "" if v is None else v for k, v in kw.items()})
            rows.append(r)

        if h["status"] != "ok":
            row(component="host", name=h["status"], detail=h["message"] or "")
            continue
        if not h["gpus"]:
            row(component="gpu", name="none", detail="no NVIDIA GPU found")
        for g in h["gpus"]:
            mem = f", {g['memory_mib']} MiB" if g.get("memory_mib") else ""
            row(
                component="gpu",
                name=g["name"],
                version=g["compute_capability"],
                source=g["architecture"],
                path=g["pci_bus_id"],
                detail=f"index {g['index']}{mem}, MIG {g['mig_mode']}",
            )
        d = h["driver"]
        pkg = d.get("package") or {}
        row(
            component="driver",
            name=pkg.get("name") or "nvidia",
            version=d["version"] if d.get("installed") is not False else "none",
            source=d["install_method"],
            active="loaded" if d.get("loaded") else "",
            detail="no NVIDIA driver"
            if d.get("installed") is False
            else f"branch {d['branch']}, {d['kernel_module']} module, "
            f"CUDA {d.get('cuda_driver_version') or '?'}",
            drift=_drift_for(h, "driver"),
        )
        for t in h["cuda"]["toolkits"]:
            row(
                component="cuda",
                name=(t.get("package") or {}).get("name") or "cuda",
                version=t["version"],
                cuda_major=t["major_minor"].split(".")[0],
                source=t["source"],
                path=t["path"],
                active="default" if t["default"] else "",
                detail="nvcc" if t.get("nvcc") else "no nvcc",
                drift=_drift_for(h, "cuda", t["path"]),
            )
        for c in h["cudnn"]:
            pkg = c.get("package") or {}
            detail = []
            if c.get("python_env"):
                detail.append(f"env {c['python_env']}")
            if c.get("held"):
                detail.append("held")
            if c.get("mismatch"):
                detail.append(f"header {c.get('header_version')} != library {c.get('library_version')}")
            row(
                component="cudnn",
                name=pkg.get("name") or "cudnn",
                version=c["version"],
                cuda_major=c["cuda_major"],
                source=c["source"],
                path=c["path"],
                active="resolved" if c["resolved"] else "",
                detail=", ".join(detail),
                drift=_drift_for(h, "cudnn", c["path"]),
            )
        for dr in h["drift"]:
            if dr["component"] != "driver" and not dr.get("path"):
                row(
                    component=dr["component"],
                    name="(expected)",
                    version=dr["actual"],
                    detail=dr["key"],
                    drift=dr["message"],
                )
    return rows


# -- renderers -------------------------------------------------------------------------------------------
def render_json(report):
    return json.dumps(report, indent=2, sort_keys=False, default=str) + "\n"


def render_csv(report):
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in component_rows(report):
        writer.writerow(r)
    return buf.getvalue()


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report):
    s = report["summary"]
    lines = [
        "# gpufleet audit",
        "",
        f"Generated {report['generated_at']} by {report['generator']} (schema {report['schema']} "
        f"v{report['schema_version']}).",
        "",
        f"- hosts: {s['hosts']} ({s['ok']} audited, {s['unreachable']} unreachable, {s['failed']} failed, "
        f"{s['no_gpu']} without GPU)",
        f"- GPUs: {s['gpus']}",
        f"- drift: {s['drift_items']} item(s) on {s['hosts_with_drift']} host(s)",
        f"- findings: {s['findings']['error']} error(s), {s['findings']['warning']} warning(s), "
        f"{s['findings']['info']} info",
        "",
        "| host | status | GPUs | driver | CUDA (* default) | cuDNN (* loader) | drift | findings |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for h in report["hosts"]:
        nf = sum(f["severity"] in ("error", "warning") for f in h["findings"])
        drift = {"none": "none", "no_baseline": "no baseline", "unknown": "unknown"}.get(
            h["drift_status"], f"**{len(h['drift'])}**"
        )
        lines.append(
            "| "
            + " | ".join(
                _md(x)
                for x in (
                    h["name"],
                    status_text(h),
                    gpu_text(h),
                    driver_text(h),
                    cuda_text(h),
                    cudnn_text(h),
                    drift,
                    nf,
                )
            )
            + " |"
        )
    drift_hosts = [h for h in report["hosts"] if h["drift"]]
    if drift_hosts:
        lines += ["", "## Drift", ""]
        for h in drift_hosts:
            for d in h["drift"]:
                lines.append(f"- **{_md(h['name'])}**: {_md(d['message'])}")
    noisy = [(h, f) for h in report["hosts"] for f in h["findings"] if f["severity"] in ("error", "warning")]
    if noisy:
        lines += ["", "## Findings", ""]
        for h, f in noisy:
            lines.append(f"- **{_md(h['name'])}** {f['severity']} `{f['code']}`: {_md(f['message'])}")
    dist = s["distributions"]
    lines += ["", "## Versions", ""]
    for key, title in (
        ("gpu_model", "GPU models"),
        ("driver", "Drivers"),
        ("cuda", "CUDA toolkits"),
        ("cudnn", "cuDNN copies"),
    ):
        items = ", ".join(f"{_md(k)} x{v}" for k, v in dist[key].items()) or "none"
        lines.append(f"- {title}: {items}")
    return "\n".join(lines) + "\n"


_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _label_value(value):
    return str("" if value is None else value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _sample(name, labels, value):
    parts = []
    for k, v in labels.items():
        if not _LABEL_NAME.match(k):
            raise ValueError(f"invalid label name {k!r}")
        parts.append(f'{k}="{_label_value(v)}"')
    inner = "{" + ",".join(parts) + "}" if parts else ""
    return f"{name}{inner} {value}"


METRICS = (
    ("gpufleet_audit_host_up", "1 when the audit could read the host, 0 when it was unreachable or failed."),
    ("gpufleet_gpus", "NVIDIA GPUs found on the host (0: no GPU)."),
    ("gpufleet_gpu_info", "One series per GPU: model, architecture, compute capability, PCI bus id."),
    ("gpufleet_driver_info", "The NVIDIA driver on the host (version none when not installed)."),
    ("gpufleet_cuda_toolkit_info", "One series per CUDA toolkit tree; default=true for /usr/local/cuda."),
    ("gpufleet_cudnn_info", "One series per cuDNN copy; resolved=true for the one the dynamic loader picks."),
    ("gpufleet_drift", "Number of differences between the host and its gpufleet_baseline."),
    ("gpufleet_drift_info", "One series per difference between the host and its gpufleet_baseline."),
    ("gpufleet_findings", "Audit findings per host and severity."),
    ("gpufleet_audit_timestamp_seconds", "When the report was generated (Unix time)."),
)


def render_prometheus(report, timestamp=None):
    """Prometheus text exposition format (node_exporter textfile collector)."""
    series = {name: [] for name, _ in METRICS}
    for h in report["hosts"]:
        host = h["name"]
        series["gpufleet_audit_host_up"].append(
            ({"host": host, "status": h["status"]}, 1 if h["status"] == "ok" else 0)
        )
        if h["status"] != "ok":
            continue
        series["gpufleet_gpus"].append(({"host": host}, h["gpu_count"] or 0))
        for g in h["gpus"]:
            series["gpufleet_gpu_info"].append(
                (
                    {
                        "host": host,
                        "index": "" if g["index"] is None else g["index"],
                        "name": g["name"],
                        "architecture": g["architecture"],
                        "compute_capability": g["compute_capability"],
                        "pci_bus_id": g["pci_bus_id"],
                    },
                    1,
                )
            )
        d = h["driver"]
        series["gpufleet_driver_info"].append(
            (
                {
                    "host": host,
                    "version": d["version"] if d.get("installed") is not False else "none",
                    "branch": d["branch"],
                    "kernel_module": d["kernel_module"],
                    "install_method": d["install_method"],
                    "cuda_version": d.get("cuda_driver_version") or "",
                },
                1,
            )
        )
        for t in h["cuda"]["toolkits"]:
            series["gpufleet_cuda_toolkit_info"].append(
                (
                    {
                        "host": host,
                        "version": t["version"],
                        "path": t["path"],
                        "source": t["source"],
                        "default": "true" if t["default"] else "false",
                    },
                    1,
                )
            )
        for c in h["cudnn"]:
            series["gpufleet_cudnn_info"].append(
                (
                    {
                        "host": host,
                        "version": c["version"],
                        "cuda_major": c["cuda_major"] or "",
                        "source": c["source"],
                        "path": c["path"],
                        "python_env": c.get("python_env") or "",
                        "resolved": "true" if c["resolved"] else "false",
                    },
                    1,
                )
            )
        series["gpufleet_drift"].append(({"host": host}, len(h["drift"])))
        seen = set()
        for dr in h["drift"]:
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
                series["gpufleet_drift_info"].append((labels, 1))
        for sev in ("error", "warning", "info"):
            series["gpufleet_findings"].append(
                ({"host": host, "severity": sev}, sum(f["severity"] == sev for f in h["findings"]))
            )
    if timestamp is not None:
        series["gpufleet_audit_timestamp_seconds"].append(({}, int(timestamp)))
    lines = []
    for name, help_text in METRICS:
        if not series[name]:
            continue
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        lines.extend(_sample(name, labels, value) for labels, value in series[name])
    return "\n".join(lines) + "\n"


def summary_lines(report):
    """A fixed-width table for the end of the run (one line per host) and a totals line."""
    cols = ("host", "status", "GPUs", "driver", "CUDA (*default)", "cuDNN (*loader)", "drift", "findings")
    table = []
    for h in report["hosts"]:
        errs = sum(f["severity"] == "error" for f in h["findings"])
        warns = sum(f["severity"] == "warning" for f in h["findings"])
        drift = {"none": "0", "no_baseline": "-", "unknown": "?"}.get(h["drift_status"], str(len(h["drift"])))
        table.append(
            (
                h["name"],
                status_text(h),
                gpu_text(h),
                driver_text(h),
                cuda_text(h),
                cudnn_text(h),
                drift,
                f"{errs}E {warns}W",
            )
        )
    widths = [min(max([len(c)] + [len(str(r[i])) for r in table]), 60) for i, c in enumerate(cols)]

    def fmt(r):
        return "  ".join(str(v)[: widths[i]].ljust(widths[i]) for i, v in enumerate(r)).rstrip()

    s = report["summary"]
    out = [fmt(cols), fmt(["-" * w for w in widths])] + [fmt(r) for r in table]
    out.append(
        f"{s['hosts']} host(s): {s['ok']} audited, {s['unreachable']} unreachable, {s['failed']} failed, "
        f"{s['no_gpu']} without GPU; drift on {s['hosts_with_drift']} host(s); "
        f"{s['findings']['error']} error(s), {s['findings']['warning']} warning(s)"
    )
    return out


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


def check_report_dir(directory, create=True):
    """Return None when ``directory`` can receive the reports, else a one-line reason."""
    if not directory:
        return "gpufleet_audit_report_dir is empty: give a directory for the reports"
    path = os.path.abspath(directory)
    if os.path.exists(path) and not os.path.isdir(path):
        return f"gpufleet_audit_report_dir: {directory} exists and is not a directory"
    if not os.path.exists(path):
        if not create:
            # check mode: the nearest existing parent must be a writable directory
            parent = os.path.dirname(path)
            while not os.path.exists(parent):
                parent = os.path.dirname(parent)
            if not os.path.isdir(parent):
                return f"gpufleet_audit_report_dir: cannot create {directory}: {parent} is not a directory"
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"gpufleet_audit_report_dir: cannot create {directory}: {parent} is not writable"
            return None
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            return f"gpufleet_audit_report_dir: cannot create {directory}: {exc.strerror}"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".gpufleet-write-test-", dir=path)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        return f"gpufleet_audit_report_dir: {directory} is not writable: {exc.strerror}"
    return None


def render(report, fmt, timestamp=None):
    """The text of one format (html comes from report_html, which builds on this module)."""
    if fmt == "json":
        return render_json(report)
    if fmt == "csv":
        return render_csv(report)
    if fmt == "md":
        return render_markdown(report)
    if fmt == "prom":
        return render_prometheus(report, timestamp=timestamp)
    if fmt == "html":
        html = importlib.import_module("ansible_collections.gpufleet.nvidia.plugins.module_utils.report.html")
        return html.render_html(report)
    raise ValueError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")


def write_reports(report, directory, formats=FORMATS, timestamp=None):
    """Render and write each format atomically; returns {format: path}."""
    paths = {}
    for fmt in formats:
        path = os.path.join(directory, FILE_NAMES[fmt])
        write_atomic(path, render(report, fmt, timestamp=timestamp))
        paths[fmt] = path
    return paths
