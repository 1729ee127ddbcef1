"""probe_facts.gather: the whole `nvidia` fact (docs/facts.md) on the real H200 rebuilt as a tree."""

import json
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import facts as kb_facts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import common as probe_common
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import driver as probe_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import facts as probe_facts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import gpu as probe_gpu
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages

from tests.data.facts import fakeroot
from tests.unit.plugins.module_utils.probe.test_gpu import nvml_from_csv

DOC = Path(__file__).resolve().parents[5] / "docs" / "facts.md"
TOP_KEYS = {
    "schema_version",
    "consumers",
    "root",
    "gather_subset",
    "probes",
    "warnings",
    "elapsed_ms",
    "host",
    "gpus",
    "gpu_count",
    "nvswitch_count",
    "fabric_manager_required",
    "driver",
    "cuda",
    "cudnn",
    "cudnn_resolved",
    "owners",
    "packages",
    "sources",
}


@pytest.fixture
def h200_live(tmp_path, monkeypatch):
    """The H200 tree with NVML and cuDriverGetVersion answering as on the real host."""
    fakeroot.h200(tmp_path)
    monkeypatch.setattr(
        probe_gpu, "run_isolated", lambda func, args=(), timeout=10.0: (nvml_from_csv(), None)
    )
    monkeypatch.setattr(probe_driver, "run_isolated", lambda func, args=(), timeout=10.0: (13000, None))
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: f"/usr/sbin/{name}")
    monkeypatch.setattr(probe_driver, "run_command", modinfo_of_the_open_580)
    monkeypatch.setattr(probe_facts.probe_host.os, "uname", lambda: FakeUname("6.18.44"))
    return tmp_path


class FakeUname:
    def __init__(self, release):
        self.release = release


OPEN_580_PATH = "/lib/modules/6.18.44/updates/dkms/nvidia.ko.zst"
OPEN_580_MODINFO = f"""filename:       {OPEN_580_PATH}
import_ns:      DMA_BUF
alias:          char-major-195-*
version:        580.159.04
supported:      external
license:        Dual MIT/GPL
srcversion:     0123456789ABCDEF0123456
vermagic:       6.18.44 SMP preempt mod_unload modversions
parm:           NvSwitchRegDwords:NvSwitch regkey (charp)
"""


def modinfo_of_the_open_580(argv, timeout=10.0, env=None):
    """`modinfo -n nvidia`, then `modinfo nvidia`, as a host with the open 580.159.04 module answers."""
    assert argv[1:] in (["-n", "nvidia"], ["nvidia"])
    return 0, OPEN_580_PATH + "\n" if argv[1] == "-n" else OPEN_580_MODINFO, "", None


def test_h200_everything(h200_live):
    facts = probe_facts.gather(str(h200_live), live=True)
    assert set(facts) == TOP_KEYS
    assert facts["schema_version"] == 2
    assert facts["gather_subset"] == ["cuda", "cudnn", "driver", "gpu", "owners"]
    assert {k: v["state"] for k, v in facts["probes"].items()} == {
        "host": "ok",
        "gpu": "ok",
        "driver": "ok",
        "cuda": "ok",
        "cudnn": "ok",
        "owners": "ok",
    }
    (gpu,) = facts["gpus"]
    assert (gpu["name"], gpu["architecture"], gpu["compute_capability"], gpu["memory_mib"]) == (
        "NVIDIA H200",
        "Hopper",
        "9.0",
        143771,
    )
    assert (facts["gpu_count"], facts["nvswitch_count"], facts["fabric_manager_required"]) == (1, 0, False)
    driver = facts["driver"]
    assert (driver["version"], driver["branch"], driver["kernel_module"], driver["install_method"]) == (
        "580.159.04",
        "580",
        "open",
        "host",
    )
    assert (driver["cuda_driver_version"], driver["cuda_driver_version_int"]) == ("13.0", 13000)
    assert driver["secure_boot"] == "unknown"
    host = facts["host"]
    assert (host["container"], host["vm"], host["driver_managed_externally"]) == (
        "docker",
        "firecracker",
        True,
    )
    (toolkit,) = facts["cuda"]["toolkits"]
    assert (toolkit["path"], toolkit["version"], toolkit["source"]) == (
        "/usr/local/cuda-13.0",
        "13.0.2",
        "deb",
    )
    assert facts["cuda"]["default"] == {
        "path": "/usr/local/cuda",
        "target": "/usr/local/cuda-13.0",
        "version": "13.0.2",
        "via": "alternatives",
    }
    assert [
        (c["source"], c["version"], c["cuda_major"], c["held"], c["resolved"]) for c in facts["cudnn"]
    ] == [("deb", "9.14.0", 13, True, True), ("pip", "9.19.0", 13, False, False)]
    assert facts["cudnn"][1]["python_env"] == "/opt/torch/.venv"
    assert facts["cudnn_resolved"][0]["copy_path"] == "/usr"
    # who owns what (issue 12): the toolkit by the package of its nvcc, each cuDNN copy, the linker's view
    assert (
        toolkit["owner"]["words"]
        == "package cuda-nvcc-13-0 13.0.88-1 (and 2 more package(s), e.g. cuda-cudart-13-0)"
    )
    assert [c["owner"]["kind"] for c in facts["cudnn"]] == ["package", "pip"]
    assert facts["cudnn"][0]["owner"]["name"] == "libcudnn9-cuda-13"
    owners = facts["owners"]
    assert owners["paths"]["/usr/local/cuda"]["target"] == "/etc/alternatives/cuda"
    assert owners["alternatives"]["cuda"] == {
        "mode": "auto",
        "link": "/usr/local/cuda",
        "value": "/usr/local/cuda-13.0",
        "candidates": [{"path": "/usr/local/cuda-13.0", "priority": 130}],
    }
    providers = owners["linker"]["providers"]
    assert (providers["libcudnn.so.9"]["version"], providers["libcudnn.so.9"]["owner"]["name"]) == (
        "9.14.0",
        "libcudnn9-cuda-13",
    )
    assert providers["libcudart.so.13"]["owner"]["name"] == "cuda-cudart-13-0"
    assert [c["file"].rsplit("/", 1)[1] for c in owners["linker"]["conf"]][:5] == [
        "000_cuda.conf",
        "987_cuda-13.conf",
        "gds-13-0.conf",
        "libc.conf",
        "nvidia.conf",
    ]


def test_every_documented_key_is_returned(h200_live, monkeypatch):
    """docs/facts.md lists every key in tables (`| `key` |`): each one is in the returned facts."""
    live_apt(monkeypatch, POLICY)
    facts = probe_facts.gather(str(h200_live), ["all", "packages"], live=True)
    documented = set()
    section = None
    for line in DOC.read_text().splitlines():
        if line.startswith("### "):
            section = line[4:].strip("` ").split("`")[0].split(" ")[0]
        elif line.startswith("## "):
            section = None
        elif line.startswith("| `") and section:
            documented.add((section, line.split("`")[1]))
    objects = {
        "host": facts["host"],
        "gpus[]": facts["gpus"][0],
        "driver": facts["driver"],
        "cuda": facts["cuda"],
        "cuda.toolkits[]": facts["cuda"]["toolkits"][0],
        "cudnn[]": facts["cudnn"][0],
        "cudnn_resolved[]": facts["cudnn_resolved"][0],
        "packages": facts["packages"],
        "packages.installed": facts["packages"]["installed"]["libcudnn9-cuda-13"],
        "packages.python_apt": facts["packages"]["python_apt"],
    }
    missing = [(s, k) for s, k in documented if s in objects and k not in objects[s]]
    assert missing == []
    assert len([1 for s, _ in documented if s in objects]) > 60


def test_subsets_and_exclusion(h200_live):
    facts = probe_facts.gather(str(h200_live), gather_subset=["all", "!cudnn", "!gpu", "!owners"], live=True)
    assert facts["gather_subset"] == ["cuda", "driver"]
    assert facts["cudnn"] == [] and facts["gpus"] == []
    assert facts["probes"]["cudnn"]["state"] == "skipped"
    assert facts["driver"]["version"] == "580.159.04"


def test_the_subsets_are_those_of_the_knowledge_base():
    """kb/facts.py names the subsets (the fleet report's action reads them there, not from probe/)."""
    assert probe_facts.SUBSETS is kb_facts.SUBSETS
    every = set(kb_facts.SUBSETS) - set(kb_facts.NAMED_ONLY)
    assert probe_facts.resolve_subsets(["all"]) == sorted(every)
    assert set(probe_facts.empty_facts("/", [])["probes"]) == {"host", *every}


def test_bad_subset_is_the_only_error():
    with pytest.raises(
        probe_facts.SubsetError, match="gather_subset: 'cudnnn' is not allowed; allowed: all, gpu"
    ):
        probe_facts.gather("/nonexistent", gather_subset=["cudnnn"])


def test_nonexistent_root_is_unknown_not_failed(tmp_path):
    facts = probe_facts.gather(str(tmp_path / "missing"))
    assert {v["state"] for v in facts["probes"].values()} == {"unknown"}
    assert facts["warnings"] == ["root %s does not exist" % (tmp_path / "missing")]
    assert facts["cudnn"] == [] and facts["driver"] == {}


def test_empty_root_says_nothing_is_there(tmp_path):
    facts = probe_facts.gather(str(tmp_path))
    assert facts["gpus"] == [] and facts["cudnn"] == [] and facts["cuda"]["toolkits"] == []
    assert facts["driver"]["installed"] is False
    assert facts["probes"]["gpu"] == {
        "state": "partial",
        "reason": "/sys/bus/pci/devices not present under root",
        "elapsed_ms": facts["probes"]["gpu"]["elapsed_ms"],
    }


def test_a_probe_bug_does_not_fail_the_host(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(probe_facts.probe_cuda, "probe", broken)
    facts = probe_facts.gather(str(tmp_path))
    assert facts["probes"]["cuda"]["state"] == "unknown"
    assert facts["probes"]["cuda"]["reason"] == "probe error: KeyError: 'boom'"


def test_unreadable_dpkg_database(tmp_path, monkeypatch):
    fakeroot.h200(tmp_path)
    real_open = probe_common.open_file

    def open_file(path, mode="rb"):
        if path.endswith("/var/lib/dpkg/status"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, mode)

    monkeypatch.setattr(probe_common, "open_file", open_file)
    facts = probe_facts.gather(str(tmp_path))
    assert facts["probes"]["cudnn"]["state"] == "partial"
    assert "Permission denied" in facts["probes"]["cudnn"]["reason"]
    # the package copy is then seen as unowned files: still listed
    assert "9.14.0" in [c["version"] for c in facts["cudnn"]]


# Keys the facts gained after tests/data/audit/h200.json was captured (schema_version 1 only adds keys).
ADDED_SINCE_THE_AUDIT_FIXTURE = {
    "host": {"kernel_release", "os", "efi", "machine", "tegra"},
    "gpus": {"pci_device_id", "pci_subsystem_vendor_id", "pci_subsystem_id", "pci_ids_name"},
    "driver": {
        "loaded_version",
        "loaded_kernel_module",
        "module_for_running_kernel",
        "packages",
        "runfile_markers",
        "dkms",
        "runfile",
        # schema 2
        "userspace",
        "gsp_firmware",
        "versions",
        "version_mismatch",
        "kernels",
        "next_boot",
        "boot_pending",
        "mok_enrolled",
        "mok_files",
    },
}
# keys of each toolkit (facts.cuda.toolkits[]) added since the fixture
ADDED_TO_TOOLKITS = {"owner", "compat", "hold"}  # hold: issue 36
ADDED_TO_CUDNN_COPIES = {"owner"}


def _without_added(shape):
    # the owners, packages and sources subsets and the consumers (schema 2) came after the fixture
    out = {k: v for k, v in shape.items() if k not in ("owners", "consumers", "packages", "sources")}
    if "probes" in out:
        out["probes"] = {k: v for k, v in out["probes"].items() if k != "owners"}
    if out.get("cudnn"):
        out["cudnn"] = [{k: v for k, v in out["cudnn"][0].items() if k not in ADDED_TO_CUDNN_COPIES}]
    for key, added in ADDED_SINCE_THE_AUDIT_FIXTURE.items():
        if key not in out:
            continue
        if key == "gpus":
            out[key] = [{k: v for k, v in out[key][0].items() if k not in added}]
        else:
            out[key] = {k: v for k, v in out[key].items() if k not in added}
    if out.get("cuda", {}).get("toolkits"):
        toolkit = {k: v for k, v in out["cuda"]["toolkits"][0].items() if k not in ADDED_TO_TOOLKITS}
        out["cuda"] = {**out["cuda"], "toolkits": [toolkit]}
    return out


def _shape(value):
    """Keys of every dict, recursively (lists: the shape of their first element)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items() if k not in {"_comment", "reasons"}}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [_shape(value[0])]
    return None


def test_same_shape_as_the_audit_fixture_of_the_h200(h200_live):
    """The audit builds fleet reports from tests/data/audit/h200.json: the module returns that very shape."""
    audit = json.loads((DOC.parents[1] / "tests" / "data" / "audit" / "h200.json").read_text())
    facts = probe_facts.gather(str(h200_live), live=True)
    shape = _shape(facts)
    assert _without_added(shape) == _shape(audit)
    for key, added in ADDED_SINCE_THE_AUDIT_FIXTURE.items():
        got = shape[key][0] if key == "gpus" else shape[key]
        assert added <= set(got)
    for key in ("gpus", "driver", "cudnn_resolved"):
        assert _without_added({key: _shape(facts[key])})[key] == _shape(audit[key])
    assert [(c["source"], c["version"], c["cuda_major"], c["held"]) for c in facts["cudnn"]] == [
        (c["source"], c["version"], c["cuda_major"], c["held"]) for c in audit["cudnn"]
    ]


def test_unreadable_directory_makes_the_cudnn_probe_partial(tmp_path, monkeypatch):
    fakeroot.tarball(tmp_path, "/srv/cudnn", "9.3.0")
    (tmp_path / "home/bob").mkdir(parents=True)
    real_scandir = probe_common.scandir

    def scandir(path):
        if path.endswith("/home/bob"):
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(probe_facts.probe_cudnn, "scandir", scandir)
    facts = probe_facts.gather(str(tmp_path))
    assert facts["probes"]["cudnn"]["state"] == "partial"
    assert facts["probes"]["cudnn"]["reason"].startswith("cannot list /home/bob: Permission denied")
    assert [c["version"] for c in facts["cudnn"]] == ["9.3.0"]


def test_search_path_that_is_a_link_stays_inside_the_root(tmp_path):
    fakeroot.tarball(tmp_path, "/data/sdk/cudnn", "9.5.0")
    fakeroot.link(tmp_path, "/workspace", "/data/sdk")  # absolute: must resolve under the root
    facts = probe_facts.gather(str(tmp_path), cudnn_search_paths=["/workspace"])
    assert [(c["path"], c["version"]) for c in facts["cudnn"]] == [("/data/sdk/cudnn", "9.5.0")]


def test_h200_host_os_kernel_and_loaded_module(h200_live):
    """The fields the roles plan from (docs/facts.md): the real H200 rebuilt as a tree."""
    facts = probe_facts.gather(str(h200_live), live=True)
    host, driver = facts["host"], facts["driver"]
    assert host["os"] == {
        "distribution": "Ubuntu",
        "version": "24.04",
        "key": "ubuntu2404",
        "debian_mirror": None,
    }
    assert (host["kernel_release"], host["efi"]) == ("6.18.44", False)
    assert (driver["loaded_version"], driver["loaded_kernel_module"]) == ("580.159.04", "open")
    assert driver["module_for_running_kernel"] == {"version": "580.159.04", "kernel_module": "open"}
    # the driver comes from the host (no package of it inside), and no .run installer left traces
    assert (driver["packages"], driver["runfile_markers"]) == ([], [])
    (gpu,) = facts["gpus"]
    assert (gpu["pci_device_id"], gpu["pci_subsystem_vendor_id"], gpu["pci_subsystem_id"]) == (
        "0x2335",
        "0x10DE",
        "0x18BF",
    )


def test_image_root_gives_reasons_not_guesses(tmp_path):
    """Not live: no modinfo, no uname; every unknown new field says why."""
    fakeroot.h200(tmp_path)
    (tmp_path / "proc/sys/kernel/osrelease").unlink()
    facts = probe_facts.gather(str(tmp_path))
    host, driver = facts["host"], facts["driver"]
    assert host["kernel_release"] == ""
    assert host["reasons"]["kernel_release"].startswith("/proc/sys/kernel/osrelease not present")
    assert driver["module_for_running_kernel"] == {"version": None, "kernel_module": None}
    assert driver["reasons"]["module_for_running_kernel"] == "runtime probe skipped: root is not /"
    assert driver["loaded_version"] == "580.159.04"  # /proc/driver/nvidia/version is in the tree


def test_nonexistent_root_has_the_new_keys_too(tmp_path):
    host = probe_facts.gather(str(tmp_path / "missing"))["host"]
    assert (host["kernel_release"], host["efi"], host["os"]["key"]) == ("", False, None)


# ------------------------------------------------------------------ the `packages` subset and host.machine
POLICY = "python3-apt:\n  Installed: 2.7.14build2\n  Candidate: 2.7.14build2\n"


def live_apt(monkeypatch, policy, importable=True):
    """The live host's interpreter and `apt-cache policy python3-apt` (no real apt in unit tests)."""
    calls = []

    def run(argv, timeout=10.0, env=None):
        calls.append(list(argv))
        return 0, policy, "", None

    monkeypatch.setattr(probe_packages, "run_command", run)
    monkeypatch.setattr(probe_packages, "which", lambda name, root=None: f"/usr/bin/{name}")
    monkeypatch.setattr(probe_packages, "python_apt_importable", lambda: importable)
    return calls


def test_h200_packages_subset(h200_live, monkeypatch):
    calls = live_apt(monkeypatch, POLICY, importable=False)
    facts = probe_facts.gather(str(h200_live), ["packages"], live=True)
    assert facts["gather_subset"] == ["packages"]
    assert facts["probes"]["packages"]["state"] == "ok"
    packages = facts["packages"]
    assert set(packages) == {"manager", "installed", "python_apt", "records", "reasons"}
    assert (packages["manager"], packages["reasons"]) == ("apt", [])
    # NVIDIA's guide installed the H200's packages, not gpufleet: no record of gpufleet's (issue 36)
    assert packages["records"] == {"cudnn": None, "cuda_toolkit": None, "nvidia_driver": None, "dir": None}
    installed = packages["installed"]
    assert len(installed) == 45  # every NVIDIA package of the H200 (dpkg-query-nvidia-cuda.tsv)
    assert installed["libcudnn9-cuda-13"] == {"version": "9.14.0.64-1", "held": True}
    assert installed["libnccl2"] == {"version": "2.28.3-1+cuda13.0", "held": True}
    assert installed["cuda-nvcc-13-0"] == {"version": "13.0.88-1", "held": False}
    assert installed["libnvvm-13-0"]["held"] is False  # a toolkit component without "cuda" in its name
    assert packages["python_apt"] == {
        "importable": False,
        "candidate": "2.7.14build2",
        "interpreter": probe_packages.sys.executable,
    }
    assert calls == [["/usr/bin/apt-cache", "policy", "python3-apt"]]


def test_all_leaves_the_packages_subset_out(h200_live, monkeypatch):
    """The audit gathers `all` and reports none of it: no apt-cache run, no new probe entry in its report."""
    calls = live_apt(monkeypatch, POLICY)
    facts = probe_facts.gather(str(h200_live), live=True)
    assert "packages" not in facts["gather_subset"] and "packages" not in facts["probes"]
    assert (facts["packages"], calls) == ({}, [])
    both = probe_facts.gather(str(h200_live), ["all", "packages", "!cudnn"], live=True)
    assert both["gather_subset"] == ["cuda", "driver", "gpu", "owners", "packages"]
    assert both["packages"]["installed"]["libcudnn9-cuda-13"]["held"] is True
    assert probe_facts.resolve_subsets(["all", "!packages"]) == ["cuda", "cudnn", "driver", "gpu", "owners"]


def test_packages_of_an_image_root_say_why_python_apt_is_null(tmp_path):
    fakeroot.h200(tmp_path)
    facts = probe_facts.gather(str(tmp_path), ["packages"])
    packages = facts["packages"]
    assert (packages["manager"], packages["python_apt"]) == ("apt", None)
    assert packages["reasons"] == ["python_apt: runtime probe skipped: root is not /"]
    assert facts["probes"]["packages"]["state"] == "ok"  # not live: nothing failed
    assert packages["installed"]["libcudnn9-cuda-13"]["held"] is True


def test_packages_of_a_live_apt_host_whose_apt_cache_fails(h200_live, monkeypatch):
    monkeypatch.setattr(probe_packages, "which", lambda name, root=None: None)
    monkeypatch.setattr(probe_packages, "python_apt_importable", lambda: False)
    facts = probe_facts.gather(str(h200_live), ["packages"], live=True)
    assert facts["packages"]["python_apt"]["candidate"] is None
    assert facts["packages"]["reasons"] == ["python_apt: apt-cache is not available"]
    assert facts["probes"]["packages"] == {
        "state": "partial",
        "reason": "python_apt: apt-cache is not available",
        "elapsed_ms": facts["probes"]["packages"]["elapsed_ms"],
    }


def test_packages_of_an_rpm_host(tmp_path, monkeypatch):
    fakeroot.rpm_db(tmp_path, versionlock="nvidia-driver-3:580.95.05-1.el9.*\n")
    qa = "nvidia-driver\t3:580.95.05-1.el9\tx86_64\nlibcudnn9-cuda-13\t0:9.14.0.64-1\tx86_64\n"
    monkeypatch.setattr(probe_packages, "which", lambda name, root=None: f"/usr/bin/{name}")
    monkeypatch.setattr(probe_packages, "run_command", lambda argv, timeout=15.0, env=None: (0, qa, "", None))
    packages = probe_facts.gather(str(tmp_path), ["packages"], live=True)["packages"]
    assert packages == {
        "manager": "dnf",
        "installed": {
            "libcudnn9-cuda-13": {"version": "9.14.0.64-1", "held": False},
            "nvidia-driver": {"version": "580.95.05-1.el9", "held": True},
        },
        "python_apt": None,  # not an apt host
        "records": {"cudnn": None, "cuda_toolkit": None, "nvidia_driver": None, "dir": None},
        "reasons": [],
    }


def test_an_unreadable_package_database_makes_the_packages_probe_partial(tmp_path, monkeypatch):
    fakeroot.h200(tmp_path)
    real_open = probe_common.open_file

    def open_file(path, mode="rb"):
        if path.endswith("/var/lib/dpkg/status"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, mode)

    monkeypatch.setattr(probe_common, "open_file", open_file)
    facts = probe_facts.gather(str(tmp_path), ["packages"])
    assert facts["packages"]["installed"] == {}
    assert "Permission denied" in facts["packages"]["reasons"][0]
    assert facts["probes"]["packages"]["state"] == "partial"


def test_a_missing_root_with_the_packages_subset(tmp_path):
    facts = probe_facts.gather(str(tmp_path / "missing"), ["packages"])
    assert facts["probes"]["packages"]["state"] == "unknown"
    assert facts["packages"] == {}


def test_host_machine_live_and_from_a_tree(h200_live, monkeypatch):
    monkeypatch.setattr(probe_facts.probe_host.platform, "machine", lambda: "aarch64")
    assert probe_facts.gather(str(h200_live), ["gpu"], live=True)["host"]["machine"] == "aarch64"
    host = probe_facts.gather(str(h200_live), ["gpu"])["host"]  # not live: the tree's /bin/sh
    assert host["machine"] is None
    assert host["reasons"]["machine"] == "cannot read /bin/sh: /bin does not exist"
    fakeroot.elf_shell(h200_live, 62)
    host = probe_facts.gather(str(h200_live), ["gpu"])["host"]
    assert (host["machine"], "machine" in host["reasons"]) == ("x86_64", False)
