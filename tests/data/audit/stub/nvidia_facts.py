#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
"""Test stand-in for gpufleet.nvidia.nvidia_facts: returns the facts of a fixture file.

The audit's playbook tests put this file in a throw-away copy of the collection and give each host its
fixture through ``gpufleet_audit_cudnn_search_paths: [<fixture.json>]``. A fixture ``{"fail": "why"}`` makes
the module fail (a host that cannot be audited); ``{"crash": {"stderr": ..., "stdout": ...}}`` makes it write
those and exit 1 without JSON, as a module does that cannot start (no Python, a broken interpreter).
"""

from __future__ import annotations

import json
import sys

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "gather_subset": {"type": "list", "elements": "str", "default": ["all"]},
            "cudnn_search_paths": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    with open(module.params["cudnn_search_paths"][0], encoding="utf-8") as fh:
        facts = json.load(fh)
    if "fail" in facts:
        module.fail_json(msg=facts["fail"])
    if "crash" in facts:
        sys.stderr.write(facts["crash"]["stderr"])
        sys.stdout.write(facts["crash"]["stdout"])
        sys.exit(1)
    module.exit_json(changed=False, ansible_facts={"nvidia": facts})


if __name__ == "__main__":
    main()
