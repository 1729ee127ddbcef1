"""Issue 36: <role>_state: absent runs the role's removal and no other phase, in check mode saying what would
go and what stays. Each role's playbook as a user runs it, in check mode against this machine, the plan made
from a fake root (the role's probe root variable) holding gpufleet's things and someone else's; nothing
changes here (check mode, and what the plan names is under the fake root or absent on this machine)."""

import json

import pytest

from tests.data.facts import fakeroot
from tests.playbook import run

MARKER = ".gpufleet-redist.json"


def toolkit_host(root):
    fakeroot.bare(root)
    for path, ours in (("/usr/local/cuda-13.0", True), ("/usr/local/cuda-13.1", False)):
        fakeroot.write(root, f"{path}/version.json", json.dumps({"cuda": {"version": "13.0.2"}}))
        fakeroot.write(root, f"{path}/bin/nvcc", "#!/bin/sh\n")
        fakeroot.write(root, f"{path}/{MARKER if ours else 'bin/cuda-uninstaller'}", "{}")


def cudnn_host(root):
    fakeroot.bare(root)
    fakeroot.write(root, f"/opt/nvidia/cudnn/9.14.0.64-cuda13/{MARKER}", "{}")
    fakeroot.write(root, "/opt/nvidia/cudnn/8.9.7-cuda12/include/cudnn.h", "/* hand-made */\n")


def driver_host(root):
    fakeroot.bare(root)
    fakeroot.write(root, "/etc/modprobe.d/nvidia-gpufleet.conf", "# Managed by gpufleet (nvidia_driver)\n")


HOSTS = {
    "cuda_toolkit": "gpufleet_cuda_hosts",
    "cudnn": "gpufleet_cudnn_hosts",
    "nvidia_driver": "gpufleet_driver_hosts",
}
CASES = {
    "cuda_toolkit": (
        "playbooks/cuda.yml",
        toolkit_host,
        "removes: /usr/local/cuda-13.0",
        "keeps: /usr/local/cuda-13.1 (NVIDIA's runfile installer (bin/cuda-uninstaller))",
    ),
    "cudnn": (
        "playbooks/cudnn.yml",
        cudnn_host,
        "removes: /opt/nvidia/cudnn/9.14.0.64-cuda13",
        "keeps: /opt/nvidia/cudnn/8.9.7-cuda12 (unknown",
    ),
    "nvidia_driver": (
        "playbooks/driver.yml",
        driver_host,
        "removes: /etc/modprobe.d/nvidia-gpufleet.conf",
        "",
    ),
}


@pytest.mark.parametrize("role", sorted(CASES))
def test_absent_runs_the_removal_and_nothing_else(tmp_path, role):
    playbook, make, goes, stays = CASES[role]
    root = tmp_path / "host"
    make(root)
    extra = {
        "ansible_become": False,
        HOSTS[role]: "localhost",
        f"{role}_state": "absent",
        f"__{role}_probe_root": str(root),
    }
    result = run(tmp_path, playbook, extra, check=True)
    assert result.rc == 0, result.text[-2000:]
    ran = result.tasks("localhost")
    prefix = f"gpufleet.nvidia.{role} : "
    assert prefix + "Remove | What goes and what stays (check mode - what would go)" in ran
    assert not [
        t
        for t in ran
        if t.startswith(prefix)
        and t.split(" : ")[1].startswith(("Sources", "Install", "Configure", "Verify"))
    ]
    assert goes in result.text and stays in result.text
