# Copyright: gpufleet contributors
# Apache-2.0
"""The audit playbook's own variables (``gpufleet_audit_*``), checked before any host is contacted.

Stdlib only, Python >= 3.9, pure. ``validate_settings(values, subsets)`` takes the variables as the user
set them (``{name: value}``; ``None`` = not set, the playbook's default applies) and returns them
normalized, or raises :class:`SettingsError` whose message names each wrong variable (and only the wrong
ones), its value and what is allowed, e.g. ``gpufleet_audit_fail_on_drift: 'perhaps' is not a boolean;
allowed: true or false (also yes/no, on/off, 1/0)``. Booleans and lists are read the way Ansible reads
module options (``"true"``, ``"yes"``, ``1``; ``"json,csv"`` is a list). No string of any variable may hold a
control character (a newline in a value would forge lines of the CSV, Markdown and Prometheus reports). AWX
job slicing's ``awx_job_slice_number`` / ``awx_job_slice_count`` are checked with the slice variables, as the
report play reads them (``gpufleet_audit_slice`` else ``awx_job_slice_number``, the same for the count).
"""

from __future__ import annotations

import os

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import (
    CONTROL_ALLOWED,
    control_character,
)
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


def _normpath(path):
    """``path`` without ``.``, ``..``, doubled or trailing slashes (``//srv`` too, which POSIX keeps)."""
    path = os.path.normpath(path)
    return "/" + path.lstrip("/") if path.startswith("//") else path


def _directory(value, created):
    """A path, normalized; relative: to the directory ansible-playbook runs in (as the action reads it)."""
    if not isinstance(value, str) or not value.strip():
        raise _Wrong(
            f"{value!r} is not a directory; allowed: a path ({'created when missing; ' if created else ''}"
            "absolute, or relative to the directory ansible-playbook runs in)"
        )
    return _normpath(value)


def _report_dir(value):
    return _directory(value, created=True)


# the reports' directory when gpufleet_audit_report_dir is not set: relative to the directory ansible-playbook
# runs in, never to the playbook's (an installed collection's playbooks/ must not receive reports)
DEFAULT_REPORT_DIR = "reports"


def report_dir_of(value, cwd):
    """The absolute, normalized directory the reports go to: ``value`` (relative to ``cwd``, the directory
    ansible-playbook runs in), else ``<cwd>/reports``."""
    return _normpath(os.path.join(cwd, value or DEFAULT_REPORT_DIR))


def _slice_dir(value):
    return _directory(value, created=False)


def _hosts(value):
    if isinstance(value, str) and value.strip():
        return value
    raise _Wrong(
        f"{value!r} is not a host pattern; allowed: a host pattern string such as all, gpu_nodes or "
        "'gpu_nodes:!gpu99' (several patterns in one string, separated by ',' or ':')"
    )


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
    return [_normpath(item) for item in items]


def _textfile_dir(value):
    """node_exporter's textfile directory on the audited hosts: an absolute path, normalized."""
    if not isinstance(value, str) or not value.startswith("/"):
        raise _Wrong(
            f"{value!r} is not an absolute path; allowed: the absolute path of node_exporter's textfile "
            "directory on the hosts (--collector.textfile.directory)"
        )
    return _normpath(value)


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


# (this run's slice number, the number of slices): the audit's own variable, else AWX job slicing's
SLICE_NUMBER = ("gpufleet_audit_slice", "awx_job_slice_number")
SLICE_COUNT = ("gpufleet_audit_slices", "awx_job_slice_count")


def _slices(out, problems):
    """The slice (the audit's variable, else AWX's) must not exceed the count; one without the other is wrong.

    Read as the report play reads them: ``gpufleet_audit_slice | default(awx_job_slice_number)``, and so on.
    """
    number_var = next((name for name in SLICE_NUMBER if name in out), None)
    count_var = next((name for name in SLICE_COUNT if name in out), None)
    if (number_var is None) != (count_var is None):
        given = number_var or count_var
        problems.append(f"{given}: set both gpufleet_audit_slice and gpufleet_audit_slices (a sliced run)")
    elif number_var is not None and out[number_var] > out[count_var]:
        problems.append(f"{number_var}: {out[number_var]} is above {count_var} ({out[count_var]})")


def checkers(subsets):
    """{variable: function(value) -> normalized value} for every gpufleet_audit_* variable."""
    return {
        "gpufleet_audit_hosts": _hosts,
        "gpufleet_audit_report_dir": _report_dir,
        "gpufleet_audit_report_formats": _formats,
        "gpufleet_audit_fail_on_drift": _bool,
        "gpufleet_audit_fail_on_unreachable": _bool,
        "gpufleet_audit_fail_on_failed": _bool,
        "gpufleet_audit_gather_facts": _bool,
        "gpufleet_audit_strategy": _strategy,
        "gpufleet_audit_gather_subset": lambda value: _gather_subset(value, subsets),
        "gpufleet_audit_cudnn_search_paths": _search_paths,
        "gpufleet_audit_slice": _count,
        "gpufleet_audit_slices": _count,
        "gpufleet_audit_slice_dir": _slice_dir,
        "gpufleet_audit_prometheus_textfile_dir": _textfile_dir,
        # AWX job slicing sets these on a sliced job; the report play falls back to them
        "awx_job_slice_number": _count,
        "awx_job_slice_count": _count,
    }


_REFUSED = object()  # what _checked returns for a refused value


def _checked(check, shown, value, problems):
    """``check(value)``, or _REFUSED with the reason added to ``problems`` (``shown``: the name shown)."""
    char = control_character(value)
    if char is not None:
        problems.append(
            f"{shown}: {value!r} contains a control character ({char!r}); allowed: {CONTROL_ALLOWED}"
        )
        return _REFUSED
    try:
        return check(value)
    except _Wrong as exc:
        problems.append(f"{shown}: {exc}")
        return _REFUSED


def validate_settings(values, subsets):
    """Normalized ``{name: value}`` of the variables that are set; SettingsError naming every wrong one.

    ``subsets``: the fact subsets nvidia_facts knows (kb.facts.SUBSETS, passed in by the caller).
    A name that is not a variable of the audit is an error too (a typo in the caller).
    """
    table = checkers(tuple(subsets))
    out, problems = {}, []
    for name, value in (values or {}).items():
        if name not in table:
            problems.append(f"{name}: not a variable of the audit; known: {', '.join(table)}")
            continue
        if value is None:
            continue
        checked = _checked(table[name], name, value, problems)
        if checked is not _REFUSED:
            out[name] = checked
    if not problems:
        _slices(out, problems)
    if problems:
        raise SettingsError("; ".join(problems))
    return out


# the audit's variables that each audited host may set for itself (host_vars), read by the plays on the hosts
HOST_VARIABLES = {"gpufleet_audit_prometheus_textfile_dir": _textfile_dir}


def validate_host_values(name, by_host, shown=None):
    """{host: normalized value} of the hosts that set the host variable ``name`` (of HOST_VARIABLES;
    ``by_host``: {host: value or None}); SettingsError naming each wrong one as ``shown`` with its host."""
    check, shown = HOST_VARIABLES[name], shown or name
    out, problems = {}, []
    for host, value in by_host.items():
        if value is None:
            continue
        checked = _checked(check, f"{shown} (host {host})", value, problems)
        if checked is not _REFUSED:
            out[host] = checked
    if problems:
        raise SettingsError("; ".join(problems))
    return out
