# Copyright: gpufleet contributors
# Apache-2.0
"""How a role's downloads reach the network: the proxies and the CA bundle of its variables (pure).

One decision for the three roles, put into every enabled role's plan as ``download`` (plan/roles.plan), from
``<role>_http_proxy``, ``<role>_https_proxy``, ``<role>_no_proxy`` and ``<role>_ca_path`` (their grammar is
plan/inputs.py's, checked before this runs):

- ``environment``: the environment of every task of the role that downloads or runs a package manager
  (nvidia_redist, nvidia_repo, apt, dnf; on the controller too, for the controller cache). Empty when
  neither proxy is set: the host's own environment and its apt/dnf configuration apply as they are. With
  one set, the role's three settings are the whole proxy environment of those tasks, under the lower- and
  the upper-case names (Python, apt and libcurl each read their own), an unset proxy as "" (that scheme
  goes direct: no proxy of the host's environment mixed in). apt and dnf read the environment only where
  their own configuration names no proxy (Acquire::http::Proxy, dnf.conf's proxy): the admin's
  configuration wins, and gpufleet never writes one.
- ``ca_path``: the PEM bundle gpufleet's own fetches (nvidia_redist, nvidia_repo's key) verify servers with
  ("" = the system's). apt and dnf keep the host's trust store.

Stdlib only, Python >= 3.9.
"""

from __future__ import annotations

PROXY_KEYS = ("http_proxy", "https_proxy", "no_proxy")


def environment(http_proxy, https_proxy, no_proxy):
    """The proxy environment of the downloads: {} when no proxy is given, else the three settings under both
    names (``no_proxy`` joined with commas)."""
    if not http_proxy and not https_proxy:
        return {}
    hosts = ",".join(str(host) for host in no_proxy or [])
    values = {"http_proxy": http_proxy, "https_proxy": https_proxy, "no_proxy": hosts}
    env = {}
    for key in PROXY_KEYS:
        env[key] = env[key.upper()] = str(values[key] or "")
    return env


def settings(role, variables):
    """{environment, ca_path} of a role's downloads, from its variables."""
    values = [variables[f"{role}_{key}"] for key in PROXY_KEYS]
    return {
        "environment": environment(*values),
        "ca_path": str(variables[f"{role}_ca_path"] or ""),
    }
