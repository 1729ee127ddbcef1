"""probe/packages: which installed packages the facts keep (the CUDA/cuDNN/driver ones, all of them), their
installed state (version, hold), and whether ansible.builtin.apt could run (python3-apt)."""

import sys
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root

from tests.data.facts import fakeroot

H200 = Path(__file__).resolve().parents[4] / "data" / "h200-ubuntu2404" / "dpkg-query-nvidia-cuda.tsv"


def _status(names):
    return "\n\n".join(
        f"Package: {name}\nStatus: install ok installed\nVersion: 1.0-1\nArchitecture: amd64"
        for name in names
    )


def test_every_nvidia_package_of_the_h200_is_kept():
    # the H200's dpkg-query lines are NVIDIA's packages of CUDA 13.0, cuDNN 9.14 and NCCL: none may be missed
    # (libnvvm-13-0 once was: the toolkit's set then always looked incomplete)
    names = [line.split("\t")[0] for line in H200.read_text().splitlines() if line.strip()]
    assert "libnvvm-13-0" in names
    kept = packages.parse_dpkg_status(_status(names))
    assert sorted(kept) == sorted(names)


def test_unrelated_packages_are_not_kept():
    kept = packages.parse_dpkg_status(_status(["libc6", "libnvme1", "zlib1g", "python3-nvidia-ml-py"]))
    assert sorted(kept) == []


# ------------------------------------------------------------------ installed state (the facts' `packages`)
def test_installed_state_of_a_dpkg_tree_with_holds(tmp_path):
    fakeroot.dpkg_db(
        tmp_path,
        [
            ("libcudnn9-cuda-13", "9.14.0.64-1", "hold ok installed", "amd64"),
            ("cuda-toolkit-13-0", "13.0.2-1", "install ok installed", "amd64"),
            ("nvidia-driver-580-open", "1:580.95.05-0ubuntu1", "install ok installed", "amd64"),
            ("cuda-toolkit-12-9", "12.9.1-1", "deinstall ok config-files", "amd64"),
            ("zlib1g", "1:1.3.dfsg-3.1ubuntu2", "hold ok installed", "amd64"),
        ],
    )
    reader = packages.Packages(Root(str(tmp_path)))
    assert reader.manager == "apt"
    assert reader.installed() == {
        "cuda-toolkit-13-0": {"version": "13.0.2-1", "held": False},
        "libcudnn9-cuda-13": {"version": "9.14.0.64-1", "held": True},
        "nvidia-driver-580-open": {"version": "580.95.05-0ubuntu1", "held": False},  # epoch stripped
    }
    # the executor's helper: the same reader, only the names asked for (a removed package is not installed)
    assert packages.installed_state(str(tmp_path), ["libcudnn9-cuda-13", "cuda-toolkit-12-9", "zlib1g"]) == {
        "libcudnn9-cuda-13": {"version": "9.14.0.64-1", "held": True}
    }


def rpm_qa(lines, calls=None):
    """A fake probe/common.run_command: `rpm -qa` prints ``lines``; every other command fails."""

    def run(argv, timeout=10.0, env=None):
        if calls is not None:
            calls.append(list(argv))
        if argv[0].endswith("rpm") and "-qa" in argv:
            return 0, "".join(f"{line}\n" for line in lines), "", None
        return None, "", "", f"{argv[0]}: command not found"

    return run


def test_installed_state_of_an_rpm_tree_with_versionlock(tmp_path, monkeypatch):
    fakeroot.rpm_db(tmp_path, versionlock="libcudnn9-cuda-12-0:9.1.0.70-1.*\n")
    calls = []
    monkeypatch.setattr(
        packages,
        "run_command",
        rpm_qa(
            [
                "libcudnn9-cuda-12\t0:9.1.0.70-1\tx86_64",
                "kmod-nvidia-open-dkms\t3:580.95.05-1.el9\tx86_64",
                "cuda-toolkit-13-0\t0:13.0.2-1\tx86_64",
                "bash\t0:5.1.8-9.el9\tx86_64",
            ],
            calls,
        ),
    )
    monkeypatch.setattr(packages, "which", lambda name, root=None: f"/usr/bin/{name}")
    reader = packages.Packages(Root(str(tmp_path)))
    assert reader.manager == "dnf"
    assert reader.installed() == {
        "cuda-toolkit-13-0": {"version": "13.0.2-1", "held": False},
        "kmod-nvidia-open-dkms": {"version": "580.95.05-1.el9", "held": False},
        "libcudnn9-cuda-12": {"version": "9.1.0.70-1", "held": True},
    }
    assert calls[0][:3] == ["/usr/bin/rpm", "--root", str(tmp_path)]


def test_a_tree_without_a_package_database(tmp_path):
    reader = packages.Packages(Root(str(tmp_path)))
    assert (reader.manager, reader.installed(), reader.reasons) == ("none", {}, [])


# ---------------------------------------------------------------- python3-apt: could ansible.builtin.apt run
def apt_cache(answer, calls=None):
    """A fake probe/common.run_command answering `apt-cache policy python3-apt` with (rc, out, reason)."""

    def run(argv, timeout=10.0, env=None):
        if calls is not None:
            calls.append((list(argv), timeout))
        assert argv[1:] == ["policy", "python3-apt"]
        rc, out, reason = answer
        return rc, out, "", reason

    return run


POLICY = "python3-apt:\n  Installed: (none)\n  Candidate: 2.7.7ubuntu5\n  Version table:\n"


@pytest.mark.parametrize(
    ("answer", "candidate", "reason"),
    [
        ((0, POLICY, None), "2.7.7ubuntu5", None),
        ((0, "python3-apt:\n  Installed: (none)\n  Candidate: (none)\n", None), "none", None),
        ((0, "", None), "none", None),  # apt knows no python3-apt at all (N: Unable to locate package)
        (
            (100, "", "apt-cache exited 100: E: could not open lock file"),
            None,
            "apt-cache policy python3-apt: apt-cache exited 100: E: could not open lock file",
        ),
        (
            (None, "", "/usr/bin/apt-cache timed out after 3.0s"),
            None,
            "apt-cache policy python3-apt: /usr/bin/apt-cache timed out after 3.0s",
        ),
    ],
)
def test_python_apt_on_a_live_apt_host(monkeypatch, answer, candidate, reason):
    calls = []
    monkeypatch.setattr(packages, "run_command", apt_cache(answer, calls))
    monkeypatch.setattr(packages, "which", lambda name, root=None: f"/usr/bin/{name}")
    monkeypatch.setattr(packages, "python_apt_importable", lambda: False)
    fact, why = packages.python_apt(True, timeout=3.0)
    assert fact == {"importable": False, "candidate": candidate, "interpreter": sys.executable}
    assert why == reason
    assert calls == [(["/usr/bin/apt-cache", "policy", "python3-apt"], 3.0)]  # LC_ALL=C: run_command's own


def test_python_apt_without_apt_cache_or_a_live_root(monkeypatch):
    monkeypatch.setattr(packages, "which", lambda name, root=None: None)
    monkeypatch.setattr(packages, "python_apt_importable", lambda: True)
    assert packages.python_apt(True) == (
        {"importable": True, "candidate": None, "interpreter": sys.executable},
        "apt-cache is not available",
    )
    assert packages.python_apt(False) == (None, "runtime probe skipped: root is not /")


def test_python_apt_importable_asks_this_interpreter(monkeypatch):
    seen = []
    monkeypatch.setattr(packages.importlib.util, "find_spec", seen.append)
    assert packages.python_apt_importable() is False
    assert seen == ["apt_pkg"]


# ------------------------------------------------------------------ gpufleet's records (issue 36: removal)
PIN = (
    "Explanation: Managed by gpufleet (cudnn): libcudnn9-cuda-13 stays at 9.14.0.64-1\n"
    "Package: libcudnn9-cuda-13\nPin: version 9.14.0.64-1\nPin-Priority: 1001\n\n"
    "Explanation: Managed by gpufleet (cudnn): zlib-ish stays at 1-1; "
    "installed before gpufleet, kept by removal\n"
    "Package: zlib-ish\nPin: version 1-1\nPin-Priority: 1001\n"
)
DRIVER = (
    "# Managed by gpufleet (nvidia_driver): the driver packages its installs added\n"
    "package: nvidia-smi\npackage: libcuda1\nmodule: nvidia-driver:580-open\nversionlock: *nvidia*580*\n"
    "package: bad name\n"
)


def test_records_are_read_from_gpufleets_own_files_only(tmp_path):
    fakeroot.write(tmp_path, "/etc/apt/preferences.d/gpufleet-cudnn.pref", PIN)
    # someone else's file at gpufleet's name is no record: never read as what gpufleet installed
    foreign = "Package: x\nPin: version 1\n"
    fakeroot.write(tmp_path, "/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref", foreign)
    fakeroot.write(tmp_path, "/var/lib/gpufleet/nvidia_driver.record", DRIVER)
    found = packages.records(Root(str(tmp_path)))
    assert found["cudnn"] == {
        "path": "/etc/apt/preferences.d/gpufleet-cudnn.pref",
        "packages": [
            {"name": "libcudnn9-cuda-13", "version": "9.14.0.64-1", "owned": True},
            {"name": "zlib-ish", "version": "1-1", "owned": False},
        ],
    }
    assert found["cuda_toolkit"] is None
    assert found["nvidia_driver"] == {
        "path": "/var/lib/gpufleet/nvidia_driver.record",
        "packages": ["nvidia-smi", "libcuda1"],  # a line that is not one token is skipped
        "module": "nvidia-driver:580-open",
        "versionlock": ["*nvidia*580*"],
    }
    assert found["dir"] == ["nvidia_driver.record"]
    assert packages.pin_record(str(tmp_path), "cuda_toolkit") == []
    assert packages.recorded_names(found) == ["libcuda1", "libcudnn9-cuda-13", "nvidia-smi", "zlib-ish"]


def test_no_records_on_a_host_gpufleet_never_installed_packages_on(tmp_path):
    found = packages.records(Root(str(tmp_path)))
    assert found == {"cudnn": None, "cuda_toolkit": None, "nvidia_driver": None, "dir": None}


def test_a_recorded_package_is_kept_whatever_its_name(tmp_path):
    """A package of a recorded set whose name says nothing of NVIDIA (nsight-compute-*) is still gpufleet's to
    remove: the reader keeps the names the records hold besides RELEVANT's."""
    text = PIN.replace("zlib-ish", "nsight-compute-2025.3.1")
    fakeroot.write(tmp_path, "/etc/apt/preferences.d/gpufleet-cudnn.pref", text)
    fakeroot.dpkg_db(
        tmp_path,
        [
            ("nsight-compute-2025.3.1", "1-1", "install ok installed", "amd64"),
            ("zlib1g", "1:1.3", "install ok installed", "amd64"),
        ],
    )
    reader = packages.Packages(Root(str(tmp_path)))
    assert reader.installed() == {"nsight-compute-2025.3.1": {"version": "1-1", "held": False}}


def test_apt_auto_installed_marks(tmp_path):
    fakeroot.write(
        tmp_path,
        "/var/lib/apt/extended_states",
        "Package: libfoo\nArchitecture: amd64\nAuto-Installed: 1\n\n"
        "Package: bar\nArchitecture: amd64\nAuto-Installed: 0\n",
    )
    assert packages.auto_installed(str(tmp_path)) == {"libfoo"}
    assert packages.auto_installed(str(tmp_path / "none")) == set()


def test_rpm_names_what_needs_the_packages_a_removal_takes(monkeypatch):
    calls = []

    def run(argv, timeout=10.0, env=None):
        calls.append(argv)
        err = "error: Failed dependencies:\n\tnvidia-driver is needed by (installed) "
        err += "cuda-12-8-12.8.1-1.x86_64\n"
        return 1, "", err, "rpm exited 1"

    monkeypatch.setattr(packages, "which", lambda name, root=None: f"/usr/bin/{name}")
    monkeypatch.setattr(packages, "run_command", run)
    assert packages.rpm_removal_blockers("/", ["nvidia-driver"]) == ["cuda-12-8-12.8.1-1.x86_64"]
    assert calls == [["/usr/bin/rpm", "--root", "/", "-e", "--test", "--", "nvidia-driver"]]
    monkeypatch.setattr(packages, "run_command", lambda argv, timeout=10.0, env=None: (0, "", "", None))
    assert packages.rpm_removal_blockers("/", ["nvidia-driver"]) == []
    monkeypatch.setattr(packages, "run_command", lambda argv, timeout=10.0, env=None: (2, "", "boom", "x"))
    assert packages.rpm_removal_blockers("/", ["nvidia-driver"]) is None  # cannot tell: refused upstream
