#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
"""Ansible module nvidia_driver_state: the NVIDIA driver's state on a host and the plan to reach a request."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_state
short_description: Read the NVIDIA driver state of a host and plan the driver install
description:
  - Reads the loaded kernel module (C(/proc/driver/nvidia/version), C(/sys/module/nvidia/version)), the module
    installed for the running kernel (C(modinfo)), the installed and held driver packages, runfile leftovers,
    container markers, read-only driver mounts (host-managed drivers), Secure Boot, NVSwitches and nouveau.
  - Validates the requested driver (branch, exact version, kernel module flavor, reboot policy, MOK files) and
    returns every refusal as a one-line message naming the variable; with O(fail_on_error=true) (default) the
    module fails with them before anything is changed.
  - Computes the install plan (packages, dnf module stream, holds, fabric manager, initramfs command) from
    C(plugins/module_utils/plan/driver.py) and the reboot decision for the policy.
  - Changes nothing; check mode is fully supported.
version_added: "0.1.0"
author: gpufleet maintainers
options:
  branch:
    description: Requested driver branch (C(580), C(R580)).
    type: str
    required: true
  version:
    description: Optional exact driver version inside O(branch) (C(580.95.05)).
    type: str
  kernel_module:
    description:
      - Requested kernel module flavor.
      - C(auto) takes O(recommended_kernel_module), else NVIDIA's default for the branch.
    type: str
    default: auto
  recommended_kernel_module:
    description: Flavor recommended by C(nvidia_compat) for this host's GPUs (C(open) or C(proprietary)).
    type: str
  source:
    description: Where packages come from, C(nvidia_repo) or C(distro).
    type: str
    default: nvidia_repo
  reboot:
    description: Reboot policy C(auto), C(never) or C(always).
    type: str
    default: auto
  distribution:
    description: The OS distribution (C(ansible_facts['distribution'])).
    type: str
    required: true
  distribution_version:
    description: The OS version (C(ansible_facts['distribution_version']), e.g. C(24.04), C(12), C(9.4)).
    type: str
    required: true
  ubuntu_server:
    description: On Ubuntu's archive, use the C(-server) (data-center) driver packages.
    type: bool
    default: true
  fabricmanager:
    description: Plan fabric manager packages; C(auto) when NVSwitches are present.
    type: str
    default: auto
    choices: [auto, "true", "false"]
  dcgm:
    description: Plan DCGM packages.
    type: bool
    default: false
  build_kernel_module:
    description: Plan kernel module packages and headers; C(auto) = not in a container.
    type: str
    default: auto
    choices: [auto, "true", "false"]
  replace_runfile:
    description: Allow replacing a runfile-installed driver.
    type: bool
    default: false
  mok_key:
    description: Path on the host of the MOK private key used to sign DKMS modules under Secure Boot.
    type: path
  mok_cert:
    description: Path on the host of the MOK certificate matching O(mok_key).
    type: path
  is_controller:
    description: The host is the Ansible controller itself (never rebooted).
    type: bool
    default: false
  changed:
    description: Whether this run changed driver packages or kernel configuration (for the C(always) policy).
    type: bool
    default: false
  fail_on_error:
    description: Fail when the request is refused (the errors are in the message).
    type: bool
    default: true
  root:
    description: Root of the file system to read (tests).
    type: path
    default: /
notes:
  - Supports check mode; reads only.
"""

EXAMPLES = r"""
- name: Read the driver state and plan branch 580
  gpufleet.nvidia.nvidia_driver_state:
    branch: "580"
    kernel_module: auto
    source: nvidia_repo
    distribution: "{{ ansible_facts['distribution'] }}"
    distribution_version: "{{ ansible_facts['distribution_version'] }}"
  register: __nvidia_driver_state

- name: Show the reboot decision
  ansible.builtin.debug:
    msg: "{{ __nvidia_driver_state.reboot.reason }}"
"""

RETURN = r"""
state:
  description: What is on the host.
  returned: always
  type: dict
  contains:
    loaded_version: {description: Loaded module version or null, type: str}
    loaded_flavor: {description: open, proprietary or null, type: str}
    installed_version: {description: Version of the nvidia module installed for the running kernel, type: str}
    installed_flavor: {description: Flavor of that module, type: str}
    kernel_release: {description: Running kernel, type: str}
    packages: {description: Installed driver packages name -> version, type: dict}
    held_packages: {description: Held (apt) packages among them, type: list}
    installed_branches: {description: Branches of installed driver packages, type: list}
    nvml_paths: {description: libnvidia-ml.so.1 copies found, type: list}
    nvml_owned_by_package: {description: A package owns one of them, type: bool}
    container: {description: Container markers found, type: bool}
    container_markers: {description: Which markers, type: list}
    readonly_driver_mount: {description: Read-only mount holding the driver libraries or null, type: str}
    host_managed: {description: The driver is provided from outside and must not be touched, type: bool}
    host_managed_reasons: {description: Why, type: list}
    runfile_markers: {description: Runfile leftovers found, type: list}
    secure_boot: {description: Secure Boot enabled (null without EFI), type: bool}
    efi: {description: The host booted with EFI, type: bool}
    nvswitch_count: {description: NVSwitch PCI devices, type: int}
    gpu_count: {description: NVIDIA display/3D PCI devices, type: int}
    nouveau_loaded: {description: The nouveau module is loaded, type: bool}
plan:
  description: The install plan (see plugins/module_utils/plan/driver.py build_plan), null when refused.
  returned: always
  type: dict
flavor:
  description: The resolved kernel module flavor.
  returned: always
  type: str
reboot:
  description: The reboot decision C({reboot, needed, reason}).
  returned: always
  type: dict
errors:
  description: Refusals, one line each, naming the variable.
  returned: always
  type: list
warnings_list:
  description: Warnings (also emitted as Ansible warnings).
  returned: always
  type: list
runfile:
  description: C({conflict, message}).
  returned: always
  type: dict
transition:
  description:
    - C({kind, unhold, remove, from_branches}); kind is none, install, branch_change or flavor_switch.
  returned: when a plan was made
  type: dict
"""

import glob
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp

NVML = "libnvidia-ml.so.1"
NVML_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
)
SECURE_BOOT_VAR = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
CONTAINER_FILES = ("/.dockerenv", "/run/.containerenv")
_BRANCH_IN_NAME = re.compile(r"-(\d{3})(?:-|$)")


def _p(root, path):
    return os.path.join(root, path.lstrip("/"))


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def probe(module, root, runner=None):
    """Everything the plan needs to know about the host (reads; never fails).

    ``runner(argv) -> (rc, stdout, stderr)`` replaces command execution (tests); by default commands run
    with LC_ALL=C, and not at all when ``root`` is not "/".
    """
    env = {"LC_ALL": "C", "LANG": "C"}

    def default_run(args):
        if root != "/":
            return 1, "", ""
        binary = module.get_bin_path(args[0])
        if binary is None:
            return 127, "", ""
        return module.run_command([binary, *args[1:]], environ_update=env)

    run = runner or default_run

    state = {}
    proc = dp.parse_proc_version(_read(_p(root, "/proc/driver/nvidia/version")))
    sys_version = (_read(_p(root, "/sys/module/nvidia/version")) or "").strip() or None
    state["loaded_version"] = proc["version"] or sys_version
    state["loaded_flavor"] = proc["flavor"]
    release = (_read(_p(root, "/proc/sys/kernel/osrelease")) or "").strip()
    state["kernel_release"] = release or (os.uname().release if root == "/" else "")

    rc, out, _err = run(["modinfo", "-F", "version", "nvidia"])
    state["installed_version"] = (out.strip() or None) if rc == 0 else None
    rc, out, _err = run(["modinfo", "-F", "license", "nvidia"])
    state["installed_flavor"] = dp.flavor_from_license(out) if rc == 0 else None

    packages, held = {}, []
    rc, out, _err = run(
        [
            "dpkg-query",
            "-W",
            "-f",
            "${Package}\t${Version}\t${db:Status-Abbrev}\n",
            "nvidia-*",
            "libnvidia-*",
            "cuda-drivers*",
            "linux-modules-nvidia-*",
            "libcuda1",
            "firmware-nvidia-gsp",
            "datacenter-gpu-manager*",
        ]
    )
    if rc in (0, 1) and out:
        for line in out.splitlines():
            fields = line.split("\t")
            if len(fields) < 3 or not fields[1] or fields[2][1:2] != "i":
                continue
            packages[fields[0]] = fields[1]
            if fields[2][:1] == "h":
                held.append(fields[0])
    else:
        rc, out, _err = run(
            [
                "rpm",
                "-qa",
                "--qf",
                "%{NAME}\t%{VERSION}-%{RELEASE}\n",
                "nvidia-*",
                "kmod-nvidia*",
                "cuda-drivers*",
                "libnvidia-*",
                "datacenter-gpu-manager*",
            ]
        )
        if rc == 0:
            for line in out.splitlines():
                fields = line.split("\t")
                if len(fields) == 2:
                    packages[fields[0]] = fields[1]
    state["packages"] = packages
    state["held_packages"] = sorted(held)
    branches = set()
    for name, version in packages.items():
        match = _BRANCH_IN_NAME.search(name)
        if match and name.startswith(("nvidia-", "cuda-drivers", "linux-modules-nvidia")):
            branches.add(match.group(1))
        elif name in ("nvidia-open", "cuda-drivers", "libcuda1", "nvidia-smi", "nvidia-driver"):
            branch = dp.branch_of(version.split(":")[-1].split("-")[0])
            if branch:
                branches.add(branch)
    state["installed_branches"] = sorted(branches)

    nvml = []
    for directory in NVML_DIRS:
        candidate = os.path.join(directory, NVML)
        if os.path.exists(_p(root, candidate)) and candidate not in nvml:
            nvml.append(candidate)
    state["nvml_paths"] = nvml
    owned = False
    for path in nvml:
        for candidate in {path, os.path.realpath(path) if root == "/" else path}:
            rc, _out, _err = run(["dpkg-query", "-S", candidate])
            if rc != 0:
                rc, _out, _err = run(["rpm", "-qf", candidate])
            if rc == 0:
                owned = True
    state["nvml_owned_by_package"] = owned

    markers = [f for f in CONTAINER_FILES if os.path.exists(_p(root, f))]
    cgroup = _read(_p(root, "/proc/1/cgroup")) or ""
    if re.search(r"docker|kubepods|containerd|libpod|lxc", cgroup):
        markers.append("/proc/1/cgroup")
    environ = _read(_p(root, "/proc/1/environ")) or ""
    if "container=" in environ:
        markers.append("/proc/1/environ container=")
    state["container"] = bool(markers)
    state["container_markers"] = markers

    state["readonly_driver_mount"] = _readonly_mount(_read(_p(root, "/proc/self/mounts")) or "", nvml)
    managed, reasons = dp.host_managed(
        state["container"], state["loaded_version"], nvml, owned, state["readonly_driver_mount"]
    )
    state["host_managed"] = managed
    state["host_managed_reasons"] = reasons
    state["runfile_markers"] = [m for m in dp.RUNFILE_MARKERS if os.path.exists(_p(root, m))]

    state["efi"] = os.path.isdir(_p(root, "/sys/firmware/efi"))
    state["secure_boot"] = None
    if state["efi"]:
        try:
            with open(_p(root, SECURE_BOOT_VAR), "rb") as handle:
                data = handle.read()
            state["secure_boot"] = bool(data) and data[-1] == 1
        except OSError:
            state["secure_boot"] = False

    nvswitch = gpus = 0
    for device in glob.glob(_p(root, "/sys/bus/pci/devices/*")):
        vendor = (_read(os.path.join(device, "vendor")) or "").strip().lower()
        klass = (_read(os.path.join(device, "class")) or "").strip().lower()
        if vendor != "0x10de":
            continue
        if klass.startswith("0x0680"):
            nvswitch += 1
        elif klass.startswith(("0x0300", "0x0302")):
            gpus += 1
    state["nvswitch_count"] = nvswitch
    state["gpu_count"] = gpus
    state["nouveau_loaded"] = os.path.isdir(_p(root, "/sys/module/nouveau"))
    return state


def _readonly_mount(mounts_text, paths):
    """The mount point of the longest read-only mount holding one of ``paths`` (or None)."""
    best = None
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        point = fields[1].replace("\\040", " ")
        options = fields[3].split(",")
        if "ro" not in options or point == "/":
            continue
        for path in paths:
            if (path == point or path.startswith(point.rstrip("/") + "/")) and (
                best is None or len(point) > len(best)
            ):
                best = point
    return best


def decide(params, state):
    """Validation, plan and reboot decision from the parameters and the probed state."""
    errors, warnings = [], []
    try:
        os_name = dp.os_key(
            params["distribution"], _major(params["distribution"], params["distribution_version"])
        )
    except dp.DriverPlanError as exc:
        return {
            "errors": [str(exc)],
            "warnings": [],
            "plan": None,
            "flavor": None,
            "reboot": None,
            "runfile": None,
        }
    mok_paths = {
        p: os.path.isfile(_p(params["root"], p)) for p in (params["mok_key"], params["mok_cert"]) if p
    }
    errors += dp.validate_request(
        os_name,
        params["source"],
        params["branch"],
        kernel_module=params["kernel_module"],
        version=params["version"],
        reboot=params["reboot"],
        mok_key=params["mok_key"],
        mok_cert=params["mok_cert"],
        mok_paths_exist=mok_paths,
    )
    flavor = None
    plan = None
    transition = None
    if not errors:
        branch = dp.parse_branch_value(params["branch"])
        flavor = dp.resolve_flavor(params["kernel_module"], branch, params["recommended_kernel_module"])
        if state["host_managed"]:
            errors += dp.host_managed_mismatch(
                params["branch"],
                params["kernel_module"],
                params["version"],
                state["loaded_version"],
                state["loaded_flavor"],
            )
            if state["loaded_flavor"]:
                flavor = state["loaded_flavor"]
        build = params["build_kernel_module"]
        build_kernel = (not state["container"]) if build == "auto" else build == "true"
        fabric = params["fabricmanager"]
        want_fm = state["nvswitch_count"] > 0 if fabric == "auto" else fabric == "true"
        try:
            plan = dp.build_plan(
                os_name,
                params["source"],
                branch,
                flavor,
                version=params["version"],
                kernel_release=state["kernel_release"],
                ubuntu_server=params["ubuntu_server"],
                fabricmanager=want_fm,
                dcgm=params["dcgm"],
                build_kernel_module=build_kernel,
            )
        except dp.DriverPlanError as exc:
            errors.append(str(exc))
        if plan is not None and state["host_managed"]:
            # Nothing is installed on a host-managed driver: the plan is informative only.
            transition = {"kind": "none", "unhold": [], "remove": [], "from_branches": []}
        elif plan is not None:
            warnings += plan["warnings"]
            transition = dp.transition(
                plan, state["packages"], state["installed_branches"], state["held_packages"]
            )
            if (
                not state["host_managed"]
                and state["secure_boot"]
                and plan["module_signing_needed_with_secure_boot"]
                and not params["mok_key"]
            ):
                errors.append(
                    "Secure Boot is enabled and the plan builds the nvidia module with DKMS (unsigned): set "
                    "nvidia_driver_mok_key and nvidia_driver_mok_cert to a MOK key pair enrolled with "
                    "'mokutil --import <cert>' (then reboot to confirm), or disable Secure Boot"
                )
    conflict, message = dp.runfile_conflict(
        state["runfile_markers"], state["nvml_owned_by_package"], params["replace_runfile"]
    )
    if conflict and not state["host_managed"]:
        errors.append(message)
    elif message:
        warnings.append(message)
    reboot = dp.reboot_decision(
        params["reboot"] if params["reboot"] in dp.REBOOT_POLICIES else "never",
        state["loaded_version"],
        state["loaded_flavor"],
        state["installed_version"],
        state["installed_flavor"],
        changed=params["changed"],
        is_controller=params["is_controller"],
        is_container=state["container"],
        host_managed_driver=state["host_managed"],
    )
    return {
        "errors": errors,
        "warnings": warnings,
        "plan": plan,
        "flavor": flavor,
        "reboot": reboot,
        "runfile": {"conflict": conflict, "message": message},
        "transition": transition,
    }


def _major(distribution, version):
    version = str(version or "")
    if str(distribution).lower() == "ubuntu":
        return ".".join(version.split(".")[:2])
    return version.split(".")[0]


def main():
    module = AnsibleModule(
        argument_spec={
            "branch": {"type": "str", "required": True},
            "version": {"type": "str"},
            "kernel_module": {"type": "str", "default": "auto"},
            "recommended_kernel_module": {"type": "str"},
            "source": {"type": "str", "default": "nvidia_repo"},
            "reboot": {"type": "str", "default": "auto"},
            "distribution": {"type": "str", "required": True},
            "distribution_version": {"type": "str", "required": True},
            "ubuntu_server": {"type": "bool", "default": True},
            "fabricmanager": {"type": "str", "default": "auto", "choices": ["auto", "true", "false"]},
            "dcgm": {"type": "bool", "default": False},
            "build_kernel_module": {"type": "str", "default": "auto", "choices": ["auto", "true", "false"]},
            "replace_runfile": {"type": "bool", "default": False},
            "mok_key": {"type": "path"},
            "mok_cert": {"type": "path"},
            "is_controller": {"type": "bool", "default": False},
            "changed": {"type": "bool", "default": False},
            "fail_on_error": {"type": "bool", "default": True},
            "root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    params = dict(module.params)
    state = probe(module, params["root"])
    result = decide(params, state)
    for warning in result["warnings"]:
        module.warn(warning)
    output = {
        "changed": False,
        "state": state,
        "plan": result["plan"],
        "flavor": result["flavor"],
        "reboot": result["reboot"],
        "errors": result["errors"],
        "warnings_list": result["warnings"],
        "runfile": result["runfile"],
        "transition": result["transition"],
    }
    if result["errors"] and params["fail_on_error"]:
        module.fail_json(msg="; ".join(result["errors"]), **output)
    module.exit_json(**output)


if __name__ == "__main__":
    main()
