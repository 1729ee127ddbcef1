"""driver-vm-kernel scenario: the kernel update is there, and it is the next boot. That it has its headers
and its DKMS module is driver-vm's test_every_installed_kernel_has_the_module_and_its_headers, which this
scenario runs too."""


def test_the_kernel_update_is_installed_and_is_the_next_boot(host):
    running = host.check_output("uname -r")
    kernels = [p.split("vmlinuz-", 1)[1] for p in host.check_output("ls /boot/vmlinuz-*").split()]
    assert len(kernels) == 2, kernels
    nxt = host.file("/vmlinuz").linked_to.rsplit("vmlinuz-", 1)[1]
    assert nxt in kernels, (nxt, kernels)
    assert nxt != running, (nxt, running)
    assert nxt == running.replace("-amd64", "-cloud-amd64"), (nxt, running)
