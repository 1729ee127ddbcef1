"""scripts/molecule_run.sh (make molecule) and the Makefile's MOLECULE_SCENARIOS: scenarios, platforms."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


def _make_var(name):
    text = (ROOT / "Makefile").read_text()
    return re.search(rf"^{name} \?= (.*)$", text, re.M).group(1).split()


def _platforms(scenario):
    config = yaml.safe_load((ROOT / "molecule" / scenario / "molecule.yml").read_text())
    return [p["name"] for p in config.get("platforms") or []]


def test_every_scenario_of_make_test_exists_and_names_a_platform_it_has():
    for item in _make_var("MOLECULE_SCENARIOS"):
        name, _, platform = item.partition(":")
        assert (ROOT / "molecule" / name / "molecule.yml").is_file(), item
        if platform:
            assert f"gpufleet-{name}-{platform}" in _platforms(name), item


def test_make_test_still_provisions_both_debian_releases():
    """default and brownfield run one release each; between them and repo/airgap, Debian 12 and 13 both
    get the redist path, the brownfield path and the apt repository path."""
    released = {}
    for item in _make_var("MOLECULE_SCENARIOS"):
        name, _, platform = item.partition(":")
        names = [f"gpufleet-{name}-{platform}"] if platform else _platforms(name)
        released[name] = {n.rsplit("-", 1)[1] for n in names if re.search(r"-debian1[23]$", n)}
    assert released["repo"] == {"debian12", "debian13"}
    assert released["airgap"] == {"debian12", "debian13"}
    assert released["default"] | released["brownfield"] == {"debian12", "debian13"}


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "molecule_run.sh", tmp_path / "scripts")
    for name, platforms in {"one": [], "two": ["gpufleet-two-debian12", "gpufleet-two-debian13"]}.items():
        (tmp_path / "molecule" / name).mkdir(parents=True)
        config = {"platforms": [{"name": p} for p in platforms]}
        (tmp_path / "molecule" / name / "molecule.yml").write_text(yaml.safe_dump(config))
    fake = tmp_path / "fake-molecule"
    # records its arguments; fails for the scenario named in FAIL
    fake.write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/calls"\n[ "$3" != "$FAIL" ]\n')
    fake.chmod(0o755)
    return tmp_path


def _run(tree, *items, fail=""):
    env = dict(os.environ, MOLECULE=str(tree / "fake-molecule"), PYTHON=sys.executable, FAIL=fail)
    argv = ["bash", str(tree / "scripts" / "molecule_run.sh"), *items]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def _calls(tree):
    path = tree / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_a_platform_suffix_runs_only_that_platform_and_the_table_names_each(tree):
    res = _run(tree, "one", "two:debian13", "two")
    assert res.returncode == 0, res.stdout + res.stderr
    assert _calls(tree) == ["test -s one", "test -s two -p gpufleet-two-debian13", "test -s two"]
    table = res.stdout.split("molecule: scenario times", 1)[1]
    assert re.findall(r"^  (\S+)\s+\d+$", table, re.M) == ["one", "two:debian13", "two"]


def test_an_unknown_platform_fails_before_any_scenario_runs(tree):
    res = _run(tree, "one", "two:debian14")
    assert res.returncode == 2
    assert "two:debian14: molecule/two/molecule.yml has no platform gpufleet-two-debian14" in res.stderr
    assert _calls(tree) == []


def test_a_failing_scenario_stops_the_rest_and_is_named(tree):
    res = _run(tree, "one", "two:debian12", "one", fail="two")
    assert res.returncode == 1
    assert _calls(tree) == ["test -s one", "test -s two -p gpufleet-two-debian12"]
    assert "failed in two:debian12" in res.stdout
