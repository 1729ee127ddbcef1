"""The roles' variables as the plan action resolves them when the host sets none: their defaults files (the
one declaration of each default), for tests that build plan requests."""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles

ROLES = Path(__file__).resolve().parents[2] / "roles"


def variables(role, **given):
    """The role's variables from its defaults file (and those it borrows from another role's), updated."""
    out = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
    for other, names in roles.BORROWED.get(role, {}).items():
        theirs = yaml.safe_load((ROLES / other / "defaults" / "main.yml").read_text())
        out.update({n: theirs[n] for n in names})
    out.update(given)
    return out


def driver_request(given=None, is_controller=False, **more):
    """plan/driver's request from the role's defaults, updated with request keys (branch, source, ...)."""
    request = roles.driver_request(variables("nvidia_driver"), is_controller)
    request.update(given or {}, **more)
    return request
