"""playbooks/site.yml's gate plans a host's roles in the stack's order (issue 37, found by molecule journey).

gpufleet.nvidia.nvidia_plan checks CUDA and cuDNN against the driver the nvidia_driver plan installs only
for the roles planned after it. The gate once filtered its role list through `intersect`, which goes through
a set: the order then changed with Python's string hashing from one run to the next, and so did the verdict
(the same host passed one run and was refused the next).
"""

import re

import jinja2
import pytest
import yaml

from tests.playbook import ROOT

ORDER = ["nvidia_driver", "cuda_toolkit", "cudnn"]


def _gate_vars():
    plays = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    gate = next(p for p in plays if p["name"].startswith("Gate"))
    return gate["tasks"][0]["vars"]


def test_the_gate_uses_no_set_filter_on_its_roles():
    expression = _gate_vars()["__gpufleet_site_roles"]
    set_filters = r"\b(intersect|union|difference|symmetric_difference|unique)\b"
    assert not re.search(set_filters, expression), expression


@pytest.mark.parametrize(
    "allowed",
    [ORDER, list(reversed(ORDER)), ["cudnn", "nvidia_driver"], ["cuda_toolkit"]],
)
def test_the_gate_keeps_the_stack_order_whatever_the_tags_allow(allowed):
    variables = {
        **_gate_vars(),
        "inventory_hostname": "gpu01",
        "__gpufleet_site_inputs": {"roles": allowed},
        "__gpufleet_site_driver": ["gpu01"],
        "__gpufleet_site_cuda": ["gpu01", "login01"],
        "__gpufleet_site_cudnn": ["gpu01"],
    }
    # Jinja as Ansible runs it, with Ansible's `contains` test (the rest is Jinja's: select, the `in` test)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.tests["contains"] = lambda seq, item: item in seq
    rendered = env.from_string(variables["__gpufleet_site_roles"]).render(variables)
    assert yaml.safe_load(rendered) == [r for r in ORDER if r in allowed]
