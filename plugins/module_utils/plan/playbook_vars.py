# Copyright: gpufleet contributors
# Apache-2.0
"""The playbooks' own variables (``gpufleet_*``): declared once here, checked before any host is contacted.

Stdlib only, Python >= 3.9, pure (no host I/O: whether a hook file is readable on the controller is asked
through the ``file_problem`` callable the action passes in). The roles' variables (``nvidia_driver_*``,
``cuda_toolkit_*``, ``cudnn_*``) are the roles' own (their argument specs and plans), not declared here.

``PLAYBOOK_VARS`` is the table: per variable its kind (the grammar), the default the playbooks use when it
is not set, and the playbooks that read it. ``check(playbook, values, file_problem)`` takes the variables as
the user set them (``{name: value}``; missing or ``None``: not set, the default applies) and returns the
problems, one sentence per wrong variable in ``refusal.bad``'s wording (the variable, its value and what is
allowed), empty when every value is good. The action ``gpufleet.nvidia.nvidia_inputs`` runs it in each
playbook's first play, so a play keyword (``hosts:``, ``serial:``) only ever templates a checked value.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import namedtuple

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad, control_character

Var = namedtuple("Var", "kind default playbooks what")

PATTERN, ROOT, SERIAL, HOOK = "pattern", "root", "serial", "hook"

PLAYBOOK_VARS = {
    "gpufleet_driver_hosts": Var(
        PATTERN, "all", ("driver", "driver_upgrade", "site", "preflight"), "the hosts of the driver play"
    ),
    "gpufleet_cuda_hosts": Var(PATTERN, "all", ("cuda", "site", "preflight"), "the hosts of the CUDA play"),
    "gpufleet_cudnn_hosts": Var(
        PATTERN, "all", ("cudnn", "site", "preflight"), "the hosts of the cuDNN play"
    ),
    "gpufleet_preflight_hosts": Var(PATTERN, "all", ("preflight",), "the hosts preflight.yml plans"),
    "gpufleet_preflight_root": Var(ROOT, "/", ("preflight",), "the root preflight.yml reads (an image)"),
    "gpufleet_driver_upgrade_serial": Var(
        SERIAL, "10%", ("driver_upgrade",), "the batch size of the rolling upgrade (the play's serial)"
    ),
    "gpufleet_driver_upgrade_drain_tasks": Var(
        HOOK, "", ("driver_upgrade",), "task file run before a host is touched"
    ),
    "gpufleet_driver_upgrade_undrain_tasks": Var(
        HOOK, "", ("driver_upgrade",), "task file run after the host's health check passed"
    ),
}
PLAYBOOKS = sorted({name for var in PLAYBOOK_VARS.values() for name in var.playbooks})
# the roles each playbook runs (preflight.yml plans all three, untagged)
PLAYBOOK_ROLES = {
    "site": ("nvidia_driver", "cuda_toolkit", "cudnn"),
    "preflight": ("nvidia_driver", "cuda_toolkit", "cudnn"),
    "driver": ("nvidia_driver",),
    "driver_upgrade": ("nvidia_driver",),
    "cuda": ("cuda_toolkit",),
    "cudnn": ("cudnn",),
}

ALLOWED = {
    PATTERN: "a host pattern: one string without newlines or control characters, such as all, gpu_nodes "
    "or 'gpu_nodes:!login' (not a list or a mapping)",
    ROOT: "an absolute, normalised path such as / or /srv/images/gpu-node (no '.', '..', '//' or trailing /)",
    SERIAL: "what the play's serial takes: a whole number >= 1, a percentage 'N%' with 0 < N <= 100, "
    "or a non-empty list of those (e.g. [1, '10%', '50%'])",
    HOOK: "empty (no hook), or the absolute, normalised path of a readable task file on the controller",
}
# a relative path would resolve against playbooks/ (or an importing playbook's directory), not the user's
# working directory: molecule driver-vm-upgrade's first run failed so
HOOK_WHY_RELATIVE = "a relative path resolves against the playbook's directory, not where you run from"

_WHOLE = re.compile(r"[1-9][0-9]*")
_PERCENT = re.compile(r"([1-9][0-9]*)%")


def variables_of(playbook):
    """The names of the variables ``playbook`` reads, in the table's order."""
    return [name for name, var in PLAYBOOK_VARS.items() if playbook in var.playbooks]


def shown(value):
    """The value as a refusal shows it: a plain string as is, anything else (or a string with control
    characters) as JSON, so that a newline shows as \\n."""
    if isinstance(value, str) and not _control(value) and value.strip() == value and value:
        return value
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _control(text):
    return control_character(text) is not None


def _text(value):
    """Why ``value`` is not one clean string, or None."""
    if not isinstance(value, str):
        return f"a {_type_name(value)}, not a string"
    if not value.strip():
        return "empty"
    if _control(value):
        return "it holds a newline or another control character"
    return None


def _type_name(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _pattern(value, _file_problem):
    return _text(value)


def _root(value, _file_problem):
    why = _text(value)
    if why:
        return why
    if not value.startswith("/"):
        return "not an absolute path"
    return _normalised(value)


def _normalised(path):
    if posixpath.normpath(path) != path or "//" in path:
        return f"not normalised (normalised: {posixpath.normpath(path)})"
    return None


def _serial_item(item):
    if isinstance(item, bool) or not isinstance(item, (int, str)):
        return f"a {_type_name(item)} is not a batch size"
    if isinstance(item, int):
        return None if item >= 1 else f"{item} is below 1"
    percent = _PERCENT.fullmatch(item)
    if _WHOLE.fullmatch(item) or (percent and int(percent.group(1)) <= 100):
        return None
    if percent:
        return f"{item} is above 100%"
    if item in ("0", "0%") or (item.startswith("-") and item[1:].rstrip("%").isdigit()):
        return f"{item} is below 1"
    return f"{shown(item)} is neither a whole number nor a percentage"


def _serial(value, _file_problem):
    if isinstance(value, (list, tuple)):
        if not value:
            return "an empty list"
        problems = [p for p in (_serial_item(item) for item in value) if p]
        return "; ".join(problems) or None
    return _serial_item(value)


def _hook(value, file_problem):
    if value == "":
        return None
    why = _text(value)
    if why:
        return why
    if not value.startswith("/"):
        return f"not an absolute path ({HOOK_WHY_RELATIVE})"
    return _normalised(value) or file_problem(value)


CHECKS = {PATTERN: _pattern, ROOT: _root, SERIAL: _serial, HOOK: _hook}


def check(playbook, values, file_problem):
    """The problems of ``playbook``'s variables in ``values`` (one sentence each; empty: all good).

    ``file_problem(path)``: why the controller cannot read the task file ``path``, or None (the action's
    filesystem check; tests pass their own). Names in ``values`` that ``playbook`` does not read are ignored.
    """
    if playbook not in PLAYBOOKS:
        raise ValueError(f"playbook={playbook} (allowed: {', '.join(PLAYBOOKS)})")
    problems = []
    for name in variables_of(playbook):
        value = (values or {}).get(name)
        if value is None:
            continue
        kind = PLAYBOOK_VARS[name].kind
        why = CHECKS[kind](value, file_problem)
        if why:
            problems.append(bad(name, shown(value), ALLOWED[kind], why))
    return problems


def _tag_selects(tags, role):
    return any(tag == role or tag.startswith(role + "_") for tag in tags)


def roles_run(roles, run_tags, skip_tags):
    """The roles of ``roles`` whose tasks the run's ``--tags``/``--skip-tags`` let run (Ansible's
    ``ansible_run_tags`` and ``ansible_skip_tags``). A role's preflight carries the role's name and every
    ``<role>_<phase>`` tag, so the role runs when one of those is asked (or all, tagged) and none skipped."""
    run_tags, skip_tags = list(run_tags or ["all"]), list(skip_tags or [])
    out = []
    for role in roles:
        asked = "all" in run_tags or "tagged" in run_tags or _tag_selects(run_tags, role)
        skipped = "all" in skip_tags or "tagged" in skip_tags or _tag_selects(skip_tags, role)
        if asked and not skipped:
            out.append(role)
    return out
