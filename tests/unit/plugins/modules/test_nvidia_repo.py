"""nvidia_repo: the key is written once its fingerprint matched; package plans report what is missing."""

import http.server
import os
import threading
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.modules import nvidia_repo

KEY = (Path(__file__).resolve().parents[3] / "data" / "keys" / "test-signing-key.asc").read_bytes()
FPR = "C3B19113CF573F8BF336BC36548F7B3414DA5E58"
DEFAULTS = {
    "state": "present",
    "machine": "x86_64",
    "base_url": "",
    "key_fingerprint": "",
    "timeout": 5,
    "packages_for": "none",
    "source": "nvidia_repo",
    "versions": [],
    "cuda_major": "",
    "dev": True,
}


class FakePackages:
    """The package database (probe/packages.Packages) holding "name<TAB>version<TAB>installed" lines."""

    out = ""
    queried = []

    def __init__(self, root):
        self.root = root
        self.installed = {}
        for line in self.out.splitlines():
            name, version, _state = line.split("\t")
            self.installed[name] = {"name": name, "version": version}

    def get(self, name):
        FakePackages.queried.append(name)
        return self.installed.get(name)


@pytest.fixture(autouse=True)
def _fake_package_database(monkeypatch):
    monkeypatch.setattr(nvidia_repo, "Packages", FakePackages)
    FakePackages.queried = []


class FakeModule:
    def __init__(self, params, installed_out="", check_mode=False):
        self.params = dict(DEFAULTS, **params)
        self.check_mode = check_mode
        FakePackages.out = installed_out

    @staticmethod
    def atomic_move(src, dest):
        os.replace(src, dest)


@pytest.fixture
def repo_server(tmp_path):
    root = tmp_path / "repos" / "ubuntu2404" / "x86_64"
    root.mkdir(parents=True)
    (root / "3bf863cc.pub").write_bytes(KEY)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path / "repos"), **kw)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def redirect_paths(monkeypatch, tmp_path):
    real = repo_plan.repo_config

    def config(*args, **kwargs):
        cfg = real(*args, **kwargs)
        cfg["keyring"] = str(tmp_path / "etc" / "keyring.asc")
        cfg["path"] = str(tmp_path / "etc" / "nvidia.sources")
        return cfg

    monkeypatch.setattr(repo_plan, "repo_config", config)


def test_key_with_the_pinned_fingerprint_is_written_then_unchanged(repo_server, tmp_path, monkeypatch):
    redirect_paths(monkeypatch, tmp_path)
    params = {
        "distribution": "Ubuntu",
        "distribution_version": "24.04",
        "base_url": repo_server,
        "key_fingerprint": FPR,
    }
    assert nvidia_repo.run(FakeModule(params, check_mode=True))["changed"] is True
    assert not (tmp_path / "etc").exists()
    res = nvidia_repo.run(FakeModule(params))
    assert res["changed"] is True
    assert res["fingerprint"] == FPR
    assert (tmp_path / "etc" / "keyring.asc").read_bytes() == KEY
    assert f"URIs: {repo_server}/ubuntu2404/x86_64/" in (tmp_path / "etc" / "nvidia.sources").read_text()
    assert nvidia_repo.run(FakeModule(params))["changed"] is False


def test_key_with_another_fingerprint_is_refused_and_nothing_written(repo_server, tmp_path, monkeypatch):
    redirect_paths(monkeypatch, tmp_path)
    params = {"distribution": "Ubuntu", "distribution_version": "24.04", "base_url": repo_server}
    with pytest.raises(repo_plan.RepoPlanError, match="not the pinned EB693B30"):
        nvidia_repo.run(FakeModule(params))
    assert not (tmp_path / "etc").exists()


def test_unreachable_key_is_a_clear_error(tmp_path, monkeypatch):
    redirect_paths(monkeypatch, tmp_path)
    params = {"distribution": "Debian", "distribution_version": "13", "base_url": "http://127.0.0.1:9"}
    with pytest.raises(
        repo_plan.RepoPlanError, match="cannot fetch the repository key http://127.0.0.1:9/debian13"
    ):
        nvidia_repo.run(FakeModule(params))


def test_cudnn_plan_reports_missing_and_holds_the_library():
    out = "libcudnn9-cuda-13\t9.14.0.64-1\tinstalled\nlibcudnn9-dev-cuda-13\t9.12.0.46-1\tinstalled\n"
    module = FakeModule(
        {
            "state": "planned",
            "distribution": "Ubuntu",
            "distribution_version": "24.04",
            "packages_for": "cudnn",
            "versions": ["9.14.0.64"],
            "cuda_major": "13",
        },
        installed_out=out,
    )
    plan = nvidia_repo.run(module)["packages"]
    assert plan["missing"] == ["libcudnn9-dev-cuda-13=9.14.0.64-1", "libcudnn9-headers-cuda-13=9.14.0.64-1"]
    assert plan["hold"] == ["libcudnn9-cuda-13"]
    assert FakePackages.queried[0] == "libcudnn9-cuda-13"  # the one package-database reader


def test_cudnn_plan_all_installed_h200_shape():
    out = "".join(
        f"{n}\t9.14.0.64-1\tinstalled\n"
        for n in ("libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13")
    )
    module = FakeModule(
        {
            "state": "planned",
            "distribution": "Ubuntu",
            "distribution_version": "24.04",
            "packages_for": "cudnn",
            "versions": ["9.14.0"],
            "cuda_major": "13",
        },
        installed_out=out,
    )
    assert nvidia_repo.run(module)["packages"]["missing"] == []


def test_rpm_plan_and_distro_refusal():
    module = FakeModule(
        {
            "state": "planned",
            "distribution": "Rocky",
            "distribution_version": "9.4",
            "packages_for": "cuda_toolkit",
            "versions": ["13.0"],
            "key_fingerprint": FPR,
        },
        installed_out="cuda-toolkit-13-0\t13.0.2-1\tinstalled\n",
    )
    res = nvidia_repo.run(module)
    assert res["repo"]["repo_dir"] == "rhel9"
    assert res["packages"]["missing"] == []
    assert FakePackages.queried == ["cuda-toolkit-13-0"]
    module = FakeModule(
        {
            "state": "planned",
            "distribution": "Debian",
            "distribution_version": "12",
            "packages_for": "cudnn",
            "source": "distro",
            "versions": ["9.14.0"],
            "cuda_major": "12",
        }
    )
    with pytest.raises(repo_plan.RepoPlanError, match="cudnn_source: distro is not possible on Debian 12"):
        nvidia_repo.run(module)


def test_installed_versions_come_from_the_one_package_database_reader(tmp_path, monkeypatch):
    monkeypatch.undo()  # the real probe/packages.Packages, under a fake root
    status = tmp_path / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    status.write_text(
        "Package: libcudnn9-cuda-13\nStatus: install ok installed\nVersion: 9.14.0.64-1\n\n"
        "Package: cuda-toolkit-13-0\nStatus: deinstall ok config-files\nVersion: 13.0.2-1\n"
    )
    monkeypatch.setattr(nvidia_repo, "HOST_ROOT", str(tmp_path))
    assert nvidia_repo.installed_versions(["libcudnn9-cuda-13", "cuda-toolkit-13-0"]) == {
        "libcudnn9-cuda-13": "9.14.0.64-1"
    }
