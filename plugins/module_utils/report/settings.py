# Copyright: gpufleet contributors
# Apache-2.0
"""The audit playbook's own variables (``gpufleet_audit_*``), checked before any host is contacted.

Stdlib only, Python >= 3.9, pure. ``validate_settings(values, subsets)`` takes the variables as the user
set them (``{name: value}``; ``None`` = not set, the playbook's default applies) and returns them
normalized, or raises :class:`SettingsError` whose message names each wrong variable (and only the wrong
ones), its value and what is allowed, e.g. ``gpufleet_audit_fail_on_drift: 'perhaps' is not a boolean;
allowed: true or false (also yes/no, on/off, 1/0)``. Booleans and lists are read the way Ansible reads
module options (``"true"``, ``"yes"``, ``1``; ``"json,csv"`` is a list).
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.build import FORMATS

# mitogen's strategies (mitogen_linear, ...) work with the supported ansible-core when the user points
# strategy_plugins at ansible_mitogen/plugins/strategy (docs/scale.md)
STRATEGIES = (
    "linear",
    "free",
    "host_pinned",
    "debug",
    "mitogen_linear",
    "mitogen_free",
    "mitogen_host_pinned",
)
_TRUE = ("y", "yes", "on", "1", "true", "t")
_FALSE = ("n", "no", "off", "0", "false", "f")
BOOL_ALLOWED = "true or false (also yes/no, on/off, 1/0)"


class SettingsError(ValueError):
    """One or more gpufleet_audit_* variables are wrong; the message names each of them."""


class _Wrong(ValueError):
    """One variable's value is wrong: ``str(self)`` says why and what is allowed (without the name)."""


def _bool(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _Wrong(f"{value!r} is not a boolean; allowed: {BOOL_ALLOWED}")


def _list(value, what):
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return list(value)
    raise _Wrong(f"{value!r} is not a list of {what}")


def _formats(value):
    items = _list(value, f"report formats; allowed: a subset of [{', '.join(FORMATS)}]")
    bad = [item for item in items if item not in FORMATS]
    if bad:
        raise _Wrong(
            f"{value!r}: {bad[0]!r} is not a report format; allowed: a subset of [{', '.join(FORMATS)}]"
        )
    return items


def _report_dir(value):
    if not isinstance(value, str) or not value.strip():
        raise _Wrong(f"{value!r} is not a directory; allowed: a path (created when missing)")
    return value


def _hosts(value):
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list) and value and all(isinstance(item, str) and item for item in value):
        return value
    raise _Wrong(f"{value!r} is not a host pattern; allowed: an inventory pattern such as all or gpu_nodes")


def _strategy(value):
    name = (
        value[len("ansible.builtin.") :]
        if isinstance(value, str) and value.startswith("ansible.builtin.")
        else value
    )
    if name not in STRATEGIES:
        raise _Wrong(f"{value!r} is not a play strategy; allowed: {', '.join(STRATEGIES)}")
    return value


def _search_paths(value):
    items = _list(value, "absolute paths")
    bad = [item for item in items if not item.startswith("/")]
    if bad:
        raise _Wrong(
            f"{value!r}: {bad[0]!r} is not an absolute path; allowed: absolute paths of trees to scan"
        )
    return items


def _gather_subset(value, subsets):
    allowed = f"all, {', '.join(subsets)} (each optionally prefixed with '!')"
    items = _list(value, f"subsets; allowed: {allowed}")
    for item in items:
        name = item[1:] if item.startswith("!") else item
        if name != "all" and name not in subsets:
            raise _Wrong(f"{value!r}: {item!r} is not a subset; allowed: {allowed}")
    return items


def _count(value):
    """A whole number >= 1 (slice number or number of slices), as -e gives it (a string) or YAML (an int)."""
    if isinstance(value, bool):
        raise _Wrong(f"{value!r} is not a whole number; allowed: 1, 2, 3, ...")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise _Wrong(f"{value!r} is not a whole number; allowed: 1, 2, 3, ...") from None
    if number < 1:
        raise _Wrong(f"{value!r} is below 1; allowed: 1, 2, 3, ...")
    return number


def _slices(out, problems):
    """gpufleet_audit_slice must not exceed gpufleet_audit_slices; one without the other is an error."""
    number, count = out.get("gpufleet_audit_slice"), out.get("gpufleet_audit_slices")
    if (number is None) != (count is None):
        given = "gpufleet_audit_slice" if count is None else "gpufleet_audit_slices"
        problems.append(f"{given}: set both gpufleet_audit_slice and gpufleet_audit_slices (a sliced run)")
    elif number is not None and number > count:
        problems.append(f"gpufleet_audit_slice: {number} is above gpufleet_audit_slices ({count})")


def checkers(subsets):
    """{variable: function(value) -> normalized value} for every gpufleet_audit_* variable."""
    return {
        "gpufleet_audit_hosts": _hosts,
        "gpufleet_audit_report_dir": _report_dir,
        "gpufleet_audit_report_formats": _formats,
        "gpufleet_audit_fail_on_drift": _bool,
        "gpufleet_audit_fail_on_unreachable": _bool,
        "gpufleet_audit_gather_facts": _bool,
        "gpufleet_audit_strategy": _strategy,
        "gpufleet_audit_gather_subset": lambda value: _gather_subset(value, subsets),
        "gpufleet_audit_cudnn_search_paths": _search_paths,
        "gpufleet_audit_slice": _count,
        "gpufleet_audit_slices": _count,
        "gpufleet_audit_slice_dir": _report_dir,
    }


def validate_settings(values, subsets):
    """Normalized ``{name: value}`` of the variables that are set; SettingsError naming every wrong one.

    ``subsets``: the fact subsets nvidia_facts knows (kb.facts.SUBSETS, passed in by the caller).
    A name that is not a gpufleet_audit_* variable of the audit is an error too (a typo in the caller).
    """
    table = checkers(tuple(subsets))
    out, problems = {}, []
    for name, value in (values or {}).items():
        if name not in table:
            problems.append(f"{name}: not a variable of the audit; known: {', '.join(table)}")
            continue
        if value is None:
            continue
        try:
            out[name] = table[name](value)
        except _Wrong as exc:
            problems.append(f"{name}: {exc}")
    if not problems:
        _slices(out, problems)
    if problems:
        raise SettingsError("; ".join(problems))
    return out
