"""README.md's first run and main jobs, as the journey scenario runs them (issue 37).

molecule/journey runs the user commands of README.md as written, taken from README.md at test time, so the
documentation cannot drift from what is tested; tests/unit/scripts/test_readme_journey.py fails when
README.md changes so that :func:`journey` finds nothing to run. Stdlib and PyYAML only.

What is taken from README.md (fenced code blocks, by the ``## `` section they sit in):

- "Install": the ``ansible-galaxy collection build`` line and the ``... install --offline ...`` line.
- "A first run": the inventory (a ``yaml`` block introduced by its file name in backquotes, e.g.
  ``(`inventory.yml`)``), the playbook (the same, ``(`site.yml`)``) and every ``ansible-playbook`` line of
  the ``sh`` blocks, which must name that inventory and that playbook.
- "The main jobs": every ``ansible-playbook -i <inventory> gpufleet.nvidia.<name> ...`` line. Each
  playbook is either run (:data:`RUN`) or only syntax-checked (:data:`SYNTAX_ONLY`, with the reason); one
  that is neither fails here, so a new job in README.md is classified before the journey passes.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace

import yaml

INSTALL = "Install"
FIRST_RUN = "A first run"
MAIN_JOBS = "The main jobs"
# The collection's playbooks the journey runs against the lab containers.
RUN = {f"gpufleet.nvidia.{name}" for name in ("site", "driver", "cuda", "cudnn", "preflight", "audit")}
# The ones it only syntax-checks, and why.
SYNTAX_ONLY = {
    "gpufleet.nvidia.driver_upgrade": (
        "a rolling upgrade reboots every host it changes and drains it first: a container cannot reboot "
        "(molecule driver-vm-upgrade runs the playbook for real on VM guests)"
    ),
}
# ansible-playbook options that take a value (the rest are flags)
VALUE_OPTIONS = {"-i", "--inventory", "-e", "--extra-vars", "-l", "--limit", "-t", "--tags", "--skip-tags"}


class JourneyError(ValueError):
    """README.md no longer has what the journey runs, in the shape it reads."""


@dataclass(frozen=True)
class Block:
    section: str  # the `## ` heading above the block
    lang: str  # the fence's info string: sh, yaml
    text: str  # the block's lines, as written
    intro: str  # the prose between the previous block (or the heading) and this one


@dataclass(frozen=True)
class Command:
    section: str
    line: str  # as written (continuation lines joined), trailing comment included: bash runs it
    argv: tuple  # shlex's reading, comments dropped
    inventory: str = ""
    playbook: str = ""
    how: str = "run"  # run | syntax-check
    why: str = ""  # for syntax-check: why it is not run

    @property
    def syntax_check(self):
        """The command that only syntax-checks the playbook (its argv, quoted, with --syntax-check)."""
        return shlex.join([*self.argv, "--syntax-check"])


@dataclass
class Journey:
    build: Command
    install: Command
    inventory_name: str
    inventory_text: str
    inventory: dict
    playbook_name: str
    playbook_text: str
    playbook: list
    first_run: list = field(default_factory=list)  # Command, README order
    main_jobs: list = field(default_factory=list)  # Command, README order

    @property
    def commands(self):
        return [*self.first_run, *self.main_jobs]


def blocks(text):
    """Every fenced code block of a Markdown text, with its section and the prose before it."""
    found, section, intro, fence, lines = [], "", [], None, []
    for line in text.splitlines():
        if fence is not None:
            if line.startswith("```"):
                found.append(Block(section, fence, "\n".join(lines) + "\n", "\n".join(intro)))
                fence, lines, intro = None, [], []
            else:
                lines.append(line)
        elif line.startswith("```"):
            fence = line[3:].strip()
        elif line.startswith("## "):
            section, intro = line[3:].strip(), []
        else:
            intro.append(line)
    if fence is not None:
        raise JourneyError(f"README.md: a ```{fence} block in section {section!r} is never closed")
    return found


def logical_lines(block):
    """The shell lines of a block, continuation lines joined, blank lines dropped."""
    out, pending = [], ""
    for line in block.text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.strip()[:-1].strip() + " "
            continue
        joined = (pending + line.strip()).strip()
        pending = ""
        if joined:
            out.append(joined)
    return out


def parse_command(section, line):
    """An ansible-playbook line: its inventory (-i) and its playbook (the one positional argument)."""
    argv = tuple(shlex.split(line, comments=True))
    if not argv or argv[0] != "ansible-playbook":
        return Command(section, line, argv)
    inventory, positional, args = "", [], iter(argv[1:])
    for arg in args:
        if arg in VALUE_OPTIONS:
            value = next(args, "")
            inventory = value if arg in ("-i", "--inventory") else inventory
        elif not arg.startswith("-"):
            positional.append(arg)
    if len(positional) != 1:
        raise JourneyError(f"README.md ({section}): {line!r} names {len(positional)} playbooks, not one")
    return Command(section, line, argv, inventory, positional[0])


def _section(all_blocks, name):
    found = [b for b in all_blocks if b.section == name]
    if not found:
        raise JourneyError(f"README.md has no code blocks under '## {name}'")
    return found


def _named_yaml(section_blocks):
    """The yaml blocks of a section whose intro names a file in backquotes: [(file name, block)]."""
    named = []
    for block in section_blocks:
        names = re.findall(r"`([\w.-]+\.ya?ml)`", block.intro)
        if block.lang in ("yaml", "yml") and names:
            named.append((names[-1], block))
    return named


def _load_yaml(name, block, kind):
    try:
        data = yaml.safe_load(block.text)
    except yaml.YAMLError as exc:
        raise JourneyError(f"README.md ({block.section}): `{name}` is not YAML: {exc}") from exc
    if not isinstance(data, kind):
        raise JourneyError(f"README.md ({block.section}): `{name}` is not a YAML {kind.__name__}")
    return data


def _first_run_files(section_blocks):
    named = _named_yaml(section_blocks)
    inventories = [(n, b) for n, b in named if isinstance(_load_yaml(n, b, object), dict)]
    playbooks = [(n, b) for n, b in named if isinstance(_load_yaml(n, b, object), list)]
    if len(inventories) != 1 or len(playbooks) != 1:
        raise JourneyError(
            f"README.md ({FIRST_RUN}): expected one inventory block and one playbook block, each introduced "
            f"by its file name in backquotes; found inventories {[n for n, _ in inventories]}, "
            f"playbooks {[n for n, _ in playbooks]}"
        )
    return inventories[0], playbooks[0]


def _commands(section_blocks):
    return [
        parse_command(block.section, line)
        for block in section_blocks
        if block.lang in ("sh", "bash", "shell", "console")
        for line in logical_lines(block)
    ]


def _install(all_blocks):
    """The build line and the offline install line of the Install section."""
    commands = _commands(_section(all_blocks, INSTALL))
    build = [c for c in commands if c.argv[:3] == ("ansible-galaxy", "collection", "build")]
    offline = [
        c
        for c in commands
        if c.argv[:3] == ("ansible-galaxy", "collection", "install") and "--offline" in c.argv
    ]
    if len(build) != 1 or len(offline) != 1:
        raise JourneyError(
            f"README.md ({INSTALL}): expected one `ansible-galaxy collection build` and one "
            "`ansible-galaxy collection install --offline`"
        )
    return build[0], offline[0]


def _first_run(section_blocks, inventory_name, playbook_name):
    commands = [c for c in _commands(section_blocks) if c.playbook]
    for c in commands:
        if (c.inventory, c.playbook) != (inventory_name, playbook_name):
            raise JourneyError(
                f"README.md ({FIRST_RUN}): {c.line!r} does not run -i {inventory_name} {playbook_name}"
            )
    if not any("--check" in c.argv for c in commands) or not any("--check" not in c.argv for c in commands):
        raise JourneyError(
            f"README.md ({FIRST_RUN}): expected a --check run and a real run of {playbook_name}"
        )
    return commands


def _main_jobs(section_blocks, inventory_name):
    jobs = []
    for c in _commands(section_blocks):
        if not c.playbook:
            continue
        if c.inventory != inventory_name:
            raise JourneyError(f"README.md ({MAIN_JOBS}): {c.line!r} does not use -i {inventory_name}")
        if c.playbook in SYNTAX_ONLY:
            jobs.append(replace(c, how="syntax-check", why=SYNTAX_ONLY[c.playbook]))
        elif c.playbook in RUN:
            jobs.append(c)
        else:
            raise JourneyError(
                f"README.md ({MAIN_JOBS}): {c.line!r}: the journey neither runs nor syntax-checks "
                f"{c.playbook}: add it to RUN or SYNTAX_ONLY of tests/readme_journey.py"
            )
    return jobs


def journey(text):
    """What the journey runs, from README.md's text; JourneyError names what is missing or misshapen."""
    all_blocks = blocks(text)
    first = _section(all_blocks, FIRST_RUN)
    (inventory_name, inventory_block), (playbook_name, playbook_block) = _first_run_files(first)
    build, install = _install(all_blocks)
    return Journey(
        build=build,
        install=install,
        inventory_name=inventory_name,
        inventory_text=inventory_block.text,
        inventory=_load_yaml(inventory_name, inventory_block, dict),
        playbook_name=playbook_name,
        playbook_text=playbook_block.text,
        playbook=_load_yaml(playbook_name, playbook_block, list),
        first_run=_first_run(first, inventory_name, playbook_name),
        main_jobs=_main_jobs(_section(all_blocks, MAIN_JOBS), inventory_name),
    )


def groups_with_hosts(inventory):
    """{group: [host, ...]} of every group of an inventory (YAML inventory format) that lists hosts."""
    found = {}

    def walk(name, group):
        group = group or {}
        if group.get("hosts"):
            found[name] = list(group["hosts"])
        for child, sub in (group.get("children") or {}).items():
            walk(child, sub)

    for name, group in inventory.items():
        walk(name, group)
    return found


def lab_inventory(inventory, lab_hosts):
    """The inventory with each group's hosts replaced by the lab's: lab_hosts {group: {host: vars}}. Groups,
    children and vars stay as written; every group that lists hosts must get lab hosts and every lab group
    must be one of the inventory's."""
    listed = groups_with_hosts(inventory)
    if set(listed) != set(lab_hosts):
        raise JourneyError(
            f"the inventory's host groups {sorted(listed)} are not the lab's {sorted(lab_hosts)}"
        )

    def swap(name, group):
        group = dict(group or {})
        if group.get("hosts"):
            group["hosts"] = {host: dict(hostvars or {}) for host, hostvars in lab_hosts[name].items()}
        if group.get("children"):
            group["children"] = {child: swap(child, sub) for child, sub in group["children"].items()}
        return group

    return {name: swap(name, group) for name, group in inventory.items()}
