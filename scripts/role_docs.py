#!/usr/bin/env python3
"""Write the variable tables of roles/*/README.md from each role's meta/argument_specs.yml.

meta/argument_specs.yml is the one place a role variable is described (ansible-doc -t role shows it, and
Ansible checks the variables against it when the role runs); tests/unit/roles keep it equal to
defaults/main.yml. This script writes, between the two marker lines in each README, one table per entry
point: variable, type, default, description (with the choices). Text outside the markers is hand-written
and left as it is.

    .venv/bin/python scripts/role_docs.py           # rewrite the generated parts
    .venv/bin/python scripts/role_docs.py --check   # exit 1 naming each README whose part is out of date

It reads the YAML itself (PyYAML) rather than `ansible-doc -t role -j`: the output then does not depend on
the ansible-core release that runs it (the version matrix runs every minor) and needs no collection path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
ROLES = ROOT / "roles"
BEGIN = "<!-- BEGIN role variables: generated from meta/argument_specs.yml by scripts/role_docs.py -->"
END = "<!-- END role variables -->"


def _text(value) -> str:
    """A description (string or list of paragraphs) as one table cell."""
    parts = value if isinstance(value, list) else [value or ""]
    return " ".join(" ".join(str(p).split()) for p in parts).replace("|", "\\|")


def _yaml(value) -> str:
    """A default or choice as YAML in flow style, the way it is written in a playbook."""
    dumped = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    dumped = dumped.removesuffix("...").strip()
    return "`" + dumped.replace("|", "\\|") + "`"


def _type(spec: dict) -> str:
    kind = spec.get("type", "str")
    return f"{kind} of {spec['elements']}" if "elements" in spec else kind


def _row(name: str, spec: dict) -> str:
    text = _text(spec.get("description"))
    if "choices" in spec:
        text += " Choices: " + ", ".join(_yaml(c) for c in spec["choices"]) + "."
    default = "(required)" if spec.get("required") else _yaml(spec.get("default"))
    return f"| `{name}` | {_type(spec)} | {default} | {text.strip()} |"


def render(role: Path) -> str:
    """The generated part of a role's README: one table per entry point, in the file's order."""
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    lines = [BEGIN, ""]
    for entry, spec in specs.items():
        lines += [f"### Entry point `{entry}`", "", _text(spec.get("short_description")) + ".", ""]
        options = spec.get("options") or {}
        if not options:
            lines += ["No variables.", ""]
            continue
        lines += ["| variable | type | default | description |", "| --- | --- | --- | --- |"]
        lines += [_row(name, opt) for name, opt in options.items()]
        lines.append("")
    return "\n".join([*lines, END])


def update(text: str, block: str, where: str) -> str:
    """text with the part between the markers (markers included) replaced by block."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start or text.count(BEGIN) != 1 or text.count(END) != 1:
        raise SystemExit(
            f"role_docs: {where}: needs the two marker lines once each, in order:\n{BEGIN}\n{END}"
        )
    return text[:start] + block + text[end + len(END) :]


def roles() -> list[Path]:
    return sorted(p.parent.parent for p in ROLES.glob("*/meta/argument_specs.yml"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a README is stale")
    args = parser.parse_args(argv)
    stale = []
    for role in roles():
        readme = role / "README.md"
        old = readme.read_text()
        new = update(old, render(role), str(readme.relative_to(ROOT)))
        if new != old:
            stale.append(str(readme.relative_to(ROOT)))
            if not args.check:
                readme.write_text(new)
    if args.check and stale:
        print("role_docs: out of date (run scripts/role_docs.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    for name in stale:
        print(f"role_docs: wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
