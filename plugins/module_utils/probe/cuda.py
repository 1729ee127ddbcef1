# Copyright: gpufleet contributors
# Apache-2.0
"""CUDA toolkits under a root: /usr/local/cuda-*, /opt/nvidia/cuda*, with version, source and the default."""

from __future__ import annotations

import json
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import owners as probe_owners
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import UNKNOWN, run_command

TOOLKIT_PARENTS = ("/usr/local", "/opt/nvidia", "/opt")
TOOLKIT_NAME = re.compile(r"^cuda(-\d+(\.\d+)?)?$")


def version_from_json(text):
    data = json.loads(text)
    value = data.get("cuda", {}).get("version")
    if not isinstance(value, str) or not re.match(r"^\d+\.\d+", value):
        raise ValueError("no cuda.version in version.json")
    return value


def version_from_cuda_h(text):
    match = re.search(r"^#define\s+CUDA_VERSION\s+(\d+)\s*$", text or "", re.MULTILINE)
    if not match:
        return None
    value = int(match.group(1))
    return f"{value // 1000}.{(value % 1000) // 10}"


def version_from_nvcc(text):
    match = re.search(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)", text or "")
    return match.group(2) if match else None


def _from_version_files(root, path, reasons):
    """(version, version_from) from version.json, else version.txt; None when neither answers."""
    if root.exists(path + "/version.json"):
        text, reason = root.read_text(path + "/version.json")
        if text is not None:
            try:
                return version_from_json(text), "version.json"
            except (ValueError, AttributeError) as exc:
                reasons.append(f"{path}/version.json: {exc}")
        else:
            reasons.append(reason)
    if root.exists(path + "/version.txt"):
        text, _reason = root.read_text(path + "/version.txt")
        match = re.search(r"CUDA Version (\d+\.\d+\.\d+)", text or "")
        if match:
            return match.group(1), "version.txt"
    return None


def _from_cuda_h(root, path, reasons):
    for header in (
        path + "/include/cuda.h",
        path + "/targets/x86_64-linux/include/cuda.h",
        path + "/targets/sbsa-linux/include/cuda.h",
    ):
        if root.exists(header):
            text, reason = root.read_text(header)
            version = version_from_cuda_h(text)
            if version:
                return version, "cuda.h"
            reasons.append(reason or f"{header}: no CUDA_VERSION")
            return None
    return None


def _from_nvcc(root, path, live, reasons):
    nvcc = path + "/bin/nvcc"
    if not root.exists(nvcc):
        return None
    if not live:
        reasons.append("nvcc not run: root is not /")
        return None
    rc, out, _err, reason = run_command([root.outer(nvcc), "--version"], timeout=10)
    version = version_from_nvcc(out) if rc == 0 else None
    if version:
        return version, "nvcc"
    reasons.append(reason or "nvcc --version: unrecognized output")
    return None


def toolkit_version(root, path, live):
    """(version, version_from, reason)."""
    reasons = []
    found = (
        _from_version_files(root, path, reasons)
        or _from_cuda_h(root, path, reasons)
        or _from_nvcc(root, path, live, reasons)
    )
    if found:
        return found[0], found[1], None
    return UNKNOWN, "unknown", "; ".join(reasons) or f"no version.json, cuda.h or nvcc in {path}"


def _package_by_name(packages, major_minor):
    """The package of a toolkit by NVIDIA's names, for a database without file lists (fallback only)."""
    if major_minor == UNKNOWN:
        return None
    suffix = major_minor.replace(".", "-")
    for name in (f"cuda-toolkit-{suffix}", f"cuda-nvcc-{suffix}", f"cuda-cudart-{suffix}"):
        if packages.get(name):
            return packages.get(name)
    return None


def toolkit_owner(root, packages, path, major_minor):
    """(owner, package): the tree's owner (probe/owners.py), else a package named for its version."""
    owner = probe_owners.owner_of_tree(root, packages, path)
    if owner["kind"] == "package":
        return owner, packages.get(owner["name"])
    package = _package_by_name(packages, major_minor) if owner["kind"] == "unknown" else None
    if package:
        owner = probe_owners.package_owner(package)
        owner["words"] += " (by its name: no package file list names the tree)"
    return owner, package


def find_toolkits(root):
    seen = {}
    for parent in TOOLKIT_PARENTS:
        names, _reason = root.listdir(parent)
        for name in names or ():
            if not TOOLKIT_NAME.match(name):
                continue
            path = f"{parent}/{name}"
            real, reason = root.realpath(path)
            if reason or not root.isdir(real):
                continue
            if (
                root.exists(real + "/bin/nvcc")
                or root.exists(real + "/version.json")
                or root.exists(real + "/include/cuda.h")
                or root.exists(real + "/targets")
            ):
                seen.setdefault(real, path)
    return sorted(seen)


def forward_compat(root, packages, path, major_minor):
    """The toolkit's CUDA forward-compatibility libraries (NVIDIA's cuda-compat-<M>-<m> package installs
    <toolkit>/compat/libcuda.so.<driver version>): {path, libcuda, libcuda_version, package} or None."""
    compat = path + "/compat"
    names, _reason = root.listdir(compat) if root.isdir(compat) else (None, None)
    versions = sorted(
        (
            m.group(1)
            for m in (re.match(r"^libcuda\.so\.(\d{3}\.\d+(?:\.\d+)?)$", n) for n in names or ())
            if m
        ),
        key=lambda v: tuple(int(p) for p in v.split(".")),
    )
    package = packages.get("cuda-compat-" + major_minor.replace(".", "-")) if major_minor != UNKNOWN else None
    if not versions and not package:
        return None
    return {
        "path": compat,
        "libcuda": f"{compat}/libcuda.so.{versions[-1]}" if versions else None,
        "libcuda_version": versions[-1] if versions else None,
        "package": packages.public(package),
    }


def release_hold(packages, source, major_minor):
    """{packages, held} of a package-installed toolkit: how many packages of its release are installed
    (NVIDIA names each <name>-X-Y, deb and rpm alike: cuda-nvcc-13-0, libcublas-13-0, cuda-toolkit-13-0) and
    how many of them are held (dpkg hold, dnf versionlock: probe/packages.py); None for a tree no package
    installed."""
    if source not in ("deb", "rpm") or major_minor == UNKNOWN:
        return None
    suffix = "-" + major_minor.replace(".", "-")
    found = [p for p in packages.all().values() if p["name"].endswith(suffix)]
    if not found:
        return None
    return {"packages": len(found), "held": sum(1 for p in found if p.get("held"))}


def probe(root, live, packages):
    cuda = {"toolkits": [], "default": None, "reasons": {}}
    for path in find_toolkits(root):
        version, version_from, reason = toolkit_version(root, path, live)
        major_minor = ".".join(version.split(".")[:2]) if version != UNKNOWN else UNKNOWN
        owner, package = toolkit_owner(root, packages, path, major_minor)
        if package:
            source = package["manager"]
        elif owner["kind"] == "runfile":
            source = "runfile"
        elif owner["kind"] == "gpufleet" or version_from == "version.json":
            source = "redist"
        else:
            source = UNKNOWN
        toolkit = {
            "path": path,
            "version": version,
            "major_minor": major_minor,
            "version_from": version_from,
            "source": source,
            "package": packages.public(package),
            "nvcc": root.exists(path + "/bin/nvcc"),
            "gpufleet_marker": owner["kind"] == "gpufleet",
            "owner": owner,
            "compat": forward_compat(root, packages, path, major_minor),
            "hold": release_hold(packages, source, major_minor),
            "reasons": {},
        }
        if reason:
            toolkit["reasons"]["version"] = reason
        if source == UNKNOWN:
            toolkit["reasons"]["source"] = (
                f"no package owns {path}/bin/nvcc or its headers, no runfile uninstaller, no version.json"
            )
        cuda["toolkits"].append(toolkit)
    if root.exists("/usr/local/cuda"):
        target, reason = root.realpath("/usr/local/cuda")
        link = root.readlink("/usr/local/cuda")
        via = "alternatives" if link and "/etc/alternatives/" in link else "symlink" if link else "directory"
        version = UNKNOWN
        for toolkit in cuda["toolkits"]:
            if toolkit["path"] == target:
                version = toolkit["version"]
        cuda["default"] = {"path": "/usr/local/cuda", "target": target, "version": version, "via": via}
        if reason:
            cuda["reasons"]["default"] = f"/usr/local/cuda: {reason}"
    else:
        cuda["reasons"]["default"] = "/usr/local/cuda does not exist"
    return cuda
