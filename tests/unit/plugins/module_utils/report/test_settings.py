"""report/settings.py: the audit playbook's gpufleet_audit_* variables, named as the user wrote them."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.settings import (
    SettingsError,
    validate_settings,
)

SUBSETS = ("gpu", "driver", "cuda", "cudnn")


def check(**values):
    return validate_settings(values, SUBSETS)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        ("yes", True),
        ("true", True),
        ("On", True),
        (1, True),
        ("no", False),
        ("0", False),
        (False, False),
    ],
)
def test_booleans_read_as_ansible_reads_them(value, expected):
    assert check(gpufleet_audit_fail_on_drift=value) == {"gpufleet_audit_fail_on_drift": expected}


def test_unset_variables_are_left_to_the_playbook_defaults():
    assert check(gpufleet_audit_fail_on_drift=None, gpufleet_audit_report_formats=None) == {}
    assert validate_settings(None, SUBSETS) == {}


def test_lists_from_strings_and_lists():
    out = check(
        gpufleet_audit_report_formats="json, md",
        gpufleet_audit_gather_subset=["all", "!cudnn"],
        gpufleet_audit_cudnn_search_paths="/opt,/srv",
        gpufleet_audit_strategy="ansible.builtin.free",
        gpufleet_audit_hosts="gpu_nodes",
        gpufleet_audit_report_dir="/var/lib/gpufleet",
    )
    assert out["gpufleet_audit_report_formats"] == ["json", "md"]
    assert out["gpufleet_audit_cudnn_search_paths"] == ["/opt", "/srv"]
    assert out["gpufleet_audit_strategy"] == "ansible.builtin.free"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"gpufleet_audit_fail_on_drift": "perhaps"},
            "gpufleet_audit_fail_on_drift: 'perhaps' is not a boolean; allowed: true or false (also yes/no, "
            "on/off, 1/0)",
        ),
        ({"gpufleet_audit_gather_facts": 2}, "gpufleet_audit_gather_facts: 2 is not a boolean"),
        (
            {"gpufleet_audit_report_formats": "json,xml"},
            "gpufleet_audit_report_formats: 'json,xml': 'xml' is not a report format; "
            "allowed: a subset of [json, csv, md, html, prom]",
        ),
        (
            {"gpufleet_audit_report_formats": {"json": 1}},
            "gpufleet_audit_report_formats: {'json': 1} is not a list",
        ),
        ({"gpufleet_audit_strategy": "fast"}, "gpufleet_audit_strategy: 'fast' is not a play strategy"),
        (
            {"gpufleet_audit_gather_subset": ["gpus"]},
            "gpufleet_audit_gather_subset: ['gpus']: 'gpus' is not a subset",
        ),
        ({"gpufleet_audit_cudnn_search_paths": ["opt"]}, "'opt' is not an absolute path"),
        ({"gpufleet_audit_report_dir": ""}, "gpufleet_audit_report_dir: '' is not a directory"),
        ({"gpufleet_audit_hosts": ""}, "gpufleet_audit_hosts: '' is not a host pattern"),
        ({"gpufleet_audit_fail_on_drfit": True}, "gpufleet_audit_fail_on_drfit: not a variable of the audit"),
    ],
)
def test_a_wrong_value_names_the_variable_its_value_and_what_is_allowed(values, message):
    with pytest.raises(SettingsError) as err:
        check(gpufleet_audit_fail_on_unreachable="yes", **values)
    assert message in str(err.value)
    assert "gpufleet_audit_fail_on_unreachable" not in str(err.value).split("known:")[0]


def test_every_wrong_variable_and_only_those_are_named():
    with pytest.raises(SettingsError) as err:
        check(
            gpufleet_audit_fail_on_drift="perhaps",
            gpufleet_audit_strategy="fast",
            gpufleet_audit_report_formats=["json"],
        )
    names = [part.split(":")[0] for part in str(err.value).split("; ") if part.startswith("gpufleet_audit_")]
    assert names == ["gpufleet_audit_fail_on_drift", "gpufleet_audit_strategy"]
