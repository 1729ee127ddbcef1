# Copyright: gpufleet contributors
# Apache-2.0
"""The report's words for values that are absent or not known: one function per value, so that the JSON,
CSV, Markdown, HTML, Prometheus and the printed summary say the same thing about a host.

Stdlib only, Python >= 3.9, pure. Imported by report.build (the JSON host entry is made of these words, and
every renderer reads that entry), report.rows and report.consumers.
- :data:`NONE` (``none``): looked for and not there - no driver, no GPU, no toolkit, no cuDNN copy;
- :data:`UNKNOWN` (``unknown``): there but not readable, or the host was not audited (unreachable, failed);
- ``driver_words(driver)``: version, branch, kernel_module, install_method and cuda_driver_version of the
  facts' driver, each ``none`` when no driver is installed (the facts say ``unknown`` for them then);
- ``version_parts(text, count)``: a version's first ``count`` parts (the GPU Feature Discovery labels of
  ``gpufleet_gpu_stack_info``), or the word itself for each part of ``none`` / ``unknown``;
- ``hold_words(toolkit)``: the hold state of a CUDA toolkit's packages (the facts' ``cuda.toolkits[].hold``):
  ``held``, ``partly held (M of N)``, ``not held``, ``none`` (no package installed the tree), ``unknown``
  (facts of a probe that did not read it).
"""

from __future__ import annotations

NONE = "none"
UNKNOWN = "unknown"
DRIVER_WORDS = ("version", "branch", "kernel_module", "install_method", "cuda_driver_version")


def word(value, default=UNKNOWN):
    """``value`` as text; ``default`` (unknown) when it is missing or empty."""
    if value is None or value == "":
        return default
    return str(value)


def driver_words(driver):
    """{version, branch, kernel_module, install_method, cuda_driver_version} of the facts' driver."""
    if driver.get("installed") is False:
        return dict.fromkeys(DRIVER_WORDS, NONE)
    return {key: word(driver.get(key)) for key in DRIVER_WORDS}


HELD, NOT_HELD = "held", "not held"


def hold_words(toolkit):
    """The hold state of a toolkit's packages (dpkg hold, dnf versionlock), from its facts' ``hold``:
    {packages, held} of its release's packages, None for a tree no package installed; absent (facts of an
    older probe): unknown for a package's tree (``source`` deb or rpm), none for any other. Every format shows
    these words (JSON ``hold``, the components' detail, the owners list, Prometheus' ``hold`` label)."""
    if "hold" not in toolkit:
        return UNKNOWN if toolkit.get("source") in ("deb", "rpm") else NONE
    hold = toolkit["hold"]
    if not isinstance(hold, dict) or not hold.get("packages"):
        return NONE
    count, held = int(hold["packages"]), int(hold.get("held") or 0)
    if held >= count:
        return HELD
    return f"partly held ({held} of {count})" if held else NOT_HELD


def version_parts(text, count):
    """['580', '159', '04'] of '580.159.04' (count 3), missing parts ''; ``none``/``unknown`` for each part
    of a version that is none or unknown."""
    text = word(text)
    if text in (NONE, UNKNOWN):
        return [text] * count
    return (text.split(".") + [""] * count)[:count]
