#!/usr/bin/env python3
"""The brownfield manifest: every file, link and directory under the roots gpufleet's roles may touch.

  manifest.py write OUT [--root PATH]...
      write the manifest of this host now (JSON {path: entry}) to OUT
  manifest.py compare BEFORE [--backups] [--root PATH]...
      compare this host now with BEFORE; print {ok, same, changed, missing, added, added_paths, in_backup,
      backup_trees}; exit 1 unless every path of BEFORE is unchanged (with --backups: or sits, unchanged, at
      the same relative path in a ``<tree>.gpufleet-backup-<stamp>`` of its tree, where replace moves trees)

--root (and MANIFEST_ROOTS, colon-separated) adds directories to ROOTS (molecule/removal covers /etc/apt,
/etc/modprobe.d, ... too).

An entry is "file <mode> <sha256>", "link <target>" (the link itself, not followed) or "dir <mode>".
Stdlib only (Python 3.9+); runs on the instance.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys

ROOTS = ("/usr/local", "/opt", "/etc/alternatives", "/etc/ld.so.conf.d", "/etc/profile.d")
BACKUP_TAG = ".gpufleet-backup-"  # plugins/module_utils/kb/gpufleet.py's (runs alone on the instance)
SHOWN = 40


def entry(path):
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "link " + os.readlink(path)
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    if stat.S_ISDIR(st.st_mode):
        return "dir " + mode
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        for block in iter(lambda: src.read(1 << 20), b""):
            digest.update(block)
    return f"file {mode} {digest.hexdigest()}"


def take(roots=ROOTS):
    found = {}
    for root in roots:
        if not os.path.lexists(root):
            continue
        found[root] = entry(root)
        for base, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(base, name)
                found[path] = entry(path)
    return found


def backup_trees(now):
    """{original tree: [its backups]} of the backups present now."""
    trees = {}
    for path, kind in now.items():
        name = os.path.basename(path)
        if kind.startswith("dir ") and BACKUP_TAG in name:
            original = os.path.join(os.path.dirname(path), name.split(BACKUP_TAG, 1)[0])
            trees.setdefault(original, []).append(path)
    return trees


def in_backup(path, was, now, trees):
    """The backup tree that holds ``path`` unchanged at its relative path, else None."""
    for original, backups in trees.items():
        if path == original or path.startswith(original + "/"):
            for backup in backups:
                if now.get(backup + path[len(original) :]) == was:
                    return original
    return None


def compare(before, now, allow_backups):
    trees = backup_trees(now) if allow_backups else {}
    out = {"same": 0, "changed": [], "missing": [], "in_backup": 0, "backup_trees": set()}
    for path, was in sorted(before.items()):
        if now.get(path) == was:
            out["same"] += 1
            continue
        tree = in_backup(path, was, now, trees)
        if tree is not None:
            out["in_backup"] += 1
            out["backup_trees"].add(tree)
            continue
        if path in now:
            out["changed"].append(f"{path}: {was} -> {now[path]}")
        else:
            out["missing"].append(f"{path}: {was}")
    out["ok"] = not out["changed"] and not out["missing"]
    added = sorted(set(now) - set(before))
    out["added"], out["added_paths"] = len(added), added[:SHOWN]
    out["backup_trees"] = sorted(out["backup_trees"])
    out["changed_count"], out["missing_count"] = len(out["changed"]), len(out["missing"])
    out["changed"], out["missing"] = out["changed"][:SHOWN], out["missing"][:SHOWN]
    return out


def roots_of(argv):
    """ROOTS, every --root PATH of the arguments and those of MANIFEST_ROOTS."""
    extra = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--root"]
    extra += [p for p in os.environ.get("MANIFEST_ROOTS", "").split(":") if p]
    return ROOTS + tuple(extra)


def main(argv):
    roots = roots_of(argv)
    if len(argv) >= 2 and argv[0] == "write":
        found = take(roots)
        with open(argv[1], "w") as out:
            json.dump(found, out, indent=0, sort_keys=True)
        print(json.dumps({"written": argv[1], "paths": len(found)}))
        return 0
    if len(argv) >= 2 and argv[0] == "compare":
        with open(argv[1]) as src:
            before = json.load(src)
        result = compare(before, take(roots), "--backups" in argv[2:])
        print(json.dumps(result, sort_keys=True))
        return 0 if result["ok"] else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
