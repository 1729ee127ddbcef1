#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_textfile
short_description: Write a Prometheus text file for node_exporter's textfile collector, atomically
version_added: "0.3.0"
description:
  - Writes O(content) as O(name) in O(directory), node_exporter's C(--collector.textfile.directory) on the
    host. The collector reads every C(*.prom) file of that directory at each scrape, so the file must never be
    seen half written - the text goes to a temporary file in the same directory whose name does not end in
    C(.prom) (C(.gpufleet.prom.<random>.tmp)), is flushed to disk and renamed onto the file.
  - The file is left alone when it already holds O(content).
  - C(playbooks/audit.yml) calls it, when C(gpufleet_audit_prometheus_textfile_dir) is set, with each audited
    host's own series of the fleet report (the same metric names and labels as that host's rows of the
    fleet's C(gpufleet.prom)), decided on the controller by C(gpufleet.nvidia.nvidia_fleet_report).
  - The directory is not created - a misspelled one would be a directory node_exporter never reads.
options:
  directory:
    description: The textfile collector's directory, an absolute path that exists on the host.
    type: path
    required: true
  name:
    description: The file's name in O(directory); a plain name ending in C(.prom).
    type: str
    default: gpufleet.prom
  content:
    description: The metrics, in Prometheus' text exposition format.
    type: str
    required: true
  mode:
    description: The file's permissions (node_exporter must be able to read it).
    type: raw
    default: "0644"
  label:
    description: The variable name to put in front of error messages.
    type: str
    default: gpufleet_audit_prometheus_textfile_dir
author: gpufleet maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Says whether the file would change; writes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: gpufleet.nvidia.nvidia_fleet_report
"""

EXAMPLES = r"""
- name: Write this host's audit series for node_exporter
  gpufleet.nvidia.nvidia_textfile:
    directory: /var/lib/prometheus/node-exporter
    content: "{{ metrics }}"
"""

RETURN = r"""
path:
  description: The file written (or that would be written).
  returned: always
  type: str
  sample: /var/lib/prometheus/node-exporter/gpufleet.prom
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import textfile

ARGUMENT_SPEC = {
    "directory": {"type": "path", "required": True},
    "name": {"type": "str", "default": "gpufleet.prom"},
    "content": {"type": "str", "required": True},
    "mode": {"type": "raw", "default": "0644"},
    "label": {"type": "str", "default": "gpufleet_audit_prometheus_textfile_dir"},
}


def _mode(module):
    try:
        return int(str(module.params["mode"]), 8)
    except ValueError:
        module.fail_json(msg=f"mode: {module.params['mode']!r} is not an octal file mode such as 0644")
        return None


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params, mode = module.params, _mode(module)
    try:
        changed, path = textfile.put(
            params["directory"], params["name"], params["content"], mode, check_mode=module.check_mode
        )
    except textfile.TextfileError as exc:
        module.fail_json(msg=f"{params['label']}: {exc}")
    module.exit_json(changed=changed, path=path)


if __name__ == "__main__":
    main()
