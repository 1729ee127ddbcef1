"""airgap: hosts install cuDNN from the controller's verified copy and reach nothing but the controller."""

import json
import os
import re
import subprocess
from pathlib import Path

from testinfra_helpers import cudnn_loaded, py

NO_ROUTE = """
import json, socket, sys
out = {}
try:
    socket.getaddrinfo('gpufleet-mirror', 80)
    out['dns'] = 'resolved'
except OSError as exc:
    out['dns'] = 'failed: %s' % exc
try:
    socket.create_connection((sys.argv[1], 80), timeout=3).close()
    out['tcp'] = 'connected'
except OSError as exc:
    out['tcp'] = 'failed: %s' % exc
print(json.dumps(out))
"""


def docker(*args):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


def mirror_ip():
    return docker(
        "inspect", "-f", '{{(index .NetworkSettings.Networks "gpufleet-lab").IPAddress}}', "gpufleet-mirror"
    ).strip()


def test_cudnn_installed_from_the_copy(host):
    assert host.file("/opt/nvidia/cudnn/current-cuda13").linked_to == "/opt/nvidia/cudnn/9.14.0.64-cuda13"
    assert cudnn_loaded(host)["version"] == 91400
    # the copied archive is gone after the install; the manifest copy stays (it decides "installed")
    assert host.file("/var/cache/gpufleet/redist/cudnn/redist/redistrib_9.14.0.json").exists
    assert not host.run("find /var/cache/gpufleet/redist -name '*.tar.xz'").stdout.strip()


def test_host_cannot_reach_the_mirror(host):
    out = json.loads(py(host, NO_ROUTE, mirror_ip()))
    assert out["dns"].startswith("failed"), out
    assert out["tcp"].startswith("failed"), out


def test_mirror_saw_only_the_controller_and_one_download():
    since = json.loads((Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "airgap-start.json").read_text())[
        "since"
    ]
    logs = subprocess.run(
        ["docker", "logs", "--since", since, "gpufleet-mirror"], capture_output=True, text=True, check=True
    )
    lines = [line for line in (logs.stdout + logs.stderr).splitlines() if '"GET ' in line]
    gateway = docker(
        "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}}{{end}}", "gpufleet-lab"
    ).strip()
    archive = [
        line for line in lines if re.search(r"GET /cudnn/redist/cudnn/linux-x86_64/\S+cuda13-archive", line)
    ]
    from_controller = [line for line in archive if line.split()[0] == gateway]
    # two hosts, one download, by the controller (other lab users may fetch the same file from their hosts)
    assert len(from_controller) == 1, archive
    manifests = [line for line in lines if "GET /cudnn/redist/redistrib_9.14.0.json" in line]
    assert {line.split()[0] for line in manifests} >= {gateway}
