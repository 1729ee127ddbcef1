"""nvidia_cuda_plan and nvidia_cudnn_plan: facts in (gathered only when absent), the plan out, no network."""

import pytest
import yaml
from ansible_collections.gpufleet.nvidia.plugins.doc_fragments.plan_checks import ModuleDocFragment
from ansible_collections.gpufleet.nvidia.plugins.modules import nvidia_cuda_plan, nvidia_cudnn_plan

H200_FACTS = {
    "gather_subset": ["driver", "gpu"],
    "gpus": [{"device_id": "0x2335", "compute_capability": "9.0"}],
    "driver": {"loaded_version": "580.95.05"},
    "host": {},
}


class FakeModule:
    def __init__(self, spec, params):
        self.params = {k: v.get("default") for k, v in spec.items()}
        self.params.update(params)
        self.check_mode = True


@pytest.fixture
def gathered(monkeypatch):
    calls = []

    def fake_gather(gather_subset, owner_paths=()):
        calls.append(sorted(gather_subset))
        return dict(H200_FACTS, gather_subset=sorted(gather_subset), cuda={"toolkits": []})

    monkeypatch.setattr(nvidia_cuda_plan, "gather", fake_gather)
    monkeypatch.setattr(nvidia_cudnn_plan, "gather", fake_gather)
    return calls


def cuda_run(**params):
    return nvidia_cuda_plan.run(
        FakeModule(nvidia_cuda_plan.ARGUMENT_SPEC, dict({"machine": "x86_64"}, **params))
    )


def cudnn_run(**params):
    return nvidia_cudnn_plan.run(
        FakeModule(nvidia_cudnn_plan.ARGUMENT_SPEC, dict({"machine": "x86_64"}, **params))
    )


def test_given_facts_are_used_as_they_are(gathered):
    result = cuda_run(
        facts=dict(H200_FACTS, gather_subset=["cuda", "driver", "gpu", "owners"], cuda={"toolkits": []})
    )
    assert gathered == []
    assert result["plan"]["verify"]["arch"] == "sm_90"
    assert result["default"] == "13.0"
    assert result["changed"] is False


def test_facts_are_gathered_only_when_absent_or_short_of_a_subset(gathered):
    cuda_run(cuda_toolkit_source="distro")
    cuda_run(facts=H200_FACTS, cuda_toolkit_source="nvidia_repo", cuda_toolkit_remove_unlisted=True)
    # redist and nvidia_repo: who owns the destinations and links is read from the cuda and owners subsets
    cuda_run(facts=H200_FACTS)
    full = ["cuda", "driver", "gpu", "owners"]
    assert gathered == [["driver", "gpu"], full, full]


def test_check_only_reports_an_incompatible_plan(gathered):
    result = cuda_run(check_only=True, cuda_toolkit_versions=[], gpus=[{"pci_device_id": "0x1DB5"}])
    assert result["plan"] == {"versions": [], "default": "13.0"}
    assert result["compat"]["checked"] == ["no CUDA toolkit"]
    result = cuda_run(check_only=True, cuda_toolkit_versions=["13.0"], gpus=[{"pci_device_id": "0x1DB5"}])
    assert not result["compat"]["compatible"]


def test_cudnn_plan_follows_the_hosts_cuda_toolkit_variables(gathered):
    facts = dict(H200_FACTS, gather_subset=["driver", "gpu", "owners"])
    result = cudnn_run(facts=facts, cuda_toolkit_versions=["12.9"])
    assert result["plan"]["main"]["cuda_major"] == "12"
    assert cudnn_run(facts=facts)["plan"]["main"]["cuda_major"] == "13"
    assert gathered == []
    cudnn_run(facts=H200_FACTS)  # facts without the owners subset: gathered here
    assert gathered == [["driver", "gpu", "owners"]]


def test_cudnn_check_only_is_the_roles_decision(gathered):
    result = cudnn_run(
        check_only=True, cudnn_version="9.12.0", cudnn_cuda_major="11", cuda_toolkit_versions=["13.0"]
    )
    assert "cuDNN 9.12.0 has no build for CUDA 11" in result["compat"]["errors"][0]


def test_only_toolkits_with_gpufleets_marker_are_removed(gathered):
    facts = dict(
        H200_FACTS,
        gather_subset=["cuda", "driver", "gpu", "owners"],
        cuda={
            "toolkits": [
                {"path": "/usr/local/cuda-12.9", "gpufleet_marker": True},
                {"path": "/usr/local/cuda-12.8", "gpufleet_marker": False},
            ]
        },
    )
    result = cuda_run(facts=facts, cuda_toolkit_remove_unlisted=True)
    assert [t["path"] for t in result["plan"]["remove"]] == ["/usr/local/cuda-12.9"]
    assert gathered == []


@pytest.mark.parametrize("module", [nvidia_cuda_plan, nvidia_cudnn_plan], ids=["cuda", "cudnn"])
def test_documentation_with_its_fragment_is_the_argument_spec(module):
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert doc["extends_documentation_fragment"] == ["gpufleet.nvidia.plan_checks"]
    options = dict(doc["options"], **yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"])
    assert set(options) == set(module.ARGUMENT_SPEC)
    for name, spec in module.ARGUMENT_SPEC.items():
        assert options[name]["type"] == spec["type"], name
        assert options[name].get("default") == spec.get("default"), name
