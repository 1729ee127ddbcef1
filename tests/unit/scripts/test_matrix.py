"""The ansible-core version matrix (tox.ini) runs every minor that meta/runtime.yml admits.

From requires_ansible's lowest minor to the dev toolchain's (pyproject.toml), one env each, installing
requirements/core-<minor>.txt with every package pinned. Raising requires_ansible, or the dev pin, without
the matrix (or the other way round) fails here.
"""

import configparser
import re
from pathlib import Path

import pytest
import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[3]


def _tox():
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "tox.ini")
    return cfg


def _minor(version):
    major, minor = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", version).groups()
    return int(major), int(minor)


def _lowest():
    spec = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]
    found = re.fullmatch(r">=\s*(\d+\.\d+(?:\.\d+)?)", spec.strip())
    assert found, f"requires_ansible {spec!r}: the matrix reads a single lower bound, '>=X.Y.Z'"
    return _minor(found.group(1))


def _dev_core():
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    return next(p.split("==")[1] for p in dev if p.startswith("ansible-core=="))


def _wanted():
    (major, low), (dev_major, high) = _lowest(), _minor(_dev_core())
    assert major == dev_major == 2
    return [(2, m) for m in range(low, high + 1)]


def _pins(path):
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    pins = dict(line.split("==", 1) for line in lines if "==" in line)
    assert len(pins) == len(lines), f"{path.name}: every line is name==version"
    return {name.lower().replace("_", "-"): version for name, version in pins.items()}


def test_env_list_is_every_admitted_minor():
    envs = [e.strip() for e in _tox()["tox"]["env_list"].replace("\n", ",").split(",") if e.strip()]
    assert envs == [f"core{a}{b}" for a, b in _wanted()]


@pytest.mark.parametrize("minor", [f"{a}.{b}" for a, b in _wanted()])
def test_each_env_installs_its_pinned_ansible_core(minor):
    env = "core" + minor.replace(".", "")
    deps = _tox()["testenv"]["deps"]
    assert f"{env}: -r requirements/core-{minor}.txt" in [line.strip() for line in deps.splitlines()]
    pins = _pins(ROOT / "requirements" / f"core-{minor}.txt")
    assert pins["ansible-core"].startswith(minor + "."), pins["ansible-core"]
    for tool in ("molecule", "molecule-plugins", "ansible-compat", "pytest-testinfra", "pytest"):
        assert tool in pins, (minor, tool)


def test_dev_minor_env_is_the_dev_toolchain():
    """core<dev minor> runs the versions .venv runs (requirements/dev.lock), so its results are .venv's."""
    dev = _dev_core()
    lock = _pins(ROOT / "requirements" / "dev.lock")
    pins = _pins(ROOT / "requirements" / "core-{}.{}.txt".format(*_minor(dev)))
    assert pins["ansible-core"] == dev
    # pip freeze (dev.lock) leaves setuptools out
    differ = {name: v for name, v in pins.items() if lock.get(name) != v and name != "setuptools"}
    assert differ == {}


def test_commands_run_the_unit_tests_and_molecule_smoke():
    commands = [line.strip() for line in _tox()["testenv"]["commands"].splitlines() if line.strip()]
    assert commands == [
        "pytest -q tests/unit/plugins tests/unit/roles tests/unit/scripts/test_collection.py",
        "molecule test -s smoke",
    ]


def test_the_unit_tests_left_out_of_the_matrix_do_not_use_ansible_core():
    """The matrix runs the unit tests that import or run ansible-core; the rest run once, in `make unit`.
    A test elsewhere that starts using ansible-core must join the matrix's list."""
    commands = _tox()["testenv"]["commands"].split()
    chosen = [ROOT / p for p in commands[commands.index("pytest") + 2 : commands.index("molecule")]]
    # an import of ansible-core itself (not of the collection's pure module_utils), or one of its programs run
    program = r"[\"'/]ansible-(playbook|galaxy|test)[\"']"
    uses = re.compile(r"^\s*(import ansible\b|from ansible\b)|" + program, re.M)
    outside = []
    for test in sorted((ROOT / "tests" / "unit").rglob("test_*.py")):
        if any(test == c or c in test.parents for c in chosen):
            continue
        if uses.search(test.read_text()):
            outside.append(str(test.relative_to(ROOT)))
    assert outside == []


def test_side_by_side_envs_have_molecule_instances_and_state_of_their_own():
    """make matrix runs the envs at once (tox -p): one smoke instance name or ephemeral directory for all
    of them would let one env's destroy remove another's instance."""
    set_env = dict(
        line.strip().split(" = ", 1) for line in _tox()["testenv"]["set_env"].splitlines() if line.strip()
    )
    assert set_env["GPUFLEET_MOLECULE_PREFIX"] == "gpufleet-{env_name}"
    assert set_env["MOLECULE_EPHEMERAL_DIRECTORY"] == "{env_tmp_dir}/molecule"
    config = yaml.safe_load((ROOT / ".config" / "molecule" / "config.yml").read_text())
    assert config["platforms"][0]["name"] == "${GPUFLEET_MOLECULE_PREFIX:-gpufleet}-${MOLECULE_SCENARIO_NAME}"


def test_make_matrix_runs_every_env_but_the_dev_minor():
    """`make test` runs the dev minor in .venv already; `make matrix` runs the others."""
    found = re.search(r"^MATRIX_ENVS \?= (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found, "Makefile: MATRIX_ENVS ?= core216,..."
    assert found.group(1).split(",") == [f"core{a}{b}" for a, b in _wanted()[:-1]]


def test_make_test_all_runs_the_matrix_and_matrix_lowest_the_lowest_admitted_minor():
    """`make test` runs the dev minor in .venv; `make test-all` the matrix (every older admitted minor) and
    `make matrix-lowest` the lowest alone."""
    makefile = (ROOT / "Makefile").read_text()
    found = re.search(r"^MATRIX_TEST_ENVS \?= (.+)$", makefile, re.MULTILINE)
    assert found, "Makefile: MATRIX_TEST_ENVS ?= core216"
    (major, low) = _lowest()
    assert found.group(1).split(",") == [f"core{major}{low}"]
    stages = re.search(r"^TEST_ALL_STAGES \?= (.+)$", makefile, re.MULTILINE).group(1).split()
    assert "matrix" in stages, stages
    recipe = re.search(r"^matrix-lowest:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe and recipe.group(1) == "$(BIN)/tox -e $(MATRIX_TEST_ENVS)"


def test_make_matrix_runs_the_envs_side_by_side():
    """One env's unit tests use one core: tox -p runs them together."""
    recipe = re.search(r"^matrix:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe, "Makefile: a matrix target"
    assert recipe.group(1).split()[:3] == ["$(BIN)/tox", "-p", "all"], recipe.group(1)


def test_molecule_dependency_step_leaves_the_venv_alone():
    """The matrix runs molecule in three tox envs at once; a dependency step that bootstrapped .venv too
    (with the env's Python, whenever the pins had changed) removed it under the others' feet."""
    config = yaml.safe_load((ROOT / ".config" / "molecule" / "config.yml").read_text())
    command = config["dependency"]["command"].split()
    assert command[1].endswith("scripts/bootstrap.py"), command
    assert command[2:] == ["collections"], command
