# Copyright: gpufleet contributors
# Apache-2.0
"""Assemble `ansible_facts.nvidia` (schema: docs/facts.md) from the probes. Never raises for what it sees."""

from __future__ import annotations

import os
import platform
import time

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.facts import NAMED_ONLY, SUBSETS
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import consumers as probe_consumers
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import cuda as probe_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import cudnn as probe_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import driver as probe_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import gpu as probe_gpu
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import host as probe_host
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import ldcache as probe_ldcache
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import owners as probe_owners
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import sources as probe_sources
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import (
    SCHEMA_VERSION,
    Root,
    describe_error,
    new_probe_state,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages


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
                f"(each optionally prefixed with '!'; all leaves out {', '.join(NAMED_ONLY)})"
            )
        names = set(SUBSETS) - set(NAMED_ONLY) if name == "all" else {name}
        (exclude if negate else include).update(names)
    if not include:
        include = set(SUBSETS) - set(NAMED_ONLY)
    return sorted(include - exclude)


def empty_facts(root_path, subsets):
    return {
        "schema_version": SCHEMA_VERSION,
        "root": root_path,
        "gather_subset": list(subsets),
        "probes": {
            name: new_probe_state("skipped")
            for name in ("host", *SUBSETS)
            if name not in NAMED_ONLY or name in subsets
        },
        "warnings": [],
        "elapsed_ms": 0,
        "host": probe_host.empty_host(),
        "gpus": [],
        "gpu_count": 0,
        "nvswitch_count": 0,
        "fabric_manager_required": False,
        "driver": {},
        "cuda": {},
        "cudnn": [],
        "cudnn_resolved": [],
        "consumers": {},
        "owners": {},
        "packages": {},
        "sources": {},
    }


class _Gathering:
    """One gather run: the facts being filled, the root, and what the probes share (packages, ld cache)."""

    def __init__(self, facts, root, live, *, timeout, started):
        self.facts = facts
        self.root = root
        self.live = live
        self.timeout_given = timeout  # as the caller wrote it, for messages
        self.timeout = float(timeout)
        self.per_call = max(1.0, min(10.0, self.timeout))
        self.started = started
        self._packages = None
        self._ld = None
        self.ld_reason = None
        self.gpu_driver_info = {"driver_version": None, "cuda_driver_version_int": None, "reason": None}

    def timed(self, name, func):
        t0 = time.monotonic()
        state = self.facts["probes"][name] = new_probe_state("ok")
        try:
            func(state)
        except Exception as exc:  # a probe bug must not fail the host: report it
            state.update(state="unknown", reason=f"probe error: {describe_error(exc)}")
            self.facts["warnings"].append(f"{name} probe error: {describe_error(exc)}")
        state["elapsed_ms"] = int((time.monotonic() - t0) * 1000)

    def packages(self):
        if self._packages is None:
            self._packages = Packages(self.root)
            for reason in self._packages.reasons:
                self.facts["warnings"].append(f"package database: {reason}")
        return self._packages

    def ld(self):
        if self._ld is None:
            self._ld, self.ld_reason = probe_ldcache.load_ld_cache(self.root)
        return self._ld

    def host(self, state):
        self.facts["host"] = probe_host.probe(self.root, self.live)

    def gpu(self, state, keep):
        gpus, nvswitches, info, reasons = probe_gpu.probe(self.root, self.live, timeout=self.per_call)
        self.gpu_driver_info.update(info)
        if not keep:
            return
        self.facts.update(
            gpus=gpus, gpu_count=len(gpus), nvswitch_count=nvswitches, fabric_manager_required=nvswitches > 0
        )
        if reasons:
            state.update(state="partial", reason="; ".join(reasons))

    def driver(self, state, mok_paths=()):
        packages = self.packages()
        ld = self.ld()
        self.facts["driver"] = probe_driver.probe(
            self.root,
            self.live,
            packages,
            nvml=probe_ldcache.nvml_location(self.root, ld, packages),
            gpu_driver_info=self.gpu_driver_info,
            host=self.facts["host"],
            timeout=self.per_call,
            userspace=probe_ldcache.userspace_driver(self.root, ld),
            mok_paths=mok_paths,
        )
        problems = [r for r in [self.ld_reason, *packages.reasons] if r]
        if problems:
            state.update(state="partial", reason="; ".join(problems))

    def cuda(self, state):
        packages = self.packages()
        self.facts["cuda"] = probe_cuda.probe(self.root, self.live, packages)
        if packages.reasons:
            state.update(state="partial", reason="; ".join(packages.reasons))

    def cudnn(self, state, search_paths, max_depth):
        packages = self.packages()
        found = {}
        copies, resolved, warnings, truncated = probe_cudnn.probe(
            self.root,
            self.live,
            packages,
            self.ld(),
            search_paths=search_paths,
            max_depth=max_depth,
            deadline=self.started + self.timeout,
            timeout=self.per_call,
            found=found,
        )
        self.facts["cudnn"] = copies
        self.facts["cudnn_resolved"] = resolved
        self.consumers(copies, found)
        self.facts["warnings"].extend(w for w in warnings if "deadline" in w)
        problems = [*packages.reasons]
        unlisted = [w for w in warnings if w.startswith("cannot list")]
        if unlisted:
            more = f" (and {len(unlisted) - 5} more)" if len(unlisted) > 5 else ""
            problems.append("; ".join(unlisted[:5]) + more)
        if self.ld_reason:
            problems.append(f"loader cache: {self.ld_reason}")
        if truncated:
            problems.append(f"scan deadline of {self.timeout_given}s reached: results are partial")
        if problems:
            state.update(state="partial", reason="; ".join(problems))

    def consumers(self, copies, found):
        """What each consumer environment loads (part of the cudnn subset; its own errors stay its own)."""
        toolkits = [t["path"] for t in (self.facts.get("cuda") or {}).get("toolkits") or []]
        try:
            self.facts["consumers"] = probe_consumers.probe(
                self.root,
                self.ld(),
                copies,
                site_packages=found.get("site_packages", ()),
                conda_envs=found.get("conda_envs", ()),
                toolkits=toolkits or probe_cuda.find_toolkits(self.root),
            )
        except Exception as exc:  # a probe bug must not lose the cuDNN copies: report it
            reason = f"consumers probe error: {describe_error(exc)}"
            self.facts["consumers"] = {"ld_library_path": {}, "environments": [], "library_dirs": [],
                                       "reasons": [reason]}  # fmt: skip
            self.facts["warnings"].append(reason)

    def owners(self, state, extra_paths):
        packages = self.packages()
        machine = platform.machine()
        self.facts["owners"] = probe_owners.probe(
            self.root,
            packages,
            self.ld(),
            lambda flags: probe_ldcache.arch_ok(flags, machine),
            extra_paths=extra_paths,
        )
        problems = [r for r in [self.ld_reason, *packages.reasons, *self.facts["owners"]["reasons"]] if r]
        if problems:
            state.update(state="partial", reason="; ".join(problems))

    def installed_packages(self, state):
        """The `packages` subset: the package manager, the installed packages of the reader (their version
        and hold), gpufleet's records of what it installed and, on an apt host, whether ansible.builtin.apt
        could run (python3-apt)."""
        packages = self.packages()
        apt, reason = None, None
        if packages.manager == "apt":
            apt, reason = probe_packages.python_apt(self.live, timeout=self.per_call)
        reasons = [*packages.reasons, *([f"python_apt: {reason}"] if reason else [])]
        self.facts["packages"] = {
            "manager": packages.manager,
            "installed": packages.installed(),
            "python_apt": apt,
            "records": packages.records,
            "reasons": reasons,
        }
        problems = [*packages.reasons, *([f"python_apt: {reason}"] if reason and self.live else [])]
        if problems:
            state.update(state="partial", reason="; ".join(problems))

    def sources(self, state):
        """The `sources` subset: every apt and dnf source entry, the keyrings they name and apt's global ones,
        with their keys and the NVIDIA-related package that owns each file."""
        packages = self.packages()
        self.facts["sources"] = probe_sources.probe(self.root, packages.owners_of)
        problems = [*packages.reasons, *self.facts["sources"]["reasons"]]
        if problems:
            state.update(state="partial", reason="; ".join(problems))


def _missing_root(facts, root, root_path, subsets):
    """Every probe `unknown` with the reason: the root does not exist or is not a directory."""
    if not os.path.exists(root.root):
        reason = f"root {root_path} does not exist"
    else:
        reason = f"root {root_path} is not a directory"
    for name in facts["probes"]:
        if name == "host" or name in subsets:
            facts["probes"][name] = new_probe_state("unknown", reason)
    facts["warnings"].append(reason)
    return facts


def gather(
    root_path="/",
    gather_subset=("all",),
    *,
    cudnn_search_paths=(),
    owner_paths=(),
    mok_paths=(),
    max_depth=6,
    timeout=20.0,
    live=None,
):
    """The `nvidia` fact. `live` (run NVML, nvidia-smi, modinfo, ctypes) defaults to root being `/`;
    `mok_paths`: the MOK files the driver subset describes (`driver.mok_files`)."""
    started = time.monotonic()
    subsets = resolve_subsets(gather_subset)
    facts = empty_facts(root_path, subsets)
    root = Root(root_path)
    if live is None:
        live = root.is_slash
    if not os.path.isdir(root.root):
        _missing_root(facts, root, root_path, subsets)
    else:
        run = _Gathering(facts, root, live, timeout=timeout, started=started)
        run.timed("host", run.host)
        if "gpu" in subsets or "driver" in subsets:  # the driver probe uses what NVML said
            run.timed("gpu", lambda state: run.gpu(state, keep="gpu" in subsets))
            if "gpu" not in subsets:
                facts["probes"]["gpu"] = new_probe_state("skipped")
        if "driver" in subsets:
            run.timed("driver", lambda state: run.driver(state, mok_paths))
        else:
            facts["host"]["reasons"].setdefault("driver_managed_externally", "driver subset not gathered")
        if "cuda" in subsets:
            run.timed("cuda", run.cuda)
        if "cudnn" in subsets:
            run.timed("cudnn", lambda state: run.cudnn(state, cudnn_search_paths, max_depth))
        if "owners" in subsets:
            run.timed("owners", lambda state: run.owners(state, owner_paths))
        if "packages" in subsets:
            run.timed("packages", run.installed_packages)
        if "sources" in subsets:
            run.timed("sources", run.sources)
    facts["elapsed_ms"] = int((time.monotonic() - started) * 1000)
    return facts
