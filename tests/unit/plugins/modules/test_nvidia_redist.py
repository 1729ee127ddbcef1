"""nvidia_redist against a local HTTP server: install, idempotence, check mode, switch, prune, faults.

Faults (issue 5): a sha256 mismatch, a truncated download, the server going away mid-run and a kill in
the middle of unpacking each end with a clear error, leave the previous install working, and a rerun
converges.
"""

import hashlib
import http.server
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import redist
from ansible_collections.gpufleet.nvidia.plugins.modules import nvidia_redist

ROOT = Path(__file__).resolve().parents[4]
DEFAULTS = {
    "state": "present",
    "base_url": None,
    "label": "",
    "optional_components": [],
    "cuda_variant": None,
    "version": None,
    "platform": "linux-x86_64",
    "dest": None,
    "link": None,
    "keep": None,
    "prune_pattern": None,
    "lib64_link": False,
    "replace_foreign": False,
    "keep_downloads": False,
    "timeout": 5,
}


class Failed(Exception):
    pass


class FakeModule:
    def __init__(self, params, check_mode=False):
        self.params = dict(DEFAULTS, **params)
        self.check_mode = check_mode

    def fail_json(self, msg, **kwargs):
        raise Failed(msg)

    @staticmethod
    def atomic_move(src, dest):
        os.replace(src, dest)


def make_archive(path, top, files):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:xz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


class Mirror:
    """A directory in NVIDIA's redist layout, served on 127.0.0.1 with optional faults."""

    def __init__(self, root):
        self.root = root
        self.faults = {}  # relative URL path -> "truncate" | "drop"
        self.requests = []
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(root), **kw)

            def log_message(self, *args):
                pass

            def do_GET(self):
                mirror.requests.append(self.path)
                fault = mirror.faults.get(self.path.lstrip("/"))
                if fault in ("truncate", "drop"):
                    data = (root / self.path.lstrip("/")).read_bytes()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data) if fault == "drop" else len(data) // 2))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                super().do_GET()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        if self.thread is not None:
            self.server.shutdown()
            self.server.server_close()
            self.thread = None

    def publish_cudnn(self, version, majors=("12", "13"), libtext=None):
        release = ".".join(version.split(".")[:3])
        entry = {"name": "cuDNN", "license": "cudnn", "version": version, "cuda_variant": list(majors)}
        plat = {}
        for major in majors:
            rel = f"cudnn/linux-x86_64/cudnn-linux-x86_64-{version}_cuda{major}-archive.tar.xz"
            top = f"cudnn-linux-x86_64-{version}_cuda{major}-archive"
            arc = make_archive(
                self.root / "cudnn" / "redist" / rel,
                top,
                {
                    "lib/libcudnn.so.9": libtext or f"cudnn {version} cuda{major}",
                    "include/cudnn_version.h": "#define CUDNN_MAJOR 9\n",
                    "LICENSE": "license",
                },
            )
            data = arc.read_bytes()
            plat[f"cuda{major}"] = {
                "relative_path": rel,
                "sha256": hashlib.sha256(data).hexdigest(),
                "md5": hashlib.md5(data).hexdigest(),
                "size": str(len(data)),
            }
        entry["linux-x86_64"] = plat
        manifest = {
            "release_date": "2025-10-08",
            "release_label": release,
            "release_product": "cudnn",
            "cudnn": entry,
        }
        path = self.root / "cudnn" / "redist" / (f"redistrib_{release}.json")
        path.write_text(json.dumps(manifest, indent=4))
        return manifest

    def publish_cuda(self, release, comps):
        manifest = {"release_date": "2025-10-09", "release_label": release, "release_product": "cuda"}
        for name, (version, files) in comps.items():
            rel = f"{name}/linux-x86_64/{name}-linux-x86_64-{version}-archive.tar.xz"
            arc = make_archive(
                self.root / "cuda" / "redist" / rel, f"{name}-linux-x86_64-{version}-archive", files
            )
            data = arc.read_bytes()
            manifest[name] = {
                "name": name,
                "version": version,
                "linux-x86_64": {
                    "relative_path": rel,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "size": str(len(data)),
                },
            }
        (self.root / "cuda" / "redist" / (f"redistrib_{release}.json")).write_text(json.dumps(manifest))
        return manifest


@pytest.fixture
def mirror(tmp_path):
    m = Mirror(tmp_path / "mirror")
    (tmp_path / "mirror").mkdir(exist_ok=True)
    yield m
    m.stop()


def cudnn_params(mirror, tmp_path, version="9.14.0", major="13", **kw):
    full = kw.pop("full", None)
    params = {
        "product": "cudnn",
        "release": version,
        "base_url": mirror.url,
        "components": ["cudnn"],
        "cuda_variant": major,
        "version": full,
        "download_dir": str(tmp_path / "dl"),
        "link": str(tmp_path / "opt" / (f"current-cuda{major}")),
        "keep": 1,
        "prune_pattern": rf"^[0-9.]+-cuda{major}$",
    }
    params.update(kw)
    return params


def install(mirror, tmp_path, version, full, *, major="13", check_mode=False, **kw):
    dest = str(tmp_path / "opt" / (f"{full}-cuda{major}"))
    params = cudnn_params(mirror, tmp_path, version, major, dest=dest, full=full, **kw)
    return nvidia_redist.run(FakeModule(params, check_mode=check_mode))


def lib(tmp_path, major="13"):
    return (tmp_path / "opt" / (f"current-cuda{major}") / "lib" / "libcudnn.so.9").read_text()


def test_install_idempotent_check_mode_switch_and_rollback(mirror, tmp_path):
    mirror.publish_cudnn("9.14.0.64")
    mirror.publish_cudnn("9.28.0.42")

    res = install(mirror, tmp_path, "9.14.0", "9.14.0.64", check_mode=True)
    assert res["changed"] is True
    assert not (tmp_path / "opt").exists()

    res = install(mirror, tmp_path, "9.14.0", "9.14.0.64")
    assert res["changed"] is True
    assert res["installed"] is False
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"
    assert not list((tmp_path / "dl").rglob("*.tar.xz")), "downloads are removed after install"

    n = len(mirror.requests)
    res = install(mirror, tmp_path, "9.14.0", "9.14.0.64")
    assert res["changed"] is False
    assert len(mirror.requests) == n + 1, "a converged run reads only the manifest"

    res = install(mirror, tmp_path, "9.28.0", "9.28.0.42", check_mode=True)
    assert res["changed"] is True
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"

    res = install(mirror, tmp_path, "9.28.0", "9.28.0.42")
    assert res["changed"] is True
    assert res["previous_link_target"].endswith("9.14.0.64-cuda13")
    assert lib(tmp_path) == "cudnn 9.28.0.42 cuda13"

    # rollback = switch back, the old tree is still there (keep: 1), nothing downloaded
    n = len(mirror.requests)
    res = install(mirror, tmp_path, "9.14.0", "9.14.0.64")
    assert res["changed"] is True
    assert res["downloaded"] == []
    assert len(mirror.requests) == n + 1
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"
    assert install(mirror, tmp_path, "9.14.0", "9.14.0.64")["changed"] is False


def test_side_by_side_majors_and_pruning(mirror, tmp_path):
    for v in ("9.12.0.46", "9.14.0.64", "9.28.0.42"):
        mirror.publish_cudnn(v)
    install(mirror, tmp_path, "9.14.0", "9.14.0.64", major="12")
    for release, full in (("9.12.0", "9.12.0.46"), ("9.14.0", "9.14.0.64"), ("9.28.0", "9.28.0.42")):
        install(mirror, tmp_path, release, full, major="13")
    names = sorted(os.listdir(tmp_path / "opt"))
    assert names == [
        "9.14.0.64-cuda12",
        "9.14.0.64-cuda13",
        "9.28.0.42-cuda13",
        "current-cuda12",
        "current-cuda13",
    ]
    assert lib(tmp_path, "12") == "cudnn 9.14.0.64 cuda12"
    assert lib(tmp_path, "13") == "cudnn 9.28.0.42 cuda13"


def test_version_mismatch_and_missing_variant_are_clear(mirror, tmp_path):
    mirror.publish_cudnn("9.14.0.64", majors=("12", "13"))
    with pytest.raises(
        nvidia_redist.ERRORS, match=r"cudnn in .* is version 9\.14\.0\.64, not the requested 9\.14\.0\.99"
    ):
        install(mirror, tmp_path, "9.14.0", "9.14.0.99")
    with pytest.raises(nvidia_redist.ERRORS, match="no build for CUDA 11"):
        install(mirror, tmp_path, "9.14.0", "9.14.0.64", major="11")
    with pytest.raises(redist.RedistError, match="HTTP 404"):
        install(mirror, tmp_path, "9.99.0", "9.99.0.1")
    assert not (tmp_path / "opt").exists()


@pytest.mark.parametrize(("release", "components"), [("13.0", ["cuda_nvcc"]), ("13.0.2", [])])
def test_the_release_and_components_come_resolved_from_the_plan(mirror, tmp_path, release, components):
    """X.Y -> X.Y.Z and the default components are the controller's (plan/redist.py, plan/cuda.toolkits):
    the module refuses before it fetches anything."""
    params = {"product": "cuda", "release": release, "base_url": mirror.url, "components": components}
    with pytest.raises(
        nvidia_redist.ERRORS, match="release: '13.0' is not a redist manifest release|components"
    ):
        nvidia_redist.run(FakeModule(params))
    assert mirror.requests == []


def test_cuda_components_merge_into_one_tree(mirror, tmp_path):
    mirror.publish_cuda(
        "13.0.2",
        {
            "cuda_nvcc": ("13.0.88", {"bin/nvcc": "nvcc", "nvcc.profile": "p"}),
            "cuda_cudart": ("13.0.96", {"lib/libcudart.so.13": "rt", "include/cuda_runtime.h": "h"}),
            "cuda_cccl": ("13.0.85", {"include/cccl/cuda/std/version": "v"}),
        },
    )
    dest = tmp_path / "usr" / "local" / "cuda-13.0"
    params = {
        "product": "cuda",
        "release": "13.0.2",
        "base_url": mirror.url,
        "components": ["cuda_nvcc", "cuda_cudart", "cuda_cccl", "libnvvm"],
        "optional_components": ["libnvvm"],
        "dest": str(dest),
        "lib64_link": True,
        "download_dir": str(tmp_path / "dl"),
    }
    res = nvidia_redist.run(FakeModule(params))
    assert res["changed"] is True
    assert (dest / "bin" / "nvcc").read_text() == "nvcc"
    assert (dest / "lib64" / "libcudart.so.13").read_text() == "rt"
    assert (dest / "include" / "cccl" / "cuda" / "std" / "version").exists()
    assert nvidia_redist.run(FakeModule(params))["changed"] is False


def test_controller_cache_then_local_install(mirror, tmp_path):
    mirror.publish_cudnn("9.14.0.64")
    cache = tmp_path / "cache"
    params = cudnn_params(mirror, tmp_path, download_dir=str(cache), state="downloaded", link=None)
    res = nvidia_redist.run(FakeModule(params))
    assert res["changed"] is True
    assert len(res["downloaded"]) == 1
    assert sorted(res["files"]) == sorted(
        [
            "cudnn/redist/redistrib_9.14.0.json",
            "cudnn/redist/cudnn/linux-x86_64/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz",
        ]
    )
    assert nvidia_redist.run(FakeModule(params))["changed"] is False
    mirror.stop()  # hosts never reach the mirror: they install from the (copied) cache directory
    dest = tmp_path / "opt" / "9.14.0.64-cuda13"
    params = cudnn_params(
        mirror, tmp_path, base_url=str(cache), dest=str(dest), download_dir=str(tmp_path / "dl")
    )
    assert nvidia_redist.run(FakeModule(params))["changed"] is True
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"
    assert (cache / res["files"][1]).exists(), "the cache is not consumed by the install"


# --------------------------------------------------------------------------------------------------
# faults
# --------------------------------------------------------------------------------------------------
def _converged_old(mirror, tmp_path):
    mirror.publish_cudnn("9.14.0.64")
    install(mirror, tmp_path, "9.14.0", "9.14.0.64")
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"


def _no_debris(tmp_path):
    names = os.listdir(tmp_path / "opt")
    assert not [n for n in names if redist.STAGING_TAG in n or redist.RETIRED_TAG in n], names
    assert not list((tmp_path / "dl").rglob("*.part")) if (tmp_path / "dl").exists() else True


def test_fault_sha256_mismatch(mirror, tmp_path):
    _converged_old(mirror, tmp_path)
    man = mirror.publish_cudnn("9.28.0.42")
    rel = man["cudnn"]["linux-x86_64"]["cuda13"]["relative_path"]
    arc = mirror.root / "cudnn" / "redist" / rel
    data = bytearray(arc.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same name and size, one byte flipped
    arc.write_bytes(bytes(data))
    with pytest.raises(
        redist.RedistError, match="sha256 mismatch for http://127.0.0.1:.*cuda13-archive.tar.xz"
    ):
        install(mirror, tmp_path, "9.28.0", "9.28.0.42")
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"
    assert not (tmp_path / "opt" / "9.28.0.42-cuda13").exists()
    _no_debris(tmp_path)
    mirror.publish_cudnn("9.28.0.42")  # the mirror is repaired: a rerun converges
    assert install(mirror, tmp_path, "9.28.0", "9.28.0.42")["changed"] is True
    assert lib(tmp_path) == "cudnn 9.28.0.42 cuda13"


@pytest.mark.parametrize("fault", ["truncate", "drop"])
def test_fault_truncated_or_dropped_download(mirror, tmp_path, fault):
    _converged_old(mirror, tmp_path)
    man = mirror.publish_cudnn("9.28.0.42")
    rel = "cudnn/redist/" + man["cudnn"]["linux-x86_64"]["cuda13"]["relative_path"]
    mirror.faults[rel] = fault
    with pytest.raises(redist.RedistError, match="(truncated|failed after [0-9]+ bytes)"):
        install(mirror, tmp_path, "9.28.0", "9.28.0.42")
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"
    _no_debris(tmp_path)
    del mirror.faults[rel]
    assert install(mirror, tmp_path, "9.28.0", "9.28.0.42")["changed"] is True
    assert lib(tmp_path) == "cudnn 9.28.0.42 cuda13"
    assert install(mirror, tmp_path, "9.28.0", "9.28.0.42")["changed"] is False


def test_fault_server_goes_away_mid_run(mirror, tmp_path):
    _converged_old(mirror, tmp_path)
    mirror.publish_cuda(
        "13.0.2",
        {
            "cuda_nvcc": ("13.0.88", {"bin/nvcc": "nvcc"}),
            "cuda_cudart": ("13.0.96", {"lib/libcudart.so.13": "rt"}),
        },
    )
    dest = tmp_path / "opt" / "cuda-13.0"
    params = {
        "product": "cuda",
        "release": "13.0.2",
        "base_url": mirror.url,
        "components": ["cuda_nvcc", "cuda_cudart"],
        "dest": str(dest),
        "download_dir": str(tmp_path / "dl"),
        "retries": 0,
    }
    params.pop("retries")
    real = redist.fetch_verified
    calls = []

    def fetch_then_die(url, *a, **kw):
        calls.append(url)
        if len(calls) == 2:
            mirror.stop()  # the mirror disappears after the first archive
        return real(url, *a, **kw)

    redist.fetch_verified = fetch_then_die
    try:
        with pytest.raises(
            redist.RedistError,
            match=r"download of http://127\.0\.0\.1:[0-9]+/cuda/redist/cuda_cudart.* failed",
        ):
            nvidia_redist.run(FakeModule(params))
    finally:
        redist.fetch_verified = real
    assert not dest.exists()
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"
    _no_debris(tmp_path)
    back = Mirror(mirror.root)  # the mirror comes back: a rerun converges
    try:
        params["base_url"] = back.url
        assert nvidia_redist.run(FakeModule(params))["changed"] is True
        assert (dest / "lib" / "libcudart.so.13").read_text() == "rt"
        assert nvidia_redist.run(FakeModule(params))["changed"] is False
    finally:
        back.stop()


KILLER = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import redist
def hook(stage):
    os.kill(os.getpid(), signal.SIGKILL)  # a kill in the middle of unpacking
ARTS = [{"component": "x", "version": "2", "sha256": "b" * 64}]
redist.install_tree(sys.argv[2], sys.argv[3:], ARTS, hook=hook)
"""


def test_fault_kill_during_unpack_keeps_previous_install(mirror, tmp_path):
    _converged_old(mirror, tmp_path)
    man = mirror.publish_cudnn("9.28.0.42")
    arc = mirror.root / "cudnn" / "redist" / man["cudnn"]["linux-x86_64"]["cuda13"]["relative_path"]
    # kill while replacing the CURRENT tree in place (the harder case: same dest)
    current = os.path.realpath(tmp_path / "opt" / "current-cuda13")
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(ROOT / ".collections"), current, str(arc), str(arc)],
        check=False,
        capture_output=True,
    )
    assert proc.returncode == -signal.SIGKILL
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13", "the previous install still works"
    debris = [n for n in os.listdir(tmp_path / "opt") if redist.STAGING_TAG in n]
    assert debris, "the killed run left its staging tree (removed by the next run)"
    # a rerun converges: the killed staging tree is cleaned up and the requested version installed
    res = install(mirror, tmp_path, "9.28.0", "9.28.0.42")
    assert res["changed"] is True
    assert lib(tmp_path) == "cudnn 9.28.0.42 cuda13"
    res = install(mirror, tmp_path, "9.14.0", "9.14.0.64")  # and rollback still works
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"
    _no_debris(tmp_path)
    assert install(mirror, tmp_path, "9.14.0", "9.14.0.64")["changed"] is False


def _foreign_tree(tmp_path, full="9.14.0.64", major="13"):
    """A hand-unpacked cuDNN at the very path gpufleet would install to (no gpufleet marker)."""
    tree = tmp_path / "opt" / f"{full}-cuda{major}"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "libcudnn.so.9").write_text("the user's own cuDNN")
    return tree


def test_a_tree_gpufleet_does_not_own_is_refused_in_check_mode_and_for_real(mirror, tmp_path):
    mirror.publish_cudnn("9.14.0.64")
    tree = _foreign_tree(tmp_path)
    for check_mode in (True, False):
        with pytest.raises(Failed, match=r"9\.14\.0\.64-cuda13 exists and gpufleet did not install it"):
            install(mirror, tmp_path, "9.14.0", "9.14.0.64", check_mode=check_mode, label="cudnn_version")
    assert (tree / "lib" / "libcudnn.so.9").read_text() == "the user's own cuDNN"
    assert sorted(p.name for p in (tmp_path / "opt").iterdir()) == [tree.name]
    assert len([r for r in mirror.requests if r.endswith(".tar.xz")]) == 0, "nothing downloaded"


def test_replace_foreign_moves_the_tree_into_a_backup_and_never_deletes_it(mirror, tmp_path):
    mirror.publish_cudnn("9.14.0.64")
    tree = _foreign_tree(tmp_path)
    res = install(mirror, tmp_path, "9.14.0", "9.14.0.64", replace_foreign=True)
    assert res["changed"] is True and res["foreign"] is True
    backup = Path(res["backup"])
    assert backup.name.startswith(tree.name + ".gpufleet-backup-")
    assert (backup / "lib" / "libcudnn.so.9").read_text() == "the user's own cuDNN"
    assert lib(tmp_path) == "cudnn 9.14.0.64 cuda13"
    res = install(mirror, tmp_path, "9.14.0", "9.14.0.64", replace_foreign=True)
    assert res["changed"] is False and res["foreign"] is False and res["backup"] is None


@pytest.mark.parametrize(
    ("given", "used"), [("", None), (None, None), ("/etc/ssl/site-ca.pem", "/etc/ssl/site-ca.pem")]
)
def test_the_roles_ca_path_verifies_the_servers_empty_is_the_systems(
    mirror, tmp_path, monkeypatch, given, used
):
    """Issue 36: the roles pass <role>_ca_path as it is ("" when unset): every fetch gets it, or None."""
    mirror.publish_cudnn("9.14.0.64")
    seen = []
    real = redist.fetch_bytes

    def fetch_bytes(url, timeout=30, tls=None):
        seen.append(tls)
        return real(url, timeout=timeout)

    monkeypatch.setattr(redist, "fetch_bytes", fetch_bytes)
    params = cudnn_params(mirror, tmp_path, state="planned", ca_path=given)
    nvidia_redist.run(FakeModule(params))
    assert seen == [{"validate_certs": True, "ca_path": used}]
