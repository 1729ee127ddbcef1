# Copyright: gpufleet contributors
# Apache-2.0
"""Findings of the fleet audit: what on one host will bite its users.

Stdlib only, Python >= 3.9. Input: a normalized host entry (report.build.normalize_host); output: a list of
``{"severity": "error"|"warning"|"info", "code": str, "message": str}``.

Rules decided here from the host's own observations (no knowledge base needed):
- ``no_gpu``: no NVIDIA GPU on the PCI bus (info);
- ``gpu_without_driver``: GPUs but no loaded driver (error);
- ``driver_managed_externally``: the driver belongs to the container runtime or the hypervisor (info), as
  the facts say (``host.driver_managed_externally`` and its ``_reason``: the one definition, made by the
  probe; this module never re-derives it);
- ``cudnn_header_library_mismatch``: a copy whose header and library disagree (error);
- ``cudnn_env_differs_from_system``: a pip/conda cuDNN whose version differs from the system cuDNN for the
  same CUDA major (warning: the classic "Loaded runtime CuDNN library: X but source was compiled with: Y");
- ``cudnn_several_system_copies``: several system copies provide the same libcudnn.so.N (warning: programs get
  whichever the loader finds first);
- ``cudnn_loader_resolves``: which copy the dynamic loader picks for each libcudnn soname (info);
- ``owner_unknown``: a CUDA toolkit or cuDNN copy that no package, installer, Python environment or gpufleet
  marker owns (warning: an admin cannot tell where it came from); the owner is the entry's ``owner``, made by
  report.owner.owner_shown (never re-derived here);
- ``cudnn_needs_newer_driver`` / ``cuda_needs_newer_driver``: a cuDNN build or CUDA toolkit for a CUDA major
  above the one the driver reports (cuDriverGetVersion) (error); a toolkit of the same major but a newer
  minor runs under minor-version compatibility (warning).

Rules that need NVIDIA's tables (GPUs the stack cannot serve, minimum drivers) come from the compatibility
rules (plan/compat.py ``check``, asked by ``kb_findings``); when they raise, the audit says so (info) and
falls back to the driver's own CUDA version instead of guessing.
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as plan_compat

SYSTEM_SOURCES = ("deb", "rpm", "tarball", "unknown")
ENV_SOURCES = ("pip", "conda")
SEVERITIES = ("error", "warning", "info")


def finding(severity, code, message):
    return {"severity": severity, "code": code, "message": message}


def _major_minor(text):
    try:
        parts = [int(p) for p in str(text).split(".")[:2]]
    except ValueError:
        return None
    if len(parts) == 1:
        parts.append(0)
    return tuple(parts)


def _copy_label(c):
    where = c.get("python_env") or c.get("path")
    return f"cuDNN {c.get('version')} ({c.get('source')} at {where})"


def managed_externally(entry):
    """(managed, reason) from the host's facts (host.driver_managed_externally[_reason]); None: unknown."""
    host = entry.get("host") or {}
    return host.get("driver_managed_externally"), host.get("driver_managed_externally_reason") or ""


# -- local rules: the host's own observations -------------------------------------------------------------
def _gpu_and_driver_findings(entry):
    gpus = entry.get("gpus") or []
    driver = entry.get("driver") or {}
    managed, reason = managed_externally(entry)
    out = []
    if entry.get("gpu_count") == 0:
        out.append(finding("info", "no_gpu", "no NVIDIA GPU found on the PCI bus"))
    elif gpus and driver.get("loaded") is False:
        out.append(
            finding(
                "error",
                "gpu_without_driver",
                f"{len(gpus)} GPU(s) ({gpus[0].get('name')}) but no NVIDIA driver loaded",
            )
        )
    if managed is True:
        out.append(
            finding(
                "info",
                "driver_managed_externally",
                "the NVIDIA driver is managed outside this host"
                + (f" ({reason})" if reason else "")
                + ": change it where it is managed; gpufleet's driver role leaves it alone",
            )
        )
    return out


def _header_library_findings(copies):
    return [
        finding(
            "error",
            "cudnn_header_library_mismatch",
            f"{_copy_label(c)}: header says {c.get('header_version')} but the library is "
            f"{c.get('library_version')}",
        )
        for c in copies
        if c.get("mismatch")
    ]


def _same_cuda_major(env, sys_copy):
    return env.get("cuda_major") is None or sys_copy.get("cuda_major") in (None, env.get("cuda_major"))


def _env_differs_findings(copies, system):
    out = []
    for env in (c for c in copies if c.get("source") in ENV_SOURCES):
        for sys_copy in system:
            if _same_cuda_major(env, sys_copy) and env.get("version") != sys_copy.get("version"):
                out.append(
                    finding(
                        "warning",
                        "cudnn_env_differs_from_system",
                        f"{_copy_label(env)} differs from the system {_copy_label(sys_copy)}: "
                        "programs that mix both fail with 'Loaded runtime CuDNN library ... "
                        "but source was compiled with ...'",
                    )
                )
    return out


def _several_copies_findings(system):
    by_major = {}
    for c in system:
        if isinstance(c.get("major"), int):
            by_major.setdefault(c["major"], []).append(c)
    out = []
    for major, same in sorted(by_major.items()):
        if len(same) > 1:
            picked = [c for c in same if c.get("resolved")]
            pick = f"the loader picks {_copy_label(picked[0])}" if picked else "the loader picks none of them"
            out.append(
                finding(
                    "warning",
                    "cudnn_several_system_copies",
                    f"{len(same)} system cuDNN copies provide libcudnn.so.{major} "
                    f"({', '.join(_copy_label(c) for c in same)}); {pick}",
                )
            )
    return out


def _resolved_findings(entry):
    return [
        finding(
            "info",
            "cudnn_loader_resolves",
            f"the loader resolves {r.get('soname')} to {r.get('real_path') or r.get('path')} "
            f"(cuDNN {r.get('version')}, copy at {r.get('copy_path')})",
        )
        for r in entry.get("cudnn_resolved") or []
    ]


def _unknown_why(words):
    """``unknown (why)`` -> ``why``; other words as they are."""
    if words.startswith("unknown (") and words.endswith(")"):
        return words[len("unknown (") : -1]
    return words


def _owner_findings(entry):
    items = [(f"CUDA {t.get('version')}", t) for t in (entry.get("cuda") or {}).get("toolkits") or []]
    items += [(f"cuDNN {c.get('version')}", c) for c in entry.get("cudnn") or []]
    return [
        finding(
            "warning",
            "owner_unknown",
            f"{label} at {item.get('path')} has no known owner ({_unknown_why(item['owner']['words'])}): "
            "no package, runfile installer, Python environment or gpufleet marker accounts for it; find out "
            "where it came from before changing it",
        )
        for label, item in items
        if (item.get("owner") or {}).get("kind") == "unknown"
    ]


def local_findings(entry):
    """Findings decided from the host's own observations."""
    copies = entry.get("cudnn") or []
    system = [c for c in copies if c.get("source") in SYSTEM_SOURCES]
    return (
        _gpu_and_driver_findings(entry)
        + _header_library_findings(copies)
        + _env_differs_findings(copies, system)
        + _several_copies_findings(system)
        + _resolved_findings(entry)
        + _owner_findings(entry)
    )


# -- fallback rules: the driver's own CUDA version -------------------------------------------------------
def _toolkit_driver_finding(t, drv, label, advice_where):
    tk = _major_minor(t.get("major_minor") or t.get("version"))
    if not tk:
        return None
    if tk[0] > drv[0]:
        return finding(
            "error",
            "cuda_needs_newer_driver",
            f"CUDA {t.get('version')} at {t.get('path')} cannot run on {label}: "
            f"install a driver for CUDA {tk[0]}.x{advice_where}",
        )
    if tk[0] == drv[0] and tk[1] > drv[1]:
        return finding(
            "warning",
            "cuda_minor_version_compat",
            f"CUDA {t.get('version')} at {t.get('path')} runs on {label} only under "
            "minor-version compatibility (no PTX JIT of newer code)",
        )
    return None


def driver_api_findings(entry):
    """cuDNN builds and toolkits for a CUDA newer than the driver's own CUDA version."""
    driver = entry.get("driver") or {}
    drv = _major_minor(driver.get("cuda_driver_version"))
    if not drv:
        return []
    label = f"driver {driver.get('version')} (CUDA {driver.get('cuda_driver_version')})"
    managed, _reason = managed_externally(entry)
    advice_where = " where the driver is managed (outside this host)" if managed is True else ""
    out = []
    for t in (entry.get("cuda") or {}).get("toolkits") or []:
        f = _toolkit_driver_finding(t, drv, label, advice_where)
        if f:
            out.append(f)
    for c in entry.get("cudnn") or []:
        major = c.get("cuda_major")
        if isinstance(major, int) and major > drv[0]:
            out.append(
                finding(
                    "error",
                    "cudnn_needs_newer_driver",
                    f"{_copy_label(c)} is built for CUDA {major} and cannot run on {label}",
                )
            )
    return out


# -- the compatibility rules (plan/compat.py) -----------------------------------------------------------
def _check_gpus(entry):
    """The host's GPUs as compat.check's ``gpus`` items (PCI ids, else the compute capability)."""
    gpus = []
    for g in entry.get("gpus") or []:
        if g.get("device_id"):
            item = {"pci_device_id": g["device_id"]}
            if g.get("subsystem_device_id"):
                item["pci_subsystem_id"] = g["subsystem_device_id"]
            if g.get("subsystem_vendor_id"):
                item["pci_subsystem_vendor_id"] = g["subsystem_vendor_id"]
            gpus.append(item)
        elif g.get("compute_capability") not in (None, "unknown"):
            gpus.append({"compute_capability": g["compute_capability"]})
    return gpus


def _check_plans(entry):
    """One compat.check call (keyword arguments) per installed toolkit and per cuDNN copy."""
    driver = entry.get("driver") or {}
    base = {"gpus": _check_gpus(entry)}
    if driver.get("installed") and driver.get("version") not in (None, "unknown"):
        base["driver_version"] = driver["version"]
        if driver.get("kernel_module") in ("open", "proprietary"):
            base["kernel_module"] = driver["kernel_module"]
    plans = []
    for t in (entry.get("cuda") or {}).get("toolkits") or []:
        if t.get("version") not in (None, "unknown"):
            plans.append(dict(base, cuda_version=t.get("major_minor") or t["version"]))
    for c in entry.get("cudnn") or []:
        if c.get("version") not in (None, "unknown") and c.get("cuda_major"):
            plans.append(dict(base, cudnn_version=c["version"], cudnn_cuda_major=c["cuda_major"]))
    return plans


def kb_findings(entry, check=plan_compat.check):
    """Ask the compatibility rules (``check``: plan.compat.check) about each toolkit and cuDNN copy installed,
    on this host's GPUs and driver; returns (severity, message) pairs."""
    out = []
    for plan in _check_plans(entry):
        result = check(**plan)
        if not isinstance(result, dict):
            raise TypeError(f"compat check returned {type(result).__name__}, expected a dict")
        out.extend(("error", m) for m in result.get("errors") or [])
        out.extend(("warning", m) for m in result.get("warnings") or [])
    return out


def compat_findings(entry, compat=None):
    """Findings from the compatibility rules (GPUs the stack cannot serve, minimum drivers).

    ``compat``: a function ``entry -> findings`` (finding dicts or (severity, message) pairs); default
    ``kb_findings`` (plan.compat.check; tests inject another). Any exception becomes an ``info`` finding
    ``compat_rules_failed``: the audit never crashes on a knowledge-base change.
    """
    rules = kb_findings if compat is None else compat
    try:
        raw = rules(entry)
    except Exception as exc:  # any rule problem: report it, never crash the audit
        return [
            finding(
                "info",
                "compat_rules_failed",
                f"compatibility rules failed on this host ({type(exc).__name__}: {exc})",
            )
        ]
    return _normalize_raw(raw)


def _normalize_item(item):
    if isinstance(item, dict):
        sev = item.get("severity", "warning")
        return finding(
            sev if sev in SEVERITIES else "warning", item.get("code") or "compat", str(item.get("message"))
        )
    sev, msg = item
    return finding(sev if sev in SEVERITIES else "warning", "compat", str(msg))


def _normalize_raw(raw):
    out, seen = [], set()
    for item in raw or []:
        f = _normalize_item(item)
        key = (f["severity"], f["message"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def host_findings(entry, compat=None, use_compat=True):
    """Every finding of one reachable host, errors first.

    The compatibility rules decide whether the driver can run each toolkit and cuDNN build; when they fail
    (or ``use_compat`` is false), the host's own driver CUDA version decides (driver_api_findings).
    """
    out = local_findings(entry)
    kb = compat_findings(entry, compat) if use_compat and entry.get("gpu_count") else []
    if not use_compat or any(f["code"].startswith("compat_rules_") for f in kb):
        out.extend(driver_api_findings(entry))
    out.extend(kb)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order.get(f["severity"], 9))
