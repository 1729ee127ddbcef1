# Copyright: gpufleet contributors
# Apache-2.0
"""The request of the driver plan: the role's variables, their defaults and every refusal about them.

Validation (choices, branch, exact version, MOK files, the ``auto|true|false`` switches), branch parsing and
the kernel module flavor. Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver as kb_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver_packages as kb_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import host_state
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import (
    VersionError,
    parse_version,
)

SOURCES = ("nvidia_repo", "distro")
FLAVORS = ("auto", "open", "proprietary")
REBOOT_POLICIES = ("auto", "never", "always")
TRISTATE = ("auto", "true", "false")
EXISTING_POLICIES = ("refuse", "replace")


# The role's variables (nvidia_driver_<key>) a plan is made from, without the prefix: plan/roles.py builds the
# request from the role's variables (their defaults are the role's defaults/main.yml, read by the nvidia_plan
# action), plus is_controller (the host is the Ansible controller). The MOK files are judged from the facts
# (driver.mok_files), not from the request.
REQUEST_KEYS = (
    "source",
    "branch",
    "version",
    "kernel_module",
    "reboot",
    "ubuntu_server",
    "fabricmanager",
    "dcgm",
    "build_kernel_module",
    "replace_runfile",
    "existing",
    "mok_key",
    "mok_cert",
    "hold",
    "persistenced",
    "debian_mirror",
    "install_without_gpu",
)


class DriverPlanError(ValueError):
    """A request no plan can serve (the message names the variable, the value and what is allowed)."""


def os_label(os_name):
    return kb_hosts.OS_TABLE[os_name]["label"]


def family_of(os_name):
    return kb_hosts.OS_TABLE[os_name]["family"]


def available_branches(os_name, source):
    """Branches ``source`` packages for ``os_name`` (sorted ints)."""
    if source == "nvidia_repo":
        first = kb_packages.NVIDIA_REPO_FIRST_BRANCH[os_name]
        return [b for b in sorted(kb_driver.DRIVER_BRANCHES) if b >= first]
    family = family_of(os_name)
    if family == "ubuntu":
        return list(kb_packages.UBUNTU_ARCHIVE_BRANCHES[os_name])
    if family == "debian":
        return [kb_packages.DEBIAN_ARCHIVE_BRANCH[os_name]]
    return []


def parse_branch_value(value, param="nvidia_driver_branch"):
    """'580' / 'R580' / 580 -> 580; anything else (e.g. '58O', '580.95') -> DriverPlanError."""
    try:
        return parse_version(value, param, 1, 1).major
    except VersionError as exc:
        raise DriverPlanError(str(exc)) from None


def branch_of(version):
    """'580.159.04' -> '580' (None if not a version)."""
    if not version:
        return None
    try:
        return str(parse_version(version, "driver version").major)
    except VersionError:
        return None


def _choice_errors(source, kernel_module, reboot):
    errors = []
    if source not in SOURCES:
        errors.append(bad("nvidia_driver_source", source, ", ".join(SOURCES)))
    if kernel_module not in FLAVORS:
        errors.append(bad("nvidia_driver_kernel_module", kernel_module, ", ".join(FLAVORS)))
    if reboot not in REBOOT_POLICIES:
        errors.append(bad("nvidia_driver_reboot", reboot, ", ".join(REBOOT_POLICIES)))
    return errors


def _branch_errors(os_name, source, branch, branch_int, kernel_module):
    errors = []
    if branch_int is None or source not in SOURCES or os_name not in kb_hosts.OS_TABLE:
        return errors
    avail = available_branches(os_name, source)
    if branch_int not in avail:
        hint = ""
        if source == "distro" and family_of(os_name) == "debian":
            hint = " (Debian ships one branch per release; use nvidia_driver_source: nvidia_repo for others)"
        elif source == "distro" and family_of(os_name) == "rhel":
            hint = " (RHEL has no distribution driver; use nvidia_driver_source: nvidia_repo)"
        errors.append(
            f"nvidia_driver_branch: {branch!r} is not a driver branch {source} packages for "
            f"{os_label(os_name)}; available: {', '.join(str(b) for b in avail) or 'none'}{hint}"
        )
    first_open = kb_driver.OPEN_MODULES_FIRST_BRANCH
    if kernel_module == "open" and branch_int < first_open:
        errors.append(
            f"nvidia_driver_kernel_module: 'open' needs branch >= {first_open}, "
            f"nvidia_driver_branch is {branch!r}; use proprietary or a newer branch"
        )
    return errors


def _version_errors(version, branch, branch_int):
    if version in (None, ""):
        return []
    try:
        parsed = parse_version(version, "nvidia_driver_version", 2, 3)
    except VersionError as exc:
        return [str(exc)]
    if branch_int is not None and parsed.major != branch_int:
        return [
            f"nvidia_driver_version: {version!r} is not in nvidia_driver_branch {branch!r}; "
            f"set nvidia_driver_branch: '{parsed.major}' or a {branch_int}.x version"
        ]
    return []


# What a MOK file must hold, per variable (facts driver.mok_files, probe/mok.py): the key a PEM private key,
# the certificate an X.509 certificate (PEM or DER).
_MOK_MUST = {
    "nvidia_driver_mok_key": ("private_key", 'is not a private key (PEM "-----BEGIN PRIVATE KEY-----")'),
    "nvidia_driver_mok_cert": ("certificate", "is not an X.509 certificate (PEM or DER)"),
}


def _mok_errors(mok_key, mok_cert, mok_files):
    errors = []
    for name, path in (("nvidia_driver_mok_key", mok_key), ("nvidia_driver_mok_cert", mok_cert)):
        found = (mok_files or {}).get(path) if path else None
        if not isinstance(found, dict):  # not given, or not in the facts: not judged
            continue
        kind, wrong = _MOK_MUST[name]
        if not found.get("exists"):
            errors.append(f"{name}: {path!r} does not exist on the host; give the path of an existing file")
        elif found.get(kind) is False:
            errors.append(f"{name}: {path!r} {wrong}")
    if bool(mok_key) != bool(mok_cert):
        errors.append(
            "nvidia_driver_mok_key and nvidia_driver_mok_cert: give both "
            "(private key and DER/PEM certificate) or neither"
        )
    return errors


def validate_request(
    os_name,
    source,
    branch,
    *,
    kernel_module="auto",
    version=None,
    reboot="auto",
    mok_key=None,
    mok_cert=None,
    mok_files=None,
    is_controller=False,
):
    """Every refusal about the variables, as a list of one-line messages (empty = fine).

    ``mok_files`` is the facts' ``driver.mok_files`` ({path: {exists, private_key, certificate,
    certificate_sha256}}, probe/mok.py): a MOK path in it must exist and hold what its variable needs (the
    key a PEM private key, the certificate PEM or DER); a path not in it is not judged. By variable, not by
    path: one file given as both is a certificate or a key, never both.
    ``is_controller``: the host is the Ansible controller, which auto/always would reboot.
    """
    errors = _choice_errors(source, kernel_module, reboot)
    if is_controller and reboot in ("auto", "always"):
        errors.append(
            f"nvidia_driver_reboot: {reboot!r} would reboot the Ansible controller itself (connection local "
            "or localhost); set nvidia_driver_reboot: never and reboot it yourself"
        )
    branch_int = None
    try:
        branch_int = parse_branch_value(branch)
    except DriverPlanError as exc:
        errors.append(str(exc))
    errors += _branch_errors(os_name, source, branch, branch_int, kernel_module)
    errors += _version_errors(version, branch, branch_int)
    errors += _mok_errors(mok_key, mok_cert, mok_files)
    return errors


def tristate(value, name):
    """auto/true/false (also YAML booleans) -> 'auto'|'true'|'false'; DriverPlanError naming the variable."""
    text = str(value).strip().lower() if value is not None else "auto"
    if text in ("yes", "on", "1"):
        text = "true"
    elif text in ("no", "off", "0"):
        text = "false"
    if text not in TRISTATE:
        raise DriverPlanError(bad(f"nvidia_driver_{name}", value, ", ".join(TRISTATE)))
    return text


def resolve_flavor(requested, branch, recommended=None):
    """The kernel module flavor to install.

    ``requested`` open/proprietary is kept (nvidia_compat refuses impossible ones); ``auto`` takes
    ``recommended`` (from nvidia_compat, which knows the GPUs) when given, else NVIDIA's default for the
    branch (kb/driver.py OPEN_MODULES_DEFAULT_FROM).
    """
    branch = int(branch)
    if requested in ("open", "proprietary"):
        return requested
    if recommended in ("open", "proprietary"):
        return recommended
    if branch >= kb_driver.OPEN_MODULES_DEFAULT_FROM:
        return "open"
    return "proprietary"


def normalize_request(request):
    """The request with every key of REQUEST_KEYS (a missing one is a caller's bug: KeyError), its texts as
    text; is_controller false unless given."""
    req = {key: request[key] for key in REQUEST_KEYS}
    req["is_controller"] = bool(request.get("is_controller"))
    for key in ("version", "mok_key", "mok_cert", "debian_mirror"):
        req[key] = str(req[key] or "")
    req["branch"] = str(req["branch"])
    req["install_without_gpu"] = bool(req["install_without_gpu"])
    return req


def _switch_errors(req):
    errors = []
    for key in ("fabricmanager", "build_kernel_module"):
        try:
            tristate(req[key], key)
        except DriverPlanError as exc:
            errors.append(str(exc))
    if req["existing"] not in EXISTING_POLICIES:
        errors.append(bad("nvidia_driver_existing", req["existing"], ", ".join(EXISTING_POLICIES)))
    return errors


def variable_errors(request):
    """The refusals that need no host (neither its OS nor its facts): choices, the branch, the version on
    the branch, the auto|true|false switches. What nvidia_plan checks before it gathers anything."""
    req = normalize_request(request)
    errors = _choice_errors(req["source"], req["kernel_module"], req["reboot"])
    branch_int = None
    try:
        branch_int = parse_branch_value(req["branch"])
    except DriverPlanError as exc:
        errors.append(str(exc))
    return errors + _version_errors(req["version"], req["branch"], branch_int) + _switch_errors(req)


def validate(request, facts):
    """Every refusal about the request on this host's OS (one line each, naming the variable)."""
    req, state = normalize_request(request), host_state(facts)
    os_name = state["os_key"]
    if os_name not in kb_hosts.OS_TABLE:
        shown = f"{state['distribution'] or 'unknown'} {state['os_version'] or ''}".strip()
        return [
            f"operating system: {shown} is not supported by nvidia_driver; supported: {kb_hosts.SUPPORTED_OS}"
        ]
    errors = validate_request(
        os_name,
        req["source"],
        req["branch"],
        kernel_module=req["kernel_module"],
        version=req["version"],
        reboot=req["reboot"],
        mok_key=req["mok_key"],
        mok_cert=req["mok_cert"],
        mok_files=state["mok_files"],
        # a container or a host-managed driver is never rebooted by the role: nothing to refuse there
        is_controller=bool(req["is_controller"]) and not state["container"] and not state["host_managed"],
    )
    return errors + _switch_errors(req)


def secure_boot_errors(req, state):
    """(errors, warnings) when Secure Boot is on and DKMS builds the module: a MOK pair must be given, and
    its certificate must be one that shim hands to the kernel (the facts' mok_enrolled, from MokListRT), or
    the module is signed with a key the kernel rejects. A list the facts could not read is a warning."""
    if not req["mok_key"]:
        return [
            "Secure Boot is enabled and the plan builds the nvidia module with DKMS (unsigned): set "
            "nvidia_driver_mok_key and nvidia_driver_mok_cert to a MOK key pair enrolled with "
            "'mokutil --import <cert>' (then reboot to confirm), or disable Secure Boot"
        ], []
    enrolled, cert = state["mok_enrolled"], req["mok_cert"]
    digest = (state["mok_files"].get(cert) or {}).get("certificate_sha256")  # None: not in the facts
    if enrolled is None:
        why = state["mok_enrolled_reason"] or "the facts hold no MOK list"
        return [], [
            f"nvidia_driver_mok_cert: cannot tell whether {cert!r} is enrolled ({why}); the module will not "
            "load under Secure Boot if it is not (mokutil --test-key tells)"
        ]
    if not digest or digest in enrolled:
        return [], []
    return [
        f"nvidia_driver_mok_cert: {cert!r} is not enrolled (shim's MokListRT holds {len(enrolled)} other "
        f"certificate(s)): run 'mokutil --import {cert}', reboot and confirm the enrollment in MokManager, "
        "then run again"
    ], []
