# Copyright: gpufleet contributors
# Apache-2.0
"""The host's package sources: the one reader of apt's and dnf's repository configuration.

apt: ``/etc/apt/sources.list`` and ``sources.list.d/*.list`` (one-line format, ``deb [options] URI suite
[component...]``; a ``# deb ...`` line is a disabled entry) and ``sources.list.d/*.sources`` (deb822 stanzas,
``Enabled: no`` disabled); the keyrings they name (``Signed-By``) and apt's global ones (``trusted.gpg``,
``trusted.gpg.d/*.gpg|*.asc``, which a source without Signed-By trusts). dnf: every section of
``/etc/yum.repos.d/*.repo`` and the keyrings its ``gpgkey=file://`` names. Each keyring's OpenPGP keys
(``module_utils/openpgp.py``) and the NVIDIA-related package that owns a file (the package database's file
lists, ``probe/packages.py``: cuda-keyring owns its ``.list`` and ``cuda-archive-keyring.gpg``).

Stdlib only, Python >= 3.9. Bounded: at most MAX_FILES files per directory, MAX_FILE bytes per file,
MAX_ENTRIES entries, MAX_KEYRINGS keyrings of at most MAX_KEYRING bytes; what is left out is said in
``reasons``. The ``sources`` subset of nvidia_facts; ``host.os.debian_mirror`` is read from the same entries.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils import openpgp

APT_SOURCES = "/etc/apt/sources.list"
APT_SOURCES_DIR = "/etc/apt/sources.list.d"
APT_TRUSTED = "/etc/apt/trusted.gpg"
APT_TRUSTED_DIR = "/etc/apt/trusted.gpg.d"
DNF_REPOS_DIR = "/etc/yum.repos.d"
MAX_FILE = 1024 * 1024
MAX_FILES = 256
MAX_ENTRIES = 2048
MAX_KEYRING = 1024 * 1024
MAX_KEYRINGS = 64
# apt reads sources.list.d and trusted.gpg.d files whose names hold only these characters (sources.list(5))
APT_NAME = re.compile(r"^[A-Za-z0-9_.\-]+\Z")
DEB_TYPES = ("deb", "deb-src")
DNF_TYPE = "rpm"  # the one type of a dnf section
# deb822 fields that are the entry itself; every other field is an option (Signed-By, Architectures, ...)
DEB822_FIELDS = ("types", "uris", "suites", "components", "enabled")
# .repo keys that are the entry itself; every other key is an option (name, mirrorlist, metalink, ...)
REPO_FIELDS = ("baseurl", "enabled", "gpgcheck", "repo_gpgcheck", "gpgkey")
FINGERPRINT = re.compile(r"^(?:[0-9A-Fa-f]{40}|[0-9A-Fa-f]{64})!?\Z")
INLINE = "(an inline OpenPGP key)"
CDROM = re.compile(r"cdrom:\[[^\]]*\]\S*")
TRUE, FALSE = ("1", "yes", "true", "on"), ("0", "no", "false", "off")


def _entry(path, fmt, line, **fields):
    """One source entry, every key present (docs/facts.md, `sources.entries[]`)."""
    entry = {
        "file": path,
        "format": fmt,
        "line": line,
        "id": None,
        "enabled": True,
        "types": [],
        "uris": [],
        "suites": [],
        "components": [],
        "options": {},
        "gpgcheck": None,
        "repo_gpgcheck": None,
        "gpgkey": [],
        "keyrings": [],
        "fingerprints": [],
        "inline_key": False,
        "owner": None,
    }
    entry.update(fields)
    return entry


def _signed_by(value):
    """(keyrings, fingerprints, inline) of an apt Signed-By value: absolute keyring paths, key fingerprints
    (comma or space separated), or an inline ASCII-armored key block (deb822)."""
    if openpgp.ARMOR_BEGIN in value:
        try:
            found = [k["fingerprint"] for k in openpgp.keys(value.encode("utf-8", "replace"))]
        except openpgp.OpenPGPError:
            found = []
        return [], found, True
    words = [w for w in re.split(r"[\s,]+", value) if w]
    keyrings = [w for w in words if w.startswith("/")]
    fingerprints = [w.rstrip("!").upper() for w in words if FINGERPRINT.match(w)]
    return keyrings, fingerprints, False


def _apt_options(options):
    """The entry's key fields from its options ({lower-case name: value}): Signed-By read, an inline key
    replaced by INLINE in the options shown."""
    value = options.get("signed-by", "")
    keyrings, fingerprints, inline = _signed_by(value) if value else ([], [], False)
    if inline:
        options = dict(options, **{"signed-by": INLINE})
    return {"options": options, "keyrings": keyrings, "fingerprints": fingerprints, "inline_key": inline}


# ---------------------------------------------------------------------------------------------------
# one-line format: sources.list and sources.list.d/*.list
# ---------------------------------------------------------------------------------------------------
def _one_line_options(words):
    """({name: value}, rest) of the ``[ name=value ... ]`` block that may follow the type."""
    if not words or not words[0].startswith("["):
        return {}, words
    text, rest = " ".join(words), []
    inside, _sep, after = text[1:].partition("]")
    rest = after.split()
    options = {}
    for item in inside.split():
        name, sep, value = item.partition("=")
        if sep:
            options[name.rstrip("+-").lower()] = value
    return options, rest


def _one_line(text):
    """(enabled, type, options, uri, suite, components) of one line, or None when it is no source entry."""
    body = text.split("#", 1)[0] if not text.lstrip().startswith("#") else None
    enabled = body is not None
    if body is None:  # a commented-out entry ("# deb ..."), reported as disabled
        body = text.lstrip().lstrip("#").split("#", 1)[0]
    cdrom = CDROM.search(body)  # cdrom:[Debian GNU/Linux 12 ...]/: the label's spaces are the URI's
    if cdrom:
        body = body.replace(cdrom.group(0), cdrom.group(0).replace(" ", "%20"))
    words = body.split()
    if not words or words[0] not in DEB_TYPES:
        return None
    options, rest = _one_line_options(words[1:])
    if len(rest) < 2 or ":" not in rest[0]:
        return None
    return enabled, words[0], options, rest[0], rest[1], rest[2:]


def parse_one_line(text, path):
    """The entries of a one-line-format file (sources.list, *.list), disabled ones included."""
    entries = []
    for number, line in enumerate((text or "").splitlines(), 1):
        found = _one_line(line)
        if found is None:
            continue
        enabled, kind, options, uri, suite, components = found
        entries.append(
            _entry(path, "one-line", number, enabled=enabled, types=[kind], uris=[uri], suites=[suite],
                   components=list(components), **_apt_options(options))
        )  # fmt: skip
    return entries


# ---------------------------------------------------------------------------------------------------
# deb822 format: sources.list.d/*.sources
# ---------------------------------------------------------------------------------------------------
def _stanzas(text):
    """(first line number, {lower-case field: value}) of each stanza; continuation lines are joined with
    newlines (an inline key keeps its lines; `` .`` is an empty line)."""
    stanza, key, start = {}, None, 0
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.rstrip()
        if line.startswith("#"):
            continue
        if not line.strip():
            if stanza:
                yield start, stanza
            stanza, key = {}, None
            continue
        if line[0] in " \t" and key:
            stanza[key] += "\n" + ("" if line.strip() == "." else line.strip())
            continue
        name, sep, value = line.partition(":")
        if sep:
            key = name.strip().lower()
            stanza[key] = value.strip()
            start = start if len(stanza) > 1 else number
    if stanza:
        yield start, stanza


def parse_deb822(text, path):
    """The entries of a deb822 file (*.sources): one per stanza, ``Enabled: no`` ones disabled."""
    entries = []
    for number, stanza in _stanzas(text):
        options = {k: v for k, v in stanza.items() if k not in DEB822_FIELDS}
        entries.append(
            _entry(path, "deb822", number,
                   enabled=stanza.get("enabled", "yes").strip().lower() != "no",
                   types=stanza.get("types", "").split(), uris=stanza.get("uris", "").split(),
                   suites=stanza.get("suites", "").split(), components=stanza.get("components", "").split(),
                   **_apt_options(options))
        )  # fmt: skip
    return entries


# ---------------------------------------------------------------------------------------------------
# dnf: /etc/yum.repos.d/*.repo
# ---------------------------------------------------------------------------------------------------
def _flag(value):
    """A .repo boolean: True, False, or None when absent or not one of dnf's words."""
    word = str(value or "").strip().lower()
    return True if word in TRUE else False if word in FALSE else None


def _sections(text):
    """(line number, section id, {lower-case key: value}) of each ``[id]`` section; continuation lines (a
    baseurl or gpgkey list) are joined with spaces."""
    current, key = None, None
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            if current:
                yield current
            current, key = (number, line[1:-1].strip(), {}), None
        elif current and line[0] in " \t" and key:
            current[2][key] += " " + line.strip()
        elif current and "=" in line:
            name, _sep, value = line.partition("=")
            key = name.strip().lower()
            current[2][key] = value.strip()
    if current:
        yield current


def parse_repo(text, path):
    """The entries of a dnf .repo file: one per section, ``enabled=0`` ones disabled."""
    entries = []
    for number, section, fields in _sections(text):
        gpgkey = [w for w in re.split(r"[\s,]+", fields.get("gpgkey", "")) if w]
        enabled = _flag(fields.get("enabled"))
        entries.append(
            _entry(path, "repo", number, id=section, enabled=enabled is not False, types=[DNF_TYPE],
                   uris=[w for w in re.split(r"[\s,]+", fields.get("baseurl", "")) if w],
                   options={k: v for k, v in fields.items() if k not in REPO_FIELDS},
                   gpgcheck=_flag(fields.get("gpgcheck")), repo_gpgcheck=_flag(fields.get("repo_gpgcheck")),
                   gpgkey=gpgkey, keyrings=[k[len("file://"):] for k in gpgkey if k.startswith("file:///")])
        )  # fmt: skip
    return entries


# ---------------------------------------------------------------------------------------------------
# the files, the keyrings, the owners
# ---------------------------------------------------------------------------------------------------
def _names(root, directory, suffixes, reasons):
    """Inner paths of the files of ``directory`` with one of ``suffixes`` (apt's name rule), sorted and
    bounded."""
    if not root.isdir(directory):
        return []
    names, reason = root.listdir(directory)
    if reason:
        reasons.append(reason)
    wanted = [n for n in names or [] if n.endswith(suffixes) and APT_NAME.match(n)]
    if len(wanted) > MAX_FILES:
        reasons.append(f"{directory} has {len(wanted)} source files: only the first {MAX_FILES} were read")
    return [f"{directory}/{name}" for name in wanted[:MAX_FILES]]


def source_files(root, reasons):
    """[(inner path, parser)] of every source file apt and dnf read, in their order."""
    files = [(APT_SOURCES, parse_one_line)] if root.isfile(APT_SOURCES) else []
    for path in _names(root, APT_SOURCES_DIR, (".list", ".sources"), reasons):
        files.append((path, parse_deb822 if path.endswith(".sources") else parse_one_line))
    files += [(path, parse_repo) for path in _names(root, DNF_REPOS_DIR, (".repo",), reasons)]
    return files


def read_entries(root, reasons=None):
    """Every source entry of the host (apt's, then dnf's), bounded; reasons: what could not be read."""
    reasons = [] if reasons is None else reasons
    entries = []
    for path, parse in source_files(root, reasons):
        text, reason = root.read_text(path, limit=MAX_FILE + 1)
        if text is None:
            reasons.append(reason)
            continue
        if len(text.encode("utf-8", "replace")) > MAX_FILE:
            reasons.append(f"{path} is larger than {MAX_FILE} bytes: only its first {MAX_FILE} were read")
        entries += parse(text, path)
        if len(entries) > MAX_ENTRIES:
            reasons.append(
                f"more than {MAX_ENTRIES} source entries: only the first {MAX_ENTRIES} are reported"
            )
            return entries[:MAX_ENTRIES]
    return entries


def debian_mirror(entries):
    """The first http(s) URI of an enabled ``deb`` entry whose path ends in /debian (the host's Debian
    mirror), else None."""
    for entry in entries:
        if not entry["enabled"] or "deb" not in entry["types"]:
            continue
        for uri in entry["uris"]:
            trimmed = uri.rstrip("/")
            if trimmed.startswith(("http://", "https://")) and trimmed.endswith("/debian"):
                return trimmed
    return None


def trusted_keyrings(root, reasons):
    """apt's global keyrings, what a source without Signed-By trusts: trusted.gpg and
    trusted.gpg.d/*.gpg|*.asc."""
    found = [APT_TRUSTED] if root.isfile(APT_TRUSTED) else []
    return found + _names(root, APT_TRUSTED_DIR, (".gpg", ".asc"), reasons)


def keyring(root, path):
    """{exists, fingerprints (primary keys), subkeys, owner, reason} of one keyring file."""
    out = {"exists": root.exists(path), "fingerprints": [], "subkeys": [], "owner": None, "reason": None}
    if not out["exists"]:
        out["reason"] = f"{path} does not exist"
        return out
    data, reason = root.read_bytes(path, limit=MAX_KEYRING + 1)
    if data is None:
        out["reason"] = reason
        return out
    if len(data) > MAX_KEYRING:
        out["reason"] = f"{path} is larger than {MAX_KEYRING} bytes: not read"
        return out
    try:
        keys = openpgp.keys(data)
    except openpgp.OpenPGPError as exc:
        out["reason"] = f"{path}: {exc}"
        return out
    out["fingerprints"] = [k["fingerprint"] for k in keys if k["primary"]]
    out["subkeys"] = [k["fingerprint"] for k in keys if not k["primary"]]
    if not keys:
        out["reason"] = f"{path} holds no OpenPGP public key"
    return out


def probe(root, owner_of=None):
    """The ``sources`` fact: {entries, keyrings, trusted, reasons}. ``owner_of``: {inner path: package name}
    for the given paths (the package database's file lists), or None when owners are not looked up."""
    reasons = []
    entries = read_entries(root, reasons)
    trusted = trusted_keyrings(root, reasons)
    named = [k for entry in entries for k in entry["keyrings"]]
    paths = list(dict.fromkeys(named + trusted))
    if len(paths) > MAX_KEYRINGS:
        reasons.append(f"{len(paths)} keyrings are named: only the first {MAX_KEYRINGS} were read")
    keyrings = {path: keyring(root, path) for path in paths[:MAX_KEYRINGS]}
    owners = owner_of(sorted({e["file"] for e in entries} | set(keyrings))) if owner_of else {}
    for entry in entries:
        entry["owner"] = owners.get(entry["file"])
    for path, found in keyrings.items():
        found["owner"] = owners.get(path)
    return {"entries": entries, "keyrings": keyrings, "trusted": trusted, "reasons": reasons}
