# Copyright: gpufleet contributors
# Apache-2.0
"""gpufleet's own conventions on a host: the marker file of its trees, the backup tag, the host cache, its
records of the packages it installed and the files of the driver role.

Not NVIDIA knowledge: names gpufleet chose. They live here, once, because several layers share them:
install/redist.py writes the marker and names backups, probe/owners.py reads the marker (a tree that holds
it is gpufleet's), plan/cuda.py names the backups a plan would make and the host cache its plans download to,
which is also the nvidia_redist module's default download_dir; install/repo.py writes the pin files,
probe/packages.py reads them and the driver's record, plan/removal.py removes what they list. Pure data
(stdlib only, Python >= 3.9).
"""

from __future__ import annotations

# The file gpufleet writes at the top of every tree it installs (the redist manifest's artifacts, as JSON).
MARKER = ".gpufleet-redist.json"
# What a path moved aside is renamed to: ``<path>.gpufleet-backup-<UTC stamp>`` (never deleted).
BACKUP_TAG = ".gpufleet-backup-"
# Where redist archives are downloaded on a host (and where a controller cache is copied to).
HOST_CACHE = "/var/cache/gpufleet/redist"

# What gpufleet installed with packages, as it recorded it on the host (what <role>_state: absent removes, and
# nothing else): the apt preferences that pin the cuDNN and CUDA toolkit package sets (install/repo.pin_file
# writes them; each stanza says whether the package was there before gpufleet pinned it), and the driver's own
# record of the packages its installs added (plan/driver/record.py renders it, the role writes it). One reader
# of all three: probe/packages.records.
PIN_FILES = {
    "cudnn": "/etc/apt/preferences.d/gpufleet-cudnn.pref",
    "cuda_toolkit": "/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref",
}
# the words a pin stanza of a package gpufleet found installed (not its own, never removed by it) carries
PIN_NOT_OWNED = "installed before gpufleet, kept by removal"
RECORD_DIR = "/var/lib/gpufleet"
DRIVER_RECORD = RECORD_DIR + "/nvidia_driver.record"

# The files the nvidia_driver role writes (each starts with gpufleet's header; the initramfs-tools hook after
# its #! line): written by its tasks from the plan's ``files``, removed by nvidia_driver_state: absent.
# initramfs: the hook that keeps nouveau out of the image, per OS family (initramfs-tools, dracut).
DRIVER_FILES = {
    "blacklist": "/etc/modprobe.d/blacklist-nouveau-gpufleet.conf",
    "modprobe": "/etc/modprobe.d/nvidia-gpufleet.conf",
    "mok": "/etc/dkms/framework.conf.d/gpufleet-mok.conf",
    "nonfree_source": "/etc/apt/sources.list.d/gpufleet-debian-nonfree.sources",
}
DRIVER_INITRAMFS_FILES = {
    "debian": "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau",
    "ubuntu": "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau",
    "rhel": "/etc/dracut.conf.d/gpufleet-omit-nouveau.conf",
}
DRIVER_DIRS = {"modprobe": "/etc/modprobe.d", "mok": "/etc/dkms/framework.conf.d"}
