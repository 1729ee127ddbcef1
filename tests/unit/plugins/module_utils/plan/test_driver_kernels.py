"""Issue 18, real kernels: the reboot without a GPU, the health check after the role's reboot, the controller
refusal, the MOK files' content and the kernel guard (every installed kernel's module, the next boot)."""

import base64
import hashlib

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.kernels import (
    initramfs_rebuild,
    kernel_guard,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.reboot import reboot_after
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import (
    validate_request,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import gpu_present
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import mok as probe_mok
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root

from tests.data.roles import driver_request as req
from tests.data.roles import variables

H200 = {"pci_device_id": "0x2335", "name": "NVIDIA H200"}
RUNNING = "6.8.0-45-generic"
NEWER = "6.8.0-51-generic"
NO_GPU_NOTE = "module 580.95.05 installed; not loadable: no NVIDIA GPU present"
CONTROLLER = (
    "nvidia_driver_reboot: {!r} would reboot the Ansible controller itself (connection local or localhost); "
    "set nvidia_driver_reboot: never and reboot it yourself"
)
PEM_KEY = b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
PEM_CERT = b"subject=CN=x\n-----BEGIN CERTIFICATE-----\r\nMIIDCzCCAfOgAwIBAgIU\n-----END CERTIFICATE-----\n"


def kernel(release, kind="none", headers=True):
    return {"release": release, "running": release == RUNNING, "module": {"kind": kind}, "headers": headers}


def facts(os_key="ubuntu2404", gpus=(H200,), loaded=None, installed="580.95.05", pending=None, **driver):
    dist, ver = {"ubuntu2404": ("Ubuntu", "24.04"), "rhel9": ("RedHat", "9.4")}[os_key]
    base = {
        "loaded_version": loaded,
        "loaded_kernel_module": "open" if loaded else None,
        "module_for_running_kernel": {"version": installed, "kernel_module": "open" if installed else None},
        "packages": [],
        "runfile_markers": [],
        "boot_pending": pending
        or {"boot_time": 1764600000, "initramfs_changed": False, "module_changed": False},
    }
    base.update(driver)
    return {
        "host": {"os": {"distribution": dist, "version": ver, "key": os_key}, "kernel_release": RUNNING,
                 "container": "none"},
        "driver": base,
        "gpus": list(gpus),
        "nvswitch_count": 0,
    }  # fmt: skip


# --------------------------------------------------------------------------- reboot without a GPU
def test_no_gpu_and_nothing_pending_is_a_clear_non_failing_state():
    plan = dp.decide(req({"branch": "580", "install_without_gpu": True}), facts(gpus=()))
    assert plan["reboot"] == {"reboot": False, "needed": False, "reason": NO_GPU_NOTE}
    after = reboot_after(plan, facts(gpus=()), changed=True, policy="auto")
    assert after["reboot"] is False
    assert after["needed"] is False
    assert after["check_running"] is False
    assert after["note"] == NO_GPU_NOTE
    assert after["failure"] == ""


@pytest.mark.parametrize("changed", ["initramfs_changed", "module_changed"])
def test_no_gpu_but_the_boot_image_changed_after_this_boot_needs_a_reboot(changed):
    pending = {"boot_time": 1764600000, "initramfs_changed": False, "module_changed": False, changed: True}
    after = reboot_after({}, facts(gpus=(), pending=pending), changed=True, policy="auto")
    assert after["reboot"] is True
    assert after["needed"] is True
    assert after["reason"] == "the initramfs / NVIDIA module of the running kernel changed after this boot"
    assert after["check_running"] is False
    never = reboot_after({}, facts(gpus=(), pending=pending), policy="never")
    assert never["reboot"] is False
    assert never["needed"] is True
    assert never["reason"] == (
        "the initramfs / NVIDIA module of the running kernel changed after this boot; "
        "reboot policy is never: reboot it yourself"
    )


def test_with_a_gpu_the_existing_logic_holds():
    after = reboot_after({}, facts(), changed=True, policy="auto")
    assert after["reboot"] is True
    assert after["reason"] == "module 580.95.05 is installed but no NVIDIA module is loaded"
    assert after["failure"] == ""


def test_gpu_present_reads_the_gpu_list_and_a_skipped_probe_says_nothing():
    assert gpu_present({"gpus": [H200]}) is True
    assert gpu_present({"gpus": []}) is False
    assert gpu_present({"gpus": [], "probes": {"gpu": {"state": "ok"}}}) is False
    assert gpu_present({"gpus": [], "probes": {"gpu": {"state": "skipped"}}}) is True
    assert gpu_present({"driver": {}}) is True  # no GPU list at all: not known, the GPU checks stay on


# --------------------------------------------------------------------------- after the role's reboot
def test_after_the_reboot_a_module_still_not_loaded_fails_the_health_check():
    after = reboot_after({}, facts(), policy="never", rebooted=True)
    assert after["check_running"] is True
    assert after["failure"] == (
        "health check: after the reboot the installed module 580.95.05 is not loaded (loaded: none)"
    )
    older = reboot_after({}, facts(loaded="580.82.07"), policy="never", rebooted=True)
    assert older["failure"] == (
        "health check: after the reboot the installed module 580.95.05 is not loaded (loaded: 580.82.07)"
    )
    assert older["check_running"] is True


def test_after_the_reboot_the_loaded_module_or_no_gpu_is_no_failure():
    loaded = reboot_after({}, facts(loaded="580.95.05"), policy="never", rebooted=True)
    assert loaded["failure"] == ""
    assert loaded["check_running"] is True
    no_gpu = reboot_after({}, facts(gpus=()), policy="never", rebooted=True)
    assert no_gpu["failure"] == ""
    assert no_gpu["check_running"] is False
    assert no_gpu["note"] == NO_GPU_NOTE
    not_rebooted = reboot_after({}, facts(), policy="never")
    assert not_rebooted["failure"] == ""
    assert not_rebooted["check_running"] is False


@pytest.mark.parametrize("gpus", [(H200,), ()], ids=["gpu", "gpu-less"])
def test_after_the_reboot_a_running_kernel_without_the_built_module_fails_the_health_check(gpus):
    """Found in the Debian 13 guest (molecule driver-vm-debian13): after the role's reboot the facts found no
    module for the running kernel, and the role reported nothing (no failure, no note)."""
    reasons = {"module_for_running_kernel": "modinfo timed out after 20.0s"}
    gone = facts(gpus=gpus, installed=None, reasons=reasons)
    after = reboot_after({"build_kernel_module": True}, gone, policy="auto", rebooted=True)
    assert after["failure"] == (
        f"health check: after the reboot the running kernel {RUNNING} has no NVIDIA module "
        "(modinfo timed out after 20.0s)"
    )
    assert after["check_running"] is False  # nvidia-smi cannot answer without a module: the failure says why
    no_build = reboot_after({"build_kernel_module": False}, gone, policy="auto", rebooted=True)
    assert no_build["failure"] == ""
    not_rebooted = reboot_after({"build_kernel_module": True}, gone, policy="auto")
    assert not_rebooted["failure"] == ""


def test_the_verify_phase_takes_rebooted_from_its_context():
    plan = dp.decide(req({"branch": "580"}), facts())
    never = variables("nvidia_driver", nvidia_driver_reboot="never")

    def verified(**context):
        decided = roles.driver_phase("verify", never, plan, facts(), {"is_controller": False, **context})
        return decided["verified"]

    assert verified(rebooted=True)["failure"].startswith("health check: after the reboot")
    assert verified()["failure"] == ""


# --------------------------------------------------------------------------- the controller itself
@pytest.mark.parametrize("policy", ["auto", "always"])
def test_auto_or_always_on_the_controller_is_refused_before_any_change(policy):
    plan = dp.decide(req({"branch": "580", "reboot": policy, "is_controller": True}), facts())
    assert plan["made"] is False
    assert plan["errors"] == [CONTROLLER.format(policy)]
    assert validate_request("ubuntu2404", "nvidia_repo", "580", reboot=policy, is_controller=True) == [
        CONTROLLER.format(policy)
    ]


def test_never_on_the_controller_is_fine_and_a_bad_policy_keeps_its_error():
    plan = dp.decide(req({"branch": "580", "reboot": "never", "is_controller": True}), facts())
    assert plan["errors"] == []
    assert plan["reboot"]["reboot"] is False
    assert validate_request("ubuntu2404", "nvidia_repo", "580", reboot="sometimes", is_controller=True) == [
        "nvidia_driver_reboot=sometimes (allowed: auto, never, always)"
    ]
    assert validate_request("ubuntu2404", "nvidia_repo", "580", reboot="auto") == []


# --------------------------------------------------------------------------- MOK files' content
# The facts describe the MOK files (nvidia_facts mok_paths -> driver.mok_files, probe/mok.py); the plan
# judges each variable by its own verdict.
def mok_files(tmp_path, moks):
    files, _reason = probe_mok.probe(Root(str(tmp_path)), [moks["mok_key"], moks["mok_cert"]])
    return files


def test_mok_files_of_the_wrong_kind_are_refused_with_their_variable(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/MOK.priv").write_bytes(PEM_CERT)  # swapped: the certificate given as the key
    (tmp_path / "etc/MOK.der").write_bytes(PEM_KEY)
    moks = {"mok_key": "/etc/MOK.priv", "mok_cert": "/etc/MOK.der"}
    files = mok_files(tmp_path, moks)
    assert files == {
        "/etc/MOK.priv": {
            "exists": True,
            "private_key": False,
            "certificate": True,
            "certificate_sha256": hashlib.sha256(base64.b64decode("MIIDCzCCAfOgAwIBAgIU")).hexdigest(),
        },
        "/etc/MOK.der": {
            "exists": True,
            "private_key": True,
            "certificate": False,
            "certificate_sha256": None,
        },
    }
    errors = dp.decide(req({"branch": "580", **moks}), facts(mok_files=files))["errors"]
    assert errors == [
        "nvidia_driver_mok_key: '/etc/MOK.priv' is not a private key (PEM \"-----BEGIN PRIVATE KEY-----\")",
        "nvidia_driver_mok_cert: '/etc/MOK.der' is not an X.509 certificate (PEM or DER)",
    ]
    (tmp_path / "etc/MOK.priv").write_bytes(PEM_KEY)
    (tmp_path / "etc/MOK.der").write_bytes(b"\x30\x82\x03\x0b")
    files = mok_files(tmp_path, moks)
    assert files["/etc/MOK.priv"]["private_key"] is True
    assert files["/etc/MOK.der"]["certificate"] is True
    assert dp.decide(req({"branch": "580", **moks}), facts(mok_files=files))["errors"] == []


def test_one_file_given_as_both_key_and_certificate_is_refused_as_the_key(tmp_path):
    """Found in the Secure Boot guest (molecule driver-vm-sb): with the certificate's path as
    nvidia_driver_mok_key too, the certificate's verdict (valid) replaced the key's, and the plan passed."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/MOK.der").write_bytes(b"\x30\x82\x03\x0b")
    moks = {"mok_key": "/etc/MOK.der", "mok_cert": "/etc/MOK.der"}
    files = mok_files(tmp_path, moks)
    assert files["/etc/MOK.der"]["private_key"] is False and files["/etc/MOK.der"]["certificate"] is True
    errors = dp.decide(req({"branch": "580", **moks}), facts(mok_files=files))["errors"]
    assert errors == [
        "nvidia_driver_mok_key: '/etc/MOK.der' is not a private key (PEM \"-----BEGIN PRIVATE KEY-----\")"
    ]


def test_a_missing_mok_file_is_not_judged_for_its_content(tmp_path):
    files = mok_files(tmp_path, {"mok_key": "/nope.priv", "mok_cert": ""})
    assert files == {
        "/nope.priv": {"exists": False, "private_key": None, "certificate": None, "certificate_sha256": None}
    }
    errors = dp.decide(req({"branch": "580", "mok_key": "/nope.priv"}), facts(mok_files=files))["errors"]
    assert errors == [
        "nvidia_driver_mok_key: '/nope.priv' does not exist on the host; give the path of an existing file",
        "nvidia_driver_mok_key and nvidia_driver_mok_cert: give both (private key and DER/PEM certificate) "
        "or neither",
    ]


# --------------------------------------------------------------------------- the kernel guard
def kernels_facts(os_key="ubuntu2404", next_boot=NEWER, has_module=False, **kw):
    listed = [kernel(RUNNING, "dkms"), kernel("6.8.0-50-generic"), kernel(NEWER, headers=False)]
    next_entry = {"kernel": next_boot, "has_module": has_module, "running": next_boot == RUNNING}
    return facts(os_key, loaded="580.95.05", kernels=listed, next_boot=next_entry, **kw)


def test_dkms_kernels_to_build_headers_missing_and_the_next_boot():
    plan = dp.decide(req({"branch": "580"}), kernels_facts())
    assert plan["kernel_build"] == "dkms"
    guard = kernel_guard(plan, kernels_facts())
    assert guard == {
        "build": ["6.8.0-50-generic"],
        "headers_missing": [NEWER],
        "header_packages": [f"linux-headers-{NEWER}"],
        "next_boot": NEWER,
        "next_boot_ok": False,
        "message": f"next boot kernel {NEWER} has no NVIDIA module: its headers are missing "
        f"(install linux-headers-{NEWER})",
    }
    built = kernel_guard(plan, kernels_facts(next_boot="6.8.0-50-generic"))
    assert built["message"] == "next boot kernel 6.8.0-50-generic has no NVIDIA module: DKMS has not built it"
    ok = kernel_guard(plan, kernels_facts(next_boot=RUNNING, has_module=True))
    assert (ok["next_boot_ok"], ok["message"]) == (True, "")


def test_the_plan_installs_the_headers_of_every_kernel_without_a_module():
    plan = dp.decide(req({"branch": "580"}), kernels_facts())
    assert plan["header_packages"] == [f"linux-headers-{RUNNING}", f"linux-headers-{NEWER}"]
    rhel = dp.decide(req({"branch": "580"}), kernels_facts("rhel9"))
    assert rhel["header_packages"] == [
        f"kernel-devel-{RUNNING}",
        f"kernel-headers-{RUNNING}",
        f"kernel-devel-{NEWER}",
    ]
    assert kernel_guard(rhel, kernels_facts("rhel9"))["message"].endswith(f"(install kernel-devel-{NEWER})")


def test_precompiled_and_userspace_only_plans_build_nothing():
    precompiled = dp.decide(req({"branch": "580", "source": "distro"}), kernels_facts())
    assert precompiled["kernel_build"] == "precompiled"
    assert precompiled["header_packages"] == []
    guard = kernel_guard(precompiled, kernels_facts())
    assert (guard["build"], guard["headers_missing"], guard["header_packages"]) == ([], [], [])
    assert guard["next_boot_ok"] is False
    assert guard["message"] == (
        f"next boot kernel {NEWER} has no NVIDIA module: no precompiled module package for it "
        f"(install linux-modules-nvidia-580-server-open-{NEWER})"
    )
    container = kernels_facts()
    container["host"]["container"] = "docker"
    userspace = dp.decide(req({"branch": "580"}), container)
    assert userspace["build_kernel_module"] is False
    assert userspace["header_packages"] == []
    assert kernel_guard(userspace, container)["next_boot_ok"] is True
    assert kernel_guard({"build_kernel_module": True, "kernel_build": "dkms"}, facts()) == {
        "build": [],
        "headers_missing": [],
        "header_packages": [],
        "next_boot": None,
        "next_boot_ok": True,
        "message": "",
    }


@pytest.mark.parametrize(
    "host",
    [{"container": "docker"}, {"driver_managed_externally": True, "driver_managed_externally_reason": "x"}],
)
def test_the_controller_that_is_a_container_or_host_managed_is_not_refused(host):
    """The role never reboots a container or a host-managed driver, so auto there refuses nothing."""
    base = facts()
    base["host"] = {**base["host"], **host}
    plan = dp.decide(req({"branch": "580", "reboot": "auto", "is_controller": True}), base)
    assert CONTROLLER.format("auto") not in plan["errors"]


# --------------------------------------------------------------------------- initramfs older than its files
def _image(release, stale, older_than="/etc/modprobe.d/blacklist-nouveau-gpufleet.conf"):
    k = kernel(release)
    path = f"/boot/initrd.img-{release}" if stale is not None else None
    k["initramfs"] = {"path": path, "stale": bool(stale), "older_than": older_than if stale else None}
    return k


def _plan(run=True, os_key="ubuntu2404"):
    plan = dp.decide(req({"branch": "580"}), facts(os_key=os_key))
    plan["initramfs"]["run"] = run
    return plan


def test_initramfs_the_package_trigger_rebuilt_after_the_files_nothing_to_do():
    out = initramfs_rebuild(_plan(), facts(kernels=[_image(RUNNING, False)]))
    assert out["commands"] == []
    assert out["current"] == [RUNNING]
    assert "newer than the files" in out["reason"]


def test_initramfs_only_the_images_older_than_the_files_one_command_each():
    kernels = [_image(RUNNING, True), _image(NEWER, False), _image("6.8.0-52-generic", None)]
    out = initramfs_rebuild(_plan(), facts(kernels=kernels))
    assert out["commands"] == [["update-initramfs", "-u", "-k", RUNNING]]
    assert out["kernels"] == [RUNNING]
    assert out["current"] == [NEWER]
    assert out["reason"] == f"older than /etc/modprobe.d/blacklist-nouveau-gpufleet.conf: {RUNNING}"


def test_initramfs_rhel_uses_dracut_per_kernel():
    kernels = [_image("5.14.0-503.el9.x86_64", True, "/etc/dracut.conf.d/gpufleet-omit-nouveau.conf")]
    plan = dp.decide(req({"branch": "580"}), facts(os_key="rhel9"))
    out = initramfs_rebuild(plan, facts(os_key="rhel9", kernels=kernels))
    assert out["commands"] == [["dracut", "--force", "--kver", "5.14.0-503.el9.x86_64"]]


def test_initramfs_check_mode_lists_every_image_and_facts_without_the_field_rebuild_all():
    kernels = [_image(RUNNING, False), _image(NEWER, False)]
    out = initramfs_rebuild(_plan(), facts(kernels=kernels), check_mode=True)
    assert out["kernels"] == [RUNNING, NEWER]
    out = initramfs_rebuild(_plan(), facts(kernels=[kernel(RUNNING)]))
    assert out["commands"] == [["update-initramfs", "-u", "-k", "all"]]
    assert "every image is rebuilt" in out["reason"]


def test_initramfs_a_container_rebuilds_nothing_and_the_phase_is_the_plan_function():
    out = initramfs_rebuild(_plan(run=False), facts(kernels=[_image(RUNNING, True)]))
    assert (out["commands"], out["kernels"]) == ([], [])
    kernels = [_image(RUNNING, True)]
    phase = roles.driver_phase("initramfs", variables("nvidia_driver"), _plan(), facts(kernels=kernels))
    assert phase["initramfs"] == initramfs_rebuild(_plan(), facts(kernels=kernels))
