"""driver-vm-upgrade: what the rollouts did, from the lab hooks' log on the controller (one clock for both
guests) and from each guest (after prepare's failed rollout, converge's rollout and the idempotence run)."""

import os
from pathlib import Path

# prepare's rollout drained the first guest and stopped there (its role failed: no headers); converge's
# rollout did one guest after the other; the idempotence run found nothing to do and drained nothing.
EXPECTED = [
    "drain gpufleet-up1",
    "drain gpufleet-up1",
    "undrain gpufleet-up1",
    "drain gpufleet-up2",
    "undrain gpufleet-up2",
]


def _events():
    log = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "rollout.log"
    lines = log.read_text().splitlines()
    stamps = [line.split(" ", 1)[0] for line in lines]
    assert stamps == sorted(stamps), lines
    return [line.split(" ", 1)[1] for line in lines]


def test_one_guest_at_a_time_and_the_failed_one_stayed_drained():
    assert _events() == EXPECTED


def test_this_guest_was_rebooted_by_its_rollout(host):
    before, now = host.check_output(
        "cat /var/tmp/lab-boot-id-before-role /proc/sys/kernel/random/boot_id"
    ).split()
    assert before != now


def test_the_headers_pin_is_gone_and_the_running_kernel_has_headers(host):
    assert not host.file("/etc/apt/preferences.d/lab-no-kernel-headers").exists
    kernel = host.check_output("uname -r")
    assert host.package(f"linux-headers-{kernel}").is_installed
