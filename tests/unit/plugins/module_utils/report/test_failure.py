"""report/failure.py: why a host could not be audited, in the module's own words, and what fails the run."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build as rp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import failure as rfail

# what ansible-core 2.19 registers for a module whose output is not JSON (python missing on the host)
NO_PYTHON = {
    "failed": True,
    "msg": "Module result deserialization failed: No start of json char found",
    "exception": "(traceback unavailable)",
    "module_stderr": "/bin/sh: 1: /usr/bin/python3: not found\n",
    "module_stdout": "",
    "rc": 127,
}
# what ansible-core 2.16-2.18 register for a module that raised: the traceback is in module_stderr
TRACEBACK = (
    "Traceback (most recent call last):\n"
    + '  File "x.py", line 3, in <module>\n' * 40
    + ("ImportError: libpython3.6m.so.1.0: cannot open shared object file\x1b[0m\n")
)
OLD_CORE = {
    "failed": True,
    "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error",
    "module_stderr": TRACEBACK,
}


def test_the_module_stderr_is_the_cause_not_only_ansibles_words():
    message = rfail.failure_message(NO_PYTHON)
    assert message == (
        "Module result deserialization failed: No start of json char found; "
        "module stderr: /bin/sh: 1: /usr/bin/python3: not found"
    )


def test_a_long_traceback_keeps_its_end_on_one_line_with_escapes():
    message = rfail.failure_message(OLD_CORE)
    assert message.startswith("MODULE FAILURE\\nSee stdout/stderr for the exact error; module stderr: ...")
    assert message.endswith("ImportError: libpython3.6m.so.1.0: cannot open shared object file\\x1b[0m")
    assert "\n" not in message and "\x1b" not in message
    cause = message.split("; module stderr: ", 1)[1]
    assert len(cause) < rfail.CAUSE_CHARS + 40  # its last CAUSE_CHARS characters, a few of them escaped


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"failed": True, "msg": "Python 3.6 is too old"}, "Python 3.6 is too old"),
        ({"failed": True, "msg": "x", "exception": "(traceback unavailable)"}, "x"),
        ({"failed": True, "msg": "x", "exception": "Traceback ...\nKeyError: 'gpus'"}, "x; exception: "
         "Traceback ...\\nKeyError: 'gpus'"),
        ({"failed": True, "msg": "x", "module_stdout": "not json\n"}, "x; module stdout: not json"),
        ({"failed": True, "msg": "boom: stderr text", "module_stderr": "stderr text"}, "boom: stderr text"),
        ({"failed": True}, "nvidia_facts failed"),
        ({"failed": True, "msg": "tab\there\u2028and\u0085more"}, "tab\\there\\u2028and\\x85more"),
    ],
)  # fmt: skip
def test_failure_messages(result, message):
    assert rfail.failure_message(result) == message


def test_the_report_and_the_console_carry_the_cause():
    rec = rp.record_from_result("old01", NO_PYTHON)
    assert rec["status"] == "failed"
    assert rec["message"].endswith("module stderr: /bin/sh: 1: /usr/bin/python3: not found")
    report = rp.build_report([rec], use_compat=False)
    (h,) = report["hosts"]
    assert h["findings"][0]["message"] == f"host failed: {rec['message']}"
    assert rfail.not_audited_lines(report) == [f"old01 failed: {rec['message']}"]
    unreachable = rp.record_from_result("gpu99", {"unreachable": True, "msg": "ssh: connect: refused\r\n"})
    assert unreachable["message"] == "ssh: connect: refused"


def fleet():
    records = [
        rp.record_from_result("old01", NO_PYTHON),
        {"name": "gpu99", "status": "unreachable", "message": "ssh: no route"},
        {"name": "gpu01", "status": "ok", "facts": {"gpu_count": 0}},
    ]
    return rp.build_report(records, use_compat=False)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, []),
        (
            {"fail_on_failed": True},
            ["1 host(s) failed (nvidia_facts did not run through): old01 (Module result deserialization "
             "failed: No start of json char found; module stderr: /bin/sh: 1: /usr/bin/python3: not found)"],
        ),
        (
            {"fail_on_unreachable": True},
            ["2 host(s) not audited (unreachable or failed): gpu99 (ssh: no route), old01 (Module result "
             "deserialization failed: No start of json char found; module stderr: /bin/sh: 1: "
             "/usr/bin/python3: not found)"],
        ),
    ],
)  # fmt: skip
def test_a_failed_host_fails_the_run_only_when_asked(flags, expected):
    assert rfail.run_problems(fleet(), [], **flags) == expected


def test_only_the_first_hosts_are_quoted():
    records = [{"name": f"h{i}", "status": "failed", "message": "m"} for i in range(8)]
    (problem,) = rfail.run_problems(rp.build_report(records), [], fail_on_failed=True)
    assert problem.endswith("h4 (m) and 3 more")
