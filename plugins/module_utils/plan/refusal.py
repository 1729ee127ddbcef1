# Copyright: gpufleet contributors
# Apache-2.0
"""The one wording of a refused role variable, shared by every plan (driver, CUDA toolkit, cuDNN, repo).

Stdlib only, Python >= 3.9, pure.
"""

from __future__ import annotations


def bad(var, value, allowed, why=""):
    """The one wording of a refused variable: ``var=value (allowed: ...)[: why]``."""
    return f"{var}={value} (allowed: {allowed})" + (f": {why}" if why else "")
