"""README.md keeps the shape molecule/journey reads (issue 37).

The journey runs README's own first-run inventory, playbook and commands, extracted at test time by
tests/readme_journey.py: a README that loses them (or changes them into something the extraction cannot read)
must fail here, not leave the journey testing nothing.
"""

import shlex
from pathlib import Path

import pytest
import yaml

from tests import readme_journey as rj

ROOT = Path(__file__).resolve().parents[3]

README = (ROOT / "README.md").read_text()
LAB = {
    "gpu_nodes": {"gpufleet-journey-gpu": {"ansible_host": "192.0.2.1"}},
    "login": {"gpufleet-journey-login": {}},
}


@pytest.fixture(scope="module")
def journey():
    return rj.journey(README)


def test_the_install_section_builds_and_installs_offline(journey):
    # (joined: the words alone, not a program these tests run; test_matrix.py tells the two apart by quotes)
    assert " ".join(journey.build.argv) == "ansible-galaxy collection build"
    assert " ".join(journey.install.argv[:4]) == "ansible-galaxy collection install --offline"
    assert journey.install.argv[-1].endswith(".tar.gz")


def test_the_first_run_has_an_inventory_of_gpu_nodes_and_login(journey):
    assert journey.inventory_name == "inventory.yml"
    assert set(rj.groups_with_hosts(journey.inventory)) == {"gpu_nodes", "login"}
    # the lab's hosts replace README's, group for group; README's vars stay
    lab = rj.lab_inventory(journey.inventory, LAB)
    assert rj.groups_with_hosts(lab) == {
        "gpu_nodes": ["gpufleet-journey-gpu"],
        "login": ["gpufleet-journey-login"],
    }
    assert lab["all"]["vars"] == journey.inventory["all"]["vars"]
    assert yaml.safe_load(yaml.safe_dump(lab)) == lab


def test_the_first_run_has_a_playbook_of_the_collections_roles_on_those_groups(journey):
    assert journey.playbook_name == "site.yml"
    roles = {role for play in journey.playbook for role in play["roles"]}
    assert roles == {"gpufleet.nvidia.nvidia_driver", "gpufleet.nvidia.cuda_toolkit", "gpufleet.nvidia.cudnn"}
    hosts = {pattern for play in journey.playbook for pattern in play["hosts"].split(":")}
    assert hosts == {"gpu_nodes", "login"}
    assert all(play.get("become") is True for play in journey.playbook)


def test_the_first_run_checks_then_runs_the_playbook(journey):
    assert [shlex.join(c.argv) for c in journey.first_run] == [
        "ansible-playbook -i inventory.yml site.yml --check --diff",
        "ansible-playbook -i inventory.yml site.yml",
    ]


def test_the_main_jobs_the_journey_runs_and_checks(journey):
    run = [c.playbook for c in journey.main_jobs if c.how == "run"]
    assert {"gpufleet.nvidia.site", "gpufleet.nvidia.preflight", "gpufleet.nvidia.audit"} <= set(run), run
    checked = [c for c in journey.main_jobs if c.how == "syntax-check"]
    assert [c.playbook for c in checked] == ["gpufleet.nvidia.driver_upgrade"]
    assert checked[0].why and checked[0].syntax_check.endswith(" --syntax-check")
    assert all(c.inventory == journey.inventory_name for c in journey.main_jobs)


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (("(`inventory.yml`)", "(inventory.yml)"), "one inventory block"),
        (("```yaml\n- name: NVIDIA driver", "```\n- name: NVIDIA driver"), "one playbook block"),
        (("## A first run", "## First steps"), "A first run"),
        (("## The main jobs", "## Jobs"), "The main jobs"),
        (("site.yml --check --diff", "site.yml --diff"), "a --check run"),
        (("gpufleet.nvidia.preflight -e", "gpufleet.nvidia.nvidia_preflight -e"), "neither runs nor"),
        (
            ("-i inventory.yml gpufleet.nvidia.audit\n", "-i hosts.yml gpufleet.nvidia.audit\n"),
            "-i inventory.yml",
        ),
        (("install --offline", "install"), "--offline"),
    ],
)
def test_a_readme_the_journey_cannot_read_fails(change, error):
    old, new = change
    assert old in README, old
    with pytest.raises(rj.JourneyError, match=error):
        rj.journey(README.replace(old, new, 1))


def test_other_groups_than_the_labs_are_refused(journey):
    with pytest.raises(rj.JourneyError, match="not the lab's"):
        rj.lab_inventory(journey.inventory, {"gpu_nodes": LAB["gpu_nodes"]})
