import hashlib
import json
import subprocess
import tarfile
import threading
import time
import types
import zipfile
from pathlib import Path

import pytest

from lab import LabError, mirror

LICENSE = b"NVIDIA license text\n"


def _wheel(path, files):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2025, 10, 8, 20, 11, 0))
            info.external_attr = (0o755 if "/bin/" in name else 0o644) << 16
            zf.writestr(info, data)
        zf.writestr("nvidia_x-1.dist-info/licenses/License.txt", LICENSE)
    return path


@pytest.fixture
def lab_state(tmp_path, monkeypatch):
    monkeypatch.setattr(mirror, "STATE", tmp_path / "state")
    monkeypatch.setenv("GPUFLEET_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def cudnn_wheel(lab_state):
    wheels = lab_state / "cache" / "wheels"
    wheels.mkdir(parents=True)
    return _wheel(
        wheels / "nvidia_cudnn_cu13-9.14.0.64-py3-none-manylinux_2_27_x86_64.whl",
        {
            "nvidia/cudnn/include/cudnn_version.h": b"#define CUDNN_MAJOR 9\n",
            "nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF shim",
            "nvidia/cudnn/lib/libcudnn_ops.so.9": b"\x7fELF ops",
            "nvidia/__init__.py": b"",
        },
    )


def test_short_version():
    assert mirror.short("9.14.0.64") == "9.14.0"


@pytest.mark.parametrize("bad", ["9.14.0", "9.14", "latest", "9.14.0.64.1", ""])
def test_cudnn_version_must_have_four_parts(bad):
    with pytest.raises(LabError) as err:
        mirror.validate_cudnn_version(bad)
    assert "4 parts" in str(err.value)


def test_unknown_cuda_release():
    with pytest.raises(LabError) as err:
        mirror.validate_cuda_release("12.9.1")
    assert "13.0.2" in str(err.value)


def test_cuda_release_table_matches_wheels():
    # 13.0.2: the full component set (tests/unit/lab/test_cuda13_components.py holds it to NVIDIA's manifest);
    # 13.1.0: the compiler subset
    comps = mirror.CUDA_RELEASES["13.0.2"]
    compiler = {"cuda_nvcc", "cuda_cudart", "cuda_nvrtc", "cuda_cccl", "cuda_crt", "libnvvm"}
    assert compiler | {"libcublas", "libcufft", "libcurand", "libcusolver", "libcusparse"} <= set(comps)
    assert set(mirror.CUDA_RELEASES["13.1.0"]) == compiler
    assert set(mirror.WHEEL_OF) == set(comps) == set(mirror.CUDA_MAPS)
    nvcc_sources = {src for src, _, _ in mirror.CUDA_MAPS["cuda_nvcc"]}
    assert {"cuda_nvcc", "cuda_crt", "libnvvm"} == nvcc_sources


def test_version_not_on_index_is_one_line(lab_state, monkeypatch):
    def fake_run(cmd, **kw):
        assert cmd[1:4] == ["-m", "pip", "download"]
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found for x==9.99\n")

    monkeypatch.setattr(mirror.subprocess, "run", fake_run)
    with pytest.raises(LabError) as err:
        mirror.fetch_wheel("nvidia-cudnn-cu13", "9.99.0.1", log=lambda m: None)
    msg = str(err.value)
    assert "\n" not in msg
    assert "nvidia-cudnn-cu13==9.99.0.1 is not on the package index" in msg
    assert "pip index versions nvidia-cudnn-cu13" in msg


def _fake_pip(monkeypatch, fail=(), delay=0.2):
    """pip download as a stub: sleeps, writes the wheel (or fails for a dist in ``fail``); records overlap."""
    seen = {"now": 0, "most": 0, "order": []}
    lock = threading.Lock()

    def fake_run(cmd, **kw):
        dist, version = cmd[-1].split("==")
        with lock:
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])
        time.sleep(delay)
        with lock:
            seen["now"] -= 1
            seen["order"].append(dist)
        if dist in fail:
            return subprocess.CompletedProcess(cmd, 1, "", f"ERROR: No matching distribution for {dist}")
        name = f"{mirror.wheel_file_name(dist)}-{version}-py3-none-x86_64.whl"
        wheel = Path(cmd[cmd.index("-d") + 1]) / name
        wheel.write_bytes(b"PK")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(mirror.subprocess, "run", fake_run)
    return seen


def test_missing_wheels_are_downloaded_several_at_a_time(lab_state, monkeypatch):
    """A fresh machine downloads the mirror's ~1.3 GB of wheels: not one pip after another."""
    seen = _fake_pip(monkeypatch)
    wanted = [(f"nvidia-lib{i}", "1.0") for i in range(8)]
    wanted.append(("nvidia-lib0", "1.0"))  # asked twice: fetched once
    paths = mirror.fetch_wheels(wanted, log=lambda m: None, workers=4)
    assert [p.name.split("-")[0] for p in paths] == [f"nvidia_lib{i}" for i in range(8)]
    assert seen["most"] == 4
    assert len(seen["order"]) == 8


def test_a_failed_download_is_raised_after_the_others_ended_in_the_asked_order(lab_state, monkeypatch):
    seen = _fake_pip(monkeypatch, fail={"nvidia-lib1", "nvidia-lib3"})
    with pytest.raises(LabError, match=r"^nvidia-lib1==1.0 is not on the package index"):
        mirror.fetch_wheels([(f"nvidia-lib{i}", "1.0") for i in range(5)], log=lambda m: None, workers=5)
    assert len(seen["order"]) == 5  # none left running behind the error
    assert mirror.find_wheel("nvidia-lib4", "1.0") is not None


def test_cached_wheel_is_not_downloaded(cudnn_wheel, monkeypatch):
    monkeypatch.setattr(mirror.subprocess, "run", pytest.fail)
    assert mirror.fetch_wheel("nvidia-cudnn-cu13", "9.14.0.64") == cudnn_wheel


def test_plan_gives_nvidia_names_and_links(cudnn_wheel):
    plan = dict(mirror.plan_members(mirror.cudnn_archive("9.14.0.64", "13", cudnn_wheel)))
    assert plan["lib/libcudnn.so.9.14.0"][0] == "file"
    assert plan["lib/libcudnn.so.9"][:2] == ("link", "libcudnn.so.9.14.0")
    assert plan["lib/libcudnn.so"][:2] == ("link", "libcudnn.so.9")
    assert plan["lib/libcudnn_ops.so"][:2] == ("link", "libcudnn_ops.so.9")
    assert "include/cudnn_version.h" in plan
    assert not any(k.startswith("nvidia") or "__init__" in k for k in plan)


def test_archive_roundtrip_and_rebuild_only_when_changed(cudnn_wheel, lab_state, tmp_path):
    redist = tmp_path / "mirror" / "cudnn" / "redist"
    archive = mirror.cudnn_archive("9.14.0.64", "13", cudnn_wheel)
    logs = []
    entry = mirror.build_archive(redist, archive, logs.append)
    path = redist / entry["relative_path"]
    assert entry["relative_path"] == "cudnn/linux-x86_64/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz"
    data = path.read_bytes()
    sums = (len(data), hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest())
    assert (int(entry["size"]), entry["sha256"], entry["md5"]) == sums
    with tarfile.open(path, "r:xz") as tar:
        names = tar.getnames()
        top = "cudnn-linux-x86_64-9.14.0.64_cuda13-archive"
        assert {n.split("/")[0] for n in names} == {top}
        assert tar.extractfile(f"{top}/LICENSE").read() == LICENSE
        assert tar.getmember(f"{top}/lib/libcudnn.so.9").linkname == "libcudnn.so.9.14.0"
        assert tar.extractfile(f"{top}/lib/libcudnn.so.9.14.0").read() == b"\x7fELF shim"
    again = mirror.build_archive(redist, archive, logs.append)
    assert again == entry
    assert logs[-1].endswith("up to date")
    path.unlink()
    assert mirror.build_archive(redist, archive, logs.append) == entry  # same bytes: reproducible


def test_cudnn_manifest_schema():
    entry = {"relative_path": "cudnn/linux-x86_64/x.tar.xz", "sha256": "a" * 64, "md5": "b" * 32, "size": "1"}
    doc = mirror.cudnn_manifest("9.14.0.64", {"12": entry, "13": entry}, "2025-10-08")
    assert doc["release_label"] == "9.14.0"
    assert doc["release_product"] == "cudnn"
    comp = doc["cudnn"]
    assert comp["version"] == "9.14.0.64"
    assert comp["cuda_variant"] == ["12", "13"]
    assert set(comp["linux-x86_64"]) == {"cuda12", "cuda13"}
    assert {"name", "license", "license_path"} <= set(comp)
    json.dumps(doc)


def test_sbsa_wheels_are_asked_for_aarch64_and_found_apart_from_x86_64(lab_state, monkeypatch):
    """NVIDIA's aarch64 wheels for the linux-sbsa archives: pip download --platform (CPython 3.11 tags); the
    cache holds both machines' wheels of one version side by side."""
    asked = []

    def fake_run(cmd, **kw):
        asked.append(cmd)
        dist, version = cmd[-1].split("==")
        machine = "aarch64" if "--platform" in cmd else "x86_64"
        name = f"{mirror.wheel_file_name(dist)}-{version}-py3-none-manylinux_2_27_{machine}.whl"
        (Path(cmd[cmd.index("-d") + 1]) / name).write_bytes(b"PK")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(mirror.subprocess, "run", fake_run)
    x86 = mirror.fetch_wheel("nvidia-cublas", "13.1.0.3", log=lambda m: None)
    arm = mirror.fetch_wheel("nvidia-cublas", "13.1.0.3", log=lambda m: None, platform=mirror.SBSA)
    assert x86.name.endswith("_x86_64.whl") and arm.name.endswith("_aarch64.whl")
    assert "--platform" not in asked[0]
    assert asked[1][asked[1].index("--platform") + 1] == "manylinux_2_28_aarch64"
    assert asked[1][asked[1].index("--python-version") + 1] == "3.11"
    assert mirror.find_wheel("nvidia-cublas", "13.1.0.3", platform=mirror.SBSA) == arm
    assert mirror.fetch_wheel("nvidia-cublas", "13.1.0.3", log=lambda m: None, platform=mirror.SBSA) == arm
    assert len(asked) == 2  # cached


def test_a_manifest_keeps_the_other_platforms_builds(tmp_path):
    """Building linux-sbsa into redistrib_9.14.0.json keeps linux-x86_64's entries whose archives are there
    (and drops one whose archive is gone); cuda_variant is the union."""
    redist = tmp_path / "redist"
    x86 = {"relative_path": "cudnn/linux-x86_64/a_cuda12.tar.xz", "sha256": "1", "md5": "2", "size": "3"}
    (redist / "cudnn/linux-x86_64").mkdir(parents=True)
    (redist / x86["relative_path"]).write_bytes(b"x")
    path = redist / "redistrib_9.14.0.json"
    mirror.write_json(path, mirror.cudnn_manifest("9.14.0.64", {"12": x86}, "2025-10-08"))
    kept = mirror.kept_platforms(path, redist, "cudnn", mirror.SBSA)
    assert kept == {"linux-x86_64": {"cuda12": x86}}
    arm = dict(x86, relative_path="cudnn/linux-sbsa/a_cuda13.tar.xz")
    doc = mirror.cudnn_manifest("9.14.0.64", {"13": arm}, "2025-10-08", mirror.SBSA, kept)
    assert doc["cudnn"]["cuda_variant"] == ["12", "13"]
    assert doc["cudnn"]["linux-sbsa"] == {"cuda13": arm} and doc["cudnn"]["linux-x86_64"] == {"cuda12": x86}
    (redist / x86["relative_path"]).unlink()
    assert mirror.kept_platforms(path, redist, "cudnn", mirror.SBSA) == {}
    assert mirror.kept_platforms(redist / "missing.json", redist, "cudnn", mirror.SBSA) == {}


@pytest.mark.parametrize(("machine", "wanted"), [("x86_64", "linux-x86_64"), ("aarch64", "linux-sbsa")])
def test_this_platform_is_the_redist_platform_of_this_machine(monkeypatch, machine, wanted):
    """The real-libcudnn unit test and bench_facts take this machine's cached wheel by it (the cache also
    holds the aarch64 wheels of the linux-sbsa archives)."""
    monkeypatch.setattr(mirror.os, "uname", lambda: types.SimpleNamespace(machine=machine))
    assert mirror.this_platform() == wanted
