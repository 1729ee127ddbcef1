"""The collection as it ships: the built tarball, the changelog, the execution environment definition.

The tarball is built with `ansible-galaxy collection build` (what Galaxy and Automation Hub receive) and
must hold the collection's content and none of the lab, test, molecule, bench, script or evidence material.
"""

import keyword
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import tomllib
import yaml
from ansible.utils.collection_loader import AnsibleCollectionRef

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
VERSION = GALAXY["version"]
TARBALL = f"{GALAXY['namespace']}-{GALAXY['name']}-{VERSION}.tar.gz"
# What must never ship: lab and test material (the evidence of runs is under tests/gpu/), the toolchain's
# state, the contributor guide.
FORBIDDEN = (
    "lab/",
    "tests/",
    "molecule/",
    "bench/",
    "scripts/",
    "inventory/",
    "reports/",
    "CONTRIBUTING.md",
    "playbooks/demo.yml",
    "requirements/",
    "tox.ini",
    "Makefile",
    "pyproject.toml",
    ".",
)
REQUIRED = (
    "MANIFEST.json",
    "README.md",
    "CHANGELOG.md",
    "meta/runtime.yml",
    "plugins/modules/nvidia_facts.py",
    "plugins/filter/nvidia.py",
    "plugins/filter/gpu_info.yml",
    "roles/cudnn/tasks/main.yml",
    "playbooks/audit.yml",
    "playbooks/driver_upgrade.yml",
    # the drain/undrain hook examples that playbooks/driver_upgrade.yml and the README point users at
    "roles/nvidia_driver/files/hooks/slurm-drain.yml",
    "roles/nvidia_driver/files/hooks/slurm-undrain.yml",
)
# `ansible-playbook gpufleet.nvidia.<name>` finds playbooks/<name>.yml only when <name> is an identifier: a
# hyphen (driver-upgrade) makes the name invalid and ansible-playbook looks for a file of that name instead.
PLAYBOOK_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLAYBOOKS = sorted(p.stem for p in (ROOT / "playbooks").glob("*.y*ml"))


def _tool(name):
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{name} is not installed in this toolchain")
    return str(path)


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


def _members(path):
    with tarfile.open(path) as tar:
        return [m.name for m in tar.getmembers()]


def test_tarball_holds_no_lab_test_or_evidence_material(tarball):
    names = _members(tarball)
    bad = [n for n in names if n.startswith(FORBIDDEN) or "__pycache__" in n or n.endswith(".pyc")]
    assert bad == []


def test_tarball_holds_the_collection(tarball):
    names = set(_members(tarball))
    assert [n for n in REQUIRED if n not in names] == []


def test_there_are_playbooks():
    assert {"site", "preflight", "audit", "driver_upgrade"} <= set(PLAYBOOKS)


@pytest.mark.parametrize("name", PLAYBOOKS)
def test_every_playbook_is_callable_from_the_collection(name):
    """playbooks/<name>.yml runs as `ansible-playbook gpufleet.nvidia.<name>`: letters, digits, underscores
    only."""
    assert PLAYBOOK_NAME.fullmatch(name) and not keyword.iskeyword(name), name
    assert AnsibleCollectionRef.is_valid_fqcr(f"gpufleet.nvidia.{name}", "playbook"), name
    assert (ROOT / "playbooks" / f"{name}.yml").is_file(), f"{name}: use the .yml suffix"


def test_build_ignore_is_what_keeps_them_out():
    ignored = set(GALAXY["build_ignore"])
    for entry in ("lab", "tests", "molecule", "bench", "scripts", "CONTRIBUTING.md"):
        assert entry in ignored


# ---------------------------------------------------------------------------------------------------
# changelog (antsibull-changelog)
# ---------------------------------------------------------------------------------------------------
CHANGELOGS = ROOT / "changelogs"
CONFIG = yaml.safe_load((CHANGELOGS / "config.yaml").read_text())


def test_the_galaxy_version_has_a_changelog_entry():
    changes = yaml.safe_load((CHANGELOGS / "changelog.yaml").read_text())
    assert VERSION in changes["releases"]
    assert f"## v{VERSION}".replace(".", "\\.") in (ROOT / "CHANGELOG.md").read_text()


def test_fragments_use_known_sections():
    known = {s[0] for s in CONFIG["sections"]} | {
        CONFIG["prelude_section_name"],
        CONFIG["trivial_section_name"],
    }
    fragments = sorted((CHANGELOGS / "fragments").glob("*.yml"))
    assert fragments
    for path in fragments:
        body = yaml.safe_load(path.read_text())
        assert isinstance(body, dict), path.name
        assert set(body) <= known, path.name


def test_changelog_lint_passes():
    run = subprocess.run(
        [_tool("antsibull-changelog"), "lint"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stdout + run.stderr) == (0, "")


def test_changelog_md_is_generated_from_the_fragments(tmp_path):
    """CHANGELOG.md is antsibull-changelog's output for changelogs/: never edited by hand."""
    out = tmp_path / "CHANGELOG.md"
    subprocess.run(
        [_tool("antsibull-changelog"), "generate", "--output", str(out), "--output-format", "md"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    assert out.read_text() == (ROOT / "CHANGELOG.md").read_text()


# ---------------------------------------------------------------------------------------------------
# execution environment (ansible-builder v3)
# ---------------------------------------------------------------------------------------------------
EE = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
PINS = dict(
    line.split("==", 1)
    for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "dev"
    ]
)


def test_ee_installs_the_tested_ansible_core_and_this_version():
    assert EE["version"] == 3
    assert EE["dependencies"]["ansible_core"]["package_pip"] == f"ansible-core=={PINS['ansible-core']}"
    names = {c["name"]: c for c in EE["dependencies"]["galaxy"]["collections"]}
    assert names[f"collections/{TARBALL}"]["type"] == "file"
    for dependency, version in GALAXY["dependencies"].items():
        assert names[dependency]["version"] == version


def test_ansible_builder_create(tarball, tmp_path):
    """`ansible-builder create` makes a build context with the tarball and the pinned ansible-core."""
    builder = _tool("ansible-builder")
    shutil.copy(ROOT / "execution-environment.yml", tmp_path)
    shutil.copy(tarball, tmp_path)
    run = subprocess.run(
        [
            builder,
            "create",
            "-f",
            "execution-environment.yml",
            "--context",
            "ctx",
            "--output-filename",
            "Containerfile",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "No matches" not in run.stdout + run.stderr
    ctx = tmp_path / "ctx"
    containerfile = (ctx / "Containerfile").read_text()
    assert f"ansible-core=={PINS['ansible-core']}" in containerfile
    assert "FROM $EE_BASE_IMAGE AS base" in containerfile
    assert 'ARG EE_BASE_IMAGE="{}"'.format(EE["images"]["base_image"]["name"]) in containerfile
    assert "ansible-galaxy collection install" in containerfile
    assert (ctx / "_build/collections" / TARBALL).read_bytes() == tarball.read_bytes()
    requirements = yaml.safe_load((ctx / "_build/requirements.yml").read_text())
    assert {"name": f"collections/{TARBALL}", "type": "file"} in requirements["collections"]
