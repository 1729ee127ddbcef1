"""The molecule scenarios that install the driver (molecule/driver, driver-vm*) run on containers and VM
guests without a GPU: each guest's group_vars must ask for the driver anyway
(nvidia_driver_install_without_gpu: true, issue 37), or the role plans nothing there, as on a login node,
and the scenario tests nothing. Read from the scenarios' own files: molecule itself needs the lab."""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted(
    p.parent for p in (ROOT / "molecule").glob("*/molecule.yml") if p.parent.name.startswith("driver")
)


def guest_vars(scenario, groups):
    """The variables the inventory's group_vars give a guest of ``groups`` (all.yml, then its groups)."""
    conf = yaml.safe_load((scenario / "molecule.yml").read_text())
    folder = scenario / conf["provisioner"]["inventory"]["links"]["group_vars"]
    out = {}
    for group in ["all", *groups]:
        path = folder / f"{group}.yml"
        if path.is_file():
            out.update(yaml.safe_load(path.read_text()) or {})
    return out


def test_the_driver_scenarios_are_found():
    assert {"driver", "driver-vm", "driver-vm-debian13", "driver-vm-kernel"} <= {s.name for s in SCENARIOS}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_every_gpu_less_guest_asks_for_the_driver_anyway(scenario):
    conf = yaml.safe_load((scenario / "molecule.yml").read_text())
    for platform in conf["platforms"]:
        found = guest_vars(scenario, platform.get("groups") or [])
        assert found.get("nvidia_driver_install_without_gpu") is True, (scenario.name, platform["name"])
