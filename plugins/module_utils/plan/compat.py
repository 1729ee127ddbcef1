# Copyright: gpufleet contributors
# Apache-2.0
"""Compatibility rules: a plan (GPUs, driver, kernel module, CUDA, cuDNN, OS) -> findings with advice.

Stdlib only, Python >= 3.9, pure: nothing here reads the host. ``check(...)`` returns
``{"compatible", "errors", "warnings", "recommended", "gpus"}``; bad input (malformed or unknown versions,
contradictory parameters) raises :class:`CompatInputError` with one sentence naming the parameter.

Confidence: a rule backed by a ``high`` fact refuses (error); one backed only by ``medium``/``low`` facts
warns. Versions newer than the knowledge base (CUDA 14.0, cuDNN 10.0, driver R700) warn that the knowledge
base does not know them yet; the rules that still apply are applied.
"""

from __future__ import annotations

import datetime

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import arch as kb_arch
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda as kb_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cudnn as kb_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import distributions as kb_distributions
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver as kb_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpus import GpuSpecError, resolve_gpu
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import (
    VersionError,
    parse_version,
)

HIGH = kb_arch.HIGH
KERNEL_MODULES = ("auto", "open", "proprietary")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


class CompatInputError(ValueError):
    """Bad input to the compatibility check (names the parameter, the value and what is accepted)."""


# ---------------------------------------------------------------------------------------------------
# Knowledge-base lookups
# ---------------------------------------------------------------------------------------------------
def _v(text):
    return parse_version(text, "knowledge base")


_RELEASES = tuple(
    (_v(ver), label, _v(mind) if mind else None, conf) for ver, label, mind, conf in kb_cuda.CUDA_RELEASES
)
NEWEST_CUDA = _RELEASES[-1][0].truncate(2)
OLDEST_CUDA = _RELEASES[0][0].truncate(2)


def cuda_families(major=None):
    """Known CUDA releases as "major.minor" strings (optionally of one major), oldest first."""
    seen = []
    for ver, _label, _min, _conf in _RELEASES:
        fam = str(ver.truncate(2))
        if (major is None or ver.major == major) and fam not in seen:
            seen.append(fam)
    return seen


def cuda_release(version):
    """(row, exact) for a parsed CUDA version: the matching update, or the family's GA; None if unknown.

    row = (version, label, min driver Version or None, confidence).
    """
    family = [r for r in _RELEASES if r[0].parts[:2] == version.parts[:2]]
    if not family:
        return None, False
    if len(version.parts) >= 3:
        for row in family:
            if row[0].parts[:3] == version.parts[:3]:
                return row, True
        return family[-1], False
    for row in family:
        if row[1].endswith(" GA"):
            return row, True
    return family[0], True


def cuda_min_driver(cuda_version, param="cuda_version"):
    """The minimum Linux x86_64 driver (str) of a CUDA release ("12.8" -> GA's "570.26"), or None if unknown.

    Raises CompatInputError for malformed versions and releases that do not exist in a known major.
    """
    version = _parse(cuda_version, param)
    _check_cuda_known(version, param, [])
    row, _exact = cuda_release(version)
    if row is None or row[2] is None:
        return None
    return str(row[2])


def major_floor(version):
    """The minor-version-compatibility floor driver (Version) of a CUDA version's major, or None."""
    if version.parts[:2] == (11, 0):
        return _v(kb_cuda.CUDA_11_0_FLOOR)
    entry = kb_cuda.CUDA_MAJOR_FLOORS.get(version.major)
    return _v(entry[0]) if entry else None


def branch_native_cuda(branch):
    """The native CUDA version (Version "major.minor") of a driver branch, or None if unknown.

    Taken from the branch table, else the newest CUDA release whose minimum driver is on an older or the
    same branch.
    """
    row = kb_driver.DRIVER_BRANCHES.get(branch)
    if row and row[2]:
        return _v(row[2])
    best = None
    for ver, _label, mind, _conf in _RELEASES:
        if mind is not None and mind.major <= branch:
            best = ver.truncate(2)
    return best


def cc_cuda_range(cc):
    """(first Version, last Version or None, confidence) of CUDA releases building for ``cc``, or None."""
    row = kb_cuda.CC_CUDA_RANGE.get(cc)
    if row is None:
        return None
    return _v(row[0]), (_v(row[1]) if row[1] else None), row[2]


# ---------------------------------------------------------------------------------------------------
# Input normalization
# ---------------------------------------------------------------------------------------------------
def _parse(value, param, **kwargs):
    try:
        return parse_version(value, param, **kwargs)
    except VersionError as err:
        raise CompatInputError(str(err)) from None


def _check_cuda_known(version, param, warnings):
    families = cuda_families(version.major)
    fam = version.truncate(2)
    if version < OLDEST_CUDA:
        raise CompatInputError(
            f"{param}: CUDA {version} is older than the oldest CUDA gpufleet knows ({OLDEST_CUDA}); "
            f"accepted: {OLDEST_CUDA} to {NEWEST_CUDA} (or a newer, not yet known release)"
        )
    if version.major > NEWEST_CUDA.major or (version.major == NEWEST_CUDA.major and fam > NEWEST_CUDA):
        warnings.append(
            f"CUDA {version}: the knowledge base does not know it yet (it knows CUDA up to {NEWEST_CUDA}): "
            "rules that depend on this release are checked with what is known of its major; verify by hand"
        )
        return
    if str(fam) not in families:
        raise CompatInputError(
            f"{param}: CUDA {version} does not exist; known CUDA {version.major} releases: "
            f"{', '.join(families)}"
        )
    row, exact = cuda_release(version)
    if len(version.parts) >= 3 and not exact:
        warnings.append(
            f"CUDA {version} is not a release the knowledge base knows; using the newest known "
            f"{fam} update ({row[0]}) for its requirements"
        )


def _normalize_driver(driver_version, driver_branch):
    """(Version or None, branch int or None); raises on malformed or contradictory values."""
    version = branch = None
    if driver_version not in (None, ""):
        version = _parse(driver_version, "driver_version", min_parts=2, max_parts=3)
        branch = version.major
    if driver_branch not in (None, ""):
        given = _parse(driver_branch, "driver_branch", max_parts=1).major
        if branch is not None and given != branch:
            raise CompatInputError(
                f"driver_branch: {driver_branch!r} contradicts driver_version {version} (which is on branch "
                f"R{branch}): give only one, or make them agree (driver_branch: {branch})"
            )
        branch = given
    if branch is not None and not 100 <= branch <= 999:
        param = "driver_version" if version is not None else "driver_branch"
        raise CompatInputError(
            f"{param}: R{branch} is not an NVIDIA driver branch; accepted: a branch like 580 or R580, "
            "or a version like 580.95.05"
        )
    return version, branch


def _normalize_cudnn(cudnn_version, cudnn_cuda_major, cuda, warnings):
    if cudnn_version in (None, ""):
        return None, None
    version = _parse(cudnn_version, "cudnn_version", min_parts=2)
    major = None
    if cudnn_cuda_major not in (None, ""):
        major = _parse(cudnn_cuda_major, "cudnn_cuda_major", max_parts=1).major
    if cuda is not None:
        if major is not None and major != cuda.major:
            raise CompatInputError(
                f"cudnn_cuda_major: {cudnn_cuda_major!r} contradicts cuda_version {cuda} (CUDA "
                f"{cuda.major}): "
                f"a cuDNN built for CUDA {major} does not run on the CUDA {cuda.major} runtime; set "
                f"cudnn_cuda_major: {cuda.major} or leave it unset"
            )
        major = cuda.major
    if major is None:
        raise CompatInputError(
            "cudnn_cuda_major: needed with cudnn_version when cuda_version is not given; accepted: 11, 12 or "
            "13"
        )
    known_majors = sorted({row[0] for row in kb_cudnn.VARIANTS})
    if major < known_majors[0]:
        raise CompatInputError(
            f"cudnn_cuda_major: {major} is older than the cuDNN builds gpufleet knows; accepted: "
            + ", ".join(str(m) for m in known_majors)
        )
    if major > known_majors[-1]:
        warnings.append(
            f"cuDNN builds for CUDA {major} are not in the knowledge base yet (it knows CUDA "
            + ", ".join(str(m) for m in known_majors)
            + " builds): verify by hand"
        )
    newest = _v(kb_cudnn.NEWEST_KNOWN)
    if version.major < 8:
        raise CompatInputError(
            f"cudnn_version: cuDNN {version} is older than gpufleet supports; accepted: 8.9.x or 9.x "
            f"(up to {newest}, or a newer, not yet known release)"
        )
    if version > newest and not version.startswith(newest.truncate(3)):
        warnings.append(
            f"cuDNN {version}: the knowledge base does not know it yet (it knows cuDNN up to {newest}): "
            "its requirements are taken from the newest known release; verify by hand"
        )
    elif version < _v(kb_cudnn.OLDEST_DETAILED):
        warnings.append(
            f"cuDNN {version} is older than the releases the knowledge base details "
            f"({kb_cudnn.OLDEST_DETAILED}+): "
            "only the CUDA-variant rules are checked"
        )
    return version, major


def _normalize_os(os_info):
    """{distribution (os-release ID), version, key (kb/hosts.os_key)} or None when no OS is given.

    Accepts the os-release ID ('ubuntu', 'rhel'), Ansible's name ('Ubuntu', 'RedHat', 'OracleLinux'; what
    ``ansible_facts.nvidia.host.os`` holds) and the long names ('Red Hat Enterprise Linux').
    """
    if not os_info:
        return None
    if not isinstance(os_info, dict):
        raise CompatInputError(
            f"os: {os_info!r} is not a mapping; accepted: {{distribution: ubuntu, version: '24.04'}}"
        )
    dist = kb_distributions.os_release_id(os_info.get("distribution"))
    ver = str(os_info.get("version") or "").strip()
    if not dist or dist == "unknown":
        return None
    return {"distribution": dist, "version": ver, "key": kb_hosts.os_key(dist, ver)}


# ---------------------------------------------------------------------------------------------------
# Helpers for messages
# ---------------------------------------------------------------------------------------------------
def gpu_label(gpu):
    """ "Tesla V100-SXM2-32GB (Volta, sm_70)" """
    details = [gpu.get("architecture") or "unknown"]
    if gpu.get("sm"):
        details.append(gpu["sm"])
    return f"{gpu.get('name')} ({', '.join(details)})"


def _month(ym):
    return f"{_MONTHS[ym[1] - 1]} {ym[0]}"


def _branch_desc(branch):
    row = kb_driver.DRIVER_BRANCHES.get(branch)
    if not row:
        return f"R{branch}"
    kind = kb_driver.BRANCH_TYPE_NAMES[row[0]]
    eol = f", end of life {_month(row[1])}" if row[1] else ""
    return f"R{branch} ({kind} branch{eol})"


class _Findings:
    def __init__(self):
        self.errors = []
        self.warnings = []

    def add(self, confidence, message):
        target = self.errors if confidence == HIGH else self.warnings
        if confidence != HIGH and not message.endswith(")"):
            message += f" ({confidence}-confidence fact: verify)"
        if message not in target:
            target.append(message)

    def error(self, message):
        self.add(HIGH, message)

    def warn(self, message):
        if message not in self.warnings:
            self.warnings.append(message)


# ---------------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------------
def _driver_text(version, branch):
    return f"driver {version}" if version is not None else f"driver branch R{branch}"


class _CudaOnDriver:
    """One CUDA release against one driver (version or branch): the limits and the driver's text."""

    def __init__(self, cuda, dversion, branch, floor):
        row, _exact = cuda_release(cuda)
        self.cuda, self.dversion, self.branch, self.floor = cuda, dversion, branch, floor
        self.rel_min = row[2] if row else None
        self.drv = _driver_text(dversion, branch)

    def below(self, limit):
        if self.dversion is not None:
            return self.dversion < limit
        return self.branch < limit.major


def _unknown_release_minimum(f, c):
    """CUDA release without a known minimum driver: "native" (the release's branch or newer), "minor" (runs
    through minor-version compatibility, warned) or None (below the major's floor: the rule goes on)."""
    hint = kb_cuda.UNKNOWN_MIN_BRANCH_HINT.get(str(c.cuda.truncate(2)))
    if hint and c.branch >= hint[0]:
        return "native"
    if c.below(c.floor):
        return None
    note = f"; R{hint[0]} is its native branch ({hint[1]} confidence)" if hint else ""
    f.warn(
        f"CUDA {c.cuda}: its minimum driver is not known to the knowledge base{note}; {c.drv} runs it "
        f"through minor-version compatibility (CUDA {c.cuda.major} floor {c.floor}) with a limited "
        "feature set"
    )
    return "minor"


def _minor_version_compat(f, c):
    rel_min = c.rel_min
    advice = (
        f"driver_version >= {rel_min}" if c.branch == rel_min.major else f"driver_branch >= {rel_min.major}"
    )
    f.warn(
        f"CUDA {c.cuda} runs on {c.drv} only through minor-version compatibility: its own minimum is "
        f"{rel_min} (R{rel_min.major}); features such as PTX JIT of code from the newer toolkit need the "
        f"newer driver: set {advice} for full support"
    )


def _branch_list(branches):
    names = [f"R{b}" for b in branches]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _forward_compat_base(f, c):
    """cuda-compat-M-m on the driver's branch as its base (NVIDIA's table); True when that refuses."""
    cuda, branch, floor = c.cuda, c.branch, c.floor
    package = f"cuda-compat-{cuda.major}-{cuda.minor}"
    row = kb_cuda.FORWARD_COMPAT.get(str(cuda.truncate(2)))
    bases = [b for b in (row[0] if row else kb_cuda.FORWARD_COMPAT_BASE_BRANCHES) if b < floor.major]
    instead = (f"set driver_branch {_branch_list(bases)}, or " if bases else "set ") + (
        f"driver_branch >= {floor.major} (CUDA {cuda.major} without forward compatibility)"
    )
    info = kb_driver.DRIVER_BRANCHES.get(branch)
    if branch not in kb_cuda.FORWARD_COMPAT_BASE_BRANCHES:
        why = (
            "New Feature Branches are not supported targets for CUDA forward compatibility"
            if info and info[0] == kb_driver.NFB
            else "branches not listed in NVIDIA's forward-compatibility table are end of life and not "
            "supported targets"
        )
        f.error(f"{package} does not support driver branch R{branch} as its base ({why}): {instead}")
        return True
    if row is None:
        f.warn(
            f"NVIDIA's forward-compatibility table does not list {package} yet: whether it supports driver "
            f"branch R{branch} as its base is not known; verify by hand, or {instead}"
        )
        return False
    if branch not in row[0]:
        f.add(
            row[1],
            f"{package} is not compatible with driver branch R{branch} (NVIDIA's forward-compatibility "
            f"table): {instead}",
        )
        return True
    return False


def _forward_compat_within_major(f, c):
    """cuda_forward_compat for a CUDA of the driver's own major: what NVIDIA's table says.

    Warnings only: minor-version compatibility applies anyway."""
    package = f"cuda-compat-{c.cuda.major}-{c.cuda.minor}"
    row = kb_cuda.FORWARD_COMPAT.get(str(c.cuda.truncate(2)))
    info = kb_driver.DRIVER_BRANCHES.get(c.branch)
    if row is None:
        f.warn(
            f"NVIDIA's forward-compatibility table does not list {package} yet: verify it supports "
            f"R{c.branch}"
        )
    elif c.branch not in row[0]:
        f.warn(
            f"NVIDIA provides no {package} for driver branch R{c.branch} as its base (forward-compatibility "
            "table); CUDA runs there through minor-version compatibility only"
        )
    elif info and info[0] == kb_driver.NFB:
        f.warn(
            f"NVIDIA's forward-compatibility table marks {package} compatible with R{c.branch}, but says New "
            "Feature Branches are not supported targets for CUDA forward compatibility: prefer a long-term "
            "support or production base branch"
        )


def _across_majors(f, c, native, gpus, forward_compat):
    """A driver whose native CUDA major is older than the CUDA asked for (forward compatibility or not)."""
    cuda, drv, floor = c.cuda, c.drv, c.floor
    not_dc = [g for g in gpus if not g.get("data_center")]
    if forward_compat and gpus and not not_dc:
        if _forward_compat_base(f, c):
            return
        f.warn(
            f"CUDA {cuda} on {drv} (native CUDA {native}) works only through CUDA forward compatibility: "
            f"install cuda-compat-{cuda.major}-{cuda.minor} (data-center GPUs only); "
            f"the native minimum is {floor} (R{floor.major})"
        )
    elif forward_compat and not gpus:
        f.error(
            f"CUDA {cuda} on {drv} (native CUDA {native}) needs forward compatibility, which only "
            "data-center "
            "GPUs support, and no GPU was found or given to verify that: give gpus, or set driver_branch "
            ">= "
            f"{floor.major}"
        )
    elif forward_compat:
        names = ", ".join(gpu_label(g) for g in not_dc)
        f.error(
            f"CUDA {cuda} on {drv} (native CUDA {native}) needs forward compatibility, which is only for "
            f"data-center GPUs; {names} {'is' if len(not_dc) == 1 else 'are'} not (or not known to be): "
            "set driver_branch >= "
            f"{floor.major} or cuda_version <= {native}"
        )
    else:
        f.error(
            f"CUDA {cuda} needs driver >= {floor} (the CUDA {cuda.major} floor, branch R{floor.major} or "
            "newer); "
            f"{drv} supports CUDA up to {native}: set driver_branch >= {floor.major}, or cuda_version <= "
            f"{native}, "
            "or (data-center GPUs only) cuda_forward_compat: true"
        )


def _rule_cuda_driver(f, cuda, *, dversion, branch, gpus, forward_compat):
    floor = major_floor(cuda)
    if floor is None:
        f.warn(
            f"CUDA {cuda}: the knowledge base does not know the driver requirements of CUDA {cuda.major} "
            "yet; "
            "the driver was not checked against it"
        )
        return
    c = _CudaOnDriver(cuda, dversion, branch, floor)
    within = forward_compat and gpus and all(g.get("data_center") for g in gpus)
    how = _unknown_release_minimum(f, c) if c.rel_min is None else None
    if how == "minor" and within:
        _forward_compat_within_major(f, c)
    if how or (c.rel_min is not None and not c.below(c.rel_min)):
        return
    if not c.below(floor):
        _minor_version_compat(f, c)
        if within:
            _forward_compat_within_major(f, c)
        return
    native = branch_native_cuda(branch)
    if native is not None and native.major < cuda.major:
        _across_majors(f, c, native, gpus, forward_compat)
        return
    f.error(
        f"CUDA {cuda} needs driver >= {floor} (the CUDA {cuda.major} minor-version compatibility floor); "
        f"{c.drv} is older: set driver_branch >= {floor.major}"
        + (
            f" (CUDA {cuda} itself asks for {c.rel_min})"
            if c.rel_min is not None and c.rel_min != floor
            else ""
        )
    )


def _arch_name(gpu):
    """ "Volta", or "Kepler sm_35" when the architecture's compute capabilities differ in CUDA support."""
    arch = gpu["architecture"]
    lasts = {
        kb_cuda.CC_CUDA_RANGE[cc][1]
        for cc, a in kb_arch.CC_ARCH.items()
        if a == arch and cc in kb_cuda.CC_CUDA_RANGE
    }
    return arch if len(lasts) == 1 else f"{arch} {gpu['sm']}"


def _rule_cuda_gpu(f, cuda, gpus):
    fam = cuda.truncate(2)
    for gpu in gpus:
        rng = cc_cuda_range(gpu.get("compute_capability"))
        if rng is None:
            continue
        first, last, conf = rng
        if last is not None and fam > last:
            f.add(
                conf,
                f"{gpu_label(gpu)} is not supported by CUDA {cuda}; the last CUDA for {_arch_name(gpu)} "
                f"is {last}: set cuda_version <= {last}",
            )
        elif fam < first:
            f.add(
                conf,
                f"CUDA {cuda} cannot build for {gpu.get('sm')} ({gpu.get('name')}, "
                f"{gpu.get('architecture')}): the first CUDA for compute capability "
                f"{gpu['compute_capability']} is {first}; applications built with an older CUDA still run on "
                f"it when they carry PTX (JIT-compiled by the driver): set cuda_version >= {first}",
            )


def _rule_driver_gpu(f, branch, gpus):
    for gpu in gpus:
        arch = gpu.get("architecture")
        legacy = gpu.get("legacy_branch")
        if legacy is not None and branch > legacy:
            f.error(
                f"{gpu_label(gpu)} is supported only up to the legacy driver branch R{legacy}; driver branch "
                f"R{branch} does not drive it: set driver_branch {legacy}"
            )
        elif legacy is not None and legacy < 580 and branch <= legacy:
            f.warn(
                f"{gpu_label(gpu)}: its last driver branch R{legacy} is no longer maintained by NVIDIA "
                "(no security fixes); plan to replace the GPU"
            )
        info = kb_arch.ARCHITECTURES.get(arch)
        if info and info["min_branch"] and branch < info["min_branch"][0]:
            need, conf = info["min_branch"]
            f.add(
                conf,
                f"{gpu_label(gpu)} needs driver branch R{need} or newer; driver branch R{branch} does not "
                "know "
                f"{arch}: set driver_branch >= {need}",
            )


def _module_needs(gpus):
    needs_prop = [g for g in gpus if g.get("kernel_module_support") == "proprietary"]
    needs_open = [g for g in gpus if g.get("kernel_module_support") == "open"]
    return needs_prop, needs_open


def resolve_kernel_module(kernel_module, branch, gpus):
    """The flavor ``auto`` means for these GPUs and branch ("open" or "proprietary"), else "
    "``kernel_module``."""
    if kernel_module in ("open", "proprietary"):
        return kernel_module
    needs_prop, needs_open = _module_needs(gpus)
    if needs_prop and needs_open:
        return None
    if needs_prop:
        return "proprietary"
    if needs_open:
        return "open"
    if branch is not None and branch < kb_driver.OPEN_MODULES_DEFAULT_FROM:
        return "proprietary"
    return "open"


def _names(gpus):
    seen = []
    for g in gpus:
        label = gpu_label(g)
        if label not in seen:
            seen.append(label)
    return ", ".join(seen)


def _rule_kernel_module(f, kernel_module, branch, gpus):
    needs_prop, needs_open = _module_needs(gpus)
    if needs_prop and needs_open:
        f.error(
            f"no kernel module flavor drives both {_names(needs_prop)}, which needs the proprietary module, "
            f"and {_names(needs_open)}, which needs the open module: put these GPUs in different hosts"
        )
        return
    if kernel_module == "open" and needs_prop:
        f.error(
            f"{_names(needs_prop)} needs the proprietary kernel module (open modules support Turing and "
            "newer "
            "only): set kernel_module: proprietary (or auto)"
        )
    if kernel_module == "proprietary" and needs_open:
        f.error(
            f"{_names(needs_open)} needs the open kernel module (the proprietary one does not support it): "
            "set kernel_module: open (or auto)"
        )
    if branch is None:
        return
    flavor = resolve_kernel_module(kernel_module, branch, gpus)
    if flavor == "open" and branch < kb_driver.OPEN_MODULES_FIRST_BRANCH:
        f.error(
            f"open kernel modules exist from driver branch R{kb_driver.OPEN_MODULES_FIRST_BRANCH}; driver "
            "branch "
            f"R{branch} has only the proprietary one: set driver_branch >= "
            f"{kb_driver.OPEN_MODULES_FIRST_BRANCH} "
            "or kernel_module: proprietary"
        )
    elif flavor == "open" and branch < kb_driver.OPEN_MODULES_PRODUCTION_ALL_FROM:
        consumer = [g for g in gpus if g.get("data_center") is False]
        if consumer:
            f.warn(
                f"open kernel modules of driver branch R{branch} support {_names(consumer)} only as alpha "
                "quality "
                f"(production from R{kb_driver.OPEN_MODULES_PRODUCTION_ALL_FROM}): set driver_branch >= "
                f"{kb_driver.OPEN_MODULES_PRODUCTION_ALL_FROM} or kernel_module: proprietary"
            )
    removed, conf = kb_driver.PROPRIETARY_REMOVED_FROM
    if flavor == "proprietary" and branch >= removed:
        f.add(
            conf,
            f"driver branch R{branch} ships only the open kernel modules (NVIDIA removed the proprietary "
            "ones "
            f"from R{removed}): set kernel_module: open, or driver_branch < {removed}",
        )


def _cudnn_min_cc(cudnn, major):
    for row_major, first, last, cc, conf in kb_cudnn.MIN_CC:
        if row_major not in (None, major):
            continue
        if cudnn >= _v(first) and (last is None or cudnn <= _v(last)):
            return _v(cc), conf
    return None


def _cudnn_in(cudnn, first, last):
    """cuDNN ``cudnn`` lies in the rows' [first, last] (last None = open; "9.4.0" also covers 9.4.0.58)."""
    return cudnn >= _v(first) and (last is None or cudnn <= _v(last) or cudnn.startswith(last))


def _cudnn_variants(f, cudnn, major):
    for row_major, first, last, conf in kb_cudnn.VARIANTS:
        if row_major != major:
            continue
        if cudnn < _v(first):
            f.add(
                conf,
                f"cuDNN {cudnn} has no build for CUDA {major} (the first is {first}): set cudnn_version >= "
                f"{first}" + (f" or cudnn_cuda_major {major - 1}" if major > 11 else ""),
            )
        elif last is not None and cudnn > _v(last) and not cudnn.startswith(last):
            f.add(
                conf,
                f"cuDNN {cudnn} has no build for CUDA {major} (the last is {last}): set cudnn_version <= "
                f"{last}, "
                f"or use CUDA {major + 1}",
            )


def _below_driver(dversion, branch, need):
    return (dversion is not None and dversion < need) or (
        dversion is None and branch is not None and branch < need.major
    )


def _cudnn_driver(f, label, major, dversion, branch):
    for row_major, min_driver, conf in kb_cudnn.MIN_DRIVER:
        need = _v(min_driver)
        if row_major == major and _below_driver(dversion, branch, need):
            f.add(
                conf,
                f"{label} needs driver >= {need}; {_driver_text(dversion, branch)} is older: set "
                "driver_branch >= "
                f"{need.major}",
            )


def _cudnn_cuda_minor(f, label, cudnn, major, cuda):
    """The CUDA minors NVIDIA's support matrix lists for this build (kb_cudnn.CUDA_MINORS)."""
    fam = cuda.truncate(2)
    rows = [r for r in kb_cudnn.CUDA_MINORS if r[0] == major]
    for _major, first, last, first_cuda, conf in rows:
        if _cudnn_in(cudnn, first, last) and fam < _v(first_cuda):
            older = [r[2] for r in rows if r[2] and fam >= _v(r[3]) and _v(r[2]) < cudnn]
            advice = f"set cudnn_version <= {older[-1]} or " if older else "set "
            f.add(
                conf,
                f"{label} supports CUDA {first_cuda} and newer only (NVIDIA's cuDNN support matrix), not "
                f"CUDA {cuda}: {advice}cuda_version >= {first_cuda}",
            )


def _cudnn_arch_cuda(f, label, cudnn, major, *, cuda, dversion, branch, gpus):
    """GPUs a build supports only from a later CUDA minor and driver (kb_cudnn.ARCH_CUDA_MINORS)."""
    for row_major, first, last, ccs, first_cuda, min_driver, conf in kb_cudnn.ARCH_CUDA_MINORS:
        if row_major != major or not _cudnn_in(cudnn, first, last):
            continue
        need = _v(min_driver)
        for gpu in (g for g in gpus if g.get("compute_capability") in ccs):
            if cuda is not None and cuda.truncate(2) < _v(first_cuda):
                f.add(
                    conf,
                    f"{gpu_label(gpu)} is supported by {label} only with CUDA {first_cuda} or newer "
                    f"(NVIDIA's cuDNN support matrix), not CUDA {cuda}: set cuda_version >= {first_cuda}",
                )
            if _below_driver(dversion, branch, need):
                f.add(
                    conf,
                    f"{gpu_label(gpu)} is supported by {label} only with driver >= {need} (NVIDIA's cuDNN "
                    f"support matrix); {_driver_text(dversion, branch)} is older: set driver_branch >= "
                    f"{need.major}",
                )


def _cudnn_gpus(f, label, cudnn, major, gpus):
    min_cc = _cudnn_min_cc(cudnn, major)
    if min_cc is None:
        return
    need, conf = min_cc
    for gpu in gpus:
        cc = gpu.get("compute_capability")
        if not cc:
            continue
        if _v(cc) < need:
            advice = (
                f"set cudnn_version <= {newest_cudnn_for_cc(_v(cc))}" if newest_cudnn_for_cc(_v(cc)) else ""
            )
            f.add(
                conf,
                f"{gpu_label(gpu)} is not supported by {label}, which needs compute capability >= {need}"
                + (f": {advice}" if advice else ""),
            )


def _cudnn_matrix(f, label, cudnn, major, *, cuda, gpus):
    """A CUDA minor or a GPU newer than NVIDIA's support matrix of this cuDNN release (kb_cudnn.MATRIX_LISTS):
    warned, never refused (the release predates it; NVIDIA does not say it fails)."""
    for row_major, release, newest_cuda, ccs, _conf in kb_cudnn.MATRIX_LISTS:
        if row_major != major or not _cudnn_in(cudnn, release, release):
            continue
        newest = _v(newest_cuda)
        source = f"NVIDIA's cuDNN {release} support matrix lists CUDA {major}.x up to {newest_cuda}"
        if cuda is not None and cuda.truncate(2) > newest:
            f.warn(
                f"CUDA {cuda} is newer than {label}: {source} (NVIDIA does not say it fails; verify by "
                f"hand): set cuda_version <= {newest_cuda}, or a cudnn_version whose support matrix lists "
                f"CUDA {cuda.truncate(2)}"
            )
        for gpu in gpus:
            cc = gpu.get("compute_capability")
            first = cc_cuda_range(cc) if cc else None
            if first is None or cc in ccs or first[0] <= newest:
                continue
            f.warn(
                f"{gpu_label(gpu)} is newer than {label}: {source} and compute capabilities "
                f"{', '.join(ccs)}; compute capability {cc} came with CUDA {first[0]} (NVIDIA does not say "
                f"it fails; verify by hand): set a cudnn_version whose support matrix lists it"
            )
        return


def _rule_cudnn(f, cudnn, major, *, cuda=None, dversion, branch, gpus):
    label = f"cuDNN {cudnn} for CUDA {major}"
    _cudnn_variants(f, cudnn, major)
    _cudnn_driver(f, label, major, dversion, branch)
    if cuda is not None:
        _cudnn_cuda_minor(f, label, cudnn, major, cuda)
    _cudnn_arch_cuda(f, label, cudnn, major, cuda=cuda, dversion=dversion, branch=branch, gpus=gpus)
    _cudnn_gpus(f, label, cudnn, major, gpus)
    _cudnn_matrix(f, label, cudnn, major, cuda=cuda, gpus=gpus)


def newest_cudnn_for_cc(cc):
    """The newest cuDNN (str) known to support compute capability ``cc`` (a Version), or None."""
    for min_cc, newest, _conf in kb_cudnn.NEWEST_FOR_CC:
        if cc >= _v(min_cc):
            return newest
    return None


def _os_matches(os_info, dist, version):
    if os_info["distribution"] != dist:
        return False
    got = os_info["version"]
    return got == version or got.startswith(version + ".") or version.startswith(got + ".")


def _version_tuple(text):
    parts = str(text or "").split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def _os_at_least(os_info, dist, version):
    """The OS is ``dist`` at release ``version`` or a later point release of the same major ("10" = any 10.x;
    "9.6" = 9.6, 9.7, ...). An OS version without the point release ("9") does not match "9.6"."""
    if os_info["distribution"] != dist:
        return False
    got, row = _version_tuple(os_info["version"]), _version_tuple(version)
    if got is None or row is None or got[0] != row[0] or len(got) < len(row):
        return False
    return got[: len(row)] >= row


def _os_supported_from(f, shown, cuda, bound, conf):
    """CUDA older than the first release whose system requirements list the OS (kb_cuda.CUDA_OS_FACTS)."""
    if conf == HIGH:
        f.error(
            f"CUDA {cuda} does not support {shown}: NVIDIA added it in CUDA {bound} (CUDA {bound} release "
            f"notes, supported distributions): set cuda_version >= {bound}, or run CUDA {cuda} on an OS "
            "release it supports"
        )
        return
    f.add(
        conf,
        f"CUDA {cuda} is not qualified by NVIDIA for {shown}: NVIDIA lists it from CUDA {bound} on (CUDA "
        f"{bound} release notes, supported distributions); older CUDA may still work: set cuda_version >= "
        f"{bound} for a supported combination",
    )


def _os_cuda_facts(f, os_info, shown, cuda):
    fam = cuda.truncate(2)
    for dist, version, rule, bound, conf in kb_cuda.CUDA_OS_FACTS:
        limit = _v(bound)
        if rule == "supported_from":
            if fam < limit and _os_at_least(os_info, dist, version):
                _os_supported_from(f, shown, cuda, bound, conf)
            continue
        if not _os_matches(os_info, dist, version):
            continue
        if rule == "dropped_from" and fam >= limit:
            f.add(
                conf,
                f"CUDA {cuda} does not support {shown} (dropped from CUDA {bound}): set cuda_version < "
                f"{bound}"
                " or upgrade the OS",
            )
        elif rule == "repo_from" and fam < limit:
            f.warn(
                f"NVIDIA's {shown} repository starts at CUDA {bound}; CUDA {cuda} is not packaged there "
                f"({conf}-confidence fact): set cuda_version >= {bound} or install from the redist "
                "archives"
            )


def _os_driver_guide(f, os_info, shown):
    known = [
        v
        for d, versions, _conf in kb_cuda.DRIVER_GUIDE_DISTROS
        if d == os_info["distribution"]
        for v in versions
    ]
    if not any(_os_matches(os_info, os_info["distribution"], v) for v in known):
        f.warn(
            f"{shown} is not in NVIDIA's driver installation guide (R580/R610/R620 distributions"
            + (f" for {os_info['distribution']}: {', '.join(known)}" if known else "")
            + "): packages may be missing"
        )


def _rule_os(f, os_info, cuda, driver_planned):
    if os_info is None:
        return
    shown = f"{os_info['distribution']} {os_info['version']}".strip()
    if cuda is not None:
        _os_cuda_facts(f, os_info, shown, cuda)
    if driver_planned:
        _os_driver_guide(f, os_info, shown)


def _rule_lifecycle(f, branch, today):
    row = kb_driver.DRIVER_BRANCHES.get(branch)
    if row is None:
        if branch > kb_driver.NEWEST_KNOWN_BRANCH:
            f.warn(
                f"driver branch R{branch}: the knowledge base does not know it yet (it knows up to "
                f"R{kb_driver.NEWEST_KNOWN_BRANCH}): its GPU and CUDA support is assumed from R"
                f"{kb_driver.NEWEST_KNOWN_BRANCH}; verify by hand"
            )
        else:
            f.warn(
                f"driver branch R{branch} is not a branch the knowledge base knows: check the branch number"
            )
        return
    kind, eol, _native, _conf = row
    if eol and (today.year, today.month) > eol:
        f.warn(
            f"{_branch_desc(branch)} has reached its end of life: no more fixes; choose a supported branch"
        )
    elif kind == kb_driver.NFB:
        f.warn(
            f"R{branch} is a short-lived new feature branch: for production choose a long-term "
            "support or production branch"
        )


# ---------------------------------------------------------------------------------------------------
# Recommendations
# ---------------------------------------------------------------------------------------------------
def recommend(gpus, cuda=None, branch=None, today=None):
    """{driver_branch, kernel_module, cuda_max, cudnn_max} for these GPUs (strings or None)."""
    today = today or datetime.date.today()
    known = [g for g in gpus if g.get("architecture") not in (None, "unknown")]
    legacy_caps = [g["legacy_branch"] for g in known if g.get("legacy_branch") is not None]
    cap = min(legacy_caps) if legacy_caps else None
    floor = 0
    for g in known:
        info = kb_arch.ARCHITECTURES.get(g["architecture"])
        if info and info["min_branch"]:
            floor = max(floor, info["min_branch"][0])
    need_cuda = cuda.truncate(2) if cuda is not None else None
    chosen = None
    for b in sorted(kb_driver.DRIVER_BRANCHES):
        kind, eol, native, _conf = kb_driver.DRIVER_BRANCHES[b]
        if kind == kb_driver.NFB or (eol and (today.year, today.month) > eol) or native is None:
            continue
        if (cap is not None and b > cap) or b < floor:
            continue
        if need_cuda is not None and _v(native) < need_cuda:
            continue
        chosen = b
        break
    if chosen is None and cap is not None:
        chosen = cap
    cuda_max = NEWEST_CUDA
    for g in known:
        rng = cc_cuda_range(g.get("compute_capability"))
        if rng and rng[1] is not None and rng[1] < cuda_max:
            cuda_max = rng[1]
    ccs = [_v(g["compute_capability"]) for g in known if g.get("compute_capability")]
    cudnn_max = newest_cudnn_for_cc(min(ccs)) if ccs else kb_cudnn.NEWEST_KNOWN
    # GPUs limited to an older CUDA major: the newest cuDNN still built for that major
    last_for_major = {major: last for major, _first, last, _conf in kb_cudnn.VARIANTS if last}
    if cudnn_max and cuda_max.major in last_for_major:
        cudnn_max = str(min(_v(cudnn_max), _v(last_for_major[cuda_max.major])))
    return {
        "driver_branch": str(chosen) if chosen is not None else None,
        "kernel_module": resolve_kernel_module("auto", chosen if chosen is not None else branch, gpus),
        "cuda_max": str(cuda_max),
        "cudnn_max": cudnn_max,
    }


# ---------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------
def resolve_gpus(items):
    """Resolve ``gpus`` items (see gpus.resolve_gpu); returns (gpus, warnings); raises CompatInputError."""
    if items is None:
        return [], []
    if not isinstance(items, (list, tuple)):
        raise CompatInputError(f"gpus: {items!r} is not a list of GPU descriptions")
    resolved, warnings = [], []
    for index, item in enumerate(items):
        try:
            gpu, notes = resolve_gpu(item, index)
        except GpuSpecError as err:
            raise CompatInputError(str(err)) from None
        resolved.append(gpu)
        warnings.extend(n for n in notes if n not in warnings)
    return resolved, warnings


def _apply_rules(
    f, resolved, *, kernel_module, dversion, branch, cuda, cudnn, os_norm, forward_compat, today, platform
):
    if cuda is not None:
        if branch is not None:
            _rule_cuda_driver(
                f,
                cuda,
                dversion=dversion,
                branch=branch,
                gpus=resolved,
                forward_compat=forward_compat,
            )
        _rule_cuda_gpu(f, cuda, resolved)
    if branch is not None:
        _rule_lifecycle(f, branch, today)
        _rule_driver_gpu(f, branch, resolved)
    _rule_kernel_module(f, kernel_module, branch, resolved)
    if cudnn[0] is not None:
        _rule_cudnn(f, cudnn[0], cudnn[1], cuda=cuda, dversion=dversion, branch=branch, gpus=resolved)
    _rule_os(f, os_norm, cuda, driver_planned=branch is not None or bool(resolved))
    _rule_platform(f, *platform, cudnn)
    if not resolved and branch is not None:
        f.warn(
            "no NVIDIA GPU found or given: the GPU rules were skipped (a driver has nothing to drive here)"
        )


def _cudnn_platform(f, cudnn, major, platform):
    """A cuDNN build NVIDIA does not publish for the host's platform (kb_cudnn.PLATFORM_GAPS)."""
    for row_platform, row_major, first, last, conf in kb_cudnn.PLATFORM_GAPS:
        if (row_platform, row_major) == (platform, major) and _cudnn_in(cudnn, first, last):
            f.add(
                conf,
                f"cuDNN {cudnn} for CUDA {major} has no {platform} build (NVIDIA's cuDNN redist manifests): "
                "choose another cudnn_version or cudnn_cuda_major",
            )


def _rule_platform(f, machine, tegra, cudnn):
    """The host's CPU architecture and platform: gpufleet provisions x86_64 and Arm servers (sbsa) only, and
    never a Jetson (kb/hosts.py); a cuDNN build must exist for the platform."""
    if tegra:
        f.error(f"this host is an NVIDIA Jetson (Tegra SoC, Jetson Linux: {tegra}): {kb_hosts.JETSON_ADVICE}")
    if machine in (None, ""):
        return
    platform = kb_hosts.redist_platform(machine)
    if platform is None:
        f.error(
            f"machine: {machine!r} is not a CPU architecture gpufleet provisions; it provisions "
            f"{kb_hosts.SUPPORTED_MACHINES} hosts"
        )
    elif cudnn[0] is not None:
        _cudnn_platform(f, cudnn[0], cudnn[1], platform)


def _normalize_kernel_module(kernel_module):
    if kernel_module in (None, ""):
        return "auto"
    if kernel_module not in KERNEL_MODULES:
        raise CompatInputError(
            f"kernel_module: {kernel_module!r} is not allowed; accepted: {', '.join(KERNEL_MODULES)}"
        )
    return kernel_module


def check(
    *,
    gpus=None,
    driver_version=None,
    driver_branch=None,
    kernel_module="auto",
    cuda_version=None,
    cudnn_version=None,
    cudnn_cuda_major=None,
    os_info=None,
    cuda_forward_compat=False,
    machine=None,
    tegra=None,
    today=None,
):
    """Check a plan; returns {compatible, errors, warnings, recommended, gpus}.

    ``gpus`` is a list of items as accepted by gpus.resolve_gpu (already-resolved dicts from an earlier call
    are accepted too). ``machine`` is the host's CPU architecture as ``uname -m`` says it, ``tegra`` the
    evidence that it is a Jetson (the facts' ``host.machine`` and ``host.tegra``). Raises CompatInputError on
    bad input (malformed/unknown versions, contradictions).
    """
    today = today or datetime.date.today()
    kernel_module = _normalize_kernel_module(kernel_module)
    f = _Findings()
    resolved, gpu_warnings = resolve_gpus(gpus)
    for w in gpu_warnings:
        f.warn(w)
    dversion, branch = _normalize_driver(driver_version, driver_branch)
    cuda = None
    if cuda_version not in (None, ""):
        cuda = _parse(cuda_version, "cuda_version", min_parts=2)
        _check_cuda_known(cuda, "cuda_version", f.warnings)
    cudnn, cudnn_major = _normalize_cudnn(cudnn_version, cudnn_cuda_major, cuda, f.warnings)
    os_norm = _normalize_os(os_info)

    _apply_rules(
        f,
        resolved,
        kernel_module=kernel_module,
        dversion=dversion,
        branch=branch,
        cuda=cuda,
        cudnn=(cudnn, cudnn_major),
        os_norm=os_norm,
        forward_compat=bool(cuda_forward_compat),
        today=today,
        platform=(str(machine or "").strip(), tegra),
    )
    return {
        "compatible": not f.errors,
        "errors": f.errors,
        "warnings": f.warnings,
        "recommended": recommend(resolved, cuda, branch, today),
        "gpus": resolved,
    }
