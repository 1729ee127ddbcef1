"""The docker scenarios' own create/destroy (.config/molecule/docker-{create,destroy}.yml).

They replace molecule-plugins' playbooks and read only the platform keys our scenarios use: a key added to a
platform that the create playbook does not read would be dropped without a word, so every key must be read
(or be one molecule itself consumes).
"""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
SHARED = ROOT / ".config" / "molecule"
# keys molecule reads itself (inventory groups, the image build it skips for prebuilt images) or that say
# what the create playbook does anyway (override_command: the platform's command is always used)
MOLECULE_KEYS = {"name", "groups", "pre_build_image", "override_command"}


def _config(path):
    return yaml.safe_load(path.read_text()) or {}


def _docker_scenarios():
    base = _config(SHARED / "config.yml")
    for path in sorted((ROOT / "molecule").glob("*/molecule.yml")):
        config = _config(path)
        driver = (config.get("driver") or base["driver"])["name"]
        playbooks = (config.get("provisioner") or {}).get("playbooks") or {}
        if driver == "docker" and "create" not in playbooks:
            yield path.parent.name, config.get("platforms") or base["platforms"]


def test_the_shared_config_names_the_lean_playbooks_and_they_exist():
    playbooks = _config(SHARED / "config.yml")["provisioner"]["playbooks"]
    scenario_dir = ROOT / "molecule" / "smoke"
    for action in ("create", "destroy"):
        assert (scenario_dir / playbooks[action]).resolve() == SHARED / f"docker-{action}.yml"


def test_every_platform_key_of_a_docker_scenario_is_read_by_create():
    text = (SHARED / "docker-create.yml").read_text()
    read = set(re.findall(r"item\.(\w+)", text)) | set(re.findall(r"attribute='(\w+)'", text))
    scenarios = dict(_docker_scenarios())
    assert {"smoke", "default", "repo", "audit"} <= set(scenarios)
    for name, platforms in scenarios.items():
        for platform in platforms:
            unread = set(platform) - read - MOLECULE_KEYS
            assert not unread, f"molecule/{name}: {sorted(unread)} not read by docker-create.yml"


def test_destroy_removes_every_platform_and_leaves_the_networks():
    plays = _config(SHARED / "docker-destroy.yml")
    tasks = plays[0]["tasks"]
    assert [t["community.docker.docker_container"]["state"] for t in tasks] == ["absent"]
    assert tasks[0]["loop"] == "{{ molecule_yml.platforms }}"
    assert "docker_network" not in (SHARED / "docker-destroy.yml").read_text()
