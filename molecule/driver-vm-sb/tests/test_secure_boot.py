"""driver-vm-sb scenario: the guest runs under Secure Boot in lockdown, DKMS signed the nvidia module with
the lab's MOK, and the kernel accepts that signature (the module gets as far as looking for a GPU) while it
rejects the same module without it. driver-vm's tests run here too."""

# appended to a signed module (scripts/sign-file.c): the signature, a 12-byte struct module_signature whose
# last 4 bytes are the signature's length (big-endian), and this marker
STRIP = r"""
import sys
MARKER = b"~Module signature appended~\n"
data = open(sys.argv[1], "rb").read()
assert data.endswith(MARKER), "the module is not signed"
end = len(data) - len(MARKER) - 12
sig_len = int.from_bytes(data[end + 8:end + 12], "big")
open(sys.argv[2], "wb").write(data[:end - sig_len])
"""
LAB_MOK = "gpufleet lab MOK"


def _module(host):
    return host.check_output(f"modinfo -k {host.check_output('uname -r')} -F filename nvidia-current")


def test_secure_boot_is_enabled_and_the_kernel_is_locked_down(host):
    assert "SecureBoot enabled" in host.check_output("mokutil --sb-state")
    lockdown = host.check_output("cat /sys/kernel/security/lockdown")
    assert "[integrity]" in lockdown or "[confidentiality]" in lockdown, lockdown


def test_the_lab_mok_is_enrolled(host):
    # mokutil --test-key exits 1 for a key that is already enrolled (0: not enrolled, it may be imported)
    res = host.run("mokutil --test-key /root/gpufleet-mok/mok.der")
    assert res.rc in (0, 1), res.stderr
    assert "/root/gpufleet-mok/mok.der is already enrolled" in res.stdout, res.stdout


def test_dkms_signed_the_module_with_the_mok(host):
    assert host.check_output(f"modinfo -F signer {_module(host)}") == LAB_MOK
    conf = host.file("/etc/dkms/framework.conf.d/gpufleet-mok.conf")
    assert conf.contains("^mok_signing_key=/root/gpufleet-mok/mok.key$")
    assert conf.contains("^mok_certificate=/root/gpufleet-mok/mok.der$")


def test_the_kernel_accepts_the_signed_module_and_rejects_it_unsigned(host):
    """With its signature the module passes the check and stops at "No such device" (no GPU); the same
    module without its signature stops at the check: "Key was rejected by service"."""
    signed = host.run(f"insmod {_module(host)}")
    assert signed.rc != 0
    assert "No such device" in signed.stderr, signed.stderr
    host.run_expect([0], f"python3 -c '{STRIP}' {_module(host)} /tmp/nvidia-unsigned.ko")
    unsigned = host.run("insmod /tmp/nvidia-unsigned.ko")
    assert unsigned.rc != 0
    assert "Key was rejected by service" in unsigned.stderr, unsigned.stderr
