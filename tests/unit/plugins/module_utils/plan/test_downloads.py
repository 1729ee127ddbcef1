"""plan/downloads.py (issue 36): a role's proxies and CA bundle become the ``download`` of its plan - the
environment of its downloads and package manager runs, and the CA path of gpufleet's own fetches."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import downloads, roles

from tests.data.roles import variables
from tests.unit.plugins.module_utils.plan.test_roles import DEBIAN12, H200

ROLES = ("nvidia_driver", "cuda_toolkit", "cudnn")
PROXY = "http://proxy.example.org:3128"


def test_no_proxy_set_leaves_the_hosts_own_environment():
    """Nothing set: no environment at all, so the host's own (and apt's, dnf's configuration) applies."""
    assert downloads.environment("", "", []) == {}
    assert downloads.environment("", "", ["mirror.example.org"]) == {}  # refused by plan/inputs.py anyway


def test_a_proxy_set_is_the_whole_proxy_environment_under_both_names():
    env = downloads.environment(PROXY, PROXY, ["mirror.example.org", ".example.org", "10.1.2.3"])
    assert env == {
        "http_proxy": PROXY,
        "HTTP_PROXY": PROXY,
        "https_proxy": PROXY,
        "HTTPS_PROXY": PROXY,
        "no_proxy": "mirror.example.org,.example.org,10.1.2.3",
        "NO_PROXY": "mirror.example.org,.example.org,10.1.2.3",
    }


def test_an_unset_scheme_goes_direct_rather_than_through_the_hosts_proxy():
    """Only https_proxy given: http_proxy is "" (a host's http_proxy is not mixed in; apt's fallback from
    https to http_proxy is off too), no_proxy "" ."""
    env = downloads.environment("", PROXY, [])
    assert env["https_proxy"] == env["HTTPS_PROXY"] == PROXY
    assert env["http_proxy"] == env["HTTP_PROXY"] == ""
    assert env["no_proxy"] == env["NO_PROXY"] == ""


@pytest.mark.parametrize("role", ROLES)
def test_the_defaults_give_no_environment_and_the_systems_ca(role):
    assert downloads.settings(role, variables(role)) == {"environment": {}, "ca_path": ""}


@pytest.mark.parametrize("role", ROLES)
def test_every_enabled_plan_carries_its_roles_download_settings(role):
    given = {
        # redist for the toolkit and cuDNN: a package plan would ask the facts for python3-apt
        **({f"{role}_source": "redist"} if role != "nvidia_driver" else {}),
        f"{role}_https_proxy": PROXY,
        f"{role}_no_proxy": ["mirror.example.org"],
        f"{role}_ca_path": "/etc/pki/site/ca.pem",
    }
    facts = dict(DEBIAN12, gpus=[H200])
    plan, _compat = roles.plan(role, variables(role, **given), facts)
    assert plan["download"]["ca_path"] == "/etc/pki/site/ca.pem"
    assert plan["download"]["environment"]["https_proxy"] == PROXY
    assert plan["download"]["environment"]["no_proxy"] == "mirror.example.org"
    assert plan["download"]["environment"]["http_proxy"] == ""


@pytest.mark.parametrize("role", ["cuda_toolkit", "cudnn"])
def test_one_roles_proxy_is_not_another_roles(role):
    """Each role reads its own variables: the cudnn role's proxy does not reach the toolkit's downloads."""
    other = "cudnn" if role == "cuda_toolkit" else "cuda_toolkit"
    given = {f"{role}_source": "redist", f"{other}_https_proxy": PROXY}
    plan, _compat = roles.plan(role, variables(role, **given), DEBIAN12)
    assert plan["download"] == {"environment": {}, "ca_path": ""}


def test_a_disabled_role_plans_no_download():
    plan, _compat = roles.plan("cudnn", variables("cudnn", cudnn_enabled=False), DEBIAN12)
    assert "download" not in plan
