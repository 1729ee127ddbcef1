"""Task files execute plans; they never compute a version, a path or a package name in Jinja.

Every string that Ansible templates (values holding ``{{ ... }}`` and the bare expressions of ``when``,
``that``, ``failed_when``, ``changed_when``, ``until``, ``loop``) in roles/*/tasks, roles/*/vars,
roles/*/defaults, roles/*/handlers and playbooks/ is checked for the constructs that re-derive
decisions: regex filters, string splitting/replacing, prefix/suffix tests, path concatenation and
arithmetic. Messages (``msg``, ``fail_msg``, ``success_msg``) and task names may format freely.
The decisions live in plugins/module_utils/plan/ and come back in the plans.
"""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted(
    [p for d in ("tasks", "vars", "defaults", "handlers") for p in ROOT.glob(f"roles/*/{d}/**/*.yml")]
    + list(ROOT.glob("playbooks/*.yml"))
)
EXPRESSION_KEYS = {"when", "that", "failed_when", "changed_when", "until", "loop", "with_items"}
FREE_KEYS = {"msg", "fail_msg", "success_msg", "name", "description"}
FORBIDDEN = {
    "regex filter": re.compile(r"\bregex_(replace|findall|search)\b"),
    "string split": re.compile(r"\bsplit\b"),
    "string replace": re.compile(r"\|\s*replace\b|\.replace\("),
    "prefix/suffix test": re.compile(r"\.(startswith|endswith)\("),
    "path built by concatenation": re.compile(
        r"'[^'\n]*/[^'\n]*'\s*~|~\s*'[^'\n]*/|\"[^\"\n]*/[^\"\n]*\"\s*~"
    ),
    "arithmetic on a version": re.compile(r"\|\s*(int|float)\s*[-+*/%]"),
    "version comparison": re.compile(r"\bversion\s*\("),
}


def _strings(node, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, k)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item, key)
    elif (
        isinstance(node, str)
        and key not in FREE_KEYS
        and ("{{" in node or "{%" in node or key in EXPRESSION_KEYS)
    ):
        yield key, node


def _violations(path, root=ROOT):
    data = yaml.safe_load(path.read_text())
    found = []
    for key, text in _strings(data):
        for what, pattern in FORBIDDEN.items():
            if pattern.search(text):
                found.append(f"{path.relative_to(root)}: {key}: {what}: {' '.join(text.split())[:160]}")
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_task_file_computes_no_version_path_or_package_name(path):
    assert _violations(path) == []


def test_the_check_would_catch_a_re_derivation(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "- name: x\n"
        "  ansible.builtin.command:\n"
        "    argv: [\"/usr/local/cuda-{{ (item | string).split('.')[:2] | join('.') }}/bin/nvcc\"]\n"
        "  when: v | regex_replace('^R', '') == '580'\n"
    )
    found = _violations(bad, root=tmp_path)
    assert any("string split" in f for f in found)
    assert any("regex filter" in f for f in found)
