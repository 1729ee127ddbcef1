"""smoke: the lab host is converged, reaches the mirror, and cannot reach the internet."""

import json

from testinfra_helpers import py

MIRROR = "http://gpufleet-mirror"

# Runs on the host: fetch the CUDA manifest and its smallest archive; report sha256 and size.
FETCH_AND_HASH = """
import hashlib, json, sys, urllib.request
base = sys.argv[1] + "/cuda/redist/"
doc = json.load(urllib.request.urlopen(base + "redistrib_13.0.2.json", timeout=10))
entries = [v["linux-x86_64"] for v in doc.values() if isinstance(v, dict) and "linux-x86_64" in v]
entry = min(entries, key=lambda e: int(e["size"]))
data = urllib.request.urlopen(base + entry["relative_path"], timeout=30).read()
got = hashlib.sha256(data).hexdigest()
print(json.dumps({"entry": entry, "got": got, "len": len(data)}))
"""

# Runs on the host: list a directory of the mirror.
LIST = """
import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())
"""

# Runs on the host: a TCP connection to a public address must fail, within its timeout.
NO_INTERNET = """
import json, socket, time
start = time.monotonic()
try:
    socket.create_connection(("1.1.1.1", 443), timeout=3).close()
    result = "connected"
except OSError as exc:
    result = type(exc).__name__
print(json.dumps({"result": result, "seconds": time.monotonic() - start}))
"""


def test_converged(host):
    marker = host.file("/etc/gpufleet-smoke")
    assert marker.is_file
    assert marker.mode == 0o644
    assert "converged by molecule smoke" in marker.content_string


def test_systemd_is_pid_1_and_booted(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"
    state = host.run("timeout 60 systemctl is-system-running --wait").stdout.strip()
    assert state in ("running", "degraded")


def test_mirror_manifest_and_archive_checksum(host):
    res = json.loads(py(host, FETCH_AND_HASH, MIRROR))
    assert res["entry"]["relative_path"].endswith("-archive.tar.xz")
    assert res["len"] == int(res["entry"]["size"])
    assert res["got"] == res["entry"]["sha256"]


def test_mirror_serves_cudnn_manifests(host):
    listing = py(host, LIST, f"{MIRROR}/cudnn/redist/")
    assert "redistrib_9.14.0.json" in listing
    assert "redistrib_9.28.0.json" in listing


def test_no_route_to_the_internet(host):
    res = json.loads(py(host, NO_INTERNET))
    assert res["result"] != "connected"
    assert res["seconds"] < 10
