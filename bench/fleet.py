"""Synthetic fleets for the benchmarks: N audit records made from the real H200's facts (tests/data/audit).

Every host gets its own copy of the facts (parsed from JSON, as Ansible hands them to the report), with the
variety of a real fleet: a few driver branches, cuDNN copies added or removed, hosts without GPU, an old
training box, baselines on most hosts, some unreachable and failed hosts.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "audit"
BASELINE = {"driver_branch": "580", "cuda_versions": ["13.0"], "cudnn_versions": {13: "9.14"}}


def _variant(i, h200):
    facts = json.loads(h200)
    if i % 5 == 1 and facts.get("driver"):
        facts["driver"]["version"], facts["driver"]["branch"] = "575.57.08", "575"
    if i % 7 == 2 and isinstance(facts.get("cudnn"), list):
        facts["cudnn"] = facts["cudnn"][:1]  # no pip copy in /opt/torch/.venv
    return facts


def records(count):
    """``count`` audit records (``{name, status, facts, message, baseline}``), host names gpuNNNNN."""
    h200 = (DATA / "h200.json").read_text(encoding="utf-8")
    others = {13: (DATA / "nogpu.json").read_text(encoding="utf-8")}
    others[29] = (DATA / "oldtrain.json").read_text(encoding="utf-8")
    out = []
    for i in range(count):
        name = f"gpu{i:05d}"
        if i % 211 == 7:
            out.append({"name": name, "status": "unreachable", "message": "ssh: connect to host: No route"})
            continue
        if i % 307 == 11:
            out.append({"name": name, "status": "failed", "message": "MODULE FAILURE: Python 3.6 is too old"})
            continue
        text = next((t for m, t in others.items() if i % m == 0), None)
        facts = json.loads(text) if text else _variant(i, h200)
        baseline = BASELINE if i % 10 else None
        out.append({"name": name, "status": "ok", "facts": facts, "message": None, "baseline": baseline})
    return out
