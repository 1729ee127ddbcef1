"""The nvidia_driver role's plan (plan/roles.py ``plan("nvidia_driver", ...)``, what the nvidia_plan action
runs on the controller): the decision from synthetic facts, compat in the role's words, facts gathered.

The facts dicts are what ``ansible_facts.nvidia`` holds (docs/facts.md); the H200 one copies the project's
host (open 580.159.04 loaded, a container whose driver sits read-only under /usr/local/nvidia).
"""

import copy
import hashlib

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.existing import installed_branches
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import REQUEST_KEYS
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import host_state
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import mok as probe_mok
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather

from tests.data.builders import build_ld_cache
from tests.data.roles import driver_request, variables

H200_VERSION = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
    "GCC version:  gcc version 15.3.0 (GCC) \n"
)
SB_GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c"
UBUNTU_2404 = {"distribution": "Ubuntu", "version": "24.04", "key": "ubuntu2404"}
DEBIAN_12 = {"distribution": "Debian", "version": "12", "key": "debian12"}
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
DER_CERT = b"\x30\x82\x03\x0b\x30\x82\x01\xf3"


def facts_for(**kw):
    """Facts of a bare-metal Ubuntu 24.04 host without any driver, updated by host_*/driver_* keywords."""
    facts = {
        "schema_version": 1,
        "root": "/",
        "host": {
            "os": dict(UBUNTU_2404),
            "kernel_release": "6.8.0-45-generic",
            "container": "none",
            "efi": False,
            "driver_managed_externally": None,
            "driver_managed_externally_reason": "",
        },
        "driver": {
            "loaded_version": None,
            "loaded_kernel_module": None,
            "module_for_running_kernel": {"version": None, "kernel_module": None},
            "packages": [],
            "runfile_markers": [],
            "secure_boot": "unknown",
            "nouveau_loaded": False,
            "install_method": "none",
        },
        "gpus": [],
        "gpu_count": 0,
        "nvswitch_count": 0,
    }
    for key, value in kw.items():
        section, _, field = key.partition("_")
        if section in ("host", "driver"):
            facts[section][field] = value
        else:
            facts[key] = value
    return facts


def h200_facts():
    return facts_for(
        host_kernel_release="6.18.44-fc-v595",
        host_container="docker",
        host_driver_managed_externally=True,
        host_driver_managed_externally_reason=(
            "libnvidia-ml.so.1 at /usr/local/nvidia/lib64/libnvidia-ml.so.1 (under /usr/local/nvidia "
            "(container runtime / host driver mount), inside a docker container, no package owns it)"
        ),
        driver_loaded_version="580.159.04",
        driver_loaded_kernel_module="open",
        driver_install_method="host",
        gpus=[{"pci_device_id": "0x2335", "device_id": "0x2335", "name": "NVIDIA H200"}],
        gpu_count=1,
    )


def request(**kw):
    """plan/driver's full request (the role's defaults), branch 580, updated with request keys; the driver
    installed without a GPU too (facts_for's host has none: as for an image build)."""
    return driver_request({"branch": "580", "install_without_gpu": True}, **kw)


def test_h200_580_is_accepted_and_never_rebooted():
    plan = dp.decide(request(), h200_facts())
    assert plan["errors"] == []
    assert plan["warnings"] == []
    assert plan["transition"]["kind"] == "none"
    assert plan["flavor"] == "open"
    assert plan["reboot"]["reboot"] is False
    assert "host-managed" in plan["reboot"]["reason"]
    assert plan["host_managed"] is True
    assert plan["install"] is False
    assert plan["touches_host"] is False
    assert (
        "host-managed NVIDIA driver 580.159.04 (open kernel module) matches nvidia_driver_branch 580"
        in (plan["host_managed_report"])
    )


def test_h200_570_is_refused_clearly():
    plan = dp.decide(request(branch="570"), h200_facts())
    assert len(plan["errors"]) == 1
    assert "nvidia_driver_branch: '570'" in plan["errors"][0]
    assert "580.159.04" in plan["errors"][0]
    # the report of a matching host-managed driver is not made for a refused request
    assert plan["host_managed_report"] == ""


def test_empty_debian_container_plans_userspace_only():
    facts = facts_for(host_os=dict(DEBIAN_12), host_container="docker", host_kernel_release="6.1.0-37-amd64")
    plan = dp.decide(request(source="distro", branch="535"), facts)
    assert plan["host_managed"] is False
    assert plan["errors"] == []
    assert plan["build_kernel_module"] is False
    assert plan["kernel_packages"] == []
    assert "nvidia-smi" in plan["packages"]
    assert plan["reboot"]["reboot"] is False
    assert "container" in plan["reboot"]["reason"]
    assert plan["initramfs"]["run"] is False
    assert plan["debian_source"] == {
        "needed": True,
        "uri": "http://deb.debian.org/debian",
        "suites": "bookworm bookworm-updates",
        "components": "main contrib non-free non-free-firmware",
    }


def test_bad_input_refused_before_any_change():
    moks, _reason = probe_mok.probe(Root("/nonexistent-root"), ["/x.priv", "/x.der"])
    plan = dp.decide(
        request(branch="58O", reboot="sometimes", mok_key="/x.priv", mok_cert="/x.der"),
        facts_for(driver_mok_files=moks),
    )
    text = " | ".join(plan["errors"])
    assert "nvidia_driver_branch: '58O'" in text
    assert "nvidia_driver_reboot=sometimes (allowed: auto, never, always)" in text
    assert "nvidia_driver_mok_key: '/x.priv' does not exist" in text
    assert plan["made"] is False


def test_unsupported_os_is_refused():
    facts = facts_for(host_os={"distribution": "Ubuntu", "version": "20.04", "key": None})
    assert "not supported" in dp.decide(request(), facts)["errors"][0]


@pytest.mark.parametrize(
    ("kw", "variable"),
    [
        ({"reboot": "sometimes"}, "nvidia_driver_reboot"),
        ({"kernel_module": "opne"}, "nvidia_driver_kernel_module"),
        ({"source": "runfile"}, "nvidia_driver_source"),
        ({"fabricmanager": "perhaps"}, "nvidia_driver_fabricmanager"),
        ({"build_kernel_module": "maybe"}, "nvidia_driver_build_kernel_module"),
        ({"version": "575.57.08"}, "nvidia_driver_version"),
    ],
)
def test_an_error_names_only_the_wrong_variable(kw, variable):
    errors = dp.decide(request(**kw), facts_for())["errors"]
    assert len(errors) == 1, errors
    # a value that is not allowed reads as plan/refusal.bad words it (var=value (allowed: ...)); the version
    # error says which branch it is not in
    assert errors[0].startswith(f"{variable}: " if variable == "nvidia_driver_version" else f"{variable}="), (
        errors
    )
    others = {f"nvidia_driver_{k}" for k in REQUEST_KEYS} - {variable, "nvidia_driver_branch"}
    assert not [name for name in others if name in errors[0]], errors
    if variable == "nvidia_driver_reboot":
        assert "nvidia_driver_branch" not in errors[0]
        assert "allowed: auto, never, always" in errors[0]


def test_secure_boot_with_dkms_needs_mok(tmp_path):
    facts = facts_for(host_kernel_release="6.18.44-custom", host_efi=True, driver_secure_boot="enabled")
    plan = dp.decide(request(), facts)
    assert any("Secure Boot is enabled" in e and "nvidia_driver_mok_key" in e for e in plan["errors"])
    (tmp_path / "root").mkdir()
    (tmp_path / "root/MOK.priv").write_text(PEM_KEY)
    (tmp_path / "root/MOK.der").write_bytes(DER_CERT)
    moks = {"mok_key": "/root/MOK.priv", "mok_cert": "/root/MOK.der"}
    facts["driver"]["mok_files"], _reason = probe_mok.probe(Root(str(tmp_path)), moks.values())
    plan = dp.decide(request(**moks), facts)
    assert plan["errors"] == []
    assert plan["mok_signing"] is True


def test_secure_boot_with_precompiled_ubuntu_modules_needs_no_mok():
    facts = facts_for(host_efi=True, driver_secure_boot="enabled")
    plan = dp.decide(request(source="distro"), facts)
    assert plan["errors"] == []
    assert plan["kernel_build"] == "precompiled"
    assert plan["mok_signing"] is False


def test_runfile_conflict_is_refused_unless_replacing():
    facts = facts_for(driver_runfile_markers=["/usr/bin/nvidia-uninstall"], driver_install_method="runfile")
    assert facts["host"]["driver_managed_externally"] is not True
    plan = dp.decide(request(), facts)
    assert any("nvidia_driver_replace_runfile: true" in e for e in plan["errors"])
    plan = dp.decide(request(replace_runfile=True), facts)
    assert plan["errors"] == []
    assert plan["runfile"]["message"]
    assert plan["runfile"]["remove"] is True


def test_nvswitch_turns_fabricmanager_on():
    facts = facts_for(nvswitch_count=2)
    plan = dp.decide(request(), facts)
    assert plan["fabricmanager_packages"] == ["nvidia-fabricmanager-580", "libnvidia-nscq-580"]
    assert "nvidia-fabricmanager" in [s["name"] for s in plan["services"]]
    plan = dp.decide(request(fabricmanager="false"), facts)
    assert plan["fabricmanager_packages"] == []
    plan = dp.decide(request(fabricmanager=False), facts)
    assert plan["fabricmanager_packages"] == []


# what dpkg's status said before (probe/packages.py reads it now): held ('hi') and installed ('ii') only
DPKG_PACKAGES = [
    {"name": "nvidia-open-570", "version": "570.172.08-1", "held": True},
    {"name": "nvidia-kernel-open-dkms", "version": "570.172.08-1", "held": True},
    {"name": "libnvidia-compute-570", "version": "570.172.08-1", "held": False},
]


def test_packages_holds_and_branches_from_dpkg():
    facts = facts_for(driver_packages=DPKG_PACKAGES, driver_install_method="package")
    assert host_state(facts)["held"] == ["nvidia-kernel-open-dkms", "nvidia-open-570"]
    assert installed_branches(DPKG_PACKAGES) == ["570"]
    plan = dp.decide(request(), facts)
    assert plan["transition"]["kind"] == "branch_change"
    assert plan["transition"]["unhold"] == ["nvidia-kernel-open-dkms", "nvidia-open-570"]
    assert plan["touches_host"] is True


def test_installed_module_from_modinfo():
    facts = facts_for(
        driver_module_for_running_kernel={"version": "580.95.05", "kernel_module": "open"},
        gpus=[{"pci_device_id": "0x2335", "name": "NVIDIA H200"}],
    )
    plan = dp.decide(request(), facts)
    assert plan["reboot"]["needed"] is True
    assert plan["reboot"]["reboot"] is True
    assert "no NVIDIA module is loaded" in plan["reboot"]["reason"]
    # the controller itself: auto is refused before any change (test_driver_kernels.py), never is fine
    controller = dp.decide(request(is_controller=True, reboot="never"), facts)
    assert controller["errors"] == []
    assert controller["reboot"]["reboot"] is False
    assert controller["reboot"]["reason"].endswith("reboot policy is never: reboot it yourself")


def test_rpm_fallback():
    packages = [
        {"name": "kmod-nvidia-open-dkms", "version": "580.95.05-1.el9", "held": False},
        {"name": "nvidia-driver", "version": "3:580.95.05-1.el9", "held": False},
    ]
    assert installed_branches(packages) == ["580"]


# --------------------------------------------------------------------------- the role's plan (plan/roles.py)
def role_plan(facts, context=None, **given):
    """(plan, compat) of the nvidia_driver role: its defaults with branch 580, updated with ``given`` (the
    role's variables by their names), on a host that is not the controller unless the context says so; the
    driver installed without a GPU too (facts_for's host has none)."""
    given = {"nvidia_driver_branch": "580", "nvidia_driver_install_without_gpu": True, **given}
    return roles.plan(
        "nvidia_driver",
        variables("nvidia_driver", **given),
        facts,
        context or {"is_controller": False},
    )


def plan_of(facts, **given):
    plan, compat = role_plan(facts, **given)
    assert compat["errors"] == plan["errors"]  # the compat answer mirrors the plan's refusals
    assert compat["compatible"] is (not plan["errors"])
    return plan


def test_the_plan_checks_compat_from_the_facts_gpus():
    plan, compat = role_plan(h200_facts())
    assert plan["errors"] == []
    assert plan["flavor"] == "open"
    assert compat["checked"] == ["driver"]
    assert [g["name"] for g in compat["gpus"]] == ["NVIDIA H200"]


def test_compat_recommendation_resolves_auto_for_pascal():
    facts = facts_for(gpus=[{"pci_device_id": "0x15F8", "name": "Tesla P100-PCIE-16GB"}])
    plan = plan_of(facts)
    assert plan["errors"] == []
    assert plan["flavor"] == "proprietary"
    refused = plan_of(facts, nvidia_driver_kernel_module="open")
    assert any("Pascal" in e for e in refused["errors"])


def test_compat_errors_name_the_role_variables():
    plan = plan_of(facts_for(), nvidia_driver_cuda_version="12.99")
    assert plan["errors"]
    assert plan["errors"][0].startswith("nvidia_driver_cuda_version: ")
    given = plan_of(facts_for(), nvidia_driver_gpus=[{"pci_device_id": "zz"}])
    assert given["errors"][0].startswith("nvidia_driver_gpus[0]")


def test_bad_request_is_refused_before_compat(monkeypatch):
    def boom(**_kw):
        raise AssertionError("compat must not run on a refused request")

    monkeypatch.setattr(roles.plan_compat, "check", boom)
    plan, compat = role_plan(facts_for(), nvidia_driver_reboot="sometimes")
    assert plan["errors"] == ["nvidia_driver_reboot=sometimes (allowed: auto, never, always)"]
    assert compat["errors"] == plan["errors"]
    assert compat["checked"] == []


def test_the_controller_is_the_contexts():
    """is_controller comes from the action's context (a local connection), not from a variable."""
    facts = facts_for(
        driver_module_for_running_kernel={"version": "580.95.05", "kernel_module": "open"},
        gpus=[{"pci_device_id": "0x2335", "name": "NVIDIA H200"}],
    )
    assert plan_of(facts)["errors"] == []
    refused, _compat = role_plan(facts, {"is_controller": True})
    assert refused["errors"] == [
        "nvidia_driver_reboot: 'auto' would reboot the Ansible controller itself (connection local or "
        "localhost); set nvidia_driver_reboot: never and reboot it yourself"
    ]
    fine, _compat = role_plan(facts, {"is_controller": True}, nvidia_driver_reboot="never")
    assert fine["errors"] == []
    assert fine["reboot"]["reason"].endswith("reboot policy is never: reboot it yourself")


def test_compat_check_can_be_skipped(monkeypatch):
    monkeypatch.setattr(roles.plan_compat, "check", lambda **_kw: pytest.fail("compat ran"))
    plan, compat = role_plan(facts_for(), nvidia_driver_skip_compat_check=True)
    assert plan["errors"] == []
    assert (compat["compatible"], compat["checked"]) == (True, [])


def write(root, path, data=""):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        target.write_bytes(data)
    else:
        target.write_text(data)


@pytest.fixture
def h200_tree(tmp_path):
    write(tmp_path, "/etc/os-release", 'ID=ubuntu\nVERSION_ID="24.04"\n')
    write(tmp_path, "/proc/driver/nvidia/version", H200_VERSION)
    write(tmp_path, "/sys/module/nvidia/version", "580.159.04\n")
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.18.44-fc-v595\n")
    write(tmp_path, "/.dockerenv")
    write(tmp_path, "/usr/local/nvidia/lib64/libnvidia-ml.so.1")
    entries = [("libnvidia-ml.so.1", "/usr/local/nvidia/lib64/libnvidia-ml.so.1", 0x0303)]
    write(tmp_path, "/etc/ld.so.cache", build_ld_cache(entries))
    dev = tmp_path / "sys/bus/pci/devices/0000:00:06.0"
    dev.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("device", "0x2335"), ("class", "0x030200")):
        (dev / name).write_text(value + "\n")
    return tmp_path


def test_h200_facts_are_host_managed(h200_tree):
    """What the plan reads of the H200 tree (the former module-level probe's assertions, on the facts)."""
    facts = gather(str(h200_tree), ["gpu", "driver"])
    assert facts["driver"]["loaded_version"] == "580.159.04"
    assert facts["driver"]["loaded_kernel_module"] == "open"
    assert facts["host"]["container"] == "docker"
    assert facts["host"]["driver_managed_externally"] is True
    assert facts["host"]["os"]["key"] == "ubuntu2404"
    assert facts["host"]["efi"] is False
    assert facts["driver"]["secure_boot"] == "unknown"
    assert facts["gpu_count"] == 1
    assert facts["nvswitch_count"] == 0
    state = host_state(facts)
    assert state["host_managed"] is True
    assert state["owned_by_package"] is False
    assert state["secure_boot"] is False


def gathered(root, **given):
    """The facts nvidia_facts gathers for the role's plan (facts_wanted: its subsets and MOK paths)."""
    wanted = roles.facts_wanted("nvidia_driver", variables("nvidia_driver", **given))
    return gather(str(root), wanted["gather_subset"], mok_paths=wanted["mok_paths"])


def test_the_facts_wanted_are_gathered_and_planned_from(h200_tree):
    plan = plan_of(gathered(h200_tree))
    assert plan["errors"] == [], plan["errors"]
    assert plan["host_managed"] is True
    assert plan["container"] is True
    assert plan["loaded_version"] == "580.159.04"
    assert plan["flavor"] == "open"


def test_the_facts_and_variables_given_are_not_changed():
    facts, given = h200_facts(), variables("nvidia_driver", nvidia_driver_branch="580")
    before = copy.deepcopy((facts, given))
    roles.plan("nvidia_driver", given, facts, {"is_controller": False})
    assert (facts, given) == before


def test_secure_boot_refuses_a_certificate_that_shim_does_not_hold(tmp_path):
    """Checked in the plan, before any change: the role used to find an unenrolled certificate with mokutil
    only after it had written the package sources (molecule driver-vm-sb)."""
    cert = b"\x30\x82\x00\x04" + b"cert"  # a DER SEQUENCE of 4 bytes: what the plan hashes
    (tmp_path / "root").mkdir()
    (tmp_path / "root/MOK.priv").write_text(PEM_KEY)
    (tmp_path / "root/MOK.der").write_bytes(cert + b"trailing bytes are not the certificate")
    moks = {"mok_key": "/root/MOK.priv", "mok_cert": "/root/MOK.der"}
    found, _reason = probe_mok.probe(Root(str(tmp_path)), moks.values())
    assert found["/root/MOK.der"]["certificate_sha256"] == hashlib.sha256(cert).hexdigest()

    def plan(enrolled, files=found):
        facts = facts_for(
            host_efi=True, driver_secure_boot="enabled", driver_mok_enrolled=enrolled, driver_mok_files=files
        )
        return dp.decide(request(**moks), facts)

    assert plan([hashlib.sha256(b"other").hexdigest()])["errors"] == [
        "nvidia_driver_mok_cert: '/root/MOK.der' is not enrolled (shim's MokListRT holds 1 other "
        "certificate(s)): run 'mokutil --import /root/MOK.der', reboot and confirm the enrollment in "
        "MokManager, then run again"
    ]
    enrolled = [hashlib.sha256(b"other").hexdigest(), found["/root/MOK.der"]["certificate_sha256"]]
    assert plan(enrolled)["errors"] == []
    unsure = plan(None)  # the facts could not read the list: not judged, but said
    assert unsure["errors"] == []
    assert any("cannot tell whether '/root/MOK.der' is enrolled" in w for w in unsure["warnings"])
    # facts gathered without mok_paths (no driver.mok_files): the certificate is not judged
    assert plan([hashlib.sha256(b"other").hexdigest()], files={})["errors"] == []


def mok_tree(tmp_path, key, cert):
    write(tmp_path, "/etc/os-release", 'ID=ubuntu\nVERSION_ID="24.04"\n')
    write(tmp_path, "/etc/MOK.priv", key)
    write(tmp_path, "/etc/MOK.der", cert)
    return {"nvidia_driver_mok_key": "/etc/MOK.priv", "nvidia_driver_mok_cert": "/etc/MOK.der"}


def test_the_mok_files_are_gathered_as_the_facts_mok_paths(tmp_path):
    """The plan reads no MOK file itself: the facts it wants list its MOK paths as mok_paths."""
    moks = mok_tree(tmp_path, DER_CERT, PEM_KEY)  # swapped
    assert roles.facts_wanted("nvidia_driver", variables("nvidia_driver", **moks))["mok_paths"] == [
        "/etc/MOK.priv",
        "/etc/MOK.der",
    ]
    plan = plan_of(gathered(tmp_path, **moks), nvidia_driver_skip_compat_check=True, **moks)
    assert plan["errors"] == [
        "nvidia_driver_mok_key: '/etc/MOK.priv' is not a private key (PEM \"-----BEGIN PRIVATE KEY-----\")",
        "nvidia_driver_mok_cert: '/etc/MOK.der' is not an X.509 certificate (PEM or DER)",
    ]
    moks["nvidia_driver_mok_key"] = "/nope"
    missing = plan_of(gathered(tmp_path, **moks), nvidia_driver_skip_compat_check=True, **moks)
    assert missing["errors"][0] == (
        "nvidia_driver_mok_key: '/nope' does not exist on the host; give the path of an existing file"
    )


def test_given_facts_without_mok_files_leave_the_mok_paths_unjudged(tmp_path):
    moks = mok_tree(tmp_path, DER_CERT, PEM_KEY)
    assert plan_of(facts_for(), nvidia_driver_skip_compat_check=True, **moks)["errors"] == []
    facts = gather(str(tmp_path), ["gpu", "driver"], mok_paths=list(moks.values()))
    assert sorted(facts["driver"]["mok_files"]) == ["/etc/MOK.der", "/etc/MOK.priv"]
    refused = plan_of(facts, nvidia_driver_skip_compat_check=True, **moks)
    assert [e.split(":")[0] for e in refused["errors"]] == ["nvidia_driver_mok_key", "nvidia_driver_mok_cert"]
