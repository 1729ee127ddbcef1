# Copyright: gpufleet contributors
# Apache-2.0
"""The one wording of a refused role variable, shared by every plan (driver, CUDA toolkit, cuDNN, repo).

Stdlib only, Python >= 3.9, pure.
"""

from __future__ import annotations

import unicodedata


def bad(var, value, allowed, why=""):
    """The one wording of a refused variable: ``var=value (allowed: ...)[: why]``."""
    return f"{var}={value} (allowed: {allowed})" + (f": {why}" if why else "")


def control_character(value):
    """The first control character (newline, tab, ESC, DEL, C1 controls, Unicode line and paragraph
    separators) in any string of ``value``, else None.

    Walks lists, tuples and mappings (keys and values). A value written into a file (an apt source,
    modprobe.d), a report (CSV, Markdown, HTML, Prometheus) or a message must have none: a newline in it
    would add a line there. The one definition of a control character in gpufleet's checks.
    """
    if isinstance(value, str):
        return next((ch for ch in value if unicodedata.category(ch) in ("Cc", "Zl", "Zp")), None)
    if isinstance(value, dict):
        value = [text for item in value.items() for text in item]
    if isinstance(value, (list, tuple)):
        return next((ch for ch in map(control_character, value) if ch), None)
    return None


CONTROL_ALLOWED = "printable text (no newline, tab or other control character)"
