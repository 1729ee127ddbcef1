# Copyright: gpufleet contributors
# Apache-2.0
"""Controller side of a playbook's first play: its own gpufleet_* variables, checked before any host.

Documentation: plugins/modules/nvidia_inputs.py. The table of the variables and their grammar is
plan/playbook_vars.py (pure); this plugin reads the values from the task's variables (templated), asks the
controller's filesystem whether a hook task file is readable, and fails naming every wrong variable.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_common import plain
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_options import NVIDIA_INPUTS
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import playbook_vars
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad


def file_problem(path):
    """Why the controller cannot read the task file ``path`` (None: it can)."""
    if not os.path.exists(path):
        return "no such file on the controller"
    if not os.path.isfile(path):
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "not readable by the user running ansible-playbook"
    return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=NVIDIA_INPUTS)
        playbook = args["playbook"]
        values, problems = self._values(playbook, task_vars)
        problems += playbook_vars.check(playbook, values, file_problem)
        problems += self._other_hosts(playbook, values, task_vars)
        roles = playbook_vars.roles_run(
            playbook_vars.PLAYBOOK_ROLES[playbook],
            plain(task_vars.get("ansible_run_tags")),
            plain(task_vars.get("ansible_skip_tags")),
        )
        result.update(changed=False, values=values, roles=roles)
        if problems:
            result.update(failed=True, msg=f"{playbook}.yml: " + "; ".join(problems))
        else:
            result["msg"] = f"{playbook}.yml: {len(values)} variable(s) set, every one valid"
        return result

    def _values(self, playbook, task_vars):
        """{name: templated value} of the playbook's variables that are set; a value that cannot be
        templated is a problem naming the variable."""
        values, problems = {}, []
        for name in playbook_vars.variables_of(playbook):
            if name not in task_vars:
                continue
            try:
                values[name] = plain(self._templar.template(task_vars[name]))
            except AnsibleError as exc:
                problems.append(bad(name, "(cannot be templated)", "a value", str(exc).splitlines()[0]))
        return values, problems

    def _other_hosts(self, playbook, values, task_vars):
        """The hooks as every other host of the play sees them, where the inventory gives a host another
        value than this task's (group or host variables): each distinct value is checked once."""
        names = [
            n
            for n in playbook_vars.variables_of(playbook)
            if playbook_vars.PLAYBOOK_VARS[n].kind == playbook_vars.HOOK
        ]
        hostvars = task_vars.get("hostvars") or {}
        seen, problems = set(), []
        for host in plain(task_vars.get("ansible_play_hosts_all")) or []:
            for name in names:
                try:
                    value = plain(self._templar.template(hostvars[host].get(name)))
                except (AnsibleError, KeyError) as exc:
                    problems.append(bad(name, "(cannot be templated)", "a value", f"host {host}: {exc}"))
                    continue
                if value is None or value == values.get(name) or (name, repr(value)) in seen:
                    continue
                seen.add((name, repr(value)))
                found = playbook_vars.check(playbook, {name: value}, file_problem)
                problems += [f"{problem} (host {host})" for problem in found]
        return problems
