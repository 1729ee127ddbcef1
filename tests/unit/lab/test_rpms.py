"""The lab's NVIDIA-layout RPM repositories for EL-shaped hosts (lab/rpms.py): the names the roles' dnf
plans ask for, NVIDIA's key file names, the driver module streams, and the spec each package is built from."""

import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan

from lab import rpms


def test_the_key_files_are_those_nvidias_repositories_publish():
    for rdir, name in rpms.KEY_FILES.items():
        assert repo_plan.KEYS[rdir][0] == name


def test_the_driver_stand_ins_have_nvidias_names_epoch_and_say_what_they_are():
    el9 = rpms.driver_rpms("el9")
    el10 = rpms.driver_rpms("el10")
    names9 = {r.name for r in el9}
    kmods = {"kmod-nvidia-open-dkms", "kmod-nvidia-latest-dkms"}
    assert {"nvidia-driver", "nvidia-driver-cuda", *kmods} <= names9
    assert {"nvidia-open", "cuda-drivers"} <= {r.name for r in el10} and "nvidia-open" not in names9
    for rpm in el9 + el10:
        assert rpm.epoch == "3" and rpm.release.startswith("1.el")
        (text,) = rpm.files.values()
        assert "stand-in" in text and "no kernel module" in text
    assert {r.dist for r in el9} == {"rhel9"} and {r.dist for r in el10} == {"rhel10"}


def test_the_module_streams_are_nvidias_with_default_and_fm_profiles():
    docs = list(yaml.safe_load_all(rpms.modules_yaml("el9")))
    streams = {d["data"]["stream"]: d["data"] for d in docs if d["document"] == "modulemd"}
    assert set(streams) == {"580-open", "580-dkms", "590-open", "590-dkms"}
    open580 = streams["580-open"]
    assert "kmod-nvidia-open-dkms" in open580["profiles"]["default"]["rpms"]
    assert "nvidia-fabric-manager" in open580["profiles"]["fm"]["rpms"]
    assert "kmod-nvidia-latest-dkms" in streams["580-dkms"]["profiles"]["default"]["rpms"]
    assert "nvidia-driver-3:580.105.08-1.el9.x86_64" in open580["artifacts"]["rpms"]
    (defaults,) = [d for d in docs if d["document"] == "modulemd-defaults"]
    assert defaults["data"]["profiles"]["590-dkms"] == ["default"]


def test_a_spec_installs_the_staged_tree_with_no_automatic_dependencies(tmp_path):
    (rpm,) = [r for r in rpms.driver_rpms("el9") if r.name == "nvidia-driver"][:1]
    spec = rpms.spec_text(rpm, ["/usr/share/gpufleet-lab/nvidia-driver"], tmp_path)
    assert "AutoReqProv: no" in spec and "Epoch: 3" in spec
    assert "Requires: nvidia-kmod = 3:580.105.08" in spec
    assert f'cp -al "{tmp_path}/." "%{{buildroot}}/"' in spec
    assert spec.rstrip().endswith('"/usr/share/gpufleet-lab/nvidia-driver"')
