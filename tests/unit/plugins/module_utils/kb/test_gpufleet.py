"""kb/gpufleet.py: gpufleet's own names on a host, defined once (install/, probe/ and plan/ import them).

The names are a contract with hosts already provisioned: a renamed marker would disown every tree gpufleet
installed before, and a renamed backup tag would hide earlier backups from the brownfield manifest
(molecule/brownfield/files/manifest.py keeps its own copy, since it runs alone on the instance).
"""

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpufleet import BACKUP_TAG, MARKER


def test_the_marker_is_a_hidden_file_at_the_top_of_a_tree():
    assert MARKER == ".gpufleet-redist.json"


def test_the_backup_tag_goes_between_a_path_and_its_stamp():
    assert BACKUP_TAG == ".gpufleet-backup-"  # <path>.gpufleet-backup-<UTC stamp>
