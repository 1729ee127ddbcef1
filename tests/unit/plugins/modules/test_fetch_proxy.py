"""nvidia_repo and nvidia_redist fetch through ansible.module_utils.urls (install/repo.py, install/redist.py):
the environment's proxy is used.

A tiny threaded forwarding proxy on 127.0.0.1 records every request it forwards to a local origin server;
the modules' fetch functions must go through it when http_proxy is set, and around it for no_proxy. For
https, a CONNECT proxy (https_proxy) in front of a TLS origin with a throwaway certificate: trusted through
ca_path, refused without it, accepted with validate_certs off.
"""

import hashlib
import http.server
import pathlib
import select
import shutil
import socket
import ssl
import subprocess
import threading
import urllib.request

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import repo as install_repo

ROOT = pathlib.Path(__file__).resolve().parents[4]
FETCHERS = (
    "plugins/module_utils/install/repo.py",
    "plugins/modules/nvidia_redist.py",
    "plugins/module_utils/install/redist.py",
)
KEY = b"-----BEGIN PGP PUBLIC KEY BLOCK-----\nfake\n-----END PGP PUBLIC KEY BLOCK-----\n"
ARCHIVE = b"archive bytes " * 1000


def _serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _Origin(http.server.BaseHTTPRequestHandler):
    files = {
        "/repo/key.pub": KEY,
        "/redist/redistrib_1.0.json": b'{"release_date": "x"}',
        "/a.tar.xz": ARCHIVE,
    }

    def do_GET(self):
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args):
        pass


def _proxy_handler(log, status=None):
    """A forwarding proxy: absolute-URI GETs are fetched from the origin without a proxy and recorded."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    class Proxy(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            log.append((self.path, self.headers.get("User-Agent")))
            if status:
                self.send_error(status, "refused by the test proxy")
                return
            with direct.open(self.path, timeout=10) as resp:
                body = resp.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Proxy


@pytest.fixture
def servers(monkeypatch):
    log = []
    origin = _serve(_Origin)
    proxy = _serve(_proxy_handler(log))
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
    yield f"http://127.0.0.1:{origin.server_address[1]}", log, proxy
    for server in (origin, proxy):
        server.shutdown()
        server.server_close()


def test_repo_key_fetch_goes_through_the_proxy(servers):
    origin, log, _proxy = servers
    assert install_repo.fetch_key(f"{origin}/repo/key.pub", 10) == KEY
    assert log == [(f"{origin}/repo/key.pub", "gpufleet")]


def test_redist_manifest_and_archive_go_through_the_proxy(servers, tmp_path):
    origin, log, _proxy = servers
    assert redist.fetch_bytes(f"{origin}/redist/redistrib_1.0.json", timeout=10).startswith(b"{")
    dest = tmp_path / "a.tar.xz"
    sha = hashlib.sha256(ARCHIVE).hexdigest()
    assert redist.fetch_verified(f"{origin}/a.tar.xz", str(dest), sha, size=len(ARCHIVE), timeout=10)
    assert dest.read_bytes() == ARCHIVE
    assert [path for path, _agent in log] == [f"{origin}/redist/redistrib_1.0.json", f"{origin}/a.tar.xz"]


def test_no_proxy_bypasses_the_proxy(servers, monkeypatch):
    origin, log, _proxy = servers
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert install_repo.fetch_key(f"{origin}/repo/key.pub", 10) == KEY
    assert redist.fetch_bytes(f"{origin}/redist/redistrib_1.0.json", timeout=10).startswith(b"{")
    assert log == []


def test_a_proxy_refusal_keeps_the_error_messages(monkeypatch, tmp_path):
    log = []
    proxy = _serve(_proxy_handler(log, status=502))
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
    url = "http://gpufleet.invalid/x"
    try:
        with pytest.raises(redist.RedistError, match=r"^http://gpufleet\.invalid/x: HTTP 502 "):
            redist.fetch_bytes(url, timeout=10)
        with pytest.raises(redist.RedistError, match=r"^http://gpufleet\.invalid/x: HTTP 502 "):
            redist.fetch_verified(url, str(tmp_path / "x"), "0" * 64, timeout=10, retries=0)
        with pytest.raises(install_repo.RepoError, match=r"^cannot fetch the repository key http://gpufleet"):
            install_repo.fetch_key(url, 10)
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert len(log) == 3
    assert not (tmp_path / "x").exists()
    assert not (tmp_path / "x.part").exists()


@pytest.mark.parametrize("path", FETCHERS)
def test_no_plain_urlopen(path):
    text = (ROOT / path).read_text()
    assert "urlopen" not in text
    assert "open_url" in text


# ---------------------------------------------------------------------------------------------------
# https: through https_proxy (CONNECT), the server's certificate checked against ca_path
# ---------------------------------------------------------------------------------------------------
def _relay(a, b):
    sockets = [a, b]
    while True:
        readable, _w, _x = select.select(sockets, [], [], 10)
        if not readable:
            return
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            (b if sock is a else a).sendall(data)


def _connect_proxy_handler(log):
    class Proxy(http.server.BaseHTTPRequestHandler):
        def do_CONNECT(self):
            log.append(("CONNECT", self.path))
            host, port = self.path.rsplit(":", 1)
            with socket.create_connection((host, int(port)), timeout=10) as upstream:
                self.send_response(200, "Connection established")
                self.end_headers()
                _relay(self.connection, upstream)
            self.close_connection = True

        def log_message(self, *args):
            pass

    return Proxy


@pytest.fixture
def tls_servers(tmp_path, monkeypatch):
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
    origin = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    origin.socket = context.wrap_socket(origin.socket, server_side=True)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    log = []
    proxy = _serve(_connect_proxy_handler(log))
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
    yield f"https://127.0.0.1:{origin.server_address[1]}", log, str(cert)
    for server in (origin, proxy):
        server.shutdown()
        server.server_close()


def test_https_goes_through_https_proxy_and_trusts_ca_path(tls_servers, tmp_path):
    origin, log, cert = tls_servers
    tls = {"validate_certs": True, "ca_path": cert}
    assert install_repo.fetch_key(f"{origin}/repo/key.pub", 10, ca_path=cert) == KEY
    assert redist.fetch_bytes(f"{origin}/redist/redistrib_1.0.json", timeout=10, tls=tls).startswith(b"{")
    sha = hashlib.sha256(ARCHIVE).hexdigest()
    dest = tmp_path / "a.tar.xz"
    assert redist.fetch_verified(f"{origin}/a.tar.xz", str(dest), sha, size=len(ARCHIVE), timeout=10, tls=tls)
    assert dest.read_bytes() == ARCHIVE
    assert log == [("CONNECT", origin[len("https://") :])] * 3


def test_an_unknown_certificate_is_refused_unless_validate_certs_is_off(tls_servers):
    origin, log, _cert = tls_servers
    with pytest.raises(
        install_repo.RepoError, match=r"^cannot fetch the repository key https://.*certificate"
    ):
        install_repo.fetch_key(f"{origin}/repo/key.pub", 10)
    with pytest.raises(redist.RedistError, match="certificate"):
        redist.fetch_bytes(f"{origin}/redist/redistrib_1.0.json", timeout=10)
    assert install_repo.fetch_key(f"{origin}/repo/key.pub", 10, validate_certs=False) == KEY
    assert len(log) == 3
