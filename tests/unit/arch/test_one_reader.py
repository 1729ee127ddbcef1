"""One reader per host fact: each fact of ansible_facts.nvidia is read by exactly one probe file.

The plugins (module_utils, modules, action, filter) are parsed, and every string constant that code uses
(docstrings and the DOCUMENTATION/EXAMPLES/RETURN texts excluded: they describe, they do not read), every
command it would run (an argv list, a ``which``/``get_bin_path`` lookup) and a few code shapes (tables,
definitions) are matched against the facts below. A match outside the fact's own file is a second
reader: take the fact from ``probe.facts.gather`` (modules: a ``facts:`` option) instead.
Knowledge has one home too: compute capability -> architecture only in kb/, the OS key and the
machine -> platform mapping only in kb/hosts.py.
Which layer may import which (probe/ never imports plan/, plan/ does no host I/O) is
test_import_direction.py, from the parsed imports.
"""

import ast
import re

import pytest

from tests.unit.arch.scan import ROOT, plugin_files

DOC_VARIABLES = {"DOCUMENTATION", "EXAMPLES", "RETURN"}

# Files exempt from the scan, each with its reason. Empty: nvidia_driver_state.py, the last second reader,
# was deleted by the driver redesign.
ALLOWED = {}

PROBE = "plugins/module_utils/probe/"
# fact -> (owner: a file, or a folder ending in "/"; string patterns; commands it runs)
READERS = {
    "loaded driver (/proc/driver/nvidia/version)": (PROBE + "driver.py", [r"proc/driver/nvidia"], []),
    "loaded driver (/sys/module/nvidia)": (PROBE + "driver.py", [r"sys/module/nvidia"], []),
    "module of the running kernel (modinfo)": (PROBE + "driver.py", [r"\bmodinfo\s+-"], ["modinfo"]),
    "GPUs (sysfs PCI)": (PROBE + "gpu.py", [r"sys/bus/pci"], []),
    "PCI device names (pci.ids)": (PROBE + "pciids.py", [r"/pci\.ids\b"], []),
    "EFI and Secure Boot": (PROBE + "host.py", [r"sys/firmware/efi", r"SecureBoot-", r"efivars"], []),
    "container": (
        PROBE + "host.py", [r"\.dockerenv", r"\.containerenv", r"proc/1/cgroup", r"proc/1/environ"], []
    ),
    "OS (os-release)": (PROBE + "host.py", [r"os-release"], []),
    "kernel release": (PROBE + "host.py", [r"proc/sys/kernel/osrelease"], []),
    "package database": (
        PROBE + "packages.py",
        [r"dpkg/status", r"dpkg/info", r"/var/lib/rpm", r"sysimage/rpm", r"versionlock\.list",
         r"^(\S*/)?dpkg-query\s", r"^(\S*/)?rpm\s+(-q|--root)"],
        ["dpkg-query", "rpm", "dpkg"],
    ),
    # whether ansible.builtin.apt could run: apt_pkg for this interpreter, apt's candidate for python3-apt
    "python3-apt (apt_pkg, apt-cache policy)": (
        PROBE + "packages.py", [r"^apt_pkg$", r"\bapt-cache\s+policy"], ["apt-cache"]
    ),
    # apt's and dnf's repository configuration and apt's global keyrings (a file of its own, like
    # plan/repo.py's gpufleet-nvidia-cuda.sources, is named, not read: only the directories are matched)
    "package sources (sources.list, yum.repos.d, trusted.gpg)": (
        PROBE + "sources.py",
        [r"^/etc/apt/sources\.list(\.d)?/?$", r"^/etc/yum\.repos\.d/?$", r"^/etc/apt/trusted\.gpg(\.d)?/?$"],
        [],
    ),
    "loader cache (ld.so.cache, ldconfig -p)": (
        PROBE + "ldcache.py", [r"ld\.so\.cache", r"\bldconfig\s+(-p|--print-cache)"], ["ldconfig -p"]
    ),
    "NVML location (libnvidia-ml.so.1)": (PROBE + "ldcache.py", [r"libnvidia-ml\.so"], []),
    # the evidence of a host-managed driver (the one definition: probe/host.driver_managed_externally)
    "host-managed driver": (PROBE + "host.py", [r"/usr/local/nvidia"], []),
}  # fmt: skip
KERNEL_RELEASE_OWNER = PROBE + "host.py"
CC_TABLE_OWNER = "plugins/module_utils/kb/"
OS_KEY_OWNER = "plugins/module_utils/kb/hosts.py"
PLATFORM_OWNER = "plugins/module_utils/kb/hosts.py"
HOST_MANAGED_OWNER = PROBE + "host.py"

CC = re.compile(r"^\d{1,2}(\.\d)?$")
ARCHITECTURES = {"Fermi", "Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace",
                 "Hopper", "Blackwell", "Rubin"}  # fmt: skip
MACHINES = {"x86_64", "amd64", "aarch64", "arm64"}
PLATFORMS = {"linux-x86_64", "linux-sbsa", "linux-aarch64", "sbsa"}
LOOKUPS = {"which", "get_bin_path"}


def _owns(owner, rel):
    return rel.startswith(owner) if owner.endswith("/") else rel == owner


def _description_nodes(tree):
    """ids of the string nodes that only describe: docstrings and the module's documentation texts."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in DOC_VARIABLES for t in node.targets
        ):
            skip.add(id(node.value))
    return skip


def _strings(tree):
    skip = _description_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def _name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _commands(tree):
    """(line, command) for argv lists/tuples starting with a literal and for which()/get_bin_path() calls.

    ``ldconfig`` only counts with ``-p`` (printing the cache is reading it; refreshing it is not).
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in LOOKUPS and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                name = arg.value.rsplit("/", 1)[-1]
                yield node.lineno, "ldconfig -p" if name == "ldconfig" else name
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            words = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            first = node.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and words:
                name = first.value.rsplit("/", 1)[-1]
                if name == "ldconfig":
                    name = "ldconfig -p" if ("-p" in words or "--print-cache" in words) else None
                if name:
                    yield node.lineno, name


def _dict_pairs(node):
    return [
        (k.value, v.value)
        for k, v in zip(node.keys, node.values)
        if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
    ]


def _shapes(tree):
    """(line, what, owner) for tables and definitions that have one home."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            pairs = _dict_pairs(node)
            ccs = [(k, v) for k, v in pairs if isinstance(k, str) and CC.match(k) and v in ARCHITECTURES]
            if len(ccs) >= 3:
                yield node.lineno, "a compute capability -> architecture table", CC_TABLE_OWNER
            if any(k in MACHINES and v in PLATFORMS for k, v in pairs):
                yield node.lineno, "a machine -> platform mapping", PLATFORM_OWNER
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == "os_key":
                yield node.lineno, "a definition of os_key()", OS_KEY_OWNER
            if node.name == "driver_managed_externally":
                yield node.lineno, "a definition of the host-managed driver", HOST_MANAGED_OWNER
        if isinstance(node, ast.Attribute) and node.attr == "release":
            call = node.value
            if isinstance(call, ast.Call) and _name(call.func) == "uname":
                yield node.lineno, "the kernel release (uname)", KERNEL_RELEASE_OWNER
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and _name(node.func.value) == "platform"
            and node.func.attr in ("release", "uname")
        ):
            yield node.lineno, "the kernel release (platform)", KERNEL_RELEASE_OWNER


def second_readers(path, rel):
    """Every place in one file that reads a fact (or holds knowledge) that belongs to another file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for fact, (owner, patterns, commands) in READERS.items():
        if _owns(owner, rel):
            continue
        regexes = [re.compile(p) for p in patterns]
        for line, text in _strings(tree):
            if any(r.search(text) for r in regexes):
                found.append(f"{rel}:{line}: reads {fact} ({text[:60]!r}); its one reader is {owner}")
        for line, command in _commands(tree):
            if command in commands:
                found.append(f"{rel}:{line}: runs {command} ({fact}); its one reader is {owner}")
    for line, what, owner in _shapes(tree):
        if not _owns(owner, rel):
            found.append(f"{rel}:{line}: holds {what}; its one home is {owner}")
    return found


@pytest.mark.parametrize("path", plugin_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_fact_has_one_reader(path):
    rel = str(path.relative_to(ROOT))
    if rel in ALLOWED:
        pytest.skip(f"allowed for now: {ALLOWED[rel]}")
    assert second_readers(path, rel) == []


def test_nothing_is_exempt():
    assert ALLOWED == {}


def test_every_owner_exists_and_reads_its_fact():
    """The owners are real files that do hold what they own (a moved reader must move its entry too)."""
    for fact, (owner, patterns, commands) in READERS.items():
        path = ROOT / owner
        assert path.is_file(), f"{fact}: {owner} does not exist"
        tree = ast.parse(path.read_text())
        strings = [t for _, t in _strings(tree)]
        ran = {c for _, c in _commands(tree)}
        assert any(re.search(p, t) for p in patterns for t in strings) or ran & set(commands), fact


# ------------------------------------------------------------------ the check catches what it must
SECOND_READERS = {
    "proc_version": 'def loaded():\n    return open("/proc/driver/nvidia/version").read()\n',
    "sys_module": 'import os\nV = os.path.join(root, "sys/module/nvidia/version")\n',
    "sysfs_pci": 'BASE = "/sys/bus/pci/devices"\n',
    "pci_ids": 'PATHS = ("/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids")\n',
    "efi": 'SB = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"\n',
    "container": 'def c(root):\n    return root.exists("/.dockerenv")\n',
    "cgroup": 'P = "/proc/1/cgroup"\n',
    "dpkg_status": 'S = "/var/lib/dpkg/status"\n',
    "dpkg_query": 'CMD = ["dpkg-query", "-W", "-f=${Package}\\n"]\n',
    "rpm": 'def q(run):\n    return run(["rpm", "-q", "nvidia-driver"])\n',
    "rpm_shell": 'CMD = "rpm --root /mnt -qa"\n',
    "versionlock": 'L = "/etc/dnf/plugins/versionlock.list"\n',
    "apt_pkg": 'import importlib.util\nA = importlib.util.find_spec("apt_pkg")\n',
    "apt_cache": 'def c(run):\n    return run(["apt-cache", "policy", "python3-apt"])\n',
    "apt_cache_which": 'def c(which):\n    return which("apt-cache")\n',
    "apt_sources_dir": 'def s(root):\n    return root.listdir("/etc/apt/sources.list.d")\n',
    "apt_sources_list": 'S = "/etc/apt/sources.list"\n',
    "dnf_repos": 'import glob\nR = glob.glob("/etc/yum.repos.d" + "/*.repo")\n',
    "apt_trusted": 'T = "/etc/apt/trusted.gpg.d"\n',
    "ld_cache": 'C = "/etc/ld.so.cache"\n',
    "ldconfig_p": 'def ld(run):\n    return run(["ldconfig", "-p"])\n',
    "ldconfig_which": 'def ld(m):\n    return m.get_bin_path("ldconfig")\n',
    "nvml": 'import ctypes\nN = ctypes.CDLL("libnvidia-ml.so.1")\n',
    "os_release": 'def os_info():\n    return open("/etc/os-release").read()\n',
    "modinfo": 'def m(run):\n    return run(["/sbin/modinfo", "-F", "version", "nvidia"])\n',
    "modinfo_which": 'def m(which):\n    return which("modinfo")\n',
    "osrelease": 'K = "/proc/sys/kernel/osrelease"\n',
    "uname": 'import os\nK = os.uname().release\n',
    "platform": 'import platform\nK = platform.release()\n',
    "cc_table": 'T = {"7.0": "Volta", "8.0": "Ampere", "9.0": "Hopper"}\n',
    "cc_table_majors": 'T = {"3": "Kepler", "5": "Maxwell", "9": "Hopper"}\n',
    "os_key": 'def os_key(distribution, version):\n    return f"{distribution}{version}"\n',
    "platform_map": 'P = {"x86_64": "linux-x86_64", "aarch64": "linux-sbsa"}\n',
    "host_managed": 'def driver_managed_externally(facts):\n    return True\n',
    "host_managed_path": 'def managed(real):\n    return real.startswith("/usr/local/nvidia/")\n',
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SECOND_READERS))
def test_a_second_reader_is_caught(tmp_path, name):
    path = tmp_path / "second_reader.py"
    path.write_text(SECOND_READERS[name])
    for rel in ("plugins/module_utils/plan/newfile.py", "plugins/modules/nvidia_new.py"):
        assert second_readers(path, rel) != [], f"{name} not caught in {rel}"


def test_descriptions_and_harmless_code_are_not_readers(tmp_path):
    path = tmp_path / "fine.py"
    path.write_text(
        '"""Reads nothing; the facts say what /proc/driver/nvidia/version held."""\n'
        'DOCUMENTATION = "Default is read from C(/etc/os-release) and C(/sys/bus/pci/devices)."\n'
        "def f(facts):\n"
        '    """Uses ansible_facts.nvidia.driver.loaded_version (from /proc/driver/nvidia/version)."""\n'
        '    return facts["driver"]["loaded_version"]\n'
        'SOURCES = ("deb", "rpm", "tarball")\n'
        'OWN = "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources"\n'
        'REFRESH = ["ldconfig"]\n'
        'ARCH = {"x86_64": "x86-64"}\n'
        "import os\nM = os.uname().machine\n"
        "def managed_externally(entry):\n"
        '    return entry["host"]["driver_managed_externally"]\n'
    )
    assert second_readers(path, "plugins/module_utils/plan/newfile.py") == []


def test_the_owner_itself_is_not_a_second_reader(tmp_path):
    path = tmp_path / "driver.py"
    path.write_text(SECOND_READERS["proc_version"])
    assert second_readers(path, PROBE + "driver.py") == []
    assert second_readers(path, PROBE + "gpu.py") != []
