# Copyright: gpufleet contributors
# Apache-2.0
"""NVIDIA's repository a host already has: adopt its source, or refuse before any change.

Stdlib only, Python >= 3.9. Pure decisions on the controller, from the repository a plan wants
(``plan/repo.repo_config``: url, manager, key_fingerprint, path, keyring) and the facts' ``sources`` (every
apt entry and dnf section, the keyrings they name with their keys: ``probe/sources.py``).

A host set up by NVIDIA's installation guide has cuda-keyring's source for the repository
(``/etc/apt/sources.list.d/cuda-<distro>-<arch>.list``, Signed-By
``/usr/share/keyrings/cuda-archive-keyring.gpg``; on RHEL ``/etc/yum.repos.d/cuda-rhel9.repo``). A second
source for the same URL with another Signed-By makes every ``apt-get update`` fail ("Conflicting values set
for option Signed-By", NVIDIA/cuda-repo-management#4), so gpufleet writes none then:

* a foreign enabled source of the repository's URL (the user's mirror counts: it is the plan's URL) whose keys
  hold the pinned one (dnf: ``gpgcheck=1`` and a ``gpgkey``) is adopted: the plan's repo carries ``adopt``
  and gpufleet writes no source and no keyring; gpufleet's own source (and keyring) of an earlier run is
  removed (``remove_own``): it owns them, and leaving both breaks apt;
* such a source whose keyring is missing or lacks the pinned key (the retired 2018 key only), or dnf's without
  signature checks, is refused, and so are two foreign apt sources of the URL with different Signed-By (apt
  already fails): the refusal names the files, the URL, the keys found and the way out.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.repo import RETIRED_KEYS, RepoPlanError

DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def normalize_url(url):
    """The repository a URL names, for comparison: scheme and host lower-case, the default port dropped,
    ``//`` in the path collapsed, no trailing slash; ``file:/x`` and ``file:///x`` are one."""
    text = str(url or "").strip()
    scheme, sep, rest = text.partition(":")
    if not sep:
        return text.rstrip("/")
    scheme = scheme.lower()
    rest = rest[2:] if rest.startswith("//") else rest
    host, slash, path = rest.partition("/")
    host = host.lower()
    if host.endswith(DEFAULT_PORTS.get(scheme, "\0")):
        host = host[: -len(DEFAULT_PORTS[scheme])]
    path = re.sub(r"/{2,}", "/", slash + path).rstrip("/")
    return f"{scheme}://{host}{path}"


def entry_urls(entry):
    """{normalized repository URL: the URI as the entry writes it} of what an entry serves: apt's flat suites
    (``URI /``, or a suite that is a path ending in ``/``: URI + suite), dnf's baseurls. A suite of a
    ``dists/`` repository (``bookworm``) is another repository than a flat one at the same URI."""
    if entry.get("format") == "repo":
        return {normalize_url(uri): uri for uri in entry.get("uris") or []}
    urls = {}
    for uri in entry.get("uris") or []:
        for suite in entry.get("suites") or []:
            if suite.endswith("/"):
                urls.setdefault(normalize_url(uri.rstrip("/") + "/" + suite.strip("/")), uri)
    return urls


def serving(repo, sources):
    """(foreign entries, own entries) of the facts' enabled entries that serve the plan's repository URL; own:
    gpufleet's file (``repo.path``), whatever URL it has."""
    url = normalize_url(repo["url"])
    dnf = repo["manager"] == "dnf"
    foreign, own = [], []
    for entry in (sources or {}).get("entries") or []:
        if entry.get("file") == repo["path"]:
            own.append(entry)
            continue
        kind_ok = entry.get("format") == "repo" if dnf else "deb" in (entry.get("types") or [])
        if kind_ok and entry.get("enabled") and url in entry_urls(entry):
            foreign.append(entry)
    return foreign, own


def where(entry):
    """``file (line N)``, ``file [id]`` for dnf: where an entry is, as messages name it."""
    if entry.get("format") == "repo":
        return f"{entry['file']} [{entry.get('id')}]"
    return f"{entry['file']} (line {entry.get('line')})"


def signed_by(entry):
    """What apt compares between two entries of one source: the Signed-By value (an empty one included)."""
    keys = entry.get("fingerprints") or []
    return (tuple(sorted(entry.get("keyrings") or [])), tuple(sorted(keys)), bool(entry.get("inline_key")))


def signed_by_words(entry):
    keyrings, keys, inline = signed_by(entry)
    if inline:
        return "an inline key"
    return ", ".join(keyrings + keys) or "none (apt's global keyrings)"


def entry_keys(entry, sources):
    """({fingerprints} the entry trusts, [keyrings it names that do not exist]): its inline key, its
    Signed-By keyrings, Signed-By fingerprints among apt's global keys, or apt's global keys."""
    keyrings = (sources or {}).get("keyrings") or {}
    if entry.get("inline_key"):
        return set(entry.get("fingerprints") or []), []
    named = entry.get("keyrings") or []
    if named:
        found, missing = set(), []
        for path in named:
            ring = keyrings.get(path) or {}
            found |= set(ring.get("fingerprints") or [])
            if not ring.get("exists"):
                missing.append(path)
        return found, missing
    trusted = {
        f
        for path in sources.get("trusted") or []
        for f in (keyrings.get(path) or {}).get("fingerprints") or []
    }
    if entry.get("fingerprints"):
        return trusted & set(entry["fingerprints"]), []
    return trusted, []


def key_words(found):
    """The keys found, a retired one named (NVIDIA's 7fa2af80)."""
    if not found:
        return "no key"
    return ", ".join(f"{fpr} ({RETIRED_KEYS[fpr]})" if fpr in RETIRED_KEYS else fpr for fpr in sorted(found))


# ---------------------------------------------------------------------------------------------------
# the refusals: each names the file(s), the URL, what was found and the way out; nothing was changed
# ---------------------------------------------------------------------------------------------------
def _way_out(prefix):
    return (
        f"or set {prefix}_repo_use_existing: true to use the host's sources as they are; nothing was changed"
    )


ROTATION = (
    "NVIDIA rotated the repository key in April 2022 (7fa2af80 retired, 3bf863cc since): install NVIDIA's "
    "cuda-keyring package (cuda-keyring_1.1-1_all.deb from {url}) and remove the old key (apt-key del "
    "7fa2af80)"
)


def wrong_key_refusal(entry, repo, found, missing, prefix):
    """A foreign source of the repository whose keyring is missing or lacks the pinned key."""
    url, var = repo["url"], f"{prefix}_repo_key_fingerprint"
    if missing:
        what = f"its Signed-By keyring {', '.join(missing)} does not exist"
    else:
        what = f"its keys ({signed_by_words(entry)}) are {key_words(found)}"
        what += f", not the pinned {repo.get('key_fingerprint') or '(none pinned)'}"
    return (
        f"{prefix}_source='nvidia_repo': {where(entry)} already serves the repository {url}, but {what} "
        f"({var}): apt cannot verify the repository with it, and a second source of the same URL would break "
        "every apt-get update (Conflicting values set for option Signed-By). "
        + ROTATION.format(url=url)
        + f", or remove {entry['file']}, "
        + _way_out(prefix)
    )


def conflict_refusal(entries, url, prefix):
    """Foreign apt sources of one URL with different Signed-By: apt already refuses every update."""
    listed = " and ".join(f"{where(e)} (Signed-By {signed_by_words(e)})" for e in entries)
    return (
        f"{prefix}_source='nvidia_repo': {listed} serve the same repository {url} with different "
        "Signed-By: apt refuses every update so (Conflicting values set for option Signed-By). Keep one of "
        "them (the one NVIDIA's cuda-keyring package installed, if any) and run again, " + _way_out(prefix)
    )


def unchecked_refusal(entry, repo, prefix):
    """A foreign dnf section of the repository that checks no signature (or names a key file that is gone)."""
    gpgkey = ", ".join(entry.get("gpgkey") or []) or "none"
    return (
        f"{prefix}_source='nvidia_repo': {where(entry)} already serves the repository {repo['url']} "
        f"without a signature dnf can check (gpgcheck={entry.get('gpgcheck')}, gpgkey={gpgkey}): set "
        f"gpgcheck=1 and gpgkey={repo['key_url']} in it (NVIDIA's cuda-{repo.get('repo_dir')}.repo has "
        "both), or remove it, " + _way_out(prefix)
    )


def _apt_adoptable(foreign, url, repo, sources, prefix):
    """The entry to adopt among the foreign apt entries of the URL, or RepoPlanError."""
    if len({signed_by(e) for e in foreign}) > 1:
        raise RepoPlanError(conflict_refusal(foreign, url, prefix))
    pinned = repo.get("key_fingerprint") or ""
    for entry in foreign:
        found, missing = entry_keys(entry, sources)
        if missing or not pinned or pinned not in found:
            raise RepoPlanError(wrong_key_refusal(entry, repo, found, missing, prefix))
    return foreign[0]


def _dnf_adoptable(foreign, url, repo, sources, prefix):
    keyrings = (sources or {}).get("keyrings") or {}
    for entry in foreign:
        gone = [p for p in entry.get("keyrings") or [] if not (keyrings.get(p) or {}).get("exists")]
        if entry.get("gpgcheck") is not True or not entry.get("gpgkey") or gone:
            raise RepoPlanError(unchecked_refusal(entry, repo, prefix))
    return foreign[0]


def adoption(repo, sources, prefix="<role>"):
    """What the host's sources decide for the plan's repository: {adopt, remove_own, words}.

    ``adopt``: None (no foreign source serves the URL: gpufleet writes its own, as before), or {path, keyring,
    uri, owner, line, id} of the foreign source the host keeps (keyring: the file its Signed-By or gpgkey
    names, "" for an inline key or apt's global keyrings; uri: the URI as it writes it, which apt's index
    names). ``remove_own``: gpufleet's own source file and keyring of
    an earlier run, when adopting (it owns them). ``words``: the plan's line. RepoPlanError naming the files,
    the URL, the keys found and what to do when the sources cannot be adopted. ``sources`` None or {} (the
    facts' subset not gathered): nothing decided."""
    out = {"adopt": None, "remove_own": [], "words": ""}
    if not sources:
        return out
    foreign, own = serving(repo, sources)
    if not foreign:
        return out
    pick = _dnf_adoptable if repo["manager"] == "dnf" else _apt_adoptable
    entry = pick(foreign, repo["url"], repo, sources, prefix)
    keyring = (entry.get("keyrings") or [""])[0]
    owner = entry.get("owner")
    uri = entry_urls(entry)[normalize_url(repo["url"])]
    out["adopt"] = {"path": entry["file"], "keyring": keyring, "uri": uri, "owner": owner,
                    "line": entry.get("line"), "id": entry.get("id")}  # fmt: skip
    out["words"] = f"adopting {entry['file']} ({owner or 'no package owns it'})"
    if own:
        out["remove_own"] = [repo["path"], repo["keyring"]]
        out["words"] += f"; removing gpufleet's own {repo['path']} and {repo['keyring']}"
    return out
