# Copyright: gpufleet contributors
# Apache-2.0
"""NVIDIA redist manifests on the target: URLs and file names, manifest parsing, artifact selection.

Stdlib only, Python >= 3.9, pure (no I/O); runs on targets inside the ``nvidia_redist`` module, which fetches
the manifest (``install/redist.py``) and reads it with these functions. Which release and components a
toolkit or cuDNN build takes (X.Y -> X.Y.Z, the default components) is decided on the controller by
``plan/redist.py`` and ``plan/cuda.py`` / ``plan/cudnn.py``; the module gets the resolved release.

NVIDIA publishes each product release as ``<base>/<product>/redist/redistrib_<release>.json`` whose
top-level keys are ``release_date``/``release_label``/``release_product`` and one object per component::

    "cuda_nvcc": {"name": ..., "version": "13.0.88",
                  "linux-x86_64": {"relative_path": "cuda_nvcc/linux-x86_64/...-archive.tar.xz",
                                   "sha256": ..., "md5": ..., "size": "<bytes>"}}
    "cudnn": {"version": "9.14.0.64", "cuda_variant": ["12", "13"],
              "linux-x86_64": {"cuda12": {relative_path, sha256, md5, size}, "cuda13": {...}}}

``relative_path`` is relative to the redist directory (the manifest's own directory).
Source: https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_9.27.0.json and
https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.4.2.json (schema read 2026-11-30).

The same layout serves NVIDIA's servers, a site mirror and a local directory (controller cache copied to
hosts): ``base_url`` is the part before ``<product>/redist/``.
"""

from __future__ import annotations

import json
import re

NVIDIA_BASE_URL = "https://developer.download.nvidia.com/compute"
PLATFORMS = ("linux-x86_64", "linux-sbsa", "linux-aarch64")
PRODUCTS = ("cuda", "cudnn")

_SHA256_RE = re.compile(r"^[0-9a-f]{64}\Z")
_REL_RE = re.compile(r"^[A-Za-z0-9._+-]+(?:/[A-Za-z0-9._+-]+)*\Z")
_RELEASE_RE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\Z")


class ManifestError(ValueError):
    """A clear, one-line reason why the manifest cannot give the artifacts (names the variable if known)."""


def check_release(release, label="release"):
    """The manifest release as the plan resolved it: X.Y.Z, nothing else (it becomes part of a URL)."""
    text = str(release or "")
    if not _RELEASE_RE.match(text):
        raise ManifestError(
            f"{label}: {text!r} is not a redist manifest release X.Y.Z (the plan resolves a CUDA X.Y or a "
            "cuDNN X.Y.Z.B to it)"
        )
    return text


# ---------------------------------------------------------------------------------------------------
# URLs and file names
# ---------------------------------------------------------------------------------------------------
def redist_dir_url(base_url, product):
    """``<base>/<product>/redist`` (base like https://developer.download.nvidia.com/compute)."""
    if product not in PRODUCTS:
        raise ManifestError("product {!r} is not one of {}".format(product, ", ".join(PRODUCTS)))
    if not base_url:
        raise ManifestError(f"the redist base URL is empty; NVIDIA's is {NVIDIA_BASE_URL}")
    return "{}/{}/redist".format(base_url.rstrip("/"), product)


def manifest_url(base_url, product, release):
    return f"{redist_dir_url(base_url, product)}/redistrib_{release}.json"


def manifest_file(product, release):
    """The manifest's path relative to a mirror root (or a download directory)."""
    return f"{product}/redist/redistrib_{release}.json"


def archive_file(product, relative_path):
    """An archive's path relative to a mirror root (or a download directory)."""
    return f"{product}/redist/{relative_path}"


def artifact_url(base_url, product, relative_path):
    if not _REL_RE.match(relative_path or "") or ".." in relative_path.split("/"):
        raise ManifestError(f"refusing manifest relative_path {relative_path!r} (not a plain relative path)")
    return f"{redist_dir_url(base_url, product)}/{relative_path}"


# ---------------------------------------------------------------------------------------------------
# manifests
# ---------------------------------------------------------------------------------------------------
def parse_manifest(data, source="manifest"):
    """Validate a manifest (bytes, str or dict) and return it as a dict."""
    if isinstance(data, (bytes, bytearray)):
        data = data.decode("utf-8", "replace")
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise ManifestError(f"{source} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{source} is not a redist manifest (a JSON object expected)")
    if not components(data):
        raise ManifestError(f"{source} lists no components (is it a redistrib_<version>.json?)")
    return data


def components(manifest):
    return sorted(k for k, v in manifest.items() if isinstance(v, dict) and "version" in v)


def _artifact_entry(entry, where):
    if not isinstance(entry, dict):
        raise ManifestError(f"{where}: malformed entry")
    rel = entry.get("relative_path")
    sha = str(entry.get("sha256", "")).lower()
    if not rel or not _SHA256_RE.match(sha):
        raise ManifestError(f"{where}: missing relative_path or sha256 in the manifest")
    try:
        size = int(entry.get("size", 0) or 0)
    except (TypeError, ValueError):
        size = 0
    return {"relative_path": rel, "sha256": sha, "size": size}


def _variant_entry(name, comp, plat, *, platform, cuda_variant, prefix):
    keys = sorted(k for k in plat if k.startswith("cuda"))
    if cuda_variant is None:
        raise ManifestError(
            "{} {} comes per CUDA major ({}): a CUDA major is needed".format(
                name, comp["version"], ", ".join(keys)
            )
        )
    key = f"cuda{cuda_variant}"
    if key not in plat:
        variants = [str(v) for v in comp.get("cuda_variant") or []]
        raise ManifestError(
            "{}{} {} has no build for CUDA {} on {}; it is built for CUDA {}".format(
                prefix,
                name,
                comp["version"],
                cuda_variant,
                platform,
                ", ".join(variants or [k[4:] for k in keys]),
            )
        )
    return _artifact_entry(plat[key], "{} {} {} {}".format(name, comp["version"], platform, key))


def _select_one(manifest, name, *, platform, cuda_variant, source, prefix):
    comp = manifest.get(name)
    if not isinstance(comp, dict) or "version" not in comp:
        raise ManifestError(
            "{}{} (release {}) has no component {!r}; it has: {}".format(
                prefix, source, manifest.get("release_label") or "?", name, ", ".join(components(manifest))
            )
        )
    plat = comp.get(platform)
    if not isinstance(plat, dict):
        plats = sorted(k for k, v in comp.items() if isinstance(v, dict) and k not in ("source",))
        raise ManifestError(
            "{} {} has no {} build; it has: {}".format(name, comp["version"], platform, ", ".join(plats))
        )
    if "relative_path" in plat:
        entry = _artifact_entry(plat, "{} {} {}".format(name, comp["version"], platform))
    else:
        entry = _variant_entry(name, comp, plat, platform=platform, cuda_variant=cuda_variant, prefix=prefix)
    entry["component"] = name
    entry["version"] = str(comp["version"])
    return entry


def select_artifacts(
    manifest, names, *, platform="linux-x86_64", cuda_variant=None, optional=(), source="manifest", var=None
):
    """The artifacts for ``names`` on ``platform`` (and ``cudaN`` variant where the component has one).

    Returns a list of dicts: component, version, relative_path, sha256, size. Raises ManifestError naming
    what is missing and what the manifest offers. Names in ``optional`` are skipped when the manifest lacks
    them or has no build of them for ``platform`` (NVIDIA publishes some toolkit components for one platform
    only, e.g. cuda_opencl for linux-x86_64).
    """
    if platform not in PLATFORMS:
        raise ManifestError("platform {!r} is not one of {}".format(platform, ", ".join(PLATFORMS)))
    prefix = (var + ": ") if var else ""
    present = {name for name in components(manifest) if name not in optional or platform in manifest[name]}
    return [
        _select_one(
            manifest, name, platform=platform, cuda_variant=cuda_variant, source=source, prefix=prefix
        )
        for name in names
        if name in present or name not in optional
    ]


def check_versions(artifacts, version, label, source):
    """Raise unless every artifact has ``version`` (a full cuDNN version such as 9.14.0.64), when given."""
    for art in artifacts:
        if version and art["version"] != version:
            raise ManifestError(
                f"{label}: {art['component']} in {source} is version {art['version']}, "
                f"not the requested {version}"
            )
