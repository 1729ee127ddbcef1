"""playbooks/audit.yml + the nvidia_fleet_report action, end to end through ansible-playbook.

The hosts are local-connection hosts answered by a stand-in nvidia_facts (tests/data/audit/stub) that returns
fixture facts, plus one unreachable SSH host and one host whose module fails. The stand-in lives in a
throw-away copy of the collection whose other plugins are the project's own (symlinks).
"""

import ast
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from ansible_collections.gpufleet.nvidia.plugins.action.nvidia_fleet_report import (
    ARGS,
    textfile_dirs,
    validated_variables,
)

from tests.unit.plugins.module_utils.report.test_build import parse_exposition

ROOT = Path(__file__).resolve().parents[4]
DATA = ROOT / "tests" / "data" / "audit"
PLAYBOOK = ROOT / "playbooks" / "audit.yml"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"


@pytest.fixture(scope="module")
def collections(tmp_path_factory):
    base = tmp_path_factory.mktemp("collections")
    coll = base / "ansible_collections" / "gpufleet" / "nvidia"
    (coll / "plugins" / "modules").mkdir(parents=True)
    for rel in (
        "plugins/action",
        "plugins/module_utils",
        "meta",
        "plugins/modules/nvidia_fleet_report.py",
        "plugins/modules/nvidia_textfile.py",
    ):
        (coll / rel).symlink_to(ROOT / rel)
    (coll / "plugins" / "modules" / "nvidia_facts.py").write_text(
        (DATA / "stub" / "nvidia_facts.py").read_text()
    )
    return base


def inventory(tmp_path, hosts):
    lines = ["all:", "  vars:", '    ansible_python_interpreter: "{{ ansible_playbook_python }}"', "  hosts:"]
    for name, hv in hosts.items():
        lines.append(f"    {name}: {json.dumps(hv)}")
    path = tmp_path / "inventory.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def local(fixture, **extra):
    return dict(
        {"ansible_connection": "local", "gpufleet_audit_cudnn_search_paths": [str(DATA / fixture)]}, **extra
    )


UNREACHABLE = {
    "ansible_connection": "ssh",
    "ansible_host": "127.0.0.1",
    "ansible_port": 1,
    "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes",
}
FLEET = {
    "gpu01": local("h200.json", gpufleet_baseline={"driver_branch": "580", "cudnn_versions": {"13": "9.14"}}),
    "login01": local("nogpu.json"),
    "gpu10": local("oldtrain.json", gpufleet_baseline={"driver_branch": "580"}),
    "old01": local("broken.json"),
    "gpu99": UNREACHABLE,
}


def run(collections, tmp_path, hosts, *extra, check=False, playbook=PLAYBOOK, cwd=None, report_dir=True):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=f"{collections}:{ROOT / '.collections'}",
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"),
        # Only the collection's module_utils: an adjacent module_utils path would let a project file
        # (e.g. compat.py) shadow ansible.module_utils.* in every module's payload.
        ANSIBLE_MODULE_UTILS=str(tmp_path / "no-module-utils"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CALLBACK_RESULT_FORMAT="json",
        ANSIBLE_FORCE_COLOR="0",
    )
    cmd = [str(ANSIBLE_PLAYBOOK), "-i", str(inventory(tmp_path, hosts)), str(playbook)]
    if report_dir and "gpufleet_audit_report_dir" not in " ".join(extra):
        cmd += ["-e", f"gpufleet_audit_report_dir={tmp_path / 'reports'}"]
    cmd += list(extra)
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False, cwd=cwd)
    return proc.returncode, proc.stdout + proc.stderr


def test_fleet_audit_writes_every_format(collections, tmp_path):
    rc, out = run(collections, tmp_path, FLEET)
    assert rc == 0, out
    reports = tmp_path / "reports"
    assert sorted(os.listdir(reports)) == [
        "gpufleet-audit.csv",
        "gpufleet-audit.html",
        "gpufleet-audit.json",
        "gpufleet-audit.md",
        "gpufleet.prom",
    ]
    report = json.loads((reports / "gpufleet-audit.json").read_text())
    status = {h["name"]: h["status"] for h in report["hosts"]}
    assert status == {
        "gpu01": "ok",
        "gpu10": "ok",
        "gpu99": "unreachable",
        "login01": "ok",
        "old01": "failed",
    }
    gpu99 = [h for h in report["hosts"] if h["name"] == "gpu99"][0]
    # ssh's own words for the closed port: "Connection refused", or under load "Broken pipe" while sending
    assert re.search(r"Connection refused|Broken pipe|Connection reset", gpu99["message"]), gpu99["message"]
    old01 = [h for h in report["hosts"] if h["name"] == "old01"][0]
    assert "Python 3.6" in old01["message"]
    gpu01 = [h for h in report["hosts"] if h["name"] == "gpu01"][0]
    assert {c["version"] for c in gpu01["cudnn"]} == {"9.14.0", "9.19.0"}
    assert gpu01["drift_status"] == "none"
    rows = list(csv.DictReader((reports / "gpufleet-audit.csv").open()))
    assert {r["host"] for r in rows} == set(FLEET)
    assert (
        'gpufleet_audit_host_up{host="gpu99",status="unreachable"} 0'
        in (reports / "gpufleet.prom").read_text()
    )
    assert "| gpu99 | unreachable |" in (reports / "gpufleet-audit.md").read_text()
    assert "gpu99" in (reports / "gpufleet-audit.html").read_text()
    # the summary table is printed at the end of the run
    assert "gpufleet audit" in out
    assert "5 host(s): 3 audited, 1 unreachable, 1 failed, 1 without GPU" in out
    assert f"HTML report: {reports / 'gpufleet-audit.html'}" in out


def test_fail_on_drift_fails_with_the_list_after_writing(collections, tmp_path):
    rc, out = run(collections, tmp_path, FLEET, "-e", "gpufleet_audit_fail_on_drift=true")
    assert rc == 2, out
    assert "drift from the baseline on 1 host(s): gpu10: driver branch 580 expected, found 575.57.08" in out
    assert (tmp_path / "reports" / "gpufleet-audit.json").exists()


def test_no_drift_passes_with_fail_on_drift(collections, tmp_path):
    hosts = {"gpu01": FLEET["gpu01"], "login01": FLEET["login01"]}
    rc, out = run(collections, tmp_path, hosts, "-e", "gpufleet_audit_fail_on_drift=true")
    assert rc == 0, out


def test_fail_on_unreachable(collections, tmp_path):
    rc, out = run(collections, tmp_path, FLEET, "-e", "gpufleet_audit_fail_on_unreachable=true")
    assert rc == 2, out
    assert "2 host(s) not audited (unreachable or failed): gpu99 (" in out
    assert "old01 (nvidia_facts: Python 3.6 on the target is too old (>= 3.9 needed))" in out


def test_a_host_whose_module_cannot_start_is_failed_with_its_own_words(collections, tmp_path):
    """Not only "Module result deserialization failed": the module's stderr, on one line, everywhere."""
    hosts = {"gpu01": FLEET["gpu01"], "crash01": local("crash.json")}
    rc, out = run(collections, tmp_path, hosts)
    assert rc == 0, out  # like an unreachable host: reported, the run goes on
    cause = "module stderr: /bin/sh: 1: /usr/libexec/platform-python: not found\\n\\x1b[0m"
    report = json.loads((tmp_path / "reports" / "gpufleet-audit.json").read_text())
    (crash,) = [h for h in report["hosts"] if h["name"] == "crash01"]
    assert crash["status"] == "failed"
    # ansible-core's first words: "Module result deserialization failed" (2.19), "MODULE FAILURE" (2.16-2.18)
    core_words = ("Module result deserialization failed", "MODULE FAILURE")
    assert crash["message"].startswith(core_words), crash["message"]
    assert crash["message"].endswith(cause), crash["message"]
    assert cause in (tmp_path / "reports" / "gpufleet-audit.csv").read_text()
    assert f"crash01 failed: {crash['message']}" in out  # the summary at the end of the run
    rc, out = run(collections, tmp_path, hosts, "-e", "gpufleet_audit_fail_on_failed=true")
    assert rc == 2, out
    assert f"1 host(s) failed (nvidia_facts did not run through): crash01 ({crash['message'][:14]}" in out
    assert (tmp_path / "reports" / "gpufleet-audit.json").exists()


def test_malformed_baseline_fails_before_gathering(collections, tmp_path):
    hosts = dict(FLEET, gpu01=local("h200.json", gpufleet_baseline={"cudnn": {"13": "9.14"}}))
    rc, out = run(collections, tmp_path, hosts)
    assert rc == 2, out
    assert "gpufleet_baseline (host gpu01): unknown key 'cudnn'; allowed keys:" in out
    assert "nvidia_facts" not in out.split("Audit preflight")[1].split("PLAY RECAP")[0].replace(
        "Audit - one nvidia_facts round trip per host", ""
    )
    assert "Gather ansible_facts.nvidia" not in out


def test_unwritable_report_dir_fails_before_gathering(collections, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    rc, out = run(collections, tmp_path, FLEET, "-e", f"gpufleet_audit_report_dir={blocker}/reports")
    assert rc == 2, out
    assert f"gpufleet_audit_report_dir: cannot create {blocker}/reports: Not a directory" in out
    assert "Gather ansible_facts.nvidia" not in out


def test_check_mode_writes_nothing(collections, tmp_path):
    rc, out = run(collections, tmp_path, {"gpu01": FLEET["gpu01"]}, check=True)
    assert rc == 0, out
    assert not (tmp_path / "reports").exists()
    assert "1 host(s): 1 audited" in out


def test_linear_strategy_and_formats_subset(collections, tmp_path):
    rc, out = run(
        collections,
        tmp_path,
        {"gpu01": FLEET["gpu01"], "gpu99": UNREACHABLE},
        "-e",
        "gpufleet_audit_strategy=linear",
        "-e",
        '{"gpufleet_audit_report_formats": ["json", "prom"]}',
    )
    assert rc == 0, out
    assert sorted(os.listdir(tmp_path / "reports")) == ["gpufleet-audit.json", "gpufleet.prom"]


def test_limit_reports_only_the_limited_hosts(collections, tmp_path):
    rc, out = run(collections, tmp_path, FLEET, "--limit", "gpu01,localhost")
    assert rc == 0, out
    report = json.loads((tmp_path / "reports" / "gpufleet-audit.json").read_text())
    assert [h["name"] for h in report["hosts"]] == ["gpu01"]


def test_documentation_parses_and_matches_the_action():
    tree = ast.parse((ROOT / "plugins" / "modules" / "nvidia_fleet_report.py").read_text())
    docs = {
        node.targets[0].id: yaml.safe_load(node.value.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and node.targets[0].id in ("DOCUMENTATION", "EXAMPLES", "RETURN")
    }
    assert set(docs) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}
    options = docs["DOCUMENTATION"]["options"]
    assert set(options) == set(ARGS)
    for name, spec in ARGS.items():
        assert options[name]["type"] == spec["type"], name
        assert options[name].get("default") == spec.get("default"), name


def test_a_wrong_audit_variable_is_named_before_gathering(collections, tmp_path):
    rc, out = run(collections, tmp_path, FLEET, "-e", "gpufleet_audit_fail_on_drift=perhaps")
    assert rc == 2, out
    assert "gpufleet_audit_fail_on_drift: 'perhaps' is not a boolean; allowed: true or false" in out
    assert "argument 'fail_on_drift'" not in out
    assert "Gather ansible_facts.nvidia" not in out


def test_the_default_report_dir_is_reports_in_the_directory_ansible_playbook_runs_in(collections, tmp_path):
    """Not beside the playbook: for an installed collection's playbooks/, that was inside the collection."""
    work = tmp_path / "work"
    work.mkdir()
    installed = collections / "ansible_collections" / "gpufleet" / "nvidia"
    (installed / "playbooks").mkdir()
    for name in ("audit.yml", "audit_merge.yml"):
        (installed / "playbooks" / name).symlink_to(ROOT / "playbooks" / name)
    rc, out = run(
        collections, tmp_path, {"gpu01": FLEET["gpu01"]}, cwd=work, report_dir=False,
        playbook=installed / "playbooks" / "audit.yml",
    )  # fmt: skip
    assert rc == 0, out
    assert (work / "reports" / "gpufleet-audit.json").is_file()
    assert f"HTML report: {work / 'reports' / 'gpufleet-audit.html'}" in out
    assert not (installed / "reports").exists()
    # the merge reads and writes the same default directory
    rc, out = run(
        collections, tmp_path, {"gpu01": FLEET["gpu01"]}, "-e", "gpufleet_audit_slice=1", "-e",
        "gpufleet_audit_slices=2", cwd=work, report_dir=False, playbook=installed / "playbooks" / "audit.yml",
    )  # fmt: skip
    assert rc == 0, out
    assert (work / "reports" / "gpufleet-audit.slice-1-of-2.json").is_file()
    rc, out = run(
        collections, tmp_path, {"gpu01": FLEET["gpu01"]}, cwd=work, report_dir=False,
        playbook=installed / "playbooks" / "audit_merge.yml",
    )  # fmt: skip
    assert rc == 0, out
    assert "slices missing: 2" in out
    assert not (installed / "reports").exists()


def test_validated_variables_keep_ansible_lists_and_booleans():
    assert validated_variables(
        {"gpufleet_audit_fail_on_drift": "yes", "gpufleet_audit_gather_subset": ["all", "!cudnn"]}
    ) == {"gpufleet_audit_fail_on_drift": True, "gpufleet_audit_gather_subset": ["all", "!cudnn"]}


# -- sliced runs: each slice writes its slice report, audit_merge.yml writes the fleet report ---------------
MERGE_PLAYBOOK = ROOT / "playbooks" / "audit_merge.yml"
SHARDS = {1: "gpu01,gpu10,localhost", 2: "login01,old01,gpu99,localhost"}


def test_sliced_runs_merge_into_the_single_run_report(collections, tmp_path):
    single = tmp_path / "single"
    rc, out = run(collections, tmp_path, FLEET, "-e", f"gpufleet_audit_report_dir={single}")
    assert rc == 0, out
    for number, limit in SHARDS.items():
        rc, out = run(
            collections,
            tmp_path,
            FLEET,
            "--limit",
            limit,
            "-e",
            f"gpufleet_audit_slice={number}",
            "-e",
            "gpufleet_audit_slices=2",
        )
        assert rc == 0, out
        assert (
            f"slice {number} of 2: slice report {tmp_path / 'reports'}/gpufleet-audit.slice-{number}-of-2"
            in out
        )
    assert sorted(os.listdir(tmp_path / "reports")) == [
        "gpufleet-audit.slice-1-of-2.json",
        "gpufleet-audit.slice-2-of-2.json",
    ]
    rc, out = run(collections, tmp_path, FLEET, playbook=MERGE_PLAYBOOK)
    assert rc == 0, out
    assert "5 host(s): 3 audited, 1 unreachable, 1 failed, 1 without GPU" in out
    merged = json.loads((tmp_path / "reports" / "gpufleet-audit.json").read_text())
    alone = json.loads((single / "gpufleet-audit.json").read_text())
    note = merged.pop("merge")
    assert [s["number"] for s in note["slices"]] == [1, 2] and note["missing"] == []
    for report in (merged, alone):
        report.pop("generated_at")
        for h in report["hosts"]:
            h.pop("message")  # the unreachable host's ssh message names its own connection
            for finding in h["findings"]:
                if finding["code"] == "unreachable":
                    finding.pop("message")  # ssh's words vary: 'Connection refused' or, racing, 'Broken pipe'
    assert merged == alone
    assert (tmp_path / "reports" / "gpufleet-audit.html").exists()


def test_merge_names_hosts_in_no_slice_and_refuses_another_baseline(collections, tmp_path):
    rc, out = run(
        collections, tmp_path, FLEET, "--limit", SHARDS[1], "-e", "gpufleet_audit_slice=1", "-e",
        "gpufleet_audit_slices=2",
    )  # fmt: skip
    assert rc == 0, out
    rc, out = run(collections, tmp_path, FLEET, playbook=MERGE_PLAYBOOK)
    assert rc == 0, out
    assert "slices missing: 2" in out
    assert "3 host(s) in no slice (reported as failed): gpu99, login01, old01" in out
    rc, out = run(
        collections, tmp_path, FLEET, "-e", "gpufleet_audit_fail_on_unreachable=true", playbook=MERGE_PLAYBOOK
    )
    assert rc == 2, out
    moved = dict(FLEET, gpu10=local("oldtrain.json", gpufleet_baseline={"driver_branch": "575"}))
    rc, out = run(collections, tmp_path, moved, playbook=MERGE_PLAYBOOK)
    assert rc == 2, out
    assert "against another baseline than the inventory's: gpu10 (slice 1:" in out


def test_a_wrong_slice_variable_is_named_before_gathering(collections, tmp_path):
    rc, out = run(
        collections, tmp_path, FLEET, "-e", "gpufleet_audit_slice=3", "-e", "gpufleet_audit_slices=2"
    )
    assert rc == 2, out
    assert "gpufleet_audit_slice: 3 is above gpufleet_audit_slices (2)" in out
    assert "Gather ansible_facts.nvidia" not in out


# -- each audited host's own series in node_exporter's textfile directory ----------------------------------
TEXTFILE_VAR = "gpufleet_audit_prometheus_textfile_dir"


def with_textfile_dirs(tmp_path, names):
    dirs = {name: tmp_path / "textfile" / name for name in names}
    for directory in dirs.values():
        directory.mkdir(parents=True)
    hosts = {
        name: dict(hv, **{TEXTFILE_VAR: str(dirs[name])}) if name in dirs else hv
        for name, hv in FLEET.items()
    }
    return hosts, dirs


def test_each_audited_host_gets_its_own_series_in_its_textfile_directory(collections, tmp_path):
    hosts, dirs = with_textfile_dirs(tmp_path, ("gpu01", "login01", "gpu10", "gpu99"))
    rc, out = run(collections, tmp_path, hosts, "-e", "gpufleet_audit_fail_on_drift=true")
    # gpu10 drifts: the run fails for it, after the reports and every node's file were written
    assert rc == 2, out
    assert "drift from the baseline on 1 host(s): gpu10: driver branch 580 expected" in out
    fleet = parse_exposition((tmp_path / "reports" / "gpufleet.prom").read_text())
    for name in ("gpu01", "login01", "gpu10"):
        assert os.listdir(dirs[name]) == ["gpufleet.prom"], name  # and no temporary file left
        node = parse_exposition((dirs[name] / "gpufleet.prom").read_text())
        for family, samples in fleet.items():
            assert node.get(family, []) == [(lb, v) for lb, v in samples if lb.get("host", name) == name]
    assert os.listdir(dirs["gpu99"]) == []  # unreachable: nothing written, and no second unreachable error
    assert "Audit verdict" in out


def test_a_wrong_textfile_directory_is_named_with_its_host(collections, tmp_path):
    hosts, dirs = with_textfile_dirs(tmp_path, ("gpu01",))
    hosts["gpu01"][TEXTFILE_VAR] = "node-exporter/textfile"
    rc, out = run(collections, tmp_path, hosts)
    assert rc == 2, out
    assert f"{TEXTFILE_VAR} (host gpu01): 'node-exporter/textfile' is not an absolute path" in out
    assert "Gather ansible_facts.nvidia" not in out
    # a directory that is not on the host fails the write there, once the reports are written
    hosts["gpu01"][TEXTFILE_VAR] = str(dirs["gpu01"] / "missing")
    rc, out = run(collections, tmp_path, hosts)
    assert rc == 2, out
    assert f"{TEXTFILE_VAR}: {dirs['gpu01'] / 'missing'} is not a directory on this host" in out
    assert (tmp_path / "reports" / "gpufleet-audit.json").exists()


def test_a_hosts_own_textfile_directory_wins_over_the_runs():
    """The run's value (-e, or play variables, which host variables do not hold) for the hosts without one."""
    hostvars = {"a": {TEXTFILE_VAR: "/srv/a/"}, "b": {}, "c": {TEXTFILE_VAR: None}}
    assert textfile_dirs(["a", "b", "c"], hostvars, TEXTFILE_VAR, "/var/lib/node") == {
        "a": "/srv/a",
        "b": "/var/lib/node",
        "c": "/var/lib/node",
    }
    assert textfile_dirs(["a", "b"], hostvars, TEXTFILE_VAR) == {"a": "/srv/a"}
    refused = rf"^{TEXTFILE_VAR} \(host b\): 'node' is not an absolute path"
    with pytest.raises(AnsibleActionFail, match=refused):
        textfile_dirs(["a", "b"], hostvars, TEXTFILE_VAR, "node")
