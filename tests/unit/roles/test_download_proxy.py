"""Issue 36: a role's proxies and CA bundle reach its downloads, end to end (ansible-playbook in check mode on
this machine; the static wiring of every task: test_download_wiring.py).

The cudnn role's preflight and install read NVIDIA's redist manifest (tests/data/redist/mirror, served on
127.0.0.1) through a recording proxy on 127.0.0.1 given only as cudnn_http_proxy / cudnn_https_proxy; over
https the origin's throwaway certificate is trusted through cudnn_ca_path alone. With the controller cache the
controller's own fetch (delegated to localhost) goes through it too. Check mode changes nothing here.
"""

import functools
import http.server
import json
import shutil
import ssl
import subprocess
import threading

import pytest

from tests.playbook import ROOT, run
from tests.unit.plugins.modules.test_fetch_proxy import _connect_proxy_handler, _proxy_handler, _serve

MIRROR = ROOT / "tests" / "data" / "redist" / "mirror"
MANIFEST = "/cudnn/redist/redistrib_9.14.0.json"
PLAYBOOK = """
- name: cudnn behind a proxy
  hosts: localhost
  gather_facts: true
  roles:
    - role: gpufleet.nvidia.cudnn
"""
# cuDNN from the redist archives for CUDA 12 (no toolkit of this machine in the way), nothing run after the
# install in check mode
BASE_VARS = {"cudnn_source": "redist", "cuda_toolkit_versions": ["12.9"], "cudnn_verify": False}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _origin(context=None):
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(MIRROR))
    )
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _stop(*servers):
    for server in servers:
        server.shutdown()
        server.server_close()


def _playbook(tmp_path, role_vars, check=True):
    playbook = tmp_path / "site.yml"
    playbook.write_text(PLAYBOOK)
    return run(tmp_path, playbook, {**BASE_VARS, **role_vars}, check=check, timeout=600)


@pytest.fixture
def http_mirror():
    log = []
    origin, proxy = _origin(), _serve(_proxy_handler(log))
    yield f"http://127.0.0.1:{origin.server_address[1]}", f"http://127.0.0.1:{proxy.server_address[1]}", log
    _stop(origin, proxy)


def test_the_redist_manifest_is_read_through_the_roles_proxy(tmp_path, http_mirror):
    origin, proxy, log = http_mirror
    result = _playbook(tmp_path, {"cudnn_redist_base_url": origin, "cudnn_http_proxy": proxy})
    assert result.rc == 0, result.text
    # the preflight's redist plan and the install's manifest read (check mode: no archive fetched)
    assert [path for path, _agent in log] == [origin + MANIFEST] * 2, log
    assert "9.14.0.64 for CUDA 12 -> /opt/nvidia/cudnn/9.14.0.64-cuda12" in result.text


def test_no_proxy_reaches_the_mirror_directly(tmp_path, http_mirror):
    origin, proxy, log = http_mirror
    given = {"cudnn_redist_base_url": origin, "cudnn_http_proxy": proxy, "cudnn_no_proxy": ["127.0.0.1"]}
    result = _playbook(tmp_path, given)
    assert result.rc == 0, result.text
    assert log == []


def test_the_controller_caches_fetch_goes_through_the_proxy_too(tmp_path, http_mirror):
    """cudnn_controller_cache: the controller reads the manifest (delegate_to localhost) through the role's
    proxy. A first check-mode run then stops at the host's copy (docs/airgap.md): nothing cached yet."""
    origin, proxy, log = http_mirror
    given = {
        "cudnn_redist_base_url": origin,
        "cudnn_http_proxy": proxy,
        "cudnn_controller_cache": True,
        "cudnn_controller_cache_dir": str(tmp_path / "cache"),
    }
    result = _playbook(tmp_path, given)
    ran = [name.rpartition(" : ")[2] for name in result.tasks("localhost")]
    assert "Preflight | Redist manifests and archives into the controller cache" in ran, ran
    # the host's own read of the manifest did not run: the one proxied request is the controller's
    assert "Preflight | Redist plan (manifest, artifact, installed?)" not in ran, ran
    assert [name for name, _msg in result.failures()] == [
        "gpufleet.nvidia.internal : Controller cache | Copy to the host"
    ]
    assert [path for path, _agent in log] == [origin + MANIFEST], log


@pytest.fixture
def https_mirror(tmp_path):
    openssl = shutil.which("openssl")
    if not openssl:
        pytest.skip("openssl is not installed: no certificate for the https origin")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    log = []
    origin, proxy = _origin(context), _serve(_connect_proxy_handler(log))
    yield (
        f"https://127.0.0.1:{origin.server_address[1]}",
        f"http://127.0.0.1:{proxy.server_address[1]}",
        log,
        cert,
    )
    _stop(origin, proxy)


def test_https_goes_through_https_proxy_trusting_the_roles_ca_path(tmp_path, https_mirror):
    origin, proxy, log, cert = https_mirror
    given = {"cudnn_redist_base_url": origin, "cudnn_https_proxy": proxy}
    refused = _playbook(tmp_path, given)
    assert refused.rc != 0, refused.text
    assert "certificate" in refused.text.lower(), refused.text
    log.clear()
    trusted = _playbook(tmp_path, dict(given, cudnn_ca_path=str(cert)))
    assert trusted.rc == 0, trusted.text
    assert log == [("CONNECT", origin.removeprefix("https://"))] * 2, json.dumps(log)
