"""Planner of GPU passthrough into containers: observation from fake roots, mode choice, docker options."""

import json
import os
import subprocess
import sys

import pytest

from lab import gpu_passthrough as gp

DRIVER = "580.159.04"

# Lines of `ldconfig -p` on the real H200 host (Ubuntu 24.04, driver under /usr/local/nvidia),
# copied from shared/fixtures/h200-ubuntu2404/ldconfig-p.txt (captured 2026-11-30).
H200_LDCONFIG = f"""520 libs found in cache `/etc/ld.so.cache'
\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-ptxjitcompiler.so.1
\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => /lib/libnvidia-ptxjitcompiler.so.1
\tlibnvidia-nvvm.so.4 (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-nvvm.so.4
\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-ml.so.1
\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/libnvidia-ml.so.1
\tlibnvidia-ml.so (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-ml.so
\tlibnvidia-gpucomp.so.{DRIVER} (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-gpucomp.so.{DRIVER}
\tlibnvidia-tls.so.{DRIVER} (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-tls.so.{DRIVER}
\tlibcudnn.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn.so.9
\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13
\tlibcuda.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so.1
\tlibcuda.so.1 (libc6,x86-64) => /lib/libcuda.so.1
\tlibcuda.so (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so
\tlibcuda.so.1 (libc6) => /usr/lib32/libcuda.so.1
"""

H200_LIBS = {
    "libcuda.so": "1",
    "libnvidia-ml.so": "1",
    "libnvidia-ptxjitcompiler.so": "1",
    "libnvidia-nvvm.so": "4",
    "libnvidia-gpucomp.so": None,
    "libnvidia-tls.so": None,
    "libnvidia-cfg.so": "1",
}


def _touch(root, path, text="x"):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as fh:
        fh.write(text)
    return full


def _link(root, path, target):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.symlink(target, full)


def _driver_tree(root, libdir="/usr/local/nvidia/lib64", bindir="/usr/local/nvidia/bin"):
    """A driver user space the way the H200 has it: real .so.<ver>, soname and dev links."""
    for base, soname in H200_LIBS.items():
        real = f"{base}.{DRIVER}"
        _touch(root, f"{libdir}/{real}", "ELF " + base)
        if soname:
            _link(root, f"{libdir}/{base}.{soname}", real)
            _link(root, f"{libdir}/{base}", f"{base}.{soname}")
        else:
            _link(root, f"{libdir}/{base}", real)
    _touch(root, f"{bindir}/nvidia-smi", "#!")
    _touch(root, f"{bindir}/nvidia-debugdump", "#!")


def _gpu_host(root, gpus=1, uvm=True, caps=True):
    for i in range(gpus):
        _touch(root, f"/dev/nvidia{i}", "")
        _touch(root, f"/proc/driver/nvidia/gpus/0000:00:0{6 + i}.0/information", "Model: NVIDIA H200\n")
    _touch(root, "/dev/nvidiactl", "")
    if uvm:
        _touch(root, "/dev/nvidia-uvm", "")
        _touch(root, "/dev/nvidia-uvm-tools", "")
    if caps:
        _touch(root, "/dev/nvidia-caps/nvidia-cap1", "")
        _touch(root, "/dev/nvidia-caps/nvidia-cap2", "")
    _touch(root, "/dev/null", "")
    _touch(
        root,
        "/proc/driver/nvidia/version",
        f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release Build  (nixbld@)\n",
    )
    _driver_tree(root)


def _docker_info(runtimes=("runc", "io.containerd.runc.v2"), cdi_dirs=None, version="28.5.1"):
    info = {"ServerVersion": version, "Runtimes": {r: {"path": r} for r in runtimes}}
    if cdi_dirs is not None:
        info["CDISpecDirs"] = list(cdi_dirs)
    return json.dumps(info)


CDI_YAML = """---
cdiVersion: 0.5.0
containerEdits:
  deviceNodes:
  - path: /dev/nvidiactl
devices:
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
  name: "0"
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
  name: GPU-00000000-1111-2222-3333-444444444444
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
  name: all
kind: nvidia.com/gpu
"""


# --------------------------------------------------------------------------- observation
def test_device_nodes_sorted_gpus_first(tmp_path):
    _gpu_host(tmp_path, gpus=3)
    _touch(tmp_path, "/dev/nvidia10", "")
    _touch(tmp_path, "/dev/nvidia-modeset", "")
    _touch(tmp_path, "/dev/nvidia-caps/unrelated", "")
    nodes = gp.find_device_nodes(str(tmp_path))
    assert nodes == [
        "/dev/nvidia0",
        "/dev/nvidia1",
        "/dev/nvidia2",
        "/dev/nvidia10",
        "/dev/nvidia-modeset",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
        "/dev/nvidiactl",
        "/dev/nvidia-caps/nvidia-cap1",
        "/dev/nvidia-caps/nvidia-cap2",
    ]
    assert gp.gpu_nodes(nodes) == ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia10"]


def test_no_dev_at_all(tmp_path):
    assert gp.find_device_nodes(str(tmp_path)) == []


def test_libraries_from_h200_ldconfig_follow_links_to_real_files(tmp_path):
    _driver_tree(tmp_path)
    libs = gp.find_driver_libraries(str(tmp_path), H200_LDCONFIG, dirs=())
    assert libs["libcuda.so"] == f"/usr/local/nvidia/lib64/libcuda.so.{DRIVER}"
    assert libs["libnvidia-ml.so"] == f"/usr/local/nvidia/lib64/libnvidia-ml.so.{DRIVER}"
    assert libs["libnvidia-nvvm.so"] == f"/usr/local/nvidia/lib64/libnvidia-nvvm.so.{DRIVER}"
    assert libs["libnvidia-gpucomp.so"] == f"/usr/local/nvidia/lib64/libnvidia-gpucomp.so.{DRIVER}"
    # graphics libraries are not for compute containers; cuDNN/cudart are not the driver's
    assert "libnvidia-tls.so" not in libs
    assert not any("cudnn" in v or "cudart" in v for v in libs.values())
    # libnvidia-cfg is not in this ldconfig excerpt and no folder was given
    assert "libnvidia-cfg.so" not in libs


def test_libraries_without_ldconfig_found_in_lib_or_lib64(tmp_path):
    _driver_tree(tmp_path, libdir="/usr/local/nvidia/lib")
    libs = gp.find_driver_libraries(str(tmp_path), None)
    assert libs["libcuda.so"] == f"/usr/local/nvidia/lib/libcuda.so.{DRIVER}"
    assert libs["libnvidia-cfg.so"] == f"/usr/local/nvidia/lib/libnvidia-cfg.so.{DRIVER}"


def test_ldconfig_entry_wins_over_folders(tmp_path):
    _driver_tree(tmp_path)  # /usr/local/nvidia/lib64
    _touch(tmp_path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "stale")
    text = "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
    libs = gp.find_driver_libraries(str(tmp_path), text)
    assert libs["libcuda.so"] == "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    assert libs["libnvidia-ml.so"] == f"/usr/local/nvidia/lib64/libnvidia-ml.so.{DRIVER}"


def test_dangling_and_absolute_links_stay_inside_root(tmp_path):
    _touch(tmp_path, f"/usr/local/nvidia/lib64/libcuda.so.{DRIVER}")
    _link(tmp_path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", f"/usr/local/nvidia/lib64/libcuda.so.{DRIVER}")
    _link(tmp_path, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/nowhere/libnvidia-ml.so.1")
    libs = gp.find_driver_libraries(str(tmp_path), None, dirs=("/usr/lib/x86_64-linux-gnu",))
    assert libs == {"libcuda.so": f"/usr/local/nvidia/lib64/libcuda.so.{DRIVER}"}


def test_symlink_loop_is_not_followed_forever(tmp_path):
    _link(tmp_path, "/a", "/b")
    _link(tmp_path, "/b", "/a")
    assert gp.resolve(str(tmp_path), "/a") is None


def test_ldconfig_ignores_32bit_and_garbage():
    text = (
        "garbage\n\tlibcuda.so.1 (libc6) => /usr/lib32/libcuda.so.1\n"
        "\tlibz.so.1 (libc6,x86-64) => /lib/libz.so.1\n  \n"
    )
    assert gp.parse_ldconfig(text) == [("libz.so.1", "/lib/libz.so.1")]
    assert gp.parse_ldconfig(None) == []


def test_binaries_resolved(tmp_path):
    _driver_tree(tmp_path)
    _link(tmp_path, "/usr/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi")
    bins = gp.find_driver_binaries(str(tmp_path))
    assert bins == {
        "nvidia-smi": "/usr/local/nvidia/bin/nvidia-smi",
        "nvidia-debugdump": "/usr/local/nvidia/bin/nvidia-debugdump",
    }


def test_docker_info_parsing():
    info = gp.parse_docker_info(_docker_info(("runc", "nvidia"), cdi_dirs=["/etc/cdi", "/var/run/cdi"]))
    assert info == {
        "available": True,
        "runtimes": ["nvidia", "runc"],
        "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"],
        "server_version": "28.5.1",
    }
    for bad in (None, "", "not json", "[1, 2]"):
        assert gp.parse_docker_info(bad)["available"] is False


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_cdi_spec_devices(tmp_path, fmt):
    if fmt == "yaml":
        _touch(tmp_path, "/var/run/cdi/nvidia.yaml", CDI_YAML)
    else:
        spec = {"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0"}, {"name": "all"}]}
        _touch(tmp_path, "/etc/cdi/nvidia.json", json.dumps(spec))
    _touch(tmp_path, "/etc/cdi/other.yaml", "kind: vendor.com/fpga\ndevices:\n- name: x\n")
    _touch(tmp_path, "/etc/cdi/README", "not a spec")
    cdi = gp.find_cdi_devices(str(tmp_path))
    assert len(cdi["specs"]) == 1
    assert "nvidia.com/gpu=all" in cdi["devices"]
    assert "nvidia.com/gpu=0" in cdi["devices"]
    assert not any("fpga" in d for d in cdi["devices"])


def test_cdi_yaml_nested_names_are_not_devices():
    kind, names = gp.parse_cdi_spec(CDI_YAML + "  \n")
    assert kind == "nvidia.com/gpu"
    assert names == ["0", "GPU-00000000-1111-2222-3333-444444444444", "all"]


def test_pci_gpu_without_driver(tmp_path):
    _touch(tmp_path, "/sys/bus/pci/devices/0000:00:06.0/vendor", "0x10de\n")
    _touch(tmp_path, "/sys/bus/pci/devices/0000:00:06.0/class", "0x030200\n")
    _touch(tmp_path, "/sys/bus/pci/devices/0000:00:07.0/vendor", "0x10de\n")
    _touch(tmp_path, "/sys/bus/pci/devices/0000:00:07.0/class", "0x068000\n")  # NVSwitch bridge, not a GPU
    _touch(tmp_path, "/sys/bus/pci/devices/0000:00:08.0/vendor", "0x8086\n")
    _touch(tmp_path, "/sys/bus/pci/devices/0000:00:08.0/class", "0x030000\n")
    obs = gp.observe(str(tmp_path))
    assert obs["pci_gpus"] == ["0000:00:06.0"]
    with pytest.raises(gp.NoGpuError, match=r"0000:00:06\.0 but no driver loaded"):
        gp.choose_mode(obs)


def test_driver_version(tmp_path):
    _gpu_host(tmp_path)
    assert gp.read_driver_version(str(tmp_path)) == DRIVER
    assert gp.read_driver_version(str(tmp_path / "nope")) is None


def test_observe_is_json_serialisable(tmp_path):
    _gpu_host(tmp_path)
    obs = gp.observe(str(tmp_path), _docker_info(), H200_LDCONFIG)
    assert json.loads(json.dumps(obs)) == obs


# --------------------------------------------------------------------------- decisions
def test_no_gpu_message_is_one_clear_line(tmp_path):
    obs = gp.observe(str(tmp_path), _docker_info(("runc", "nvidia")), "")
    with pytest.raises(gp.NoGpuError) as err:
        gp.choose_mode(obs, "auto")
    assert str(err.value) == (
        "no NVIDIA GPU on this host (no /dev/nvidia[0-9]* device node, no /proc/driver/nvidia/gpus entry)"
    )
    # an explicit mode does not hide the missing GPU
    with pytest.raises(gp.NoGpuError):
        gp.choose_mode(obs, "toolkit")


@pytest.mark.parametrize("bad", ["gpus", "all", "device", "1"])
def test_bad_mode_names_variable_value_and_choices(tmp_path, bad):
    _gpu_host(tmp_path)
    obs = gp.observe(str(tmp_path), _docker_info(), H200_LDCONFIG)
    with pytest.raises(gp.GpuPassthroughError) as err:
        gp.choose_mode(obs, bad)
    assert str(err.value) == f"GPUFLEET_GPU_MODE='{bad}' is not one of auto, toolkit, cdi, devices"


def test_h200_like_host_gets_devices_mode(tmp_path):
    """The real H200: no toolkit, no CDI, driver under /usr/local/nvidia: plain device mapping."""
    _gpu_host(tmp_path)
    root = str(tmp_path)
    obs = gp.observe(root, _docker_info(), H200_LDCONFIG)
    assert gp.choose_mode(obs) == "devices"
    result = gp.plan(obs, "auto", ld_so_conf_source="/tmp/eph/ld.conf")
    assert result["mode"] == "devices"
    assert result["reason"] == "auto-detected"
    assert result["driver_version"] == DRIVER
    docker = result["docker"]
    assert docker["devices"][0] == f"{root}/dev/nvidia0:/dev/nvidia0:rwm"
    assert f"{root}/dev/nvidiactl:/dev/nvidiactl:rwm" in docker["devices"]
    assert f"{root}/dev/nvidia-uvm:/dev/nvidia-uvm:rwm" in docker["devices"]
    assert f"{root}/dev/nvidia-uvm-tools:/dev/nvidia-uvm-tools:rwm" in docker["devices"]
    assert f"{root}/dev/nvidia-caps/nvidia-cap1:/dev/nvidia-caps/nvidia-cap1:rwm" in docker["devices"]
    lib = f"/usr/local/nvidia/lib64/libcuda.so.{DRIVER}"
    assert f"{root}{lib}:{lib}:ro" in docker["volumes"]
    assert f"{root}/usr/local/nvidia/bin/nvidia-smi:/usr/bin/nvidia-smi:ro" in docker["volumes"]
    assert f"/tmp/eph/ld.conf:{gp.LD_SO_CONF}:ro" in docker["volumes"]
    assert all(v.endswith(":ro") for v in docker["volumes"])
    # one mount per real file, no graphics libraries
    targets = [v.split(":")[1] for v in docker["volumes"]]
    assert len(targets) == len(set(targets))
    assert not any("libnvidia-tls" in t for t in targets)
    assert result["needs_ldconfig"] is True
    assert result["files"] == {gp.LD_SO_CONF: gp.ld_so_conf_content()}
    assert gp.CONTAINER_LIB_DIR in gp.ld_so_conf_content().splitlines()
    assert result["cli"][:2] == ["--device", f"{root}/dev/nvidia0:/dev/nvidia0:rwm"]
    assert "-v" in result["cli"]
    line = gp.summary(result, obs)
    assert line.startswith(f"GPU passthrough: mode devices (auto-detected), 1 GPU(s), driver {DRIVER}")


def test_devices_mode_on_real_root_uses_plain_paths():
    obs = {
        "root": "/",
        "device_nodes": ["/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidiactl"],
        "proc_gpus": ["0000:00:06.0"],
        "pci_gpus": ["0000:00:06.0"],
        "driver_version": DRIVER,
        "docker": gp.parse_docker_info(_docker_info()),
        "toolkit_hooks": [],
        "cdi": {"specs": [], "devices": []},
        "libraries": {"libcuda.so": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libnvidia-ml.so": "/x/libml"},
        "binaries": {"nvidia-smi": "/usr/bin/nvidia-smi"},
    }
    result = gp.plan(obs)
    assert result["docker"]["devices"][0] == "/dev/nvidia0:/dev/nvidia0:rwm"
    assert (
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1:/usr/local/nvidia/lib64/libcuda.so.1:ro"
        in (result["docker"]["volumes"])
    )
    # without a host file for it, the ld.so.conf entry is only in `files`
    assert not any(gp.LD_SO_CONF in v for v in result["docker"]["volumes"])


@pytest.mark.parametrize(
    ("uvm", "drop", "missing"),
    [
        (False, None, "/dev/nvidia-uvm (/dev/nvidia-uvm appears after `nvidia-modprobe -u -c=0`"),
        (True, "libcuda.so", "libcuda.so*"),
        (True, "libnvidia-ml.so", "libnvidia-ml.so*"),
        (True, "nvidia-smi", "nvidia-smi"),
    ],
)
def test_devices_mode_missing_pieces(tmp_path, uvm, drop, missing):
    _gpu_host(tmp_path, uvm=uvm)
    obs = gp.observe(str(tmp_path), _docker_info(), None)
    if drop in obs["libraries"]:
        del obs["libraries"][drop]
    if drop in obs["binaries"]:
        del obs["binaries"][drop]
    with pytest.raises(gp.GpuPassthroughError) as err:
        gp.choose_mode(obs, "devices")
    msg = str(err.value)
    assert msg.startswith("GPUFLEET_GPU_MODE=devices cannot be used: missing on the host: ")
    assert missing in msg
    assert "\n" not in msg
    # auto explains every mode
    with pytest.raises(gp.GpuPassthroughError, match=r"^no way to pass the GPU into a container: toolkit: "):
        gp.choose_mode(obs, "auto")


def test_toolkit_with_hook_uses_device_requests(tmp_path):
    _gpu_host(tmp_path)
    _touch(tmp_path, "/usr/bin/nvidia-container-runtime-hook", "#!")
    obs = gp.observe(str(tmp_path), _docker_info(), H200_LDCONFIG)
    assert obs["toolkit_hooks"] == ["/usr/bin/nvidia-container-runtime-hook"]
    result = gp.plan(obs)
    assert result["mode"] == "toolkit"
    assert result["docker"]["device_requests"] == [
        {"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}
    ]
    assert result["docker"]["env"]["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert result["cli"][:2] == ["--gpus", "all"]
    assert result["needs_ldconfig"] is False
    assert "volumes" not in result["docker"]


def test_toolkit_runtime_only(tmp_path):
    _gpu_host(tmp_path)
    obs = gp.observe(str(tmp_path), _docker_info(("runc", "nvidia")), H200_LDCONFIG)
    result = gp.plan(obs, "toolkit")
    assert result["docker"]["runtime"] == "nvidia"
    assert result["docker"]["env"]["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert result["reason"] == "requested"
    assert result["cli"][:2] == ["--runtime", "nvidia"]


def test_cdi_mode(tmp_path):
    _gpu_host(tmp_path)
    _touch(tmp_path, "/etc/cdi/nvidia.yaml", CDI_YAML)
    obs = gp.observe(str(tmp_path), _docker_info(cdi_dirs=["/etc/cdi", "/var/run/cdi"]), H200_LDCONFIG)
    assert gp.choose_mode(obs) == "cdi"
    result = gp.plan(obs)
    assert result["docker"] == {"device_requests": [{"driver": "cdi", "device_ids": ["nvidia.com/gpu=all"]}]}
    assert result["cli"] == ["--device", "nvidia.com/gpu=all"]


def test_cdi_spec_but_docker_without_cdi_falls_back_to_devices(tmp_path):
    _gpu_host(tmp_path)
    _touch(tmp_path, "/etc/cdi/nvidia.yaml", CDI_YAML)
    obs = gp.observe(str(tmp_path), _docker_info(cdi_dirs=[]), H200_LDCONFIG)
    assert gp.choose_mode(obs) == "devices"
    with pytest.raises(
        gp.GpuPassthroughError, match=r"docker does not read CDI specs.*; usable here: devices$"
    ):
        gp.choose_mode(obs, "cdi")


def test_cdi_without_all_passes_every_listed_device(tmp_path):
    _gpu_host(tmp_path)
    spec = {"kind": "nvidia.com/gpu", "devices": [{"name": "0"}, {"name": "1"}]}
    _touch(tmp_path, "/etc/cdi/nvidia.json", json.dumps(spec))
    obs = gp.observe(str(tmp_path), _docker_info(cdi_dirs=["/etc/cdi"]), None)
    result = gp.plan(obs, "cdi")
    assert result["docker"]["device_requests"][0]["device_ids"] == ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]


def test_preference_toolkit_over_cdi_over_devices(tmp_path):
    _gpu_host(tmp_path)
    _touch(tmp_path, "/etc/cdi/nvidia.yaml", CDI_YAML)
    obs = gp.observe(str(tmp_path), _docker_info(("nvidia", "runc"), cdi_dirs=["/etc/cdi"]), H200_LDCONFIG)
    assert gp.available_modes(obs) == {"toolkit": None, "cdi": None, "devices": None}
    assert gp.choose_mode(obs) == "toolkit"
    for mode in gp.MODES:
        assert gp.plan(obs, mode)["mode"] == mode
    assert gp.plan(obs, " Auto ")["mode"] == "toolkit"
    assert gp.plan(obs, None)["mode"] == "toolkit"


def test_explicit_mode_unavailable_names_what_is_usable(tmp_path):
    _gpu_host(tmp_path)
    obs = gp.observe(str(tmp_path), _docker_info(), H200_LDCONFIG)
    with pytest.raises(gp.GpuPassthroughError) as err:
        gp.choose_mode(obs, "toolkit")
    assert str(err.value) == (
        "GPUFLEET_GPU_MODE=toolkit cannot be used: no NVIDIA Container Toolkit: docker has no `nvidia` "
        "runtime and no nvidia-container-runtime-hook is installed; usable here: devices"
    )


def test_gpu_seen_only_in_proc_counts_as_present(tmp_path):
    """Device nodes can be created lazily (toolkit hosts): /proc/driver/nvidia/gpus is enough."""
    _touch(tmp_path, "/proc/driver/nvidia/gpus/0000:00:06.0/information", "x")
    obs = gp.observe(str(tmp_path), _docker_info(("nvidia",)), None)
    assert gp.gpu_presence(obs) is None
    assert gp.choose_mode(obs) == "toolkit"


# --------------------------------------------------------------------------- the CLI molecule/make use
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _cli(*args, env=None):
    full_env = dict(os.environ)
    full_env.pop("GPUFLEET_GPU_MODE", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "gpu_env.py"), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
        check=False,
    )


def test_cli_no_gpu_exit_3_and_the_message(tmp_path):
    res = _cli("check", "--root", str(tmp_path))
    assert res.returncode == 3
    assert res.stdout.strip() == gp.gpu_presence(gp.observe(str(tmp_path)))


def test_cli_plan_json_writes_the_ld_conf_and_mounts_it(tmp_path):
    _gpu_host(tmp_path / "root")
    eph = tmp_path / "eph"
    res = _cli(
        "plan", "--json", "--ephemeral-dir", str(eph), env={"GPUFLEET_GPU_ROOT": str(tmp_path / "root")}
    )
    assert res.returncode == 0, res.stdout + res.stderr
    plan = json.loads(res.stdout)
    assert plan["mode"] == "devices"
    assert plan["summary"].startswith("GPU passthrough: mode devices (auto-detected)")
    conf = eph / "gpufleet-nvidia-driver.conf"
    assert conf.read_text(encoding="utf-8") == gp.ld_so_conf_content()
    assert f"{conf}:{gp.LD_SO_CONF}:ro" in plan["docker"]["volumes"]


def test_cli_bad_mode_exit_2(tmp_path):
    _gpu_host(tmp_path)
    res = _cli("check", "--root", str(tmp_path), env={"GPUFLEET_GPU_MODE": "gpus"})
    assert res.returncode == 2
    assert res.stdout.strip() == "GPUFLEET_GPU_MODE='gpus' is not one of auto, toolkit, cdi, devices"


def test_make_test_wrapper_says_skipped_without_a_gpu(tmp_path):
    env = dict(os.environ, GPUFLEET_GPU_ROOT=str(tmp_path))
    env.pop("GPUFLEET_GPU_MODE", None)
    res = subprocess.run(
        [os.path.join(ROOT, "scripts", "molecule_gpu_or_skip.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0
    assert res.stdout.startswith("SKIPPED: molecule gpu: no NVIDIA GPU on this host (")
