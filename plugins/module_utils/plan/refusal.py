# Copyright: gpufleet contributors
# Apache-2.0
"""The one wording of a refused role variable, shared by every plan (driver, CUDA toolkit, cuDNN, repo).

Stdlib only, Python >= 3.9, pure.
"""

from __future__ import annotations


def bad(var, value, allowed, why=""):
    """The one wording of a refused variable: ``var=value (allowed: ...)[: why]``."""
    return f"{var}={value} (allowed: {allowed})" + (f": {why}" if why else "")


def control_character(value):
    """The first control character (newline, tab, ESC, DEL, ...) in any string of ``value``, else None.

    Walks lists, tuples and mappings (keys and values). A value that ends up in a report (CSV, Markdown,
    HTML, Prometheus) or a message must have none: a newline in it would forge a line there.
    """
    if isinstance(value, str):
        return next((ch for ch in value if ord(ch) < 32 or 127 <= ord(ch) < 160), None)
    if isinstance(value, dict):
        value = [text for item in value.items() for text in item]
    if isinstance(value, (list, tuple)):
        return next((ch for ch in map(control_character, value) if ch), None)
    return None


CONTROL_ALLOWED = "printable text (no newline, tab or other control character)"
