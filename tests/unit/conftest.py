"""Make `ansible_collections.gpufleet.nvidia` importable from the checkout.

scripts/bootstrap.py links .collections/ansible_collections/gpufleet/nvidia to the
project root, so unit tests import plugins exactly as Ansible does.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / ".collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
