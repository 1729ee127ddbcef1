"""Issue 36: removal (<role>_state: absent) takes what gpufleet installed, as recorded, and nothing else.

Each host is a fixture root of a known kind; its facts come from probe_facts.gather through the real probes
(the subsets the removal plan asks for), and the plans decide (plan/removal.py through plan/roles.py, as the
nvidia_plan action calls them): what goes, what stays and is named, the words a check-mode run prints, the
refusals naming nvidia_driver_state, and that the plan of the host the removal left is empty (a second removal
changes nothing).
"""

import json
import shutil
from pathlib import Path

import jinja2
import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import repo as install_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpufleet import MARKER
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import removal, roles
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.reboot import removal_reboot
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import PlanError
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import facts as probe_facts

from tests.data.facts import fakeroot
from tests.data.roles import variables

ALTERNATIVE = "auto\n/usr/local/{name}\n\n/usr/local/cuda-13.0\n130\n\n"
PROFILE = "/etc/profile.d/gpufleet-cuda.sh"
LD_CUDA = "/etc/ld.so.conf.d/gpufleet-cuda.conf"
LD_CUDNN = "/etc/ld.so.conf.d/gpufleet-cudnn.conf"
SOURCE = "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources"
KEYRING = "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"
RECORD = "/var/lib/gpufleet/nvidia_driver.record"


def absent(role, **given):
    return variables(role, **{f"{role}_state": "absent", **given})


def plan_of(role, root, **given):
    """The role's removal plan for the host ``root``, its facts gathered as the action gathers them."""
    values = absent(role, **given)
    wanted = roles.facts_wanted(role, values)
    facts = probe_facts.gather(
        str(root), wanted["gather_subset"], owner_paths=wanted["owner_paths"], live=False
    )
    made, compat = roles.plan(role, values, facts, {"is_controller": False})
    assert compat["errors"] == [] and made["state"] == "absent" and made["enabled"] is True
    return made


def toolkit(root, path, *, ours):
    fakeroot.write(root, f"{path}/version.json", json.dumps({"cuda": {"version": "13.0.2"}}))
    fakeroot.write(root, f"{path}/bin/nvcc", "#!/bin/sh\n", mode=0o755)
    if ours:
        fakeroot.write(root, f"{path}/{MARKER}", "{}")
    else:
        fakeroot.write(root, f"{path}/bin/cuda-uninstaller", "#!/bin/sh\n", mode=0o755)


def gpufleet_file(root, path):
    fakeroot.write(root, path, "# Managed by gpufleet (cuda_toolkit): test\n/usr/local/cuda/lib64\n")


def own_source(root):
    fakeroot.write(
        root, SOURCE, install_repo.render_deb822("https://developer.download.nvidia.com/x/", KEYRING)
    )
    fakeroot.write(root, KEYRING, "key")


# ---------------------------------------------------------------------------------------------- toolkit
@pytest.fixture
def redist_host(tmp_path):
    """gpufleet's redist CUDA 13.0 (its marker), its alternatives, profile and linker files; beside it a
    runfile's CUDA 13.1 and someone's file under a name gpufleet's could have had."""
    root = fakeroot.bare(tmp_path)
    toolkit(root, "/usr/local/cuda-13.0", ours=True)
    toolkit(root, "/usr/local/cuda-13.1", ours=False)
    for name in ("cuda", "cuda-13"):
        fakeroot.write(root, f"/var/lib/dpkg/alternatives/{name}", ALTERNATIVE.format(name=name))
        fakeroot.link(root, f"/etc/alternatives/{name}", "/usr/local/cuda-13.0")
    gpufleet_file(root, PROFILE)
    fakeroot.write(root, LD_CUDA, "/opt/admin/lib\n")  # an admin's file at gpufleet's name
    return root


def test_the_toolkits_removal_takes_gpufleets_tree_alternatives_and_files_only(redist_host):
    plan = plan_of("cuda_toolkit", redist_host)
    remove = plan["remove"]
    assert remove["trees"] == ["/usr/local/cuda-13.0"]
    assert remove["alternatives"] == [
        {"name": "cuda", "path": "/usr/local/cuda-13.0"},
        {"name": "cuda-13", "path": "/usr/local/cuda-13.0"},
    ]
    assert remove["files"] == [PROFILE]  # never the admin's file at gpufleet's name
    assert (remove["packages"], remove["record"], remove["source"]) == ([], None, None)
    assert plan["kept"] == [
        "/usr/local/cuda-13.1 (NVIDIA's runfile installer (bin/cuda-uninstaller))",
        f"{LD_CUDA} (unknown (no package, no runfile uninstaller, no gpufleet marker): not gpufleet's file)",
    ]
    assert plan["ldconfig"] is True and plan["executor"] is False and plan["nothing"] is False
    # what a check-mode run prints: what would go, what stays
    assert plan["lines"] == [
        "removes: /usr/local/cuda-13.0",
        f"removes: {PROFILE}",
        "removes: alternative cuda -> /usr/local/cuda-13.0",
        "removes: alternative cuda-13 -> /usr/local/cuda-13.0",
        *[f"keeps: {k}" for k in plan["kept"]],
    ]
    assert plan["summary"].startswith("removal of gpufleet's CUDA toolkit: removes: /usr/local/cuda-13.0; ")


def test_a_second_removal_of_the_toolkit_plans_nothing(redist_host):
    plan = plan_of("cuda_toolkit", redist_host)
    shutil.rmtree(redist_host / "usr/local/cuda-13.0")  # what the removal's tasks do
    (redist_host / PROFILE.lstrip("/")).unlink()
    for name in ("cuda", "cuda-13"):
        (redist_host / f"var/lib/dpkg/alternatives/{name}").unlink()
        (redist_host / f"etc/alternatives/{name}").unlink()
    again = plan_of("cuda_toolkit", redist_host)
    assert again["nothing"] is True and again["executor"] is False and again["ldconfig"] is False
    assert again["lines"][0] == "nothing of gpufleet's CUDA toolkit left on this host"
    assert again["kept"] == plan["kept"]  # what was not gpufleet's is still named, and still there


@pytest.fixture
def package_host(tmp_path):
    """CUDA 13.0 from NVIDIA's repository through gpufleet's pin file: cuda-nvcc-13-0 gpufleet's, cuda-cudart
    there before it; gpufleet's own source and key."""
    root = fakeroot.bare(tmp_path)
    pins = [("cuda-nvcc-13-0", "13.0.88-1"), ("cuda-cudart-13-0", "13.0.96-1")]
    text = install_repo.pin_file("cuda_toolkit", pins, ["cuda-cudart-13-0"])["content"]
    fakeroot.write(root, "/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref", text)
    fakeroot.dpkg_db(
        root,
        [(n, v, "install ok installed", "amd64") for n, v in pins],
        {"cuda-nvcc-13-0": ["/usr/local/cuda-13.0", "/usr/local/cuda-13.0/bin/nvcc"]},
    )
    fakeroot.write(root, "/usr/local/cuda-13.0/bin/nvcc", "#!/bin/sh\n")
    fakeroot.write(root, "/usr/local/cuda-13.0/version.json", json.dumps({"cuda": {"version": "13.0.2"}}))
    own_source(root)
    return root


def test_the_toolkits_removal_takes_its_packages_record_and_source(package_host):
    plan = plan_of("cuda_toolkit", package_host)
    remove = plan["remove"]
    assert remove["packages"] == ["cuda-nvcc-13-0"]
    assert remove["record"] == "/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref"
    assert remove["source"]["remove_own"] == [SOURCE, KEYRING]  # no other record of gpufleet's is left
    assert remove["source"]["url"].endswith("/debian12/x86_64/")  # the repo the executor checks against
    assert "package cuda-cudart-13-0 (installed before gpufleet)" in plan["kept"]
    assert plan["executor"] is True


def test_gpufleets_source_stays_while_another_record_uses_it(package_host):
    text = install_repo.pin_file("cudnn", [("libcudnn9-cuda-13", "9.14.0.64-1")])["content"]
    fakeroot.write(package_host, "/etc/apt/preferences.d/gpufleet-cudnn.pref", text)
    plan = plan_of("cuda_toolkit", package_host)
    assert plan["remove"]["source"] is None
    assert f"{SOURCE} and {KEYRING} (gpufleet's source, still used by cudnn)" in plan["kept"]


def test_an_adopted_source_is_never_gpufleets(package_host):
    (package_host / SOURCE.lstrip("/")).unlink()
    fakeroot.write(
        package_host,
        "/etc/apt/sources.list.d/cuda-debian12-x86_64.list",
        "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "
        "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /\n",
    )
    assert plan_of("cuda_toolkit", package_host)["remove"]["source"] is None


# ---------------------------------------------------------------------------------------------- cuDNN
@pytest.fixture
def cudnn_host(tmp_path):
    root = fakeroot.bare(tmp_path)
    prefix = "/opt/nvidia/cudnn"
    for tree in ("9.14.0.64-cuda13", "9.14.0.64-cuda12"):
        fakeroot.write(root, f"{prefix}/{tree}/{MARKER}", "{}")
        fakeroot.write(root, f"{prefix}/{tree}/include/cudnn_version.h", fakeroot.cudnn_header(9, 14, 0))
    fakeroot.link(root, f"{prefix}/current-cuda13", f"{prefix}/9.14.0.64-cuda13")
    fakeroot.link(root, f"{prefix}/current-cuda12", f"{prefix}/9.14.0.64-cuda12")
    fakeroot.write(
        root, LD_CUDNN, f"# Managed by gpufleet (cudnn): cuDNN 9.14.0\n{prefix}/current-cuda13/lib\n"
    )
    return root


def test_cudnns_removal_takes_its_trees_links_file_and_prefix(cudnn_host):
    plan = plan_of("cudnn", cudnn_host)
    remove = plan["remove"]
    assert remove["trees"] == ["/opt/nvidia/cudnn/9.14.0.64-cuda12", "/opt/nvidia/cudnn/9.14.0.64-cuda13"]
    assert remove["links"] == ["/opt/nvidia/cudnn/current-cuda12", "/opt/nvidia/cudnn/current-cuda13"]
    assert remove["files"] == [LD_CUDNN]
    assert remove["dirs"] == ["/opt/nvidia/cudnn"]  # nothing else in it
    assert plan["kept"] == [] and plan["ldconfig"] is True


def test_a_tree_gpufleet_did_not_install_stays_and_so_does_the_prefix(cudnn_host):
    fakeroot.write(cudnn_host, "/opt/nvidia/cudnn/8.9.7-cuda12/include/cudnn.h", "/* hand-made */\n")
    plan = plan_of("cudnn", cudnn_host)
    assert "/opt/nvidia/cudnn/8.9.7-cuda12" not in plan["remove"]["trees"]
    assert plan["remove"]["dirs"] == []
    assert plan["kept"] == ["/opt/nvidia/cudnn/8.9.7-cuda12 (unknown (no package, no runfile uninstaller, "
                            "no gpufleet marker))"]  # fmt: skip


def test_a_second_removal_of_cudnn_plans_nothing(cudnn_host):
    shutil.rmtree(cudnn_host / "opt/nvidia/cudnn")
    (cudnn_host / LD_CUDNN.lstrip("/")).unlink()
    again = plan_of("cudnn", cudnn_host)
    assert again["nothing"] is True and again["lines"] == ["nothing of gpufleet's cuDNN left on this host"]


# ---------------------------------------------------------------------------------------------- driver
DRIVER = ["firmware-nvidia-gsp", "libcuda1", "nvidia-kernel-support", "nvidia-open-kernel-dkms", "nvidia-smi"]


def driver_host(root, installed, recorded, files=True):
    fakeroot.dpkg_db(root, [(n, "535.247.01-1", "hold ok installed", "amd64") for n in installed])
    if recorded is not None:
        lines = "".join(f"package: {n}\n" for n in recorded)
        fakeroot.write(root, RECORD, "# Managed by gpufleet (nvidia_driver): the driver packages\n" + lines)
    if files:
        fakeroot.write(root, "/etc/modprobe.d/blacklist-nouveau-gpufleet.conf", "# Managed by gpufleet (x)\n")
        fakeroot.write(root, "/etc/modprobe.d/nvidia-gpufleet.conf", "# Managed by gpufleet (x)\n")
        fakeroot.write(
            root,
            "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau",
            "#!/bin/sh\n# Managed by gpufleet (nvidia_driver): no nouveau module in the initramfs.\n",
        )
    return root


def test_the_drivers_removal_follows_nvidias_guide_for_what_gpufleet_installed(tmp_path):
    """nvidia-container-toolkit, installed by someone else, stays (it is no driver core package)."""
    root = driver_host(fakeroot.bare(tmp_path, gpu="0x2330"), [*DRIVER, "nvidia-container-toolkit"], DRIVER)
    plan = plan_of("nvidia_driver", root)
    remove = plan["remove"]
    assert remove["packages"] == DRIVER and remove["record"] == RECORD
    assert remove["files"] == [
        "/etc/modprobe.d/blacklist-nouveau-gpufleet.conf",
        "/etc/modprobe.d/nvidia-gpufleet.conf",
        "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau",  # its header after the #! line
    ]
    assert remove["dirs"] == ["/var/lib/gpufleet"]  # it holds the record only
    assert plan["initramfs"] == {"run": True, "command": ["update-initramfs", "-u", "-k", "all"]}
    assert "then: update-initramfs -u -k all" in plan["lines"]  # nouveau back in the images
    assert plan["kept"] == ["package nvidia-container-toolkit 535.247.01-1 (not in gpufleet's record)"]
    assert plan["reboot"]["reboot"] is False  # no module loaded in this root: nothing to unload
    assert (plan["install"], plan["host_managed"], plan["commands"]) == (False, False, [])
    assert roles.driver_target(plan) is None  # CUDA and cuDNN are checked against the loaded driver


ROLE_TEMPLATES = Path(__file__).resolve().parents[5] / "roles/nvidia_driver/templates"
MODPROBE_TEMPLATE = ROLE_TEMPLATES / "nvidia-modprobe.conf.j2"


@pytest.mark.parametrize(
    "content",
    [
        jinja2.Template(MODPROBE_TEMPLATE.read_text()).render(
            ansible_managed="Ansible managed", __nvidia_driver_plan={"modprobe_options": ["NVreg_A=1"]}
        ),
        "# Ansible managed (gpufleet nvidia_driver)\n# Options for the NVIDIA kernel module\n",  # before
        "# {site's ansible_managed} (gpufleet nvidia_driver)\noptions nvidia NVreg_A=1\n",
    ],
    ids=["the-role-template", "its-old-header", "its-old-header-with-a-site-ansible-managed"],
)
def test_the_drivers_removal_takes_the_module_options_file_the_role_wrote(tmp_path, content):
    """molecule removal: the options file the role's template writes is gpufleet's (its header), and so is
    one an older gpufleet wrote with ansible_managed first; an admin's file at that name is kept."""
    root = driver_host(fakeroot.bare(tmp_path, gpu="0x2330"), DRIVER, DRIVER, files=False)
    fakeroot.write(root, "/etc/modprobe.d/nvidia-gpufleet.conf", content)
    assert plan_of("nvidia_driver", root)["remove"]["files"] == ["/etc/modprobe.d/nvidia-gpufleet.conf"]
    fakeroot.write(root, "/etc/modprobe.d/nvidia-gpufleet.conf", "# mine\noptions nvidia NVreg_A=1\n")
    plan = plan_of("nvidia_driver", root)
    assert plan["remove"]["files"] == []
    (kept,) = plan["kept"]
    assert kept.startswith("/etc/modprobe.d/nvidia-gpufleet.conf (unknown")
    assert kept.endswith("not gpufleet's file)")


def test_a_driver_someone_else_installed_is_refused_naming_the_variable(tmp_path):
    root = driver_host(fakeroot.bare(tmp_path), DRIVER, None, files=False)
    with pytest.raises(PlanError) as refused:
        plan_of("nvidia_driver", root)
    text = str(refused.value)
    assert text.startswith(
        "nvidia_driver_state='absent' (allowed: absent only for a driver gpufleet installed)"
    )
    assert "libcuda1 535.247.01-1" in text and RECORD in text and "someone else installed this driver" in text


def test_a_host_managed_driver_is_refused(tmp_path):
    root = fakeroot.h200(tmp_path)
    with pytest.raises(
        PlanError, match=r"^nvidia_driver_state='absent' .*: this host's driver is host-managed"
    ):
        plan_of("nvidia_driver", root)


def test_a_second_removal_of_the_driver_plans_nothing(tmp_path):
    root = driver_host(fakeroot.bare(tmp_path), [], None, files=False)
    plan = plan_of("nvidia_driver", root)
    assert plan["nothing"] is True and plan["initramfs"]["run"] is False
    assert plan["reboot"] == {
        "reboot": False,
        "needed": False,
        "reason": "nothing of gpufleet's driver is removed",
    }


def test_the_reboot_after_a_removal_follows_the_policy():
    state = {"loaded_version": "535.247.01", "container": False}
    assert removal_reboot("auto", state, True)["reboot"] is True
    never = removal_reboot("never", state, True)
    assert never["reboot"] is False and never["reason"].endswith("reboot policy is never: reboot it yourself")
    assert removal_reboot("always", dict(state, loaded_version=None), True)["reboot"] is True
    assert removal_reboot("auto", dict(state, container=True), True)["reboot"] is False
    assert removal_reboot("auto", state, True, is_controller=True)["reboot"] is False


# ---------------------------------------------------------------------------------------------- the variable
@pytest.mark.parametrize("role", ["nvidia_driver", "cuda_toolkit", "cudnn"])
def test_the_state_is_checked_naming_the_variable(role):
    with pytest.raises(PlanError) as refused:
        roles.validate(role, variables(role, **{f"{role}_state": "gone"}))
    assert str(refused.value) == (
        f"{role}_state='gone' (allowed: present (install and keep: the default) or absent (remove what "
        "gpufleet installed here, as it recorded it, and nothing else))"
    )


def test_a_removal_is_not_refused_for_the_installs_variables():
    """The toolkit's versions say what to install; a removal takes what the records say."""
    roles.validate("cuda_toolkit", absent("cuda_toolkit", cuda_toolkit_versions=["12.99"]))


def test_the_removals_facts():
    assert roles.facts_wanted("cudnn", absent("cudnn")) == {
        "gather_subset": ["owners", "packages", "sources"],
        "owner_paths": ["/opt/nvidia/cudnn"],
        "mok_paths": [],
    }
    assert (
        roles.facts_wanted("nvidia_driver", absent("nvidia_driver"))["owner_paths"] == removal.driver_paths()
    )
