"""What runs on a lent GPU machine (the device tool's H200/H100: Ubuntu 24.04, no network, a host-managed
driver, NVIDIA's CUDA and cuDNN packages), never on the fleet's hosts and never shipped (galaxy.yml leaves
out lab/).

- prove.sh STEP...: the roles, plugins and audit against that host (tests/gpu/evidence/h200-*, h100-*)
- gpu_scenario.sh STEP...: tests/gpu and the molecule gpu scenario there, in three calls (tests/gpu/README.md)
- consumers.sh: the audit's "what torch loads" against a real torch process (docs/facts.md)
- ubuntu_repo.sh + container_repo_check.sh: the repo scenario in a container made from the host's root
- mirror_from_host.py (python3 -m lab.gpuhost.mirror_from_host): the redist mirror from the host's own
  NVIDIA packages
"""
