# Copyright: gpufleet contributors
# Apache-2.0
"""Decisions about what gpufleet does not own: the paths a role touches, the alternatives, the linker cache.

Stdlib only, Python >= 3.9, pure: reads the ``owners`` fact (probe/owners.py) and says, before any change,
what a role may create, link, replace or put first in the linker cache, and what it must refuse. The
cuda_toolkit plan (plan/cuda.py) and the cudnn plan (plan/cudnn.py) both decide through these functions.
"""

from __future__ import annotations

import os

POLICIES = ("refuse", "adopt", "replace")
POLICIES_ALLOWED = "refuse (the default), adopt, replace"
LD_CONF_DIR = "/etc/ld.so.conf.d"


def section(facts):
    """The ``owners`` fact, normalized (a host gathered without the subset has none: nothing is known)."""
    found = (facts or {}).get("owners") or {}
    return {
        "known": bool(found),
        "paths": found.get("paths") or {},
        "alternatives": found.get("alternatives") or {},
        "conf": (found.get("linker") or {}).get("conf") or [],
        "providers": (found.get("linker") or {}).get("providers") or {},
    }


def entry(owners, path):
    """The fact of one path: {type, target, real, owner, gpufleet_file}; absent when not described."""
    return owners["paths"].get(path) or {
        "type": "absent",
        "target": None,
        "real": None,
        "owner": {"kind": "absent", "words": "nothing (absent)"},
        "gpufleet_file": False,
    }


def words(found):
    return (found.get("owner") or {}).get("words") or "unknown"


def kind(found):
    return (found.get("owner") or {}).get("kind") or "unknown"


def foreign_file(owners, path):
    """The fact of a file gpufleet would write at ``path`` when something it did not write is there."""
    found = entry(owners, path)
    if found["type"] == "absent" or found.get("gpufleet_file") or kind(found) == "gpufleet":
        return None
    return found


def alternatives_link(owners, name):
    """None when /usr/local/<name> is absent or update-alternatives' link; else its fact (a foreign link)."""
    path = f"/usr/local/{name}"
    found = entry(owners, path)
    if found["type"] == "absent" or (
        found["type"] == "symlink" and found["target"] == f"/etc/alternatives/{name}"
    ):
        return None
    return found


def alternative_after(owners, name, added, selected=None):
    """(value before, value after) of an alternative when candidates ``added`` ({path: priority}) are
    registered and ``selected`` is set (None: not set; auto mode then picks the highest priority)."""
    alt = owners["alternatives"].get(name) or {}
    before = alt.get("value")
    if selected:
        return before, selected
    if alt and alt.get("mode") == "manual":
        return before, before
    candidates = {c["path"]: c["priority"] for c in alt.get("candidates") or []}
    for path, priority in added.items():
        candidates.setdefault(path, priority)
    if not candidates:
        return before, None
    return before, max(candidates.items(), key=lambda kv: (kv[1], kv[0]))[0]


def owner_of_target(owners, target, toolkits=()):
    """The owner words/kind of an alternative's value (a toolkit directory)."""
    for toolkit in toolkits:
        if toolkit.get("path") == target and toolkit.get("owner"):
            return toolkit["owner"]
    found = owners["paths"].get(target)
    return (found or {}).get("owner") or {"kind": "unknown", "words": "unknown"}


def _conf_position(conf, conf_file, directory):
    """Index of ``directory`` in ldconfig's order once ``conf_file`` holds only it (None: not there)."""
    order = [c for c in conf if c["file"] != conf_file]
    placed = False
    result = []
    for item in order:
        if not placed and item["file"].startswith(LD_CONF_DIR + "/") and item["file"] > conf_file:
            result.append({"file": conf_file, "dir": directory})
            placed = True
        result.append(item)
    if not placed:
        at = max((i + 1 for i, c in enumerate(result) if c["file"].startswith(LD_CONF_DIR + "/")), default=0)
        result.insert(at, {"file": conf_file, "dir": directory})
    dirs = [os.path.normpath(c["dir"]) for c in result]
    return dirs, dirs.index(os.path.normpath(directory))


def loader_change(owners, soname, conf_file, directory, *, after_path, after_owner):
    """What ``soname`` resolves to before and after ``conf_file`` lists ``directory`` (a gpufleet tree).

    Returns {soname, before: {path, real, version, owner}, after: {path, owner}, changes, shadowed}:
    ``changes`` when a copy gpufleet does not own provided it and gpufleet's would come first;
    ``shadowed`` when the existing copy comes first (gpufleet's would not be what programs load).
    """
    before = owners["providers"].get(soname)
    result = {"soname": soname, "before": before, "after": None, "changes": False, "shadowed": False}
    if not before:
        result["after"] = {"path": after_path, "owner": after_owner}
        return result
    if (before.get("owner") or {}).get("kind") == "gpufleet":
        result["after"] = {"path": after_path, "owner": after_owner}
        return result
    dirs, ours = _conf_position(owners["conf"], conf_file, directory)
    theirs = os.path.normpath(before.get("dir") or os.path.dirname(before["path"]))
    first = dirs.index(theirs) if theirs in dirs else len(dirs)  # trusted dirs come after every conf line
    if ours < first:
        result.update(after={"path": after_path, "owner": after_owner}, changes=True)
    else:
        result.update(after={"path": before["path"], "owner": before.get("owner")}, shadowed=True)
    return result


def describe(change):
    """One sentence of a loader change, for the plan report and the refusal."""
    before, after = change["before"] or {}, change["after"] or {}
    was = (
        f"{before.get('path')} ({(before.get('owner') or {}).get('words', 'unknown')})"
        if before
        else "nothing"
    )
    now = f"{after.get('path')} ({(after.get('owner') or {}).get('words', 'unknown')})"
    if change["shadowed"]:
        return (
            f"{change['soname']} stays {was}: it comes first in the linker's order (gpufleet's is not loaded)"
        )
    return f"{change['soname']}: {was} -> {now}"
