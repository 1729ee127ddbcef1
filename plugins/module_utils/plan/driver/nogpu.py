# Copyright: gpufleet contributors
# Apache-2.0
"""The driver on a host without an NVIDIA GPU (issue 37).

A GPU cluster's inventory holds its GPU nodes and, beside them, login and service nodes without a GPU; a
playbook run on ``all`` must not put a kernel driver on those. The plan of a host where ``nvidia_facts``
finds no NVIDIA GPU therefore installs, changes and removes nothing, and says so, unless
``nvidia_driver_install_without_gpu`` asks for the driver anyway (an image built without its GPU, a GPU the
host does not show yet, the lab's GPU-less guests). A driver already installed there is left as it is.

Facts that cannot tell (no GPU list, the gpu probe skipped or failed: ``state.gpu_present``) count as a GPU:
the plan is then made as on any GPU host. A host-managed driver is verified as on any host.

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.existing import installed_branches
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import host_state

HEAD = "no NVIDIA GPU on this host"
ANYWAY = "set nvidia_driver_install_without_gpu: true to {} anyway, for image builds or a GPU not visible yet"


def without_gpu(request, facts):
    """The plan leaves this host alone: the facts find no NVIDIA GPU, the driver is not host-managed, and
    ``install_without_gpu`` (nvidia_driver_install_without_gpu) is false."""
    state = host_state(facts)
    return not (state["gpu_present"] or state["host_managed"] or bool(request["install_without_gpu"]))


def installed_here(state):
    """Words for the NVIDIA driver the facts find on the host (packages by branch, the module for the running
    kernel, a runfile), or "" when there is none."""
    parts = []
    if state["packages"]:
        branches = installed_branches(state["packages"])
        shown = ", ".join(f"{p['name']} {p.get('version') or ''}".strip() for p in state["packages"][:3])
        more = len(state["packages"]) - 3
        parts.append(
            f"{'branch ' + ', '.join(branches) + ' ' if branches else ''}packages {shown}"
            + (f" and {more} more" if more > 0 else "")
        )
    if state["installed_version"]:
        parts.append(f"module {state['installed_version']} for the running kernel")
    if state["runfile_markers"]:
        parts.append("a runfile install")
    return "; ".join(parts)


def gpuless_plan(facts):
    """The plan of a host :func:`without_gpu`: nothing installed, changed or removed, and why."""
    state = host_state(facts)
    found = installed_here(state)
    if found:
        summary = (
            f"{HEAD}: the NVIDIA driver installed here ({found}) is left as it is, nothing installed, "
            f"changed or removed ({ANYWAY.format('manage it')})"
        )
    else:
        summary = f"{HEAD}: the driver is not installed ({ANYWAY.format('install it')})"
    return {
        "made": False,
        "errors": [],
        "warnings": [],
        "flavor": None,
        "no_gpu": True,
        "installed_left": found,
        "install": False,
        "host_managed": False,
        "host_managed_report": "",
        "container": state["container"],
        "touches_host": False,
        "summary": summary,
    }
