"""facts: nvidia_facts lists the tarball and the pip copy of cuDNN, versions confirmed by ctypes."""

import json
import os

import pytest
from testinfra_helpers import nvidia_facts

TARBALL = os.environ.get("GPUFLEET_FACTS_TARBALL_CUDNN", "9.14.0.64")
WHEEL = os.environ.get("GPUFLEET_FACTS_WHEEL_CUDNN", "9.28.0.42")
TARBALL_PATH = f"/opt/cudnn-linux-x86_64-{TARBALL}_cuda13-archive"
VENV = "/opt/torch-venv"

# Runs on the host: what the library itself says, independent of the module.
CTYPES = (
    "import ctypes, json, sys; lib = ctypes.CDLL(sys.argv[1]); "
    "lib.cudnnGetVersion.restype = ctypes.c_size_t; lib.cudnnGetCudartVersion.restype = ctypes.c_size_t; "
    "print(json.dumps([lib.cudnnGetVersion(), lib.cudnnGetCudartVersion()]))"
)


def short(version):
    return ".".join(version.split(".")[:3])


def run_facts(host, check):
    return nvidia_facts(host, "cudnn", check=check)


@pytest.fixture(scope="module")
def facts(host):
    return run_facts(host, check=False)


def copy_of(facts, source):
    found = [c for c in facts["cudnn"] if c["source"] == source]
    assert len(found) == 1, f"expected one {source} copy: {facts['cudnn']}"
    return found[0]


def test_both_copies_and_nothing_else(facts):
    assert facts["probes"]["cudnn"]["state"] == "ok", facts["probes"]
    assert sorted(c["source"] for c in facts["cudnn"]) == ["pip", "tarball"]


def test_tarball_copy(facts):
    copy = copy_of(facts, "tarball")
    assert copy["path"] == TARBALL_PATH
    assert copy["version"] == short(TARBALL)
    assert copy["header_version"] == short(TARBALL)
    assert (copy["cuda_major"], copy["cuda_major_from"]) == (13, "tarball")
    assert copy["ctypes"]["state"] == "ok", copy["ctypes"]
    assert copy["ctypes"]["version"] == short(TARBALL)
    assert copy["ctypes"]["cudart_version_int"] // 1000 == 13
    assert copy["mismatch"] is False
    assert copy["resolved"] is False


def test_pip_copy(facts):
    copy = copy_of(facts, "pip")
    assert copy["python_env"] == VENV
    assert copy["path"].startswith(VENV + "/lib/python3")
    assert copy["package"] == {"name": "nvidia-cudnn-cu13", "version": WHEEL, "held": False, "manager": "pip"}
    assert copy["version"] == short(WHEEL)
    assert (copy["cuda_major"], copy["cuda_major_from"]) == (13, "pip")
    assert copy["ctypes"]["state"] == "ok", copy["ctypes"]
    assert copy["ctypes"]["version"] == short(WHEEL)
    assert copy["mismatch"] is False


@pytest.mark.parametrize("source", ["tarball", "pip"])
def test_versions_confirmed_by_an_independent_ctypes_load(host, facts, source):
    copy = copy_of(facts, source)
    lib = copy["library"].rsplit("/", 1)[0] + "/libcudnn.so.9"
    version, cudart = json.loads(host.check_output(f"python3 -c '{CTYPES}' {lib}"))
    assert (version, cudart) == (copy["ctypes"]["version_int"], copy["ctypes"]["cudart_version_int"])
    major, minor, patch = (int(x) for x in copy["version"].split("."))
    assert version == major * 10000 + minor * 100 + patch


def test_no_copy_is_in_the_loader_cache(facts):
    assert facts["cudnn_resolved"] == []


def test_check_mode_reports_the_same(host, facts):
    again = run_facts(host, check=True)
    assert [(c["source"], c["path"], c["version"]) for c in again["cudnn"]] == [
        (c["source"], c["path"], c["version"]) for c in facts["cudnn"]
    ]


# ------------------------------------------------------------------ host and driver facts (issue 11)
ANSIBLE_NAMES = {
    "debian": "Debian",
    "ubuntu": "Ubuntu",
    "rocky": "Rocky",
    "rhel": "RedHat",
    "almalinux": "AlmaLinux",
}
OS_KEYS = {("debian", "12"): "debian12", ("debian", "13"): "debian13", ("ubuntu", "22.04"): "ubuntu2204",
           ("ubuntu", "24.04"): "ubuntu2404", ("rocky", "9"): "rhel9"}  # fmt: skip


@pytest.fixture(scope="module")
def host_facts(host):
    return nvidia_facts(host, "gpu,driver")


def os_release(host):
    values = {}
    for line in host.file("/etc/os-release").content_string.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key] = value.strip().strip('"')
    return values


def test_host_os_kernel_and_efi(host, host_facts):
    values = os_release(host)
    os_id, version = values["ID"], values.get("VERSION_ID", "")
    major = version if os_id == "ubuntu" else version.split(".")[0]
    os_fact = dict(host_facts["host"]["os"])
    mirror = os_fact.pop("debian_mirror")
    assert os_fact == {
        "distribution": ANSIBLE_NAMES[os_id],
        "version": version,
        "key": OS_KEYS[(os_id, major)],
    }
    # the host's own Debian mirror, as its apt sources name it (None elsewhere)
    sources = host.run("cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null").stdout
    if os_id == "debian":
        assert mirror is not None and mirror.endswith("/debian") and mirror in sources
    else:
        assert mirror is None
    assert host_facts["host"]["kernel_release"] == host.check_output("uname -r").strip()
    assert host_facts["host"]["efi"] is host.file("/sys/firmware/efi").is_directory
    assert host_facts["host"]["container"] == "docker"


def test_driver_facts_of_a_host_without_a_driver(host_facts):
    driver = host_facts["driver"]
    assert (driver["loaded_version"], driver["loaded_kernel_module"]) == (None, None)
    assert driver["reasons"]["loaded_version"].startswith("no nvidia kernel module loaded")
    assert driver["module_for_running_kernel"] == {"version": None, "kernel_module": None}
    assert driver["reasons"]["module_for_running_kernel"]  # no modinfo or no nvidia.ko: it says which
    assert (driver["packages"], driver["runfile_markers"]) == ([], [])
    assert host_facts["gpus"] == []
