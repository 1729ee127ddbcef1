"""probe_consumers: what each consumer environment loads, from fixture roots (tests/data/consumers)."""

import io

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import common as probe_common
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import consumers as probe_consumers
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import elf
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather

from tests.data.builders import build_elf
from tests.data.consumers import roots
from tests.data.consumers.roots import SP, VENV, WHEEL_LIB, h200_torch
from tests.data.facts import fakeroot


def consumers(tmp_path):
    return gather(str(tmp_path), live=False)["consumers"]


def env(facts, kind, path=None):
    found = [e for e in facts["environments"] if e["kind"] == kind and (path is None or e["path"] == path)]
    assert len(found) == 1, [(e["kind"], e["path"]) for e in facts["environments"]]
    return found[0]


def torch_of(facts, path=VENV):
    (torch,) = [f for f in env(facts, "venv", path)["frameworks"] if f["name"] == "torch"]
    return torch


def lib_dir(facts, directory):
    (found,) = [d for d in facts["library_dirs"] if d["dir"] == directory]
    return found


# ---------------------------------------------------------------- the H200 as it is
def test_torch_loads_its_wheel_through_runpath_and_the_pin_holds(tmp_path):
    facts = consumers(h200_torch(tmp_path))
    torch = torch_of(facts)
    assert torch["version"] == "2.11.0+cu130"
    assert torch["cuda_version"] == "13.0"
    assert torch["requires_cudnn"] == {"package": "nvidia-cudnn-cu13", "spec": "==9.19.0.56"}
    assert torch["installed_cudnn"] == {"package": "nvidia-cudnn-cu13", "version": "9.19.0.56"}
    assert torch["pin_satisfied"] is True
    assert torch["cudnn_soname"] == "libcudnn.so.9"
    loads = torch["loads"]
    assert loads["via"] == "runpath"
    assert loads["real_path"] == WHEEL_LIB + "/libcudnn.so.9"
    assert loads["version"] == "9.19.0"
    assert loads["copy_path"] == SP + "/nvidia/cudnn"
    assert loads["why"] == f"DT_RUNPATH of {SP}/torch/lib/libtorch_cuda.so: {WHEEL_LIB}"
    assert loads["mixed"] is False
    assert loads["missing_sub_libraries"] == []
    python = env(facts, "venv", VENV)["python"]
    assert python == {"executable": VENV + "/bin/python", "exists": True, "real_path": "/usr/bin/python3.12",
                      "version": "3.12"}  # fmt: skip


def test_the_system_answer_is_the_loader_cache(tmp_path):
    facts = consumers(h200_torch(tmp_path))
    (system,) = env(facts, "system")["cudnn"]
    assert (system["soname"], system["via"], system["version"]) == ("libcudnn.so.9", "ld_cache", "9.14.0")
    assert system["path"] == "/lib/x86_64-linux-gnu/libcudnn.so.9"
    assert system["real_path"] == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"
    assert [e["kind"] for e in facts["environments"]] == ["system", "venv", "cuda_toolkit"]
    system_dir = lib_dir(facts, "/usr/lib/x86_64-linux-gnu")
    assert system_dir["versions"] == ["9.14.0"]
    assert system_dir["mixed"] is False


def test_a_cudnn_the_loader_cache_does_not_list_is_found_in_glibcs_trusted_directories(tmp_path):
    """An ldconfig never run after the copy: glibc still finds /usr/lib/x86_64-linux-gnu/libcudnn.so.9 in its
    trusted directories, and the audit says so (issue 39)."""
    root = h200_torch(tmp_path)
    fakeroot.ld_cache(root, [])
    (system,) = env(consumers(root), "system")["cudnn"]
    assert (system["soname"], system["via"], system["version"]) == ("libcudnn.so.9", "default_dirs", "9.14.0")
    assert system["path"] == "/lib/x86_64-linux-gnu/libcudnn.so.9"
    assert system["why"].startswith("glibc's trusted directories")


# ---------------------------------------------------------------- the cases of issue 13
def test_a_pin_the_installed_wheel_does_not_satisfy(tmp_path):
    facts = consumers(h200_torch(tmp_path, wheel="9.14.0.64"))
    torch = torch_of(facts)
    assert torch["pin_satisfied"] is False
    assert torch["installed_cudnn"]["version"] == "9.14.0.64"
    assert torch["loads"]["version"] == "9.14.0"


def test_mixed_sub_libraries_are_told_by_the_record_and_by_size(tmp_path):
    h200_torch(tmp_path)
    roots.mixed_copy(tmp_path, SP)
    facts = consumers(tmp_path)
    verdict = lib_dir(facts, WHEEL_LIB)
    assert verdict["mixed"] is True
    assert verdict["differs_from_record"] == ["libcudnn_ops.so.9"]
    assert verdict["versions"] == ["9.14.0", "9.19.0"]
    ops = next(f for f in verdict["files"] if f["soname"] == "libcudnn_ops.so.9")
    assert (ops["version"], ops["from"]) == ("9.14.0", "size_of_a_known_file")
    assert torch_of(facts)["loads"]["mixed"] is True


def test_mixed_tarball_over_tarball_by_file_names(tmp_path):
    roots.system_sub_libraries(tmp_path, "9.14.0", directory="/opt/cudnn/lib")
    roots.system_sub_libraries(tmp_path, "9.19.0", directory="/opt/cudnn/lib")
    fakeroot.link(tmp_path, "/opt/cudnn/lib/libcudnn_cnn.so.9", "libcudnn_cnn.so.9.14.0")
    fakeroot.write(tmp_path, "/opt/cudnn/include/cudnn_version.h", fakeroot.cudnn_header(9, 19, 0))
    verdict = lib_dir(consumers(tmp_path), "/opt/cudnn/lib")
    assert verdict["mixed"] is True
    assert verdict["versions"] == ["9.14.0", "9.19.0"]
    assert verdict["differs_from_record"] == []


def test_ld_library_path_in_etc_environment_wins_over_runpath(tmp_path):
    h200_torch(tmp_path)
    roots.ld_library_path_tarball(tmp_path)
    facts = consumers(tmp_path)
    assert facts["ld_library_path"] == {
        "dirs": ["/usr/local/cuda-12.8/lib64"],
        "sources": ["/etc/environment"],
    }
    loads = torch_of(facts)["loads"]
    assert (loads["via"], loads["version"]) == ("ld_library_path", "9.1.0")
    assert loads["why"] == "LD_LIBRARY_PATH (/etc/environment): /usr/local/cuda-12.8/lib64"
    (login,) = env(facts, "login")["cudnn"]
    assert (login["via"], login["version"]) == ("ld_library_path", "9.1.0")
    (system,) = env(facts, "system")["cudnn"]
    assert system["version"] == "9.14.0"


def test_conda_env_gets_its_own_lib_through_rpath(tmp_path):
    fakeroot.h200(tmp_path)
    roots.conda_env_with_python(tmp_path, "/opt/conda/envs/train")
    facts = consumers(tmp_path)
    (conda,) = env(facts, "conda", "/opt/conda/envs/train")["cudnn"]
    assert (conda["via"], conda["version"], conda["dir"]) == (
        "conda_lib",
        "9.1.0",
        "/opt/conda/envs/train/lib",
    )


def test_missing_soname_torch_built_for_cudnn_8(tmp_path):
    h200_torch(tmp_path, pin="8.9.2.26", wheel=None, cuda="12.1", cudnn_major=8)
    torch = torch_of(consumers(tmp_path))
    assert torch["cudnn_soname"] == "libcudnn.so.8"
    assert torch["pin_satisfied"] is False
    assert torch["reasons"]["installed_cudnn"] == "nvidia-cudnn-cu12 is not installed in this environment"
    assert torch["loads"]["via"] == "none"
    assert torch["loads"]["real_path"] is None


def test_missing_sub_library_in_the_resolved_dir(tmp_path):
    h200_torch(tmp_path)
    (tmp_path / WHEEL_LIB.lstrip("/") / "libcudnn_cnn.so.9").unlink()
    loads = torch_of(consumers(tmp_path))["loads"]
    assert loads["missing_sub_libraries"] == ["libcudnn_cnn.so.9"]


def test_tensorflow_build_info(tmp_path):
    fakeroot.h200(tmp_path)
    sp = "/srv/tf/lib/python3.11/site-packages"
    fakeroot.write(tmp_path, "/srv/tf/pyvenv.cfg", "version = 3.11.2\n")
    fakeroot.write(
        tmp_path, sp + "/tensorflow-2.18.0.dist-info/METADATA", "Name: tensorflow\nVersion: 2.18.0\n\n"
    )
    fakeroot.write(
        tmp_path,
        sp + "/tensorflow/python/platform/build_info.py",
        "import collections\nbuild_info = collections.OrderedDict([('cuda_compute_capabilities', ['sm_60', "
        "'sm_70', 'sm_80', 'sm_89', 'compute_90']), ('cuda_version', '12.5.1'), ('cudnn_version', '9')])\n",
    )
    (tf,) = env(consumers(tmp_path), "venv", "/srv/tf")["frameworks"]
    assert tf["compute_capabilities"] == ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]
    assert (tf["cuda_version"], tf["cudnn_version_built"], tf["cudnn_soname"]) == (
        "12.5.1",
        "9",
        "libcudnn.so.9",
    )
    assert tf["loads"]["via"] == "ld_cache"
    assert tf["reasons"]["anchor"].startswith("none of tensorflow/libtensorflow_cc.so.2")


# ---------------------------------------------------------------- bad input
def test_python_gone_truncated_metadata_and_not_elf(tmp_path):
    h200_torch(tmp_path)
    (tmp_path / "usr/bin/python3.12").unlink()
    fakeroot.write(tmp_path, SP + "/torch-2.11.0.dist-info/METADATA", "Metadata-Ver")
    fakeroot.write(tmp_path, SP + "/torch/lib/libtorch_cuda.so", "not an ELF file at all")
    fakeroot.link(tmp_path, WHEEL_LIB + "/libcudnn_heuristic.so.9", "gone.so")
    facts = consumers(tmp_path)
    venv = env(facts, "venv", VENV)
    assert venv["python"]["exists"] is False
    assert "the environment's python is gone" in venv["reasons"]["python"]
    torch = venv["frameworks"][0]
    assert "has no usable Name/Version" in torch["reasons"]["requires_cudnn"]
    assert torch["reasons"]["anchor"] == f"{SP}/torch/lib/libtorch_cuda.so: not an ELF file"
    assert torch["cudnn_soname"] is None  # no DT_NEEDED, no pin: nothing says which major
    assert "does not exist" in lib_dir(facts, WHEEL_LIB)["reason"]


def test_a_huge_site_packages_is_read_only_up_to_the_bound(tmp_path, monkeypatch):
    h200_torch(tmp_path)
    for i in range(30):
        fakeroot.write(tmp_path, f"{SP}/pkg{i:03d}/__init__.py")
    monkeypatch.setattr(probe_consumers, "MAX_ENTRIES", 20)
    facts = consumers(tmp_path)
    assert "has more than 20 entries" in env(facts, "venv", VENV)["reasons"]["site_packages"]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not an ELF file"),
        (b"\x7fELF\x01" + bytes(60), "not a 64-bit ELF file"),
        (b"\x7fELF\x02\x01", "truncated ELF header"),
        (build_elf(["libcudnn.so.9"])[:150], "truncated ELF file"),
    ],
)
def test_elf_bad_input(tmp_path, data, reason):
    fakeroot.write(tmp_path, "/x.so", data)
    result, why = elf.read_dynamic(Root(str(tmp_path)), "/x.so")
    assert result is None
    assert reason in why


def test_elf_roundtrip_and_origin():
    data = build_elf(["libcudnn.so.9"], "libx.so", rpath="$ORIGIN/../lib", runpath=None)
    assert elf.parse_dynamic(io.BytesIO(data)) == {
        "needed": ["libcudnn.so.9"], "soname": "libx.so", "rpath": "$ORIGIN/../lib", "runpath": None,
    }  # fmt: skip
    assert elf.search_dirs("$ORIGIN/../../nvidia/cudnn/lib:${ORIGIN}:$LIB/x", "/a/b/torch/lib") == [
        "/a/b/nvidia/cudnn/lib",
        "/a/b/torch/lib",
    ]


# ---------------------------------------------------------------- parsers
@pytest.mark.parametrize(
    ("text", "before", "after"),
    [
        ('LD_LIBRARY_PATH="/a:/b"\n', [], ["/a", "/b"]),
        ("export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}\n", ["/x"],
         ["/usr/local/cuda/lib64", "/x"]),
        ("export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/lib\n", ["/x"], ["/x", "/opt/lib"]),
        ("# LD_LIBRARY_PATH=/commented\nPATH=/bin\n", ["/x"], ["/x"]),
        ("LD_LIBRARY_PATH=$HOME/lib:/ok/../lib\n", [], ["/lib"]),
    ],
)  # fmt: skip
def test_parse_ld_library_path(text, before, after):
    assert probe_consumers.parse_ld_library_path(text, before) == after


@pytest.mark.parametrize(
    ("version", "spec", "ok"),
    [
        ("9.19.0.56", "==9.19.0.56", True),
        ("9.14.0.64", "==9.19.0.56", False),
        ("9.10.2.21", ">=9.8,<10.0", True),
        ("10.0.0", ">=9.8,<10.0", False),
        ("9.19.1", "==9.19.*", True),
        ("9.19.1", "~=9.19.0", True),
        ("9.20.0", "~=9.19.0", False),
        ("9.1.0", "", True),
        ("unknown", "==9.1", None),
        ("9.1.0", "=9.1", None),
    ],
)
def test_spec_ok(version, spec, ok):
    assert probe_consumers.spec_ok(version, spec) is ok


def test_parse_requires_keeps_only_cudnn_and_reads_markers_away():
    text = (
        "Name: jax-cuda12-plugin\nVersion: 0.7.1\nRequires-Dist: jax-cuda12-pjrt==0.7.1\n"
        'Requires-Dist: nvidia-cudnn-cu12 (<10.0,>=9.8) ; extra == "with-cuda"\n\nRequires-Dist: ignored\n'
    )
    assert probe_consumers.parse_requires(text) == ("jax-cuda12-plugin", "0.7.1", [(12, "<10.0,>=9.8")])


def test_unreadable_metadata_and_record(tmp_path, monkeypatch):
    h200_torch(tmp_path)
    real_open = probe_common.open_file

    def open_file(path, mode="rb"):
        if path.endswith(("METADATA", "RECORD")):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, mode)

    monkeypatch.setattr(probe_common, "open_file", open_file)
    facts = consumers(tmp_path)
    torch = torch_of(facts)
    assert torch["reasons"]["requires_cudnn"] == (
        f"cannot read {SP}/torch-2.11.0.dist-info/METADATA: Permission denied"
    )
    assert torch["requires_cudnn"] is None
    assert torch["loads"]["via"] == "runpath"  # the ELF still says which soname and where
    assert lib_dir(facts, WHEEL_LIB)["record"] is None


@pytest.mark.parametrize(
    ("spec", "major"),
    [
        ("<10.0,>=9.12.0.46", 9),  # jax_cuda13_plugin 0.11.2 on the H200: once read as cuDNN 10
        ("==9.19.0.56", 9),
        ("~=8.9", 8),
        (">9", 9),
        ("<10", None),  # an upper bound alone names no major
        ("", None),
    ],
)
def test_the_major_a_requirement_pins(spec, major):
    assert probe_consumers.spec_major(spec) == major


# ---------------------------------------------------------------- compiled for (probe/fatbin.py)
def test_torch_compiled_for_is_read_from_libtorch_cuda(tmp_path):
    torch = torch_of(consumers(h200_torch(tmp_path, kernels=roots.kernel_blobs())))
    assert torch["compiled_for"] == {
        "sm": ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"],
        "ptx": ["12.0"],
        "sm_some_blobs": [],
        "ptx_some_blobs": [],
        "sampled_blobs": 2,
        "complete": True,
        "path": f"{SP}/torch/lib/libtorch_cuda.so",
    }
    assert "compiled_for" not in torch["reasons"]
    assert torch["cudnn_soname"] == "libcudnn.so.9"  # the dynamic section is read as before


def test_compiled_for_unknown_gives_a_reason(tmp_path):
    h200_torch(tmp_path)  # libtorch_cuda.so without section headers
    torch = torch_of(consumers(tmp_path))
    assert torch["compiled_for"] is None
    assert torch["reasons"]["compiled_for"] == (
        f"{SP}/torch/lib/libtorch_cuda.so: no section header table (its .nv_fatbin section cannot be found)"
    )
    fakeroot.write(tmp_path, SP + "/torch/lib/libtorch_cuda.so", "not an ELF file at all")
    torch = torch_of(consumers(tmp_path))
    assert torch["compiled_for"] is None
    assert torch["reasons"]["compiled_for"] == f"{SP}/torch/lib/libtorch_cuda.so: not an ELF file"


def test_one_budget_for_every_fatbin_of_a_probe_run(tmp_path, monkeypatch):
    h200_torch(tmp_path, kernels=roots.kernel_blobs(blobs=5))
    roots.torch_venv(tmp_path, "/srv/other/.venv", kernels=roots.kernel_blobs(blobs=5))
    budgets = []
    real = probe_consumers.fatbin.read_compiled_for

    def spy(root, inner, budget=None):
        budgets.append(budget)
        return real(root, inner, budget)

    monkeypatch.setattr(probe_consumers.fatbin, "read_compiled_for", spy)
    consumers(tmp_path)
    assert len(budgets) == 2
    assert budgets[0] is budgets[1]
    assert isinstance(budgets[0], probe_consumers.fatbin.Budget)
