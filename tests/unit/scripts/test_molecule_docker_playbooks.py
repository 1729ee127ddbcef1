"""The shared molecule config: the docker scenarios' create/destroy (.config/molecule/docker-*.yml), facts.

They replace molecule-plugins' playbooks and read only the platform keys our scenarios use: a key added to a
platform that the create playbook does not read would be dropped without a word, so every key must be read
(or be one molecule itself consumes). The create playbook puts each platform over its shared keys (__shared),
so a scenario's platform names only what differs.
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


def _create_reads():
    text = (SHARED / "docker-create.yml").read_text()
    return set(re.findall(r"item\.(\w+)", text)) | set(re.findall(r"attribute='(\w+)'", text))


def test_every_platform_key_of_a_docker_scenario_is_read_by_create():
    read = _create_reads()
    scenarios = dict(_docker_scenarios())
    assert {"smoke", "default", "redist", "repo", "audit"} <= set(scenarios)
    for name, platforms in scenarios.items():
        for platform in platforms:
            unread = set(platform) - read - MOLECULE_KEYS
            assert not unread, f"molecule/{name}: {sorted(unread)} not read by docker-create.yml"


def test_create_puts_every_platform_over_the_shared_keys_and_reads_them_all():
    play = _config(SHARED / "docker-create.yml")[0]
    shared = play["vars"]["__shared"]
    assert set(shared) <= _create_reads(), sorted(set(shared) - _create_reads())
    # systemd as PID 1 without --privileged, on the lab's internal network unless a platform says otherwise
    assert (shared["command"], shared["privileged"]) == ("/lib/systemd/systemd", False)
    assert shared["docker_networks"] == [{"name": "gpufleet-lab", "internal": True}]
    assert "molecule_yml.platforms" in play["vars"]["__platforms"]
    assert [t["loop"] for t in play["tasks"]][1] == "{{ __platforms }}"


def test_inventory_variables_are_linked_files_not_inline():
    """molecule writes inline group_vars/host_vars only where no directory is linked: the base links
    .config/molecule/group_vars, so inline ones in a scenario would be dropped without a word."""
    base = _config(SHARED / "config.yml")["provisioner"]["inventory"]
    assert set(base) == {"links"}, base
    assert (ROOT / "molecule" / "smoke" / base["links"]["group_vars"]).resolve() == SHARED / "group_vars"
    for path in sorted((ROOT / "molecule").glob("*/molecule.yml")):
        inventory = (_config(path).get("provisioner") or {}).get("inventory") or {}
        assert not {"group_vars", "host_vars", "hosts"} & set(inventory), path
        for link in (inventory.get("links") or {}).values():
            assert (path.parent / link).is_dir(), (path, link)
        # a scenario with a group_vars/ of its own and hosts in lab still gives them the base's lab.yml
        own = (inventory.get("links") or {}).get("group_vars")
        platforms = _config(path).get("platforms") or []
        if own and any("lab" in (p.get("groups") or []) for p in platforms):
            lab = path.parent / own / "lab"
            files = sorted(lab.glob("*.yml")) if lab.is_dir() else [lab.with_suffix(".yml")]
            assert SHARED / "group_vars" / "lab.yml" in [f.resolve() for f in files], path


def test_destroy_removes_every_platform_and_the_fact_cache_and_leaves_the_networks():
    tasks = _config(SHARED / "docker-destroy.yml")[0]["tasks"]
    containers = [
        t["community.docker.docker_container"] for t in tasks if "community.docker.docker_container" in t
    ]
    assert [c["state"] for c in containers] == ["absent"]
    assert tasks[0]["loop"] == "{{ molecule_yml.platforms }}"
    files = [t["ansible.builtin.file"] for t in tasks if "ansible.builtin.file" in t]
    assert files == [{"path": "{{ molecule_ephemeral_directory }}/facts", "state": "absent"}]
    assert "docker_network" not in (SHARED / "docker-destroy.yml").read_text()


# What the roles and playbooks may read of the gathered facts, which molecule caches for a whole scenario
# (.config/molecule/config.yml): things a converge, a reboot or a package install does not change.
STATIC_FACTS = {"distribution", "distribution_version", "distribution_major_version", "machine", "os_family"}


def test_the_scenario_fact_cache_is_molecules_own_and_destroy_clears_it():
    env = _config(SHARED / "config.yml")["provisioner"]["env"]
    assert env["ANSIBLE_CACHE_PLUGIN"] == "jsonfile"
    assert env["ANSIBLE_CACHE_PLUGIN_CONNECTION"] == "${MOLECULE_EPHEMERAL_DIRECTORY}/facts"
    for destroy in (ROOT / "molecule/driver-vm/destroy.yml", ROOT / "molecule/gpu/destroy.yml"):
        assert "{{ molecule_ephemeral_directory }}/facts" in destroy.read_text(), destroy


def test_roles_and_playbooks_read_only_static_gathered_facts():
    read = {}
    for path in [
        *ROOT.glob("roles/*/tasks/*.yml"),
        *ROOT.glob("roles/*/vars/*.yml"),
        *ROOT.glob("playbooks/*.yml"),
    ]:
        for key in re.findall(r"ansible_facts\[['\"](\w+)['\"]\]|ansible_facts\.(\w+)", path.read_text()):
            name = key[0] or key[1]
            if name != "nvidia":  # nvidia_facts' own, set fresh by the task that reads it
                read.setdefault(name, []).append(path.name)
    assert read, "no gathered fact read at all: the pattern is wrong"
    assert set(read) <= STATIC_FACTS, {k: v for k, v in read.items() if k not in STATIC_FACTS}


def test_the_default_scenario_sets_no_role_variable_but_the_sites_mirror():
    """Issue 36: molecule default installs with the roles' defaults only (no source, version or component
    variable); the lab's repository is given as a site gives its mirror of NVIDIA's repository."""
    group_vars = ROOT / "molecule" / "default" / "group_vars" / "lab"
    names = {name for path in group_vars.glob("*.yml") for name in _config(path)}
    roles = {n for n in names if n.startswith(("cuda_toolkit_", "cudnn_", "nvidia_driver_"))}
    assert roles == {
        "cuda_toolkit_repo_base_url",
        "cuda_toolkit_repo_key_fingerprint",
        "cudnn_repo_base_url",
        "cudnn_repo_key_fingerprint",
    }
    for role in ("cuda_toolkit", "cudnn"):
        defaults = _config(ROOT / "roles" / role / "defaults" / "main.yml")
        assert defaults[f"{role}_source"] == "nvidia_repo"
