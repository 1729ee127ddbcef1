# Copyright: gpufleet contributors
# Apache-2.0
"""gpufleet's own conventions on a host: the marker file of its trees, the backup tag, the host cache.

Not NVIDIA knowledge: names gpufleet chose. They live here, once, because several layers share them:
install/redist.py writes the marker and names backups, probe/owners.py reads the marker (a tree that holds
it is gpufleet's), plan/cuda.py names the backups a plan would make and the host cache its plans download to,
which is also the nvidia_redist module's default download_dir. Pure data (stdlib only, Python >= 3.9).
"""

from __future__ import annotations

# The file gpufleet writes at the top of every tree it installs (the redist manifest's artifacts, as JSON).
MARKER = ".gpufleet-redist.json"
# What a path moved aside is renamed to: ``<path>.gpufleet-backup-<UTC stamp>`` (never deleted).
BACKUP_TAG = ".gpufleet-backup-"
# Where redist archives are downloaded on a host (and where a controller cache is copied to).
HOST_CACHE = "/var/cache/gpufleet/redist"
