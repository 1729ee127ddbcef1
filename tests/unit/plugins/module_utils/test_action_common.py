"""module_utils/action_common.py: what the controller-side actions share."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_common import (
    FactsFailed,
    facts_of,
    plain,
)


def test_plain_turns_containers_and_scalars_into_python():
    assert plain({"a": (1, "x", None, True, 2.5)}) == {"a": [1, "x", None, True, 2.5]}


def test_the_facts_of_a_run_and_its_failure_with_the_module_stderr():
    assert facts_of({"ansible_facts": {"nvidia": {"gpus": []}}}) == {"gpus": []}
    with pytest.raises(FactsFailed, match=r"^nvidia_facts failed on this host: boom: Traceback x$"):
        facts_of({"failed": True, "msg": "boom", "module_stderr": "Traceback x\n"})
    with pytest.raises(FactsFailed, match=r"^nvidia_facts failed on this host: no facts returned$"):
        facts_of({})
