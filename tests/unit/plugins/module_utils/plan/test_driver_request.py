"""The request (plan/driver/request.py): the OS key, bad input refused naming its variable, flavor, branch."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import (
    DriverPlanError,
    branch_of,
    resolve_flavor,
    tristate,
    validate_request,
)

from tests.data.roles import driver_request as req


@pytest.mark.parametrize(
    ("dist", "ver", "key"),
    [
        ("Ubuntu", "22.04", "ubuntu2204"),
        ("Ubuntu", "24.04", "ubuntu2404"),
        ("Debian", "12", "debian12"),
        ("Debian", "13", "debian13"),
        ("RedHat", "8", "rhel8"),
        ("Rocky", "9", "rhel9"),
        ("AlmaLinux", "10", "rhel10"),
    ],
)
def test_os_key(dist, ver, key):
    assert kb_hosts.os_key(dist, ver) == key


@pytest.mark.parametrize(("dist", "ver"), [("Ubuntu", "20.04"), ("Debian", "11"), ("Fedora", "42"), ("", "")])
def test_os_key_refuses_unsupported(dist, ver):
    assert kb_hosts.os_key(dist, ver) is None
    facts = {"host": {"os": {"distribution": dist, "version": ver, "key": None}}}
    errors = dp.decide(req({"branch": "580"}), facts)["errors"]
    assert len(errors) == 1
    assert "not supported" in errors[0]


# facts driver.mok_files entries (probe/mok.py)
ABSENT = {"exists": False, "private_key": None, "certificate": None, "certificate_sha256": None}
PEM_PRIVATE_KEY = {"exists": True, "private_key": True, "certificate": False, "certificate_sha256": None}
DER_CERTIFICATE = {"exists": True, "private_key": False, "certificate": True, "certificate_sha256": "ab" * 32}


def errors_for(**kw):
    args = {"os_name": "ubuntu2404", "source": "nvidia_repo", "branch": "580"}
    args.update(kw)
    return validate_request(**args)


def test_valid_request_has_no_errors():
    assert errors_for() == []
    assert errors_for(branch="R580", version="580.95.05", kernel_module="open", reboot="never") == []


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"branch": "58O"}, "nvidia_driver_branch: '58O' is not a valid version"),
        ({"branch": "581"}, "nvidia_driver_branch: '581' is not a driver branch nvidia_repo packages"),
        ({"branch": "580.95"}, "nvidia_driver_branch"),
        ({"branch": ""}, "nvidia_driver_branch"),
        (
            {"reboot": "sometimes"},
            "nvidia_driver_reboot=sometimes (allowed: auto, never, always)",
        ),
        ({"kernel_module": "opne"}, "nvidia_driver_kernel_module=opne (allowed: auto, open, proprietary)"),
        ({"source": "runfile"}, "nvidia_driver_source=runfile (allowed: nvidia_repo, distro)"),
        ({"version": "575.57.08"}, "nvidia_driver_version: '575.57.08' is not in nvidia_driver_branch '580'"),
        ({"version": "latest"}, "nvidia_driver_version: 'latest' is not a valid version"),
        (
            {
                "mok_key": "/nope/MOK.priv",
                "mok_cert": "/etc/MOK.der",
                "mok_files": {"/nope/MOK.priv": ABSENT, "/etc/MOK.der": DER_CERTIFICATE},
            },
            "nvidia_driver_mok_key: '/nope/MOK.priv' does not exist",
        ),
        ({"mok_key": "/etc/MOK.priv", "mok_files": {"/etc/MOK.priv": PEM_PRIVATE_KEY}}, "give both"),
        ({"os_name": "debian12", "source": "distro", "branch": "580"}, "Debian ships one branch per release"),
        ({"os_name": "rhel9", "source": "distro", "branch": "580"}, "RHEL has no distribution driver"),
        ({"os_name": "rhel8", "branch": "470", "kernel_module": "open"}, "'open' needs branch >= 515"),
    ],
)
def test_bad_input_is_refused_with_the_variable_named(kw, needle):
    errors = errors_for(**kw)
    assert errors, kw
    assert any(needle in e for e in errors), errors
    assert all("\n" not in e for e in errors)


@pytest.mark.parametrize(
    ("requested", "branch", "recommended", "expected"),
    [
        ("auto", 580, None, "open"),
        ("auto", 560, None, "open"),
        ("auto", 550, None, "proprietary"),
        ("auto", 580, "proprietary", "proprietary"),  # Pascal host: nvidia_compat recommends proprietary
        ("auto", 535, "open", "open"),
        ("open", 580, "proprietary", "open"),  # explicit choice kept; nvidia_compat refuses it for Pascal
        ("proprietary", 580, None, "proprietary"),
    ],
)
def test_resolve_flavor(requested, branch, recommended, expected):
    assert resolve_flavor(requested, branch, recommended) == expected


def test_branch_of():
    assert branch_of("580.159.04") == "580"
    assert branch_of(None) is None
    assert branch_of("x") is None


def test_mok_paths_are_judged_only_where_the_facts_describe_them():
    """A MOK path not in the facts' driver.mok_files is not judged (facts gathered without mok_paths)."""
    pair = {"mok_key": "/etc/MOK.priv", "mok_cert": "/etc/MOK.der"}
    assert errors_for(**pair) == []
    assert errors_for(**pair, mok_files={"/etc/MOK.der": DER_CERTIFICATE}) == []
    assert errors_for(**pair, mok_files={"/etc/MOK.priv": ABSENT}) == [
        "nvidia_driver_mok_key: '/etc/MOK.priv' does not exist on the host; give the path of an existing file"
    ]
    swapped = {"/etc/MOK.priv": DER_CERTIFICATE, "/etc/MOK.der": PEM_PRIVATE_KEY}
    assert errors_for(**pair, mok_files=swapped) == [
        "nvidia_driver_mok_key: '/etc/MOK.priv' is not a private key (PEM \"-----BEGIN PRIVATE KEY-----\")",
        "nvidia_driver_mok_cert: '/etc/MOK.der' is not an X.509 certificate (PEM or DER)",
    ]
    unreadable = {"exists": True, "private_key": None, "certificate": None, "certificate_sha256": None}
    assert errors_for(**pair, mok_files={"/etc/MOK.priv": unreadable, "/etc/MOK.der": unreadable}) == []


def test_a_value_not_allowed_is_worded_as_every_plan_words_it():
    """plan/refusal.bad: var=value (allowed: ...), as the CUDA toolkit, cuDNN and repository plans say it."""
    with pytest.raises(DriverPlanError) as refused:
        tristate("perhaps", "fabricmanager")
    assert str(refused.value) == "nvidia_driver_fabricmanager=perhaps (allowed: auto, true, false)"
    assert tristate("yes", "fabricmanager") == "true"
    assert errors_for(source="runfile", kernel_module="opne") == [
        "nvidia_driver_source=runfile (allowed: nvidia_repo, distro)",
        "nvidia_driver_kernel_module=opne (allowed: auto, open, proprietary)",
    ]
