"""roles/nvidia_driver through playbooks/driver.yml on a fake H200 tree: host-managed, changed=0, 570 refused.

The fake tree copies what the project's H200 shows: /proc/driver/nvidia/version of the open 580.159.04
module, /.dockerenv, the driver libraries on a read-only /usr/local/nvidia mount, no package owning NVML.
The role's nvidia_facts reads it through the internal variable __nvidia_driver_probe_root (check mode,
localhost); the loader cache (/etc/ld.so.cache) names the NVML copy under /usr/local/nvidia, and
/etc/os-release says Ubuntu 24.04 as on the host.
"""

import re

from tests.data.builders import build_ld_cache
from tests.playbook import ROOT, run

H200_VERSION = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
    "GCC version:  gcc version 15.3.0 (GCC) \n"
)


def fake_h200(tmp_path):
    files = {
        "proc/driver/nvidia/version": H200_VERSION,
        "sys/module/nvidia/version": "580.159.04\n",
        "proc/sys/kernel/osrelease": "6.18.44-fc-v595\n",
        ".dockerenv": "",
        "usr/local/nvidia/lib64/libnvidia-ml.so.1": "",
        "proc/self/mounts": "overlay / overlay rw 0 0\nnvidia /usr/local/nvidia virtiofs ro,relatime 0 0\n",
    }
    files["etc/os-release"] = 'ID=ubuntu\nVERSION_ID="24.04"\n'
    for rel, text in files.items():
        path = tmp_path / "h200" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    nvml = [("libnvidia-ml.so.1", "/usr/local/nvidia/lib64/libnvidia-ml.so.1", 0x0303)]
    (tmp_path / "h200/etc/ld.so.cache").write_bytes(build_ld_cache(nvml))
    return tmp_path / "h200"


def run_driver_playbook(tmp_path, branch):
    extra_vars = {
        "gpufleet_driver_hosts": "localhost",
        "ansible_become": False,
        "nvidia_driver_branch": branch,
        "nvidia_driver_gpus": [{"name": "NVIDIA H200"}],
        "__nvidia_driver_probe_root": str(fake_h200(tmp_path)),
    }
    result = run(
        tmp_path,
        ROOT / "playbooks" / "driver.yml",
        extra_vars,
        check=True,
        callback=False,
        json_results=True,
        timeout=300,
    )
    return result.rc, result.text


def test_host_managed_580_is_verified_and_nothing_changes(tmp_path):
    rc, out = run_driver_playbook(tmp_path, "580")
    assert rc == 0, out[-3000:]
    assert (
        "host-managed NVIDIA driver 580.159.04 (open kernel module) matches nvidia_driver_branch 580" in out
    )
    assert re.search(r"localhost\s*:\s*ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", out), out[-2000:]
    assert "Install |" not in out


def test_host_managed_570_is_refused(tmp_path):
    rc, out = run_driver_playbook(tmp_path, "570")
    assert rc != 0
    assert "nvidia_driver_branch: '570' was requested but this host's driver is host-managed" in out
    assert "runs 580.159.04 (branch 580)" in out
    assert "Install |" not in out
