"""probe_cudnn: every source type from synthetic roots, bad input, bounds, and a real library load."""

import os
import zipfile

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import common as probe_common
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import cudnn as probe_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import load_ld_cache
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages

from lab import mirror as lab_mirror
from tests.data.facts import fakeroot


def probe(tmp_path, live=False, **kwargs):
    root = Root(str(tmp_path))
    return probe_cudnn.probe(root, live, Packages(root), kwargs.pop("ld", []), **kwargs)


def by_source(copies):
    return {c["source"]: c for c in copies}


# ---------------------------------------------------------------- parsers
def test_parse_header_v9_and_v7():
    assert probe_cudnn.parse_header(fakeroot.cudnn_header(9, 14, 0)) == ("9.14.0", None)
    assert probe_cudnn.parse_header(fakeroot.cudnn_header(7, 6, 5, v7=True)) == ("7.6.5", None)
    assert probe_cudnn.parse_header("garbage\n#define CUDNN_MAJOR x\n") == (
        "unknown",
        "no CUDNN_MAJOR in the header",
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (91400, "9.14.0"),
        (91900, "9.19.0"),
        (90000, "9.0.0"),
        (8907, "8.9.7"),
        (7605, "7.6.5"),
        (0, "unknown"),
        (None, "unknown"),
    ],
)
def test_decode_cudnn_int(value, text):
    assert probe_cudnn.decode_cudnn_int(value) == text


@pytest.mark.parametrize(
    ("text", "major"),
    [
        ("libcudnn9-cuda-12", 12),
        ("8.9.7.29-1+cuda12.2", 12),
        ("8.9.7.29-1.cuda11.8", 11),
        ("/opt/cudnn-linux-x86_64-9.14.0.64_cuda13-archive", 13),
        ("nvidia-cudnn-cu12", 12),
        ("nvidia_cudnn_cu13", 13),
        ("/opt/cudnn", None),
    ],
)
def test_cuda_major_from_text(text, major):
    assert probe_cudnn.cuda_major_from_text(text) == major


# ---------------------------------------------------------------- sources
def test_deb_copy_from_the_h200(tmp_path):
    fakeroot.h200(tmp_path)
    root = Root(str(tmp_path))
    ld, reason = load_ld_cache(root)
    assert reason is None
    copies, resolved, warnings, truncated = probe_cudnn.probe(root, False, Packages(root), ld)
    deb = by_source(copies)["deb"]
    assert deb["version"] == "9.14.0"
    assert deb["header"] == "/usr/include/x86_64-linux-gnu/cudnn_version.h"
    assert deb["library"] == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"
    assert (deb["cuda_major"], deb["cuda_major_from"]) == (13, "package")
    assert deb["package"] == {
        "name": "libcudnn9-cuda-13",
        "version": "9.14.0.64-1",
        "held": True,
        "manager": "deb",
    }
    assert deb["held"] is True
    assert deb["mismatch"] is False
    assert deb["resolved"] is True
    pip = by_source(copies)["pip"]
    assert (pip["version"], pip["cuda_major"], pip["python_env"]) == ("9.19.0", 13, "/opt/torch/.venv")
    assert pip["resolved"] is False
    assert resolved == [
        {
            "soname": "libcudnn.so.9",
            "major": 9,
            "path": "/lib/x86_64-linux-gnu/libcudnn.so.9",
            "real_path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0",
            "copy_path": "/usr",
            "version": "9.14.0",
        }
    ]
    assert len(copies) == 2
    assert (warnings, truncated) == ([], False)


def test_rpm_copy_through_a_mocked_rpm_command(tmp_path, monkeypatch):
    (tmp_path / "var/lib/rpm").mkdir(parents=True)
    (tmp_path / "var/lib/rpm/rpmdb.sqlite").write_text("")
    fakeroot.write(tmp_path, "/usr/include/cudnn_version.h", fakeroot.cudnn_header(9, 1, 0))
    fakeroot.write(tmp_path, "/usr/lib64/libcudnn.so.9.1.0", "ELF")
    fakeroot.link(tmp_path, "/usr/lib64/libcudnn.so.9", "libcudnn.so.9.1.0")
    fakeroot.write(tmp_path, "/etc/dnf/plugins/versionlock.list", "libcudnn9-cuda-12-0:9.1.0.70-1.*\n")
    calls = []

    def fake_run(argv, timeout=10.0, env=None):
        calls.append(argv)
        if "-qa" in argv:
            return (
                0,
                (
                    "libcudnn9-cuda-12\t0:9.1.0.70-1\tx86_64\nlibcudnn9-devel-cuda-12\t0:9.1.0.70-1\tx86_64\n"
                    "bash\t0:5.1-1\tx86_64\n"
                ),
                "",
                None,
            )
        if "libcudnn9-cuda-12" in argv:
            return 0, "/usr/lib64/libcudnn.so.9\n/usr/lib64/libcudnn.so.9.1.0\n", "", None
        return 0, "/usr/include/cudnn_version.h\n", "", None

    monkeypatch.setattr(probe_packages, "run_command", fake_run)
    monkeypatch.setattr(probe_packages, "which", lambda name, root=None: "/usr/bin/rpm")
    copies = probe(tmp_path)[0]
    assert [c["source"] for c in copies] == ["rpm"]
    rpm = copies[0]
    assert (rpm["version"], rpm["cuda_major"], rpm["held"]) == ("9.1.0", 12, True)
    assert rpm["package"]["version"] == "9.1.0.70-1"
    assert rpm["library"] == "/usr/lib64/libcudnn.so.9.1.0"
    assert calls[0][:3] == ["/usr/bin/rpm", "--root", str(tmp_path)]


def test_tarball_copies_with_cuda_major_from_the_tree_name(tmp_path):
    fakeroot.tarball(tmp_path, "/opt/cudnn-linux-x86_64-9.14.0.64_cuda13-archive", "9.14.0")
    fakeroot.tarball(tmp_path, "/usr/local/cuda-12.8/targets/x86_64-linux", "9.8.0")
    copies = probe(tmp_path)[0]
    assert [(c["source"], c["path"], c["version"], c["cuda_major"]) for c in copies] == [
        ("tarball", "/opt/cudnn-linux-x86_64-9.14.0.64_cuda13-archive", "9.14.0", 13),
        ("tarball", "/usr/local/cuda-12.8/targets/x86_64-linux", "9.8.0", None),
    ]
    assert copies[1]["reasons"]["cuda_major"].startswith("no CUDA major")
    assert all(c["mismatch"] is False for c in copies)


def test_pip_copy_with_header_library_and_dist_disagreeing(tmp_path):
    fakeroot.pip_wheel(
        tmp_path,
        "/home/alice/.venv",
        "9.19.0.56",
        cuda_major=12,
        python="python3.11",
        header_version="9.14.0",
    )
    copy = probe(tmp_path)[0][0]
    assert copy["source"] == "pip"
    assert copy["package"] == {
        "name": "nvidia-cudnn-cu12",
        "version": "9.19.0.56",
        "held": False,
        "manager": "pip",
    }
    assert copy["python_env"] == "/home/alice/.venv"
    assert copy["version"] == "9.14.0"  # the header says what programs compile against
    assert copy["mismatch"] is True


def test_conda_env_copy(tmp_path):
    fakeroot.conda_env(tmp_path, "/opt/conda/envs/train", "9.3.0.75", cuda_major=12)
    copies = probe(tmp_path)[0]
    assert len(copies) == 1
    copy = copies[0]
    assert (copy["source"], copy["path"], copy["version"]) == ("conda", "/opt/conda/envs/train", "9.3.0")
    assert (copy["cuda_major"], copy["cuda_major_from"]) == (12, "conda")
    assert copy["package"]["manager"] == "conda"
    assert copy["library_version"] == "9.3.0"


def test_header_only_copy(tmp_path):
    fakeroot.write(tmp_path, "/srv/sdk/include/cudnn_version.h", fakeroot.cudnn_header(8, 9, 7))
    copy = probe(tmp_path)[0][0]
    assert (copy["source"], copy["path"], copy["version"], copy["library"]) == (
        "tarball",
        "/srv/sdk",
        "8.9.7",
        None,
    )
    assert copy["reasons"]["library"] == "no libcudnn.so* in this copy"
    assert copy["mismatch"] is None


def test_v7_cudnn_h_without_version_header(tmp_path):
    fakeroot.write(tmp_path, "/usr/local/cudnn7/include/cudnn.h", fakeroot.cudnn_header(7, 6, 5, v7=True))
    copy = probe(tmp_path)[0][0]
    assert copy["header_version"] == "7.6.5"


def test_broken_symlink_is_reported_not_fatal(tmp_path):
    fakeroot.write(tmp_path, "/opt/cudnn/include/cudnn_version.h", fakeroot.cudnn_header(9, 1, 0))
    fakeroot.link(tmp_path, "/opt/cudnn/lib/libcudnn.so.9", "libcudnn.so.9.1.0")  # target missing
    copy = probe(tmp_path)[0][0]
    assert copy["library"] is None
    assert "does not exist" in copy["reasons"]["library"]
    assert copy["version"] == "9.1.0"


def test_symlink_loops_are_never_followed(tmp_path):
    (tmp_path / "opt/a").mkdir(parents=True)
    os.symlink("/opt", tmp_path / "opt/a/loop")
    os.symlink("..", tmp_path / "opt/a/up")
    fakeroot.tarball(tmp_path, "/opt/a/cudnn", "9.2.1")
    copies, _, warnings, truncated = probe(tmp_path)
    assert [c["version"] for c in copies] == ["9.2.1"]
    assert not truncated


def test_unreadable_directory_is_a_warning(tmp_path, monkeypatch):
    fakeroot.tarball(tmp_path, "/opt/secret/cudnn", "9.2.1")
    fakeroot.tarball(tmp_path, "/srv/cudnn", "9.3.0")
    real_scandir = probe_common.scandir

    def scandir(path):
        if path.endswith("/opt/secret"):
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(probe_cudnn, "scandir", scandir)
    copies, _, warnings, _ = probe(tmp_path)
    assert [c["version"] for c in copies] == ["9.3.0"]
    assert warnings == ["cannot list /opt/secret: Permission denied"]


def test_unreadable_header_and_garbage_metadata(tmp_path, monkeypatch):
    sp = fakeroot.pip_wheel(tmp_path, "/opt/env", "9.19.0.56")
    fakeroot.write(tmp_path, sp + "/nvidia_cudnn_cu13-9.19.0.56.dist-info/METADATA", "\x00\x01garbage")
    real_open = probe_common.open_file

    def open_file(path, mode="rb"):
        if path.endswith("cudnn_version.h"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, mode)

    monkeypatch.setattr(probe_common, "open_file", open_file)
    copy = probe(tmp_path)[0][0]
    assert copy["version"] == "unknown"
    assert "Permission denied" in copy["reasons"]["header_version"]
    assert "METADATA has no usable Name/Version" in copy["reasons"]["package"]
    assert copy["cuda_major"] == 13  # still known from the dist name


def test_garbage_conda_meta(tmp_path):
    fakeroot.conda_env(tmp_path, "/opt/conda", "9.3.0.75")
    fakeroot.write(tmp_path, "/opt/conda/conda-meta/cudnn-9.3.0.75-h87a2b3d_0.json", "{not json")
    copy = probe(tmp_path)[0][0]
    assert copy["source"] == "conda"
    assert copy["version"] == "9.3.0"  # from the header
    assert "conda-meta" in copy["reasons"]["package"]


def test_depth_bound(tmp_path):
    fakeroot.tarball(tmp_path, "/opt/a/b/c/d/e/f/g/h/cudnn", "9.1.0")
    assert probe(tmp_path, max_depth=4)[0] == []
    assert len(probe(tmp_path, max_depth=12)[0]) == 1


def test_deadline_makes_results_partial(tmp_path):
    fakeroot.tarball(tmp_path, "/opt/cudnn", "9.1.0")
    copies, _, warnings, truncated = probe(tmp_path, deadline=0)
    assert truncated is True
    assert warnings == ["cudnn scan deadline reached: results are partial"]


def test_extra_search_path(tmp_path):
    fakeroot.tarball(tmp_path, "/workspace/cudnn", "9.5.1")
    assert probe(tmp_path)[0] == []
    assert [c["version"] for c in probe(tmp_path, search_paths=["/workspace"])[0]] == ["9.5.1"]


def test_library_that_fails_to_load(tmp_path):
    fakeroot.tarball(tmp_path, "/opt/cudnn", "9.1.0")  # "ELF" is not a shared object
    copy = probe(tmp_path, live=True)[0][0]
    assert copy["ctypes"]["state"] == "failed"
    assert copy["ctypes"]["reason"]
    assert copy["version"] == "9.1.0"


# ---------------------------------------------------------------- a real library (no GPU needed)
WHEEL_DIR = os.environ.get("GPUFLEET_WHEELS") or lab_mirror.cache_dir()


def cudnn_wheel():
    """This machine's cached nvidia-cudnn-cu13 9.14 wheel (the cache also holds the aarch64 ones of the lab's
    linux-sbsa archives); skips (with the reason) only when the wheel cache lacks it."""
    wheel = lab_mirror.find_wheel("nvidia-cudnn-cu13", "9.14.0.64", WHEEL_DIR, lab_mirror.this_platform())
    if wheel is None:
        pytest.skip(f"no nvidia_cudnn_cu13-9.14.0.64 wheel in {WHEEL_DIR} (filled by the lab set-up)")
    return wheel


def test_real_libcudnn_loads_in_a_child(tmp_path):
    wheel = cudnn_wheel()
    sp = fakeroot.pip_wheel(tmp_path, "/opt/env", "9.14.0.64", cuda_major=13)
    lib = tmp_path / sp.lstrip("/") / "nvidia/cudnn/lib"
    with zipfile.ZipFile(wheel) as archive:
        for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
            (lib / name).write_bytes(archive.read("nvidia/cudnn/lib/" + name))
    copy = probe(tmp_path, live=True)[0][0]
    assert copy["ctypes"] == {
        "state": "ok",
        "version": "9.14.0",
        "version_int": 91400,
        "cudart_version_int": 13000,
        "reason": None,
    }
    assert copy["library_version"] == "9.14.0"
    assert copy["mismatch"] is False
    # without libcudnn_graph the 9.x shim aborts: reported, not fatal
    (lib / "libcudnn_graph.so.9").unlink()
    copy = probe(tmp_path, live=True)[0][0]
    assert copy["ctypes"]["state"] == "failed"
    assert "SIGABRT" in copy["ctypes"]["reason"]


def test_python_stdlib_is_not_walked_but_its_site_packages_are(tmp_path, monkeypatch):
    fakeroot.pip_wheel(tmp_path, "/opt/py", "9.14.0.64", python="python3.12")
    for i in range(5):
        fakeroot.write(tmp_path, f"/opt/py/lib/python3.12/stdlibmod{i}/sub/x.py", "")
    listed = []
    real_scandir = probe_common.scandir

    def scandir(path):
        listed.append(path)
        return real_scandir(path)

    monkeypatch.setattr(probe_cudnn, "scandir", scandir)
    copies = probe(tmp_path)[0]
    assert [c["source"] for c in copies] == ["pip"]
    assert not [p for p in listed if "stdlibmod" in p]
