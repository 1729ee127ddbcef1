"""The collection as a user installs and runs it (issue 37): the built tarball alone, installed offline into
an empty collections path, then its playbooks and plugins used by their collection names.

Nothing here reads the checkout's collections: every command runs in an empty working directory with an empty
ansible.cfg, HOME in the test's own directory and ANSIBLE_COLLECTIONS_PATH the fresh install only, so a
playbook, role or plugin that the tarball lacks (or a dependency galaxy.yml does not declare) fails here. The
tarball is built as scripts/galaxy_importer.sh and tests/unit/scripts/test_collection.py build it.

Run: .venv/bin/pytest tests/integration/test_collection_install.py
"""

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
TARBALL = f"{GALAXY['namespace']}-{GALAXY['name']}-{GALAXY['version']}.tar.gz"
# playbooks/*.yml less what build_ignore keeps out of the tarball (the lab's demo)
SHIPPED_PLAYBOOKS = sorted(
    p.stem for p in (ROOT / "playbooks").glob("*.yml") if f"playbooks/{p.name}" not in GALAXY["build_ignore"]
)


class User:
    """A user's shell: an empty working directory and config, and the collections path given."""

    def __init__(self, base, collections):
        self.cwd = base / "cwd"
        self.cwd.mkdir(parents=True, exist_ok=True)
        (base / "ansible.cfg").write_text("[defaults]\n")
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("ANSIBLE_", "PYTHONPATH", "MOLECULE_"))
        }
        self.env.update(
            HOME=str(base / "home"),
            ANSIBLE_CONFIG=str(base / "ansible.cfg"),
            ANSIBLE_COLLECTIONS_PATH=str(collections),
            ANSIBLE_LOCAL_TEMP=str(base / "tmp"),
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORCE_COLOR="0",
            LC_ALL="C.UTF-8",
        )

    def run(self, *argv, timeout=300):
        return subprocess.run(
            [str(BIN / argv[0]), *argv[1:]],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return out / TARBALL


@pytest.fixture(scope="module")
def installed(tarball, tmp_path_factory):
    """`ansible-galaxy collection install --offline -p <empty path> <tarball>`, as docs/install.md says."""
    base = tmp_path_factory.mktemp("user")
    collections = base / "collections"
    user = User(base, collections)
    result = user.run(
        "ansible-galaxy", "collection", "install", "--offline", "-p", str(collections), str(tarball)
    )
    return user, collections, result


def test_the_tarball_alone_installs_offline(installed):
    user, collections, result = installed
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gpufleet.nvidia:" in result.stdout and "was installed successfully" in result.stdout
    root = collections / "ansible_collections" / "gpufleet" / "nvidia"
    manifest = json.loads((root / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["dependencies"] == GALAXY["dependencies"] == {}
    # nothing else was installed: the collection depends on no other collection
    assert sorted(p.name for p in (collections / "ansible_collections").iterdir()) == ["gpufleet"]


def test_ansible_doc_reads_the_installed_collection(installed):
    user, collections, _ = installed
    result = user.run("ansible-doc", "gpufleet.nvidia.nvidia_facts")
    assert result.returncode == 0, result.stdout + result.stderr
    module = collections / "ansible_collections/gpufleet/nvidia/plugins/modules/nvidia_facts.py"
    assert str(module) in result.stdout
    roles = user.run("ansible-doc", "-t", "role", "-l", "gpufleet.nvidia")
    assert roles.returncode == 0, roles.stdout + roles.stderr
    for role in ("gpufleet.nvidia.nvidia_driver", "gpufleet.nvidia.cuda_toolkit", "gpufleet.nvidia.cudnn"):
        assert role in roles.stdout


def test_every_playbook_runs_by_its_collection_name(installed, tarball):
    """`ansible-playbook gpufleet.nvidia.<name> --syntax-check` for every playbook the tarball holds."""
    user, collections, _ = installed
    with tarfile.open(tarball) as tar:
        names = [m.name for m in tar.getmembers()]
    in_tarball = sorted(Path(n).stem for n in names if n.startswith("playbooks/") and n.endswith(".yml"))
    assert in_tarball == SHIPPED_PLAYBOOKS
    names = [f"gpufleet.nvidia.{name}" for name in SHIPPED_PLAYBOOKS]
    result = user.run("ansible-playbook", *names, "--syntax-check")
    assert result.returncode == 0, result.stdout + result.stderr
    for name in SHIPPED_PLAYBOOKS:
        path = collections / "ansible_collections/gpufleet/nvidia/playbooks" / f"{name}.yml"
        assert f"playbook: {path}" in result.stdout, name


def test_the_old_hyphenated_name_is_gone(installed):
    user, _, _ = installed
    result = user.run("ansible-playbook", "gpufleet.nvidia.driver-upgrade", "--syntax-check")
    assert result.returncode != 0


def test_the_hook_examples_are_where_the_docs_say(installed):
    """docs/install.md and playbooks/driver_upgrade.yml: the hooks under the path `collection list` prints."""
    user, collections, _ = installed
    listed = user.run("ansible-galaxy", "collection", "list", "gpufleet.nvidia")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert f"# {collections / 'ansible_collections'}" in listed.stdout
    hooks = collections / "ansible_collections/gpufleet/nvidia/roles/nvidia_driver/files/hooks"
    for name in ("slurm-drain.yml", "slurm-undrain.yml"):
        assert isinstance(yaml.safe_load((hooks / name).read_text()), list), name


def test_a_hook_given_by_its_absolute_path_in_the_installed_collection_is_accepted(installed, tmp_path):
    """The inputs play accepts the shipped hooks by absolute path; gpu01 (TEST-NET-1, never routed) is then
    unreachable, so the run stops there without touching any host."""
    user, collections, _ = installed
    hooks = collections / "ansible_collections/gpufleet/nvidia/roles/nvidia_driver/files/hooks"
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        "all:\n  hosts:\n    gpu01:\n      ansible_host: 192.0.2.10\n"
        "      ansible_ssh_common_args: -o ConnectTimeout=2 -o BatchMode=yes\n"
    )
    result = user.run(
        "ansible-playbook",
        "-i",
        str(inventory),
        "gpufleet.nvidia.driver_upgrade",
        "-e",
        f"gpufleet_driver_upgrade_drain_tasks={hooks / 'slurm-drain.yml'}",
        "-e",
        f"gpufleet_driver_upgrade_undrain_tasks={hooks / 'slurm-undrain.yml'}",
    )
    text = result.stdout + result.stderr
    check = "TASK [Check the host pattern, the batch size and the drain/undrain hooks (names each wrong one)]"
    assert check in text, text
    assert "ok: [gpu01 -> localhost]" in text.split(check, 1)[1], text
    assert "allowed:" not in text, text
    assert "UNREACHABLE" in text, text


def test_the_readmes_first_run_uses_the_installed_roles(installed):
    """README.md's inventory and playbook, as written there, against the installed collection."""
    user, _, _ = installed
    section = (ROOT / "README.md").read_text().split("## A first run", 1)[1].split("\n## ", 1)[0]
    inventory, playbook = re.findall(r"```yaml\n(.*?)```", section, re.S)[:2]
    (user.cwd / "inventory.yml").write_text(inventory)
    (user.cwd / "site.yml").write_text(playbook)
    result = user.run("ansible-playbook", "-i", "inventory.yml", "site.yml", "--list-hosts", "--list-tasks")
    assert result.returncode == 0, result.stdout + result.stderr
    plays = result.stdout.split("play #")[1:]
    assert len(plays) == 2, result.stdout
    assert "gpu01.example.org" in plays[0] and "login01.example.org" not in plays[0], plays[0]
    assert "login01.example.org" in plays[1] and "gpu02.example.org" in plays[1], plays[1]
    assert "nvidia_driver : " in plays[0] and "cudnn : " in plays[1], result.stdout
