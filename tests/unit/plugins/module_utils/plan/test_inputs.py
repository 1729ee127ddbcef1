"""plan/inputs.py: the grammar of the roles' proxy and CA variables (issue 36), pure. The same checks through
the nvidia_plan action, before any host is contacted: tests/unit/plugins/action/test_nvidia_plan_inputs.py."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import inputs

ROLES = ("nvidia_driver", "cuda_toolkit", "cudnn")


@pytest.mark.parametrize(
    "value",
    [
        "",
        "http://proxy.example.org:3128",
        "http://proxy.example.org",
        "http://10.0.0.1:3128/",
        "http://[fd00::1]:3128",
    ],
)
def test_a_proxys_http_address_is_accepted(value):
    assert inputs.proxy_url("cudnn_https_proxy", value) == []


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("https://proxy.example.org:3129", "send the CONNECT of an https URL to the proxy in plain HTTP"),
        ("proxy.example.org:3128", "write it with its scheme, e.g. http://proxy.example.org:3128"),
        ("socks5://proxy.example.org:1080", "allowed: empty, or http://host[:port]"),
        ("http://proxy.example.org:0", "the port is a number from 1 to 65535"),
        ("http://proxy.example.org:70000", "the port is a number from 1 to 65535"),
        ("http://proxy.example.org:3128/path", "no path, ?query or #fragment"),
        ("http://proxy.example.org:3128/?a=b", "no path, ?query or #fragment"),
        ("http://pro_xy.example.org:3128", "it names no valid host name or address"),
        ("http://:3128", "it names no host"),
        ("http://proxy example:3128", "only the characters of RFC 3986"),
        ("http://proxy.example.org:3128'; id #", "only the characters of RFC 3986"),
    ],
)
def test_what_no_download_could_use_is_refused_naming_the_variable_and_why(value, why):
    [message] = inputs.proxy_url("cudnn_https_proxy", value)
    assert message.startswith(f"cudnn_https_proxy={value!r} (allowed: "), message
    assert why in message, message


@pytest.mark.parametrize(
    "value", ["http://alice:s3cret@proxy.example.org:3128", "http://token@proxy.example.org:3128"]
)
def test_a_proxy_login_is_refused_never_shown_and_the_message_says_where_it_goes(value):
    [message] = inputs.proxy_url("nvidia_driver_http_proxy", value)
    assert message.startswith("nvidia_driver_http_proxy=<a URL with credentials> (allowed: ")
    assert "s3cret" not in message and "token" not in message and "alice" not in message
    assert "apt.conf.d, dnf.conf, /etc/environment" in message


def test_hosts_domains_and_addresses_bypass_the_proxy():
    hosts = ["mirror.example.org", ".example.org", "example.org", "localhost", "10.1.2.3", "fd00::1", "::1"]
    assert inputs.no_proxy("cudnn_no_proxy", hosts) == []


@pytest.mark.parametrize(
    ("item", "why"),
    [
        ("10.0.0.0/8", "a CIDR range is matched neither by apt nor by gpufleet's own downloads"),
        ("*", "'*' turns the proxy off for every host"),
        ("mirror.example.org:8080", "without a port"),
        ("a.example.org,b.example.org", "one host per item"),
        ("a.example.org b.example.org", "one host per item"),
        ("", "not a host name or an IP address"),
        ("-mirror.example.org", "not a host name or an IP address"),
        ("mirror_1.example.org", "not a host name or an IP address"),
    ],
)
def test_a_no_proxy_item_no_tool_matches_is_refused_naming_it(item, why):
    [message] = inputs.no_proxy("cudnn_no_proxy", ["mirror.example.org", item])
    assert message.startswith(f"cudnn_no_proxy[1]={item!r} (allowed: a host name, a domain"), message
    assert why in message, message


@pytest.mark.parametrize("role", ROLES)
def test_no_proxy_needs_one_of_its_roles_proxies(role):
    alone = {f"{role}_http_proxy": "", f"{role}_https_proxy": "", f"{role}_no_proxy": ["mirror.example.org"]}
    [message] = inputs.errors_of(alone)
    assert message.startswith(
        f"{role}_no_proxy=['mirror.example.org'] (allowed: empty while {role}_http_proxy"
    )
    assert "the host's own proxy settings are left as they are" in message
    for key in ("http_proxy", "https_proxy"):
        assert inputs.errors_of(dict(alone, **{f"{role}_{key}": "http://proxy.example.org:3128"})) == []


def test_a_no_proxy_refused_item_by_item_is_not_refused_twice():
    assert len(inputs.errors_of({"cudnn_https_proxy": "", "cudnn_no_proxy": ["10.0.0.0/8"]})) == 1


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("", False),
        ("/etc/pki/ca-trust/source/anchors/site-ca.pem", False),
        ("/usr/local/share/ca-certificates/site+proxy.crt", False),
        ("site-ca.pem", True),
        ("/etc/ssl/../site-ca.pem", True),
        ("/etc/ssl/site ca.pem", True),
        ("/etc/ssl/$(id).pem", True),
    ],
)
def test_the_ca_path_is_an_absolute_path_of_portable_characters(role, value, refused):
    found = inputs.errors_of({f"{role}_ca_path": value})
    assert bool(found) == refused, found
    assert all(m.startswith(f"{role}_ca_path=") for m in found)


@pytest.mark.parametrize("role", ROLES)
def test_every_role_has_the_same_four_download_variables_checked(role):
    for key, check in inputs.DOWNLOAD_GRAMMARS.items():
        assert f"{role}_{key}" in inputs.GRAMMARS
        assert inputs.GRAMMARS[f"{role}_{key}"] is check
