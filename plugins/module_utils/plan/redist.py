# Copyright: gpufleet contributors
# Apache-2.0
"""NVIDIA redist releases and components: what a toolkit or cuDNN build takes (pure, no I/O).

Stdlib only, Python >= 3.9; decisions made on the controller (plan/cuda.py, plan/cudnn.py): a CUDA X.Y
becomes the manifest release X.Y.Z it is published under (CUDA_REDIST_RELEASES, overridden by
cuda_toolkit_redist_releases), a cuDNN X.Y.Z[.B] its release X.Y.Z and, when given in full, the exact
component version; the components of a toolkit per CUDA major from cuda_toolkit_redist_components' named
sets (kb/cuda_redist.py: which of a manifest's components a toolkit is). The plans carry the resolved release
and components; the ``nvidia_redist`` module reads the manifest and selects the artifacts on the target
(``install/manifest.py``) and fetches, verifies and unpacks them (``install/redist.py``).

NVIDIA publishes each product release as ``<base>/<product>/redist/redistrib_<release>.json``
(https://developer.download.nvidia.com/compute/cuda/redist/, .../cudnn/redist/; read 2026-11-30).
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda_redist as kb_redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import VersionError, parse_version

# Newest redist release per CUDA minor, so that "13.0" in an inventory finds its manifest.
# Source: https://developer.download.nvidia.com/compute/cuda/redist/ listing (redistrib_<X.Y.Z>.json files),
# read 2026-11-30; override with the role variable cuda_toolkit_redist_releases.
CUDA_REDIST_RELEASES = {
    "12.4": "12.4.1",  # redistrib_12.4.1.json
    "12.5": "12.5.1",  # redistrib_12.5.1.json
    "12.6": "12.6.3",  # redistrib_12.6.3.json
    "12.8": "12.8.1",  # redistrib_12.8.1.json
    "12.9": "12.9.1",  # redistrib_12.9.1.json
    "13.0": "13.0.2",  # redistrib_13.0.2.json (also the H200 host's packages: cuda-toolkit 13.0.2)
}

# The named sets of cuda_toolkit_redist_components: ``toolkit`` (the default) is every toolkit component of
# kb/cuda_redist.py's TOOLKIT for the CUDA major, ``compiler`` nvcc, its headers and runtime.
COMPONENT_SETS = ("toolkit", "compiler")
SETS_ALLOWED = (
    "a non-empty list of the named sets toolkit (every component of a CUDA toolkit: compiler, libraries, "
    "tools, profilers, documentation) and compiler (nvcc, its headers and runtime), and of components of "
    "NVIDIA's redist manifest, e.g. [toolkit] or [compiler, libcublas]"
)


class RedistPlanError(ValueError):
    """A clear, one-line reason why a redist plan cannot be made (names the variable where known)."""


# ---------------------------------------------------------------------------------------------------
# releases
# ---------------------------------------------------------------------------------------------------
def _parse(version, var):
    try:
        return parse_version(version, var)
    except VersionError as exc:
        raise RedistPlanError(str(exc)) from None


def cuda_release(version, releases=None, var="cuda_toolkit_versions"):
    """The redist release (X.Y.Z) for a toolkit version given as X.Y or X.Y.Z."""
    parsed = _parse(version, var)
    table = dict(CUDA_REDIST_RELEASES)
    table.update(releases or {})
    if len(parsed.parts) >= 3:
        return ".".join(str(n) for n in parsed.parts[:3])
    if len(parsed.parts) != 2:
        raise RedistPlanError(f"{var}: {version!r} is not a CUDA version X.Y or X.Y.Z")
    key = "{}.{}".format(*parsed.parts)
    if key not in table:
        raise RedistPlanError(
            "{}: CUDA {} has no known redist release; known: {} (or give X.Y.Z, or set "
            "cuda_toolkit_redist_releases)".format(var, key, ", ".join(sorted(table, key=vkey)))
        )
    return table[key]


def cudnn_release(version, var="cudnn_version"):
    """(manifest release X.Y.Z, full version or None) for "9.14.0" or "9.14.0.64"."""
    parsed = _parse(version, var)
    if len(parsed.parts) < 3:
        raise RedistPlanError(f"{var}: {version!r} needs at least X.Y.Z (e.g. 9.14.0 or 9.14.0.64)")
    release = ".".join(str(n) for n in parsed.parts[:3])
    full = str(parsed) if len(parsed.parts) == 4 else None
    return release, full


def default_components(product, release, var="release"):
    """Components of a cuDNN build (its one); for CUDA, ``toolkit_components`` of the ``compiler`` set."""
    if product == "cudnn":
        return ["cudnn"]
    return toolkit_components(["compiler"], release, var)["components"]


def _major(release, var):
    major = int(str(release).split(".", maxsplit=1)[0])
    if major not in kb_redist.COMPILER:
        known = ", ".join(str(m) for m in sorted(kb_redist.COMPILER))
        raise RedistPlanError(
            f"{var}: no toolkit components known for CUDA {release} (CUDA {known}); name the components in "
            "cuda_toolkit_redist_components"
        )
    return major


def toolkit_components(names, release, var="cuda_toolkit_versions"):
    """The components of a CUDA toolkit release from cuda_toolkit_redist_components (``names``: the named
    sets toolkit and compiler, and component names), in kb/cuda_redist.py's order, then the named ones.

    Returns {components, optional}: ``optional`` are those the target's manifest may lack for the host's
    platform (the ``toolkit`` set's libraries, tools, profilers and documentation are each taken where the
    release's manifest lists them: NVIDIA publishes some for one platform or some releases only); the compiler
    set and the libraries the verify runs (kb VERIFY: cuBLAS, cuRAND) must be there, as must every component
    named explicitly."""
    major = _major(release, var)
    compiler = list(kb_redist.COMPILER[major])
    wanted, required = [], set()
    if "toolkit" in names:
        wanted += [row[0] for row in kb_redist.TOOLKIT if major in row[2]]
        required.update(compiler, kb_redist.VERIFY.values())
    if "compiler" in names:
        wanted += compiler
        required.update(compiler)
    named = [n for n in names if n not in COMPONENT_SETS]
    wanted += named
    required.update(named)
    components = list(dict.fromkeys(wanted))
    return {"components": components, "optional": [c for c in components if c not in required]}


def verified_libraries(components=None):
    """The libraries the verify links and runs (kb VERIFY's names: cublas, curand) whose components are among
    ``components`` (None: all of them, a toolkit of packages)."""
    return [
        lib for lib, component in kb_redist.VERIFY.items() if components is None or component in components
    ]


def vkey(text):
    """A sort key for dotted versions ("9.14.0.64", "13.0")."""
    return tuple(int(part) if part.isdigit() else 0 for part in re.split(r"[.-]", str(text)))
