# Copyright: gpufleet contributors
# Apache-2.0
"""Controller side of a role's plan: the role's variables + the host's facts -> plan/ -> the plan.

Documentation: plugins/modules/nvidia_plan.py. The decisions are plan/'s (pure Python, run here in the
controller's fork for this host); the target only runs ``nvidia_facts`` (once, when no facts are given).
"""

from __future__ import annotations

import os
import time

import yaml
from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.release import __version__ as ansible_core_version
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_common import (
    FACTS_MODULE,
    FactsFailed,
    facts_of,
    plain,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_options import NVIDIA_PLAN
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import inputs as plan_inputs
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles as plan_roles
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import PlanError, failure_message

# The collection's root: plugins/action/ -> the directory holding roles/.
COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ROLE_FILES = {}
LOCALHOST_NAMES = ("localhost", "127.0.0.1", "::1")


def role_files(role):
    """(defaults, options of the main entry point) of one of the collection's roles, read once."""
    if role not in _ROLE_FILES:
        base = os.path.join(COLLECTION, "roles", role)
        with open(os.path.join(base, "defaults", "main.yml"), encoding="utf-8") as handle:
            defaults = yaml.safe_load(handle) or {}
        with open(os.path.join(base, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
            specs = yaml.safe_load(handle)["argument_specs"]
        _ROLE_FILES[role] = (defaults, specs["main"]["options"])
    return _ROLE_FILES[role]


def typed(role, options, values):
    """The values typed by the role's argument spec; AnsibleActionFail naming each variable of a kind the
    spec would convert into nonsense (plan/inputs.shape_errors), else with the spec's own messages."""
    shapes = plan_inputs.shape_errors(options, values)
    if shapes:
        raise AnsibleActionFail(f"{role}: " + "; ".join(shapes))
    result = ArgumentSpecValidator(options).validate(values)
    if result.error_messages:
        raise AnsibleActionFail(f"{role}: " + "; ".join(result.error_messages))
    return {name: result.validated_parameters.get(name) for name in options}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=NVIDIA_PLAN)
        roles = list(dict.fromkeys(args["role"]))
        if args["phase"] != "preflight":
            result.update(self._phase(args, roles, task_vars))
            return result
        variables = {role: self._variables(role, task_vars) for role in roles}
        errors = self._validate(roles, variables, {role: self._foreign(role, task_vars) for role in roles})
        if errors and args["fail_on_errors"]:  # the other roles are not planned from no facts
            result.update(self._outcome(roles, {}, {}, errors, True))
            return result
        # the facts of the roles not refused already (none when every one is refused or disabled)
        facts = self._facts(args, [r for r in roles if r not in errors], variables, task_vars)
        plans, compat = {}, {}
        context = {
            "machine": (task_vars.get("ansible_facts") or {}).get("machine"),
            "stamp": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
            "is_controller": self._is_controller(task_vars),
            "ansible_core": ansible_core_version,
        }
        for role in roles:
            if role in errors:
                continue
            try:
                plans[role], compat[role] = plan_roles.plan(role, variables[role], facts, context)
            except PlanError as exc:
                errors[role] = [f"{role}: {exc}"]
                continue
            if compat[role]["errors"]:
                errors[role] = [failure_message(role, compat[role]["errors"])]
            if role == "nvidia_driver":  # the CUDA and cuDNN checks of a stack take the driver it installs
                context["overrides"] = plan_roles.driver_target(plans[role])
        result.update(self._outcome(roles, plans, compat, errors, args["fail_on_errors"]))
        return result

    def _phase(self, args, roles, task_vars):
        """A later step of the nvidia_driver role: facts read now + the preflight's plan -> what to do."""
        if roles != ["nvidia_driver"] or not args["planned"]:
            raise AnsibleActionFail(
                f"phase={args['phase']} (allowed: with role nvidia_driver and planned: the preflight's plan)"
            )
        variables = self._variables("nvidia_driver", task_vars)
        facts = self._gather(args, {"gather_subset": ["gpu", "driver"]}, task_vars)
        context = {
            "is_controller": self._is_controller(task_vars),
            "check_mode": bool(self._task.check_mode),
            "changed": args["changed"],
            "rebooted": args["rebooted"],
        }
        try:
            decided = plan_roles.driver_phase(
                args["phase"], variables, plain(args["planned"]), facts, context
            )
        except ValueError as exc:  # PlanError, or the driver plan's own for a policy no plan can serve
            raise AnsibleActionFail(f"nvidia_driver: {exc}") from None
        return {"changed": False, "plan": decided}

    def _is_controller(self, task_vars):
        """The host is the Ansible controller itself (a local connection or a localhost name)."""
        connection = task_vars.get("ansible_connection") or getattr(self._connection, "transport", "")
        return connection == "local" or task_vars.get("inventory_hostname") in LOCALHOST_NAMES

    def _variables(self, role, task_vars):
        """The role's variables: the host's where set, else the role's defaults; then those it borrows. Typed
        by the spec even where the role is disabled (plan/roles.SWITCHES): Ansible checks the spec at the
        role's entry all the same."""
        defaults, options = role_files(role)
        given = {name: task_vars[name] for name in options if name in task_vars}
        values = dict(defaults, **plain(self._templar.template(given)))
        out = typed(role, options, values)
        for other, names in plan_roles.BORROWED.get(role, {}).items():
            other_defaults, other_options = role_files(other)
            theirs = {n: task_vars[n] for n in names if n in task_vars}
            values = {n: other_defaults[n] for n in names}
            values.update(plain(self._templar.template(theirs)))
            typed_values = typed(other, {n: other_options[n] for n in names}, values)
            out.update(typed_values)
        return out

    def _foreign(self, role, task_vars):
        """The variables of another project's role that the host sets (plan/roles.FOREIGN: NVIDIA's driver
        role's), for their refusal. Templated where they can be; a value that refers to that role's own
        variables (its defaults' {{ _rhel_repo_dir }}) cannot be and is shown as written."""
        names = plan_roles.FOREIGN.get(role, ((), None))[0]
        found = {}
        for name in (n for n in names if n in task_vars):
            try:
                found[name] = plain(self._templar.template(task_vars[name]))
            except AnsibleError:
                found[name] = plain(task_vars[name])
        return found

    def _validate(self, roles, variables, foreign):
        errors = {}
        for role in roles:
            try:
                plan_roles.validate(role, variables[role], foreign[role])
            except PlanError as exc:
                errors[role] = [f"{role}: {exc}"]
        return errors

    def _facts(self, args, roles, variables, task_vars):
        """The facts given, else nvidia_facts run once on the host with what every planned role needs."""
        wanted = plan_roles.merge_wanted(plan_roles.facts_wanted(r, variables[r]) for r in roles)
        if not wanted["gather_subset"]:  # every role is disabled for this host: nothing to read there
            return None
        return self._gather(args, wanted, task_vars)

    def _gather(self, args, wanted, task_vars):
        if args["facts"] is not None:
            return plain(args["facts"])
        module_args = {"gather_subset": wanted["gather_subset"], "root": args["root"]}
        for key in ("owner_paths", "mok_paths"):
            if wanted.get(key):
                module_args[key] = wanted[key]
        found = self._execute_module(module_name=FACTS_MODULE, module_args=module_args, task_vars=task_vars)
        try:
            return facts_of(found)
        except FactsFailed as exc:
            raise AnsibleActionFail(str(exc)) from None

    def _outcome(self, roles, plans, compat, errors, fail_on_errors):
        warnings = [w for role in roles for w in (compat.get(role) or {}).get("warnings", [])]
        out = {
            "changed": False,
            "plans": plans,
            "compat": compat,
            "errors": {role: errors[role] for role in roles if role in errors},
            "summary": [plans[role]["summary"] for role in roles if role in plans],
            "lines": plan_roles.report_lines(roles, plans, compat, errors),
            "warnings": list(dict.fromkeys(warnings)),
        }
        if len(roles) == 1:
            out["plan"] = plans.get(roles[0], {})
        if errors and fail_on_errors:
            out["failed"] = True
            out["msg"] = " ".join(m for role in roles for m in errors.get(role, []))
        return out
