"""Issue 35: every role variable is checked on the controller before anything is gathered, whatever a user
types. The nvidia_plan action runs as Ansible runs it, for each role and each of its variables, with values
that hold newlines, control characters, shell metacharacters, relative paths or the wrong type: each must
end in a refusal naming that variable, with no traceback and no module run on the host (the stand-in
_execute_module fails the test when called).
"""

from types import SimpleNamespace

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from ansible_collections.gpufleet.nvidia.plugins.action import nvidia_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.playbook import ROOT

ROLES = ("nvidia_driver", "cuda_toolkit", "cudnn")


def options(role):
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return specs["argument_specs"]["main"]["options"]


def contact(**_kwargs):
    raise AssertionError("nvidia_plan ran a module on the host before refusing the variables")


def action_for(role, check_mode=True):
    task = SimpleNamespace(
        args={"role": [role]}, async_val=0, check_mode=check_mode, action="gpufleet.nvidia.nvidia_plan"
    )
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"), transport="ssh")
    templar = SimpleNamespace(template=lambda value: value)
    action = nvidia_plan.ActionModule(task, connection, None, None, templar, None)
    action._load_name = "gpufleet.nvidia.nvidia_plan"
    action._execute_module = contact
    return action


def refusal(role, name, value):
    """The message of the action's refusal of ``name: value`` (the other variables their defaults), or
    None when it accepted it. Any exception but AnsibleActionFail propagates (a traceback for a user)."""
    task_vars = {name: value, "inventory_hostname": "gpu1", "ansible_connection": "ssh"}
    try:
        result = action_for(role).run(task_vars=task_vars)
    except AnsibleActionFail as exc:
        return str(exc)
    return result["msg"] if result.get("failed") else None


CONTROL = st.sampled_from([chr(c) for c in range(32)] + ["\x7f"])
TEXT = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
WITH_CONTROL = st.builds(lambda a, c, b: a + c + b, TEXT, CONTROL, TEXT)
METACHARACTERS = st.sampled_from(
    ["$(id)", "`id`", "a;b", "a|b", "a && b", "x'y", 'x"y', "a b", "${HOME}", "<x>", "a\\b", "#x"]
)
RELATIVE = st.sampled_from(["rel/path", "./x", "../x", "opt/nvidia"])
BAD_TEXT = st.one_of(WITH_CONTROL, METACHARACTERS, RELATIVE)


def bad_values(spec):
    """Values no variable of this spec may take."""
    kind = spec.get("type", "str")
    if kind in ("str", "raw"):
        return st.one_of(BAD_TEXT, st.lists(TEXT, min_size=1, max_size=2), st.just({"a": "b"}))
    if kind == "list":
        item = BAD_TEXT if spec.get("elements") == "str" else st.one_of(BAD_TEXT, st.just({"x": "\n"}))
        return st.one_of(st.lists(item, min_size=1, max_size=2), st.just({"a": "b"}), st.just(3))
    if kind == "dict":
        return st.one_of(
            st.dictionaries(BAD_TEXT, BAD_TEXT, min_size=1, max_size=2), st.just(["a"]), st.just(3)
        )
    if kind == "int":
        return st.one_of(WITH_CONTROL.map(lambda s: "9" + s), st.just(["a"]), st.just({"a": 1}), st.just(-1))
    return st.one_of(WITH_CONTROL, st.just(["a"]), st.just({"a": 1}))  # bool


VARIABLES = [(role, name, spec) for role in ROLES for name, spec in options(role).items()]


@pytest.mark.parametrize(("role", "name", "spec"), VARIABLES, ids=[f"{r}.{n}" for r, n, _ in VARIABLES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_bad_value_of_every_variable_is_refused_naming_it_before_any_host_contact(
    role, name, spec, data
):
    value = data.draw(bad_values(spec), label=name)
    message = refusal(role, name, value)
    assert message is not None, f"{role}: {name}={value!r} was accepted"
    assert name in message, message
    assert "Traceback" not in message


@pytest.mark.parametrize("role", ROLES)
def test_the_defaults_pass_the_checks(role):
    """The checks refuse what is wrong, not the roles' own defaults (the facts then are gathered)."""
    with pytest.raises(AssertionError, match="ran a module on the host"):
        action_for(role).run(task_vars={"inventory_hostname": "gpu1", "ansible_connection": "ssh"})


# Each class of issue 35, as it was found (each accepted, crashed or named another variable before)
CLASSES = [
    # a value that adds a line to a file written as root
    ("nvidia_driver", "nvidia_driver_debian_mirror", "http://deb.debian.org/debian\nTrusted: yes"),
    ("nvidia_driver", "nvidia_driver_modprobe_options", ["NVreg_A=1\ninstall nvidia /bin/sh -c id"]),
    ("nvidia_driver", "nvidia_driver_modprobe_options", ["install nvidia /bin/sh -c id"]),
    # values never validated
    ("cuda_toolkit", "cuda_toolkit_redist_base_url", "ftp://mirror/compute"),
    ("cuda_toolkit", "cuda_toolkit_redist_base_url", "mirror.example/compute"),
    ("cudnn", "cudnn_redist_base_url", "https://mirror/com\x07pute"),
    ("cuda_toolkit", "cuda_toolkit_redist_releases", {"13.0": ["13.0.2"]}),
    ("cuda_toolkit", "cuda_toolkit_redist_releases", ["13.0.2"]),
    ("cuda_toolkit", "cuda_toolkit_redist_components", [["cuda_nvcc"]]),
    ("cuda_toolkit", "cuda_toolkit_redist_components", ["cuda_nvcc/../../x"]),
    # issue 36: nothing to install, and the manifest's driver pieces, are no CUDA toolkit
    ("cuda_toolkit", "cuda_toolkit_redist_components", []),
    ("cuda_toolkit", "cuda_toolkit_redist_components", ["toolkit", "nvidia_driver"]),
    ("nvidia_driver", "nvidia_driver_debian_mirror", "javascript:alert(1)"),
    ("nvidia_driver", "nvidia_driver_reboot_timeout", -5),
    ("nvidia_driver", "nvidia_driver_mok_key", "keys/mok.priv"),
    ("nvidia_driver", "nvidia_driver_mok_cert", "mok.der"),
    ("cuda_toolkit", "cuda_toolkit_controller_cache_dir", "cache/redist"),
    ("cudnn", "cudnn_controller_cache_dir", "cache/redist"),
    ("cudnn", "cudnn_prefix", "opt/nvidia/cudnn"),
    ("cuda_toolkit", "cuda_toolkit_versions", ["13.0", "13.0.2"]),
    ("cudnn", "cuda_toolkit_versions", ["13.0", "13.0.2"]),
    # the cuda_toolkit role refuses a default outside its list: the cudnn role, which builds for it, too
    ("cudnn", "cuda_toolkit_default", "12.8"),
    ("cuda_toolkit", "cuda_toolkit_default", "12.8"),
    # issue 36: the proxies and CA bundle of a role's downloads (plan/inputs.py, "proxies")
    ("nvidia_driver", "nvidia_driver_http_proxy", "http://proxy.example.org:3128\nAcquire::http::Proxy x"),
    ("cuda_toolkit", "cuda_toolkit_https_proxy", "https://proxy.example.org:3129"),
    ("cudnn", "cudnn_https_proxy", "proxy.example.org:3128"),
    ("cudnn", "cudnn_no_proxy", ["10.0.0.0/8"]),
    ("cudnn", "cudnn_no_proxy", "mirror.example.org"),
    ("cuda_toolkit", "cuda_toolkit_no_proxy", ["mirror.example.org"]),  # and no proxy set
    ("nvidia_driver", "nvidia_driver_ca_path", "site-ca.pem"),
    ("cudnn", "cudnn_ca_path", ["/etc/ssl/site-ca.pem"]),
]


@pytest.mark.parametrize(
    ("role", "name", "value"), CLASSES, ids=[f"{r}.{n}:{v!r}"[:60] for r, n, v in CLASSES]
)
def test_each_class_of_the_issue_is_refused_naming_the_variable(role, name, value):
    message = refusal(role, name, value)
    assert message is not None, f"{name}={value!r} was accepted"
    assert name in message, message
    assert "owner_paths" not in message and "mok_paths" not in message, message


@pytest.mark.parametrize(
    ("role", "name", "value"),
    [
        ("nvidia_driver", "nvidia_driver_repo_base_url", "https://fleet:s3cret@mirror.example/cuda/repos"),
        ("nvidia_driver", "nvidia_driver_debian_mirror", "http://fleet:s3cret@mirror.example/debian"),
        ("cudnn", "cudnn_redist_base_url", "https://fleet:s3cret@mirror.example/compute"),
        ("cuda_toolkit", "cuda_toolkit_repo_base_url", "https://token@mirror.example/cuda/repos"),
    ],
)
def test_credentials_in_a_url_are_refused_never_shown_and_the_message_says_how(role, name, value):
    message = refusal(role, name, value)
    assert message and name in message, message
    assert "s3cret" not in message and "token" not in message and "fleet" not in message, message
    assert ("auth.conf.d" in message) or ("controller_cache" in message), message


@pytest.mark.parametrize(
    ("role", "name"),
    [("nvidia_driver", "nvidia_driver_http_proxy"), ("cudnn", "cudnn_https_proxy")],
)
def test_a_proxy_login_is_refused_never_shown_and_the_message_says_where_it_goes(role, name):
    message = refusal(role, name, "http://alice:s3cret@proxy.example.org:3128")
    assert message and name in message, message
    assert "s3cret" not in message and "alice" not in message, message
    assert "the hosts' own proxy settings (apt.conf.d, dnf.conf, /etc/environment)" in message, message


@pytest.mark.parametrize(
    ("role", "name", "value"),
    [
        (
            "nvidia_driver",
            "nvidia_driver_modprobe_options",
            ['NVreg_RegistryDwords="RMUseSwI2c=0x01;RMI2cSpeed=100"'],
        ),
        (
            "nvidia_driver",
            "nvidia_driver_modprobe_options",
            ["NVreg_EnableGpuFirmware=0 NVreg_OpenRmEnableUnsupportedGpus=1"],
        ),
        ("nvidia_driver", "nvidia_driver_debian_mirror", "http://deb.debian.org/debian"),
        ("nvidia_driver", "nvidia_driver_debian_mirror", "file:/srv/mirror/debian"),
        ("nvidia_driver", "nvidia_driver_mok_key", "/var/lib/shim-signed/mok/MOK.priv"),
        ("nvidia_driver", "nvidia_driver_gpus", [{"pci_device_id": "0x2335"}, {"name": "NVIDIA H200"}]),
        ("cuda_toolkit", "cuda_toolkit_versions", ["13.0", "12.8"]),
        ("cuda_toolkit", "cuda_toolkit_redist_releases", {"13.0": "13.0.2"}),
        ("cuda_toolkit", "cuda_toolkit_redist_base_url", "https://mirror.example:8443/nvidia/compute"),
        ("cudnn", "cudnn_prefix", "/opt/nvidia/cudnn-9"),
        ("nvidia_driver", "nvidia_driver_https_proxy", "http://proxy.example.org:3128"),
        ("cuda_toolkit", "cuda_toolkit_http_proxy", "http://10.20.0.5:8080/"),
        ("cudnn", "cudnn_ca_path", "/etc/pki/ca-trust/source/anchors/site-ca.pem"),
    ],
)
def test_what_admins_write_is_accepted(role, name, value):
    with pytest.raises(AssertionError, match="ran a module on the host"):
        refusal(role, name, value)


def test_a_site_behind_a_proxy_is_accepted_as_admins_write_it():
    """Issue 36: both proxies, the hosts reached directly and the site's CA, as a group_vars file has them."""
    task_vars = {
        "cudnn_http_proxy": "http://proxy.example.org:3128",
        "cudnn_https_proxy": "http://proxy.example.org:3128",
        "cudnn_no_proxy": ["mirror.example.org", ".cluster.example.org", "10.20.0.5"],
        "cudnn_ca_path": "/etc/pki/ca-trust/source/anchors/site-ca.pem",
        "inventory_hostname": "gpu1",
        "ansible_connection": "ssh",
    }
    with pytest.raises(AssertionError, match="ran a module on the host"):
        action_for("cudnn").run(task_vars=task_vars)


def test_a_driver_piece_of_the_manifest_is_refused_saying_what_it_is():
    """Issue 36: the CUDA manifest also carries the driver, nvidia-fs, Fabric Manager...: no toolkit's."""
    message = refusal("cuda_toolkit", "cuda_toolkit_redist_components", ["compiler", "fabricmanager"])
    assert "cuda_toolkit_redist_components[1]='fabricmanager'" in message, message
    assert "NVIDIA Fabric Manager for NVSwitch systems (a driver piece), not part of a CUDA" in message
