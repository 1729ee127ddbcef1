"""Every filter has its ansible-doc file plugins/filter/<name>.yml; its options are the arguments."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.nvidia.plugins.filter import nvidia

ROOT = Path(__file__).resolve().parents[4]
FILTERS = nvidia.FilterModule().filters()
ENV = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"), "ANSIBLE_NOCOLOR": "1"}


def _doc(name):
    return yaml.safe_load((ROOT / "plugins/filter" / f"{name}.yml").read_text())


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_doc_file_matches_the_function(name):
    doc = _doc(name)
    assert set(doc) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}
    assert doc["DOCUMENTATION"]["name"] == name
    assert f"gpufleet.nvidia.{name}" in doc["EXAMPLES"]
    assert "_value" in doc["RETURN"]
    params = list(inspect.signature(FILTERS[name]).parameters.values())
    options = doc["DOCUMENTATION"]["options"]
    assert set(options) == {"_input", *(p.name for p in params[1:])}
    assert options["_input"]["required"] is True
    for param in params[1:]:
        if param.default is inspect.Parameter.empty:
            assert options[param.name].get("required") is True, param.name
        else:
            assert options[param.name].get("default") == param.default, param.name


def test_no_doc_file_without_a_filter():
    assert {p.stem for p in (ROOT / "plugins/filter").glob("*.yml")} == set(FILTERS)


def _ansible_doc(*args):
    run = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-doc"), "-t", "filter", *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_ansible_doc_lists_every_filter_documented():
    lines = [line for line in _ansible_doc("-l", "gpufleet.nvidia").splitlines() if line.strip()]
    listed = {line.split()[0]: line for line in lines}
    assert set(listed) == {f"gpufleet.nvidia.{name}" for name in FILTERS}
    assert [line for line in lines if "UNDOCUMENTED" in line] == []


def test_ansible_doc_reads_every_filter():
    docs = json.loads(_ansible_doc("--json", *(f"gpufleet.nvidia.{name}" for name in sorted(FILTERS))))
    assert set(docs) == {f"gpufleet.nvidia.{name}" for name in FILTERS}
    for name, doc in docs.items():
        assert doc["doc"]["short_description"], name
        assert doc["return"]["_value"]["description"], name
