"""Findings of issue 13 from fixture roots: what each consumer loads, the driver now and at the next boot,
CUDA forward compatibility; and the per-environment rows and metrics of report/consumers.py."""

import json
import shutil
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import drift
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build, findings
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import consumers as report_consumers
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.rows import CSV_COLUMNS

from tests.data.consumers import roots
from tests.data.consumers.roots import MULTIARCH, SP, VENV, WHEEL_LIB, h200_torch
from tests.data.facts import fakeroot


def entry_of(root):
    """The report entry as build.py makes it, with the keys report/consumers.normalize adds."""
    facts = gather(str(root), live=False)
    entry = build.normalize_host("gpu01", "ok", facts)
    entry.update(report_consumers.normalize(facts))
    return entry


def by_code(entry):
    out = {}
    for f in findings.host_findings(entry, use_compat=False):
        out.setdefault(f["code"], []).append(f)
    return out


def test_the_h200_as_it_is_says_what_torch_loads_and_nothing_breaks(tmp_path):
    found = by_code(entry_of(h200_torch(tmp_path)))
    (loads,) = found["consumer_loads"]
    assert loads["severity"] == "info"
    assert loads["message"].startswith(
        f"torch 2.11.0+cu130 in {VENV} loads libcudnn.so.9 = cuDNN 9.19.0 from {WHEEL_LIB}/libcudnn.so.9 "
        f"(DT_RUNPATH of {SP}/torch/lib/libtorch_cuda.so"
    )
    for code in (
        "framework_cudnn_incompatible",
        "framework_cudnn_pin_unsatisfied",
        "cudnn_mixed_sub_libraries",
        "driver_version_mismatch",
        "next_boot_without_driver",
        "cuda_compat_older_than_driver",
    ):
        assert code not in found


def test_pin_not_satisfied_and_torch_refuses_the_older_cudnn(tmp_path):
    found = by_code(entry_of(h200_torch(tmp_path, wheel="9.14.0.64")))
    (pin,) = found["framework_cudnn_pin_unsatisfied"]
    assert pin["severity"] == "warning"
    assert (
        "'torch 2.11.0+cu130 has requirement nvidia-cudnn-cu13==9.19.0.56, but you have nvidia-cudnn-cu13 "
        "9.14.0.64'" in pin["message"]
    )
    (bad,) = found["framework_cudnn_incompatible"]
    assert bad["severity"] == "error"
    assert bad["message"].endswith(
        "'RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (9, 19, 0) but found "
        "runtime version (9, 14, 0)'"
    )


def test_mixed_sub_libraries(tmp_path):
    h200_torch(tmp_path)
    roots.mixed_copy(tmp_path, SP)
    (mixed,) = by_code(entry_of(tmp_path))["cudnn_mixed_sub_libraries"]
    assert mixed["severity"] == "error"
    assert f"the cuDNN libraries in {WHEEL_LIB} come from different releases" in mixed["message"]
    assert "libcudnn_ops.so.9 9.14.0" in mixed["message"]
    assert "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH" in mixed["message"]


def test_ld_library_path_makes_torch_load_the_tarball(tmp_path):
    h200_torch(tmp_path)
    roots.ld_library_path_tarball(tmp_path)
    (bad,) = by_code(entry_of(tmp_path))["framework_cudnn_incompatible"]
    assert (
        "loads cuDNN 9.1.0 from /usr/local/cuda-12.8/lib64/libcudnn.so.9.1.0 (LD_LIBRARY_PATH "
        in bad["message"]
    )


def test_a_missing_soname_is_the_error_the_user_would_see(tmp_path):
    h200_torch(tmp_path, pin="8.9.2.26", wheel=None, cuda="12.1", cudnn_major=8)
    (missing,) = by_code(entry_of(tmp_path))["framework_cudnn_not_found"]
    assert missing["message"].endswith(
        "'OSError: libcudnn.so.8: cannot open shared object file: No such file or directory'"
    )


def test_a_missing_sub_library_of_the_loaded_copy(tmp_path):
    h200_torch(tmp_path)
    (tmp_path / WHEEL_LIB.lstrip("/") / "libcudnn_cnn.so.9").unlink()
    (missing,) = by_code(entry_of(tmp_path))["cudnn_missing_sub_libraries"]
    assert (
        "'Could not load library libcudnn_cnn.so.9. Error: libcudnn_cnn.so.9: cannot open"
        in missing["message"]
    )


def test_conda_env_is_described(tmp_path):
    fakeroot.h200(tmp_path)
    roots.conda_env_with_python(tmp_path, "/opt/conda/envs/train")
    rows = report_consumers.environment_rows(entry_of(tmp_path))
    (conda,) = [r for r in rows if r["kind"] == "conda"]
    assert (conda["environment"], conda["cudnn"], conda["via"]) == (
        "/opt/conda/envs/train",
        "9.1.0",
        "conda_lib",
    )


def test_driver_loaded_vs_user_space_and_the_next_boot(tmp_path):
    roots.bare_metal(tmp_path, newer="6.8.0-51-generic")
    entry = entry_of(tmp_path)
    found = by_code(entry)
    (mismatch,) = found["driver_version_mismatch"]
    assert mismatch["message"].startswith(
        "NVML mismatch now: the loaded kernel module is 580.95.05 but the user-space libraries are 580.126.09"
    )
    assert "'Failed to initialize NVML: Driver/library version mismatch'" in mismatch["message"]
    (boot,) = found["next_boot_without_driver"]
    assert boot["message"].startswith("the next boot has no NVIDIA driver: kernel 6.8.0-51-generic")
    assert "dkms autoinstall -k 6.8.0-51-generic" in boot["message"]
    (headers,) = found["kernel_headers_missing"]
    assert headers["severity"] == "warning"
    assert "driver_gsp_firmware_missing" not in found
    runtime = entry["driver_runtime"]
    assert runtime["versions"] == {"loaded": "580.95.05", "userspace": "580.126.09", "package": "580.126.09"}
    assert [k["module"]["kind"] for k in runtime["kernels"]] == ["dkms", "none"]


def test_next_boot_with_its_module_and_firmware_missing(tmp_path):
    roots.bare_metal(tmp_path, loaded="580.126.09")
    shutil.rmtree(tmp_path / "usr/lib/firmware/nvidia/580.126.09")
    fakeroot.write(
        tmp_path,
        "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.126.09  Release Build\n",
    )
    found = by_code(entry_of(tmp_path))
    assert "driver_version_mismatch" not in found
    assert "next_boot_without_driver" not in found
    (gsp,) = found["driver_gsp_firmware_missing"]
    assert "no GSP firmware for driver 580.126.09" in gsp["message"]


def test_grubenv_saved_entry_decides_the_next_boot(tmp_path):
    roots.bare_metal(tmp_path, newer="6.8.0-51-generic")
    fakeroot.write(
        tmp_path,
        "/boot/grub/grubenv",
        "# GRUB Environment Block\nsaved_entry=gnulinux-advanced-x>gnulinux-6.8.0-49-generic-advanced-x\n",
    )
    entry = entry_of(tmp_path)
    assert entry["driver_runtime"]["next_boot"]["kernel"] == "6.8.0-49-generic"
    assert "next_boot_without_driver" not in by_code(entry)


@pytest.mark.parametrize(
    ("driver_version", "code", "severity"),
    [
        ("580.159.04", "cuda_compat_older_than_driver", "error"),
        ("550.163.01", "cuda_compat_not_supported", "error"),
        ("535.230.02", "cuda_compat_in_use", "info"),
    ],
)
def test_cuda_compat_the_rules_decide(tmp_path, driver_version, code, severity):
    h200_torch(tmp_path)
    roots.cuda_compat(tmp_path, version="580.95.05")
    fakeroot.write(
        tmp_path, "/etc/profile.d/cuda-compat.sh", "export LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat\n"
    )
    entry = entry_of(tmp_path)
    entry["driver"]["version"] = driver_version
    (item,) = by_code(entry)[code]
    assert item["severity"] == severity
    assert item["message"].startswith(
        "programs built with /usr/local/cuda-13.0 load the forward-compatibility "
        "libcuda 580.95.05 (LD_LIBRARY_PATH (/etc/profile.d/cuda-compat.sh)"
    )


def test_cuda_compat_installed_but_unused(tmp_path):
    h200_torch(tmp_path)
    roots.cuda_compat(tmp_path)
    (unused,) = by_code(entry_of(tmp_path))["cuda_compat_unused"]
    assert "cuda-compat-13-0 580.95.05-0ubuntu1, libcuda 580.95.05" in unused["message"]


def test_tensorflow_built_for_older_gpus_only(tmp_path):
    fakeroot.h200(tmp_path)
    sp = "/srv/tf/lib/python3.11/site-packages"
    fakeroot.write(tmp_path, "/srv/tf/pyvenv.cfg", "version = 3.11.2\n")
    fakeroot.write(
        tmp_path, sp + "/tensorflow-2.18.0.dist-info/METADATA", "Name: tensorflow\nVersion: 2.18.0\n\n"
    )
    info = (
        "build_info = {'cuda_compute_capabilities': [{}], 'cuda_version': '12.5.1', 'cudnn_version': '9'}\n"
    )
    path = sp + "/tensorflow/python/platform/build_info.py"
    fakeroot.write(tmp_path, path, info.replace("{}", "'sm_70', 'sm_80'"))
    assert by_code(entry_of(tmp_path))["framework_gpu_arch_unsupported"][0]["message"].endswith(
        "'CUDA error: no kernel image is available for execution on the device'"
    )
    fakeroot.write(tmp_path, path, info.replace("{}", "'sm_70', 'compute_80'"))
    assert "framework_gpu_arch_ptx_only" in by_code(entry_of(tmp_path))
    fakeroot.write(tmp_path, path, info.replace("{}", "'sm_80', 'sm_90'"))
    assert "framework_gpu_arch_unsupported" not in by_code(entry_of(tmp_path))


def test_broken_venv_python(tmp_path):
    h200_torch(tmp_path)
    (tmp_path / "usr/bin/python3.12").unlink()
    (broken,) = by_code(entry_of(tmp_path))["python_env_broken"]
    assert broken["message"].startswith(f"the Python environment {VENV} has no working python")


# ---------------------------------------------------------------- rows and metrics
def test_environment_rows_and_markdown(tmp_path):
    entry = entry_of(h200_torch(tmp_path, wheel="9.14.0.64"))
    rows = report_consumers.environment_rows(entry)
    assert [(r["kind"], r["consumer"]) for r in rows] == [
        ("system", "process"),
        ("venv", "torch"),
        ("cuda_toolkit", "process"),
        ("cuda_toolkit", "libcuda"),
    ]
    torch = rows[1]
    assert torch["requires"] == "nvidia-cudnn-cu13==9.19.0.56"
    assert (torch["cudnn"], torch["via"], torch["state"]) == (
        "9.14.0",
        "runpath",
        "incompatible (pin not satisfied)",
    )
    lines = report_consumers.markdown_lines({"hosts": [entry]})
    assert lines[:4] == ["", "## Environments", "", "| " + " | ".join(report_consumers.ENV_COLUMNS) + " |"]
    assert len(lines) == 5 + len(rows)


def test_metric_series_carry_dcgm_label_names(tmp_path):
    entry = entry_of(h200_torch(tmp_path))
    series = report_consumers.metric_series(entry)
    names = [name for name, _, _ in series]
    assert set(names) == {
        "gpufleet_consumer_cudnn_info",
        "gpufleet_framework_info",
        "gpufleet_cudnn_mixed_dirs",
        "gpufleet_driver_version_mismatch",
        "gpufleet_gpu_stack_info",
    }
    (gpu,) = [labels for name, labels, _ in series if name == "gpufleet_gpu_stack_info"]
    assert {"Hostname", "UUID", "gpu", "modelName", "pci_bus_id"} <= set(gpu)
    assert gpu["pci_bus_id"] == "00000000:00:06.0"
    assert (gpu["cuda_driver_major"], gpu["cuda_driver_minor"], gpu["cuda_driver_rev"]) == (
        "580",
        "159",
        "04",
    )
    assert gpu["cudnn_version"] == "9.14.0"
    (fw,) = [labels for name, labels, _ in series if name == "gpufleet_framework_info"]
    assert (fw["cudnn_built"], fw["cudnn_loaded"], fw["state"]) == ("9.19.0.56", "9.19.0", "ok")
    assert report_consumers.metric_series({"status": "unreachable", "name": "x"}) == []


def test_normalize_of_older_facts_is_empty():
    assert report_consumers.normalize({"schema_version": 1}) == {
        "consumers": {"ld_library_path": {}, "environments": [], "library_dirs": []},
        "driver_runtime": None,
        "cuda_compat": [],
    }
    assert findings.consumer_findings({}) == []
    assert findings.driver_runtime_findings({}) == []
    assert findings.cuda_compat_findings({}) == []


# ---------------------------------------------------------------- drift: what torch loads
def test_drift_on_what_an_environment_loads(tmp_path):
    entry = entry_of(h200_torch(tmp_path, wheel="9.14.0.64"))
    baseline = drift.validate_baseline(
        {"consumers_cudnn": {VENV + "/": "9.19", "/": "9.14", "/opt/gone": "9.19"}}
    )
    assert baseline["consumers_cudnn"] == {VENV: "9.19", "/": "9.14", "/opt/gone": "9.19"}
    items = drift.compute_drift(entry, baseline)
    assert [(i["key"], i["expected"], i["actual"]) for i in items] == [
        ("consumers_cudnn./opt/gone", "9.19", "missing"),
        (f"consumers_cudnn.{VENV}", "9.19", "9.14.0"),
    ]
    assert items[1]["message"] == f"cuDNN 9.19 expected in {VENV}, torch there loads 9.14.0"
    with pytest.raises(drift.BaselineError, match="consumers_cudnn"):
        drift.validate_baseline({"consumers_cudnn": {"relative": "9.19"}})
    with pytest.raises(drift.BaselineError, match="consumers_cudnn"):
        drift.validate_baseline({"consumers_cudnn": ["9.19"]})
    assert "consumers_cudnn" not in drift.validate_baseline({"cudnn_scope": "all"})


def test_html_and_csv_rows(tmp_path):
    entry = entry_of(h200_torch(tmp_path, wheel="9.14.0.64"))
    html = report_consumers.html_table_rows({"hosts": [entry]})
    assert [cls for cls, _ in html] == ["", "drift", "", ""]
    assert len(html[1][1]) == len(report_consumers.ENV_COLUMNS)
    rows = report_consumers.csv_rows(entry, CSV_COLUMNS)
    assert list(rows[1]) == list(CSV_COLUMNS)
    assert rows[1]["component"] == "consumer"
    assert rows[1]["name"] == f"torch in {VENV} (venv)"
    assert (rows[1]["version"], rows[1]["source"], rows[1]["active"]) == (
        "9.14.0",
        "runpath",
        "incompatible (pin not satisfied)",
    )
    assert rows[1]["detail"] == "requires nvidia-cudnn-cu13==9.19.0.56; CUDA 13.0"


# ---------------------------------------------------------------- compiled for (the .nv_fatbin of torch)
def test_torch_built_for_the_h200_says_nothing(tmp_path):
    found = by_code(entry_of(h200_torch(tmp_path, kernels=roots.kernel_blobs())))
    assert "framework_gpu_arch_unsupported" not in found
    assert "framework_gpu_arch_ptx_only" not in found


def test_torch_without_a_kernel_for_the_h200_quotes_torch(tmp_path):
    entry = entry_of(h200_torch(tmp_path, kernels=roots.kernel_blobs(sm=(100, 120), ptx=(120,))))
    (bad,) = by_code(entry)["framework_gpu_arch_unsupported"]
    assert bad["severity"] == "error"
    assert bad["message"] == (
        f"torch 2.11.0+cu130 in {VENV} has kernels for sm_100 sm_120 compute_120 in "
        f"{SP}/torch/lib/libtorch_cuda.so: none runs on the NVIDIA H200 (compute capability 9.0): no cubin "
        "of its major with a minor <= 9.0, no PTX <= 9.0; it fails with 'NVIDIA H200 with CUDA capability "
        "sm_90 is not compatible with the current PyTorch installation. The current PyTorch install supports "
        "CUDA capabilities sm_100 sm_120.' then 'CUDA error: no kernel image is available for execution on "
        "the device'"
    )


def test_torch_with_only_older_ptx_for_the_h200_is_jit_compiled(tmp_path):
    entry = entry_of(h200_torch(tmp_path, kernels=roots.kernel_blobs(sm=(80, 86), ptx=(86,))))
    (jit,) = by_code(entry)["framework_gpu_arch_ptx_only"]
    assert jit["severity"] == "warning"
    assert (
        "the NVIDIA H200 (compute capability 9.0) runs them only through JIT compilation of PTX"
        in (jit["message"])
    )


def _torch_fw(sm, ptx=(), complete=True):
    compiled = {"sm": list(sm), "ptx": list(ptx), "sampled_blobs": 7, "complete": complete, "path": "/l.so"}
    return {"name": "torch", "version": "2.11.0", "compiled_for": compiled}


@pytest.mark.parametrize(
    ("sm", "ptx", "cc", "code"),
    [
        (["8.0"], [], "8.6", None),  # a cubin of the same major and an older minor runs
        (["8.6"], [], "8.0", "framework_gpu_arch_unsupported"),  # not a newer minor
        (["8.0"], [], "9.0", "framework_gpu_arch_unsupported"),  # not across majors
        (["8.0"], ["8.0"], "9.0", "framework_gpu_arch_ptx_only"),
        (["9.0"], ["10.0"], "8.9", "framework_gpu_arch_unsupported"),  # PTX JITs only to newer GPUs
        (["10.0"], [], "10.3", None),
        (["10.0"], [], "12.0", "framework_gpu_arch_unsupported"),
    ],
)
def test_the_binary_compatibility_rule(sm, ptx, cc, code):
    gpus = [{"name": "GPU", "compute_capability": cc}]
    found = findings._compiled_findings(_torch_fw(sm, ptx), {"path": "/v"}, gpus)
    assert [f["code"] for f in found] == ([code] if code else [])


def test_a_sampled_read_makes_a_warning_and_unknown_makes_none():
    gpus = [{"name": "GPU", "compute_capability": "9.0"}]
    (found,) = findings._compiled_findings(_torch_fw(["8.0"], complete=False), {"path": "/v"}, gpus)
    assert found["severity"] == "warning"
    assert "(from its first 7 fatbin blobs only: a bound stopped the read)" in found["message"]
    assert findings._compiled_findings({"name": "torch", "compiled_for": None}, {"path": "/v"}, gpus) == []
    empty = _torch_fw([])
    assert findings._compiled_findings(empty, {"path": "/v"}, gpus) == []


def test_onnxruntime_quotes_its_own_words():
    fw = dict(_torch_fw(["7.5"]), name="onnxruntime-gpu")
    (found,) = findings._compiled_findings(fw, {"path": "/v"}, [{"name": "G", "compute_capability": "9.0"}])
    assert "'CUDA failure 209: no kernel image is available for execution on the device'" in found["message"]


# ---------------------------------------------------------------- forward compatibility: data-center GPUs
def _compat_entry(tmp_path):
    h200_torch(tmp_path)
    roots.cuda_compat(tmp_path, version="580.95.05")
    fakeroot.write(
        tmp_path, "/etc/profile.d/cuda-compat.sh", "export LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat\n"
    )
    entry = entry_of(tmp_path)
    entry["driver"]["version"] = "535.230.02"
    return entry


def test_cuda_compat_on_a_gpu_that_is_not_a_data_center_gpu(tmp_path):
    entry = _compat_entry(tmp_path)
    entry["gpus"][0].update(name="NVIDIA GeForce RTX 4090", device_id="0x2684", subsystem_device_id=None)
    found = by_code(entry)
    assert "cuda_compat_in_use" not in found
    (bad,) = found["cuda_compat_not_supported_on_device"]
    assert bad["severity"] == "error"
    assert (
        "but NVIDIA GeForce RTX 4090 (0000:00:06.0) is not a data-center GPU, and forward compatibility is "
        "only for data-center GPUs (and select NGC Server Ready RTX SKUs, Jetson): they fail with "
        "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804) 'forward compatibility was attempted on non "
        "supported HW'" in bad["message"]
    )


def test_cuda_compat_the_facts_data_center_flag_decides_first(tmp_path):
    entry = _compat_entry(tmp_path)
    entry["gpus"][0]["data_center"] = False  # the H200's PCI id would say True
    assert "cuda_compat_not_supported_on_device" in by_code(entry)
    entry["gpus"][0]["data_center"] = True
    assert "cuda_compat_in_use" in by_code(entry)


def test_cuda_compat_on_an_unknown_gpu_cannot_be_decided(tmp_path):
    entry = _compat_entry(tmp_path)
    entry["gpus"][0].update(name="unknown", device_id=None, subsystem_device_id=None)
    found = by_code(entry)
    (unknown,) = found["cuda_compat_device_unknown"]
    assert unknown["severity"] == "info"
    assert (
        "whether the GPUs allow it could not be decided (unknown: not known to be data-center GPUs)"
        in (unknown["message"])
    )
    assert "cuda_compat_not_supported_on_device" not in found


def test_cuda_compat_on_the_h200_is_allowed(tmp_path):
    entry = _compat_entry(tmp_path)
    assert findings.gpu_data_center(entry["gpus"][0]) is True
    (item,) = by_code(entry)["cuda_compat_in_use"]
    assert item["severity"] == "info"


# -- a venv's own cuDNN beside the system's: info when its programs load their own, a warning naming the one
# -- that loads another copy ---------------------------------------------------------------------------------
ENV_DIFFERS = "cudnn_env_differs_from_system"
H200_FACTS = Path(__file__).resolve().parents[4] / "data" / "audit"


def h200_entry(name):
    facts = json.loads((H200_FACTS / name).read_text())
    return build.build_report([{"name": "gpu01", "status": "ok", "facts": facts}], use_compat=False)["hosts"][
        0
    ]


def env_differs(entry, env):
    return [f for f in entry["findings"] if f["code"] == ENV_DIFFERS and f"(pip at {env})" in f["message"]]


@pytest.mark.parametrize("fixture", ["h200.json", "h200-broken-venv.json"])
def test_the_h200_torch_venv_loading_its_own_cudnn_is_info(fixture):
    """The real H200 (shared fixture h200-ubuntu2404): pip torch in /opt/torch/.venv loads its wheel's 9.19
    through its library's DT_RPATH while the system has 9.14 - the normal layout, nothing to act on."""
    (f,) = env_differs(h200_entry(fixture), VENV)
    assert f["severity"] == "info", f["message"]
    assert f["message"].startswith(
        f"cuDNN 9.19.0 (pip at {VENV}) differs from the system cuDNN 9.14.0 (deb at /usr)"
    )
    if "consumers" in json.loads((H200_FACTS / fixture).read_text()):
        assert f"jax, torch there load(s) this copy (DT_RPATH of {SP}/jax_plugins" in f["message"]
        assert "as designed: nothing to do" in f["message"]


def test_the_h200_torch_venv_from_the_probe_is_info(tmp_path):
    (f,) = by_code(entry_of(h200_torch(tmp_path)))[ENV_DIFFERS]
    assert f["severity"] == "info"
    assert f"torch there load(s) this copy (DT_RUNPATH of {SP}/torch/lib/libtorch_cuda.so" in f["message"]


def test_torch_without_its_runpath_loads_the_system_copy_a_warning_naming_it(tmp_path):
    """libtorch_cuda.so without RUNPATH: the loader's cache gives it the system's 9.14, not its wheel's."""
    (f,) = by_code(entry_of(h200_torch(tmp_path, runpath=None)))[ENV_DIFFERS]
    assert f["severity"] == "warning"
    assert (
        f"torch there ({SP}/torch/lib/libtorch_cuda.so) loads {MULTIARCH}/libcudnn.so.9.14.0 (cuDNN 9.14.0, "
        in f["message"]
    )
    assert "not the 9.19.0 of its env" in f["message"]


def test_two_frameworks_of_one_venv_loading_two_copies_a_warning_naming_the_odd_one():
    """The real venv, with jax's plugin built without RPATH: jax gets the system's copy, torch its own; a
    process importing both gets one libcudnn.so.9 for both."""
    facts = json.loads((H200_FACTS / "h200-broken-venv.json").read_text())
    (env,) = [e for e in facts["consumers"]["environments"] if e["path"] == VENV]
    (jax,) = [fw for fw in env["frameworks"] if fw["name"] == "jax"]
    jax["loads"].update(
        path=f"{MULTIARCH}/libcudnn.so.9",
        real_path=f"{MULTIARCH}/libcudnn.so.9.14.0",
        dir=MULTIARCH,
        version="9.14.0",
        copy_path="/usr",
        via="ld_cache",
        why="the loader cache (ldconfig)",
    )
    entry = build.build_report([{"name": "gpu01", "status": "ok", "facts": facts}], use_compat=False)[
        "hosts"
    ][0]
    (f,) = env_differs(entry, VENV)
    assert f["severity"] == "warning"
    assert (
        f"jax there ({SP}/jax_plugins/xla_cuda13/xla_cuda_plugin.so) loads {MULTIARCH}/libcudnn.so.9.14.0"
        in (f["message"])
    )
    assert "a process that imports torch and jax loads libcudnn.so.9 once" in f["message"]
    assert "torch there (" not in f["message"]  # torch loads its own: not named as the odd one
