# Copyright: gpufleet contributors
# Apache-2.0
"""The variables of NVIDIA's own driver role, NVIDIA/ansible-role-nvidia-driver (issue 37).

Its variables share gpufleet's prefix, ``nvidia_driver_``, but not its names: the group_vars of an admin who
migrates from it (``nvidia_driver_skip_reboot``, ``nvidia_driver_module_params``, ...) would be ignored
without a word. gpufleet reads none of them: each one a host sets is refused before anything is gathered or
changed, naming it, its value and the gpufleet variable to set instead, with the value where the translation
is exact (``set nvidia_driver_reboot: never instead``). Honouring them would leave two spellings of one
setting, one of them undocumented here, and an exact translation costs the admin one line.

:data:`NVIDIA_ROLE` holds every variable of that role's ``defaults/main.yml`` (commit f68d4a7) that bears the
driver's name; ``nvidia_driver_branch`` is not in it: the same name has the same meaning in both roles (a
branch such as "580"), and gpufleet's own is read. ``epel_package`` and ``epel_repo_key`` are not in it
either: names a site may use for other roles (gpufleet adds no EPEL repository). docs/driver.md, "Migrating
from NVIDIA's role", has the table.

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.inputs import MODPROBE_OPTION, shown
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.repo import NVIDIA_REPO_BASE_URL

SOURCE = "NVIDIA/ansible-role-nvidia-driver"
ALLOWED = f"unset: a variable of NVIDIA's role ({SOURCE}), which gpufleet does not read"
_TRUE = ("y", "yes", "on", "1", "true", "t")
_FALSE = ("n", "no", "off", "0", "false", "f")


def _truth(value):
    """Ansible's reading of a boolean (True, False), or None for anything else."""
    text = str(value).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else None


def _switch(yes, no, other):
    """A translation of a boolean: ``yes`` for true, ``no`` for false, ``other`` when it is neither."""
    return lambda value: {True: yes, False: no}.get(_truth(value), other)


def _branch(value):
    found = re.fullmatch(r"R?([0-9]{3})", str(value).strip())
    if found:
        return f"set nvidia_driver_branch: '{found.group(1)}' instead (one branch for every OS)"
    return "use nvidia_driver_branch (a branch such as '580', one for every OS) instead"


def _package_version(value):
    text = str(value).strip()
    if text == "":
        return "nothing to set: empty is nvidia_driver_version's default too (the newest of the branch)"
    stream = re.fullmatch(r"([0-9]{3})-(dkms|open)", text)  # RHEL 8+: the module stream @nvidia-driver:<this>
    if stream:
        flavor = "open" if stream.group(2) == "open" else "proprietary"
        return (
            f"set nvidia_driver_branch: '{stream.group(1)}' and nvidia_driver_kernel_module: {flavor} "
            "instead (gpufleet picks the module stream from them)"
        )
    found = re.match(r"(?:[0-9]+:)?([0-9]{3})\.([0-9]+)(?:\.([0-9]+))?", text)  # 580.95.05-1
    if found:
        version = ".".join(part for part in found.groups() if part)
        return (
            f"set nvidia_driver_version: '{version}' and nvidia_driver_branch: '{found.group(1)}' instead "
            "(the driver version; the package revision is the source's)"
        )
    return "use nvidia_driver_version (a driver version X.Y.Z, e.g. '580.95.05') and nvidia_driver_branch"


def _package_state(value):
    text = str(value).strip().lower()
    if text == "present":
        return (
            "nothing to set: gpufleet installs the driver where nvidia_driver_enabled is true (the default)"
        )
    if text == "absent":
        return (
            "set nvidia_driver_state: absent instead: gpufleet removes the driver it installed (as its "
            "record says) and refuses one someone else installed; nvidia_driver_enabled: false leaves the "
            "host alone"
        )
    return (
        "no equivalent: gpufleet installs nvidia_driver_version (empty: the newest of nvidia_driver_branch) "
        "and holds it (nvidia_driver_hold); a newer driver is a new nvidia_driver_version or "
        "nvidia_driver_branch (playbooks/driver_upgrade.yml rolls it out)"
    )


def _module_params(value):
    """NVIDIA's role writes this text as the whole modprobe.d file: ``options nvidia`` lines translate."""
    given = value if isinstance(value, (list, tuple)) else str(value).splitlines()
    lines = [" ".join(str(line).split()) for line in given]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        return (
            "nothing to set: no module parameters is nvidia_driver_modprobe_options' default ([]); remove it"
        )
    items = []
    for line in lines:
        found = re.fullmatch(r"options nvidia (.+)", line)
        if not found or not MODPROBE_OPTION.match(found.group(1)):
            return (
                f"no translation of {line!r}: gpufleet writes options of the nvidia module only, from "
                "nvidia_driver_modprobe_options (items of name=value parameters); put other lines in a "
                "modprobe.d file of your own"
            )
        items.append(found.group(1))
    return f"set nvidia_driver_modprobe_options: {json.dumps(items)} instead"


def _module_file(value):
    return (
        "no equivalent: gpufleet writes nvidia_driver_modprobe_options to a modprobe.d file of its own; "
        f"remove {shown(value)} if NVIDIA's role wrote it (its options would apply too)"
    )


def _repo_baseurl(value):
    """NVIDIA's role takes the repository of the host's OS (<base>/<os>/<arch>/); gpufleet the base."""
    text = str(value).strip()
    found = re.fullmatch(r"(.*?)/+(?:\{\{.*\}\}|(?:ubuntu|debian|rhel)[0-9]+/(?:x86_64|sbsa))/*", text)
    base = found.group(1) if found else ""
    if base == NVIDIA_REPO_BASE_URL:
        return "nothing to set: NVIDIA's repository is gpufleet's default (nvidia_driver_repo_base_url: '')"
    if base:
        return (
            f"set nvidia_driver_repo_base_url: {shown(base)} instead (the mirror's root: gpufleet "
            "adds each host's <os>/<arch>/)"
        )
    return (
        "use nvidia_driver_repo_base_url instead: the root of a mirror of NVIDIA's repositories, without "
        "<os>/<arch>/"
    )


def _cuda_package(value):
    text = str(value).strip()
    found = re.fullmatch(r"(cuda-drivers|nvidia-open)(?:-([0-9]{3}))?", text)
    if not found:
        return (
            "no equivalent: the packages follow from nvidia_driver_branch and nvidia_driver_kernel_module "
            "(docs/driver.md, 'The plan per OS and source')"
        )
    flavor = "proprietary" if found.group(1) == "cuda-drivers" else "open"
    branch = f"nvidia_driver_branch: '{found.group(2)}' and " if found.group(2) else ""
    return (
        f"set {branch}nvidia_driver_kernel_module: {flavor} instead (gpufleet names the packages from them)"
    )


_KEY = (
    "no equivalent: gpufleet writes the repository's key and source file itself (no cuda-keyring package, "
    "no apt-key) and checks the key against a pinned fingerprint; set nvidia_driver_repo_key_fingerprint "
    "for the key of a mirror of your own"
)
_PACKAGES = (
    "no equivalent: gpufleet picks the packages from nvidia_driver_source, nvidia_driver_branch, "
    "nvidia_driver_kernel_module and nvidia_driver_ubuntu_server (docs/driver.md, 'The plan per OS and "
    "source'); remove it"
)

# NVIDIA's variable -> what to set in gpufleet instead: a text, or a function of its value
NVIDIA_ROLE = {
    "nvidia_driver_package_state": _package_state,
    "nvidia_driver_package_version": _package_version,
    "nvidia_driver_persistence_mode_on": _switch(
        "set nvidia_driver_persistenced: true instead",
        "set nvidia_driver_persistenced: false instead",
        "use nvidia_driver_persistenced (true or false) instead",
    ),
    "nvidia_driver_skip_reboot": _switch(
        "set nvidia_driver_reboot: never instead (the pending reboot is reported)",
        "set nvidia_driver_reboot: always instead (NVIDIA's role rebooted after every driver package change; "
        "auto, gpufleet's default, reboots when the loaded module differs from the installed one)",
        "use nvidia_driver_reboot (auto, always or never) instead",
    ),
    "nvidia_driver_module_file": _module_file,
    "nvidia_driver_module_params": _module_params,
    "nvidia_driver_add_repos": _switch(
        "set nvidia_driver_repo_use_existing: false instead (gpufleet adds NVIDIA's repository itself with "
        "nvidia_driver_source: nvidia_repo; it adds no EPEL)",
        "set nvidia_driver_repo_use_existing: true instead (the repositories the host has)",
        "use nvidia_driver_repo_use_existing (true or false) instead",
    ),
    "nvidia_driver_rhel_cuda_repo_baseurl": _repo_baseurl,
    "nvidia_driver_rhel_cuda_repo_gpgkey": _KEY,
    "nvidia_driver_rhel_branch": _branch,
    "nvidia_driver_ubuntu_branch": _branch,
    "nvidia_driver_ubuntu_install_from_cuda_repo": _switch(
        "set nvidia_driver_source: nvidia_repo instead",
        "set nvidia_driver_source: distro instead (the Ubuntu archive; gpufleet's default is nvidia_repo)",
        "use nvidia_driver_source (nvidia_repo or distro) instead",
    ),
    "nvidia_driver_ubuntu_packages_suffix": lambda value: {
        "-server": "set nvidia_driver_ubuntu_server: true instead",
        "": "set nvidia_driver_ubuntu_server: false instead",
    }.get(str(value).strip(), "use nvidia_driver_ubuntu_server (true: the -server packages) instead"),
    "nvidia_driver_ubuntu_packages": _PACKAGES,
    "old_nvidia_driver_ubuntu_cuda_repo_gpgkey_id": _KEY,
    "nvidia_driver_ubuntu_cuda_repo_baseurl": _repo_baseurl,
    "nvidia_driver_ubuntu_cuda_keyring_package": _KEY,
    "nvidia_driver_ubuntu_cuda_keyring_url": _KEY,
    "nvidia_driver_ubuntu_cuda_package": _cuda_package,
}
# the names the nvidia_plan action reads from the host's variables (they are in no argument spec of gpufleet)
NVIDIA_ROLE_VARIABLES = tuple(NVIDIA_ROLE)


def instead(name, value):
    """What to set in gpufleet instead of NVIDIA's ``name: value``."""
    found = NVIDIA_ROLE[name]
    return found(value) if callable(found) else found


def nvidia_role_errors(given):
    """One refusal per variable of NVIDIA's role in ``given`` ({name: value}, as the host sets them), in the
    table's order: ``name=value (allowed: unset: ...): set <gpufleet variable>: <value> instead``."""
    return [
        bad(name, shown(given[name]), ALLOWED, instead(name, given[name]))
        for name in NVIDIA_ROLE
        if name in given
    ]
