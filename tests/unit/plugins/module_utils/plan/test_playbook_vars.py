"""plan/playbook_vars.py: the playbooks' own gpufleet_* variables, their one table and their checks.

Every bad value is refused naming the variable and its value (refusal.bad's wording); good values pass.
The table agrees with the playbooks: each playbook's first play checks its own variables, the defaults the
playbooks write are the table's, and the action's choices are the table's playbooks.
"""

import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_options import INPUT_PLAYBOOKS
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import playbook_vars as pv
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[5]
HOOK = "/srv/hooks/drain.yml"


def no_file_problem(_path):
    return None


def missing(_path):
    return "no such file on the controller"


def problems(playbook, name, value, file_problem=no_file_problem):
    return pv.check(playbook, {name: value}, file_problem)


def refused(playbook, name, value, shown=None, file_problem=no_file_problem):
    found = problems(playbook, name, value, file_problem)
    assert len(found) == 1, found
    assert found[0].startswith(f"{name}={shown if shown is not None else value} (allowed: "), found[0]
    return found[0]


PATTERNS = [
    "gpufleet_driver_hosts",
    "gpufleet_cuda_hosts",
    "gpufleet_cudnn_hosts",
    "gpufleet_preflight_hosts",
]


@pytest.mark.parametrize("name", PATTERNS)
@pytest.mark.parametrize(
    ("value", "shown", "why"),
    [
        ("gpu\nnodes", '"gpu\\nnodes"', "newline"),
        ("gpu\x01", '"gpu\\u0001"', "control character"),
        ("gpu\tnodes", '"gpu\\tnodes"', "control character"),
        (["gpu01", "gpu02"], '["gpu01", "gpu02"]', "a list, not a string"),
        ({"gpu01": None}, '{"gpu01": null}', "a mapping, not a string"),
        (5, "5", "a number, not a string"),
        (True, "true", "a boolean, not a string"),
        ("", '""', "empty"),
        ("  ", '"  "', "empty"),
    ],
)
def test_a_host_pattern_is_one_clean_string(name, value, shown, why):
    assert why in refused("preflight", name, value, shown)


@pytest.mark.parametrize("value", ["all", "gpu_nodes", "gpu_nodes:!login", "gpu[01:10]", "a,b", "localhost"])
def test_good_host_patterns_pass(value):
    assert problems("site", "gpufleet_driver_hosts", value) == []


@pytest.mark.parametrize(
    ("value", "shown", "why"),
    [
        ("srv/image", "srv/image", "not an absolute path"),
        ("/srv/../image", "/srv/../image", "not normalised (normalised: /image)"),
        ("/srv/image/", "/srv/image/", "not normalised"),
        ("/srv/./image", "/srv/./image", "not normalised"),
        ("//srv", "//srv", "not normalised"),
        ("/srv\n/x", '"/srv\\n/x"', "newline"),
        (["/"], '["/"]', "a list"),
    ],
)
def test_preflight_root_is_an_absolute_normalised_path(value, shown, why):
    assert why in refused("preflight", "gpufleet_preflight_root", value, shown)


@pytest.mark.parametrize("value", ["/", "/srv/images/gpu-node"])
def test_good_roots_pass(value):
    assert problems("preflight", "gpufleet_preflight_root", value) == []


SERIAL = "gpufleet_driver_upgrade_serial"


@pytest.mark.parametrize(
    ("value", "shown", "why"),
    [
        ("ten percent", "ten percent", "neither a whole number nor a percentage"),
        ("0%", "0%", "0% is below 1"),
        ("150%", "150%", "150% is above 100%"),
        ("5.5%", "5.5%", "neither"),
        (0, "0", "0 is below 1"),
        (-1, "-1", "-1 is below 1"),
        ("0", "0", "0 is below 1"),
        ("-2", "-2", "-2 is below 1"),
        (True, "true", "a boolean is not a batch size"),
        (2.5, "2.5", "a number is not a batch size"),
        ([], "[]", "an empty list"),
        ([1, "ten"], '[1, "ten"]', "ten is neither"),
        ([1, 0], "[1, 0]", "0 is below 1"),
        ({"a": 1}, '{"a": 1}', "a mapping is not a batch size"),
        ("10%\n", '"10%\\n"', "neither"),
    ],
)
def test_serial_is_what_the_play_keyword_takes(value, shown, why):
    assert why in refused("driver_upgrade", SERIAL, value, shown)


@pytest.mark.parametrize("value", [1, 10, "3", "10%", "100%", "1%", [1, "10%", "50%"], ["2", 5]])
def test_good_serials_pass(value):
    assert problems("driver_upgrade", SERIAL, value) == []


HOOKS = ["gpufleet_driver_upgrade_drain_tasks", "gpufleet_driver_upgrade_undrain_tasks"]


@pytest.mark.parametrize("name", HOOKS)
def test_a_relative_hook_is_refused_saying_why(name):
    text = refused("driver_upgrade", name, "hooks/drain.yml")
    assert "not an absolute path (a relative path resolves against the playbook's directory" in text


@pytest.mark.parametrize("name", HOOKS)
def test_a_missing_hook_file_is_refused(name):
    text = refused("driver_upgrade", name, HOOK, file_problem=missing)
    assert text.endswith(": no such file on the controller"), text


@pytest.mark.parametrize("name", HOOKS)
@pytest.mark.parametrize(("value", "shown"), [(["/a.yml"], '["/a.yml"]'), ("/a\n.yml", '"/a\\n.yml"')])
def test_a_hook_is_one_clean_string(name, value, shown):
    refused("driver_upgrade", name, value, shown)


@pytest.mark.parametrize("name", HOOKS)
@pytest.mark.parametrize("value", ["", HOOK, None])
def test_good_hooks_pass(name, value):
    assert problems("driver_upgrade", name, value) == []


def test_every_wrong_variable_is_named_and_only_those():
    found = pv.check(
        "driver_upgrade",
        {
            "gpufleet_driver_hosts": ["a"],
            SERIAL: "ten percent",
            "gpufleet_driver_upgrade_drain_tasks": HOOK,
            "gpufleet_driver_upgrade_undrain_tasks": "rel.yml",
        },
        no_file_problem,
    )
    assert [p.split("=", 1)[0] for p in found] == [
        "gpufleet_driver_hosts",
        SERIAL,
        "gpufleet_driver_upgrade_undrain_tasks",
    ]


def test_a_playbook_checks_only_its_own_variables():
    assert pv.check("cuda", {"gpufleet_driver_hosts": ["a"], SERIAL: 0}, no_file_problem) == []
    assert pv.variables_of("site") == ["gpufleet_driver_hosts", "gpufleet_cuda_hosts", "gpufleet_cudnn_hosts"]
    with pytest.raises(ValueError, match="playbook=audit"):
        pv.check("audit", {}, no_file_problem)


@pytest.mark.parametrize(
    ("run_tags", "skip_tags", "expected"),
    [
        (["all"], [], ["nvidia_driver", "cuda_toolkit", "cudnn"]),
        ([], [], ["nvidia_driver", "cuda_toolkit", "cudnn"]),
        (["cudnn"], [], ["cudnn"]),
        (["cuda_toolkit_verify", "nvidia_driver"], [], ["nvidia_driver", "cuda_toolkit"]),
        (["tagged"], [], ["nvidia_driver", "cuda_toolkit", "cudnn"]),
        (["always"], [], []),
        (["all"], ["nvidia_driver"], ["cuda_toolkit", "cudnn"]),
        # the role's preflight carries every phase tag: skipping one skips the plan
        (["all"], ["cudnn_install"], ["nvidia_driver", "cuda_toolkit"]),
        (["cudnn"], ["tagged"], []),
    ],
)
def test_roles_run_follows_the_tags(run_tags, skip_tags, expected):
    assert pv.roles_run(pv.PLAYBOOK_ROLES["site"], run_tags, skip_tags) == expected


def test_the_actions_choices_are_the_tables_playbooks():
    assert INPUT_PLAYBOOKS == pv.PLAYBOOKS == sorted(pv.PLAYBOOK_ROLES)


def _plays(playbook):
    return yaml.safe_load((ROOT / "playbooks" / f"{playbook}.yml").read_text())


@pytest.mark.parametrize("playbook", pv.PLAYBOOKS)
def test_each_playbook_checks_its_own_variables_first(playbook):
    first = _plays(playbook)[0]
    task = first["tasks"][0]
    assert task["gpufleet.nvidia.nvidia_inputs"] == {"playbook": playbook}
    assert first["gather_facts"] is False
    assert task["run_once"] is True and task["delegate_to"] == "localhost"
    assert "always" in task["tags"]


@pytest.mark.parametrize("playbook", pv.PLAYBOOKS)
def test_the_playbooks_read_only_declared_variables_with_the_tables_defaults(playbook):
    """Every gpufleet_* variable a playbook reads is declared for it, with the default it writes."""
    text = (ROOT / "playbooks" / f"{playbook}.yml").read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    read = set(re.findall(r"\b(gpufleet_[a-z_]+)\b", code))
    assert read <= set(pv.variables_of(playbook)), read - set(pv.variables_of(playbook))
    for name, default in re.findall(r"\b(gpufleet_[a-z_]+) \| default\('([^']*)'\)", code):
        assert default == pv.PLAYBOOK_VARS[name].default, (name, default)


# ---------------------------------------------------------------------------------------------------
# Issue 35's property: every playbook variable, in every playbook that reads it, refuses newlines,
# control characters and wrong types (and, for paths and the serial, relative paths and shell
# metacharacters), naming the variable
# ---------------------------------------------------------------------------------------------------
CONTROL = st.sampled_from([chr(c) for c in range(32)] + ["\x7f", "\x85", "\u2028"])
TEXT = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=10)
WITH_CONTROL = st.builds(lambda a, c, b: a + c + b, TEXT, CONTROL, TEXT)
WRONG_KIND = st.one_of(
    st.lists(TEXT, min_size=1, max_size=2), st.dictionaries(TEXT, TEXT, min_size=1, max_size=1)
)
NOT_A_PATH = st.sampled_from(["rel/path", "./x", "../x", "$(id)", "`id`", "a;b", "x|y", "/a/../b", "/a//b"])
NOT_A_SERIAL = st.sampled_from(["ten percent", "0%", "150%", "$(id)", "a;b", "-1", "0", "1.5"])
BAD = {
    pv.PATTERN: st.one_of(WITH_CONTROL, WRONG_KIND),
    pv.ROOT: st.one_of(WITH_CONTROL, WRONG_KIND, NOT_A_PATH),
    pv.HOOK: st.one_of(WITH_CONTROL, WRONG_KIND, NOT_A_PATH),
    pv.SERIAL: st.one_of(WITH_CONTROL, st.dictionaries(TEXT, TEXT, min_size=1, max_size=1), NOT_A_SERIAL),
}
READERS = [(playbook, name) for name, var in pv.PLAYBOOK_VARS.items() for playbook in var.playbooks]


@pytest.mark.parametrize(("playbook", "name"), READERS, ids=[f"{p}.{n}" for p, n in READERS])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_every_bad_value_of_every_playbook_variable_is_refused_naming_it(playbook, name, data):
    value = data.draw(BAD[pv.PLAYBOOK_VARS[name].kind], label=name)
    found = problems(playbook, name, value)
    assert found and found[0].startswith(f"{name}="), (value, found)
