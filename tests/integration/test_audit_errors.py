"""playbooks/audit.yml: a wrong gpufleet_audit_* variable fails the preflight, before any host is contacted,
with a message naming that variable (as the user wrote it), its value and what is allowed, and only it.

Run: .venv/bin/pytest tests/integration/test_audit_errors.py
"""

import pytest

from tests.playbook import ROOT, run

AUDIT = ROOT / "playbooks/audit.yml"
GATHER = "Gather ansible_facts.nvidia (GPUs, driver, CUDA toolkits, every cuDNN copy)"
PREFLIGHT = "Check every gpufleet_audit_* variable, the report directory and every baseline"

# every variable set to a good value, in the forms users write (strings from -e, lists, yes/no)
GOOD = {
    "gpufleet_audit_hosts": "all",
    "gpufleet_audit_report_formats": "json,md",
    "gpufleet_audit_fail_on_drift": "no",
    "gpufleet_audit_fail_on_unreachable": False,
    "gpufleet_audit_fail_on_failed": "yes",
    "gpufleet_audit_gather_facts": "false",
    "gpufleet_audit_strategy": "linear",
    "gpufleet_audit_gather_subset": ["all", "!cudnn"],
    "gpufleet_audit_cudnn_search_paths": ["/opt"],
    "gpufleet_audit_prometheus_textfile_dir": "/tmp/./",
}

WRONG = [
    (
        "gpufleet_audit_fail_on_drift",
        "perhaps",
        "gpufleet_audit_fail_on_drift: 'perhaps' is not a boolean; allowed: true or false",
    ),
    (
        "gpufleet_audit_fail_on_unreachable",
        "sometimes",
        "gpufleet_audit_fail_on_unreachable: 'sometimes' is not a boolean; allowed: true or false",
    ),
    (
        "gpufleet_audit_fail_on_failed",
        "at times",
        "gpufleet_audit_fail_on_failed: 'at times' is not a boolean; allowed: true or false",
    ),
    (
        "gpufleet_audit_gather_facts",
        "maybe",
        "gpufleet_audit_gather_facts: 'maybe' is not a boolean; allowed: true or false",
    ),
    (
        "gpufleet_audit_report_formats",
        ["json", "pdf"],
        "gpufleet_audit_report_formats: ['json', 'pdf']: 'pdf' is not a report format; "
        "allowed: a subset of [json, csv, md, html, prom]",
    ),
    (
        "gpufleet_audit_strategy",
        "fastest",
        "gpufleet_audit_strategy: 'fastest' is not a play strategy; "
        "allowed: linear, free, host_pinned, debug",
    ),
    (
        "gpufleet_audit_gather_subset",
        ["all", "!gpus"],
        "gpufleet_audit_gather_subset: ['all', '!gpus']: '!gpus' is not a subset; "
        "allowed: all, gpu, driver, cuda, cudnn",
    ),
    (
        "gpufleet_audit_cudnn_search_paths",
        ["/opt", "workspace"],
        "gpufleet_audit_cudnn_search_paths: ['/opt', 'workspace']: 'workspace' is not an absolute path",
    ),
    (
        "gpufleet_audit_prometheus_textfile_dir",
        "var/lib/node_exporter",
        "gpufleet_audit_prometheus_textfile_dir: 'var/lib/node_exporter' is not an absolute path; allowed: "
        "the absolute path of node_exporter's textfile directory",
    ),
    (
        "gpufleet_audit_report_dir",
        ["reports"],
        "gpufleet_audit_report_dir: ['reports'] is not a directory; allowed: a path",
    ),
]


@pytest.mark.parametrize(("name", "value", "message"), WRONG, ids=[w[0] for w in WRONG])
def test_a_wrong_variable_is_named_before_any_host_is_contacted(tmp_path, name, value, message):
    extra = dict(GOOD, gpufleet_audit_report_dir=str(tmp_path / "reports"))
    extra[name] = value
    result = run(tmp_path, AUDIT, extra)
    assert result.rc == 2, result.text
    task, msg = result.failures()[0]
    assert task == PREFLIGHT, result.text
    assert msg.startswith(message), msg
    # only the wrong variable is named, and no module parameter name stands in for it
    assert [other for other in extra if other != name and f"{other}:" in msg] == []
    assert "argument '" not in msg
    assert GATHER not in result.tasks()
    assert not (tmp_path / "reports" / "gpufleet-audit.json").exists()


def test_two_wrong_variables_are_both_named(tmp_path):
    extra = dict(GOOD, gpufleet_audit_fail_on_drift="perhaps", gpufleet_audit_strategy="fastest")
    result = run(tmp_path, AUDIT, dict(extra, gpufleet_audit_report_dir=str(tmp_path / "r")))
    assert result.rc == 2, result.text
    _task, msg = result.failures()[0]
    assert "gpufleet_audit_fail_on_drift: 'perhaps'" in msg
    assert "gpufleet_audit_strategy: 'fastest'" in msg
    assert "gpufleet_audit_report_formats" not in msg


def test_good_values_in_every_form_pass(tmp_path):
    result = run(tmp_path, AUDIT, dict(GOOD, gpufleet_audit_report_dir=str(tmp_path / "reports")), check=True)
    assert result.rc == 0, result.text
    assert PREFLIGHT in result.tasks("localhost")
    assert GATHER in result.tasks("localhost")


# -- every input is refused in the first play, whatever its type: no traceback, no host contacted ----------
MERGE = ROOT / "playbooks/audit_merge.yml"
PREFLIGHT_PLAY = (
    "Audit preflight - the audit's variables, report directory and baselines, before any host is contacted"
)

REFUSED = [
    # a dict or list for the host pattern broke the task's own arguments before the check could name it
    (
        "hosts-dict",
        {"gpufleet_audit_hosts": {"gpu": 1}},
        "gpufleet_audit_hosts: {'gpu': 1} is not a host pattern",
    ),
    (
        "hosts-list",
        {"gpufleet_audit_hosts": ["localhost"]},
        "gpufleet_audit_hosts: ['localhost'] is not a host",
    ),
    (
        "hosts-newline",
        {"gpufleet_audit_hosts": "all\nlocalhost"},
        "gpufleet_audit_hosts: 'all\\nlocalhost' contains",
    ),
    # AWX job slicing's variables, checked before the facts play (they were read only in the report play)
    (
        "awx-not-a-number",
        {"awx_job_slice_number": "first", "awx_job_slice_count": 2},
        "awx_job_slice_number: 'first' is not a whole number; allowed: 1, 2, 3, ...",
    ),
    ("awx-zero", {"awx_job_slice_number": 0, "awx_job_slice_count": 2}, "awx_job_slice_number: 0 is below 1"),
    (
        "awx-negative",
        {"awx_job_slice_number": 1, "awx_job_slice_count": -2},
        "awx_job_slice_count: -2 is below 1",
    ),
    (
        "awx-above",
        {"awx_job_slice_number": 3, "awx_job_slice_count": 2},
        "awx_job_slice_number: 3 is above awx_job_slice_count (2)",
    ),
    # a baseline every host would drift from forever, and text that would forge report lines
    (
        "baseline-default",
        {"gpufleet_baseline": {"cuda_versions": ["13.0"], "cuda_default": "12.8"}},
        "gpufleet_baseline (host localhost).cuda_default: '12.8' is not valid; "
        "it is not in gpufleet_baseline (host localhost).cuda_versions (13.0)",
    ),
    (
        "baseline-newline",
        {"gpufleet_baseline": {"consumers_cudnn": {"/opt/torch\n| forged |": "9.19"}}},
        "gpufleet_baseline (host localhost).consumers_cudnn: '/opt/torch\\n| forged |' contains a control "
        "character",
    ),
    # paths
    (
        "report-dir-newline",
        {"gpufleet_audit_report_dir": "/tmp/r\n"},
        "gpufleet_audit_report_dir: '/tmp/r\\n' contains",
    ),
    (
        "search-path-newline",
        {"gpufleet_audit_cudnn_search_paths": ["/opt\n"]},
        "gpufleet_audit_cudnn_search_paths: ['/opt\\n'] contains a control character",
    ),
    # any other variable whose newline slipped through (read as a list, the item was stripped)
    (
        "subset-newline",
        {"gpufleet_audit_gather_subset": "all,\n!cudnn"},
        "gpufleet_audit_gather_subset: 'all,\\n!cudnn' contains a control character",
    ),
    (
        "slices-newline",
        {"gpufleet_audit_slice": "1\n", "gpufleet_audit_slices": 2},
        "gpufleet_audit_slice: '1\\n' contains",
    ),
]


def assert_refused_in_the_first_play(result, message, first_play=PREFLIGHT_PLAY, task=PREFLIGHT):
    assert result.rc == 2, result.text
    assert "Traceback" not in result.text and "Finalization of task args" not in result.text, result.text
    assert [p["play"]["name"] for p in result.plays] == [first_play], result.text
    failures = result.failures()
    assert len(failures) == 1 and failures[0][0] == task, result.text
    assert failures[0][1].startswith(message), failures[0][1]
    assert GATHER not in result.tasks()


@pytest.mark.parametrize(("case", "extra", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_wrong_input_of_any_type_is_refused_in_the_first_play(tmp_path, case, extra, message):
    values = dict({"gpufleet_audit_report_dir": str(tmp_path / "reports")}, **extra)
    result = run(tmp_path, AUDIT, values)
    assert_refused_in_the_first_play(result, message)
    assert not (tmp_path / "reports").exists()


def test_the_merge_refuses_a_dict_for_the_fleet_naming_it(tmp_path):
    result = run(
        tmp_path, MERGE, {"gpufleet_audit_hosts": {"gpu": 1}, "gpufleet_audit_report_dir": str(tmp_path)}
    )
    assert_refused_in_the_first_play(
        result,
        "gpufleet_audit_hosts: {'gpu': 1} is not a host pattern",
        first_play="Audit merge - one fleet report from the slice reports",
        task="Merge the slice reports, write the fleet report and print the summary",
    )
