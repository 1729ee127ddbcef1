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
    "gpufleet_audit_gather_facts": "false",
    "gpufleet_audit_strategy": "linear",
    "gpufleet_audit_gather_subset": ["all", "!cudnn"],
    "gpufleet_audit_cudnn_search_paths": ["/opt"],
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
