"""nvidia_compat, the action: args and the host's facts in, the result Ansible reports out (detection,
failures, check mode, bad input, facts given or gathered through nvidia_facts).

compat_result(args, facts) is the action's whole decision; the tests give it the facts nvidia_facts gathers
on fake roots (probe.facts.gather(root, ["gpu", "driver"])). The action itself runs with a stand-in
_execute_module that answers as nvidia_facts would on such a root.
"""

import contextlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from ansible.module_utils import basic
from ansible_collections.gpufleet.nvidia.plugins.action import nvidia_compat
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_options import NVIDIA_COMPAT
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import facts as probe_facts
from ansible_collections.gpufleet.nvidia.plugins.modules import nvidia_compat as nvidia_compat_doc

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19: no ansible.module_utils.testing; the same through _ANSIBLE_ARGS

    @contextlib.contextmanager
    def patch_module_args(args):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


FIXTURE = Path(__file__).resolve().parents[3] / "data/compat/h200-ubuntu2404"


def gathered_on(root):
    """ansible_facts.nvidia of a fake root, as gpufleet.nvidia.nvidia_facts gather_subset [gpu, driver]
    returns it."""
    return probe_facts.gather(str(root), ["gpu", "driver"])


def refuse(**_kwargs):
    raise AssertionError("nvidia_compat ran a module on the host although facts were given")


def action_for(args, check_mode=False, execute=refuse):
    """The action as Ansible builds it for a task with ``args``; ``execute`` stands in for _execute_module."""
    task = SimpleNamespace(
        args=dict(args), async_val=0, check_mode=check_mode, action="gpufleet.nvidia.nvidia_compat"
    )
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"))
    action = nvidia_compat.ActionModule(task, connection, None, None, None, None)
    action._load_name = "gpufleet.nvidia.nvidia_compat"
    action._execute_module = execute
    return action


def reported(action):
    """What Ansible reports for the task: the action's result, or its AnsibleActionFail as a failed result."""
    try:
        return action.run(task_vars={})
    except AnsibleActionFail as exc:
        return {"failed": True, "msg": exc.message}


def run(root, **args):
    """compat_result of the task's args (validated by the action's spec) and the facts gathered on root."""
    try:
        _validation, task_args = action_for(args).validate_argument_spec(argument_spec=NVIDIA_COMPAT)
    except AnsibleActionFail as exc:
        return {"failed": True, "msg": exc.message}
    return nvidia_compat.compat_result(task_args, gathered_on(root))


class FactsModule:
    """Stands in for _execute_module: nvidia_facts on a fake root, each call recorded."""

    def __init__(self, root):
        self.root, self.calls = root, []

    def __call__(self, module_name, module_args, task_vars):
        self.calls.append((module_name, module_args))
        return {"ansible_facts": {"nvidia": probe_facts.gather(str(self.root), module_args["gather_subset"])}}


def warnings_of(result):
    """compat_warnings; the result's "warnings" key (what Ansible shows the user) carries the same list."""
    assert result.get("warnings", []) == result["compat_warnings"]
    return result["compat_warnings"]


@pytest.fixture
def h200_root(tmp_path):
    """A fake root with the real H200's sysfs attributes, /proc driver version and Ubuntu 24.04."""
    dev = tmp_path / "sys/bus/pci/devices/0000:00:06.0"
    dev.mkdir(parents=True)
    for line in (FIXTURE / "sys-bus-pci-0000_00_06.0-attrs.txt").read_text(encoding="ascii").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            (dev / key).write_text(value + "\n")
    proc = tmp_path / "proc/driver/nvidia"
    proc.mkdir(parents=True)
    (proc / "version").write_text((FIXTURE / "proc-driver-nvidia-version.txt").read_text(encoding="ascii"))
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text('NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="24.04"\n')
    return tmp_path


@pytest.mark.parametrize("check_mode", [False, True])
def test_h200_detected_cuda_13_cudnn_9_14(h200_root, check_mode):
    facts_module = FactsModule(h200_root)
    args = {"cuda_version": "13.0", "cudnn_version": "9.14.0"}
    result = reported(action_for(args, check_mode=check_mode, execute=facts_module))
    assert len(facts_module.calls) == 1
    assert result.get("failed") is not True
    assert result["changed"] is False
    assert result["compatible"] is True
    assert result["errors"] == []
    assert warnings_of(result) == []
    (gpu,) = result["gpus"]
    assert (gpu["name"], gpu["architecture"], gpu["compute_capability"]) == ("NVIDIA H200", "Hopper", "9.0")
    assert gpu["kernel_module_support"] == "either"
    assert result["recommended"]["driver_branch"] == "580"


def test_h200_cuda_13_2_warns(h200_root):
    result = run(h200_root, cuda_version="13.2")
    assert result["compatible"] is True
    (warning,) = warnings_of(result)
    assert "its own minimum is 595.45.04" in warning


def test_h200_cuda_12_8(h200_root):
    assert run(h200_root, cuda_version="12.8")["compatible"] is True


def test_volta_plan_fails_with_the_sentence(h200_root):
    result = run(
        h200_root,
        gpus=[{"pci_device_id": "0x1DB5"}],
        driver_branch="580",
        cuda_version="13.0",
    )
    assert result["failed"] is True
    assert result["changed"] is False
    assert result["msg"] == (
        "Tesla V100-SXM2-32GB (Volta, sm_70) is not supported by CUDA 13.0; the last CUDA for Volta is 12.9: "
        "set cuda_version <= 12.9"
    )
    assert result["errors"] == [result["msg"]]
    assert result["recommended"]["cuda_max"] == "12.9"


@pytest.mark.parametrize(("branch", "failed"), [("570", False), ("575", True)])
def test_forward_compat_base_from_nvidias_table(h200_root, branch, failed):
    """https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html: cuda-compat-13-0 lists
    R535 and R570 as bases; R575 is a new feature branch, not a supported target."""
    result = run(
        h200_root,
        driver_branch=branch,
        cuda_version="13.0",
        cuda_forward_compat=True,
    )
    assert result.get("failed", False) is failed
    if failed:
        assert result["msg"].startswith("cuda-compat-13-0 does not support driver branch R575 as its base")
        assert "set driver_branch R535 or R570, or driver_branch >= 580" in result["msg"]
    else:
        assert any("install cuda-compat-13-0" in w for w in result["compat_warnings"])


def test_several_errors_are_numbered(h200_root):
    result = run(
        h200_root,
        gpus=[{"pci_device_id": "0x1DB5"}],
        driver_branch="590",
        kernel_module="open",
        cuda_version="13.0",
    )
    assert result["failed"] is True
    assert len(result["errors"]) == 3
    assert result["msg"].startswith("(1) ")
    assert all(f"({i}) {e}" in result["msg"] for i, e in enumerate(result["errors"], 1))


def test_report_only(h200_root):
    result = run(
        h200_root,
        gpus=[{"compute_capability": "7.0"}],
        cuda_version="13.0",
        fail_on_incompatible=False,
    )
    assert result.get("failed") is not True
    assert result["compatible"] is False
    # CUDA 13 on Volta, and the loaded (open) driver of the host cannot drive a Volta GPU
    assert len(result["errors"]) == 2
    assert "needs the proprietary kernel module" in result["errors"][1]


def test_loaded_driver_is_the_default(h200_root):
    result = run(h200_root, cuda_version="13.0", cudnn_version="9.10.2", cudnn_cuda_major="12")
    assert result["failed"] is True
    assert result["msg"].startswith("cudnn_cuda_major: '12' contradicts cuda_version 13.0")


def test_loaded_open_driver_and_os_are_used(h200_root):
    (h200_root / "etc/os-release").write_text("ID=ubuntu\nVERSION_ID=20.04\n")
    result = run(h200_root, cuda_version="13.0", fail_on_incompatible=False)
    assert any("does not support ubuntu 20.04" in e for e in result["errors"])
    result = run(
        h200_root,
        cuda_version="13.0",
        os={"distribution": "ubuntu", "version": "24.04"},
        gpus=[{"pci_device_id": "0x2901"}],
    )
    assert result["compatible"] is True  # the loaded driver's open module drives a B200


def test_no_gpu_no_driver(tmp_path):
    result = run(tmp_path, cuda_version="13.0")
    assert result["compatible"] is True
    assert result["gpus"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"cuda_version": "12.99"},
            "cuda_version: CUDA 12.99 does not exist; known CUDA 12 releases: 12.0, ",
        ),
        (
            {"cuda_version": "twelve"},
            "cuda_version: 'twelve' is not a valid version with 2 to 4 numeric components",
        ),
        ({"cuda_version": ""}, None),
        (
            {"driver_version": "575.57.08", "driver_branch": "580"},
            "driver_branch: '580' contradicts driver_version",
        ),
        ({"gpus": [{"pci_device_id": "nope"}]}, "gpus[0].pci_device_id: 'nope' is not a PCI id"),
        ({"kernel_module": "nouveau"}, "value of kernel_module must be one of: auto, open, proprietary"),
    ],
)
def test_bad_input_fails_with_one_sentence(tmp_path, args, message):
    result = run(tmp_path, fail_on_incompatible=False, **args)
    if message is None:
        assert result.get("failed") is not True
        return
    assert result["failed"] is True
    assert message in result["msg"]
    assert "Traceback" not in json.dumps(result)


# ------------------------------------------------------------- facts: given, or gathered through nvidia_facts
def with_facts(facts, **args):
    """The action's result for a task given ``facts`` (no module may run on the host)."""
    return reported(action_for(dict(args, facts=facts)))


def test_without_facts_nvidia_facts_runs_once_with_the_gpu_and_driver_subsets(h200_root):
    facts_module = FactsModule(h200_root)
    result = reported(action_for({"cuda_version": "13.0"}, execute=facts_module))
    assert facts_module.calls == [("gpufleet.nvidia.nvidia_facts", {"gather_subset": ["gpu", "driver"]})]
    assert [g["name"] for g in result["gpus"]] == ["NVIDIA H200"]


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (
            {
                "failed": True,
                "msg": "Module result deserialization failed: No start of json char found",
                "module_stdout": "",
                "module_stderr": "Traceback (most recent call last):\nPermissionError: [Errno 13] Permission "
                "denied: '/sys/bus/pci/devices'\n",
                "rc": 1,
            },
            "nvidia_facts failed on this host: Module result deserialization failed: No start of json char "
            "found: Traceback (most recent call last):\nPermissionError: [Errno 13] Permission denied: "
            "'/sys/bus/pci/devices'",
        ),
        (
            {"failed": True, "msg": "root: /nonexistent is not a directory"},
            "nvidia_facts failed on this host: root: /nonexistent is not a directory",
        ),
        ({"changed": False}, "nvidia_facts failed on this host: no facts returned"),
    ],
)
def test_a_failed_facts_run_fails_the_task_with_the_modules_msg_and_stderr(found, expected):
    result = reported(action_for({"cuda_version": "13.0"}, execute=lambda **_kwargs: found))
    assert result["failed"] is True
    assert result["msg"] == expected
    assert "compatible" not in result


def test_facts_given_nothing_runs_on_the_host(h200_root, tmp_path_factory):
    facts = gathered_on(h200_root)
    # the host now would answer differently: no GPU, no driver, Ubuntu 20.04
    other = tmp_path_factory.mktemp("other")
    (other / "etc").mkdir()
    (other / "etc/os-release").write_text("ID=ubuntu\nVERSION_ID=20.04\n")
    facts_module = FactsModule(other)
    args = {"facts": facts, "cuda_version": "13.0", "cudnn_version": "9.14.0"}
    result = reported(action_for(args, execute=facts_module))
    assert facts_module.calls == []
    assert result.get("failed") is not True
    assert result["compatible"] is True
    (gpu,) = result["gpus"]
    assert (gpu["name"], gpu["architecture"], gpu["compute_capability"]) == ("NVIDIA H200", "Hopper", "9.0")
    assert result["recommended"]["driver_branch"] == "580"


def test_facts_give_the_loaded_driver_flavor_and_os():
    facts = {
        "schema_version": 1,
        "gpus": [],
        "driver": {"loaded_version": "580.159.04", "loaded_kernel_module": "open"},
        "host": {"os": {"distribution": "Ubuntu", "version": "20.04", "key": None}},
    }
    result = with_facts(facts, cuda_version="13.0", fail_on_incompatible=False)
    assert any("does not support ubuntu 20.04" in e for e in result["errors"])
    # the loaded open module cannot drive a Volta GPU; the driver 580.159.04 is the loaded one
    result = with_facts(
        facts,
        gpus=[{"pci_device_id": "0x1DB5"}],
        os={"distribution": "ubuntu", "version": "24.04"},
        fail_on_incompatible=False,
    )
    assert any("needs the proprietary kernel module" in e for e in result["errors"])
    assert not any("ubuntu" in e.lower() for e in result["errors"])


def test_parameters_override_the_facts():
    facts = {
        "gpus": [{"pci_device_id": "0x1DB5", "name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}],
        "driver": {"loaded_version": "470.256.02", "loaded_kernel_module": "proprietary"},
        "host": {"os": {"distribution": "Ubuntu", "version": "20.04"}},
    }
    result = with_facts(
        facts,
        gpus=[{"pci_device_id": "0x2335"}],
        driver_branch="580",
        kernel_module="open",
        os={"distribution": "Ubuntu", "version": "24.04"},
        cuda_version="13.0",
    )
    assert result.get("failed") is not True, result.get("msg")
    assert [g["name"] for g in result["gpus"]] == ["NVIDIA H200"]


def test_all_of_ansible_facts_is_accepted(h200_root):
    facts = {"nvidia": gathered_on(h200_root), "distribution": "Ubuntu"}
    result = with_facts(facts, cuda_version="13.0")
    assert [g["name"] for g in result["gpus"]] == ["NVIDIA H200"]


def test_facts_gpus_that_nothing_identifies_are_left_out():
    facts = {
        "gpus": [
            {
                "pci_device_id": None,
                "compute_capability": "unknown",
                "name": "unknown",
                "pci_bus_id": "0000:05:00.0",
            },
            {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18BF", "compute_capability": "9.0"},
        ],
        "driver": {},
        "host": {},
    }
    result = with_facts(facts, cuda_version="13.0")
    assert [g["pci_device_id"] for g in result["gpus"]] == ["0x2335"]


# ------------------------------------------------------------- the module file: documentation and a stub
def test_documentation_matches_the_argument_spec():
    doc = yaml.safe_load(nvidia_compat_doc.DOCUMENTATION)
    assert set(doc["options"]) == set(NVIDIA_COMPAT)
    for name, spec in NVIDIA_COMPAT.items():
        assert doc["options"][name]["type"] == spec["type"], name
        assert doc["options"][name].get("default") == spec.get("default"), name
    attributes = doc["attributes"]
    assert set(attributes) == {"action", "async", "bypass_host_loop", "check_mode", "diff_mode", "platform"}
    assert (attributes["action"]["support"], attributes["check_mode"]["support"]) == ("full", "full")
    assert attributes["async"]["support"] == "none"  # ActionBase refuses async for this action


def test_the_module_fails_when_the_action_is_bypassed(capsys):
    with patch_module_args({"cuda_version": "13.0"}), pytest.raises(SystemExit):
        nvidia_compat_doc.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True
    assert "runs on the controller as an action plugin" in result["msg"]


@pytest.mark.parametrize("distribution", ["ubunto", "Debain", "rhel9", "red hat"])
def test_a_misspelled_distribution_is_refused_before_the_facts(distribution):
    """Issue 35: os {distribution: ubunto} switched the OS rules off, as for a host whose OS is unknown."""
    result = reported(
        action_for({"cuda_version": "13.0", "os": {"distribution": distribution, "version": "24.04"}})
    )
    assert result["failed"] is True
    assert f"os.distribution={distribution!r} (allowed: a distribution ID (" in result["msg"], result["msg"]


@pytest.mark.parametrize("distribution", ["ubuntu", "Ubuntu", "RedHat", "Red Hat Enterprise Linux", "rocky"])
def test_the_distribution_names_gpufleet_knows_are_accepted(distribution):
    with pytest.raises(AssertionError, match="ran a module on the host"):
        reported(action_for({"cuda_version": "13.0", "os": {"distribution": distribution, "version": "9"}}))


def test_a_jetson_host_is_refused_from_its_facts(h200_root):
    """The facts' host.tegra (an Orin's device tree) refuses the plan; machine: names another host's
    architecture instead of the facts' (the plan of an Arm server) and an unknown one is an error."""
    compatible = tmp = h200_root / "proc/device-tree"
    tmp.mkdir(parents=True)
    (compatible / "compatible").write_bytes(b"nvidia,p3737-0000\0nvidia,tegra234\0")
    result = run(h200_root, cuda_version="13.0", fail_on_incompatible=False)
    assert result["compatible"] is False
    assert (
        "this host is an NVIDIA Jetson (Tegra SoC, Jetson Linux: /proc/device-tree/compatible names "
        in (result["errors"][0])
    )
    assert run(h200_root, cuda_version="13.0", machine="aarch64")["compatible"] is True
    result = run(h200_root, cuda_version="13.0", machine="ppc64le")
    assert result["failed"] is True and "machine: 'ppc64le' is not a CPU architecture" in result["msg"]
