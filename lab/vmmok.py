"""The lab's MOK (Machine Owner Key) for Secure Boot guests.

A Secure Boot guest boots Microsoft's keys, shim, Debian's signed GRUB and kernel; a module built by DKMS
loads only when it is signed by a key the kernel trusts. On a real host the admin enrols their MOK with
``mokutil --import`` and confirms it in MokManager at the next boot. The lab enrols its own certificate
before the first boot instead, into the guest's copy of the OVMF variables (virt-firmware's
``virt-fw-vars --add-mok``, which adds it to shim's MokList): shim hands it to the kernel, and the driver
role then signs with the matching key (``nvidia_driver_mok_key``/``nvidia_driver_mok_cert``).

The pair is made once per lab: ``.lab/vm/mok/mok.key`` (PEM, PKCS#8) and ``mok.der`` (the certificate).
"""

import shutil
import sys
from pathlib import Path

from lab import STATE, LabError, run_checked

MOK_DIR = STATE / "vm" / "mok"
KEY = MOK_DIR / "mok.key"
CERT = MOK_DIR / "mok.der"
SUBJECT = "/CN=gpufleet lab MOK/"
# the MokList entry's owner (EFI_SIGNATURE_DATA.SignatureOwner): the lab's own GUID
OWNER = "a3b0e5d2-5c1e-4f43-9d2b-6a1f0c7e8b91"
# kernel module signing, as the certificates that distributions' update-secureboot-policy makes
EXTENSIONS = ("basicConstraints=critical,CA:FALSE", "extendedKeyUsage=codeSigning,1.3.6.1.4.1.2312.16.1.2")


def pair_cmd(key=KEY, cert=CERT):
    cmd = ["openssl", "req", "-new", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "3650"]
    cmd += ["-subj", SUBJECT, "-outform", "DER", "-keyout", str(key), "-out", str(cert)]
    for ext in EXTENSIONS:
        cmd += ["-addext", ext]
    return cmd


def ensure_pair(log=print):
    """The lab's MOK key and certificate, made on first use."""
    if KEY.is_file() and CERT.is_file():
        return KEY, CERT
    MOK_DIR.mkdir(parents=True, exist_ok=True)
    MOK_DIR.chmod(0o700)
    run_checked(pair_cmd(KEY.with_suffix(".key.part"), CERT.with_suffix(".der.part")), "openssl req")
    KEY.with_suffix(".key.part").chmod(0o600)
    KEY.with_suffix(".key.part").replace(KEY)
    CERT.with_suffix(".der.part").replace(CERT)
    log(f"vm: made the lab MOK pair {KEY} and {CERT}")
    return KEY, CERT


def virt_fw_vars():
    """virt-fw-vars of this Python's environment (.venv: the dev toolchain pins virt-firmware), else PATH."""
    beside = Path(sys.executable).parent / "virt-fw-vars"
    found = str(beside) if beside.exists() else shutil.which("virt-fw-vars")
    if not found:
        raise LabError("virt-fw-vars not found: `make venv` installs virt-firmware into .venv", code=2)
    return found


def enroll_cmd(varstore, cert=CERT, tool="virt-fw-vars"):
    return [tool, "--inplace", str(varstore), "--add-mok", OWNER, str(cert)]


def enroll(varstore, log=print):
    """Add the lab's MOK certificate to shim's MokList in ``varstore`` (a guest's OVMF variables)."""
    _, cert = ensure_pair(log)
    run_checked(enroll_cmd(varstore, cert, virt_fw_vars()), "virt-fw-vars --add-mok")
    log(f"vm: enrolled the lab MOK {cert.name} in {varstore}")
