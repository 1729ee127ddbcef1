# Copyright: gpufleet contributors
# Apache-2.0
"""Version parsing and comparison for NVIDIA drivers, CUDA, cuDNN and friends.

Stdlib only, Python >= 3.9 (runs on targets as a module_utils and on the controller in filters).

Accepted forms (one to four numeric components, ``.`` or ``-`` as separator, optional ``R`` prefix):
``12.8``, ``12.8.1``, ``12-8``, ``580``, ``R580``, ``580.95.05``, ``9.14.0.64``.
Anything else raises :class:`VersionError` (a ``ValueError``) whose message names the parameter and
shows the accepted forms. No other exception escapes :func:`parse_version`, whatever the input.
"""

from __future__ import annotations

import math
import re

ACCEPTED_FORMS = "12.8, 12.8.1, 12-8, 580, R580, 580.95.05, 9.14.0.64"

# ASCII digits only ("\d" would accept e.g. Arabic-Indic digits), at most 6 per component
# (int() of very long strings is slow or refused), one separator kind per version.
_VERSION_RE = re.compile(r"^[Rr]?([0-9]{1,6})(?:([.-])([0-9]{1,6}))?(?:\2([0-9]{1,6}))?(?:\2([0-9]{1,6}))?\Z")

_OPS = {
    "<": lambda c: c < 0,
    "lt": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    "le": lambda c: c <= 0,
    "==": lambda c: c == 0,
    "=": lambda c: c == 0,
    "eq": lambda c: c == 0,
    "!=": lambda c: c != 0,
    "<>": lambda c: c != 0,
    "ne": lambda c: c != 0,
    ">=": lambda c: c >= 0,
    "ge": lambda c: c >= 0,
    ">": lambda c: c > 0,
    "gt": lambda c: c > 0,
}


class VersionError(ValueError):
    """A value that is not a version (the message names the parameter and the accepted forms)."""


def _pad(parts, length=4):
    return tuple(parts) + (0,) * (length - len(parts))


class Version:
    """A normalized, comparable version.

    ``parts`` holds the integers as given (``(12, 8)`` for "12.8"); comparisons pad with zeros, so
    ``Version("12.8") == Version("12.8.0")``. ``str()`` gives the dotted form keeping the original
    digits of each component ("580.95.05" stays "580.95.05"; "12-8" becomes "12.8"; "R580" "580").
    """

    __slots__ = ("_texts", "parts")

    def __init__(self, parts, texts=None):
        self.parts = tuple(int(p) for p in parts)
        if not 1 <= len(self.parts) <= 4:
            raise VersionError(f"a version has 1 to 4 components, got {parts!r}")
        self._texts = tuple(texts) if texts is not None else tuple(str(p) for p in self.parts)

    # -- accessors -------------------------------------------------------------------------------
    @property
    def major(self):
        return self.parts[0]

    @property
    def minor(self):
        return self.parts[1] if len(self.parts) > 1 else 0

    @property
    def patch(self):
        return self.parts[2] if len(self.parts) > 2 else 0

    def key(self):
        """The zero-padded tuple used for ordering and hashing."""
        return _pad(self.parts)

    def truncate(self, n):
        """The first ``n`` components as a new Version ("12.8.1".truncate(2) -> 12.8)."""
        n = max(1, min(n, len(self.parts)))
        return Version(self.parts[:n], self._texts[:n])

    def startswith(self, prefix):
        """True when ``prefix`` (a Version, or anything parse_version accepts) is a leading part.

        ``Version("12.8.1").startswith("12.8")`` is True, ``startswith("12.9")`` False.
        """
        if not isinstance(prefix, Version):
            prefix = parse_version(prefix, "prefix")
        return self.parts[: len(prefix.parts)] == prefix.parts

    # -- dunder ----------------------------------------------------------------------------------
    def __str__(self):
        return ".".join(self._texts)

    def __repr__(self):
        return f"Version({str(self)!r})"

    def __hash__(self):
        return hash(self.key())

    def _coerce(self, other):
        if isinstance(other, Version):
            return other
        if isinstance(other, (str, int, float)):
            try:
                return parse_version(other, "other")
            except VersionError:
                return None
        if isinstance(other, tuple) and other and all(isinstance(p, int) for p in other):
            return Version(other)
        return None

    def __eq__(self, other):
        other = self._coerce(other)
        if other is None:
            return NotImplemented
        return self.key() == other.key()

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __lt__(self, other):
        other = self._coerce(other)
        if other is None:
            return NotImplemented
        return self.key() < other.key()

    def __le__(self, other):
        other = self._coerce(other)
        if other is None:
            return NotImplemented
        return self.key() <= other.key()

    def __gt__(self, other):
        other = self._coerce(other)
        if other is None:
            return NotImplemented
        return self.key() > other.key()

    def __ge__(self, other):
        other = self._coerce(other)
        if other is None:
            return NotImplemented
        return self.key() >= other.key()


def _describe(value):
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**12:
        return "an integer too large to be a version"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not replace the clear error
        text = f"<{type(value).__name__}>"
    if len(text) > 60:
        text = text[:57] + "..."
    return text


def parse_version(value, param="version", min_parts=1, max_parts=4):
    """Parse ``value`` into a :class:`Version` or raise :class:`VersionError` naming ``param``.

    ``value`` may be a str, an int (``580``) or a float (``12.8`` from unquoted YAML; beware that
    YAML reads ``12.10`` as ``12.1``: quote versions). ``min_parts``/``max_parts`` restrict the number
    of components (e.g. a driver branch has exactly one). Never raises anything but VersionError.
    """
    if isinstance(value, Version):
        parts = len(value.parts)
        if parts < min_parts or parts > max_parts:
            raise VersionError(_message(param, value, min_parts, max_parts))
        return value
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise VersionError(_message(param, value, min_parts, max_parts))
    if isinstance(value, float):
        if math.isnan(value) or value in (float("inf"), float("-inf")) or value < 0:
            raise VersionError(_message(param, value, min_parts, max_parts))
        text = repr(value)
    elif isinstance(value, int):
        if not 0 <= value < 10**6:
            raise VersionError(_message(param, value, min_parts, max_parts))
        text = str(value)
    else:
        text = value
    text = text.strip()
    match = _VERSION_RE.match(text)
    if match is None:
        raise VersionError(_message(param, value, min_parts, max_parts))
    texts = [match.group(1)] + [g for g in match.groups()[2:] if g is not None]
    if not min_parts <= len(texts) <= max_parts:
        raise VersionError(_message(param, value, min_parts, max_parts))
    return Version([int(t) for t in texts], texts)


def _message(param, value, min_parts, max_parts):
    forms = "580, R580" if min_parts == max_parts == 1 else ACCEPTED_FORMS
    if (min_parts, max_parts) != (1, 4):
        shape = f" with {min_parts} to {max_parts} numeric components"
        if min_parts == max_parts:
            shape = f" with {min_parts} numeric component{'' if min_parts == 1 else 's'}"
    else:
        shape = ""
    return f"{param}: {_describe(value)} is not a valid version{shape}; accepted forms: {forms}"


def try_parse_version(value, param="version"):
    """Like parse_version but returns None instead of raising."""
    try:
        return parse_version(value, param)
    except VersionError:
        return None


def parse_branch(value, param="driver_branch"):
    """A driver branch as an int: "580", "R580", 580, and also a full "580.95.05" (its branch)."""
    return parse_version(value, param).major


def version_cmp(a, b, param_a="a", param_b="b"):
    """-1, 0 or 1 comparing two versions (zero-padded: "12.8" == "12.8.0")."""
    va = parse_version(a, param_a)
    vb = parse_version(b, param_b)
    ka, kb = va.key(), vb.key()
    return (ka > kb) - (ka < kb)


def version_compare(a, b, op="==", param_a="a", param_b="b"):
    """Compare two versions with ``op`` (<, <=, ==, !=, >=, > or lt, le, eq, ne, ge, gt)."""
    try:
        test = _OPS[op]
    except (KeyError, TypeError):
        raise VersionError(
            "operator: {} is not a comparison operator; accepted: {}".format(_describe(op), ", ".join(_OPS))
        ) from None
    return test(version_cmp(a, b, param_a, param_b))


def max_version(values):
    """The largest of an iterable of Versions (None if empty)."""
    best = None
    for v in values:
        if best is None or v > best:
            best = v
    return best
