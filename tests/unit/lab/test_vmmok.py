"""The lab's MOK pair for Secure Boot guests (lab/vmmok.py): made by openssl as the role wants it, and
enrolled into a copy of OVMF's variables by virt-fw-vars."""

import os
import shutil
import subprocess

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import mok as probe_mok

from lab import LabError, run_checked, vm, vmmok

MS_VARS = os.path.join(vm.OVMF_DIR, vm.FIRMWARE[True][1])


@pytest.fixture
def mok(tmp_path, monkeypatch):
    monkeypatch.setattr(vmmok, "MOK_DIR", tmp_path / "mok")
    monkeypatch.setattr(vmmok, "KEY", tmp_path / "mok" / "mok.key")
    monkeypatch.setattr(vmmok, "CERT", tmp_path / "mok" / "mok.der")
    return tmp_path


def test_the_pair_is_what_the_role_accepts(mok):
    key, cert = vmmok.ensure_pair(log=lambda _: None)
    assert probe_mok.is_private_key(key.read_bytes())  # nvidia_driver_mok_key: PEM private key
    assert (
        probe_mok.is_certificate(cert.read_bytes()) and cert.read_bytes()[:2] == b"\x30\x82"
    )  # DER for mokutil
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    text = subprocess.run(
        ["openssl", "x509", "-inform", "DER", "-in", str(cert), "-noout", "-text"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "CN = gpufleet lab MOK" in text
    assert "Code Signing" in text and "1.3.6.1.4.1.2312.16.1.2" in text  # module signing EKU
    before = cert.read_bytes()
    assert vmmok.ensure_pair(log=lambda _: None) == (key, cert)
    assert cert.read_bytes() == before  # made once


def test_enroll_command():
    assert vmmok.enroll_cmd("/g/OVMF_VARS.fd", "/m/mok.der", "/v/virt-fw-vars") == [
        "/v/virt-fw-vars", "--inplace", "/g/OVMF_VARS.fd", "--add-mok", vmmok.OWNER, "/m/mok.der",
    ]  # fmt: skip


@pytest.mark.skipif(not os.path.exists(MS_VARS), reason=f"{MS_VARS} missing (Debian's ovmf package)")
def test_enroll_adds_the_certificate_to_shims_mok_list(mok):
    varstore = mok / "OVMF_VARS.fd"
    shutil.copyfile(MS_VARS, varstore)
    vmmok.enroll(varstore, log=lambda _: None)
    listing = subprocess.run(
        [vmmok.virt_fw_vars(), "--input", str(varstore), "--print", "--verbose"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    mok_list = listing[listing.index("MokList") :]
    assert "gpufleet lab MOK" in mok_list


def test_a_failing_tool_is_one_line(mok):
    argv = vmmok.enroll_cmd(mok / "nosuch.fd", mok / "nosuch.der", vmmok.virt_fw_vars())
    with pytest.raises(LabError, match=r"^virt-fw-vars --add-mok failed \(exit \d+\): \S"):
        run_checked(argv, "virt-fw-vars --add-mok")
