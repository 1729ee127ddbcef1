# Copyright: gpufleet contributors
# Apache-2.0
"""Baseline validation and drift: what a host runs against what the fleet's baseline says it should.

Stdlib only, Python >= 3.9. Used on the controller by the audit (``nvidia_fleet_report``).

A baseline (``gpufleet_baseline`` in group_vars/host_vars) is a mapping with these keys, all optional:

``driver_branch``   the driver branch every GPU host runs ("580", "R580", 580)
``cuda_versions``   the CUDA toolkits installed, exactly ("13.0" matches any 13.0.x; "13.0.2" only itself)
``cuda_default``    the toolkit /usr/local/cuda points to
``cudnn_versions``  cuDNN version per CUDA major: {13: "9.14.0", 12: "9.14"} ("9.14" matches any 9.14.x)
``cudnn_scope``     which copies the cudnn_versions apply to: ``system`` (packages and tarball trees, the
                    default: Python environments bring their own cuDNN on purpose) or ``all``
``consumers_cudnn`` what a consumer environment must load: {"/opt/torch/.venv": "9.19", "/": "9.14"}
                    (a venv or conda env path: what its framework, torch first, loads; ``/``: the system
                    linker cache; a CUDA toolkit path: what a program built with it loads); read from the
                    facts' ``consumers``

Anything else is a clear error naming the key (a typo must not silently disable a check), and so is a
``cuda_default`` that none of ``cuda_versions`` matches (every host would drift from one or the other forever)
and a control character in any key or value (a newline would forge lines of the CSV/Markdown/Prometheus
reports).
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import (
    CONTROL_ALLOWED,
    control_character,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import VersionError, parse_version

BASELINE_KEYS = (
    "driver_branch",
    "cuda_versions",
    "cuda_default",
    "cudnn_versions",
    "cudnn_scope",
    "consumers_cudnn",
)
CUDNN_SCOPES = ("system", "all")
# cuDNN copies that belong to the system (not to one Python environment)
SYSTEM_SOURCES = ("deb", "rpm", "tarball", "unknown")


class BaselineError(ValueError):
    """A malformed baseline; the message names the variable, the key, the value and what is allowed."""


def _err(name, key, value, allowed):
    return BaselineError(f"{name}.{key}: {value!r} is not valid; {allowed}")


def _version(name, key, value, min_parts=1, max_parts=4):
    if isinstance(value, float):
        # YAML reads 12.10 as 12.1: refuse rather than guess.
        raise _err(
            name, key, value, "quote versions in YAML (e.g. '13.0'); accepted forms: 13.0, 13.0.2, 9.14.0"
        )
    try:
        return parse_version(value, f"{name}.{key}", min_parts=min_parts, max_parts=max_parts)
    except VersionError as exc:
        raise BaselineError(str(exc)) from None


def _check_shape(baseline, name):
    if not isinstance(baseline, dict):
        raise BaselineError(
            f"{name}: {type(baseline).__name__} {baseline!r} is not a mapping; allowed keys: "
            + ", ".join(BASELINE_KEYS)
        )
    unknown = sorted(str(k) for k in baseline if k not in BASELINE_KEYS)
    if unknown:
        raise BaselineError(
            f"{name}: unknown key {unknown[0]!r}"
            + (f" (and {', '.join(unknown[1:])})" if unknown[1:] else "")
            + "; allowed keys: "
            + ", ".join(BASELINE_KEYS)
        )


def _check_text(where, value):
    """BaselineError naming where in the baseline a string holds a control character (key or value)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_text(where, key)
            _check_text(f"{where}.{key}", item)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_text(f"{where}[{i}]", item)
    else:
        char = control_character(value)
        if char is not None:
            raise BaselineError(
                f"{where}: {value!r} contains a control character ({char!r}); allowed: {CONTROL_ALLOWED}"
            )


def _check_default(name, out):
    """cuda_default must be one of cuda_versions (either may be the more precise): else every host drifts."""
    versions, default = out["cuda_versions"], out["cuda_default"]
    if versions is None or default is None:
        return
    if not any(_matches(v, default) or _matches(default, v) for v in versions):
        raise _err(
            name,
            "cuda_default",
            default,
            f"it is not in {name}.cuda_versions ({', '.join(versions) or 'none'}), so every host would "
            "drift from one or the other; allowed: one of those versions (or a release of one)",
        )


def _cuda_versions(name, value):
    if isinstance(value, (str, int)):
        value = [value]
    if not isinstance(value, list):
        raise _err(name, "cuda_versions", value, "a list of CUDA versions such as ['13.0', '12.8']")
    return [str(_version(name, f"cuda_versions[{i}]", v, 2, 3)) for i, v in enumerate(value)]


def _cudnn_versions(name, value):
    if not isinstance(value, dict):
        raise _err(
            name,
            "cudnn_versions",
            value,
            "a mapping of CUDA major to cuDNN version such as {13: '9.14.0', 12: '9.14'}",
        )
    cudnn = {}
    for major, version in value.items():
        text = str(major).strip()
        if isinstance(major, bool) or not text.isdigit() or not 8 <= int(text) <= 99:
            raise _err(
                name,
                "cudnn_versions",
                major,
                "keys are CUDA majors such as 12 or 13 (mapping CUDA major to cuDNN version)",
            )
        cudnn[int(text)] = str(_version(name, f"cudnn_versions.{text}", version, 1, 4))
    return cudnn


def _cudnn_scope(name, value):
    if value not in CUDNN_SCOPES:
        raise _err(name, "cudnn_scope", value, "allowed: " + ", ".join(CUDNN_SCOPES))
    return value


def _consumers_cudnn(name, value):
    if not isinstance(value, dict) or not value:
        raise _err(
            name,
            "consumers_cudnn",
            value,
            "a mapping of environment path to cuDNN version such as "
            "{'/opt/torch/.venv': '9.19', '/': '9.14'}",
        )
    out = {}
    for path, version in value.items():
        if not isinstance(path, str) or not path.startswith("/"):
            raise _err(
                name, "consumers_cudnn", path, "keys are absolute environment paths such as /opt/torch/.venv"
            )
        out[path.rstrip("/") or "/"] = str(_version(name, f"consumers_cudnn.{path}", version, 1, 4))
    return out


# key -> normalizer(name, value); applied to the keys that are set (not None)
_NORMALIZERS = {
    "driver_branch": lambda name, value: _version(name, "driver_branch", value, 1, 1).major,
    "cuda_versions": _cuda_versions,
    "cuda_default": lambda name, value: str(_version(name, "cuda_default", value, 2, 3)),
    "cudnn_versions": _cudnn_versions,
    "cudnn_scope": _cudnn_scope,
    "consumers_cudnn": _consumers_cudnn,
}


def validate_baseline(baseline, name="gpufleet_baseline"):
    """Check ``baseline`` and return it normalized (or None when it is None/empty).

    Normalized form: ``{"driver_branch": int|None, "cuda_versions": [str]|None, "cuda_default": str|None,
    "cudnn_versions": {int: str}|None, "cudnn_scope": "system"|"all"}`` with versions as dotted strings,
    plus ``consumers_cudnn: {path: str}`` only when it is set.
    Raises BaselineError naming the key for anything malformed.
    """
    if baseline is None or baseline in ({}, ""):
        return None
    _check_shape(baseline, name)
    for key, value in baseline.items():
        _check_text(f"{name}.{key}", value)
    out = {
        "driver_branch": None,
        "cuda_versions": None,
        "cuda_default": None,
        "cudnn_versions": None,
        "cudnn_scope": "system",
    }
    for key in BASELINE_KEYS:
        if baseline.get(key) is not None:
            out[key] = _NORMALIZERS[key](name, baseline[key])
    _check_default(name, out)
    return out


def _matches(expected, actual):
    """True when the version text ``actual`` equals ``expected`` on the components ``expected`` gives."""
    try:
        exp = parse_version(expected)
        act = parse_version(actual)
    except VersionError:
        return False
    n = len(exp.parts)
    return (act.parts + (0,) * 4)[:n] == exp.parts


def _item(component, key, expected, actual, message, *, path=None):
    return {
        "component": component,
        "key": key,
        "expected": expected,
        "actual": actual,
        "message": message,
        "path": path,
    }


def _driver_drift(driver, branch):
    expected = str(branch)
    if not driver.get("installed") or driver.get("version") in (None, "unknown"):
        actual = "none" if driver.get("installed") is False else "unknown"
        return [
            _item(
                "driver",
                "driver_branch",
                expected,
                actual,
                f"driver branch {expected} expected, driver {actual}",
            )
        ]
    if str(driver.get("branch")) != expected:
        return [
            _item(
                "driver",
                "driver_branch",
                expected,
                str(driver.get("branch")),
                f"driver branch {expected} expected, found {driver.get('version')}",
            )
        ]
    return []


def _cuda_versions_drift(toolkits, expected_list):
    items = [
        _item("cuda", "cuda_versions", expected, "missing", f"CUDA {expected} expected, not installed")
        for expected in expected_list
        if not any(_matches(expected, t.get("version", "")) for t in toolkits)
    ]
    listed = ", ".join(expected_list) or "none"
    items += [
        _item(
            "cuda",
            "cuda_versions",
            listed,
            t.get("version", "unknown"),
            f"CUDA {t.get('version')} at {t.get('path')} is not in the baseline ({listed})",
            path=t.get("path"),
        )
        for t in toolkits
        if not any(_matches(expected, t.get("version", "")) for expected in expected_list)
    ]
    return items


def _cuda_default_drift(default, expected):
    if not default:
        return [
            _item(
                "cuda",
                "cuda_default",
                expected,
                "none",
                f"default CUDA {expected} expected, /usr/local/cuda does not exist",
            )
        ]
    if not _matches(expected, default.get("version") or ""):
        return [
            _item(
                "cuda",
                "cuda_default",
                expected,
                default.get("version") or "unknown",
                f"default CUDA {expected} expected, /usr/local/cuda is "
                f"{default.get('version') or 'unknown'} ({default.get('target')})",
                path=default.get("target"),
            )
        ]
    return []


def _cudnn_major_drift(copies, major, expected):
    mine = [c for c in copies if c.get("cuda_major") == major]
    if not mine:
        return [
            _item(
                "cudnn",
                f"cudnn_versions.{major}",
                expected,
                "missing",
                f"cuDNN {expected} for CUDA {major} expected, not installed",
            )
        ]
    return [
        _item(
            "cudnn",
            f"cudnn_versions.{major}",
            expected,
            c.get("version"),
            f"cuDNN {expected} for CUDA {major} expected, found {c.get('version')} "
            f"({c.get('source')} at {c.get('path')})",
            path=c.get("path"),
        )
        for c in mine
        if not _matches(expected, c.get("version") or "")
    ]


def _cudnn_drift(all_copies, wanted, scope):
    copies = [c for c in all_copies if scope == "all" or c.get("source") in SYSTEM_SOURCES]
    items = []
    for major in sorted(wanted):
        items += _cudnn_major_drift(copies, major, wanted[major])
    items += [
        _item(
            "cudnn",
            "cudnn_versions",
            "none",
            c.get("version"),
            f"cuDNN {c.get('version')} for CUDA {c.get('cuda_major') or 'unknown'} "
            f"({c.get('source')} at {c.get('path')}) is not in the baseline",
            path=c.get("path"),
        )
        for c in copies
        if c.get("cuda_major") not in wanted
    ]
    return items


def _consumer_loads(env):
    """(version, what) an environment loads: its first framework's cuDNN (torch first), else the process's."""
    frameworks = sorted(env.get("frameworks") or [], key=lambda f: f.get("name") != "torch")
    for fw in frameworks:
        if fw.get("loads"):
            return fw["loads"].get("version"), fw.get("name")
    for item in env.get("cudnn") or []:
        if item:
            return item.get("version"), "a process"
    return None, "nothing"


def _consumers_drift(consumers, wanted):
    envs = {}
    for env in (consumers or {}).get("environments") or []:
        if env.get("kind") != "login":
            envs.setdefault("/" if env.get("kind") == "system" else env.get("path"), env)
    items = []
    for path, expected in sorted(wanted.items()):
        key = f"consumers_cudnn.{path}"
        env = envs.get(path)
        version, what = _consumer_loads(env) if env else (None, None)
        if env is None:
            items.append(
                _item(
                    "cudnn",
                    key,
                    expected,
                    "missing",
                    f"cuDNN {expected} expected in {path}, no such consumer environment was found",
                    path=path,
                )
            )
        elif not _matches(expected, version or ""):
            items.append(
                _item(
                    "cudnn",
                    key,
                    expected,
                    version or "none",
                    f"cuDNN {expected} expected in {path}, {what} there loads {version or 'no cuDNN'}",
                    path=path,
                )
            )
    return items


def compute_drift(entry, baseline):
    """Drift items of one audited host.

    ``entry`` is a host entry of the report (see report/build.py: ``driver``, ``cuda``, ``cudnn``
    normalized); ``baseline`` the normalized baseline (validate_baseline). Returns a list of dicts
    ``{component, key, expected, actual, message, path}`` (empty when the host matches).
    """
    if not baseline:
        return []
    items = []
    cuda = entry.get("cuda") or {}
    if baseline["driver_branch"] is not None:
        items += _driver_drift(entry.get("driver") or {}, baseline["driver_branch"])
    if baseline["cuda_versions"] is not None:
        items += _cuda_versions_drift(cuda.get("toolkits") or [], baseline["cuda_versions"])
    if baseline["cuda_default"] is not None:
        items += _cuda_default_drift(cuda.get("default"), baseline["cuda_default"])
    if baseline["cudnn_versions"] is not None:
        items += _cudnn_drift(entry.get("cudnn") or [], baseline["cudnn_versions"], baseline["cudnn_scope"])
    if baseline.get("consumers_cudnn"):
        items += _consumers_drift(entry.get("consumers"), baseline["consumers_cudnn"])
    return items
