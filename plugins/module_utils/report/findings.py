# Copyright: gpufleet contributors
# Apache-2.0
"""Findings of the fleet audit: what on one host will bite its users.

Stdlib only, Python >= 3.9. Input: a normalized host entry (report.build.normalize_host); output: a list of
``{"severity": "error"|"warning"|"info", "code": str, "message": str}``.

Rules decided here from the host's own observations (no knowledge base needed):
- ``no_gpu``: no NVIDIA GPU on the PCI bus (info);
- ``gpu_without_driver``: GPUs but no loaded driver (error);
- ``driver_managed_externally``: the driver belongs to the container runtime or the hypervisor (info), as
  the facts say (``host.driver_managed_externally`` and its ``_reason``: the one definition, made by the
  probe; this module never re-derives it);
- ``cudnn_header_library_mismatch``: a copy whose header and library disagree (error);
- ``cudnn_env_differs_from_system``: a pip/conda cuDNN whose version differs from the system cuDNN for the
  same CUDA major: info when its environment's frameworks load their own copy (the normal layout: the wheel's
  RPATH/RUNPATH) or the facts do not say what they load; a warning, naming the framework and its library's
  path, when one of them loads another copy (the system's: it does not run against the cuDNN installed for it,
  and a process that also imports one that loads its own gets one libcudnn.so.N for both);
- ``cudnn_several_system_copies``: several system copies provide the same libcudnn.so.N (warning: programs get
  whichever the loader finds first);
- ``cudnn_loader_resolves``: which copy the dynamic loader picks for each libcudnn soname (info);
- ``owner_unknown``: a CUDA toolkit or cuDNN copy that no package, installer, Python environment or gpufleet
  marker owns (warning: an admin cannot tell where it came from); the owner is the entry's ``owner``, made by
  report.owner.owner_shown (never re-derived here);
- ``cudnn_needs_newer_driver`` / ``cuda_needs_newer_driver``: a cuDNN build or CUDA toolkit for a CUDA major
  above the one the driver reports (cuDriverGetVersion) (error); a toolkit of the same major but a newer
  minor runs under minor-version compatibility (warning).

Rules that need NVIDIA's tables (GPUs the stack cannot serve, minimum drivers) come from the compatibility
rules (plan/compat.py ``check``, asked by ``kb_findings``); when they raise, the audit says so (info) and
falls back to the driver's own CUDA version instead of guessing.
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda as kb_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpus as kb_gpus
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as plan_compat
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import consumers as report_consumers

SYSTEM_SOURCES = ("deb", "rpm", "tarball", "unknown")
ENV_SOURCES = ("pip", "conda")
SEVERITIES = ("error", "warning", "info")


def finding(severity, code, message):
    return {"severity": severity, "code": code, "message": message}


def _major_minor(text):
    try:
        parts = [int(p) for p in str(text).split(".")[:2]]
    except ValueError:
        return None
    if len(parts) == 1:
        parts.append(0)
    return tuple(parts)


def _copy_label(c):
    where = c.get("python_env") or c.get("path")
    return f"cuDNN {c.get('version')} ({c.get('source')} at {where})"


def managed_externally(entry):
    """(managed, reason) from the host's facts (host.driver_managed_externally[_reason]); None: unknown."""
    host = entry.get("host") or {}
    return host.get("driver_managed_externally"), host.get("driver_managed_externally_reason") or ""


# -- local rules: the host's own observations -------------------------------------------------------------
def _gpu_and_driver_findings(entry):
    gpus = entry.get("gpus") or []
    driver = entry.get("driver") or {}
    managed, reason = managed_externally(entry)
    out = []
    if entry.get("gpu_count") == 0:
        out.append(finding("info", "no_gpu", "no NVIDIA GPU found on the PCI bus"))
    elif gpus and driver.get("loaded") is False:
        out.append(
            finding(
                "error",
                "gpu_without_driver",
                f"{len(gpus)} GPU(s) ({gpus[0].get('name')}) but no NVIDIA driver loaded",
            )
        )
    if managed is True:
        out.append(
            finding(
                "info",
                "driver_managed_externally",
                "the NVIDIA driver is managed outside this host"
                + (f" ({reason})" if reason else "")
                + ": change it where it is managed; gpufleet's driver role leaves it alone",
            )
        )
    return out


def _header_library_findings(copies):
    return [
        finding(
            "error",
            "cudnn_header_library_mismatch",
            f"{_copy_label(c)}: header says {c.get('header_version')} but the library is "
            f"{c.get('library_version')}",
        )
        for c in copies
        if c.get("mismatch")
    ]


def _same_cuda_major(env, sys_copy):
    return env.get("cuda_major") is None or sys_copy.get("cuda_major") in (None, env.get("cuda_major"))


def _environment(entry, path):
    """The consumer environment (entry["consumers"]) at ``path``, else None."""
    environments = (entry.get("consumers") or {}).get("environments") or []
    return next((e for e in environments if path and e.get("path") == path), None)


def _loaders(env, copy):
    """(framework, loads) of the frameworks of ``env`` that load the copy's ``libcudnn.so.<major>``."""
    soname = f"libcudnn.so.{copy.get('major')}"
    out = []
    for fw in env.get("frameworks") or []:
        loads = fw.get("loads") or {}
        if loads.get("soname") == soname and loads.get("via") not in (None, "none"):
            out.append((fw, loads))
    return out


def _wrong_copy(fw, loads, copy):
    return (
        f"{fw['name']} there ({fw.get('anchor') or 'its library'}) loads {loads.get('real_path')} "
        f"(cuDNN {loads.get('version')}, {loads.get('why')}), not the {copy.get('version')} of its env"
    )


def _env_copy_verdict(entry, copy):
    """(severity, words) of a pip/conda copy that differs from the system's: a warning only when a program of
    its environment loads another copy (named: the framework and its library's path), else info."""
    env = _environment(entry, copy.get("python_env"))
    if env is None:
        return "info", (
            "the facts do not say what its programs load (no consumers: facts of schema 1); a framework "
            "there normally loads its own copy through its library's RPATH/RUNPATH"
        )
    loaders = _loaders(env, copy)
    own = [fw["name"] for fw, loads in loaders if loads.get("copy_path") == copy.get("path")]
    wrong = [(fw, loads) for fw, loads in loaders if loads.get("copy_path") != copy.get("path")]
    if wrong:
        words = "; ".join(_wrong_copy(fw, loads, copy) for fw, loads in wrong)
        if own:
            words += (
                f"; a process that imports {', '.join(own)} and {', '.join(fw['name'] for fw, _l in wrong)} "
                f"loads libcudnn.so.{copy.get('major')} once, the first one asked for, for all of them"
            )
        return "warning", words
    if own:
        why = next(loads.get("why") for fw, loads in loaders if loads.get("copy_path") == copy.get("path"))
        return "info", f"{', '.join(own)} there load(s) this copy ({why}), as designed: nothing to do"
    return "info", f"no framework in {env['path']} loads libcudnn.so.{copy.get('major')}"


def _env_differs_findings(entry, copies, system):
    out = []
    for env_copy in (c for c in copies if c.get("source") in ENV_SOURCES):
        for sys_copy in system:
            if _same_cuda_major(env_copy, sys_copy) and env_copy.get("version") != sys_copy.get("version"):
                severity, words = _env_copy_verdict(entry, env_copy)
                out.append(
                    finding(
                        severity,
                        "cudnn_env_differs_from_system",
                        f"{_copy_label(env_copy)} differs from the system {_copy_label(sys_copy)}: {words}",
                    )
                )
    return out


def _several_copies_findings(system):
    by_major = {}
    for c in system:
        if isinstance(c.get("major"), int):
            by_major.setdefault(c["major"], []).append(c)
    out = []
    for major, same in sorted(by_major.items()):
        if len(same) > 1:
            picked = [c for c in same if c.get("resolved")]
            pick = f"the loader picks {_copy_label(picked[0])}" if picked else "the loader picks none of them"
            out.append(
                finding(
                    "warning",
                    "cudnn_several_system_copies",
                    f"{len(same)} system cuDNN copies provide libcudnn.so.{major} "
                    f"({', '.join(_copy_label(c) for c in same)}); {pick}",
                )
            )
    return out


def _resolved_findings(entry):
    return [
        finding(
            "info",
            "cudnn_loader_resolves",
            f"the loader resolves {r.get('soname')} to {r.get('real_path') or r.get('path')} "
            f"(cuDNN {r.get('version')}, copy at {r.get('copy_path')})",
        )
        for r in entry.get("cudnn_resolved") or []
    ]


def _unknown_why(words):
    """``unknown (why)`` -> ``why``; other words as they are."""
    if words.startswith("unknown (") and words.endswith(")"):
        return words[len("unknown (") : -1]
    return words


def _owner_findings(entry):
    items = [(f"CUDA {t.get('version')}", t) for t in (entry.get("cuda") or {}).get("toolkits") or []]
    items += [(f"cuDNN {c.get('version')}", c) for c in entry.get("cudnn") or []]
    return [
        finding(
            "warning",
            "owner_unknown",
            f"{label} at {item.get('path')} has no known owner: {_unknown_why(item['owner']['words'])}; "
            "find out where it came from before changing it",
        )
        for label, item in items
        if (item.get("owner") or {}).get("kind") == "unknown"
    ]


# -- what each consumer loads (entry["consumers"], report/consumers.normalize) ---------------------------
_MISMATCH_ERRORS = {
    # torch/backends/cudnn/__init__.py _init()
    "torch": "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against {built} but found "
    "runtime version {loaded}",
    # XLA's cuda_dnn.cc (TensorFlow, jax)
    "default": "Loaded runtime CuDNN library: {loaded} but source was compiled with: {built}. CuDNN library "
    "needs to have matching major version and equal or higher minor version.",
}


def _fw_label(fw, env):
    return f"{fw['name']} {fw.get('version')} in {env['path']}"


def _pin_finding(fw, env):
    requires = fw.get("requires_cudnn") or {}
    installed = fw.get("installed_cudnn") or {}
    if fw.get("pin_satisfied") is not False or not requires:
        return []
    have = (
        f"you have {installed['package']} {installed['version']}"
        if installed
        else f"{requires['package']} is not installed"
    )
    return [
        finding(
            "warning",
            "framework_cudnn_pin_unsatisfied",
            f"{_fw_label(fw, env)} requires {requires['package']}{requires['spec']}, but {have} "
            f"(pip check: '{fw['name']} {fw.get('version')} has requirement {requires['package']}"
            f"{requires['spec']}, but {have}'): pip install '{requires['package']}{requires['spec']}' there",
        )
    ]


def _as_version(text, name):
    """How the framework prints a cuDNN version: torch a tuple ``(9, 19, 0)``, XLA ``9.19.0``."""
    parts = report_consumers._parts(text)[:3]
    if name == "torch":
        return "(" + ", ".join(str(p) for p in parts) + ")"
    return ".".join(str(p) for p in parts)


def _load_finding(fw, env):
    state, loaded, built = report_consumers.framework_verdict(fw)
    loads = fw.get("loads") or {}
    if state == "not_found":
        return finding(
            "error",
            "framework_cudnn_not_found",
            f"{_fw_label(fw, env)} needs {fw['cudnn_soname']} and no directory the loader searches has it "
            f"({loads.get('why')}): it fails with 'OSError: {fw['cudnn_soname']}: cannot open shared object "
            "file: No such file or directory'",
        )
    if state == "incompatible":
        quote = _MISMATCH_ERRORS.get(fw["name"], _MISMATCH_ERRORS["default"])
        return finding(
            "error",
            "framework_cudnn_incompatible",
            f"{_fw_label(fw, env)} was built against cuDNN {built} but loads cuDNN {loaded} from "
            f"{loads.get('real_path')} ({loads.get('why')}): it fails with '"
            + quote.format(built=_as_version(built, fw["name"]), loaded=_as_version(loaded, fw["name"]))
            + "'",
        )
    return finding(
        "info",
        "consumer_loads",
        f"{_fw_label(fw, env)} loads {loads.get('soname')} = cuDNN {loaded} from {loads.get('real_path')} "
        f"({loads.get('why')})",
    )


def _cc_supported(cc, archs):
    """'sass' (a binary for the GPU), 'ptx' (only JIT from PTX), None (nothing runs) for a GPU's CC."""
    parts = report_consumers._parts(cc)
    if len(parts) < 2:
        return "unknown"
    sass = [report_consumers._parts(a) for a in archs if a.startswith("sm_")]
    ptx = [report_consumers._parts(a) for a in archs if a.startswith("compute_")]
    value = parts[0] * 10 + parts[1]
    if any(a and a[0] // 10 == parts[0] and a[0] <= value for a in sass):
        return "sass"
    return "ptx" if any(a and a[0] <= value for a in ptx) else None


def _arch_findings(fw, env, gpus):
    out = []
    for gpu in gpus:
        support = _cc_supported(gpu.get("compute_capability"), fw.get("compute_capabilities") or [])
        label = f"{_fw_label(fw, env)} was built for {', '.join(fw['compute_capabilities'])}"
        if support is None:
            out.append(
                finding(
                    "error",
                    "framework_gpu_arch_unsupported",
                    f"{label}: nothing runs on the {gpu.get('name')} (compute capability "
                    f"{gpu.get('compute_capability')}): 'CUDA error: no kernel image is available for "
                    "execution "
                    "on the device'",
                )
            )
        elif support == "ptx":
            out.append(
                finding(
                    "warning",
                    "framework_gpu_arch_ptx_only",
                    f"{label}: the {gpu.get('name')} (compute capability {gpu.get('compute_capability')}) "
                    "runs "
                    "it only through JIT compilation of PTX ('CUDA kernels will be jit-compiled from PTX, "
                    "which "
                    "could take 30 minutes or longer')",
                )
            )
    return out


# What a process prints when no kernel image fits the GPU: torch/cuda/__init__.py _check_capability's
# warning and the CUDA runtime's text for cudaErrorNoKernelImageForDevice (209), as each framework shows it.
_NO_KERNEL_ERRORS = {
    "torch": "{gpu} with CUDA capability sm_{sm} is not compatible with the current PyTorch installation. "
    "The current PyTorch install supports CUDA capabilities {archs}.' then 'CUDA error: no kernel image is "
    "available for execution on the device",
    "onnxruntime-gpu": "CUDA failure 209: no kernel image is available for execution on the device",
    "default": "CUDA error: no kernel image is available for execution on the device",
}


def _compiled_archs(compiled):
    """['sm_80', 'sm_90', 'compute_90'] of a ``compiled_for`` fact ({sm: ['8.0', ...], ptx: [...]})."""
    names = [f"sm_{cc.replace('.', '')}" for cc in compiled.get("sm") or []]
    return names + [f"compute_{cc.replace('.', '')}" for cc in compiled.get("ptx") or []]


def _compiled_findings(fw, env, gpus):
    """A host GPU that no cubin of the framework's kernel library fits and no PTX can be JIT-compiled for
    (``compiled_for``, read from its .nv_fatbin): error; from a sampled read (``complete`` false): warning."""
    compiled = fw.get("compiled_for") or {}
    archs = _compiled_archs(compiled)
    if not archs:
        return []
    sampled = (
        ""
        if compiled.get("complete")
        else f" (from its first {compiled.get('sampled_blobs')} fatbin blobs only: a bound stopped the read)"
    )
    where = compiled.get("path") or "its kernel library"
    label = f"{_fw_label(fw, env)} has kernels for {' '.join(archs)} in {where}{sampled}"
    out = []
    for gpu in gpus:
        cc = str(gpu.get("compute_capability") or "")
        support = _cc_supported(cc, archs)
        if support is None:
            quote = _NO_KERNEL_ERRORS.get(fw["name"], _NO_KERNEL_ERRORS["default"]).format(
                gpu=gpu.get("name"),
                sm=cc.replace(".", ""),
                archs=" ".join(a for a in archs if a[:3] == "sm_"),
            )
            out.append(
                finding(
                    "error" if compiled.get("complete") else "warning",
                    "framework_gpu_arch_unsupported",
                    f"{label}: none runs on the {gpu.get('name')} (compute capability {cc}): no cubin of "
                    f"its major with a minor <= {cc}, no PTX <= {cc}; it fails with '{quote}'",
                )
            )
        elif support == "ptx":
            out.append(
                finding(
                    "warning",
                    "framework_gpu_arch_ptx_only",
                    f"{label}: the {gpu.get('name')} (compute capability {cc}) runs them only through JIT "
                    "compilation of PTX (slow first start; the JIT cache is CUDA_CACHE_PATH)",
                )
            )
    return out


def _framework_findings(entry, env):
    out = []
    for fw in env.get("frameworks") or []:
        out += _pin_finding(fw, env)
        if fw.get("cudnn_soname"):
            out.append(_load_finding(fw, env))
        if fw.get("compute_capabilities"):
            out += _arch_findings(fw, env, entry.get("gpus") or [])
        if fw.get("compiled_for"):
            out += _compiled_findings(fw, env, entry.get("gpus") or [])
    return out


def _env_findings(env):
    python = env.get("python") or {}
    out = []
    if python and python.get("exists") is False and python.get("executable"):
        out.append(
            finding(
                "warning",
                "python_env_broken",
                f"the Python environment {env['path']} has no working python "
                f"({env['reasons'].get('python')}): "
                "nothing starts there; recreate it",
            )
        )
    return out


def _dir_findings(consumers):
    used = {
        r.get("dir"): r
        for env in consumers.get("environments") or []
        for r in (env.get("cudnn") or [])
        if r and r.get("dir")
    }
    out = []
    for d in consumers.get("library_dirs") or []:
        if d.get("mixed"):
            files = ", ".join(f"{f['soname']} {f['version']}" for f in d.get("files") or [])
            record = (
                f"; {', '.join(d['differs_from_record'])} not the wheel's file (RECORD {d.get('record')})"
                if d.get("differs_from_record")
                else ""
            )
            out.append(
                finding(
                    "error",
                    "cudnn_mixed_sub_libraries",
                    f"the cuDNN libraries in {d['dir']} come from different releases ({files}{record}): "
                    "a call that loads the odd sub-library fails (CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH; "
                    "torch: 'cuDNN version incompatibility: PyTorch was compiled against ... but found "
                    "runtime version ...'), calls that do not load it still work; reinstall that copy from "
                    "one release (its package, or pip install --force-reinstall of its wheel) instead of "
                    "copying files in",
                )
            )
        if d.get("missing") and d["dir"] in used:
            first = d["missing"][0]
            out.append(
                finding(
                    "error",
                    "cudnn_missing_sub_libraries",
                    f"{d['dir']} (loaded as {used[d['dir']].get('soname')}) lacks {', '.join(d['missing'])}: "
                    f"'Could not load library {first}. Error: {first}: cannot open shared object file: No "
                    "such "
                    "file or directory'",
                )
            )
    return out


def consumer_findings(entry):
    """What each consumer environment loads and whether that works (entry["consumers"])."""
    consumers = entry.get("consumers") or {}
    out = []
    for env in consumers.get("environments") or []:
        out += _env_findings(env) + _framework_findings(entry, env)
    return out + _dir_findings(consumers)


# -- the driver now and at the next boot (entry["driver_runtime"]) ----------------------------------------
def _mismatch_findings(runtime, managed):
    versions = runtime.get("versions") or {}
    if not runtime.get("version_mismatch"):
        return []
    where = "on the host that manages the driver" if managed else "here"
    return [
        finding(
            "error",
            "driver_version_mismatch",
            f"NVML mismatch now: the loaded kernel module is {versions.get('loaded')} but the user-space "
            f"libraries are {versions.get('userspace')}: nvidia-smi and every CUDA program fail with "
            "'Failed to "
            "initialize NVML: Driver/library version mismatch'; reboot, or reload the nvidia modules "
            f"{where} "
            "(stop what uses the GPU, then rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe "
            "nvidia)",
        )
    ]


def _gsp_findings(runtime):
    versions = runtime.get("versions") or {}
    wanted = versions.get("package") or versions.get("userspace")
    if runtime.get("kernel_module") != "open" or not wanted or runtime.get("install_method") == "host":
        return []
    if wanted in (runtime.get("gsp_firmware") or []):
        return []
    return [
        finding(
            "warning",
            "driver_gsp_firmware_missing",
            f"no GSP firmware for driver {wanted} under /lib/firmware/nvidia/{wanted}/ (found: "
            f"{', '.join(runtime.get('gsp_firmware') or []) or 'none'}): the open kernel module of {wanted} "
            "cannot initialize the GPU ('RmInitAdapter failed'); install the firmware package of that driver",
        )
    ]


def _boot_findings(runtime):
    boot = runtime.get("next_boot") or {}
    dkms = runtime.get("dkms") or []
    kernels = runtime.get("kernels") or []
    out = []
    if boot and boot.get("has_module") is False:
        kernel = next((k for k in kernels if k.get("release") == boot.get("kernel")), {})
        todo = (
            f"dkms autoinstall -k {boot['kernel']}"
            if dkms and kernel.get("headers")
            else f"install the headers of {boot['kernel']} (linux-headers-{boot['kernel']} or kernel-devel-"
            f"{boot['kernel']}), then dkms autoinstall -k {boot['kernel']}"
            if dkms
            else f"install the driver's kernel module package for {boot['kernel']}"
        )
        out.append(
            finding(
                "error",
                "next_boot_without_driver",
                f"the next boot has no NVIDIA driver: kernel {boot['kernel']} ({boot.get('why')}) has no "
                "nvidia "
                f"module (no DKMS build, no precompiled package, no nvidia.ko); run: {todo}",
            )
        )
    for k in kernels if dkms else []:
        if not k.get("headers") and (k.get("module") or {}).get("kind") == "none":
            out.append(
                finding(
                    "warning",
                    "kernel_headers_missing",
                    f"kernel {k['release']} is installed without its headers: DKMS cannot build the nvidia "
                    f"module for it (install linux-headers-{k['release']} or kernel-devel-{k['release']})",
                )
            )
    return out


def driver_runtime_findings(entry):
    """The loaded module against the user space and the firmware, and the next boot."""
    runtime = entry.get("driver_runtime") or {}
    if not runtime:
        return []
    managed, _reason = managed_externally(entry)
    out = _mismatch_findings(runtime, managed is True)
    if managed is not True:
        out += _gsp_findings(runtime) + _boot_findings(runtime)
    return out


# -- CUDA forward compatibility (entry["cuda_compat"], the toolkit environments' libcuda) -----------------
def gpu_data_center(gpu):
    """True/False/None (unknown): whether one GPU of a host entry is a data-center part. Its ``data_center``
    when the entry has one; else kb/gpus.py's answer (the one definition, ``is_data_center``) for its PCI
    id (NVIDIA's supported-gpus.json name), else for its name."""
    if isinstance(gpu.get("data_center"), bool):
        return gpu["data_center"]
    resolved = None
    if gpu.get("device_id"):
        item = {"pci_device_id": gpu["device_id"]}
        if gpu.get("subsystem_device_id"):
            item["pci_subsystem_id"] = gpu["subsystem_device_id"]
        try:
            resolved = kb_gpus.resolve_gpu(item)[0].get("data_center")
        except Exception:  # an id the tables cannot read: unknown, never a crash of the audit
            resolved = None
    name = gpu.get("name")
    if resolved is None and name and name != "unknown":
        resolved = kb_gpus.is_data_center(name)
    return resolved


def _compat_device(gpus):
    """(severity, code, words) when the host's GPUs decide against forward compatibility, else None."""
    verdicts = [(g, gpu_data_center(g)) for g in gpus]
    not_dc = [g for g, dc in verdicts if dc is False]
    unknown = [g for g, dc in verdicts if dc is None]
    if not_dc:
        names = ", ".join(f"{g.get('name')} ({g.get('pci_bus_id') or g.get('index')})" for g in not_dc)
        return (
            "error",
            "cuda_compat_not_supported_on_device",
            f"but {names} {'is' if len(not_dc) == 1 else 'are'} not a data-center GPU, and forward "
            "compatibility is only for data-center GPUs (and select NGC Server Ready RTX SKUs, Jetson): they "
            "fail with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804) 'forward compatibility was attempted "
            "on non supported HW'; take the compat directory out of LD_LIBRARY_PATH or remove the package",
        )
    if unknown or not gpus:
        which = ", ".join(str(g.get("name")) for g in unknown) or "no GPU was found"
        return (
            "info",
            "cuda_compat_device_unknown",
            f"whether the GPUs allow it could not be decided ({which}: not known to be data-center GPUs); "
            "on other GPUs they fail with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)",
        )
    return None


def _compat_verdict(compat, libcuda, driver, gpus=()):
    """(severity, code, words) of a toolkit whose programs load a forward-compatibility libcuda: the one place
    the forward-compatibility rule of the audit is decided (the compat libcuda against the driver, NVIDIA's
    table of base branches, then the GPUs: data-center parts only)."""
    loaded = report_consumers._parts(libcuda.get("version"))
    base = report_consumers._parts(driver.get("version"))
    if not loaded or not base:
        return "info", "cuda_compat_in_use", "the driver's version is unknown"
    if loaded < base:
        return (
            "error",
            "cuda_compat_older_than_driver",
            (
                f"older than the driver {driver.get('version')}: they fail with "
                "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH "
                "(803) 'system has unsupported display driver / cuda driver combination'; take the compat "
                "directory out of LD_LIBRARY_PATH or remove the package"
            ),
        )
    row = kb_cuda.FORWARD_COMPAT.get(str(compat.get("major_minor")))
    if loaded[0] != base[0] and row is not None and base[0] not in row[0]:
        return (
            "error",
            "cuda_compat_not_supported",
            (
                f"NVIDIA's forward-compatibility table does not allow it on driver branch R{base[0]}: they "
                "fail with "
                "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804) 'forward compatibility was attempted on non "
                "supported HW' (also on GPUs that are not data-center GPUs)"
            ),
        )
    device = _compat_device(list(gpus))
    if device is not None:
        return device
    return "info", "cuda_compat_in_use", f"on driver {driver.get('version')} (forward compatibility)"


def _compat_what(compat):
    package = compat.get("package") or {}
    lib = (
        f"libcuda {compat['libcuda_version']}" if compat.get("libcuda_version") else "no libcuda.so.<version>"
    )
    return f"{package['name']} {package.get('version')}, {lib}" if package.get("name") else lib


def cuda_compat_findings(entry):
    """cuda-compat installed: which libcuda the toolkit's programs get and whether the driver allows it."""
    toolkits = {
        e["path"]: e
        for e in (entry.get("consumers") or {}).get("environments") or []
        if e.get("kind") == "cuda_toolkit"
    }
    out = []
    for compat in entry.get("cuda_compat") or []:
        libcuda = (toolkits.get(compat.get("toolkit")) or {}).get("libcuda") or {}
        if not libcuda.get("compat"):
            out.append(
                finding(
                    "info",
                    "cuda_compat_unused",
                    f"{compat.get('path')} ({_compat_what(compat)}) is installed but "
                    "programs "
                    f"built with {compat.get('toolkit')} load {libcuda.get('real_path') or 'no libcuda'} "
                    f"({libcuda.get('why')})",
                )
            )
            continue
        severity, code, words = _compat_verdict(
            compat, libcuda, entry.get("driver") or {}, entry.get("gpus") or []
        )
        out.append(
            finding(
                severity,
                code,
                f"programs built with {compat.get('toolkit')} load the forward-compatibility libcuda "
                f"{libcuda.get('version')} ({libcuda.get('why')}), {words}",
            )
        )
    return out


def local_findings(entry):
    """Findings decided from the host's own observations."""
    copies = entry.get("cudnn") or []
    system = [c for c in copies if c.get("source") in SYSTEM_SOURCES]
    return (
        _gpu_and_driver_findings(entry)
        + _header_library_findings(copies)
        + _env_differs_findings(entry, copies, system)
        + _several_copies_findings(system)
        + _resolved_findings(entry)
        + _owner_findings(entry)
        + consumer_findings(entry)
        + driver_runtime_findings(entry)
        + cuda_compat_findings(entry)
    )


# -- fallback rules: the driver's own CUDA version -------------------------------------------------------
def _toolkit_driver_finding(t, drv, label, advice_where):
    tk = _major_minor(t.get("major_minor") or t.get("version"))
    if not tk:
        return None
    if tk[0] > drv[0]:
        return finding(
            "error",
            "cuda_needs_newer_driver",
            f"CUDA {t.get('version')} at {t.get('path')} cannot run on {label}: "
            f"install a driver for CUDA {tk[0]}.x{advice_where}",
        )
    if tk[0] == drv[0] and tk[1] > drv[1]:
        return finding(
            "warning",
            "cuda_minor_version_compat",
            f"CUDA {t.get('version')} at {t.get('path')} runs on {label} only under "
            "minor-version compatibility (no PTX JIT of newer code)",
        )
    return None


def driver_api_findings(entry):
    """cuDNN builds and toolkits for a CUDA newer than the driver's own CUDA version."""
    driver = entry.get("driver") or {}
    drv = _major_minor(driver.get("cuda_driver_version"))
    if not drv:
        return []
    label = f"driver {driver.get('version')} (CUDA {driver.get('cuda_driver_version')})"
    managed, _reason = managed_externally(entry)
    advice_where = " where the driver is managed (outside this host)" if managed is True else ""
    out = []
    for t in (entry.get("cuda") or {}).get("toolkits") or []:
        f = _toolkit_driver_finding(t, drv, label, advice_where)
        if f:
            out.append(f)
    for c in entry.get("cudnn") or []:
        major = c.get("cuda_major")
        if isinstance(major, int) and major > drv[0]:
            out.append(
                finding(
                    "error",
                    "cudnn_needs_newer_driver",
                    f"{_copy_label(c)} is built for CUDA {major} and cannot run on {label}",
                )
            )
    return out


# -- the compatibility rules (plan/compat.py) -----------------------------------------------------------
def _check_gpus(entry):
    """The host's GPUs as compat.check's ``gpus`` items (PCI ids, else the compute capability)."""
    gpus = []
    for g in entry.get("gpus") or []:
        if g.get("device_id"):
            item = {"pci_device_id": g["device_id"]}
            if g.get("subsystem_device_id"):
                item["pci_subsystem_id"] = g["subsystem_device_id"]
            if g.get("subsystem_vendor_id"):
                item["pci_subsystem_vendor_id"] = g["subsystem_vendor_id"]
            gpus.append(item)
        elif g.get("compute_capability") not in (None, "unknown"):
            gpus.append({"compute_capability": g["compute_capability"]})
    return gpus


def _check_plans(entry):
    """One compat.check call (keyword arguments) per installed toolkit and per cuDNN copy."""
    driver = entry.get("driver") or {}
    base = {"gpus": _check_gpus(entry)}
    if driver.get("installed") and driver.get("version") not in (None, "unknown"):
        base["driver_version"] = driver["version"]
        if driver.get("kernel_module") in ("open", "proprietary"):
            base["kernel_module"] = driver["kernel_module"]
    plans = []
    for t in (entry.get("cuda") or {}).get("toolkits") or []:
        if t.get("version") not in (None, "unknown"):
            plans.append(dict(base, cuda_version=t.get("major_minor") or t["version"]))
    for c in entry.get("cudnn") or []:
        if c.get("version") not in (None, "unknown") and c.get("cuda_major"):
            plans.append(dict(base, cudnn_version=c["version"], cudnn_cuda_major=c["cuda_major"]))
    return plans


def kb_findings(entry, check=plan_compat.check):
    """Ask the compatibility rules (``check``: plan.compat.check) about each toolkit and cuDNN copy installed,
    on this host's GPUs and driver; returns (severity, message) pairs."""
    out = []
    for plan in _check_plans(entry):
        result = check(**plan)
        if not isinstance(result, dict):
            raise TypeError(f"compat check returned {type(result).__name__}, expected a dict")
        out.extend(("error", m) for m in result.get("errors") or [])
        out.extend(("warning", m) for m in result.get("warnings") or [])
    return out


def compat_findings(entry, compat=None):
    """Findings from the compatibility rules (GPUs the stack cannot serve, minimum drivers).

    ``compat``: a function ``entry -> findings`` (finding dicts or (severity, message) pairs); default
    ``kb_findings`` (plan.compat.check; tests inject another). Any exception becomes an ``info`` finding
    ``compat_rules_failed``: the audit never crashes on a knowledge-base change.
    """
    rules = kb_findings if compat is None else compat
    try:
        raw = rules(entry)
    except Exception as exc:  # any rule problem: report it, never crash the audit
        return [
            finding(
                "info",
                "compat_rules_failed",
                f"compatibility rules failed on this host ({type(exc).__name__}: {exc})",
            )
        ]
    return _normalize_raw(raw)


def _normalize_item(item):
    if isinstance(item, dict):
        sev = item.get("severity", "warning")
        return finding(
            sev if sev in SEVERITIES else "warning", item.get("code") or "compat", str(item.get("message"))
        )
    sev, msg = item
    return finding(sev if sev in SEVERITIES else "warning", "compat", str(msg))


def _normalize_raw(raw):
    out, seen = [], set()
    for item in raw or []:
        f = _normalize_item(item)
        key = (f["severity"], f["message"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def host_findings(entry, compat=None, use_compat=True):
    """Every finding of one reachable host, errors first.

    The compatibility rules decide whether the driver can run each toolkit and cuDNN build; when they fail
    (or ``use_compat`` is false), the host's own driver CUDA version decides (driver_api_findings).
    """
    out = local_findings(entry)
    kb = compat_findings(entry, compat) if use_compat and entry.get("gpu_count") else []
    if not use_compat or any(f["code"].startswith("compat_rules_") for f in kb):
        out.extend(driver_api_findings(entry))
    out.extend(kb)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order.get(f["severity"], 9))
