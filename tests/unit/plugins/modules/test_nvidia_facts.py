"""nvidia_facts as Ansible runs it: module args in, JSON out (check mode, bad input, H200 tree)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.facts import fakeroot

ROOT = Path(__file__).resolve().parents[4]
MODULE = ROOT / "plugins" / "modules" / "nvidia_facts.py"


def run_module(tmp_path, **args):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=str(ROOT / ".collections"), LC_ALL="C")
    proc = subprocess.run(
        [sys.executable, str(MODULE), str(args_file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return json.loads(proc.stdout)


@pytest.mark.parametrize("check_mode", [False, True])
def test_h200_tree_in_normal_and_check_mode(tmp_path, check_mode):
    tree = tmp_path / "h200"
    fakeroot.h200(tree)
    result = run_module(tmp_path, root=str(tree), _ansible_check_mode=check_mode)
    assert result.get("failed") is not True
    assert result["changed"] is False
    facts = result["ansible_facts"]["nvidia"]
    assert facts["schema_version"] == 2
    assert [(c["source"], c["version"]) for c in facts["cudnn"]] == [("deb", "9.14.0"), ("pip", "9.19.0")]
    assert facts["gpus"][0]["architecture"] == "Hopper"
    assert facts["driver"]["install_method"] == "host"


def test_mok_paths_are_described_under_the_driver(tmp_path):
    tree = tmp_path / "h200"
    fakeroot.h200(tree)
    (tree / "etc/MOK.der").write_bytes(b"\x30\x82\x00\x04cert")
    result = run_module(
        tmp_path, root=str(tree), gather_subset=["driver"], mok_paths=["/etc/MOK.der", "/nope"]
    )
    files = result["ansible_facts"]["nvidia"]["driver"]["mok_files"]
    assert files["/etc/MOK.der"]["certificate"] is True
    assert files["/etc/MOK.der"]["private_key"] is False
    assert len(files["/etc/MOK.der"]["certificate_sha256"]) == 64
    assert files["/nope"] == {
        "exists": False,
        "private_key": None,
        "certificate": None,
        "certificate_sha256": None,
    }


def test_nonexistent_root_succeeds_with_a_warning(tmp_path):
    result = run_module(tmp_path, root=str(tmp_path / "nope"))
    assert result.get("failed") is not True
    warnings = [w["event"]["msg"] if isinstance(w, dict) else w for w in result["warnings"]]
    assert warnings == ["nvidia_facts: root %s does not exist" % (tmp_path / "nope")]
    assert result["ansible_facts"]["nvidia"]["probes"]["cudnn"]["state"] == "unknown"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"gather_subset": ["gpus"]},
            "gather_subset: 'gpus' is not allowed; allowed: all, gpu, driver, cuda, cudnn",
        ),
        ({"max_depth": 0}, "max_depth: 0 is not allowed; allowed: an integer from 1 to 32"),
        ({"timeout": -1}, "timeout: -1.0 is not allowed; allowed: seconds, more than 0 and at most 600"),
        ({"cudnn_search_paths": ["relative/dir"]}, "cudnn_search_paths: 'relative/dir' is not allowed"),
        (
            {"mok_paths": ["MOK.priv"]},
            "mok_paths: 'MOK.priv' is not allowed; allowed: absolute paths inside root",
        ),
    ],
)
def test_bad_parameters_fail_with_one_clear_line(tmp_path, args, message):
    result = run_module(tmp_path, root=str(tmp_path), **args)
    assert result["failed"] is True
    assert result["msg"].startswith(message)


def test_packages_subset_of_an_image_tree(tmp_path):
    tree = tmp_path / "h200"
    fakeroot.h200(tree)
    fakeroot.elf_shell(tree, 183)
    result = run_module(tmp_path, root=str(tree), gather_subset=["packages"])
    facts = result["ansible_facts"]["nvidia"]
    assert facts["gather_subset"] == ["packages"]
    assert set(facts["probes"]) == {"host", "gpu", "driver", "cuda", "cudnn", "owners", "packages"}
    packages = facts["packages"]
    assert (packages["manager"], packages["python_apt"]) == ("apt", None)  # not live: no interpreter to ask
    assert packages["installed"]["libcudnn9-cuda-13"] == {"version": "9.14.0.64-1", "held": True}
    assert facts["host"]["machine"] == "aarch64"
