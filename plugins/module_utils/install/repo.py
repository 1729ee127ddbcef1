# Copyright: gpufleet contributors
# Apache-2.0
"""NVIDIA's CUDA network repository on the target: source file, key, apt's verdict and index, the pins.

Stdlib, ``ansible.module_utils.urls`` (the key's fetch: proxies from the environment, CA bundles,
validate_certs as in every Ansible module), ``module_utils/openpgp.py`` (the key's fingerprint),
Python >= 3.9; runs on targets inside the ``nvidia_repo`` module.
What to configure and install (repository directory, URLs, pinned fingerprint, keyring and source paths, the
package specs) is decided on the controller by ``plan/repo.py`` and comes here as structured data: the source
file is rendered where it is written, from fields that are checked to be single tokens (a newline never adds a
line to a source). This file executes: the key is trusted only with the pinned fingerprint, the package set is
resolved from apt's verified index and pinned.
"""

from __future__ import annotations

import re
from urllib.error import URLError

from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url
from ansible_collections.gpufleet.nvidia.plugins.module_utils import openpgp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpufleet as kb_gpufleet

GPUFLEET_HEADER = "# Managed by gpufleet"  # the first line of every file gpufleet writes under /etc
MANAGED = GPUFLEET_HEADER + " (nvidia_repo): NVIDIA CUDA repository\n"


class RepoError(ValueError):
    """A clear one-line reason (names the variable where one is to blame)."""


# ---------------------------------------------------------------------------------------------------
# the source file, rendered from the plan's structured fields
# ---------------------------------------------------------------------------------------------------
def _token(value, field):
    """A field pasted into a source file: one non-empty token, no whitespace or control character."""
    text = str(value or "")
    if not text or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        raise RepoError(f"repo.{field}: {text!r} is not one token (no spaces, newlines, control characters)")
    return text


def render_deb822(url, keyring):
    # NVIDIA's repositories are flat (Suites: /), as cuda-keyring's own source line "deb [...] <url> /".
    url, keyring = _token(url, "url"), _token(keyring, "keyring")
    return MANAGED + f"Types: deb\nURIs: {url}\nSuites: /\nSigned-By: {keyring}\n"


def render_dnf_repo(url, keyring):
    # gpgcheck: every package's signature; repo_gpgcheck: repodata/repomd.xml's detached signature
    # (repomd.xml.asc, which NVIDIA publishes signed with the same key), as apt checks the Release file's:
    # without it an edited repomd.xml is read (issue 38)
    url, keyring = _token(url, "url"), _token(keyring, "keyring")
    return (
        MANAGED + "[gpufleet-nvidia-cuda]\n"
        "name=NVIDIA CUDA\n"
        f"baseurl={url}\n"
        "enabled=1\n"
        "gpgcheck=1\n"
        "repo_gpgcheck=1\n"
        f"gpgkey=file://{keyring}\n"
    )


def render_source(repo, keyring=None):
    """The repository file's content for the plan's ``repo`` (manager apt: deb822, dnf: .repo); ``keyring``
    overrides the plan's (a staging copy)."""
    render = render_deb822 if repo["manager"] == "apt" else render_dnf_repo
    return render(repo["url"], keyring or repo["keyring"])


# ---------------------------------------------------------------------------------------------------
# the repository key: its OpenPGP fingerprint (module_utils/openpgp.py, shared with probe/sources.py)
# ---------------------------------------------------------------------------------------------------
def canonical_fingerprint(text):
    """The fingerprint as 40 upper-case hex digits (spaces dropped); "" when empty. The plan checked the
    user's grammar (plan/repo.normalize_fingerprint names the variable); this one only compares."""
    fpr = re.sub(r"\s+", "", str(text or "")).upper()
    if fpr and not re.match(r"^[0-9A-F]{40}\Z", fpr):
        raise RepoError(f"repo.key_fingerprint: {text!r} is not 40 hex digits")
    return fpr


def key_fingerprints(data):
    """Fingerprints of the primary keys and subkeys in an OpenPGP key file (openpgp.key_fingerprints: the
    first is the primary key's); RepoError for data that is not an OpenPGP key."""
    try:
        return openpgp.key_fingerprints(data)
    except openpgp.OpenPGPError as exc:
        raise RepoError(str(exc)) from None


def check_key(data, fingerprint, var):
    """Raise unless the primary key of ``data`` has the pinned ``fingerprint``."""
    if not fingerprint:
        raise RepoError(
            f"{var}: no pinned fingerprint is known for this repository's key; set {var} to the fingerprint "
            "NVIDIA publishes for it"
        )
    found = key_fingerprints(data)
    if canonical_fingerprint(fingerprint) != found[0]:
        raise RepoError(
            f"the repository key's fingerprint is {found[0]}, not the pinned "
            f"{canonical_fingerprint(fingerprint)} ({var}); refusing it"
        )
    return found[0]


def fetch_key(url, timeout, validate_certs=True, ca_path=None):
    """The key's bytes through open_url: the environment's proxies (https_proxy, http_proxy, no_proxy)."""
    try:
        with open_url(
            url, http_agent="gpufleet", timeout=timeout, validate_certs=validate_certs, ca_path=ca_path
        ) as resp:
            return resp.read()
    except (URLError, OSError, UrlConnectionError) as exc:
        raise RepoError(f"cannot fetch the repository key {url}: {getattr(exc, 'reason', exc)}") from None


# ---------------------------------------------------------------------------------------------------
# the repository's index (apt's verified copy of Packages): the whole package set, each at one version
# ---------------------------------------------------------------------------------------------------
PIN_PRIORITY = 1001  # the planned version is apt's candidate, over newer ones and (re)installs, never moved
PIN_FILES = kb_gpufleet.PIN_FILES  # gpufleet's record of each set, read by probe/packages.records
PIN_NOT_OWNED = kb_gpufleet.PIN_NOT_OWNED


def _order(char):
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256 if char else 0


def _compare_part(a, b):
    """dpkg's verrevcmp: non-digit runs by dpkg's character order (~ first), digit runs numerically."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        start_i, start_j = i, j
        while i < len(a) and a[i].isdigit():
            i += 1
        while j < len(b) and b[j].isdigit():
            j += 1
        diff = int(a[start_i:i] or 0) - int(b[start_j:j] or 0)
        if diff:
            return diff
    return 0


def compare_versions(a, b):
    """<0, 0, >0 as dpkg --compare-versions orders two Debian versions (epoch:upstream-revision)."""

    def split(v):
        epoch, _sep, rest = v.rpartition(":") if ":" in v else ("0", "", v)
        upstream, _sep, revision = rest.rpartition("-") if "-" in rest else (rest, "", "0")
        return int(epoch or 0), upstream, revision

    ea, ua, ra = split(str(a))
    eb, ub, rb = split(str(b))
    return (ea - eb) or _compare_part(ua, ub) or _compare_part(ra, rb)


RELATIONS = {
    ">=": lambda c: c >= 0,
    "<=": lambda c: c <= 0,
    ">>": lambda c: c > 0,
    "<<": lambda c: c < 0,
    "=": lambda c: c == 0,
    ">": lambda c: c >= 0,  # obsolete forms, as dpkg reads them
    "<": lambda c: c <= 0,
}


def parse_index(text):
    """{name: {version: {field: value}}} of a Packages file (what apt verified against the signed Release)."""
    out = {}
    for block in re.split(r"\n\s*\n", text or ""):
        fields = {}
        for line in block.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            key, _sep, value = line.partition(":")
            fields[key.strip()] = value.strip()
        if fields.get("Package") and fields.get("Version"):
            out.setdefault(fields["Package"], {})[fields["Version"]] = fields
    return out


def parse_depends(value):
    """[[(name, relation, version)], ...]: each list holds the alternatives (a | b) of one dependency."""
    out = []
    for group in (value or "").split(","):
        alternatives = []
        for item in group.split("|"):
            match = re.match(
                r"^\s*([a-z0-9][a-z0-9+.-]*)(?::\S+)?\s*(?:\(\s*([<>=]+)\s*([^)\s]+)\s*\))?", item
            )
            if match:
                alternatives.append((match.group(1), match.group(2) or "", match.group(3) or ""))
        if alternatives:
            out.append(alternatives)
    return out


def _newest(versions):
    best = None
    for version in versions:
        if best is None or compare_versions(version, best) > 0:
            best = version
    return best


def _satisfying(available, constraints):
    return sorted(
        (v for v in available if all(RELATIONS[r](compare_versions(v, want)) for r, want in constraints)),
        key=_SortKey,
    )


class _SortKey:
    """Sort Debian versions with dpkg's order."""

    def __init__(self, version):
        self.version = version

    def __lt__(self, other):
        return compare_versions(self.version, other.version) < 0


def top_version(index, spec, url, var):
    """The version of a requested package (``name``, ``name=ver`` or ``name=prefix*``) that the index has."""
    name, _sep, want = spec.partition("=")
    have = sorted(index.get(name, {}), key=_SortKey)
    if not have:
        raise RepoError(
            f"{var}: the repository {url} has no package {name} (it has {len(index)} packages); is "
            "the base URL a mirror of NVIDIA's repository for this OS?"
        )
    if not want:
        return name, _newest(have)
    prefix = want[:-1] if want.endswith("*") else None
    matches = [v for v in have if v == want or (prefix and v.startswith((prefix + ".", prefix + "-")))]
    if not matches:
        raise RepoError(
            f"{var}: the repository {url} has {name} {', '.join(have)}, not {want.rstrip('*')}; "
            "choose one of those versions"
        )
    return name, _newest(matches)


def resolve_set(index, specs, url, var):
    """Every package of the set: the requested packages at their versions and, within this repository, their
    dependencies at the lowest version every constraint in the set allows (NVIDIA's metapackages depend on
    their release's component versions with >=). Packages the repository does not have (zlib1g, the
    distribution's) are not part of the set. Returns [(name, version)] sorted by name."""
    chosen = dict(top_version(index, spec, url, var) for spec in specs)
    constraints = {name: [("=", version)] for name, version in chosen.items()}
    changed = True
    while changed:
        changed = False
        for name, version in sorted(chosen.items()):
            for alternatives in parse_depends(index[name][version].get("Depends", "")):
                dep = next((a for a in alternatives if a[0] in index), None)
                if dep is None:
                    continue
                rules = constraints.setdefault(dep[0], [])
                if dep[1] and (dep[1], dep[2]) not in rules:
                    rules.append((dep[1], dep[2]))
                fits = _satisfying(index[dep[0]], rules)
                if not fits:
                    wanted = ", ".join(f"{r} {v}" for r, v in rules)
                    have = ", ".join(sorted(index[dep[0]], key=_SortKey))
                    raise RepoError(
                        f"{var}: the repository {url} has no {dep[0]} that satisfies {wanted} (it has {have})"
                    )
                if chosen.get(dep[0]) != fits[0]:
                    chosen[dep[0]] = fits[0]
                    changed = True
    return sorted(chosen.items())


_CUDNN_MAJOR = re.compile(r"-cuda-([0-9]+)$")
_CUDA_XY = re.compile(r"-([0-9]+)-([0-9]+)(?:-config-common)?$")
_CUDA_MAJOR = re.compile(r"^cuda-toolkit-([0-9]+)-config-common$")


def check_one_major(members, what, wanted, var, url):
    """The resolved set must not mix CUDA majors (or, for toolkits, X.Y releases): every package whose name
    carries a CUDA version carries a planned one. ``wanted``: the cuDNN build's CUDA major (cudnn) or the
    toolkits' X.Y list (cuda_toolkit). A repository whose metapackage pulls another major's packages (a
    mis-built mirror, a hand-made set) is refused before anything is pinned or installed."""
    if what == "cudnn":
        ok_major, ok_xy = {str(wanted)}, set()
    else:
        ok_xy = {tuple(str(v).split(".")[:2]) for v in wanted}
        ok_major = {xy[0] for xy in ok_xy}
    strays = []
    for name, version in members:
        cudnn, xy, major = _CUDNN_MAJOR.search(name), _CUDA_XY.search(name), _CUDA_MAJOR.match(name)
        if what == "cudnn":
            stray = bool(cudnn) and cudnn.group(1) not in ok_major
        elif major:
            stray = major.group(1) not in ok_major
        else:
            stray = bool(xy) and xy.groups() not in ok_xy
        if stray:
            strays.append(f"{name}={version}")
    if strays:
        allowed = f"CUDA {wanted}" if what == "cudnn" else "CUDA " + ", ".join(str(v) for v in wanted)
        raise RepoError(
            f"{var}: the package set resolved from {url} mixes CUDA majors or releases: {', '.join(strays)} "
            f"(the plan is for {allowed} only); nothing was pinned or installed. Fix the repository's "
            "dependencies or choose the version whose packages match"
        )


def pin_file(what, packages, not_owned=()):
    """apt preferences that make each package's planned version its candidate (the whole set, not only
    the top-level package): apt-get upgrade / dist-upgrade and installs of other packages keep them. The file
    is also gpufleet's record of the set (probe/packages.parse_pin_record): a package in ``not_owned`` was
    installed before gpufleet pinned it, and its stanza says so (<role>_state: absent leaves it installed)."""
    stanzas = [
        f"Explanation: Managed by gpufleet ({what}): {name} stays at {version}"
        f"{'; ' + PIN_NOT_OWNED if name in not_owned else ''}\n"
        f"Package: {name}\nPin: version {version}\nPin-Priority: {PIN_PRIORITY}\n"
        for name, version in packages
    ]
    return {"path": PIN_FILES[what], "content": "\n".join(stanzas)}


def not_owned(pins, previous, installed):
    """The names of ``pins`` ([(name, version)]) that are not gpufleet's: the previous record (``previous``:
    [{name, version, owned}], probe/packages.parse_pin_record) says so, or the package is new to the record
    and already installed (``installed``: {name: {version, held}}), i.e. there before gpufleet."""
    known = {r["name"]: r["owned"] for r in previous or ()}
    return sorted(name for name, _version in pins if not known.get(name, name not in (installed or {})))


def hold_ours(packages, theirs, installed):
    """``packages`` (pinned_packages) with hold and hold_missing cut to what is gpufleet's to hold: a package
    of the set installed before gpufleet (``theirs``, not_owned) is pinned with the set and recorded, but its
    hold state stays the admin's: one the admin did not hold is never held (<role>_state: absent then leaves
    the host's selections as they were); one the admin held is held again after a move releases it."""
    theirs = {n for n in theirs if not ((installed or {}).get(n) or {}).get("held")}
    return dict(
        packages,
        hold=[n for n in packages["hold"] if n not in theirs],
        hold_missing=[n for n in packages["hold_missing"] if n not in theirs],
    )


_CUDNN_FAMILY = re.compile(r"^libcudnn([0-9]+)(?:-dev|-headers)?-cuda-([0-9]+)$")


def leftovers(previous, members, installed, what, remove):
    """What gpufleet pinned (and installed) before and the new set no longer has, still installed:
    ``replaced`` (cuDNN packages of another CUDA major: NVIDIA's packages conflict, apt replaces them with the
    new set), else ``remove`` when asked (<role>_remove_unlisted), else ``kept`` (still pinned, as they were:
    nothing is upgraded or removed behind the user's back)."""
    names = {name for name, _version in members}
    family_of = [m.groups() for m in map(_CUDNN_FAMILY.match, names) if m]
    majors, cuda_majors = {f[0] for f in family_of}, {f[1] for f in family_of}
    out = {"replaced": [], "remove": [], "kept": []}
    for name, _pinned in previous:
        if name in names or name not in installed:
            continue
        family = _CUDNN_FAMILY.match(name)
        if what == "cudnn" and family and family.group(1) in majors and family.group(2) not in cuda_majors:
            out["replaced"].append(name)
        elif remove:
            out["remove"].append(name)
        else:
            out["kept"].append((name, installed[name]))
    return out


def pinned_packages(what, members, previous, installed, remove_unlisted):
    """The resolved set ``members`` ([(name, version)], resolve_set) against the installed state
    (``installed``: {name: {version, held}}) and the set gpufleet pinned before (``previous``: [(name,
    version)] of its pin file, probe/packages.pin_record).

    Returns (packages, pins). ``packages``: specs (name=version of the whole set), names, installed, missing
    (not installed at the set's version), unhold (held packages the move changes, replaces or removes), hold
    (the set and what stays pinned: what the role holds with <role>_hold), hold_missing (those of hold that
    are not held now, installed or not), and from leftovers() replaced, remove and kept (names). ``pins``:
    [(name, version)] for the pin file - the set and what stays pinned."""
    installed = installed or {}
    versions = {name: state["version"] for name, state in installed.items()}
    rest = leftovers(previous, members, versions, what, remove_unlisted)
    kept = [name for name, _version in rest["kept"]]
    names = [name for name, _version in members]
    state = {name: installed[name] for name in names if name in installed}
    moved = [n for n, v in members if state.get(n, {}).get("held") and state[n]["version"] != v]
    hold = names + kept
    packages = {
        "specs": [f"{name}={version}" for name, version in members],
        "names": names,
        "installed": {name: s["version"] for name, s in state.items()},
        "missing": [f"{n}={v}" for n, v in members if state.get(n, {}).get("version") != v],
        "unhold": moved + [n for n in rest["replaced"] + rest["remove"] if installed[n]["held"]],
        "hold": hold,
        # not held now: every package the install adds or moves (their holds released first), and any the
        # admin released (the role holds them again; a run that changes nothing holds nothing)
        "hold_missing": [n for n in hold if n in moved or not (installed.get(n) or {}).get("held")],
        "replaced": rest["replaced"],
        "remove": rest["remove"],
        "kept": kept,
    }
    return packages, members + rest["kept"]


# apt-get update: what its output says about the repository (signature, index hashes, reachability)
APT_REFUSALS = (
    (re.compile(r"BADSIG|signatures were invalid|has been manipulated|signature verification failed", re.I),
     "its Release signature does not verify with the key pinned by {var}"),
    (re.compile(r"NO_PUBKEY|Missing key|key is not certified", re.I),
     "its Release is signed by another key than the one {var} pins"),
    (re.compile(r"Hash Sum mismatch|unexpected size|Hashes of expected file", re.I),
     "an index file does not match the hashes in its signed Release"),
    (re.compile(r"is not signed|no longer signed|NOSPLIT|Clearsigned file isn't valid", re.I),
     "it has no valid signature"),
    (re.compile(r"Could not connect|Failed to fetch|Temporary failure resolving|404\s+Not Found", re.I),
     "apt could not fetch it"),
)  # fmt: skip


def apt_update_refusal(output, rc, url, var):
    """None when apt-get update accepted the repository, else the one-line reason (names the variable)."""
    lines = [line.strip() for line in (output or "").splitlines()]
    errors = [
        line for line in lines if line.startswith(("E:", "W:", "Err:")) and "Some index files" not in line
    ]
    if rc == 0 and not errors:
        return None
    first = next(
        (line for tag in ("E:", "W:", "Err:") for line in errors if line.startswith(tag)), f"rc={rc}"
    )
    fallback = f"apt-get update failed (rc={rc})"
    return _refused("apt", APT_REFUSALS, output, fallback=fallback, url=url, var=var, quote=first)


# dnf makecache of a staged .repo: what its output says about the repository (repomd.xml's signature, reach)
DNF_REFUSALS = (
    # libdnf says the same of an edited repomd.xml and of one signed by another key
    (re.compile(r"Bad GPG signature|signature verification error", re.I),
     "its repomd.xml signature does not verify with the key pinned by {var}"),
    (re.compile(r"GPG signature is not available|repomd\.xml\.asc", re.I),
     "it has no repomd.xml.asc: its metadata is not signed"),
    (re.compile(r"Curl error|Cannot download|Failed to download metadata|Status code: 404", re.I),
     "dnf could not fetch it"),
)  # fmt: skip


def dnf_makecache_refusal(output, rc, url, var):
    """None when dnf makecache read the repository, else the one-line reason (names the variable)."""
    if rc == 0:
        return None
    lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    first = next((line for line in lines if line.startswith(("Error:", "Errors"))), last)
    fallback = f"dnf makecache failed (rc={rc})"
    return _refused("dnf", DNF_REFUSALS, output, fallback=fallback, url=url, var=var, quote=first)


def _refused(tool, table, output, *, fallback, url, var, quote):
    """The one-line refusal of apt's or dnf's reading of a repository: the first reason of ``table`` the
    output matches (else ``fallback``), the tool's own words (``quote``), and that nothing changed."""
    why = next((words for rx, words in table if rx.search(output or "")), fallback)
    words = " ".join(quote.split())[:300]
    return (
        f"{tool} refused the repository {url}: {why.format(var=var)} ({tool}: {words}); "
        "nothing was installed or changed: the packages installed before are as they were"
    )


# ---------------------------------------------------------------------------------------------------
# removal (<role>_state: absent): the packages of gpufleet's record, and what only they pulled in
# ---------------------------------------------------------------------------------------------------
_SIMULATED = re.compile(r"^(?:Purg|Remv) (\S+)", re.M)


def simulated_removals(output):
    """The package names ``apt-get -s`` says it would remove or purge (``Remv name [version]``, ``Purg``),
    without an architecture suffix."""
    return sorted({name.split(":", 1)[0] for name in _SIMULATED.findall(output or "")})


def removal_set(asked, simulated, orphans_before, auto):
    """What a removal of the recorded packages ``asked`` takes, from apt's simulation of ``purge
    --autoremove asked`` (``simulated``): ``also`` - the packages apt installed as dependencies (``auto``)
    that the removal leaves unneeded (not ``orphans_before``: those were unneeded already, someone else's to
    autoremove), and ``others`` - packages someone installed (not auto) that would go because they need one
    of ``asked``: a removal that takes them is refused."""
    asked = set(asked)
    extra = set(simulated) - asked
    return {
        "also": sorted(n for n in extra if n in auto and n not in orphans_before),
        "others": sorted(n for n in extra if n not in auto),
    }


def removal_refusal(what, others, asked):
    """The refusal of a removal that would take packages gpufleet did not install (they need its own)."""
    return (
        f"{what}_state=absent: removing gpufleet's {' '.join(sorted(asked))} would also remove "
        f"{' '.join(others)}, which gpufleet did not install and which needs them; nothing was removed. "
        f"Remove {' '.join(others)} first, or set {what}_state: present to keep gpufleet's packages"
    )
