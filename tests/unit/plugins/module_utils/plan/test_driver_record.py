"""plan/driver/record.py (issue 36): the nvidia_driver role's files, and its record of the driver packages
its installs added, which is what nvidia_driver_state: absent removes (and nothing an admin installed)."""

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver import record
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages

from tests.data.roles import driver_request

HOST = {"os": {"distribution": "Debian", "version": "12", "key": "debian12"}, "container": "none"}


def facts(names, previous=None):
    """Facts of a Debian 12 host with driver packages ``names`` and gpufleet's ``previous`` record."""
    records = {"nvidia_driver": {"packages": previous, "module": None, "versionlock": []}} if previous else {}
    return {
        "host": HOST,
        "gpus": [{"name": "NVIDIA H100", "pci_device_id": "0x2330"}],
        "driver": {"packages": [{"name": n, "version": "535.247.01-1", "held": False} for n in names]},
        "packages": {"records": dict({"nvidia_driver": None}, **records)},
    }


DISTRO = ["nvidia-smi", "libcuda1", "libnvidia-ml1", "nvidia-kernel-support", "nvidia-open-kernel-dkms"]


def test_the_plan_carries_the_files_and_what_the_record_starts_from():
    plan = dp.decide(driver_request({"source": "distro", "branch": "535"}), facts(["nvidia-smi"]))
    assert plan["files"]["blacklist"] == "/etc/modprobe.d/blacklist-nouveau-gpufleet.conf"
    assert plan["files"]["initramfs"] == "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau"
    assert plan["files"]["record"] == "/var/lib/gpufleet/nvidia_driver.record"
    assert plan["record"] == {"previous": [], "module": None, "versionlock": [], "before": ["nvidia-smi"]}
    assert record.files("rhel")["initramfs"] == "/etc/dracut.conf.d/gpufleet-omit-nouveau.conf"


def test_the_record_holds_what_the_install_added_and_not_what_was_there():
    """nvidia-smi was installed before gpufleet (an admin's): not in the record, so never removed by it."""
    plan = dp.decide(driver_request({"source": "distro", "branch": "535"}), facts(["nvidia-smi"]))
    after = record.after_install(plan, facts(DISTRO))
    assert after["packages"] == sorted(set(DISTRO) - {"nvidia-smi"})
    assert after["write"] is True
    assert after["path"] == "/var/lib/gpufleet/nvidia_driver.record"
    parsed = probe_packages.parse_driver_record(after["content"])
    assert parsed == {"packages": after["packages"], "module": None, "versionlock": []}


def test_a_second_run_keeps_the_record_as_it_is():
    first = sorted(DISTRO)
    plan = dp.decide(driver_request({"source": "distro", "branch": "535"}), facts(DISTRO, previous=first))
    again = record.after_install(plan, facts(DISTRO, previous=first))
    assert again["packages"] == first
    # a package of the record that is gone (removed by a branch change) leaves it
    fewer = record.after_install(plan, facts(DISTRO[1:], previous=first))
    assert "nvidia-smi" not in fewer["packages"]


def test_no_record_where_the_driver_is_someone_elses():
    """The admin's driver, adopted as it is: the install added nothing, so gpufleet records nothing."""
    plan = dp.decide(driver_request({"source": "distro", "branch": "535"}), facts(DISTRO))
    nothing = record.after_install(plan, facts(DISTRO))
    assert (nothing["packages"], nothing["write"]) == ([], False)


def test_check_mode_on_a_fresh_host_records_nothing():
    plan = dp.decide(driver_request({"source": "distro", "branch": "535"}), facts([]))
    assert record.after_install(plan, facts([]))["write"] is False


def test_rhel_records_the_module_and_the_versionlocks_with_the_packages():
    planned = {
        "record": {"previous": [], "module": None, "versionlock": [], "before": []},
        "dnf_module": "@nvidia-driver:580-open/default",
        "versionlock_patterns": [],
        "versionlock_names": ["nvidia-driver"],
    }
    after = record.after_install(planned, {"driver": {"packages": [{"name": "nvidia-driver"}]}})
    parsed = probe_packages.parse_driver_record(after["content"])
    assert parsed == {
        "packages": ["nvidia-driver"],
        "module": "nvidia-driver",
        "versionlock": ["nvidia-driver"],
    }


def test_a_value_that_is_not_one_token_never_adds_a_line():
    text = record.render(["ok", "bad\nmodule: evil", "also bad"], module="x y", versionlock=["a\nb"])
    assert text == record.HEADER + "\npackage: ok\n"
