# Copyright: gpufleet contributors
# Apache-2.0
"""The per-environment view of the fleet report: what each consumer environment loads (facts
``consumers``), the driver's runtime state (loaded vs user space, next boot) and CUDA forward compatibility.

Stdlib only, Python >= 3.9. Pure functions of the facts or of a report host entry:
- ``normalize(facts)``: the keys ``consumers``, ``driver_runtime`` and ``cuda_compat`` of a report host entry
  (report.build._audited adds them to what it builds);
- ``framework_verdict(fw)``: whether a framework works with the cuDNN it loads (the one decision, used by
  report.findings and by these rows);
- ``environment_rows(h)`` / ``ENV_COLUMNS``: one row per host x environment x consumer (CSV, Markdown, HTML);
- ``metric_series(h)`` / ``METRICS``: Prometheus series, with DCGM exporter's label names on the per-GPU
  series so dashboards can join them with DCGM's metrics.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.words import (
    UNKNOWN,
    version_parts,
    word,
)

ENV_COLUMNS = (
    "host",
    "environment",
    "kind",
    "consumer",
    "soname",
    "cudnn",
    "via",
    "path",
    "framework_version",
    "cuda",
    "requires",
    "state",
)


def _d(value):
    return value if isinstance(value, dict) else {}


def _l(value):
    return value if isinstance(value, list) else []


# ---------------------------------------------------------------- facts -> report entry
_RESOLUTION_KEYS = (
    "soname",
    "for",
    "path",
    "real_path",
    "dir",
    "version",
    "copy_path",
    "via",
    "why",
    "mixed",
    "missing_sub_libraries",
)
_FRAMEWORK_KEYS = (
    "name",
    "dist",
    "version",
    "cuda_version",
    "cudnn_version_built",
    "requires_cudnn",
    "installed_cudnn",
    "pin_satisfied",
    "cudnn_soname",
    "anchor",
    "compute_capabilities",
    "compiled_for",
)


def _resolution(r):
    r = _d(r)
    return {k: r.get(k) for k in _RESOLUTION_KEYS} if r else None


def _environment(e):
    e = _d(e)
    frameworks = []
    for fw in _l(e.get("frameworks")):
        item = {k: _d(fw).get(k) for k in _FRAMEWORK_KEYS}
        item["loads"] = _resolution(_d(fw).get("loads"))
        frameworks.append(item)
    libcuda = _resolution(e.get("libcuda"))
    if libcuda is not None:
        libcuda["compat"] = bool(_d(e.get("libcuda")).get("compat"))
    return {
        "kind": e.get("kind") or UNKNOWN,
        "path": e.get("path") or UNKNOWN,
        "python": _d(e.get("python")) or None,
        "frameworks": frameworks,
        "cudnn": [_resolution(r) for r in _l(e.get("cudnn"))],
        "libcuda": libcuda,
        "reasons": _d(e.get("reasons")),
    }


def _driver_runtime(driver):
    keys = (
        "install_method",
        "kernel_module",
        "loaded_version",
        "versions",
        "version_mismatch",
        "userspace",
        "gsp_firmware",
        "kernels",
        "next_boot",
        "dkms",
    )
    driver = _d(driver)
    return {k: driver.get(k) for k in keys} if driver else None


def normalize(facts):
    """{consumers, driver_runtime, cuda_compat} of one host's ``ansible_facts.nvidia`` (older facts, without
    these keys, give empty values)."""
    facts = _d(facts)
    consumers = _d(facts.get("consumers"))
    toolkits = _l(_d(facts.get("cuda")).get("toolkits"))
    return {
        "consumers": {
            "ld_library_path": _d(consumers.get("ld_library_path")),
            "environments": [_environment(e) for e in _l(consumers.get("environments"))],
            "library_dirs": [_d(x) for x in _l(consumers.get("library_dirs"))],
        },
        "driver_runtime": _driver_runtime(facts.get("driver")),
        "cuda_compat": [
            dict(_d(t.get("compat")), toolkit=t.get("path"), major_minor=t.get("major_minor"))
            for t in toolkits
            if isinstance(t, dict) and t.get("compat")
        ],
    }


# ---------------------------------------------------------------- the decision: does it work?
def _parts(text):
    found = re.findall(r"\d+", str(text or ""))
    return tuple(int(x) for x in found)


def built_cudnn(fw):
    """The cuDNN version a framework was built against: its ``==`` pin, else its build info; None."""
    spec = (_d(fw.get("requires_cudnn"))).get("spec") or ""
    if spec.startswith("==") and "," not in spec:
        return spec[2:].rstrip(".*")
    return fw.get("cudnn_version_built")


def framework_verdict(fw):
    """(state, loaded, built): state ``ok``, ``not_found`` (nothing to load), ``incompatible`` (another
    major, or a minor older than the build's: torch's and XLA's own rule), ``unknown``."""
    loads = _d(fw.get("loads"))
    if not fw.get("cudnn_soname"):
        return UNKNOWN, None, None
    if loads.get("via") in (None, "none"):
        return "not_found", None, built_cudnn(fw)
    loaded, built = loads.get("version"), built_cudnn(fw)
    have, want = _parts(loaded), _parts(built)
    if not have or not want:
        return UNKNOWN, loaded, built
    if have[0] != want[0]:
        return "incompatible", loaded, built
    # torch/backends/cudnn/__init__.py _init() and XLA's cuda_dnn.cc: same major, runtime minor >= built
    minor_ok = len(want) < 2 or have[1:2] >= want[1:2]
    return ("ok" if minor_ok else "incompatible"), loaded, built


# ---------------------------------------------------------------- rows (CSV, Markdown, HTML)
def _row(h, env, **cells):
    row = dict.fromkeys(ENV_COLUMNS, "")
    row.update(host=h["name"], environment=env["path"], kind=env["kind"])
    row.update({k: "" if v is None else str(v) for k, v in cells.items()})
    return row


def _resolution_cells(r):
    r = _d(r)
    state = "mixed sub-libraries" if r.get("mixed") else ""
    if r.get("missing_sub_libraries"):
        state = "missing " + ", ".join(r["missing_sub_libraries"])
    return {
        "soname": r.get("soname"),
        "cudnn": r.get("version"),
        "via": r.get("via"),
        "path": r.get("real_path") or r.get("path"),
        "state": state or "ok",
    }


def environment_rows(h):
    """One row per environment x consumer (each framework, else the process itself) of one host entry."""
    rows = []
    for env in _l(_d(h.get("consumers")).get("environments")):
        for fw in env["frameworks"]:
            state, _loaded, built = framework_verdict(fw)
            cells = _resolution_cells(fw.get("loads")) if fw.get("loads") else {"state": ""}
            requires = _d(fw.get("requires_cudnn"))
            pin = "" if fw.get("pin_satisfied") in (None, True) else " (pin not satisfied)"
            cells["state"] = f"{state}{pin}" + (
                f"; {cells['state']}" if cells["state"] not in ("", "ok") else ""
            )
            rows.append(
                _row(
                    h,
                    env,
                    consumer=fw["name"],
                    framework_version=fw.get("version"),
                    cuda=fw.get("cuda_version"),
                    requires=f"{requires.get('package', '')}{requires.get('spec', '')}" or built,
                    **cells,
                )
            )
        if not env["frameworks"]:
            rows += [_row(h, env, consumer="process", **_resolution_cells(r)) for r in env["cudnn"]]
        if env.get("libcuda"):
            lc = env["libcuda"]
            rows.append(
                _row(
                    h,
                    env,
                    consumer="libcuda",
                    soname=lc["soname"],
                    cudnn="",
                    via=lc["via"],
                    path=lc.get("real_path"),
                    cuda=lc.get("version"),
                    state="forward compatibility" if lc.get("compat") else "ok",
                )
            )
    return rows


def report_environment_rows(report):
    return [row for h in report["hosts"] if h.get("status") == "ok" for row in environment_rows(h)]


def markdown_lines(report):
    """The ``## Environments`` section of the Markdown report (empty when no host has consumers)."""
    rows = report_environment_rows(report)
    if not rows:
        return []
    lines = [
        "",
        "## Environments",
        "",
        "| " + " | ".join(ENV_COLUMNS) + " |",
        "| " + " | ".join("---" for _column in ENV_COLUMNS) + " |",
    ]
    for row in rows:
        lines.append("| " + " | ".join(row[c].replace("|", "\\|") for c in ENV_COLUMNS) + " |")
    return lines


def html_table_rows(report):
    """(row class, cells) of the HTML "Environments" table, columns ``ENV_COLUMNS``: class ``drift`` (shown
    red) for a consumer that does not work as it is (a state other than ``ok``)."""
    return [
        ("" if row["state"] == "ok" else "drift", [row[c] for c in ENV_COLUMNS])
        for row in report_environment_rows(report)
    ]


def csv_rows(h, columns):
    """The environment rows of one host in the CSV's columns (report/rows.py CSV_COLUMNS): component
    ``consumer``, name ``<consumer> in <environment>``, version the cuDNN it loads, source its ``via``, path
    the file, active its state, detail the framework's requirement and CUDA."""
    out = []
    for row in environment_rows(h):
        cells = dict.fromkeys(columns, "")
        detail = "; ".join(
            x
            for x in (
                row["requires"] and f"requires {row['requires']}",
                row["cuda"] and f"CUDA {row['cuda']}",
            )
            if x
        )
        cells.update(
            host=row["host"],
            status="ok",
            component="consumer",
            name=f"{row['consumer']} in {row['environment']} ({row['kind']})",
            version=row["cudnn"],
            source=row["via"],
            path=row["path"],
            active=row["state"],
            detail=detail,
        )
        out.append({k: cells.get(k, "") for k in columns})
    return out


# ---------------------------------------------------------------- metrics
METRICS = (
    ("gpufleet_consumer_cudnn_info", "What a consumer environment loads for libcudnn.so.N (via: why)."),
    ("gpufleet_framework_info", "One series per framework per environment: versions, pin, loaded cuDNN."),
    ("gpufleet_cudnn_mixed_dirs", "Directories whose libcudnn*.so.N files come from different releases."),
    ("gpufleet_driver_version_mismatch", "1 when the loaded kernel module and the user-space differ."),
    ("gpufleet_next_boot_driver", "1 when the kernel the host boots next has an NVIDIA module, 0 when not."),
    ("gpufleet_gpu_stack_info", "One series per GPU with DCGM exporter's labels and the stack's versions."),
)


def nvml_bus_id(bus_id):
    """'0000:00:06.0' -> '00000000:00:06.0' (NVML's and DCGM exporter's pci_bus_id form)."""
    match = re.match(r"^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$", str(bus_id or ""))
    if not match:
        return str(bus_id or "")
    return f"{int(match.group(1), 16):08X}:{match.group(2).upper()}:{match.group(3).upper()}.{match.group(4)}"


def _driver_parts(version):
    parts = version_parts(version, 3)
    return {"cuda_driver_major": parts[0], "cuda_driver_minor": parts[1], "cuda_driver_rev": parts[2]}


def _system_cudnn(h):
    resolved = _l(h.get("cudnn_resolved"))
    return resolved[0].get("version") if resolved else ""


def gpu_stack_series(h):
    """gpufleet_gpu_stack_info per GPU: DCGM exporter's Hostname, UUID, gpu, modelName, pci_bus_id; GPU
    Feature Discovery's nvidia.com/cuda.driver.{major,minor,rev}, cuda.runtime.{major,minor},
    gpu.compute.{major,minor} (with ``_`` for ``.``); the loader's cuDNN."""
    driver = _d(h.get("driver"))
    runtime = version_parts(driver.get("cuda_driver_version"), 2)
    out = []
    for g in _l(h.get("gpus")):
        cc = (str(g.get("compute_capability") or "").split(".") + [""])[:2]
        labels = {
            "host": h["name"],
            "Hostname": h["name"],
            "UUID": g.get("uuid") or "",
            "gpu": "" if g.get("index") is None else str(g["index"]),
            "modelName": g.get("name") or "",
            "pci_bus_id": nvml_bus_id(g.get("pci_bus_id")),
            "driver_version": word(driver.get("version")),
            **_driver_parts(driver.get("version")),
            "cuda_runtime_major": runtime[0],
            "cuda_runtime_minor": runtime[1],
            "gpu_compute_major": cc[0],
            "gpu_compute_minor": cc[1],
            "cudnn_version": _system_cudnn(h),
        }
        out.append(("gpufleet_gpu_stack_info", labels, 1))
    return out


def _env_labels(h, env):
    """The labels every per-environment series carries (``Hostname`` joins DCGM exporter's series)."""
    return {"host": h["name"], "Hostname": h["name"], "environment": env["path"], "kind": env["kind"]}


def _consumer_series(h):
    out = []
    for env in _l(_d(h.get("consumers")).get("environments")):
        for fw in env["frameworks"]:
            state, loaded, built = framework_verdict(fw)
            labels = {
                **_env_labels(h, env),
                "framework": fw["name"],
                "version": fw.get("version") or "",
                "cuda_version": fw.get("cuda_version") or "",
                "cudnn_built": built or "",
                "cudnn_loaded": loaded or "",
                "pin_satisfied": str(fw.get("pin_satisfied")).lower(),
                "state": state,
            }
            out.append(("gpufleet_framework_info", labels, 1))
        for r in env["cudnn"]:
            labels = {
                **_env_labels(h, env),
                "consumer": r.get("for") or "process",
                "soname": r.get("soname") or "",
                "version": r.get("version") or "none",
                "via": r.get("via") or "none",
                "path": r.get("real_path") or "",
            }
            out.append(("gpufleet_consumer_cudnn_info", labels, 1))
    return out


def metric_series(h):
    """[(metric, labels, value)] of one audited host entry (``METRICS`` holds their help texts)."""
    if h.get("status") != "ok":
        return []
    out = _consumer_series(h)
    dirs = _l(_d(h.get("consumers")).get("library_dirs"))
    out.append(("gpufleet_cudnn_mixed_dirs", {"host": h["name"]}, sum(1 for d in dirs if d.get("mixed"))))
    runtime = _d(h.get("driver_runtime"))
    if runtime.get("version_mismatch") is not None:
        out.append(
            (
                "gpufleet_driver_version_mismatch",
                {"host": h["name"], "Hostname": h["name"]},
                int(bool(runtime["version_mismatch"])),
            )
        )
    boot = _d(runtime.get("next_boot"))
    if boot:
        out.append(
            (
                "gpufleet_next_boot_driver",
                {"host": h["name"], "Hostname": h["name"], "kernel": boot.get("kernel") or ""},
                int(bool(boot.get("has_module"))),
            )
        )
    return out + gpu_stack_series(h)
