"""Read the Debian archive URIs this machine's apt already uses (deb822 and one-line formats).

No host name is written in the lab: base images come from whatever mirror /etc/apt names.
"""

import glob
import os
from dataclasses import dataclass, field

from lab import LabError


@dataclass
class Source:
    types: list
    uris: list
    suites: list
    components: list = field(default_factory=list)
    origin: str = ""


def parse_deb822(text, origin=""):
    """Parse a deb822 .sources file into Sources (disabled stanzas skipped)."""
    sources = []
    for stanza in _stanzas(text):
        if stanza.get("enabled", "yes").lower() == "no":
            continue
        types = stanza.get("types", "").split()
        uris = stanza.get("uris", "").split()
        suites = stanza.get("suites", "").split()
        if types and uris and suites:
            sources.append(Source(types, uris, suites, stanza.get("components", "").split(), origin))
    return sources


def _stanzas(text):
    stanza, key = {}, None
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("#"):
            continue
        if not line.strip():
            if stanza:
                yield stanza
            stanza, key = {}, None
            continue
        if line[0] in " \t" and key:
            stanza[key] += " " + line.strip()
            continue
        name, sep, value = line.partition(":")
        if sep:
            key = name.strip().lower()
            stanza[key] = value.strip()
    if stanza:
        yield stanza


def parse_one_line(text, origin=""):
    """Parse one-line style `deb [opts] uri suite comp...` lines."""
    sources = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        kind = words.pop(0)
        if kind not in ("deb", "deb-src"):
            continue
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words.pop(0)
            if words:
                words.pop(0)
        if len(words) < 2:
            continue
        sources.append(Source([kind], [words[0]], [words[1]], words[2:], origin))
    return sources


def read_sources(etc_apt="/etc/apt"):
    """Every enabled Source from sources.list and sources.list.d/*.list|*.sources."""
    sources = []
    main_list = os.path.join(etc_apt, "sources.list")
    paths = [main_list] if os.path.exists(main_list) else []
    paths += sorted(glob.glob(os.path.join(etc_apt, "sources.list.d", "*.list")))
    paths += sorted(glob.glob(os.path.join(etc_apt, "sources.list.d", "*.sources")))
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            continue
        parse = parse_deb822 if path.endswith(".sources") else parse_one_line
        sources.extend(parse(text, origin=path))
    return sources


@dataclass
class DebianMirror:
    archive: str
    security: str = ""


def debian_mirror(sources):
    """The Debian archive URI (and security URI) among the sources.

    The archive is the `deb` source that carries a plain release suite with component
    main (`bookworm`, not `bookworm-updates`); the security archive the one carrying
    `<suite>-security`. Raises LabError when none is found.
    """
    archive = security = ""
    for src in sources:
        if "deb" not in src.types or (src.components and "main" not in src.components):
            continue
        for suite in src.suites:
            if suite.endswith("-security") and not security:
                security = src.uris[0]
            elif "-" not in suite and "/" not in suite and not archive and _looks_debian(src.uris[0]):
                archive = src.uris[0]
    if not archive:
        raise LabError(
            "no Debian archive found in /etc/apt/sources.list(.d): add a `deb <mirror>/debian <suite> main` "
            "source (or deb822 .sources stanza), then rerun"
        )
    return DebianMirror(archive.rstrip("/"), security.rstrip("/"))


def _looks_debian(uri):
    return uri.rstrip("/").rsplit("/", 1)[-1] in ("debian", "debian-archive") or "debian" in uri
