# Copyright: gpufleet maintainers
# Apache-2.0 (see galaxy.yml)
"""GPU passthrough for containers: observe a host, choose a mode, plan the `docker run` options.

Three ways to hand a host's NVIDIA GPUs to a container:

- ``toolkit``: the NVIDIA Container Toolkit does it (``--gpus all``, a device request that docker
  answers through ``nvidia-container-runtime-hook``; or the ``nvidia`` runtime registered in docker).
- ``cdi``: a Container Device Interface spec (``/etc/cdi`` or ``/var/run/cdi``, written by
  ``nvidia-ctk cdi generate``) and a docker that reads CDI specs (``--device nvidia.com/gpu=all``).
- ``devices``: neither is there; map the device nodes (``/dev/nvidia0``.., ``/dev/nvidiactl``,
  ``/dev/nvidia-uvm``, ...) and bind-mount the driver's user-space libraries and tools read-only,
  the way the toolkit does itself, plus an ld.so.conf.d entry for the library folder.

Observation (:func:`observe`) reads files under a ``root`` (a fake tree in tests) and takes the
text of ``docker info --format '{{json .}}'`` and ``ldconfig -p`` from the caller, so everything
here is pure and testable. :func:`plan` decides; it never probes. Stdlib only, Python >= 3.9.
"""

import json
import os
import posixpath
import re

MODES = ("toolkit", "cdi", "devices")
REQUESTS = ("auto",) + MODES
MODE_VARIABLE = "GPUFLEET_GPU_MODE"

# What the container toolkit mounts for the `compute` and `utility` driver capabilities
# (libnvidia-container, src/nvc_info.c: utility_libs, compute_libs, utility_bins, compute_bins).
DRIVER_LIBRARIES = (
    "libnvidia-ml.so",
    "libnvidia-cfg.so",
    "libnvidia-nscq.so",
    "libcuda.so",
    "libcudadebugger.so",
    "libnvidia-opencl.so",
    "libnvidia-gpucomp.so",
    "libnvidia-ptxjitcompiler.so",
    "libnvidia-fatbinaryloader.so",
    "libnvidia-allocator.so",
    "libnvidia-compiler.so",
    "libnvidia-pkcs11.so",
    "libnvidia-pkcs11-openssl3.so",
    "libnvidia-nvvm.so",
)
# Without these two nothing CUDA works in the container.
REQUIRED_LIBRARIES = ("libcuda.so", "libnvidia-ml.so")
DRIVER_BINARIES = ("nvidia-smi", "nvidia-debugdump", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server")

# Where the driver's user space lives on the host, searched after the ldconfig cache.
# /usr/local/nvidia/{lib64,lib,bin}: hosts whose driver is provided from outside (VMs, k8s nodes).
LIBRARY_DIRS = (
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib64",
    "/lib",
)
BINARY_DIRS = ("/usr/local/nvidia/bin", "/usr/bin", "/usr/sbin", "/bin", "/usr/local/bin")
TOOLKIT_HOOKS = ("nvidia-container-runtime-hook", "nvidia-container-toolkit")
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
CDI_GPU_KIND = "nvidia.com/gpu"

# Inside the container (mode `devices`).
CONTAINER_LIB_DIR = "/usr/local/nvidia/lib64"
CONTAINER_BIN_DIR = "/usr/bin"
LD_SO_CONF = "/etc/ld.so.conf.d/000-gpufleet-nvidia-driver.conf"

_GPU_NODE = re.compile(r"^nvidia[0-9]+$")
_CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")
_DRIVER_VERSION = re.compile(r"\s(\d+\.\d+(?:\.\d+)?)\s")


class GpuPassthroughError(Exception):
    """A passthrough mode cannot be planned; the message is one line and says what to do."""


class NoGpuError(GpuPassthroughError):
    """The host has no usable NVIDIA GPU."""


# --------------------------------------------------------------------------- paths under a root
def _host(root, path):
    """The host path of `path` (absolute, in the observed system) under `root`."""
    if root in ("", "/"):
        return path
    return os.path.join(root, path.lstrip("/"))


def resolve(root, path, max_hops=40):
    """Follow symlinks of `path` inside `root` (absolute link targets stay inside it).

    Returns the resolved absolute path in the observed system, or None for a loop or a
    dangling link.
    """
    parts = [p for p in path.split("/") if p]
    done = "/"
    hops = 0
    while parts:
        part = parts.pop(0)
        candidate = posixpath.normpath(posixpath.join(done, part))
        host = _host(root, candidate)
        if os.path.islink(host):
            hops += 1
            if hops > max_hops:
                return None
            target = os.readlink(host)
            base = "/" if target.startswith("/") else done
            parts = [p for p in posixpath.normpath(posixpath.join(base, target)).split("/") if p] + parts
            done = "/"
            continue
        done = candidate
    return done if os.path.exists(_host(root, done)) else None


# --------------------------------------------------------------------------- observations
def find_device_nodes(root="/"):
    """Sorted NVIDIA device nodes: GPUs, control/uvm/modeset nodes, and /dev/nvidia-caps/*."""
    dev = _host(root, "/dev")
    try:
        names = os.listdir(dev)
    except OSError:
        return []
    nodes = [f"/dev/{n}" for n in names if _GPU_NODE.match(n) or n in _CONTROL_NODES]
    try:
        caps = os.listdir(os.path.join(dev, "nvidia-caps"))
    except OSError:
        caps = []
    nodes += [f"/dev/nvidia-caps/{n}" for n in caps if n.startswith("nvidia-cap")]
    return sorted(nodes, key=_node_order)


def _node_order(node):
    name = node.rsplit("/", 1)[-1]
    if _GPU_NODE.match(name):
        return (0, int(name[6:]), name)
    if node.startswith("/dev/nvidia-caps/"):
        return (2, 0, name)
    return (1, 0, name)


def gpu_nodes(nodes):
    return [n for n in nodes if _GPU_NODE.match(n.rsplit("/", 1)[-1])]


def find_proc_gpus(root="/"):
    """PCI bus ids the loaded driver lists in /proc/driver/nvidia/gpus."""
    try:
        return sorted(os.listdir(_host(root, "/proc/driver/nvidia/gpus")))
    except OSError:
        return []


def find_pci_gpus(root="/"):
    """PCI addresses of NVIDIA display/3D controllers (works without a driver)."""
    base = _host(root, "/sys/bus/pci/devices")
    found = []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return found
    for name in names:
        try:
            with open(os.path.join(base, name, "vendor"), encoding="ascii") as fh:
                vendor = fh.read().strip().lower()
            with open(os.path.join(base, name, "class"), encoding="ascii") as fh:
                klass = fh.read().strip().lower()
        except (OSError, UnicodeDecodeError):
            continue
        if vendor == "0x10de" and klass.startswith("0x03"):
            found.append(name)
    return found


def read_driver_version(root="/"):
    try:
        with open(_host(root, "/proc/driver/nvidia/version"), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    match = _DRIVER_VERSION.search(text)
    return match.group(1) if match else None


def parse_docker_info(text):
    """Runtimes, CDI support and version from ``docker info --format '{{json .}}'`` (None: no docker)."""
    if not text:
        return {"available": False, "runtimes": [], "cdi_spec_dirs": [], "server_version": None}
    try:
        info = json.loads(text)
    except ValueError:
        return {"available": False, "runtimes": [], "cdi_spec_dirs": [], "server_version": None}
    if not isinstance(info, dict):
        info = {}
    runtimes = info.get("Runtimes") or {}
    cdi_dirs = info.get("CDISpecDirs") or []
    return {
        "available": bool(info.get("ServerVersion")),
        "runtimes": sorted(runtimes) if isinstance(runtimes, dict) else [],
        "cdi_spec_dirs": [d for d in cdi_dirs if isinstance(d, str)],
        "server_version": info.get("ServerVersion"),
    }


def parse_ldconfig(text):
    """``ldconfig -p`` as an ordered list of (soname, path) for this machine's word size."""
    entries = []
    for line in (text or "").splitlines():
        match = _LDCONFIG_LINE.match(line)
        if match and ("x86-64" in match.group(2) or "AArch64" in match.group(2)):
            entries.append((match.group(1), match.group(3)))
    return entries


def _lib_matches(name, base):
    """libcuda.so, libcuda.so.1, libcuda.so.580.159.04 match base libcuda.so."""
    return name == base or (name.startswith(base + ".") and re.match(r"^[0-9.]+$", name[len(base) + 1 :]))


def find_driver_libraries(root="/", ldconfig_text=None, dirs=LIBRARY_DIRS):
    """Map each driver library (base name) to the real file that holds it, in the observed system.

    The ldconfig cache decides first (the entry the loader would take), then the folders in
    `dirs`; symlinks are followed, so `libcuda.so.1` gives `.../libcuda.so.580.159.04`.
    """
    found = {}
    for soname, path in parse_ldconfig(ldconfig_text):
        for base in DRIVER_LIBRARIES:
            if base not in found and _lib_matches(soname, base):
                real = _real_file(root, path)
                if real:
                    found[base] = real
    for folder in dirs:
        try:
            names = sorted(os.listdir(_host(root, folder)))
        except OSError:
            continue
        for base in DRIVER_LIBRARIES:
            if base in found:
                continue
            # prefer the fully versioned file, then the soname link, then the dev link
            candidates = sorted((n for n in names if _lib_matches(n, base)), key=lambda n: (-n.count("."), n))
            real = _first_file(root, [posixpath.join(folder, name) for name in candidates])
            if real:
                found[base] = real
    return found


def _real_file(root, path):
    """Where ``path`` leads (symlinks followed) when that is a file, else None."""
    real = resolve(root, path)
    return real if real and os.path.isfile(_host(root, real)) else None


def _first_file(root, paths):
    return next((real for real in (_real_file(root, path) for path in paths) if real), None)


def find_driver_binaries(root="/", dirs=BINARY_DIRS):
    found = {}
    for name in DRIVER_BINARIES:
        real = _first_file(root, [posixpath.join(folder, name) for folder in dirs])
        if real:
            found[name] = real
    return found


def find_toolkit_hooks(root="/", dirs=BINARY_DIRS):
    return [
        posixpath.join(folder, name)
        for name in TOOLKIT_HOOKS
        for folder in dirs
        if os.path.isfile(_host(root, posixpath.join(folder, name)))
    ]


def parse_cdi_spec(text):
    """(kind, [device names]) of a CDI spec in JSON or the YAML that nvidia-ctk writes."""
    try:
        spec = json.loads(text)
    except ValueError:
        spec = None
    if isinstance(spec, dict):
        devices = spec.get("devices") or []
        names = [d.get("name") for d in devices if isinstance(d, dict) and d.get("name") is not None]
        return spec.get("kind"), [str(n) for n in names]
    kind = None
    names = []
    in_devices = False
    item_indent = None
    for line in text.splitlines():
        top = re.match(r"^([A-Za-z]\w*):\s*(.*?)\s*$", line)
        if top:
            key, value = top.group(1), top.group(2).strip("'\"")
            if key == "kind":
                kind = value
            in_devices = key == "devices"
            continue
        if not in_devices:
            continue
        item = re.match(r"^( *)- +(.*)$", line)
        if item and (item_indent is None or len(item.group(1)) == item_indent):
            item_indent = len(item.group(1))
            rest = item.group(2)
        elif item_indent is not None and re.match("^ {" + str(item_indent + 2) + r"}\S", line):
            rest = line[item_indent + 2 :]
        else:
            continue
        name = re.match(r"^name:\s*(.+?)\s*$", rest)
        if name:
            names.append(name.group(1).strip("'\""))
    return kind, names


def find_cdi_devices(root="/", dirs=CDI_DIRS):
    """{"specs": [paths], "devices": ["nvidia.com/gpu=all", ...]} from the CDI spec folders."""
    specs = []
    devices = []
    for folder in dirs:
        try:
            names = sorted(os.listdir(_host(root, folder)))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".yaml", ".yml", ".json")):
                continue
            path = posixpath.join(folder, name)
            try:
                with open(_host(root, path), encoding="utf-8") as fh:
                    kind, names_in = parse_cdi_spec(fh.read())
            except (OSError, UnicodeDecodeError):
                continue
            if kind != CDI_GPU_KIND:
                continue
            specs.append(path)
            devices += [f"{kind}={n}" for n in names_in if f"{kind}={n}" not in devices]
    return {"specs": specs, "devices": devices}


def observe(root="/", docker_info_text=None, ldconfig_text=None):
    """Everything :func:`plan` needs, as plain data (JSON-serialisable)."""
    return {
        "root": root,
        "device_nodes": find_device_nodes(root),
        "proc_gpus": find_proc_gpus(root),
        "pci_gpus": find_pci_gpus(root),
        "driver_version": read_driver_version(root),
        "docker": parse_docker_info(docker_info_text),
        "toolkit_hooks": find_toolkit_hooks(root),
        "cdi": find_cdi_devices(root),
        "libraries": find_driver_libraries(root, ldconfig_text),
        "binaries": find_driver_binaries(root),
    }


# --------------------------------------------------------------------------- decisions
def gpu_presence(obs):
    """None when a usable GPU is there, else the one-line reason why not."""
    if gpu_nodes(obs["device_nodes"]) or obs["proc_gpus"]:
        return None
    if obs["pci_gpus"]:
        return (
            "no NVIDIA GPU on this host usable by containers (NVIDIA PCI device(s) "
            + ", ".join(obs["pci_gpus"])
            + " but no driver loaded: no /dev/nvidia[0-9]* and no /proc/driver/nvidia/gpus)"
        )
    return "no NVIDIA GPU on this host (no /dev/nvidia[0-9]* device node, no /proc/driver/nvidia/gpus entry)"


def _toolkit_problem(obs):
    if "nvidia" in obs["docker"]["runtimes"] or obs["toolkit_hooks"]:
        return None
    return (
        "no NVIDIA Container Toolkit: docker has no `nvidia` runtime and no nvidia-container-runtime-hook "
        "is installed"
    )


def _cdi_problem(obs):
    cdi = obs["cdi"]
    if not cdi["devices"]:
        where = " or ".join(CDI_DIRS)
        return f"no CDI spec of kind {CDI_GPU_KIND} in {where} (make one: nvidia-ctk cdi generate)"
    if not obs["docker"]["cdi_spec_dirs"]:
        return "docker does not read CDI specs (needs Docker >= 25 with the cdi feature on)"
    return None


def _devices_problem(obs):
    nodes = obs["device_nodes"]
    missing = []
    if not gpu_nodes(nodes):
        missing.append("/dev/nvidia[0-9]*")
    for node in ("/dev/nvidiactl", "/dev/nvidia-uvm"):
        if node not in nodes:
            missing.append(node)
    missing += [lib + "*" for lib in REQUIRED_LIBRARIES if lib not in obs["libraries"]]
    if "nvidia-smi" not in obs["binaries"]:
        missing.append("nvidia-smi")
    if not missing:
        return None
    advice = ""
    if "/dev/nvidia-uvm" in missing:
        advice = " (/dev/nvidia-uvm appears after `nvidia-modprobe -u -c=0` or any CUDA program on the host)"
    return "missing on the host: " + ", ".join(missing) + advice


_PROBLEMS = {"toolkit": _toolkit_problem, "cdi": _cdi_problem, "devices": _devices_problem}


def available_modes(obs):
    """{mode: None when usable else the reason}, in preference order."""
    return {mode: _PROBLEMS[mode](obs) for mode in MODES}


def choose_mode(obs, requested="auto"):
    """The mode to use, or GpuPassthroughError/NoGpuError with a one-line reason."""
    requested = (requested or "auto").strip().lower()
    if requested not in REQUESTS:
        raise GpuPassthroughError(f"{MODE_VARIABLE}={requested!r} is not one of {', '.join(REQUESTS)}")
    absent = gpu_presence(obs)
    if absent:
        raise NoGpuError(absent)
    problems = available_modes(obs)
    if requested != "auto":
        if problems[requested]:
            usable = [m for m in MODES if not problems[m]]
            hint = f"; usable here: {', '.join(usable)}" if usable else ""
            raise GpuPassthroughError(
                f"{MODE_VARIABLE}={requested} cannot be used: {problems[requested]}{hint}"
            )
        return requested
    for mode in MODES:
        if not problems[mode]:
            return mode
    raise GpuPassthroughError(
        "no way to pass the GPU into a container: " + "; ".join(f"{m}: {problems[m]}" for m in MODES)
    )


def plan(obs, requested="auto", ld_so_conf_source=None):
    """Docker options (community.docker.docker_container keys) for the chosen mode.

    `ld_so_conf_source`: host path of a file holding :data:`CONTAINER_LIB_DIR` (mode `devices`);
    the caller writes :func:`ld_so_conf_content` there. Returns a dict with `mode`, `reason`,
    `driver_version`, `docker` (options), `cli` (the equivalent `docker run` arguments),
    `needs_ldconfig`, `files`.
    """
    mode = choose_mode(obs, requested)
    how = "requested" if (requested or "auto").strip().lower() != "auto" else "auto-detected"
    env = {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
    result = {
        "mode": mode,
        "reason": how,
        "driver_version": obs.get("driver_version") or "unknown",
        "docker": {},
        "cli": [],
        "needs_ldconfig": False,
        "files": {},
    }
    if mode == "toolkit":
        if obs["toolkit_hooks"]:
            result["docker"] = {
                "device_requests": [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}],
                "env": env,
            }
            result["cli"] = ["--gpus", "all"] + _env_cli(env)
        else:
            result["docker"] = {"runtime": "nvidia", "env": env}
            result["cli"] = ["--runtime", "nvidia"] + _env_cli(env)
        return result
    if mode == "cdi":
        ids = [d for d in obs["cdi"]["devices"] if d == f"{CDI_GPU_KIND}=all"] or obs["cdi"]["devices"]
        result["docker"] = {"device_requests": [{"driver": "cdi", "device_ids": ids}]}
        for dev in ids:
            result["cli"] += ["--device", dev]
        return result
    # devices
    root = obs.get("root") or "/"
    devices = [f"{_host(root, n)}:{n}:rwm" for n in obs["device_nodes"]]
    volumes = []
    seen = set()
    for base in DRIVER_LIBRARIES:
        real = obs["libraries"].get(base)
        if not real or real in seen:
            continue
        seen.add(real)
        volumes.append(f"{_host(root, real)}:{CONTAINER_LIB_DIR}/{posixpath.basename(real)}:ro")
    for name in DRIVER_BINARIES:
        real = obs["binaries"].get(name)
        if real:
            volumes.append(f"{_host(root, real)}:{CONTAINER_BIN_DIR}/{name}:ro")
    result["files"] = {LD_SO_CONF: ld_so_conf_content()}
    if ld_so_conf_source:
        volumes.append(f"{ld_so_conf_source}:{LD_SO_CONF}:ro")
    result["needs_ldconfig"] = True
    result["docker"] = {"devices": devices, "volumes": volumes}
    for dev in devices:
        result["cli"] += ["--device", dev]
    for vol in volumes:
        result["cli"] += ["-v", vol]
    return result


def ld_so_conf_content():
    return f"# gpufleet: the host driver's user-space libraries, mounted read-only\n{CONTAINER_LIB_DIR}\n"


def _env_cli(env):
    out = []
    for key in sorted(env):
        out += ["-e", f"{key}={env[key]}"]
    return out


def summary(result, obs):
    """One line for humans: mode, how chosen, what is passed."""
    gpus = len(gpu_nodes(obs["device_nodes"])) or len(obs["proc_gpus"])
    driver = obs.get("driver_version") or "unknown"
    extra = ""
    if result["mode"] == "devices":
        extra = (
            f", {len(result['docker']['devices'])} device nodes, "
            f"{sum(1 for v in result['docker']['volumes'] if CONTAINER_LIB_DIR in v)} driver libraries"
        )
    return (
        f"GPU passthrough: mode {result['mode']} ({result['reason']}), {gpus} GPU(s), driver {driver}{extra}"
    )
