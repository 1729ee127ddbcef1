"""probe/cuda.py: gpufleet's marker per toolkit (the one reader the cuda_toolkit plan asks)."""

import json

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpufleet import MARKER
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import cuda as probe_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages

from tests.data.facts import fakeroot


def _toolkit(root, name, marker):
    tree = root / "usr/local" / name
    (tree / "bin").mkdir(parents=True)
    (tree / "bin/nvcc").write_text("")
    version = name.split("-")[1]
    (tree / "version.json").write_text(json.dumps({"cuda": {"version": f"{version}.0"}}))
    if marker:
        (tree / MARKER).write_text("{}")


def test_marker_is_reported_per_toolkit(tmp_path):
    _toolkit(tmp_path, "cuda-13.0", marker=True)
    _toolkit(tmp_path, "cuda-12.9", marker=False)
    root = Root(str(tmp_path))
    cuda = probe_cuda.probe(root, False, Packages(root))
    marks = {t["path"]: t["gpufleet_marker"] for t in cuda["toolkits"]}
    assert marks == {"/usr/local/cuda-12.9": False, "/usr/local/cuda-13.0": True}


def test_the_hold_state_of_a_package_toolkits_release(tmp_path):
    """Issue 36: the audit reports the toolkit's holds as it reports cuDNN's. The H200's dpkg database holds
    none of its cuda-*-13-0 / lib*-13-0 packages (apt-mark showhold: cuDNN and NCCL only)."""
    fakeroot.h200(tmp_path)
    root = Root(str(tmp_path))
    packages = Packages(root)
    (toolkit,) = probe_cuda.probe(root, False, packages)["toolkits"]
    suffix = [n for n in packages.all() if n.endswith("-13-0")]
    assert toolkit["source"] == "deb"
    assert toolkit["hold"] == {"packages": len(suffix), "held": 0} and len(suffix) > 20
    assert probe_cuda.release_hold(packages, "redist", "13.0") is None  # no package installed that tree
    assert probe_cuda.release_hold(packages, "deb", "12.9") is None  # no package of that release


def test_a_tree_a_sites_own_deb_owns_is_that_packages(tmp_path):
    """Issue 38: a site's own package of CUDA (hpc-site-cuda-13-0, a name the reader does not keep as
    NVIDIA-related) owns /usr/local/cuda-13.0; its owner was "unknown", so the refusal could not name it.
    dpkg's file lists say who owns the tree's key file."""
    tree = "/usr/local/cuda-13.0"
    files = {"hpc-site-cuda-13-0": [tree, f"{tree}/bin", f"{tree}/bin/nvcc", f"{tree}/version.json"]}
    fakeroot.dpkg_db(
        tmp_path, [("hpc-site-cuda-13-0", "13.0.2-1site", "install ok installed", "amd64")], files
    )
    fakeroot.write(tmp_path, f"{tree}/bin/nvcc", "#!/bin/sh\n")
    fakeroot.write(tmp_path, f"{tree}/version.json", '{"cuda": {"version": "13.0.2"}}')
    root = Root(str(tmp_path))
    (toolkit,) = probe_cuda.probe(root, False, Packages(root))["toolkits"]
    assert toolkit["owner"]["kind"] == "package"
    assert toolkit["owner"]["words"] == "package hpc-site-cuda-13-0 13.0.2-1site"


def test_a_tree_a_sites_own_rpm_owns_is_that_packages(tmp_path, monkeypatch):
    """The same on an rpm host: one rpm -qf of the tree's key files and the tree (any package)."""
    tree = "/usr/local/cuda-13.0"
    fakeroot.write(tmp_path, f"{tree}/version.json", '{"cuda": {"version": "13.0.2"}}')
    fakeroot.write(tmp_path, "/var/lib/rpm/rpmdb.sqlite", "db")
    calls = []

    def rpm(cmd, timeout=None):
        calls.append(cmd)
        if "-qa" in cmd:
            return 0, "", "", None
        out = "".join(
            "hpc-site-cuda-13-0\t0:13.0.2-1.site\n" if p.startswith(tree) else f"file {p} is not owned\n"
            for p in cmd[cmd.index("--") + 1 :]
        )
        return 0, out, "", None

    monkeypatch.setattr(probe_packages, "run_command", rpm)
    monkeypatch.setattr(probe_packages, "which", lambda name: f"/usr/bin/{name}")
    root = Root(str(tmp_path))
    (toolkit,) = probe_cuda.probe(root, False, Packages(root))["toolkits"]
    assert toolkit["owner"]["words"] == "package hpc-site-cuda-13-0 13.0.2-1.site"
    (query,) = [c for c in calls if "-qf" in c]
    assert query[query.index("--") + 1 :][-1] == tree


def test_a_gpufleet_redist_tree_has_no_hold(tmp_path):
    _toolkit(tmp_path, "cuda-13.0", marker=True)
    root = Root(str(tmp_path))
    (toolkit,) = probe_cuda.probe(root, False, Packages(root))["toolkits"]
    assert toolkit["hold"] is None


def test_a_tree_of_packages_without_nvcc_or_headers_is_owned_by_its_packages(tmp_path):
    """Issue 36 (molecule removal): an admin's cuda-cudart-13-0 alone from NVIDIA's repository puts only
    targets/.../libcudart.so.13 under /usr/local/cuda-13.0: no key file (nvcc, version.json, headers). The
    tree is the packages', not 'unknown', so the toolkit role's nvidia_repo install completes it with apt
    instead of refusing a tree 'gpufleet does not own'."""
    lib = "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
    files = {
        "cuda-cudart-13-0": ["/usr/local/cuda-13.0", f"{lib}/libcudart.so.13", f"{lib}/libcudart.so.13.0.96"],
        "cuda-toolkit-13-0-config-common": ["/etc/ld.so.conf.d/988_cuda-13.conf"],
    }
    fakeroot.dpkg_db(
        tmp_path,
        [
            ("cuda-cudart-13-0", "13.0.96-1", "install ok installed", "amd64"),
            ("cuda-toolkit-13-0-config-common", "13.0.96-1", "install ok installed", "all"),
        ],
        files,
    )
    for path in files["cuda-cudart-13-0"][1:]:
        fakeroot.write(tmp_path, path, "\x7fELF")
    root = Root(str(tmp_path))
    (toolkit,) = probe_cuda.probe(root, False, Packages(root))["toolkits"]
    assert toolkit["path"] == "/usr/local/cuda-13.0"
    assert (toolkit["owner"]["kind"], toolkit["owner"]["name"]) == ("package", "cuda-cudart-13-0")
    fakeroot.write(tmp_path, "/usr/local/cuda-12.9/targets/x86_64-linux/lib/libcudart.so.12", "\x7fELF")
    root = Root(str(tmp_path))
    other = [t for t in probe_cuda.probe(root, False, Packages(root))["toolkits"] if "12.9" in t["path"]]
    assert other[0]["owner"]["kind"] == "unknown"  # files no package lists: still nobody's
