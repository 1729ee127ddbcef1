# Copyright: gpufleet contributors
# Apache-2.0
"""What nvidia_facts gathers: the names of its subsets (``gather_subset``).

Stdlib only, Python >= 3.9. probe/facts.py gathers them on the target; the fleet report's action checks
its settings against them on the controller, where probe/ is not imported.
"""

from __future__ import annotations

SUBSETS = ("gpu", "driver", "cuda", "cudnn", "owners", "packages", "sources")
# Gathered only when named: `all` leaves them out (the audit gathers `all`, and its report reads none of it).
# `sources`: the host's apt and dnf package sources and their keyrings, which the repository plans read.
NAMED_ONLY = ("packages", "sources")
