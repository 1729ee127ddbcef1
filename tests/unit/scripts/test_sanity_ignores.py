"""tests/sanity/ignore-*.txt: every entry names a file that exists and says why on the same line.

`ansible-test sanity` (scripts/sanity.sh) reads tests/sanity/ignore-<ansible-core major.minor>.txt. An entry
silences one check for a whole file, so each one is kept narrow here: the license entries only while the
collection is not GPL, the line-length entries only for the lines named in LONG_LINES.
"""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SANITY = ROOT / "tests" / "sanity"
ENTRY = re.compile(r"^(?P<path>\S+) (?P<test>[a-z0-9-]+)(?::(?P<code>[A-Za-z0-9-]+))? # (?P<reason>\S.*)$")
PEP8_MAX = 160  # ansible-test's pep8 line length


def entry_problems(line):
    """Why an ignore line is not `<path> <test>[:<code>] # <reason>` for an existing path; [] when it is."""
    match = ENTRY.match(line)
    if not match:
        return [f"{line!r}: not '<path> <test>[:<code>] # <reason>'"]
    if not (ROOT / match["path"]).is_file():
        return [f"{line!r}: {match['path']} does not exist"]
    return []


def _entries():
    found = []
    for path in sorted(SANITY.glob("ignore-*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.append((path.name, line))
    return found


def test_the_toolchains_core_has_its_ignore_file():
    lock = (ROOT / "requirements" / "dev.lock").read_text(encoding="utf-8")
    major_minor = re.search(r"^ansible-core==(\d+\.\d+)\.", lock, re.M).group(1)
    assert (SANITY / f"ignore-{major_minor}.txt").is_file()


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        ("plugins/modules/nvidia_repo.py validate-modules:missing-gplv3-license # Apache-2.0", False),
        ("plugins/modules/nvidia_repo.py validate-modules:missing-gplv3-license", True),
        ("plugins/modules/nvidia_repo.py validate-modules:missing-gplv3-license #", True),
        ("plugins/modules/nvidia_nothing.py validate-modules:missing-gplv3-license # no such file", True),
    ],
)
def test_entry_rule(line, bad):
    assert bool(entry_problems(line)) is bad


def test_every_entry_has_a_reason_and_an_existing_file():
    entries = _entries()
    assert entries
    assert [p for name, line in entries for p in entry_problems(line)] == []


def test_license_entries_only_for_a_collection_that_is_not_gpl():
    licenses = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))["license"]
    entries = [line for _name, line in _entries() if "missing-gplv3-license" in line]
    assert entries
    assert not any(name.startswith(("GPL", "LGPL")) for name in licenses), licenses


def test_no_pep8_entries_ansible_lint_refuses_them():
    """ansible-lint's sanity rule does not permit pep8 ignores: long lines are wrapped instead."""
    assert [line for _name, line in _entries() if " pep8:" in line] == []


def test_no_plugin_line_is_longer_than_pep8_allows():
    long_lines = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "plugins").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > PEP8_MAX
    ]
    assert long_lines == []
