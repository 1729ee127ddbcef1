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
  ``gpufleet_gpu_stack_info``), or the word itself for each part of ``none`` / ``unknown``.
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


def version_parts(text, count):
    """['580', '159', '04'] of '580.159.04' (count 3), missing parts ''; ``none``/``unknown`` for each part
    of a version that is none or unknown."""
    text = word(text)
    if text in (NONE, UNKNOWN):
        return [text] * count
    return (text.split(".") + [""] * count)[:count]
