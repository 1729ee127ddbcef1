"""Every conditional of every task in the project's YAML is a string (or a boolean).

ansible-core 2.19 refuses a conditional that is not a string ("Conditional expressions must be strings"),
and YAML makes a mapping of an unquoted expression with ": " inside (`x is search('with: y')`). yamllint
and ansible-lint accept such a line; only the run that reaches the task fails: molecule driver-vm-upgrade's
prepare did, an hour and a half into `make test-all`. Scanned: `when`, `changed_when`, `failed_when`,
`until` and the `that` of assert, in tasks, handlers, blocks and plays of roles/, playbooks/ and molecule/.
"""

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
KEYS = ("when", "changed_when", "failed_when", "until")
ASSERT = ("ansible.builtin.assert", "assert")
NESTED = ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always")


def yaml_files():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [
        f
        for f in out.splitlines()
        if f.endswith((".yml", ".yaml")) and f.startswith(("roles/", "playbooks/", "molecule/"))
    ]


def _conditions(task):
    for key in KEYS:
        value = task.get(key)
        yield from ((key, v) for v in (value if isinstance(value, list) else [value]) if value is not None)
    for name in ASSERT:
        args = task.get(name)
        if isinstance(args, dict):
            that = args.get("that")
            yield from (("that", v) for v in (that if isinstance(that, list) else [that]))


def bad_conditions(node, where=""):
    """(where, key, value) of each conditional under ``node`` that is neither a string nor a boolean."""
    found = []
    if isinstance(node, list):
        for item in node:
            found += bad_conditions(item, where)
    elif isinstance(node, dict):
        name = node.get("name", where)
        found += [(name, k, v) for k, v in _conditions(node) if not isinstance(v, (str, bool))]
        for key in NESTED:
            found += bad_conditions(node.get(key) or [], name)
    return found


def test_the_scan_finds_a_colon_in_an_unquoted_expression():
    text = "- name: t\n  ansible.builtin.assert:\n    that:\n      - x is search('with: y')\n"
    tasks = yaml.safe_load(text)
    assert bad_conditions(tasks) == [("t", "that", {"x is search('with": "y')"})]
    assert bad_conditions(yaml.safe_load("- block:\n    - name: u\n      when: 'a: b'\n")) == []


def test_every_conditional_is_a_string():
    found = []
    for path in yaml_files():
        text = (ROOT / path).read_text(encoding="utf-8")
        for doc in yaml.safe_load_all(text):
            found += [(path, *bad) for bad in bad_conditions(doc)]
    assert found == []
