"""scripts/molecule_run.sh (make molecule) and the Makefile's MOLECULE_SCENARIOS: scenarios, platforms."""

import os
import re
import shutil
import subprocess
import sys
import time
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


def test_make_test_provisions_both_debian_releases_and_molecule_all_every_platform():
    """make test runs each scenario on one platform, and between them both Debian releases; make molecule-all
    (in make test-all) runs every scenario of make test, and more, on every platform each lists."""
    released = set()
    for item in _make_var("MOLECULE_SCENARIOS"):
        name, _, platform = item.partition(":")
        names = [f"gpufleet-{name}-{platform}"] if platform else _platforms(name)
        released |= {n.rsplit("-", 1)[1] for n in names if re.search(r"-debian1[23]$", n)}
    assert released == {"debian12", "debian13"}
    every = _make_var("MOLECULE_ALL_SCENARIOS")
    assert all(":" not in item for item in every), every
    assert {item.partition(":")[0] for item in _make_var("MOLECULE_SCENARIOS")} <= set(every)


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
    fake.write_text(
        '#!/bin/sh\necho "$*" >> "$(dirname "$0")/calls"\n'
        '[ "$3" != "$FAIL" ] || { echo "$3 broke"; exit 3; }\nsleep "${SLEEP:-0}"\necho "$3 done"\n'
    )
    fake.chmod(0o755)
    return tmp_path


def _run(tree, *items, fail="", jobs=1, sleep=0, keep_going=False):
    env = dict(os.environ, MOLECULE=str(tree / "fake-molecule"), PYTHON=sys.executable, FAIL=fail)
    env.update(MOLECULE_JOBS=str(jobs), SLEEP=str(sleep), TEST_KEEP_GOING="1" if keep_going else "0")
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
    assert res.returncode == 3
    assert _calls(tree) == ["test -s one", "test -s two -p gpufleet-two-debian12"]
    assert "failed in two:debian12" in res.stdout


def test_jobs_run_scenarios_side_by_side_each_with_its_log(tree):
    t0 = time.monotonic()
    res = _run(tree, "one", "two:debian13", "two", jobs=2, sleep=2)
    assert res.returncode == 0, res.stdout + res.stderr
    assert time.monotonic() - t0 < 5.5  # 3 runs of 2 s, two at a time: about 4 s
    assert sorted(_calls(tree)) == ["test -s one", "test -s two", "test -s two -p gpufleet-two-debian13"]
    assert (tree / ".cache/molecule/two_debian13.log").read_text() == "two done\n"
    table = res.stdout.split("molecule: scenario times (2 at a time)", 1)[1]
    assert sorted(re.findall(r"^  (\S+)\s+\d+$", table, re.M)) == ["one", "two", "two:debian13"]


def test_with_jobs_the_first_failure_stops_the_others_and_shows_its_log(tree):
    res = _run(tree, "two:debian12", "one", "two:debian13", jobs=2, sleep=5, fail="one")
    assert res.returncode == 3
    assert "=== molecule: one FAILED (exit 3)" in res.stdout
    assert "one broke" in res.stdout
    assert "failed in one" in res.stdout
    assert "molecule: stopped two:debian12" in res.stdout
    # the third never started (the first may be stopped before its fake molecule wrote its call)
    assert "test -s two -p gpufleet-two-debian13" not in _calls(tree)
    time.sleep(5)
    assert "two done" not in (tree / ".cache/molecule/two_debian12.log").read_text()


@pytest.mark.parametrize("jobs", [1, 2])
def test_keep_going_runs_every_scenario_and_fails_at_the_end_naming_the_failures(tree, jobs):
    """Issue 37 (make test-all, TEST_KEEP_GOING=1): one scenario's failure stops nothing; the run fails at the
    end with the first failure's code, naming each scenario that failed."""
    res = _run(tree, "two:debian12", "one", "two:debian13", "one", jobs=jobs, fail="one", keep_going=True)
    assert res.returncode == 3
    assert sorted(_calls(tree)) == sorted(
        [
            "test -s two -p gpufleet-two-debian12",
            "test -s one",
            "test -s two -p gpufleet-two-debian13",
            "test -s one",
        ]
    )
    assert "failed in one one" in res.stdout
    assert "stopped" not in res.stdout
