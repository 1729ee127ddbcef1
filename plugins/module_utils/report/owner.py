# Copyright: gpufleet contributors
# Apache-2.0
"""Who owns each CUDA toolkit and cuDNN copy, as the report shows it: the one place facts become an owner.

Stdlib only, Python >= 3.9, pure. ``owner_shown(component, item)`` takes one ``cuda.toolkits[]`` entry
(``component="cuda"``) or one ``cudnn[]`` copy (``"cudnn"``) of ``ansible_facts.nvidia`` and returns
``{"kind", "name", "version", "words"}``, kind one of :data:`OWNER_KINDS` (the Prometheus label
``owner_kind`` takes only these values), ``words`` what the rows and messages print (e.g.
``package cuda-nvcc-13-0 13.0.88-1``).

- Facts with an ``owner`` (probe/owners.py): that owner; a kind outside OWNER_KINDS is shown as ``unknown``
  (its words kept), missing words are made from the kind, name and version.
- Facts written by older probes (no ``owner``): from the fields they have. A toolkit: ``gpufleet_marker``
  true -> gpufleet; ``source`` deb/rpm -> package (the facts' ``package``); runfile -> runfile; anything
  else (redist: a version.json nobody claims; unknown) -> unknown. A cuDNN copy: ``source`` deb/rpm ->
  package, pip -> pip, conda -> conda (their ``package``), tarball -> tarball, else unknown.
"""

from __future__ import annotations

OWNER_KINDS = ("gpufleet", "package", "runfile", "conda", "pip", "tarball", "unknown")
RUNFILE_WORDS = "NVIDIA's runfile installer (bin/cuda-uninstaller)"
# why a toolkit of an older probe's source that nobody claims is shown as unknown
_TOOLKIT_UNOWNED = {
    "redist": "a version.json, but no package, runfile uninstaller or gpufleet marker",
    "unknown": "no package, runfile uninstaller, version.json or gpufleet marker",
}
_PACKAGE_SOURCES = ("deb", "rpm")
_ENV_SOURCES = ("pip", "conda")


def _text(value):
    return value if isinstance(value, str) and value else None


def _dict(value):
    return value if isinstance(value, dict) else {}


def _words(kind, name, version):
    if kind == "gpufleet":
        return "gpufleet"
    if kind == "runfile":
        return RUNFILE_WORDS
    return " ".join(part for part in (kind, name, version) if part)


def _shown(kind, name=None, version=None, words=None):
    return {"kind": kind, "name": name, "version": version, "words": words or _words(kind, name, version)}


def _from_facts(raw):
    """The facts' own owner, checked: a kind the report does not know is shown as unknown."""
    kind = raw.get("kind")
    name, version, words = _text(raw.get("name")), _text(raw.get("version")), _text(raw.get("words"))
    if kind not in OWNER_KINDS:
        return _shown("unknown", name, version, words or f"unknown (owner kind {kind!r})")
    return _shown(kind, name, version, words)


def _unknown(item, default_why):
    why = _text(_dict(item.get("reasons")).get("source")) or default_why
    return _shown("unknown", words=f"unknown ({why})")


def _package(item):
    """deb/rpm: the facts' package (the toolkit's representative package, the copy's runtime package)."""
    pkg = _dict(item.get("package"))
    name, version = _text(pkg.get("name")), _text(pkg.get("version"))
    words = None if name else f"a {item.get('source')} package (its name is not in the facts)"
    return _shown("package", name, version, words)


def _toolkit(t):
    source = t.get("source")
    if t.get("gpufleet_marker") is True:
        return _shown("gpufleet", _text(t.get("path")))
    if source in _PACKAGE_SOURCES:
        return _package(t)
    if source == "runfile":
        return _shown("runfile", _text(t.get("path")))
    return _unknown(t, _TOOLKIT_UNOWNED.get(source, _TOOLKIT_UNOWNED["unknown"]))


def _copy(c):
    source, path = c.get("source"), _text(c.get("path"))
    if source in _PACKAGE_SOURCES:
        return _package(c)
    if source in _ENV_SOURCES:
        pkg = _dict(c.get("package"))
        name, version = _text(pkg.get("name")), _text(pkg.get("version"))
        where = _text(c.get("python_env")) or path
        return _shown(source, name, version, f"{_words(source, name, version)} in {where}")
    if source == "tarball":
        return _shown("tarball", path, words=f"a cuDNN tarball unpacked in {path} (no owner)")
    return _unknown(c, "no package, wheel, conda env or gpufleet marker")


def owner_shown(component, item):
    """The owner the report shows for one toolkit (``component="cuda"``) or cuDNN copy (``"cudnn"``)."""
    if component not in ("cuda", "cudnn"):
        raise ValueError(f"component: {component!r} is not cuda or cudnn")
    item = _dict(item)
    if isinstance(item.get("owner"), dict):
        return _from_facts(item["owner"])
    return _toolkit(item) if component == "cuda" else _copy(item)
