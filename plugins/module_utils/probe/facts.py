# Copyright: gpufleet contributors
# Apache-2.0
"""Assemble `ansible_facts.nvidia` (schema: docs/facts.md) from the probes. Never raises for what it sees."""

from __future__ import annotations

import os
import time

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import cuda as probe_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import cudnn as probe_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import driver as probe_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import gpu as probe_gpu
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import host as probe_host
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import ldcache as probe_ldcache
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import (
    SCHEMA_VERSION,
    Root,
    describe_error,
    new_probe_state,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages, owned_by

SUBSETS = ("gpu", "driver", "cuda", "cudnn")


class SubsetError(ValueError):
    """A gather_subset value that is not allowed (the message says which and what is allowed)."""


def resolve_subsets(requested):
    """Effective subsets from a gather_subset list (`all`, names, `!name`)."""
    requested = list(requested or ["all"])
    include, exclude = set(), set()
    for item in requested:
        text = str(item).strip()
        negate = text.startswith("!")
        name = text[1:] if negate else text
        if name not in SUBSETS and name != "all":
            allowed = ", ".join(SUBSETS)
            raise SubsetError(
                f"gather_subset: {text!r} is not allowed; allowed: all, {allowed} "
                "(each optionally prefixed with '!')"
            )
        names = set(SUBSETS) if name == "all" else {name}
        (exclude if negate else include).update(names)
    if not include:
        include = set(SUBSETS)
    return sorted(include - exclude)


def empty_facts(root_path, subsets):
    return {
        "schema_version": SCHEMA_VERSION,
        "root": root_path,
        "gather_subset": list(subsets),
        "probes": {name: new_probe_state("skipped") for name in ("host", *SUBSETS)},
        "warnings": [],
        "elapsed_ms": 0,
        "host": {
            "container": "unknown",
            "vm": "unknown",
            "driver_managed_externally": None,
            "driver_managed_externally_reason": "",
            "reasons": {},
        },
        "gpus": [],
        "gpu_count": 0,
        "nvswitch_count": 0,
        "fabric_manager_required": False,
        "driver": {},
        "cuda": {},
        "cudnn": [],
        "cudnn_resolved": [],
    }


def _nvml_location(root, ld_entries, packages):
    path = probe_ldcache.resolve(ld_entries, "libnvidia-ml.so.1")
    if path is None:
        return None
    real, _ = root.realpath(path)
    owner = owned_by(packages, path) or owned_by(packages, real)
    return path, real, owner


def gather(
    root_path="/", gather_subset=("all",), *, cudnn_search_paths=(), max_depth=6, timeout=20.0, live=None
):
    """The `nvidia` fact. `live` (run NVML, nvidia-smi, ctypes) defaults to root being `/`."""
    started = time.monotonic()
    subsets = resolve_subsets(gather_subset)
    facts = empty_facts(root_path, subsets)
    root = Root(root_path)
    if live is None:
        live = root.is_slash
    per_call = max(1.0, min(10.0, float(timeout)))

    if not os.path.isdir(root.root):
        reason = (
            f"root {root_path} does not exist"
            if not os.path.exists(root.root)
            else (f"root {root_path} is not a directory")
        )
        for name in facts["probes"]:
            if name == "host" or name in subsets:
                facts["probes"][name] = new_probe_state("unknown", reason)
        facts["warnings"].append(reason)
        facts["elapsed_ms"] = int((time.monotonic() - started) * 1000)
        return facts

    def timed(name, func):
        t0 = time.monotonic()
        state = facts["probes"][name] = new_probe_state("ok")
        try:
            func(state)
        except Exception as exc:  # a probe bug must not fail the host: report it
            state.update(state="unknown", reason=f"probe error: {describe_error(exc)}")
            facts["warnings"].append(f"{name} probe error: {describe_error(exc)}")
        state["elapsed_ms"] = int((time.monotonic() - t0) * 1000)

    shared = {}

    def need_packages():
        if "packages" not in shared:
            shared["packages"] = Packages(root)
            for reason in shared["packages"].reasons:
                facts["warnings"].append(f"package database: {reason}")
        return shared["packages"]

    def need_ld():
        if "ld" not in shared:
            shared["ld"], shared["ld_reason"] = probe_ldcache.load_ld_cache(root)
        return shared["ld"]

    def do_host(state):
        facts["host"] = probe_host.probe(root, live)

    timed("host", do_host)

    gpu_driver_info = {"driver_version": None, "cuda_driver_version_int": None, "reason": None}
    if "gpu" in subsets or "driver" in subsets:

        def do_gpu(state):
            gpus, nvswitches, info, reasons = probe_gpu.probe(root, live, timeout=per_call)
            gpu_driver_info.update(info)
            if "gpu" in subsets:
                facts["gpus"] = gpus
                facts["gpu_count"] = len(gpus)
                facts["nvswitch_count"] = nvswitches
                facts["fabric_manager_required"] = nvswitches > 0
                if reasons:
                    state.update(state="partial", reason="; ".join(reasons))

        timed("gpu", do_gpu)
        if "gpu" not in subsets:
            facts["probes"]["gpu"] = new_probe_state("skipped")

    if "driver" in subsets:

        def do_driver(state):
            packages = need_packages()
            ld = need_ld()
            facts["driver"] = probe_driver.probe(
                root,
                live,
                packages,
                nvml=_nvml_location(root, ld, packages),
                gpu_driver_info=gpu_driver_info,
                host=facts["host"],
                timeout=per_call,
            )
            if shared.get("ld_reason") or packages.reasons:
                state.update(
                    state="partial",
                    reason="; ".join(r for r in [shared.get("ld_reason"), *packages.reasons] if r),
                )

        timed("driver", do_driver)
    else:
        facts["host"]["reasons"].setdefault("driver_managed_externally", "driver subset not gathered")

    if "cuda" in subsets:

        def do_cuda(state):
            packages = need_packages()
            facts["cuda"] = probe_cuda.probe(root, live, packages)
            if packages.reasons:
                state.update(state="partial", reason="; ".join(packages.reasons))

        timed("cuda", do_cuda)

    if "cudnn" in subsets:

        def do_cudnn(state):
            packages = need_packages()
            ld = need_ld()
            deadline = started + float(timeout)
            copies, resolved, warnings, truncated = probe_cudnn.probe(
                root,
                live,
                packages,
                ld,
                search_paths=cudnn_search_paths,
                max_depth=max_depth,
                deadline=deadline,
                timeout=per_call,
            )
            facts["cudnn"] = copies
            facts["cudnn_resolved"] = resolved
            facts["warnings"].extend(w for w in warnings if "deadline" in w)
            problems = [*packages.reasons]
            unlisted = [w for w in warnings if w.startswith("cannot list")]
            if unlisted:
                more = f" (and {len(unlisted) - 5} more)" if len(unlisted) > 5 else ""
                problems.append("; ".join(unlisted[:5]) + more)
            if shared.get("ld_reason"):
                problems.append("loader cache: {}".format(shared["ld_reason"]))
            if truncated:
                problems.append(f"scan deadline of {timeout}s reached: results are partial")
            if problems:
                state.update(state="partial", reason="; ".join(problems))

        timed("cudnn", do_cudnn)

    facts["elapsed_ms"] = int((time.monotonic() - started) * 1000)
    return facts
