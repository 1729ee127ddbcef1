# Copyright: gpufleet contributors
# Apache-2.0
"""What gpufleet's controller-side actions share: Ansible's values as plain Python, and the facts of a
``nvidia_facts`` run on the host (the one way an action reads a host).

Stdlib only; used by plugins/action/ (never shipped to a host: modules do not import it).
"""

from __future__ import annotations

FACTS_MODULE = "gpufleet.nvidia.nvidia_facts"


class FactsFailed(ValueError):
    """nvidia_facts failed on the host: the message says why, with the module's stderr."""


def plain(value):
    """Ansible's lazy/tagged containers -> plain Python (dict/list/str/int/...)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    return str(value)


def facts_of(found):
    """``ansible_facts.nvidia`` from nvidia_facts' result (of ``_execute_module``); FactsFailed with the
    module's msg and stderr (never "Module result deserialization failed" alone)."""
    if found.get("failed") or "nvidia" not in (found.get("ansible_facts") or {}):
        why = found.get("msg") or "no facts returned"
        stderr = (found.get("module_stderr") or "").strip()
        raise FactsFailed(f"nvidia_facts failed on this host: {why}" + (f": {stderr}" if stderr else ""))
    return plain(found["ansible_facts"]["nvidia"])
