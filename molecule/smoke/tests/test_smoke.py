"""smoke: the lab host is converged, reaches the mirror, and cannot reach the internet."""

import json

MIRROR = "http://gpufleet-mirror"
CUDA_MANIFEST = f"{MIRROR}/cuda/redist/redistrib_13.0.2.json"

# Runs on the host: download the CUDA manifest and its smallest archive, check sha256 and size.
FETCH_AND_CHECK = r"""
import hashlib, json, sys, urllib.request
base = sys.argv[1]
doc = json.load(urllib.request.urlopen(base + "/cuda/redist/redistrib_13.0.2.json", timeout=10))
entries = [v["linux-x86_64"] for v in doc.values() if isinstance(v, dict) and "linux-x86_64" in v]
entry = min(entries, key=lambda e: int(e["size"]))
data = urllib.request.urlopen(base + "/cuda/redist/" + entry["relative_path"], timeout=30).read()
print(json.dumps({"path": entry["relative_path"], "want": entry["sha256"], "got": hashlib.sha256(data).hexdigest(),
                  "size": int(entry["size"]), "len": len(data)}))
"""

# Runs on the host: a TCP connection to a public address must fail (and within the timeout).
NO_INTERNET = r"""
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


def test_systemd_is_pid_1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"


def test_mirror_manifest_and_archive_checksum(host):
    out = host.check_output(f"python3 -c '{FETCH_AND_CHECK}' {MIRROR}")
    res = json.loads(out)
    assert res["path"].endswith("-archive.tar.xz")
    assert res["len"] == res["size"]
    assert res["got"] == res["want"]


def test_mirror_serves_cudnn_manifests(host):
    out = host.check_output(
        "python3 -c 'import sys, urllib.request; "
        'print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())\' ' + f"{MIRROR}/cudnn/redist/"
    )
    assert "redistrib_9." in out


def test_no_route_to_the_internet(host):
    res = json.loads(host.check_output(f"python3 -c '{NO_INTERNET}'"))
    assert res["result"] != "connected"
    assert res["seconds"] < 10
