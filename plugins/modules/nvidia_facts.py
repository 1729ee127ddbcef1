#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
"""Ansible module nvidia_facts: what is really on a host (GPUs, driver, CUDA toolkits, every cuDNN copy)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_facts
short_description: Report NVIDIA GPUs, driver, CUDA toolkits and every cuDNN copy of a host
description:
  - Observes a host (or a filesystem tree such as a golden image or chroot, see O(root)) and returns
    C(ansible_facts.nvidia), whose schema is documented in C(docs/facts.md) of the collection
    (C(schema_version) 2; later versions only add keys).
  - GPUs come from sysfs PCI (vendor 0x10de, display and 3D controller classes), so they are listed even with
    no driver installed; they are enriched through NVML loaded with ctypes (C(libnvidia-ml.so.1), no Python
    dependency on the target) or, failing that, C(nvidia-smi --query-gpu).
  - cuDNN copies are found in system packages (dpkg database read directly, rpm through C(rpm --root)),
    tarball trees, pip wheels in virtualenvs (C(site-packages/nvidia/cudnn) + dist-info) and conda envs
    (C(conda-meta)). Each copy reports the header version, the library version, the CUDA major it was
    built for and whether they disagree. C(cudnn_resolved) says which copy the dynamic loader picks
    (ld.so cache).
  - Vendor libraries (libcudnn, libcuda, libnvidia-ml) are loaded only in a forked child process with a
    timeout, so a broken library can neither hang nor crash the module.
  - The driver facts say which kernel module is loaded (C(/proc/driver/nvidia/version), else
    C(/sys/module/nvidia/version)) and which one the running kernel would load next (C(modinfo), only when
    O(root) is C(/)), every installed NVIDIA driver package with its hold state, and the traces of a
    C(.run) installer. The host facts give the OS (C(/etc/os-release), with gpufleet's OS key), the CPU
    architecture, the kernel release and whether the system booted through EFI.
  - C(consumers) (part of the V(cudnn) subset) says, per consumer environment (the system linker cache, a
    login shell's C(LD_LIBRARY_PATH) from C(/etc/environment) and C(/etc/profile.d), each Python venv, each
    conda env, each CUDA toolkit), which C(libcudnn.so.N) a process started there resolves and why
    (DT_RPATH/DT_RUNPATH of the framework's libraries, conda's lib, C(LD_LIBRARY_PATH), the loader cache,
    torch's own preload), the frameworks installed there (torch, TensorFlow, jax CUDA plugins,
    onnxruntime-gpu, cupy) with the cuDNN and CUDA their metadata says they were built for and whether the
    installed wheel satisfies their pin, and every directory whose C(libcudnn*.so.N) files come from
    different releases. All of it is read from files; no framework is imported.
  - The driver facts also compare the loaded module with the user-space libraries' versions
    (C(version_mismatch)), list the GSP firmware versions, the installed kernels with their NVIDIA module
    (DKMS, precompiled package, file) and headers, the kernel the host boots next (C(next_boot)), and what
    waits for a reboot (C(boot_pending), the boot time from C(/proc/stat) C(btime), and whether the running
    kernel's initramfs and nvidia module file changed after it). Each kernel's C(initramfs) says whether its
    image is older than the newest file the initramfs tools read (C(/etc/modprobe.d),
    C(/etc/initramfs-tools), C(/etc/dracut.conf.d)), in C(stale), with C(older_than) naming that file.
    Each CUDA toolkit reports its forward-compatibility directory (C(compat)).
  - These probes are the only readers of these facts in the collection; other modules take them as input
    (their C(facts) option) instead of reading the host again.
  - The module never fails the host for what it observes; what it cannot determine is reported as
    V(unknown) (or null) with a reason in the object's C(reasons). It fails only for invalid parameters.
  - A O(root) that does not exist is not an error either; every probe state is then V(unknown) with the
    reason, also listed in C(warnings).
  - Commands run with C(LC_ALL=C). The filesystem walk is bounded by O(max_depth) and O(timeout), skips
    C(/proc), C(/sys), C(/dev), C(/run), network and pseudo filesystems, and never follows directory symlinks.
version_added: "0.1.0"
author: gpufleet maintainers (!UNKNOWN)
options:
  gather_subset:
    description:
      - What to gather. V(all), or any of V(gpu), V(driver), V(cuda), V(cudnn), V(owners), V(packages),
        V(sources). V(all) is every subset but V(packages) and V(sources).
      - V(owners) is who owns what the roles may touch (C(/usr/local/cuda*), gpufleet's files under
        C(/etc), O(owner_paths)), the C(cuda*) alternatives, and the dynamic linker's directories in
        ldconfig's order with what C(libcudnn.so.N) and C(libcudart.so.N) resolve to now.
      - V(packages) is the package manager (V(apt), V(dnf), V(none)), the installed NVIDIA packages (CUDA,
        cuDNN, driver, NCCL names) with their version and hold, and on an apt host with O(root) C(/) whether
        C(ansible.builtin.apt) could run (C(apt_pkg) importable by this interpreter, apt's candidate for
        python3-apt), which the package plans need from the host.
      - V(sources) is every apt source entry (C(/etc/apt/sources.list), C(sources.list.d/*.list) and
        C(*.sources)) and dnf C(.repo) section (C(/etc/yum.repos.d)), enabled or not, with the keyrings they
        name and apt's global ones (the OpenPGP fingerprints of their keys) and the NVIDIA-related package
        that owns each file (cuda-keyring), which the repository plans need to adopt NVIDIA's source a host
        already has.
      - A name prefixed with C(!) is excluded, for example V([all, "!cudnn"]).
      - Host context (container, VM) is always gathered.
    type: list
    elements: str
    default: [all]
  root:
    description:
      - Filesystem tree to inspect, as if it were C(/).
      - Runtime probes (NVML, C(nvidia-smi), ctypes loads, C(ldconfig -p)) run only when this is C(/);
        files under C(/proc) and C(/sys) are read under O(root) (an image usually has none, which the facts
        then say).
    type: path
    default: /
  cudnn_search_paths:
    description:
      - Extra trees (paths inside O(root)) scanned for cuDNN copies, in addition to
        C(/usr), C(/usr/local), C(/opt), C(/srv), C(/home) and C(/root).
    type: list
    elements: path
    default: []
  owner_paths:
    description:
      - Extra paths (inside O(root)) whose entries the V(owners) subset describes, each with its
        children, for example the cuDNN prefix C(/opt/nvidia/cudnn).
    type: list
    elements: path
    default: []
  mok_paths:
    description:
      - Paths (inside O(root)) of MOK files, the private key and the certificate DKMS signs the nvidia module
        with under Secure Boot, that the V(driver) subset describes in C(driver.mok_files) (whether each is a
        file, holds a PEM private key or an X.509 certificate, and the certificate's sha256). Only their
        first 64 KiB are read; nothing of a key is returned.
      - The C(nvidia_driver) role passes C(nvidia_driver_mok_key) and C(nvidia_driver_mok_cert).
    type: list
    elements: path
    default: []
  max_depth:
    description:
      - Directory levels walked below each search path (1 to 32).
    type: int
    default: 6
  timeout:
    description:
      - Seconds for the whole filesystem scan; when reached, lists hold what was found so far and
        C(probes.cudnn.state) is V(partial).
      - Each child process (library load, command) gets at most 10 seconds, except the C(modinfo) that
        reads the NVIDIA module's fields, which gets 60 seconds because it decompresses the whole module
        (tens of MB) when the kernel's modules are compressed, which takes longer than 10 seconds on slow
        or emulated hosts.
    type: float
    default: 20
notes:
  - Supports check mode fully (the module only reads; results are identical in check mode).
  - Runs on targets with Python 3.9 or newer; needs only the standard library.
seealso:
  - name: Schema of ansible_facts.nvidia
    description: docs/facts.md in the gpufleet.nvidia collection.
    link: https://example.invalid/gpufleet/nvidia/docs/facts.md
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode returns the very same facts.
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
    details: Linux hosts and filesystem trees of Linux systems (images, chroots).
"""

EXAMPLES = r"""
- name: Gather everything about NVIDIA on the host
  gpufleet.nvidia.nvidia_facts:

- name: Show every cuDNN copy and which one the loader picks
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts['nvidia']['cudnn'] | map(attribute='version') }}
      -> {{ ansible_facts['nvidia']['cudnn_resolved'] }}

- name: Only GPUs and driver (fast, no filesystem walk)
  gpufleet.nvidia.nvidia_facts:
    gather_subset: [gpu, driver]

- name: Everything but cuDNN
  gpufleet.nvidia.nvidia_facts:
    gather_subset: [all, "!cudnn"]

- name: Audit a golden image before deploying it
  gpufleet.nvidia.nvidia_facts:
    root: /srv/images/ubuntu2404-gpu
    cudnn_search_paths: [/workspace]
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    nvidia:
      description: Everything observed; the full schema, with every key, is in docs/facts.md.
      returned: always
      type: dict
      contains:
        schema_version:
          description: Version of this schema; only ever increased when keys are added.
          type: int
          sample: 2
        root:
          description: The tree inspected.
          type: str
          sample: /
        gather_subset:
          description: Effective subsets, sorted.
          type: list
          elements: str
          sample: [cuda, cudnn, driver, gpu]
        probes:
          description: Per subset (host, gpu, driver, cuda, cudnn, owners; packages and sources only when
            gathered) C(state) (ok, partial, unknown, skipped), C(reason) and C(elapsed_ms).
          type: dict
          sample: {"cudnn": {"state": "ok", "reason": null, "elapsed_ms": 120}}
        warnings:
          description: What a human should read (scan deadline reached, unreadable package database, ...).
          type: list
          elements: str
          sample: []
        elapsed_ms:
          description: Wall time of the module.
          type: int
          sample: 142
        host:
          description: Container, VM, whether the driver is managed from outside this filesystem, kernel
            release, CPU architecture (C(machine), as C(uname -m); null with a reason when it cannot be told),
            C(tegra) (the evidence that the host is an NVIDIA Jetson, a Tegra SoC running Jetson Linux, else
            null), OS (Ansible's distribution name, VERSION_ID and gpufleet's OS key) and EFI boot.
          type: dict
          sample: {"container": "docker", "vm": "firecracker", "driver_managed_externally": true,
                   "kernel_release": "6.18.44", "machine": "x86_64", "tegra": null,
                   "os": {"distribution": "Ubuntu", "version": "24.04", "key": "ubuntu2404",
                          "debian_mirror": null},
                   "efi": false, "reasons": {}}
        gpus:
          description:
            - One entry per NVIDIA GPU (sysfs, enriched by NVML or nvidia-smi), sorted by PCI bus id.
            - C(pci_ids_name) is the device's name in the host's C(pci.ids), read only for a GPU whose chip
              the knowledge base cannot tell from its PCI device id (for example an id newer than NVIDIA's
              list); null otherwise. The compatibility rules take the chip code from it (C(GR150) -> Rubin).
          type: list
          elements: dict
          sample:
            - {"index": 0, "name": "NVIDIA H200", "pci_bus_id": "0000:00:06.0", "device_id": "0x2335",
               "subsystem_device_id": "0x18bf", "architecture": "Hopper", "compute_capability": "9.0",
               "memory_mib": 143771, "uuid": "GPU-00000000-1111-2222-3333-444444444444",
               "vbios": "96.00.A5.00.1A", "persistence_mode": true, "mig_mode": "disabled", "source": "nvml",
               "pci_device_id": "0x2335", "pci_subsystem_vendor_id": "0x10DE", "pci_subsystem_id": "0x18BF",
               "pci_ids_name": null, "reasons": {}}
        gpu_count:
          description: Number of GPUs listed.
          type: int
          sample: 1
        nvswitch_count:
          description: NVSwitch devices (NVIDIA PCI bridges, class 0x0680).
          type: int
          sample: 0
        fabric_manager_required:
          description: True when NVSwitches are present (nvidia-fabricmanager is needed).
          type: bool
          sample: false
        driver:
          description: Driver version, branch, kernel module flavor, loaded state, install method, package,
            CUDA driver API version, Secure Boot state, the loaded module (version, flavor), the module the
            running kernel would load next, every installed driver package, runfile installer traces; the
            user-space libraries and their version, GSP firmware versions, loaded vs user-space vs package
            versions and whether they mismatch, the installed kernels with their NVIDIA module and headers,
            the kernel the host boots next, and what waits for a reboot (C(boot_pending) with C(boot_time),
            C(initramfs_changed), C(module_changed), C(reason)); C(mok_files) the O(mok_paths), each with
            C(exists), C(private_key), C(certificate) and C(certificate_sha256).
          type: dict
          sample: {"installed": true, "version": "580.159.04", "branch": "580", "kernel_module": "open",
                   "loaded": true, "nouveau_loaded": false, "install_method": "host", "package": null,
                   "cuda_driver_version": "13.0", "cuda_driver_version_int": 13000, "secure_boot": "unknown",
                   "loaded_version": "580.159.04", "loaded_kernel_module": "open",
                   "module_for_running_kernel": {"version": "580.159.04", "kernel_module": "open"},
                   "packages": [], "runfile_markers": [],
                   "userspace": {"libnvidia-ml.so.1": {"path": "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
                                 "real_path": "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04",
                                 "version": "580.159.04"}},
                   "gsp_firmware": [],
                   "versions": {"loaded": "580.159.04", "userspace": "580.159.04", "package": null},
                   "version_mismatch": false, "kernels": [], "next_boot": null, "mok_files": {},
                   "boot_pending": {"boot_time": 1764600000, "initramfs_changed": false,
                                    "module_changed": false, "reason": "no initramfs of 6.18.44-fc-v595
                                    (/boot/initrd.img-6.18.44-fc-v595 or /boot/initramfs-6.18.44-fc-v595.img);
                                    no nvidia module file of 6.18.44-fc-v595"},
                   "reasons": {"secure_boot": "no EFI variables (legacy BIOS boot or not exposed)"}}
        cuda:
          description: CUDA toolkits found (each with its forward-compatibility directory C(compat) or null)
            and the default one (/usr/local/cuda).
          type: dict
          sample: {"toolkits": [{"path": "/usr/local/cuda-13.0", "version": "13.0.2", "major_minor": "13.0",
                                 "version_from": "version.json", "source": "deb", "nvcc": true,
                                 "reasons": {}}],
                   "default": {"path": "/usr/local/cuda", "target": "/usr/local/cuda-13.0",
                               "version": "13.0.2", "via": "alternatives"}, "reasons": {}}
        cudnn:
          description: Every cuDNN copy (deb, rpm, tarball, pip, conda, unknown) with versions, CUDA major,
            package, python env, header/library mismatch and whether the loader resolves it.
          type: list
          elements: dict
          sample:
            - {"path": "/usr", "source": "deb", "version": "9.14.0", "major": 9, "cuda_major": 13,
               "cuda_major_from": "package", "header_version": "9.14.0", "library_version": "9.14.0",
               "package": {"name": "libcudnn9-cuda-13", "version": "9.14.0.64-1", "held": true,
                           "manager": "deb"}, "held": true, "mismatch": false, "resolved": true}
        cudnn_resolved:
          description: Per libcudnn.so.N soname in the loader cache, the path the loader picks and its copy.
          type: list
          elements: dict
          sample: [{"soname": "libcudnn.so.9", "major": 9, "path": "/lib/x86_64-linux-gnu/libcudnn.so.9",
                    "real_path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0", "copy_path": "/usr",
                    "version": "9.14.0"}]
        consumers:
          description: Subset V(cudnn) (empty otherwise). C(ld_library_path) as a login shell gets it
            (C(dirs), C(sources)); C(environments) one per consumer environment (C(kind) system, login,
            venv, conda, python, cuda_toolkit; C(path); C(python); C(frameworks) with C(requires_cudnn),
            C(installed_cudnn), C(pin_satisfied), C(cudnn_soname), C(compute_capabilities) and C(loads);
            C(cudnn) the resolutions with C(soname), C(real_path), C(dir), C(version), C(via), C(why),
            C(mixed), C(missing_sub_libraries); C(libcuda) for toolkits); C(library_dirs) every cuDNN
            directory with the release of each file, C(mixed) and C(missing); C(reasons).
          type: dict
          sample:
            ld_library_path: {dirs: [], sources: []}
            environments:
              - kind: venv
                path: /opt/torch/.venv
                python: {executable: /opt/torch/.venv/bin/python, exists: true,
                         real_path: /usr/bin/python3.12, version: "3.12"}
                frameworks:
                  - name: torch
                    version: 2.11.0+cu130
                    cuda_version: "13.0"
                    requires_cudnn: {package: nvidia-cudnn-cu13, spec: "==9.19.0.56"}
                    installed_cudnn: {package: nvidia-cudnn-cu13, version: 9.19.0.56}
                    pin_satisfied: true
                    cudnn_soname: libcudnn.so.9
                    loads:
                      soname: libcudnn.so.9
                      real_path: /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9
                      version: 9.19.0
                      via: runpath
                cudnn: []
                libcuda: null
                reasons: {}
            library_dirs: []
            reasons: []
        owners:
          description: Subset V(owners) (empty otherwise). C(paths) maps each path the roles may create, link
            or replace to its type, link target, real path, owner (C(kind) gpufleet, package, runfile, conda,
            pip, tarball, unknown or absent; C(name), C(version), C(words)) and whether it is a file gpufleet
            wrote; C(alternatives) the C(cuda*) update-alternatives (mode, link, value, candidates);
            C(linker) the directories ldconfig reads in its order (C(conf)) and, per C(libcudnn.so.N) and
            C(libcudart.so.N) soname, what the loader resolves now and who owns it (C(providers)).
          type: dict
          sample:
            paths:
              /usr/local/cuda-13.0:
                type: dir
                target: null
                real: /usr/local/cuda-13.0
                owner: {kind: package, name: cuda-nvcc-13-0, version: 13.0.88-1,
                        words: "package cuda-nvcc-13-0 13.0.88-1"}
                gpufleet_file: false
            alternatives:
              cuda: {mode: auto, link: /usr/local/cuda, value: /usr/local/cuda-13.0,
                     candidates: [{path: /usr/local/cuda-13.0, priority: 130}]}
            linker:
              conf:
                - {file: /etc/ld.so.conf.d/000_cuda.conf, dir: /usr/local/cuda/targets/x86_64-linux/lib,
                   sonames: [libcudart.so.13]}
              providers:
                libcudnn.so.9:
                  path: /lib/x86_64-linux-gnu/libcudnn.so.9
                  real: /usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0
                  dir: /lib/x86_64-linux-gnu
                  version: 9.14.0
                  owner: {kind: package, name: libcudnn9-cuda-13, version: 9.14.0.64-1,
                          words: "package libcudnn9-cuda-13 9.14.0.64-1"}
            reasons: []
        packages:
          description: Subset V(packages) (empty otherwise). C(manager) (apt, dnf, none); C(installed) the
            installed NVIDIA packages by name with C(version) (without epoch) and C(held) (dpkg hold, dnf
            versionlock); C(python_apt) on an apt host with O(root) C(/) (null otherwise) - C(importable),
            C(candidate) (apt's version, V(none), or null with a reason) and C(interpreter); C(reasons).
          type: dict
          sample:
            manager: apt
            installed:
              libcudnn9-cuda-13: {version: 9.14.0.64-1, held: true}
              cuda-nvcc-13-0: {version: 13.0.88-1, held: false}
            python_apt: {importable: true, candidate: 2.7.14build2, interpreter: /usr/bin/python3}
            reasons: []
        sources:
          description:
            - Subset V(sources) (empty otherwise). C(entries) - every apt entry and dnf section (C(file),
              C(format) one-line, deb822 or repo, C(line), C(id) (dnf), C(enabled), C(types), C(uris)
              (dnf baseurl), C(suites), C(components), C(options) (lower-case names, e.g. C(signed-by),
              C(arch), C(trusted)), C(gpgcheck), C(repo_gpgcheck), C(gpgkey) (dnf; null and [] for apt),
              C(keyrings) (the keyring files it names - apt Signed-By paths, dnf C(gpgkey=file://)),
              C(fingerprints) (Signed-By fingerprints, or those of an inline key), C(inline_key), C(owner)
              (the NVIDIA-related package that owns the file, or null)).
            - C(keyrings) - by path, every keyring an entry names and apt's global ones - C(exists),
              C(fingerprints) (primary keys), C(subkeys), C(owner), C(reason). C(trusted) - apt's global
              keyrings (what a source without Signed-By trusts). C(reasons) - what was not read.
          type: dict
          sample:
            entries:
              - file: /etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list
                format: one-line
                line: 1
                id: null
                enabled: true
                types: [deb]
                uris: [https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/]
                suites: [/]
                components: []
                options: {signed-by: /usr/share/keyrings/cuda-archive-keyring.gpg}
                gpgcheck: null
                repo_gpgcheck: null
                gpgkey: []
                keyrings: [/usr/share/keyrings/cuda-archive-keyring.gpg]
                fingerprints: []
                inline_key: false
                owner: cuda-keyring
            keyrings:
              /usr/share/keyrings/cuda-archive-keyring.gpg:
                exists: true
                fingerprints: [EB693B3035CD5710E231E123A4B469963BF863CC]
                subkeys: []
                owner: cuda-keyring
                reason: null
            trusted: []
            reasons: []
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import SubsetError, gather


def main():
    module = AnsibleModule(
        argument_spec={
            "gather_subset": {"type": "list", "elements": "str", "default": ["all"]},
            "root": {"type": "path", "default": "/"},
            "cudnn_search_paths": {"type": "list", "elements": "path", "default": []},
            "owner_paths": {"type": "list", "elements": "path", "default": []},
            "mok_paths": {"type": "list", "elements": "path", "default": []},
            "max_depth": {"type": "int", "default": 6},
            "timeout": {"type": "float", "default": 20.0},
        },
        supports_check_mode=True,
    )
    params = module.params
    if not 1 <= params["max_depth"] <= 32:
        module.fail_json(
            msg="max_depth: {!r} is not allowed; allowed: an integer from 1 to 32".format(params["max_depth"])
        )
    if not 0 < params["timeout"] <= 600:
        module.fail_json(
            msg="timeout: {!r} is not allowed; allowed: seconds, more than 0 and at most 600".format(
                params["timeout"]
            )
        )
    for option in ("cudnn_search_paths", "owner_paths", "mok_paths"):
        for path in params[option]:
            if not path.startswith("/"):
                module.fail_json(
                    msg=f"{option}: {path!r} is not allowed; allowed: absolute paths inside root"
                )
    os.environ.update({"LC_ALL": "C", "LANG": "C"})
    module.run_command_environ_update = {"LC_ALL": "C", "LANG": "C"}
    try:
        facts = gather(
            root_path=params["root"],
            gather_subset=params["gather_subset"],
            cudnn_search_paths=params["cudnn_search_paths"],
            owner_paths=params["owner_paths"],
            mok_paths=params["mok_paths"],
            max_depth=params["max_depth"],
            timeout=params["timeout"],
        )
    except SubsetError as exc:
        module.fail_json(msg=str(exc))
    for warning in facts["warnings"]:
        module.warn(f"nvidia_facts: {warning}")
    module.exit_json(changed=False, ansible_facts={"nvidia": facts})


if __name__ == "__main__":
    main()
