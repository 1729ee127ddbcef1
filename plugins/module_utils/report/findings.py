# Copyright: gpufleet contributors
# Apache-2.0
"""Findings of the fleet audit: what on one host will bite its users.

Stdlib only, Python >= 3.9. Input: a normalized host entry (report.normalize_host); output: a list of
``{"severity": "error"|"warning"|"info", "code": str, "message": str}``.

Rules decided here from the host's own observations (no knowledge base needed):
- ``no_gpu``: no NVIDIA GPU on the PCI bus (info);
- ``gpu_without_driver``: GPUs but no loaded driver (error);
- ``cudnn_header_library_mismatch``: a copy whose header and library disagree (error);
- ``cudnn_env_differs_from_system``: a pip/conda cuDNN whose version differs from the system cuDNN for the
  same CUDA major (warning: the classic "Loaded runtime CuDNN library: X but source was compiled with: Y");
- ``cudnn_several_system_copies``: several system copies provide the same libcudnn.so.N (warning: programs get
  whichever the loader finds first);
- ``cudnn_loader_resolves``: which copy the dynamic loader picks for each libcudnn soname (info);
- ``cudnn_needs_newer_driver`` / ``cuda_needs_newer_driver``: a cuDNN build or CUDA toolkit for a CUDA major
  above the one the driver reports (cuDriverGetVersion) (error); a toolkit of the same major but a newer
  minor runs under minor-version compatibility (warning).

Rules that need NVIDIA's tables (GPUs the stack cannot serve, minimum drivers) come from the compatibility
knowledge base (compat.py, see ``compat_findings``); when it is not importable the audit says so (info)
instead of guessing.
"""

from __future__ import annotations

import importlib

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


def local_findings(entry):
    """Findings decided from the host's own observations."""
    out = []
    gpus = entry.get("gpus") or []
    driver = entry.get("driver") or {}
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
    copies = entry.get("cudnn") or []
    for c in copies:
        if c.get("mismatch"):
            out.append(
                finding(
                    "error",
                    "cudnn_header_library_mismatch",
                    f"{_copy_label(c)}: header says {c.get('header_version')} but the library is "
                    f"{c.get('library_version')}",
                )
            )
    system = [c for c in copies if c.get("source") in SYSTEM_SOURCES]
    for env in (c for c in copies if c.get("source") in ENV_SOURCES):
        for sys_copy in system:
            same_major = env.get("cuda_major") is None or sys_copy.get("cuda_major") in (
                None,
                env.get("cuda_major"),
            )
            if same_major and env.get("version") != sys_copy.get("version"):
                out.append(
                    finding(
                        "warning",
                        "cudnn_env_differs_from_system",
                        f"{_copy_label(env)} differs from the system {_copy_label(sys_copy)}: "
                        "programs that mix both fail with 'Loaded runtime CuDNN library ... "
                        "but source was compiled with ...'",
                    )
                )
    by_major = {}
    for c in system:
        if isinstance(c.get("major"), int):
            by_major.setdefault(c["major"], []).append(c)
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
    for r in entry.get("cudnn_resolved") or []:
        out.append(
            finding(
                "info",
                "cudnn_loader_resolves",
                f"the loader resolves {r.get('soname')} to {r.get('real_path') or r.get('path')} "
                f"(cuDNN {r.get('version')}, copy at {r.get('copy_path')})",
            )
        )
    return out


def driver_api_findings(entry):
    """cuDNN builds and toolkits for a CUDA newer than the driver's own CUDA version."""
    out = []
    driver = entry.get("driver") or {}
    drv = _major_minor(driver.get("cuda_driver_version"))
    if not drv:
        return out
    label = f"driver {driver.get('version')} (CUDA {driver.get('cuda_driver_version')})"
    for t in (entry.get("cuda") or {}).get("toolkits") or []:
        tk = _major_minor(t.get("major_minor") or t.get("version"))
        if not tk:
            continue
        if tk[0] > drv[0]:
            out.append(
                finding(
                    "error",
                    "cuda_needs_newer_driver",
                    f"CUDA {t.get('version')} at {t.get('path')} cannot run on {label}: "
                    f"install a driver for CUDA {tk[0]}.x",
                )
            )
        elif tk[0] == drv[0] and tk[1] > drv[1]:
            out.append(
                finding(
                    "warning",
                    "cuda_minor_version_compat",
                    f"CUDA {t.get('version')} at {t.get('path')} runs on {label} only under "
                    "minor-version compatibility (no PTX JIT of newer code)",
                )
            )
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


# The knowledge base's module: compat_rules.py (named compat.py in early versions; that name shadowed
# ansible.module_utils.compat wherever plugins/module_utils is an adjacent module_utils path).
COMPAT_MODULES = (
    "ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.compat",
    "ansible_collections.gpufleet.nvidia.plugins.module_utils.compat",
)


def _compat_module():
    why = "no compatibility module"
    for name in COMPAT_MODULES:
        try:
            return importlib.import_module(name), None
        except Exception as exc:  # any import problem: report it, never crash the audit
            why = f"{type(exc).__name__}: {exc}"
    return None, why


def compat_findings(entry, compat=None):
    """Findings from the compatibility knowledge base (GPUs the stack cannot serve, minimum drivers).

    ``compat``: the compat module (tests inject one); default: module_utils/compat_rules.py. The adapter
    calls ``compat.audit_findings(entry)`` when present (the audit's contract: a normalized host entry in,
    a list of finding dicts or of (severity, message) pairs out), else ``compat.check(...)`` with keyword
    arguments built from the host. Any exception becomes an ``info`` finding: the audit never crashes on
    a knowledge-base change.
    """
    if compat is None:
        compat, why = _compat_module()
        if compat is None:
            return [
                finding(
                    "info",
                    "compat_rules_unavailable",
                    f"compatibility rules not available ({why}): GPU support not checked",
                )
            ]
    try:
        if hasattr(compat, "audit_findings"):
            raw = compat.audit_findings(entry)
        else:
            raw = _call_check(compat, entry)
    except Exception as exc:
        return [
            finding(
                "info",
                "compat_rules_failed",
                f"compatibility rules failed on this host ({type(exc).__name__}: {exc})",
            )
        ]
    return _normalize_raw(raw)


def _call_check(compat, entry):
    """Ask compat's plan check about each cuDNN copy and toolkit installed, on this host's GPUs and driver."""
    check = getattr(compat, "check", None) or getattr(compat, "check_plan", None)
    if check is None:
        raise AttributeError("module_utils/compat.py has neither audit_findings() nor check()")
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
    driver = entry.get("driver") or {}
    base = {"gpus": gpus}
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
    out = []
    for plan in plans:
        result = check(**plan)
        if not isinstance(result, dict):
            raise TypeError(f"compat check returned {type(result).__name__}, expected a dict")
        out.extend(("error", m) for m in result.get("errors") or [])
        out.extend(("warning", m) for m in result.get("warnings") or [])
    return out


def _normalize_raw(raw):
    out, seen = [], set()
    for item in raw or []:
        if isinstance(item, dict):
            sev = item.get("severity", "warning")
            f = finding(
                sev if sev in SEVERITIES else "warning",
                item.get("code") or "compat",
                str(item.get("message")),
            )
        else:
            sev, msg = item
            f = finding(sev if sev in SEVERITIES else "warning", "compat", str(msg))
        key = (f["severity"], f["message"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def host_findings(entry, compat=None, use_compat=True):
    """Every finding of one reachable host, errors first.

    The knowledge base's rules (compat) decide whether the driver can run each toolkit and cuDNN build; when
    they are unavailable, the host's own driver CUDA version decides (driver_api_findings).
    """
    out = local_findings(entry)
    kb = compat_findings(entry, compat) if use_compat and entry.get("gpu_count") else []
    if not use_compat or any(f["code"].startswith("compat_rules_") for f in kb):
        out.extend(driver_api_findings(entry))
    out.extend(kb)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order.get(f["severity"], 9))
