"""report/settings.py: the audit playbook's gpufleet_audit_* variables, named as the user wrote them."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.settings import (
    SettingsError,
    report_dir_of,
    validate_host_values,
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


# -- every variable, every wrong type, before any host is contacted ------------------------------------------
GOOD = {
    "gpufleet_audit_hosts": "gpu_nodes:!gpu99",
    "gpufleet_audit_report_dir": "/srv/audit",
    "gpufleet_audit_report_formats": "json,md",
    "gpufleet_audit_fail_on_drift": "yes",
    "gpufleet_audit_fail_on_unreachable": "no",
    "gpufleet_audit_fail_on_failed": "on",
    "gpufleet_audit_gather_facts": "false",
    "gpufleet_audit_strategy": "linear",
    "gpufleet_audit_gather_subset": "all,!cudnn",
    "gpufleet_audit_cudnn_search_paths": "/opt,/srv",
    "gpufleet_audit_slice": "2",
    "gpufleet_audit_slices": "3",
    "gpufleet_audit_slice_dir": "/srv/audit/slices",
    "gpufleet_audit_prometheus_textfile_dir": "/var/lib/prometheus/node-exporter",
    "awx_job_slice_number": 2,
    "awx_job_slice_count": 3,
}


def test_every_variable_refuses_a_list_a_dict_an_int_and_a_newline_naming_itself():
    accepted = []
    for name, good in GOOD.items():
        text = str(good)
        number = 0 if "slice" in name else 7
        for wrong in ([text, [text]], {"a": text}, number, text + "\n", text[:1] + "\n" + text[1:]):
            values = dict(GOOD, **{name: wrong})
            try:
                check(**values)
            except SettingsError as exc:
                if not str(exc).startswith(f"{name}: ") or f"{wrong!r}" not in str(exc):
                    accepted.append((name, wrong, str(exc)))
            else:
                accepted.append((name, wrong, "accepted"))
    assert accepted == []


@pytest.mark.parametrize("value", [{"a": 1}, ["gpu_nodes"], "all\nlocalhost", "gpu_nodes\t"])
def test_hosts_is_one_pattern_string(value):
    with pytest.raises(SettingsError) as err:
        check(gpufleet_audit_hosts=value)
    assert str(err.value).startswith(f"gpufleet_audit_hosts: {value!r} "), err.value
    allowed = "contains a control character" if isinstance(value, str) else "allowed: a host pattern string"
    assert allowed in str(err.value)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"awx_job_slice_number": "two", "awx_job_slice_count": 3},
            "awx_job_slice_number: 'two' is not a whole number; allowed: 1, 2, 3, ...",
        ),
        ({"awx_job_slice_number": 1, "awx_job_slice_count": 0}, "awx_job_slice_count: 0 is below 1"),
        ({"awx_job_slice_number": -1, "awx_job_slice_count": 2}, "awx_job_slice_number: -1 is below 1"),
        ({"awx_job_slice_number": 1.5, "awx_job_slice_count": 2}, "awx_job_slice_number: 1.5 is not a whole"),
        (
            {"awx_job_slice_number": 3, "awx_job_slice_count": 2},
            "awx_job_slice_number: 3 is above awx_job_slice_count (2)",
        ),
        (
            {"gpufleet_audit_slice": 3, "awx_job_slice_count": 2},
            "gpufleet_audit_slice: 3 is above awx_job_slice_count (2)",
        ),
        (
            {"awx_job_slice_number": 2, "gpufleet_audit_slices": 1},
            "awx_job_slice_number: 2 is above gpufleet_audit_slices (1)",
        ),
        ({"awx_job_slice_number": 2}, "awx_job_slice_number: set both"),
    ],
)
def test_awx_slice_variables_are_checked_as_the_report_play_reads_them(values, message):
    with pytest.raises(SettingsError) as err:
        check(**values)
    assert str(err.value).startswith(message), err.value


def test_awx_slices_normalized_and_overridden_by_the_gpufleet_ones():
    assert check(awx_job_slice_number="2", awx_job_slice_count=4) == {
        "awx_job_slice_number": 2,
        "awx_job_slice_count": 4,
    }
    # gpufleet_audit_slice(s) win over AWX's (the report play's default()): 1 of 2 is a good slice
    check(gpufleet_audit_slice=1, gpufleet_audit_slices=2, awx_job_slice_number=5, awx_job_slice_count=6)


def test_paths_are_normalized_and_relative_report_dirs_kept_relative():
    out = check(
        gpufleet_audit_report_dir="reports/./daily/",
        gpufleet_audit_slice_dir="/shared//audit/../slices",
        gpufleet_audit_cudnn_search_paths=["/opt/./envs/", "//srv"],
    )
    assert out == {
        "gpufleet_audit_report_dir": "reports/daily",
        "gpufleet_audit_slice_dir": "/shared/slices",
        "gpufleet_audit_cudnn_search_paths": ["/opt/envs", "/srv"],
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"gpufleet_audit_report_dir": "/srv/audit\n"},
            "gpufleet_audit_report_dir: '/srv/audit\\n' contains a control character",
        ),
        (
            {"gpufleet_audit_cudnn_search_paths": ["/opt", "/srv\n"]},
            "gpufleet_audit_cudnn_search_paths: ['/opt', '/srv\\n'] contains a control character",
        ),
        (
            {"gpufleet_audit_report_formats": "json,\nmd"},
            "gpufleet_audit_report_formats: 'json,\\nmd' contains a control character",
        ),
    ],
)
def test_control_characters_are_refused_naming_the_variable(values, message):
    with pytest.raises(SettingsError) as err:
        check(**values)
    assert str(err.value).startswith(message), err.value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "/home/admin/fleet/reports"),
        ("", "/home/admin/fleet/reports"),
        ("out/./audit/", "/home/admin/fleet/out/audit"),
        ("../shared", "/home/admin/shared"),
        ("/srv/audit", "/srv/audit"),
    ],
)
def test_the_report_dir_is_relative_to_the_directory_ansible_playbook_runs_in(value, expected):
    """Default reports/ there, never beside the playbook (inside an installed collection)."""
    assert report_dir_of(value, "/home/admin/fleet") == expected


def test_the_textfile_directory_is_an_absolute_path_for_the_run_and_per_host():
    assert check(gpufleet_audit_prometheus_textfile_dir="/var/lib/node_exporter/./") == {
        "gpufleet_audit_prometheus_textfile_dir": "/var/lib/node_exporter"
    }
    with pytest.raises(SettingsError, match=r"^gpufleet_audit_prometheus_textfile_dir: 'textfile' is not an"):
        check(gpufleet_audit_prometheus_textfile_dir="textfile")
    var = "gpufleet_audit_prometheus_textfile_dir"
    assert validate_host_values(var, {"a": "/srv/tf/", "b": None}) == {"a": "/srv/tf"}
    with pytest.raises(SettingsError) as err:
        validate_host_values(var, {"a": "/srv/tf", "b": "tf", "c": "/srv/\ntf", "d": ["/srv"]})
    assert str(err.value) == (
        f"{var} (host b): 'tf' is not an absolute path; allowed: the absolute path of node_exporter's "
        f"textfile directory on the hosts (--collector.textfile.directory); {var} (host c): '/srv/\\ntf' "
        "contains a control character ('\\n'); allowed: printable text (no newline, tab or other control "
        f"character); {var} (host d): ['/srv'] is not an absolute path; allowed: the absolute path of "
        "node_exporter's textfile directory on the hosts (--collector.textfile.directory)"
    )
