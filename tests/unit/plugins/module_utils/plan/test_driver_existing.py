"""What is installed (plan/driver/existing.py): host-managed, runfile, other repositories, transitions."""

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.existing import (
    accepted_origins,
    driver_origins,
    host_managed_mismatch,
    runfile_conflict,
    runfile_owns_tree,
    transition,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.packages import build_plan


def test_host_managed_mismatch_570_on_h200_is_refused_clearly():
    errors = host_managed_mismatch("570", "auto", None, "580.159.04", "open")
    assert len(errors) == 1
    assert "nvidia_driver_branch: '570'" in errors[0]
    assert "580.159.04" in errors[0]
    assert "host-managed" in errors[0]
    assert host_managed_mismatch("580", "auto", None, "580.159.04", "open") == []
    assert host_managed_mismatch("R580", "open", "580.159.04", "580.159.04", "open") == []
    assert "proprietary" in host_managed_mismatch("580", "proprietary", None, "580.159.04", "open")[0]
    assert (
        "nvidia_driver_version" in host_managed_mismatch("580", "auto", "580.95.05", "580.159.04", "open")[0]
    )
    assert "no driver is loaded" in host_managed_mismatch("580", "auto", None, None, None)[0]


def test_runfile_conflict():
    markers = ["/usr/bin/nvidia-uninstall"]
    conflict, msg = runfile_conflict(markers, nvml_owned_by_package=False, replace_runfile=False)
    assert conflict is True
    assert "nvidia_driver_replace_runfile: true" in msg
    conflict, msg = runfile_conflict(markers, nvml_owned_by_package=False, replace_runfile=True)
    assert conflict is False
    assert "nvidia-uninstall" in msg
    assert runfile_conflict([], False, False) == (False, "")
    assert runfile_conflict(markers, True, False) == (False, "")


def test_transition_fresh_install():
    plan = build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    assert transition(plan, {}, [], [])["kind"] == "install"


def test_transition_same_driver_is_none():
    plan = build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    t = transition(plan, {"nvidia-open-580": "580.95.05-1"}, ["580"], ["nvidia-open-580"])
    assert t == {
        "kind": "none",
        "unhold": [],
        "remove": [],
        "from_branches": ["580"],
        "switch_packages": [],
        "switch_argv": [],
    }


def test_transition_branch_upgrade_570_to_580_releases_holds():
    plan = build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    t = transition(plan, {"nvidia-open-570": "570.172.08-1"}, ["570"], ["nvidia-open-570"])
    assert t["kind"] == "branch_change"
    assert t["unhold"] == ["nvidia-open-570"]


def test_transition_flavor_switch_proprietary_to_open_is_the_in_place_switch():
    plan = build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    t = transition(plan, {"cuda-drivers-580": "580.95.05-1"}, ["580"], ["cuda-drivers-580"])
    assert t["kind"] == "flavor_switch"
    assert t["remove"] == []  # apt install --autoremove --purge replaces it
    assert t["switch_packages"] == ["nvidia-open-580"]
    assert t["unhold"] == ["cuda-drivers-580"]


def test_transition_source_change_removes_the_replaced_packages_and_releases_every_hold():
    plan = build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    installed = ["nvidia-driver-580", "libnvidia-compute-580"]
    t = transition(plan, installed, ["580"], ["nvidia-driver-580"], replaced=installed)
    assert t == {
        "kind": "source_change",
        "unhold": ["nvidia-driver-580"],
        "remove": installed,
        "from_branches": ["580"],
        "switch_packages": [],
        "switch_argv": [],
    }
    assert transition(plan, installed, ["580"], [])["kind"] == "none"


def test_accepted_origins_per_source_and_family():
    assert accepted_origins("nvidia_repo", "debian") == ("nvidia_repo",)
    assert accepted_origins("distro", "ubuntu") == ("ubuntu_archive",)
    assert accepted_origins("distro", "debian") == ("debian_archive",)
    assert accepted_origins("distro", "rhel") == ()


def origin(repository, candidates=None):
    return {"repository": repository, "candidates": candidates or [repository], "evidence": "test"}


def test_only_the_driver_itself_is_judged():
    packages = [
        {
            "name": "nvidia-driver-580",
            "version": "580.95.05-0ubuntu0.24.04.2",
            "origin": origin("ubuntu_archive"),
        },
        {"name": "nvidia-container-toolkit", "version": "1.17.8-1", "origin": origin("nvidia_repo")},
        {"name": "datacenter-gpu-manager-4-core", "version": "1:4.4.1-1", "origin": origin("nvidia_repo")},
        {"name": "nvidia-fabricmanager-580", "version": "580.95.05-1", "origin": origin("nvidia_repo")},
        {
            "name": "libcuda1",
            "version": "535.261.03-1",
            "origin": origin(None, ["nvidia_repo", "debian_archive"]),
        },
    ]
    foreign, undecided = driver_origins(packages, "distro", "ubuntu")
    assert (foreign, [p["name"] for p in undecided]) == ({}, ["libcuda1"])
    foreign, undecided = driver_origins(packages, "nvidia_repo", "ubuntu")
    assert [p["name"] for p in foreign["ubuntu_archive"]] == ["nvidia-driver-580"]
    assert undecided == [packages[-1]]
    # facts without origins (older facts, synthetic tests) judge nothing
    assert driver_origins([{"name": "nvidia-open-580", "version": "580.95.05-1"}], "distro", "ubuntu") == (
        {},
        [],
    )


def test_runfile_conflict_names_its_version_and_dkms_tree():
    conflict, msg = runfile_conflict(
        ["/usr/bin/nvidia-uninstall"], False, False, version="570.86.10", trees=["/usr/src/nvidia-570.86.10"]
    )
    assert conflict is True
    assert "(driver 570.86.10; /usr/bin/nvidia-uninstall, DKMS tree /usr/src/nvidia-570.86.10)" in msg


def test_runfile_owns_only_its_own_dkms_tree():
    runfile = {"uninstaller": "/usr/bin/nvidia-uninstall", "version": "570.86.10"}
    tree = {"module": "nvidia", "version": "570.86.10", "source_dir": "/usr/src/nvidia-570.86.10"}
    assert runfile_owns_tree(tree, runfile) is True
    assert runfile_owns_tree(dict(tree, version="575.57.08"), runfile) is False
    assert runfile_owns_tree(dict(tree, module="nvidia-open"), runfile) is False
    assert runfile_owns_tree(tree, dict(runfile, uninstaller=None)) is False
    assert runfile_owns_tree(tree, dict(runfile, version=None)) is True  # log gone: the likely owner
