"""The lab's CUDA 13.0 component set against NVIDIA's own data: the redist table against NVIDIA's
redistrib_13.0.2.json (tests/data/nvidia-redist), the apt packages' names, versions, control fields,
dependency graph and file lists against NVIDIA's packages installed on a lent H100
(tests/data/h100-ubuntu2404-cuda13)."""

import io
import json
import lzma
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from lab import debs, repo
from lab import mirror as lab_mirror
from lab.gpuhost import mirror_from_host

DATA = Path(__file__).resolve().parents[2] / "data"
NVIDIA_REDIST = DATA / "nvidia-redist" / "redistrib_13.0.2-linux-x86_64.json"
H100 = DATA / "h100-ubuntu2404-cuda13"
RELEASE, XY, D = "13.0.2", "13.0", "13-0"
TOP = "/usr/local/cuda-13.0"
# What NVIDIA's packages hold that no wheel carries, so the lab's packages never do (lab/README.md)
NOT_FROM_WHEELS = (
    "/usr/lib/pkgconfig",  # pkg-config files
    f"{TOP}/src/",  # cuBLAS/cuSPARSE Fortran bindings
    f"{TOP}/extras/",  # CUPTI samples and docs
    f"{TOP}/gds/",  # cuFile's README and cufile.json
    f"{TOP}/doc/",  # cuFile's man pages
    f"{TOP}/nvml/",  # NVML's example and docs
)
needs_dpkg = pytest.mark.skipif(
    not (shutil.which("dpkg-deb") and shutil.which("gpg")),
    reason="needs dpkg-deb and gpg (apt-get install dpkg gnupg)",
)


def _status():
    """{package: control fields} of NVIDIA's CUDA 13.0 packages on the H100."""
    out = {}
    for block in (H100 / "dpkg-status.txt").read_text().split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", block, re.M))
        if fields:
            out[fields["Package"]] = fields
    return out


def _nvidia_list(package):
    return {line for line in (H100 / "dpkg-L" / f"{package}.list").read_text().splitlines() if line}


def _depends(text):
    return [group.strip() for group in text.split(",") if group.strip()] if text else []


def _names(groups):
    return [re.sub(r"\s*\(.*\)", "", alt).strip() for group in groups for alt in group.split("|")]


def _versions():
    return {comp: version for comp, (_title, version) in lab_mirror.CUDA_RELEASES[RELEASE].items()}


def _specs():
    return {spec["name"]: spec for spec in repo.cuda_components(XY, _versions())}


# ---------------------------------------------------------------- the redist table


def test_every_component_of_nvidias_manifest_is_built_or_left_out_with_a_reason():
    nvidia = json.loads(NVIDIA_REDIST.read_text())
    comps = {k: v for k, v in nvidia.items() if isinstance(v, dict)}
    built = lab_mirror.CUDA_RELEASES[RELEASE]
    assert not set(built) & set(lab_mirror.LEFT_OUT)
    assert set(built) | set(lab_mirror.LEFT_OUT) == set(comps)
    for comp, (title, version) in built.items():
        assert (title, version) == (comps[comp]["name"], comps[comp]["version"]), comp
    assert all(reason for reason in lab_mirror.LEFT_OUT.values())
    # the libraries issue 36 names are all built
    assert {"libcublas", "libcufft", "libcurand", "libcusolver", "libcusparse", "libnpp", "libnvjpeg",
            "cuda_cupti", "libnvjitlink", "cuda_nvtx"} <= set(built)  # fmt: skip


def test_every_component_has_a_wheel_and_a_layout():
    for comps in lab_mirror.CUDA_RELEASES.values():
        assert set(comps) <= set(lab_mirror.WHEEL_OF)
        assert set(comps) <= set(lab_mirror.CUDA_MAPS)
    for comp, mapping in lab_mirror.CUDA_MAPS.items():
        for source, prefix, dest in mapping:
            assert source in lab_mirror.WHEEL_OF and prefix.startswith(lab_mirror.CU13)
            assert dest.startswith(("bin/", "include/", "lib/", "nvvm/")), (comp, dest)


def test_renamed_shared_objects_carry_nvidias_file_names():
    # the real file names NVIDIA's packages install (libcupti.so.2025.3.1, not libcupti.so.13.0.85)
    files = set().union(*(_nvidia_list(p.name.removesuffix(".list")) for p in (H100 / "dpkg-L").iterdir()))
    lib = f"{TOP}/targets/x86_64-linux/lib/"
    for comp, renames in lab_mirror.SO_RENAMES.items():
        where = f"{TOP}/nvvm/lib64/" if "libnvvm.so.4" in renames else lib
        for wheel_name, real in renames.items():
            assert where + real in files and where + wheel_name in files, comp
    for comp, links in lab_mirror.SO_LINKS.items():
        for rel, _target in links:
            assert lib + rel.removeprefix("lib/") in files, comp


def _wheel(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name in members:
            zf.writestr(zipfile.ZipInfo(name, date_time=(2025, 10, 8, 0, 0, 0)), b"elf " + name.encode())
        zf.writestr("x.dist-info/licenses/License.txt", b"license\n")
    return path


@pytest.mark.parametrize(
    ("comp", "wheel_files", "expected"),
    [
        ("libcublas", ["lib/libcublas.so.13", "include/cublas_v2.h"],
         {"lib/libcublas.so.13.1.0.3": "file", "lib/libcublas.so.13": "libcublas.so.13.1.0.3",
          "lib/libcublas.so": "libcublas.so.13", "include/cublas_v2.h": "file"}),
        ("cuda_cupti", ["lib/libcupti.so.13", "lib/libcheckpoint.so"],
         {"lib/libcupti.so.2025.3.1": "file", "lib/libcupti.so.13": "libcupti.so.2025.3.1",
          "lib/libcupti.so": "libcupti.so.13", "lib/libcheckpoint.so": "file"}),
        ("cuda_opencl", ["lib/libOpenCL.so.1"],
         {"lib/libOpenCL.so.1.0.0": "file", "lib/libOpenCL.so.1.0": "libOpenCL.so.1.0.0",
          "lib/libOpenCL.so.1": "libOpenCL.so.1.0", "lib/libOpenCL.so": "libOpenCL.so.1"}),
        ("libcufile", ["lib/libcufile.so.0"],
         {"lib/libcufile.so.1.15.1": "file", "lib/libcufile.so.0": "libcufile.so.1.15.1",
          "lib/libcufile.so": "libcufile.so.0"}),
    ],
)  # fmt: skip
def test_archives_get_nvidias_library_names_and_links(tmp_path, comp, wheel_files, expected):
    wheel = _wheel(tmp_path / "w.whl", [lab_mirror.CU13 + f for f in wheel_files])
    version = _versions()[comp]
    plan = dict(lab_mirror.plan_members(lab_mirror.cuda_archive(comp, version, {comp: wheel})))
    got = {rel: ("file" if kind == "file" else target) for rel, (kind, target, _i, _c) in plan.items()}
    assert got == expected


def test_new_archive_inputs_leave_older_stamps_valid(tmp_path):
    # an archive without renames/links stamps the same inputs as before they existed: nothing is rebuilt
    wheel = _wheel(tmp_path / "w.whl", [lab_mirror.CU13 + "lib/libcudart.so.13"])
    inputs = lab_mirror.cuda_archive("cuda_cudart", "13.0.96", {"cuda_cudart": wheel}).stamp_inputs()
    assert set(inputs) == {"format", "xz", "top", "so_version", "mapping", "wheels"}
    cupti = lab_mirror.cuda_archive("cuda_cupti", "13.0.85", {"cuda_cupti": wheel}).stamp_inputs()
    assert cupti["renames"] == {"libcupti.so.13": "libcupti.so.2025.3.1"}


def test_redistrib_json_entry_has_nvidias_keys():
    entry = {
        "relative_path": "libcublas/linux-x86_64/x.tar.xz",
        "sha256": "a" * 64,
        "md5": "b" * 32,
        "size": "1",
    }
    doc = lab_mirror.cuda_component("libcublas", "CUDA cuBLAS", "13.1.0.3", entry)
    nvidia = json.loads(NVIDIA_REDIST.read_text())["libcublas"]
    assert set(doc) == set(nvidia) | {"linux-x86_64"}
    assert {k: doc[k] for k in nvidia} == nvidia
    assert set(doc["linux-x86_64"]) == {"relative_path", "sha256", "md5", "size"}


def test_the_gpu_hosts_mirror_knows_every_component():
    # lab/gpuhost/mirror_from_host.py repackages the host's NVIDIA packages per component: all of them
    for comps in lab_mirror.CUDA_RELEASES.values():
        assert set(comps) <= set(mirror_from_host.CUDA_COMPONENTS)
    status = _status()
    for comp, packages in mirror_from_host.CUDA_COMPONENTS.items():
        assert packages[0].format(v=D) in status, comp


# ---------------------------------------------------------------- the apt packages


def test_component_packages_have_nvidias_names_versions_and_fields():
    status = _status()
    for name, spec in _specs().items():
        nvidia = status[name]
        assert f"{_versions()[spec['comp']]}-1" == nvidia["Version"], name
        assert spec["summary"] == nvidia["Description"], name
        for field in ("Source", "Provides", "Replaces", "Breaks"):
            assert spec.get(field) == nvidia.get(field), (name, field)


def test_component_dependencies_are_nvidias_less_what_the_lab_leaves_out():
    status = _status()
    left = {f"{stem}-{D}" for stem in repo.LEFT_OUT_PACKAGES} | set(repo.LEFT_OUT_DEPENDS)
    for name, spec in _specs().items():
        wanted = [g for g in _depends(status[name].get("Depends", "")) if not set(_names([g])) <= left]
        assert _depends(spec.get("depends", "")) == wanted, name


def test_every_package_nvidia_installed_is_built_or_left_out():
    lab = set(_specs()) | {f"cuda-toolkit{s}-config-common" for s in ("", "-13", "-13-0")}
    lab |= {f"{stem}-{D}" for stem, _summary, _deps in repo.META_PACKAGES}
    left = {f"{stem}-{D}" for stem in repo.LEFT_OUT_PACKAGES}
    assert set(_status()) - lab <= left
    assert not lab & left


@pytest.fixture(scope="module")
def cuda13_debs(tmp_path_factory):
    """The lab's CUDA 13.0.2 packages over a synthetic mirror whose archives hold exactly what NVIDIA's
    packages installed on the H100 (as lab/gpuhost/mirror_from_host.py would pack them)."""
    state = tmp_path_factory.mktemp("lab")
    redist = state / "mirror" / "cuda" / "redist"
    doc = {"release_date": "2025-10-09", "release_label": RELEASE, "release_product": "cuda"}
    for comp, version in _versions().items():
        packages = [p.format(v=D) for p in mirror_from_host.CUDA_COMPONENTS[comp] if "driver-dev" not in p]
        # cuda_nvcc's archive also carries crt and nvvm (lab/README.md)
        paths = set().union(*(_nvidia_list(p) for p in packages if (H100 / "dpkg-L" / f"{p}.list").exists()))
        rels = {
            p.removeprefix(TOP + "/").removeprefix("targets/x86_64-linux/")
            for p in paths
            if p.startswith(TOP + "/")
        }
        files = {
            r for r in rels if not any(o.startswith(r + "/") for o in rels) and r not in ("include", "lib64")
        }
        top = f"{comp}-linux-x86_64-{version}-archive"
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for rel in sorted(files) + ["LICENSE"]:
                info = tarfile.TarInfo(f"{top}/{rel}")
                info.size = 1
                tar.addfile(info, io.BytesIO(b"x"))
        path = redist / comp / "linux-x86_64" / f"{top}.tar.xz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(lzma.compress(buf.getvalue()))
        doc[comp] = {"version": version, "linux-x86_64": {"relative_path": str(path.relative_to(redist)),
                                                          "sha256": "0" * 64}}  # fmt: skip
    (redist / f"redistrib_{RELEASE}.json").write_text(json.dumps(doc))
    with pytest.MonkeyPatch.context() as mp:
        for module in (repo, lab_mirror):
            mp.setattr(module, "STATE", state)
        return repo.cuda_debs(RELEASE), state


def _listing(deb, work):
    debs.build_deb(deb, work, work)
    out = subprocess.run(
        ["dpkg-deb", "-c", str(work / deb.filename)], capture_output=True, text=True, check=True
    ).stdout
    return {
        line.split(None, 5)[5].split(" -> ")[0].lstrip(".").rstrip("/") or "/." for line in out.splitlines()
    }


@needs_dpkg
def test_packages_hold_nvidias_file_lists(cuda13_debs, tmp_path):
    built, _state = cuda13_debs
    status = _status()
    checked = 0
    for deb in built:
        if deb.name not in status or deb.name.endswith("config-common"):
            continue
        got, nvidia = _listing(deb, tmp_path), _nvidia_list(deb.name)
        assert got <= nvidia, (deb.name, sorted(got - nvidia))
        missing = {p for p in nvidia - got if not p.startswith(NOT_FROM_WHEELS)}
        # only the parent directories of what no wheel carries
        assert all(any(o.startswith(p + "/") for o in nvidia - got) for p in missing), (
            deb.name,
            sorted(missing),
        )
        checked += 1
    assert checked == len(_specs()) + 5  # the component packages and five meta packages


@needs_dpkg
def test_cufile_ships_nvidias_linker_file_as_a_conffile(cuda13_debs, tmp_path):
    built, _state = cuda13_debs
    (cufile,) = [deb for deb in built if deb.name == f"libcufile-{D}"]
    debs.build_deb(cufile, tmp_path, tmp_path)
    deb = tmp_path / cufile.filename
    conffiles = subprocess.run(
        ["dpkg-deb", "-I", str(deb), "conffiles"], capture_output=True, text=True, check=True
    )
    assert conffiles.stdout == f"/etc/ld.so.conf.d/gds-{D}.conf\n"
    text = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(text)) as tar:
        conf = tar.extractfile(f"./etc/ld.so.conf.d/gds-{D}.conf").read().decode()
    assert conf == f"{TOP}/targets/x86_64-linux/lib\n"  # as on the H100


# ---------------------------------------------------------------- the meta packages


def test_meta_packages_depend_on_nvidias_list_less_what_the_lab_leaves_out(cuda13_debs):
    built, _state = cuda13_debs
    status = _status()
    by_name = {deb.name: deb for deb in built}
    for stem, _summary, wanted in repo.META_PACKAGES:
        deb = by_name[f"{stem}-{D}"]
        assert deb.version == f"{RELEASE}-1"
        got = _names(_depends(deb.fields.get("Depends", "")))
        absent = [f"{w}-{D}" for w in wanted if w in repo.LEFT_OUT_PACKAGES]
        if deb.name in status:  # NVIDIA's own list, as installed on the H100
            nvidia = _names(_depends(status[deb.name]["Depends"]))
            assert nvidia == [f"{w}-{D}" for w in wanted]
            assert _depends(deb.fields["Depends"]) == [
                g for g in _depends(status[deb.name]["Depends"]) if _names([g])[0] not in absent
            ]
        assert [n for n in got if not n.endswith("config-common")] == [
            f"{w}-{D}" for w in wanted if f"{w}-{D}" not in absent
        ]
        description = deb.fields["Description"]
        for name in absent:
            assert name in description, (deb.name, name)  # honest: says what NVIDIA's pulls and the lab's not
        assert "static libraries" in description


def test_cuda_toolkit_resolves_within_the_lab_repository(cuda13_debs):
    """apt-get install cuda-toolkit-13-0 (what the roles install) finds every dependency in the lab's
    repository; the closure holds cuBLAS and the other libraries issue 36 names."""
    built, _state = cuda13_debs
    by_name = {deb.name: deb for deb in built}
    seen, todo = set(), [f"cuda-toolkit-{D}"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for group in _depends(by_name[name].fields.get("Depends", "")):
            alternatives = [a for a in _names([group]) if a in by_name]
            assert alternatives, (name, group)
            todo.append(alternatives[0])
    assert seen == set(by_name) - {f"cuda-minimal-build-{D}"}  # the one meta package nothing depends on
    assert {f"libcublas-dev-{D}", f"libcufft-dev-{D}", f"libcurand-dev-{D}", f"libcusolver-dev-{D}",
            f"libcusparse-dev-{D}", f"libnpp-dev-{D}", f"libnvjpeg-dev-{D}", f"cuda-cupti-dev-{D}",
            f"libnvjitlink-dev-{D}", f"cuda-nvtx-{D}", f"cuda-nvcc-{D}"} <= seen  # fmt: skip


def test_a_mirror_without_the_new_components_is_one_line(tmp_path, monkeypatch):
    for module in (repo, lab_mirror):
        monkeypatch.setattr(module, "STATE", tmp_path)
    redist = tmp_path / "mirror" / "cuda" / "redist"
    redist.mkdir(parents=True)
    doc = {"release_date": "2025-10-09", "cuda_nvcc": {"version": "13.0.88"}}
    (redist / f"redistrib_{RELEASE}.json").write_text(json.dumps(doc))
    with pytest.raises(
        Exception, match=r"has no linux-x86_64 cuda_cccl, .*libcublas.*: run `python -m lab mirror build`"
    ):
        repo.cuda_debs(RELEASE)
