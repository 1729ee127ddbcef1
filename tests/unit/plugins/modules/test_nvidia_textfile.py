"""nvidia_textfile: the module as Ansible runs it on a host (its arguments on stdin), writing the file
install/textfile.py writes (tests/unit/plugins/module_utils/install/test_textfile.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
MODULE = ROOT / "plugins" / "modules" / "nvidia_textfile.py"


def run(args, check_mode=False):
    payload = dict(args, _ansible_check_mode=check_mode)
    env = dict(os.environ, PYTHONPATH=str(ROOT / ".collections"))
    proc = subprocess.run(
        [sys.executable, str(MODULE)],
        input=json.dumps({"ANSIBLE_MODULE_ARGS": payload}),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    return json.loads(proc.stdout)


def test_writes_the_file_then_reports_no_change(tmp_path):
    out = run({"directory": str(tmp_path), "content": 'gpufleet_gpus{host="a"} 1\n'})
    assert (out.get("failed"), out["changed"], out["path"]) == (None, True, str(tmp_path / "gpufleet.prom"))
    assert (tmp_path / "gpufleet.prom").read_text() == 'gpufleet_gpus{host="a"} 1\n'
    assert run({"directory": str(tmp_path), "content": 'gpufleet_gpus{host="a"} 1\n'})["changed"] is False


def test_check_mode_writes_nothing(tmp_path):
    out = run({"directory": str(tmp_path), "content": "x 1\n"}, check_mode=True)
    assert out["changed"] is True
    assert os.listdir(tmp_path) == []


def test_a_missing_directory_is_named_by_the_variable(tmp_path):
    out = run({"directory": str(tmp_path / "missing"), "content": "x 1\n"})
    assert out["failed"] is True
    assert out["msg"] == (
        f"gpufleet_audit_prometheus_textfile_dir: {tmp_path / 'missing'} is not a directory on this host "
        "(create it, or give node_exporter's --collector.textfile.directory)"
    )
    assert run({"directory": str(tmp_path), "content": "x 1\n", "mode": "rw"})["msg"].startswith("mode: 'rw'")
