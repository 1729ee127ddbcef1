"""roles/nvidia_driver: meta/argument_specs.yml documents exactly defaults/main.yml (same defaults)."""

from pathlib import Path

import yaml

ROLE = Path(__file__).resolve().parents[3] / "roles" / "nvidia_driver"


def load(rel):
    return yaml.safe_load((ROLE / rel).read_text())


def test_argument_specs_equal_defaults():
    defaults = load("defaults/main.yml")
    options = load("meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(options) == sorted(defaults)
    for name, spec in options.items():
        assert spec.get("default") == defaults[name], name
        assert spec.get("description"), name
        assert name.startswith("nvidia_driver_"), name


def test_choices_in_specs_contain_the_default():
    options = load("meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    for name, spec in options.items():
        if "choices" in spec:
            assert spec["default"] in spec["choices"], name


def test_internal_vars_are_prefixed():
    for rel in ("vars/main.yml", "vars/Debian.yml", "vars/RedHat.yml"):
        for name in load(rel):
            assert name.startswith("__nvidia_driver_"), (rel, name)
