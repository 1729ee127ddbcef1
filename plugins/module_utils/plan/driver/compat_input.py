# Copyright: gpufleet contributors
# Apache-2.0
"""nvidia_compat's messages in the driver role's words (its inputs from the facts: plan/stack.compat_inputs).

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

import re

_COMPAT_NAMES = {
    "cuda_version": "nvidia_driver_cuda_version",
    "driver_branch": "nvidia_driver_branch",
    "driver_version": "nvidia_driver_version",
    "kernel_module": "nvidia_driver_kernel_module",
}
_COMPAT_NAME_RE = re.compile(r"(?<![\w.])(cuda_version|driver_branch|driver_version|kernel_module)\b")


def user_words(text, gave_gpus=False):
    """nvidia_compat's parameter names in a message -> the role's variables (gpus[i] only when given)."""
    text = _COMPAT_NAME_RE.sub(lambda m: _COMPAT_NAMES[m.group(1)], str(text))
    if gave_gpus:
        text = re.sub(r"(?<![\w.])gpus\[", "nvidia_driver_gpus[", text)
    return text
