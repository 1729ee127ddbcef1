"""The molecule driver-vm* scenarios: every guest is of one Debian release, its dist is that release's, and
the branch its group_vars give the role is the one the planner knows Debian's non-free archive has."""

import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver_packages as kb_packages

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted(p.parent for p in (ROOT / "molecule").glob("driver-vm*/molecule.yml"))
RELEASES = {"debian12": "bookworm", "debian13": "trixie"}


def _make_var(name):
    text = (ROOT / "Makefile").read_text()
    return re.search(rf"^{name} \?= (.*)$", text, re.M).group(1).split()


def _group_vars(scenario):
    conf = yaml.safe_load((scenario / "molecule.yml").read_text())
    links = conf["provisioner"]["inventory"]["links"]
    return scenario / links["group_vars"]


def test_every_vm_scenario_is_run_by_a_make_target():
    names = {s.name for s in SCENARIOS}
    assert names == set(_make_var("VM_TEST_SCENARIOS") + _make_var("VM_SCENARIOS"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_each_guest_is_of_one_release_and_boots_its_dist(scenario):
    conf = yaml.safe_load((scenario / "molecule.yml").read_text())
    for platform in conf["platforms"]:
        releases = [g for g in platform["groups"] if g in RELEASES]
        assert "driver_vm" in platform["groups"], platform
        assert len(releases) == 1, platform
        assert platform.get("dist", "bookworm") == RELEASES[releases[0]], platform
        assert (_group_vars(scenario) / f"{releases[0]}.yml").is_file(), (scenario.name, releases[0])


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_the_release_branch_is_the_planners(release):
    data = yaml.safe_load((ROOT / "molecule" / "driver-vm" / "group_vars" / f"{release}.yml").read_text())
    assert data["nvidia_driver_branch"] == str(kb_packages.DEBIAN_ARCHIVE_BRANCH[release])


def test_no_branch_in_the_shared_guest_vars():
    """The branch is the release file's alone: driver_vm and the release groups are of the same depth, so
    Ansible would pick between two branches by the groups' names."""
    data = yaml.safe_load((ROOT / "molecule" / "driver-vm" / "group_vars" / "driver_vm.yml").read_text())
    assert "nvidia_driver_branch" not in data
