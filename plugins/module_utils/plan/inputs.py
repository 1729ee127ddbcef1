# Copyright: gpufleet contributors
# Apache-2.0
"""The grammar of every role variable: what a value may look like before any plan reads it.

Checked on the controller by ``nvidia_plan`` (plan/roles.validate) before any host is contacted, once per
role and host, after the role's argument spec typed the values. Every message names the user's variable,
its value and what is allowed (plan/refusal.bad); a URL that holds credentials is never shown as given.

Three layers, in order:
- ``shape_errors``: the value's kind before Ansible's conversions (a list where a string belongs would
  otherwise become the text "['a']");
- ``control_errors``: no string anywhere in any variable (list items, mapping keys and values included)
  holds a newline or another control character: such a value could add a line to a file gpufleet writes
  as root (an apt source, modprobe.d, ld.so.conf.d, profile.d);
- ``GRAMMARS``: the grammar of each variable that is rendered into a file, fetched or used as a path: URLs
  by scheme and form, paths absolute and normalised, modprobe options as ``name=value`` tokens, fingerprints,
  release labels, component names, positive counts, proxies as ``http://host[:port]`` and the hosts that
  bypass them (a ``<role>_no_proxy`` needs one of its role's proxies); and each role's ``<role>_state``
  (present or absent), which decides whether its plan installs or removes.

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from urllib.parse import urlsplit

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda_redist as kb_redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import distributions as kb_distributions
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpus as kb_gpus
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad, control_character
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import VersionError, parse_version

# how a value is shown in a message: repr, with credentials of a URL replaced
_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")

# modprobe.d: `options nvidia <tokens>`; a token is name=value, the value bare or in double quotes
# (NVreg_RegistryDwords="RMUseSwI2c=0x01;RMI2cSpeed=100"); tokens separated by single spaces
_MODPROBE_TOKEN = r'[A-Za-z_][A-Za-z0-9_]*=(?:[^\s"\'#\\]+|"[^"\\]*")'
MODPROBE_OPTION = re.compile(rf"^{_MODPROBE_TOKEN}(?: {_MODPROBE_TOKEN})*\Z")
COMPONENT = re.compile(r"^[a-z][a-z0-9_]*\Z")  # a redist manifest's component name (cuda_nvcc, libcublas)
RELEASE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\Z")  # a redist release label
CUDA_XY = re.compile(r"^[0-9]+\.[0-9]+\Z")
# RFC 3986's characters (unreserved, reserved, %): no space, quote, backtick, backslash, brace, | < > ^
URL_CHARS = re.compile(r"^[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+\Z")
# a path gpufleet writes into a file (ld.so.conf.d splits at spaces, commas and colons; DKMS's
# framework.conf.d is sourced by a shell): POSIX's portable file name characters and +
PATH_CHARS = re.compile(r"^[A-Za-z0-9._+/-]+\Z")
GPU_NAME = re.compile(r"^[A-Za-z0-9 ._+/()-]+\Z")

# how to give a login instead (a URL's credentials would be written into world-readable sources and shown)
PACKAGES_LOGIN = (
    "a URL without credentials: give apt the login in /etc/apt/auth.conf.d/<name>.conf (mode 0600), dnf in "
    "the .repo file's username and password (mode 0600); the value is not shown"
)
# a proxy's login would be handed to every download's environment and shown with the plan (-v, AWX's output)
PROXY_LOGIN = (
    "a proxy URL without credentials: let the proxy admit the hosts without a login, or keep the login in "
    "the hosts' own proxy settings (apt.conf.d, dnf.conf, /etc/environment), which gpufleet leaves as they "
    "are, and leave the role's proxy variables empty; the value is not shown"
)
DOWNLOAD_LOGIN = (
    "a URL without credentials: use a mirror that needs none, or put the archives in the controller's "
    "cache ({role}_controller_cache_dir, mirror layout) and set {role}_controller_cache: true; the value "
    "is not shown"
)


def shown(value):
    """repr of a value for a message, a URL's credentials replaced by ***."""
    text = repr(value)
    return _USERINFO.sub("***@", text)


def _named(name, value, allowed, why=""):
    return bad(name, shown(value), allowed, why)


# ---------------------------------------------------------------------------------------------------
# kinds before conversion, and control characters anywhere
# ---------------------------------------------------------------------------------------------------
_KINDS = {
    "str": ((str, int, float), "a string"),
    "list": ((list, tuple), "a list"),
    "dict": ((dict,), "a mapping"),
    "int": ((int, str), "an integer"),
    "bool": ((bool, str, int), "a boolean (true or false)"),
}


# what Ansible's boolean conversion takes (ansible.module_utils.parsing.convert_bool): the argument spec's
# own message for anything else names no allowed value
BOOLEAN_WORDS = frozenset(("y", "yes", "on", "1", "true", "t", "n", "no", "off", "0", "false", "f"))


def _not_boolean(value):
    if isinstance(value, str):
        return value.strip().lower() not in BOOLEAN_WORDS
    return isinstance(value, int) and not isinstance(value, bool) and value not in (0, 1)


def shape_errors(options, values):
    """The variables whose value, as given, holds a control character (``"900\\n"`` would become 900) or is
    of a kind Ansible would convert into nonsense (a list or mapping given for a string, a string for a
    mapping, a list for an integer or boolean)."""
    errors = []
    for name, spec in options.items():
        kind = spec.get("type", "str")
        value = values.get(name)
        found = control_errors(name, value)
        if found or value is None or kind not in _KINDS:
            errors += found
            continue
        allowed, words = _KINDS[kind]
        if not isinstance(value, allowed) or (kind != "bool" and isinstance(value, bool)):
            errors.append(_named(name, value, words))
        elif kind == "bool" and _not_boolean(value):
            errors.append(_named(name, value, "true or false (also yes/no, on/off, 1/0)"))
        elif kind == "list" and spec.get("elements") in ("str", "dict"):
            want = dict if spec["elements"] == "dict" else (str, int, float)
            for index, item in enumerate(value):
                if not isinstance(item, want) or isinstance(item, bool):
                    errors.append(_named(f"{name}[{index}]", item, _KINDS[spec["elements"]][1]))
    return errors


def control_errors(name, value):
    """A message for each string in ``value`` (nested lists and mappings, keys too) that holds a newline or
    another control character, naming where it is (``name[2]``, ``name.key``)."""
    if isinstance(value, str):
        if control_character(value):
            return [_named(name, value, "text without newlines or control characters")]
        return []
    errors = []
    if isinstance(value, dict):
        for key, item in value.items():
            errors += control_errors(f"{name} (a key)", key) if isinstance(key, str) else []
            errors += control_errors(f"{name}.{key}", item)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            errors += control_errors(f"{name}[{index}]", item)
    return errors


# ---------------------------------------------------------------------------------------------------
# grammars
# ---------------------------------------------------------------------------------------------------
def url(schemes, empty=False, what="URL", login=PACKAGES_LOGIN, local=False):
    """A URL of one of ``schemes`` (http/https need a host; file a path), without credentials, spaces,
    query or fragment; empty only when ``empty``. ``local``: also an absolute directory (what the redist
    installer reads in place), and a file URL then as file:///path (the form it reads)."""
    words = " or ".join(f"{s}://" if s != "file" else ("file:///" if local else "file:/") for s in schemes)
    allowed = f"an {words} {what}" + (", or an absolute directory" if local else "")
    allowed += ", or empty" if empty else ""

    def check(name, value):
        text = str(value)
        if text == "":
            return [] if empty else [_named(name, value, allowed)]
        if _USERINFO.search(text):
            role = name[: name.index("_redist")] if "_redist" in name else ""
            return [bad(name, "<a URL with credentials>", login.format(role=role))]
        if local and text.startswith("/"):
            return _ABSPATH(name, text)
        why = _url_problem(text, schemes)
        if why is None and local and text.startswith("file:") and not text.startswith("file:///"):
            why = "write a file URL as file:///path"
        return [] if why is None else [_named(name, value, allowed, why)]

    return check


def _url_problem(text, schemes):
    """None for a well-formed URL of ``schemes``, else why not ("" when the scheme is wrong)."""
    parts = urlsplit(text)
    problems = (
        (any(c.isspace() for c in text), "it holds a space"),
        (not URL_CHARS.match(text), "only the characters of RFC 3986 (quote others as %XX)"),
        (parts.scheme not in schemes, ""),
        (parts.scheme in ("http", "https") and not parts.hostname, "it names no host"),
        (
            parts.scheme == "file" and (parts.netloc or not parts.path.startswith("/")),
            "a file URL is file:/path",
        ),
        ("?" in text or "#" in text, "no ?query or #fragment"),
    )
    return next((why for found, why in problems if found), None)


def abspath(empty=False):
    """An absolute, normalised path other than / (no //, /./, /../ or trailing /); empty only when
    ``empty``."""
    allowed = "an absolute, normalised path (not /)" + (", or empty" if empty else "")

    def check(name, value):
        text = str(value)
        if text == "":
            return [] if empty else [_named(name, value, allowed)]
        if not text.startswith("/") or text == "/":
            return [_named(name, value, allowed)]
        if not PATH_CHARS.match(text):
            return [_named(name, value, allowed, "letters, digits and . _ - + / only")]
        if posixpath.normpath(text) != text or text.startswith("//"):
            return [_named(name, value, allowed, f"write it as {posixpath.normpath(text)!r}")]
        return []

    return check


_ABSPATH = abspath()


def positive(name, value):
    return [] if isinstance(value, int) and value > 0 else [_named(name, value, "an integer > 0")]


def non_negative(name, value):
    return [] if isinstance(value, int) and value >= 0 else [_named(name, value, "an integer >= 0")]


def modprobe_options(name, value):
    errors = []
    for index, item in enumerate(value or []):
        if not MODPROBE_OPTION.match(str(item)):
            errors.append(
                _named(
                    f"{name}[{index}]",
                    item,
                    "name=value module parameters separated by spaces (e.g. NVreg_EnableGpuFirmware=0 or "
                    'NVreg_RegistryDwords="A=1;B=2"); "options nvidia" is written by the role',
                )
            )
    return errors


COMPONENTS_ALLOWED = (
    "a named set (toolkit: the whole CUDA toolkit; compiler: nvcc, its headers and runtime) or a toolkit "
    "component of NVIDIA's redist manifest, e.g. libcublas"
)


def components(name, value):
    """cuda_toolkit_redist_components: a non-empty list of the named sets and toolkit components; the
    manifest's driver and datacenter pieces (kb/cuda_redist.py NOT_TOOLKIT) are no part of a toolkit."""
    if not value:
        return [
            _named(
                name,
                list(value or []),
                "a non-empty list: [toolkit] (the whole toolkit, the default), [compiler] (nvcc, its headers "
                "and runtime) or components of NVIDIA's redist manifest",
            )
        ]
    errors = []
    for i, item in enumerate(value):
        text = str(item)
        if not COMPONENT.match(text):
            errors.append(_named(f"{name}[{i}]", item, COMPONENTS_ALLOWED))
        elif text in kb_redist.NOT_TOOLKIT:
            why = f"{text} is {kb_redist.NOT_TOOLKIT[text]}, not part of a CUDA toolkit"
            errors.append(_named(f"{name}[{i}]", item, COMPONENTS_ALLOWED, why))
    return errors


def releases(name, value):
    errors = []
    for key, release in (value or {}).items():
        if not CUDA_XY.match(str(key)):
            errors.append(_named(f"{name} (a key)", key, "a CUDA version X.Y, e.g. '13.0'"))
        elif not isinstance(release, str) or not RELEASE.match(release):
            errors.append(
                _named(f"{name}.{key}", release, "the redist release X.Y.Z of that version, e.g. '13.0.2'")
            )
    return errors


def fingerprint(name, value):
    text = re.sub(r"\s+", "", str(value or "")).upper()
    if text and not re.match(r"^[0-9A-F]{40}\Z", text):
        return [
            _named(
                name, value, "40 hex digits (spaces allowed), the key's full OpenPGP fingerprint, or empty"
            )
        ]
    return []


def one_per_xy(name, value):
    """CUDA toolkits install into /usr/local/cuda-X.Y: two spellings of one X.Y are one directory."""
    seen, errors = {}, []
    for item in value or []:
        xy = ".".join(str(item).split(".")[:2])
        if xy in seen:
            errors.append(
                _named(
                    name,
                    list(value),
                    "one entry per CUDA X.Y",
                    f"{seen[xy]!r} and {str(item)!r} both install into /usr/local/cuda-{xy}",
                )
            )
        seen.setdefault(xy, str(item))
    return errors


def cuda_version(name, value):
    """Empty, or a CUDA version X.Y or X.Y.Z."""
    if str(value) == "":
        return []
    try:
        parse_version(value, name, 2, 3)
    except VersionError:
        return [_named(name, value, "empty or a CUDA version X.Y or X.Y.Z, e.g. '13.0'")]
    return []


def gpus(name, value):
    """Items as kb/gpus.resolve_gpu reads them ({pci_device_id}, {compute_capability} or {name})."""
    errors = []
    for index, item in enumerate(value or []):
        where = f"{name}[{index}]"
        label = item.get("name") if isinstance(item, dict) else None
        if label not in (None, "") and not GPU_NAME.match(str(label)):
            errors.append(_named(f"{where}.name", label, "a GPU's name, e.g. 'NVIDIA H200'"))
            continue
        try:
            kb_gpus.resolve_gpu(item, index)
        except kb_gpus.GpuSpecError as exc:
            errors.append(f"{name}{str(exc)[len('gpus') :]}")
    return errors


# ---------------------------------------------------------------------------------------------------
# proxies: <role>_http_proxy, _https_proxy, _no_proxy (plan/downloads.py puts them into the environment of
# the role's downloads and package manager runs)
# ---------------------------------------------------------------------------------------------------
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_NAME = re.compile(rf"^(?=.{{1,253}}\Z){_LABEL}(?:\.{_LABEL})*\Z")
PROXY_ALLOWED = "empty, or http://host[:port], the proxy's address (for https_proxy too)"
NO_PROXY_ALLOWED = (
    "a host name, a domain (example.org or .example.org: it and every host in it) or an IP address"
)


def _host_problem(host):
    """None for a DNS name or an IP address, else why not."""
    if HOST_NAME.match(host):
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return "not a host name or an IP address"
    return None


def _proxy_problem(text):
    """None for http://host[:port][/], else why not ("" when only the allowed form says it)."""
    if any(c.isspace() for c in text) or not URL_CHARS.match(text):
        return "only the characters of RFC 3986, no space"
    if "://" not in text:
        return "write it with its scheme, e.g. http://proxy.example.org:3128"
    parts = urlsplit(text)
    if parts.scheme == "https":
        return (
            "gpufleet's own downloads (Python's urllib) send the CONNECT of an https URL to the proxy in "
            "plain HTTP whatever the proxy's scheme: give the proxy's http:// address"
        )
    if parts.scheme != "http":
        return ""
    try:
        port = parts.port
    except ValueError:
        return "the port is a number from 1 to 65535"
    problems = (
        (not parts.hostname, "it names no host"),
        (bool(parts.hostname) and _host_problem(parts.hostname), "it names no valid host name or address"),
        (port == 0, "the port is a number from 1 to 65535"),
        (parts.path not in ("", "/") or "?" in text or "#" in text, "no path, ?query or #fragment"),
    )
    return next((why for found, why in problems if found), None)


def proxy_url(name, value):
    """Empty, or the proxy's http://host[:port]; a URL with credentials is refused without showing it."""
    text = str(value)
    if text == "":
        return []
    if _USERINFO.search(text):
        return [bad(name, "<a URL with credentials>", PROXY_LOGIN)]
    why = _proxy_problem(text)
    return [] if why is None else [_named(name, value, PROXY_ALLOWED, why)]


def _no_proxy_problem(text):
    """None for a host, a domain (one leading dot allowed) or an IP address, else why not."""
    problems = (
        (text == "*", "'*' turns the proxy off for every host: leave the proxy variables empty instead"),
        (
            "/" in text,
            "a CIDR range is matched neither by apt nor by gpufleet's own downloads (Python): list the "
            "addresses, or a domain",
        ),
        ("," in text or any(c.isspace() for c in text), "one host per item, without spaces"),
    )
    why = next((why for found, why in problems if found), None)
    if why is not None:
        return why
    host = text[1:] if text.startswith(".") else text
    if ":" in host and not HOST_NAME.match(host):
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return "without a port: apt compares the host alone"
        return None
    return _host_problem(host)


def no_proxy(name, value):
    """Each item a host, a domain or an IP address (the hosts the role's downloads reach without a proxy)."""
    errors = []
    for index, item in enumerate(value or []):
        why = _no_proxy_problem(str(item))
        if why is not None:
            errors.append(_named(f"{name}[{index}]", item, NO_PROXY_ALLOWED, why))
    return errors


def no_proxy_alone(variables):
    """A role's ``<role>_no_proxy`` with neither of its proxies set: it would only change what the host's own
    proxy settings (the admin's: apt.conf.d, dnf.conf, the environment) do, which gpufleet leaves alone."""
    errors = []
    for name, value in variables.items():
        if not name.endswith("_no_proxy") or not value:
            continue
        if control_errors(name, value) or no_proxy(name, value):
            continue  # refused item by item already
        prefix = name[: -len("no_proxy")]
        if not variables.get(f"{prefix}http_proxy") and not variables.get(f"{prefix}https_proxy"):
            errors.append(
                _named(
                    name,
                    list(value),
                    f"empty while {prefix}http_proxy and {prefix}https_proxy are empty",
                    "the hosts to reach without gpufleet's proxy mean something only with that proxy set; "
                    "the host's own proxy settings are left as they are",
                )
            )
    return errors


def choice(allowed, words):
    """One of ``allowed`` (exactly: the argument spec's choices, checked again here where a plan is made from
    variables no spec typed)."""

    def check(name, value):
        return [] if value in allowed else [_named(name, value, words)]

    return check


# <role>_state: what the role does with what gpufleet installed on the host (plan/removal.py for absent)
STATES = ("present", "absent")
_STATE = choice(
    STATES,
    "present (install and keep: the default) or absent (remove what gpufleet installed here, as it "
    "recorded it, and nothing else)",
)

_REPO = url(("https", "http", "file"), empty=True, what="mirror of NVIDIA's repositories")
_REDIST = url(
    ("https", "http", "file"), what="location of NVIDIA's redist archives", login=DOWNLOAD_LOGIN, local=True
)
GRAMMARS = {
    "nvidia_driver_state": _STATE,
    "cuda_toolkit_state": _STATE,
    "cudnn_state": _STATE,
    "nvidia_driver_reboot_timeout": positive,
    "nvidia_driver_mok_key": abspath(empty=True),
    "nvidia_driver_mok_cert": abspath(empty=True),
    "nvidia_driver_modprobe_options": modprobe_options,
    "nvidia_driver_cuda_version": cuda_version,
    "nvidia_driver_gpus": gpus,
    "nvidia_driver_debian_mirror": url(("https", "http", "file"), empty=True, what="Debian mirror"),
    "nvidia_driver_repo_base_url": _REPO,
    "nvidia_driver_repo_key_fingerprint": fingerprint,
    "cuda_toolkit_versions": one_per_xy,
    "cuda_toolkit_redist_base_url": _REDIST,
    "cuda_toolkit_redist_components": components,
    "cuda_toolkit_redist_releases": releases,
    "cuda_toolkit_controller_cache_dir": abspath(),
    "cuda_toolkit_repo_base_url": _REPO,
    "cuda_toolkit_repo_key_fingerprint": fingerprint,
    "cudnn_redist_base_url": _REDIST,
    "cudnn_controller_cache_dir": abspath(),
    "cudnn_prefix": abspath(),
    "cudnn_keep_versions": non_negative,
    "cudnn_repo_base_url": _REPO,
    "cudnn_repo_key_fingerprint": fingerprint,
}
# every role's proxies and CA bundle for its downloads (plan/downloads.py): one grammar for the three roles
DOWNLOAD_GRAMMARS = {
    "http_proxy": proxy_url,
    "https_proxy": proxy_url,
    "no_proxy": no_proxy,
    "ca_path": abspath(empty=True),
}
GRAMMARS.update(
    {
        f"{role}_{key}": check
        for role in ("nvidia_driver", "cuda_toolkit", "cudnn")
        for key, check in DOWNLOAD_GRAMMARS.items()
    }
)


def errors_of(variables):
    """Every refusal of the variables' text and grammar (control characters first: a value holding one is
    not judged further)."""
    errors = []
    for name, value in variables.items():
        found = control_errors(name, value)
        if not found and name in GRAMMARS and value is not None:
            found = GRAMMARS[name](name, value)
        errors += found
    return errors + no_proxy_alone(variables)


def os_parameter(name, value):
    """nvidia_compat's ``os`` as a user gives it: a distribution gpufleet knows (a misspelled one would
    switch the OS rules off, as for a host whose OS the facts cannot tell), by its os-release ID or
    Ansible's name. Empty: the facts' OS."""
    if not value:
        return []
    dist = (value or {}).get("distribution") if isinstance(value, dict) else None
    if dist in (None, ""):
        return []
    if kb_distributions.os_release_id(dist) not in kb_distributions.ANSIBLE_NAMES:
        known = ", ".join(sorted(kb_distributions.ANSIBLE_NAMES))
        return [
            _named(f"{name}.distribution", dist, f"a distribution ID ({known}) or Ansible's name for one")
        ]
    return control_errors(name, value)
